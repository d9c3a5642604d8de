/* config.h: the Airlock config file: every setting, its default, its range.
 *
 * One INI file (docs/config.md, configs/airlock.conf) configures the CLI,
 * the dispatcher, the workers and the sandbox. Every key is one row of a
 * table in config.c: the parser, the dumper, the defaults and the unit test
 * that keeps docs/config.md and configs/airlock.conf honest all read that
 * table, so a key cannot exist in one place and not in another.
 *
 * Using it (al_cli_load() in cli.c does this once per command and the
 * command passes the struct down):
 *
 *  1. al_config_init(&cfg): the built-in defaults. The job limits come from
 *     al_policy_default() (results/), so the two cannot disagree.
 *  2. al_config_load_default(&cfg, opt_config, err, sizeof(err)): the file
 *     named by --config, else $AIRLOCK_CONFIG, else /etc/airlock/airlock.conf
 *     when it exists, else nothing; then $AIRLOCK_REDIS, when set and not
 *     empty, replaces redis.url. al_config_load() reads one named file.
 *  3. On failure (-errno) `err` holds one line per problem, newline
 *     separated, each `FILE:LINE: SECTION.KEY: reason` (lowercase, no
 *     trailing period): print it and exit. `cfg` is left as it was: a load
 *     either applies the whole file or none of it.
 *  4. al_config_policy(&cfg, &policy) for the job checks of results/;
 *     al_config_state_dir() and al_config_templates_dir() resolve the two
 *     settings whose empty value means "find it".
 *  5. al_config_release(&cfg) when done.
 *
 * Network policies are sections of their own, `[network.NAME]`, one per
 * policy, with the keys of sb_net_policy_keys() (sandbox/net/netpolicy.h);
 * al_config_net_policy() finds one by name. A policy defined again by a
 * later file replaces the earlier one whole.
 *
 * A file holds only what it changes; absent keys keep their defaults.
 * Unknown sections and keys are errors (a misspelt limit that is silently
 * ignored costs hours), so is a key set twice. Every number is range-checked,
 * every string length-capped. These functions never log: callers print
 * `err`.
 */
#ifndef AL_CONFIG_H
#define AL_CONFIG_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "results.h"
#include "sandbox.h"

#define AL_CONFIG_SYSTEM_PATH	"/etc/airlock/airlock.conf"
#define AL_CONFIG_FILE_MAX	(256u << 10) /* bytes in one config file */
#define AL_CONFIG_LINE_MAX	196 /* bytes in one line (inih's buffer) */
#define AL_CONFIG_STR_MAX	160 /* a URL or path value */
#define AL_CONFIG_STATE_DIR_MAX 80  /* sockets live there: sun_path is 108 */
#define AL_CONFIG_NAMES_MAX	32  /* entries in a name list */
#define AL_CONFIG_ERRORS_MAX	16  /* problems reported per load */

enum al_config_accel {
	AL_CONFIG_ACCEL_AUTO = 0, /* KVM when it can boot the guest, else TCG */
	AL_CONFIG_ACCEL_KVM,	  /* KVM or fail */
	AL_CONFIG_ACCEL_TCG,	  /* always TCG (slow, runs anywhere) */
};

enum al_config_log_format {
	AL_CONFIG_LOG_TEXT = 0,
	AL_CONFIG_LOG_JSON,
};

enum al_config_log {
	AL_CONFIG_LOG_ERROR = 0,
	AL_CONFIG_LOG_WARN,
	AL_CONFIG_LOG_INFO,
	AL_CONFIG_LOG_DEBUG,
};

/* A space-separated list of names (templates, network policies). */
struct al_config_names {
	size_t n;					 /* entries used */
	char name[AL_CONFIG_NAMES_MAX][AL_NAME_MAX + 1]; /* the names */
	const char *ptr[AL_CONFIG_NAMES_MAX + 1]; /* al_config_policy scratch */
};

/* Every setting. Plain values, no pointers to the heap: copying is fine
 * (a policy points into the copy it was made from). */
struct al_config {
	char source[1024];   /* the file loaded last, "" = built-ins only */
	bool redis_from_env; /* redis.url came from $AIRLOCK_REDIS */
	bool redis_from_cli; /* redis.url came from --redis */

	struct {
		char url[AL_CONFIG_STR_MAX + 1]; /* "" = embedded Redis */
		uint32_t connect_timeout_ms;	 /* per connect attempt */
		uint32_t command_timeout_ms;	 /* per command reply */
		uint32_t wait_replicas;		 /* submits: WAIT for N, 0 = no */
		uint32_t wait_ms;		 /* ... up to this long */
	} redis;

	struct {
		char name[AL_NAME_MAX + 1];   /* the {hash tag} of every key */
		uint32_t max_deliveries;      /* then dead-letter */
		uint32_t result_ttl_s;	      /* results expire after this */
		uint32_t visibility_slack_ms; /* reclaim after wall_ms + this */
		uint32_t heartbeat_ms;	   /* claim refresh of running jobs */
		uint32_t trim_interval_ms; /* stream trim period */
		bool dead_letter;	   /* keep poison jobs in :dead */
		uint32_t partitions;	   /* slots the queue spans, 1..64 */
	} queue;

	struct {
		uint32_t count;		    /* 0 = one per online CPU */
		uint32_t shutdown_grace_ms; /* running jobs get this long */
		uint32_t memory_mb;	    /* memory cgroup per worker, 0 = none */
		uint32_t max_sessions;	    /* sessions this host keeps, 0 = none */
	} workers;

	struct {
		uint32_t ttl_default_s;	    /* lifetime when ttl_s is absent */
		uint32_t ttl_max_s;	    /* longest lifetime, extend included */
		uint32_t idle_default_s;    /* idle timeout when idle_s absent */
		uint32_t hibernate_default_s; /* hibernate after, 0 = never */
		uint32_t create_timeout_ms; /* a create waits this for room */
		uint32_t keep_s;	    /* ended records and output kept */
		uint32_t output_max_bytes;  /* stored bytes per exec stream */
		uint32_t output_budget_bytes; /* kept per session, all execs */
		uint32_t snapshots_per_principal; /* per host, 0 = no cap */
		bool spare;		    /* a session process kept warm */
	} sessions;

	struct {
		char state_dir[AL_CONFIG_STATE_DIR_MAX + 1]; /* "" = per user */
		char qemu[AL_CONFIG_STR_MAX + 1]; /* name in $PATH or path */
		enum al_config_accel accel;	  /* accelerator choice */
		uint32_t vm_memory_mb;		  /* template guest RAM */
		uint32_t vm_vcpus;		  /* template guest CPUs */
		uint32_t prestart;		  /* idle VMM processes kept */
		uint32_t vm_ttl_slack_ms;	  /* TTL = wall_ms + this */
		uint32_t vmm_uid_base;		  /* jailed VMMs' first uid */
		uint32_t vmm_uid_count;		  /* uids, one per live VMM */
		char vmm_cgroup[AL_CONFIG_STR_MAX + 1]; /* VM cgroups' parent */
		uint32_t vmm_memory_overhead_mb; /* memory.max = RAM + TB + this */
		uint32_t tcg_tb_size_mb;	 /* TCG translation buffer */
		uint32_t vmm_cpu_max;		 /* cpu.max, % per vCPU */
	} sandbox;

	struct {
		char warm[AL_CONFIG_STR_MAX + 1]; /* "python:2 c:1" per worker */
		uint32_t warm_last;	/* warm clones of the last job's template */
		uint32_t max_age_s;	/* replace a warm clone older than this */
		bool warm_zygote;	/* warm up a warm clone's zygote */
		uint32_t net_ready;	/* ready network slots per worker */
	} pool;

	struct {
		struct al_limits defaults;    /* for absent job limits */
		struct al_limits max;	      /* largest a job may ask */
		uint32_t step_timeout_ms;     /* default step timeout */
		uint32_t step_timeout_ms_max; /* largest step timeout */
	} limits;

	struct {
		char default_[AL_NAME_MAX + 1];	 /* for jobs naming none */
		struct al_config_names allowed;	 /* empty = any found in dir */
		char dir[AL_CONFIG_STR_MAX + 1]; /* "" = search */
		bool check_images; /* serve: refuse an unbuilt template */
		char time_scale[AL_CONFIG_STR_MAX + 1]; /* "java:4 ..." */
		char from[1100]; /* al_config_policy scratch: the file that
				    sets templates.allowed, for refusals */
		const char *unbuilt[AL_CONFIG_NAMES_MAX + 1]; /* scratch of
						al_config_policy_local */
	} templates;

	struct {
		bool loaded; /* read from the templates dir (al_config_languages) */
		size_t n;    /* entries used, sorted by name */
		struct al_language list[AL_LANGUAGES_MAX]; /* `language` lines */
	} languages;

	struct {
		char dns[64]; /* [network] dns: upstream resolver IPv4[:PORT],
				 "" = the host's /etc/resolv.conf */
		size_t n; /* [network.NAME] sections: the policies jobs may
			     name besides "none" */
		struct sb_net_policy policy[SB_NET_POLICIES_MAX];
		const char *ptr[SB_NET_POLICIES_MAX + 1]; /* al_config_policy
							     scratch */
	} network;
	struct {
		struct al_config_names allowed;	 /* jobs may name as template */
		uint32_t max_disk_mb;		 /* cap on all, 0 = none */
		bool build_on_demand;		 /* from a published definition */
	} snapshots;

	struct {
		char listen[AL_CONFIG_STR_MAX + 1]; /* HOST:PORT, "" = off */
	} metrics;

	struct {
		char pypi_upstream[AL_CONFIG_STR_MAX + 1]; /* simple index URL */
		char npm_upstream[AL_CONFIG_STR_MAX + 1];  /* registry URL */
	} packages;

	struct {
		char listen[AL_CONFIG_STR_MAX + 1]; /* HOST:PORT, "" = off */
		char token_file[AL_CONFIG_STR_MAX + 1]; /* bearer, "" = loopback */
		char tokens_file[AL_CONFIG_STR_MAX + 1]; /* principal tokens */
		uint32_t max_body_bytes;	    /* request body cap */
		uint32_t max_connections;	    /* open at once */
		uint32_t timeout_s;		    /* idle connection limit */
		uint32_t max_wait_s;		    /* largest ?wait= */
		uint32_t queue_cap;		    /* waiting jobs: 503, 0 = none */
		struct al_config_names callback_allow; /* host:port, CIDR */
		uint32_t callback_attempts;	    /* POSTs before giving up */
	} http;

	struct {
		enum al_config_log level; /* least severe level logged */
		enum al_config_log_format format; /* text or json lines */
	} log;
};

/* The built-in defaults. */
void al_config_init(struct al_config *cfg);
/* Apply the INI file at `path` on top of cfg (see the steps above).
 * Returns 0, -EINVAL (bad content, err says where), -E2BIG (over
 * AL_CONFIG_FILE_MAX) or the -errno of open/read. */
int al_config_load(struct al_config *cfg, const char *path, char *err,
		   size_t errlen);
/* The same for text in memory; `name` stands for the file in messages. */
int al_config_load_string(struct al_config *cfg, const char *name,
			  const char *text, char *err, size_t errlen);
/* The config file the CLI and the installed systemd unit both read when
 * neither --config nor $AIRLOCK_CONFIG names one: an installed binary
 * (PREFIX/bin/airlock, al_install_path) reads PREFIX/etc/airlock/
 * airlock.conf, /etc/airlock/airlock.conf for the prefix /usr (or
 * SYSCONFDIR/airlock/airlock.conf when the build set an absolute
 * CMAKE_INSTALL_SYSCONFDIR), exactly the file `cmake --install` put there
 * and the unit's ExecStart names; a binary in a build tree reads
 * AL_CONFIG_SYSTEM_PATH. 0 or -ENAMETOOLONG. */
int al_config_system_path(char *buf, size_t len);
/* Find and load the config (step 2 above); explicit_path may be NULL. */
int al_config_load_default(struct al_config *cfg, const char *explicit_path,
			   char *err, size_t errlen);
/* Fill a policy for al_job_check_policy() and friends. Its strings and lists
 * point into cfg (which is why cfg is not const): valid until cfg changes. */
void al_config_policy(struct al_config *cfg, struct al_policy *ret);
/* Read the `language` lines of every template in the templates dir into
 * cfg->languages (once; languages.c), for al_config_policy(). A bad line
 * or a language two templates declare is left out and the first such
 * problem is in err ("c.conf:12: reason"); returns 0, -EINVAL (err set)
 * or the -errno of opening the dir. */
int al_config_languages(struct al_config *cfg, char *err, size_t errlen);
/* The policy a job's `network` names: NULL for NULL, "none" and names no
 * [network.NAME] section defines (al_job_check_policy() has refused those
 * already). Points into cfg. */
const struct sb_net_policy *al_config_net_policy(const struct al_config *cfg,
						 const char *name);
/* Leave cfg zeroed. cfg owns no memory today; call it anyway. */
void al_config_release(struct al_config *cfg);
/* Print the effective config as INI that al_config_load() reads back to the
 * same values (a password in redis.url is printed as REDACTED). Returns 0
 * or -EIO. */
int al_config_dump(const struct al_config *cfg, FILE *f);

/* A file or dir shipped with airlock: PREFIX/rel when this binary runs
 * from PREFIX/bin (an installed copy, wherever it was moved), whether or
 * not it exists (an installed binary never falls back to the build
 * tree), else `fallback` (the build tree's path, compiled in). 0 or
 * -ENAMETOOLONG. */
int al_install_path(const char *rel, const char *fallback, char *buf,
		    size_t len);

/* Why a rediss:// URL is refused, appended to the error that says so. */
#define AL_NO_TLS                                                            \
	" (rediss:// is not supported: this build's hiredis, 0.14 in Debian " \
	"12, has no TLS; hiredis_ssl came with 1.0. Use a unix socket or a " \
	"TLS tunnel such as stunnel to a local port)"

/* sandbox.state_dir resolved: itself, else /var/lib/airlock for root, else
 * $XDG_STATE_HOME/airlock, else ~/.local/state/airlock. Returns 0,
 * -ENAMETOOLONG (over AL_CONFIG_STATE_DIR_MAX) or -ENOENT (no home). */
int al_config_state_dir(const struct al_config *cfg, char *buf, size_t len);
/* templates.dir resolved: itself, else $AIRLOCK_TEMPLATES_DIR, else the
 * installed share/airlock/templates (al_install_path), else the
 * directory compiled in (the source tree's configs/templates unless the
 * build says otherwise). Returns 0 or -ENAMETOOLONG. */
int al_config_templates_dir(const struct al_config *cfg, char *buf, size_t len);
/* The next template in d (the templates dir, opened by the caller) into
 * name: NAME of a file NAME.conf, NAME of 1..AL_NAME_MAX bytes, in
 * readdir order; false at the end. For `serve`'s GET /templates and
 * `doctor`, which list what the dir holds. */
bool al_config_template_next(DIR *d, char name[AL_NAME_MAX + 1]);

/* Is s HOST:PORT as metrics.listen and http.listen take it (not empty)? */
bool al_config_listen_valid(const char *s);
/* Is s a bearer token http.token_file may hold: 16..256 characters of
 * [A-Za-z0-9._~+/=-]? */
bool al_config_token_valid(const char *s);

/* --- the key table, for the dumper, docs and tests ----------------------- */

enum al_config_type {
	AL_CONFIG_U32,	 /* decimal integer in min..max */
	AL_CONFIG_BOOL,	 /* true/false (also yes/no, on/off, 1/0) */
	AL_CONFIG_ENUM,	 /* one of `choices`; stored as the enum value */
	AL_CONFIG_STR,	 /* char[max + 1], checked by `check` */
	AL_CONFIG_NAMES, /* struct al_config_names, each name by `check` */
};

struct al_config_key {
	const char *section;	    /* "redis" */
	const char *key;	    /* "url" */
	enum al_config_type type;   /* how the value is read */
	size_t offset;		    /* of the value in struct al_config */
	uint32_t min;		    /* U32: smallest value */
	uint32_t max;		    /* U32: largest; STR: bytes; NAMES: count */
	const char *dflt;	    /* default as written in the file, NULL =
				       al_policy_default() at policy_offset */
	size_t policy_offset;	    /* of the default in struct al_policy */
	const char *const *choices; /* ENUM: names, NULL-terminated */
	bool (*check)(const char *s); /* STR, NAMES entries: syntax */
	const char *rule; /* what check accepts, for messages, docs */
	const char *doc;  /* one line: what it means */
};

/* The table, in file order; *ret_n gets its length. */
const struct al_config_key *al_config_keys(size_t *ret_n);
/* A key's value in cfg as written in the file. Returns the length, like
 * snprintf (buf is always NUL-terminated when len > 0). */
size_t al_config_format(const struct al_config *cfg,
			const struct al_config_key *k, char *buf, size_t len);
/* What a key accepts, e.g. "1..100", "auto|kvm|tcg"; like snprintf. */
size_t al_config_range(const struct al_config_key *k, char *buf, size_t len);

#endif
