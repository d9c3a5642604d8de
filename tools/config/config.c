/* config.c: the config file: the key table, the INI parser on top of inih,
 * defaults, the dumper and the policy mapping.
 *
 * Theory of operation. `keys` below has one row per setting: where it
 * lives in struct al_config, its type and range, its default as written in
 * the file, and one line of doc. Everything else is driven by it:
 * al_config_init() parses every row's default with the same code as a file
 * value (so a bad default fails the unit test, not a deployment), the inih
 * handler looks a key up and parses into a scratch copy, the dumper prints
 * every row, and tests/unit/test_config.c checks configs/airlock.conf and
 * docs/config.md against it. Checks across keys (a default above its
 * maximum) are the `pairs` table, run after the whole file is read.
 *
 * Network policies are the one kind of section whose name is not fixed:
 * `[network.NAME]` defines the policy NAME. on_key() sends their keys to
 * on_policy_key(), which finds or makes the policy in cfg.network and
 * hands the value to sb_net_policy_set() (sandbox/net/netpolicy.c: the value
 * syntax lives next to the struct, and is fuzzed there); the policy's own
 * key table is sb_net_policy_keys(). The policies jobs may name are
 * exactly the sections defined, plus "none".
 *
 * Why ini_parse_stream() and not ini_parse_file(): Debian's libinih is
 * built without INI_HANDLER_LINENO, and it silently splits a line longer
 * than its 200-byte buffer into two "lines" (the tail of a long value can
 * become a key of its own). Our reader hands inih one line at a time from
 * the file read into memory, so it knows the line number of every handler
 * call, rejects overlong lines and NUL bytes with a clear error, and strips
 * leading white space (inih would read an indented line as the continuation
 * of the previous value). We leave inih's global knobs alone.
 *
 * Callers: tools/ only: al_cli_load() (cli.c) for every command that reads
 * the config, test_config. The dispatcher, workers and sandbox never see
 * struct al_config: the CLI turns it into their own options
 * (al_config_serve_opts, al_sandbox_options, al_config_policy), so those
 * layers build and test without this parser.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"

#ifndef AL_REL_BINDIR /* GNUInstallDirs' dirs, relative to the prefix */
#define AL_REL_BINDIR "bin"
#define AL_REL_TEMPLATES "share/airlock/templates"
#endif
#ifndef AL_TEMPLATES_DIR
#define AL_TEMPLATES_DIR "/usr/share/airlock/templates"
#endif

_Static_assert(sizeof(enum al_config_accel) == sizeof(int), "enum size");
_Static_assert(sizeof(enum al_config_log) == sizeof(int), "enum size");
_Static_assert(AL_CONFIG_LINE_MAX + 3 <= INI_MAX_LINE, "inih line buffer");

/* --- value syntax --------------------------------------------------------- */

static bool is_lower_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Queue name: it is the Redis Cluster hash tag, so no braces: [a-z0-9_-]+ */
static bool check_queue(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_lower_digit(*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

/* Template and network policy names, as the job schema spells them. */
static bool check_name(const char *s)
{
	return al_name_valid(s); /* the jobs' rule (results.h) */
}

/* Space-separated NAME:N pairs, each N in lo..hi (al_name_count). */
static bool name_counts(const char *s, unsigned long lo, unsigned long hi)
{
	unsigned long n;

	return al_name_count(s, NULL, lo, hi, &n) >= 0;
}

/* [pool] warm: NAME:N, N 0..8 (SB_POOL_MAX); the same grammar as
 * al_worker_warm_count() in worker/job.c, which reads it with
 * al_name_count() too. */
static bool check_warm(const char *s)
{
	return name_counts(s, 0, 8);
}

static bool no_space(const char *s)
{
	for (; *s; s++)
		if (*s == ' ' || *s == '\t')
			return false;
	return true;
}

static bool check_url(const char *s)
{
	if (!*s)
		return true;
	if (!no_space(s))
		return false;
	if (strncmp(s, "redis://", 8) == 0)
		return s[8] != 0 && s[8] != '/';
	if (strncmp(s, "unix://", 7) == 0)
		return strchr(s + 7, '/') != NULL;
	if (strncmp(s, "redis+sentinel://", 17) == 0) /* sentinel.h */
		return s[17] != 0 && s[17] != '/';
	return false;
}

/* [packages] upstreams: empty, or an http(s) URL without spaces. */
static bool check_http_url(const char *s)
{
	if (!*s)
		return true;
	if (!no_space(s))
		return false;
	if (strncmp(s, "https://", 8) == 0)
		return s[8] != 0 && s[8] != '/';
	if (strncmp(s, "http://", 7) == 0)
		return s[7] != 0 && s[7] != '/';
	return false;
}

static bool check_abs_path(const char *s)
{
	return s[0] == '/';
}

/* [templates] time_scale: NAME:N, N 1..AL_TIME_SCALE_MAX; read by
 * al_time_scale() (results/lang.c). */
static bool check_time_scale(const char *s)
{
	return name_counts(s, 1, AL_TIME_SCALE_MAX);
}


static bool check_opt_abs_path(const char *s)
{
	return !*s || s[0] == '/';
}

/* A command looked up in $PATH, or an absolute path. */
static bool check_command(const char *s)
{
	if (s[0] == '/')
		return true;
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_lower_digit(*s) && !(*s >= 'A' && *s <= 'Z') &&
		    !strchr("._+-", *s))
			return false;
	return true;
}

/* HOST:PORT with HOST a name, an IPv4 address or [IPv6]; port 1..65535. */
static bool check_listen(const char *s)
{
	const char *colon = strrchr(s, ':'), *p;
	uint16_t port;

	if (!*s)
		return true;
	if (!colon || colon == s ||
	    al_port_parse(colon + 1, strlen(colon + 1), &port) < 0)
		return false;
	if (s[0] == '[') {
		if (colon[-1] != ']' || colon - s < 3)
			return false;
		for (p = s + 1; p < colon - 1; p++)
			if (!strchr("0123456789abcdefABCDEF:.", *p))
				return false;
		return true;
	}
	for (p = s; p < colon; p++)
		if (!is_lower_digit(*p) && !(*p >= 'A' && *p <= 'Z') &&
		    *p != '.' && *p != '-')
			return false;
	return true;
}

bool al_config_listen_valid(const char *s)
{
	return *s && check_listen(s);
}

bool al_config_token_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 16 || n > 256)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._~+/=-", *s))
			return false;
	return true;
}

/* A callback target: HOST:PORT, or an address block ADDR/PREFIX. */
static bool check_target(const char *s)
{
	const char *slash = strchr(s, '/');
	unsigned char a[16];
	char addr[64];
	long bits;
	char *end;

	if (!slash)
		return *s && check_listen(s);
	if ((size_t)(slash - s) >= sizeof(addr) || !slash[1])
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	bits = strtol(slash + 1, &end, 10);
	if (*end || bits < 0)
		return false;
	if (inet_pton(AF_INET, addr, a) == 1)
		return bits <= 32;
	return inet_pton(AF_INET6, addr, a) == 1 && bits <= 128;
}

/* [network] dns: empty, or an IPv4 address with an optional :PORT
 * (1..65535), the form sb_options.net_dns takes. */
static bool check_dns(const char *s)
{
	const char *colon = strchr(s, ':');
	char addr[INET_ADDRSTRLEN];
	unsigned char a[4];
	char *end;
	long port;

	if (!*s)
		return true;
	if (!colon)
		return inet_pton(AF_INET, s, a) == 1;
	if ((size_t)(colon - s) >= sizeof(addr) || colon[1] < '1' ||
	    colon[1] > '9')
		return false;
	memcpy(addr, s, (size_t)(colon - s));
	addr[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	return !*end && port <= 65535 && inet_pton(AF_INET, addr, a) == 1;
}

/* --- the table ------------------------------------------------------------ */

static const char *const accel_names[] = {"auto", "kvm", "tcg", NULL};
static const char *const log_names[] = {"error", "warn", "info", "debug", NULL};
static const char *const log_formats[] = {"text", "json", NULL};

/* clang-format off */
#define OFF(f) offsetof(struct al_config, f)
#define CAP(f) ((uint32_t)sizeof(((struct al_config *)0)->f) - 1)

#define U32(sec, k, lo, hi, d, doc) \
	{#sec, #k, AL_CONFIG_U32, OFF(sec.k), lo, hi, d, 0, NULL, NULL, \
	 NULL, doc}
#define BOOL(sec, k, d, doc) \
	{#sec, #k, AL_CONFIG_BOOL, OFF(sec.k), 0, 1, d, 0, NULL, NULL, \
	 NULL, doc}
#define ENUM(sec, k, names, d, doc) \
	{#sec, #k, AL_CONFIG_ENUM, OFF(sec.k), 0, 0, d, 0, names, NULL, \
	 NULL, doc}
#define STR(sec, k, f, chk, rule, d, doc) \
	{#sec, #k, AL_CONFIG_STR, OFF(sec.f), 0, CAP(sec.f), d, 0, NULL, \
	 chk, rule, doc}
#define NAMES(sec, k, d, doc) \
	{#sec, #k, AL_CONFIG_NAMES, OFF(sec.k), 0, AL_CONFIG_NAMES_MAX, d, \
	 0, NULL, check_name, "[a-z0-9][a-z0-9_.-]*", doc}
#define NAMES_CHK(sec, k, chk, rule, d, doc) \
	{#sec, #k, AL_CONFIG_NAMES, OFF(sec.k), 0, AL_CONFIG_NAMES_MAX, d, \
	 0, NULL, chk, rule, doc}
/* A job limit: default and maximum, both from al_policy_default(). */
#define LIMIT(k, lo, hi, what) \
	{"limits", #k, AL_CONFIG_U32, OFF(limits.defaults.k), lo, hi, \
	 NULL, offsetof(struct al_policy, defaults.k), NULL, NULL, NULL, \
	 what " when the job sets none"}, \
	{"limits", #k "_max", AL_CONFIG_U32, OFF(limits.max.k), lo, hi, \
	 NULL, offsetof(struct al_policy, max.k), NULL, NULL, NULL, \
	 "largest " #k " a job may ask for"}
/* clang-format on */

static const struct al_config_key keys[] = {
    STR(redis, url, url, check_url,
	"empty, redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
	"unix://[[USER]:PASSWORD@]/PATH or "
	"redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]]..."
	"[/MASTER[/DB]]",
	"",
	"Redis to use; empty = a private redis-server on a unix socket in "
	"the state dir"),
    U32(redis, connect_timeout_ms, 1, 60000, "2000",
	"ms before a connect attempt is given up (then retried with "
	"backoff)"),
    U32(redis, command_timeout_ms, 1, 600000, "5000",
	"ms to wait for the reply to a command"),
    U32(redis, wait_replicas, 0, 16, "0",
	"submits: WAIT for this many replicas to have each job before it "
	"counts as submitted (0 = do not wait; docs/queue.md, Sentinel)"),
    U32(redis, wait_ms, 1, 60000, "1000",
	"ms a submit waits for wait_replicas"),

    STR(queue, name, name, check_queue, "[a-z0-9_-]+", "default",
	"queue name; keys are airlock:{NAME}:..., one Cluster slot per "
	"queue"),
    U32(queue, max_deliveries, 1, 100, "3",
	"deliveries of a job before it is dead-lettered"),
    U32(queue, result_ttl_s, 60, 31536000, "604800",
	"seconds a result is kept in Redis (7 days)"),
    U32(queue, visibility_slack_ms, 1000, 3600000, "30000",
	"ms: a job is reclaimed when its claim is idle for its wall_ms "
	"plus this"),
    U32(queue, heartbeat_ms, 100, 600000, "5000",
	"ms between claim refreshes of a running job; below "
	"visibility_slack_ms"),
    U32(queue, trim_interval_ms, 1000, 86400000, "60000",
	"ms between trims of the jobs stream (never past a pending "
	"entry)"),
    BOOL(queue, dead_letter, "true",
	 "keep jobs that ran out of deliveries in airlock:{NAME}:dead"),
    U32(queue, partitions, 1, 64, "1",
	"partitions of the queue, each its own Cluster slot (Q, Q~p1, "
	"...); a job goes to the one its id hashes to; 1 = one slot "
	"(docs/queue.md, Partitions)"),

    U32(workers, count, 0, 1024, "0",
	"worker processes; 0 = one per online CPU"),
    U32(workers, shutdown_grace_ms, 0, 3600000, "30000",
	"ms running jobs get on shutdown before they are killed (and "
	"redelivered)"),
    U32(workers, memory_mb, 0, 65536, "512",
	"host memory cgroup of each worker process, MiB; 0 = none; as "
	"root a worker that cannot get one does not start"),
    U32(workers, max_sessions, 0, 1024, "4",
	"sessions this host keeps alive at once (each a VM of its own, "
	"beside the job workers); 0 = this serve takes no sessions"),

    U32(sessions, ttl_default_s, 1, 604800, "600",
	"a session's lifetime when create gives no ttl_s"),
    U32(sessions, ttl_max_s, 1, 604800, "3600",
	"the longest lifetime a session may have from its start, extend "
	"included"),
    U32(sessions, idle_default_s, 0, 604800, "300",
	"a session ends after this long without a request or a running "
	"exec, when create gives no idle_s; 0 = never"),
    U32(sessions, hibernate_default_s, 0, 604800, "0",
	"a saveable session's VM is saved and its VMM ended after this "
	"long without a request, when create gives no hibernate_s; the "
	"next request restores it; 0 = never"),
    U32(sessions, create_timeout_ms, 100, 3600000, "30000",
	"ms a create waits for a host with room before it fails"),
    U32(sessions, keep_s, 60, 31536000, "3600",
	"seconds an ended session's record and exec output are kept"),
    U32(sessions, output_max_bytes, 1024, 16777216, "4194304",
	"bytes of each exec stream stored for reading by offset"),
    U32(sessions, output_budget_bytes, 65536, 1073741824, "67108864",
	"bytes of exec output one session keeps in Redis at once (streams "
	"and record tails): past it the oldest execs' output is dropped"),
    U32(sessions, snapshots_per_principal, 0, 65536, "8",
	"session snapshots (`session snapshot`) one principal of "
	"http.tokens_file may keep on a host; its next save is refused "
	"until one is removed (0 = no cap; operators have none)"),
    BOOL(sessions, spare, "false",
	 "keep one session process ready with the warm clones of [pool] "
	 "warm, so a create gets a warm hand-off (costs those VMs' memory)"),

    STR(sandbox, state_dir, state_dir, check_opt_abs_path,
	"empty or an absolute path", "",
	"VM dirs, sockets, template snapshots; empty = /var/lib/airlock "
	"for root, else $XDG_STATE_HOME/airlock or "
	"~/.local/state/airlock"),
    STR(sandbox, qemu, qemu, check_command,
	"a command name or an absolute path", "qemu-system-x86_64",
	"the QEMU binary"),
    ENUM(sandbox, accel, accel_names, "auto",
	 "accelerator: auto = KVM when it can boot the guest, else TCG"),
    U32(sandbox, vm_memory_mb, AL_MEMORY_MB_MIN, AL_MEMORY_MB_MAX, "1024",
	"guest RAM of the template VMs, MiB"),
    U32(sandbox, vm_vcpus, 1, AL_VCPUS_MAX, "1",
	"guest CPUs of the template VMs"),
    U32(sandbox, prestart, 0, 64, "1",
	"empty VMM processes kept started ahead of jobs, per worker"),
    U32(sandbox, vm_ttl_slack_ms, 0, 600000, "10000",
	"ms: a VM is killed at its job's wall_ms plus this, whatever the "
	"guest does"),
    U32(sandbox, vmm_uid_base, 1, 4000000000u, "1200000",
	"first uid (== gid) of the jailed VMMs, one per live VM (as root; "
	"never 0: uids of real users do not belong here)"),
    U32(sandbox, vmm_uid_count, 1, 65536, "1024",
	"uids from vmm_uid_base on: how many VMs may be alive at once"),
    STR(sandbox, vmm_cgroup, vmm_cgroup, check_abs_path, "an absolute path",
	"/sys/fs/cgroup/airlock",
	"cgroup v2 directory under which each VMM gets its own cgroup"),
    U32(sandbox, vmm_memory_overhead_mb, 16, 4096, "256",
	"VMM cgroup memory.max = guest RAM + TCG translation buffer + this, "
	"MiB (QEMU's own heap, TLBs, device state)"),
    U32(sandbox, tcg_tb_size_mb, 32, 2048, "256",
	"TCG translation buffer (QEMU -accel tcg,tb-size), MiB; counted in "
	"the VMM cgroup's memory.max (QEMU's default is 1024)"),
    U32(sandbox, vmm_cpu_max, 1, 1000, "100",
	"VMM cgroup cpu.max, percent of one CPU per vCPU"),

    STR(pool, warm, warm, check_warm, "NAME:N pairs, N 0..8, space-separated",
	"",
	"warm clones each worker keeps per template, e.g. python:2 c:1 "
	"(docs/warm.md)"),
    U32(pool, warm_last, 0, 8, "1",
	"warm clones each worker keeps of its last job's template"),
    U32(pool, max_age_s, 0, 86400, "600",
	"seconds: a warm clone that waited this long is replaced; 0 = never"),
    BOOL(pool, warm_zygote, "true",
	 "warm a warm clone's python zygote up in forks of itself, ~70-160 "
	 "ms of CPU per clone under TCG (docs/zygote.md); false: its jobs "
	 "meet the zygote cold"),
    U32(pool, net_ready, 0, 4, "1",
	"network slots each worker keeps ready for networked jobs, made "
	"between jobs (docs/network.md); 0 = each job makes its own"),

    LIMIT(memory_mb, AL_MEMORY_MB_MIN, AL_MEMORY_MB_MAX, "guest memory in MiB"),
    LIMIT(vcpus, 1, AL_VCPUS_MAX, "vCPUs"),
    LIMIT(wall_ms, 1, AL_WALL_MS_MAX, "wall time of the whole VM in ms"),
    LIMIT(output_bytes, 1, AL_OUTPUT_MAX,
	  "output bytes kept per stream per step"),
    LIMIT(pids, 1, AL_PIDS_MAX, "processes per step"),
    LIMIT(disk_mb, 1, AL_DISK_MB_MAX, "writable disk in MiB"),
    LIMIT(file_size_mb, 1, AL_FILE_SIZE_MB_MAX,
	  "largest file a step may write in MiB"),
    {"limits", "step_timeout_ms", AL_CONFIG_U32, OFF(limits.step_timeout_ms), 1,
     AL_TIMEOUT_MS_MAX, NULL, offsetof(struct al_policy, step_timeout_ms), NULL,
     NULL, NULL, "step timeout in ms when the step sets none"},
    {"limits", "step_timeout_ms_max", AL_CONFIG_U32,
     OFF(limits.step_timeout_ms_max), 1, AL_TIMEOUT_MS_MAX, NULL,
     offsetof(struct al_policy, step_timeout_max_ms), NULL, NULL, NULL,
     "largest timeout_ms a step may ask for"},

    STR(templates, default, default_, check_name, "[a-z0-9][a-z0-9_.-]*",
	"python", "template of a job that names none"),
    NAMES(templates, allowed, "python c",
	  "templates jobs may name, space-separated; empty = any in the "
	  "templates dir"),
    STR(templates, dir, dir, check_opt_abs_path, "empty or an absolute path",
	"",
	"template definitions; empty = $AIRLOCK_TEMPLATES_DIR, else the "
	"built-in dir"),
    STR(templates, time_scale, time_scale, check_time_scale,
	"NAME:N pairs, N 1..20, space-separated",
	"java:4 kotlin:4 scala:4 groovy:4 clojure:4",
	"language jobs on template NAME get N times their steps' timeouts "
	"and cpu_ms (a JVM's start under TCG, docs/languages.md); 1 under "
	"KVM is fine"),
    BOOL(templates, check_images, "true",
	 "serve refuses a job naming an allowed template with no image on "
	 "this host when it is submitted or read (false: a fleet whose "
	 "hosts hold different images)"),

    STR(network, dns, dns, check_dns, "empty or IPV4[:PORT]", "",
	"upstream DNS server of the networked VMs' resolvers; empty = the "
	"first IPv4 nameserver of the host's /etc/resolv.conf"),

    NAMES(snapshots, allowed, "",
	  "snapshots jobs may name as their template, space-separated "
	  "(docs/snapshots.md)"),
    U32(snapshots, max_disk_mb, 0, 4194304, "0",
	"cap on the disk all snapshots take, MiB; over it the oldest unused "
	"go first; 0 = no cap"),
    BOOL(snapshots, build_on_demand, "true",
	 "build a snapshot from its definition published in Redis when a "
	 "job names it and this host's build differs; false = refuse such "
	 "jobs (RJ)"),

    STR(metrics, listen, listen, check_listen, "empty or HOST:PORT", "",
	"address of the Prometheus metrics endpoint; empty = off"),

    STR(packages, pypi_upstream, pypi_upstream, check_http_url,
	"empty or an http(s):// URL", "",
	"PEP 503/691 simple index `airlock packages fetch` downloads pip "
	"packages from (URL of its /simple/); empty = none, fetch refuses"),
    STR(packages, npm_upstream, npm_upstream, check_http_url,
	"empty or an http(s):// URL", "",
	"npm registry `airlock packages fetch` downloads npm packages from; "
	"empty = none, fetch refuses"),

    STR(http, listen, listen, check_listen, "empty or HOST:PORT", "",
	"address of the HTTP API (airlock serve; --http overrides); empty = "
	"off"),
    STR(http, token_file, token_file, check_opt_abs_path,
	"empty or an absolute path", "",
	"file holding the bearer token the HTTP API requires; empty = "
	"loopback clients only"),
    STR(http, tokens_file, tokens_file, check_opt_abs_path,
	"empty or an absolute path", "",
	"file of \"PRINCIPAL TOKEN [operator]\" lines: each token acts as "
	"its principal, which owns the sessions it makes (docs/security.md); "
	"set, it replaces token_file; empty = token_file's one operator"),
    U32(http, max_body_bytes, 4096, 268435456, "16777216",
	"largest HTTP request body (a job or a batch), bytes"),
    U32(http, max_connections, 1, 10000, "64",
	"HTTP connections open at once; more are refused"),
    U32(http, timeout_s, 1, 3600, "30",
	"seconds an HTTP connection may stay idle (slow clients are cut)"),
    U32(http, max_wait_s, 0, 3600, "300",
	"largest ?wait=SECONDS of POST /jobs"),
    U32(http, queue_cap, 0, 10000000, "0",
	"jobs waiting in the queue at which a submission (POST /jobs and "
	"the doors) gets 503 with Retry-After; 0 = no cap"),
    NAMES_CHK(http, callback_allow, check_target, "HOST:PORT or ADDR/PREFIX",
	      "",
	      "callback_url targets allowed, space-separated; empty = no "
	      "callbacks"),
    U32(http, callback_attempts, 1, 20, "5",
	"POSTs of a callback before it is given up (1, 2, 4.. s apart)"),

    ENUM(log, level, log_names, "info", "least severe log level written"),
    ENUM(log, format, log_formats, "text",
	 "log lines: text, or json (one object a line)"),
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* Checks across keys, run after a whole file: lo <= hi (lo < hi when
 * strict). */
static const struct {
	const char *section, *lo, *hi;
	bool strict;
} pairs[] = {
    {"limits", "memory_mb", "memory_mb_max", false},
    {"limits", "vcpus", "vcpus_max", false},
    {"limits", "wall_ms", "wall_ms_max", false},
    {"limits", "output_bytes", "output_bytes_max", false},
    {"limits", "pids", "pids_max", false},
    {"limits", "disk_mb", "disk_mb_max", false},
    {"limits", "file_size_mb", "file_size_mb_max", false},
    {"limits", "step_timeout_ms", "step_timeout_ms_max", false},
    {"queue", "heartbeat_ms", "visibility_slack_ms", true},
};

const struct al_config_key *al_config_keys(size_t *ret_n)
{
	*ret_n = N_KEYS;
	return keys;
}

static const struct al_config_key *find_key(const char *section,
					    const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].section, section) == 0 &&
		    strcmp(keys[i].key, key) == 0)
			return &keys[i];
	return NULL;
}

static bool section_known(const char *section)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].section, section) == 0)
			return true;
	return false;
}

static void *field(void *cfg, const struct al_config_key *k)
{
	return (char *)cfg + k->offset;
}

static const void *cfield(const void *cfg, const struct al_config_key *k)
{
	return (const char *)cfg + k->offset;
}

/* --- parsing one value ---------------------------------------------------- */

size_t al_config_range(const struct al_config_key *k, char *buf, size_t len)
{
	size_t n = 0;
	int w;

	if (len)
		buf[0] = 0;
	switch (k->type) {
	case AL_CONFIG_U32:
		w = snprintf(buf, len, "%u..%u", k->min, k->max);
		return w < 0 ? 0 : (size_t)w;
	case AL_CONFIG_BOOL:
		w = snprintf(buf, len, "true|false");
		return w < 0 ? 0 : (size_t)w;
	case AL_CONFIG_ENUM:
		for (const char *const *c = k->choices; *c; c++) {
			w = snprintf(buf + (n < len ? n : len),
				     n < len ? len - n : 0, "%s%s",
				     c == k->choices ? "" : "|", *c);
			n += w < 0 ? 0 : (size_t)w;
		}
		return n;
	case AL_CONFIG_STR:
		w = snprintf(buf, len, "%s, at most %u bytes", k->rule, k->max);
		return w < 0 ? 0 : (size_t)w;
	case AL_CONFIG_NAMES:
		w = snprintf(buf, len, "up to %u names %s", k->max, k->rule);
		return w < 0 ? 0 : (size_t)w;
	}
	return 0;
}

static int parse_u32(const char *v, uint32_t *ret)
{
	uint64_t n;
	int r = al_decimal_parse(v, strlen(v), UINT32_MAX, &n);

	if (r == 0)
		*ret = (uint32_t)n;
	return r;
}

static int parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (strcmp(v, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Control characters; a tab separates list entries, so lists allow it. */
static bool has_control(const char *v, bool tab_ok)
{
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && !(tab_ok && *v == '\t')) ||
		    *v == 0x7f)
			return true;
	return false;
}

/* Split a space-separated list into `ret`; reason on failure. */
static const char *parse_names(const struct al_config_key *k, const char *v,
			       struct al_config_names *ret, char *why,
			       size_t whylen)
{
	struct al_config_names out = {0};
	size_t n;

	while (*v) {
		if (*v == ' ' || *v == '\t') {
			v++;
			continue;
		}
		n = strcspn(v, " \t");
		if (out.n == k->max) {
			snprintf(why, whylen, "more than %u names", k->max);
			return why;
		}
		if (n > AL_NAME_MAX) {
			snprintf(why, whylen, "a name is longer than %d bytes",
				 AL_NAME_MAX);
			return why;
		}
		memcpy(out.name[out.n], v, n);
		out.name[out.n][n] = 0;
		if (!k->check(out.name[out.n])) {
			snprintf(why, whylen, "names must be %s", k->rule);
			return why;
		}
		for (size_t i = 0; i < out.n; i++) {
			if (strcmp(out.name[i], out.name[out.n]) == 0) {
				snprintf(why, whylen, "lists \"%s\" twice",
					 out.name[i]);
				return why;
			}
		}
		out.n++;
		v += n;
	}
	*ret = out;
	return NULL;
}

/* Parse `v` into k's field of cfg. Returns NULL, or why not (in `why` or a
 * constant). */
static const char *parse_value(struct al_config *cfg,
			       const struct al_config_key *k, const char *v,
			       char *why, size_t whylen)
{
	char range[128];
	uint32_t u = 0;
	bool b;
	int rc;

	al_config_range(k, range, sizeof(range));
	switch (k->type) {
	case AL_CONFIG_U32:
		rc = parse_u32(v, &u);
		if (rc == -EINVAL) {
			snprintf(why, whylen, "must be an integer %s", range);
			return why;
		}
		if (rc < 0 || u < k->min || u > k->max) {
			snprintf(why, whylen, "must be %s", range);
			return why;
		}
		*(uint32_t *)field(cfg, k) = u;
		return NULL;
	case AL_CONFIG_BOOL:
		if (parse_bool(v, &b) < 0)
			return "must be true or false";
		*(bool *)field(cfg, k) = b;
		return NULL;
	case AL_CONFIG_ENUM:
		for (int i = 0; k->choices[i]; i++) {
			if (strcmp(v, k->choices[i]) == 0) {
				*(int *)field(cfg, k) = i;
				return NULL;
			}
		}
		snprintf(why, whylen, "must be one of %s", range);
		return why;
	case AL_CONFIG_STR:
		if (strlen(v) > k->max) {
			snprintf(why, whylen, "longer than %u bytes", k->max);
			return why;
		}
		if (has_control(v, false))
			return "must not contain control characters";
		if (!k->check(v)) {
			snprintf(why, whylen, "must be %s%s", k->rule,
				 k->check == check_url &&
					 strncmp(v, "rediss://", 9) == 0
				     ? AL_NO_TLS
				     : "");
			return why;
		}
		strcpy(field(cfg, k), v);
		return NULL;
	case AL_CONFIG_NAMES:
		if (has_control(v, true))
			return "must not contain control characters";
		return parse_names(k, v, field(cfg, k), why, whylen);
	}
	return "unknown type";
}

void al_config_init(struct al_config *cfg)
{
	const struct al_policy *p = al_policy_default();
	char why[160];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct al_config_key *k = &keys[i];

		if (!k->dflt) {
			memcpy(field(cfg, k),
			       (const char *)p + k->policy_offset,
			       sizeof(uint32_t));
			continue;
		}
		/* the unit test parses every default; this cannot fail */
		(void)parse_value(cfg, k, k->dflt, why, sizeof(why));
	}
}

void al_config_release(struct al_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
}

/* --- loading a file ------------------------------------------------------- */

struct load_error {
	unsigned line;	/* 0 = not tied to a line */
	char text[256]; /* "SECTION.KEY: reason" */
};

struct load_ctx {
	struct al_config cfg; /* scratch copy, committed on success */
	const char *name;     /* file name for messages */
	const char *text;     /* the file, NUL-terminated */
	const char *pos;      /* next unread byte of text */
	unsigned line;	      /* number of the line last read */
	bool stop;	      /* the reader found a bad line */
	unsigned set[N_KEYS]; /* line each key was set on, 0 = not */
	bool bad[N_KEYS];     /* the key's value was refused */
	struct load_error err[AL_CONFIG_ERRORS_MAX];
	size_t n_err;	      /* entries used in err */
	size_t dropped;	      /* errors past AL_CONFIG_ERRORS_MAX */
	char bad_section[72]; /* last unknown section reported */
	/* [network.NAME] sections, by index in cfg.network.policy */
	unsigned pol_line[SB_NET_POLICIES_MAX];	  /* first key's, 0 = none */
	unsigned pol_set[SB_NET_POLICIES_MAX][8]; /* line a single key was
						     set on, by key index */
	bool pol_bad[SB_NET_POLICIES_MAX];	  /* a key was refused */
};

static void add_error(struct load_ctx *c, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_error(struct load_ctx *c, unsigned line, const char *fmt, ...)
{
	va_list ap;

	if (c->n_err == AL_CONFIG_ERRORS_MAX) {
		c->dropped++;
		return;
	}
	c->err[c->n_err].line = line;
	va_start(ap, fmt);
	vsnprintf(c->err[c->n_err].text, sizeof(c->err[0].text), fmt, ap);
	va_end(ap);
	c->n_err++;
}

/* inih's reader: one line of the text per call, without its leading white
 * space. Ends the parse (NULL) at the end or at a line we refuse. */
static char *read_line(char *str, int num, void *stream)
{
	struct load_ctx *c = stream;
	size_t n, body, max = AL_CONFIG_LINE_MAX;
	const char *p;

	if (c->stop || !*c->pos)
		return NULL;
	c->line++;
	n = strcspn(c->pos, "\n");
	body = n && c->pos[n - 1] == '\r' ? n - 1 : n;
	if ((size_t)num < max + 3)
		max = (size_t)num - 3;
	if (body > max) {
		add_error(c, c->line, "line longer than %zu bytes", max);
		c->stop = true;
		return NULL;
	}
	p = c->pos;
	c->pos += n + (c->pos[n] == '\n');
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	memcpy(str, p, n);
	str[n] = '\n';
	str[n + 1] = 0;
	return str;
}

/* A section or key name from the file, safe to print: printable ASCII,
 * at most 64 bytes. */
static const char *clean(const char *s, char buf[static 72])
{
	size_t n = 0;

	for (; *s && n < 64; s++)
		buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (*s)
		buf[n++] = '~';
	buf[n] = 0;
	return buf;
}

static void unknown_key(struct load_ctx *c, const char *section,
			const char *name)
{
	char list[512], nbuf[72];
	size_t n = 0;

	list[0] = 0;
	for (size_t i = 0; i < N_KEYS && n < sizeof(list); i++) {
		int w;

		if (strcmp(keys[i].section, section) != 0)
			continue;
		w = snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
			     keys[i].key);
		n += w < 0 ? 0 : (size_t)w;
	}
	add_error(c, c->line, "%s.%s: unknown key; [%s] has %s", section,
		  clean(name, nbuf), section, list);
}

/* --- [network.NAME] sections ------------------------------------------- */

/* The policy called `name` in the file being read: found, or made (a
 * policy from an earlier load is replaced whole on its first key here).
 * NULL when there is no room. */
static struct sb_net_policy *policy_slot(struct load_ctx *c, const char *name,
					 size_t *ret_i)
{
	struct al_config *cfg = &c->cfg;
	size_t i;

	for (i = 0; i < cfg->network.n; i++)
		if (strcmp(cfg->network.policy[i].name, name) == 0)
			break;
	if (i == cfg->network.n) {
		if (i == SB_NET_POLICIES_MAX)
			return NULL;
		cfg->network.n++;
	}
	if (!c->pol_line[i]) {
		memset(&cfg->network.policy[i], 0, sizeof(cfg->network.policy[i]));
		strcpy(cfg->network.policy[i].name, name);
		c->pol_line[i] = c->line;
	}
	*ret_i = i;
	return &cfg->network.policy[i];
}

static int on_policy_key(struct load_ctx *c, const char *pname,
			 const char *key, const char *value)
{
	const struct sb_net_key *k;
	struct sb_net_policy *p;
	char why[192], sbuf[72], nbuf[72];
	size_t i, n, ki;
	int rc;

	clean(pname, sbuf);
	if (!check_name(pname) || strlen(pname) > AL_NAME_MAX ||
	    strcmp(pname, "none") == 0) {
		if (strcmp(c->bad_section, sbuf) != 0)
			add_error(c, c->line,
				  "network.%s: a policy name must be "
				  "[a-z0-9][a-z0-9_.-]*, at most %d bytes, "
				  "and not none",
				  sbuf, AL_NAME_MAX);
		memcpy(c->bad_section, sbuf, sizeof(sbuf));
		return 0;
	}
	p = policy_slot(c, pname, &i);
	if (!p) {
		add_error(c, c->line, "network.%s: more than %d policies", sbuf,
			  SB_NET_POLICIES_MAX);
		return 0;
	}
	k = sb_net_policy_keys(&n);
	for (ki = 0; ki < n && strcmp(k[ki].key, key) != 0; ki++)
		;
	if (ki == n || ki >= sizeof(c->pol_set[0]) / sizeof(unsigned)) {
		c->pol_bad[i] = true; /* no "names no ports" after "port =" */
		add_error(c, c->line,
			  "network.%s.%s: unknown key; a policy has allow, "
			  "ports, rate_kbit, conn_per_min",
			  sbuf, clean(key, nbuf));
		return 0;
	}
	if (!k[ki].repeat && c->pol_set[i][ki]) {
		c->pol_bad[i] = true;
		add_error(c, c->line,
			  "network.%s.%s: set twice (first on line %u)", sbuf,
			  key, c->pol_set[i][ki]);
		return 0;
	}
	c->pol_set[i][ki] = c->line;
	rc = sb_net_policy_set(p, key, value, why, sizeof(why));
	if (rc < 0) {
		c->pol_bad[i] = true;
		add_error(c, c->line, "network.%s.%s: %s", sbuf, key, why);
		return 0;
	}
	return 1;
}

/* Each policy of this file is whole: it allows something, names ports. */
static void check_policies(struct load_ctx *c)
{
	char why[160];

	for (size_t i = 0; i < c->cfg.network.n; i++) {
		const struct sb_net_policy *p = &c->cfg.network.policy[i];

		if (!c->pol_line[i] || c->pol_bad[i] ||
		    sb_net_policy_check(p, why, sizeof(why)) == 0)
			continue;
		add_error(c, c->pol_line[i], "network.%s: %s", p->name, why);
	}
}

static int on_key(void *user, const char *section, const char *name,
		  const char *value)
{
	struct load_ctx *c = user;
	const struct al_config_key *k;
	char buf[512], sbuf[72], nbuf[72];
	const char *why;
	size_t i;

	if (!*section) {
		add_error(c, c->line, "%s: key outside a [section]",
			  clean(name, nbuf));
		return 0;
	}
	if (strncmp(section, "network.", 8) == 0)
		return on_policy_key(c, section + 8, name, value);
	if (strcmp(section, "network") == 0 && strcmp(name, "dns") != 0) {
		add_error(c, c->line,
			  "network.%s: [network] has only dns; a policy is a "
			  "[network.NAME] section",
			  clean(name, nbuf));
		return 0;
	}
	if (!section_known(section)) {
		clean(section, sbuf);
		if (strcmp(c->bad_section, sbuf) != 0)
			add_error(c, c->line, "%s.%s: unknown section [%s]",
				  sbuf, clean(name, nbuf), sbuf);
		memcpy(c->bad_section, sbuf, sizeof(sbuf));
		return 0;
	}
	k = find_key(section, name);
	if (!k) {
		unknown_key(c, section, name);
		return 0;
	}
	i = (size_t)(k - keys);
	if (c->set[i]) {
		add_error(c, c->line, "%s.%s: set twice (first on line %u)",
			  section, name, c->set[i]);
		return 0;
	}
	c->set[i] = c->line;
	why = parse_value(&c->cfg, k, value, buf, sizeof(buf));
	if (why) {
		c->bad[i] = true;
		add_error(c, c->line, "%s.%s: %s", section, name, why);
		return 0;
	}
	return 1;
}

static uint32_t get_u32(const struct load_ctx *c, const char *section,
			const char *key, unsigned *ret_line, bool *bad)
{
	const struct al_config_key *k = find_key(section, key);

	*ret_line = c->set[k - keys];
	*bad |= c->bad[k - keys];
	return *(const uint32_t *)cfield(&c->cfg, k);
}

static bool is_bad(const struct load_ctx *c, const char *section,
		   const char *key)
{
	return c->bad[find_key(section, key) - keys];
}

/* The checks that need the whole file, skipping keys whose own value was
 * refused (their error says enough). */
static void check_across(struct load_ctx *c)
{
	struct al_config *cfg = &c->cfg;
	const struct al_config_names *allowed = &cfg->templates.allowed;
	unsigned l_lo, l_hi;
	uint32_t lo, hi;
	bool found;

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const char *s = pairs[i].section, *what;
		bool bad = false;

		lo = get_u32(c, s, pairs[i].lo, &l_lo, &bad);
		hi = get_u32(c, s, pairs[i].hi, &l_hi, &bad);
		if (bad || (pairs[i].strict ? lo < hi : lo <= hi))
			continue;
		what = pairs[i].strict ? "below" : "at most";
		if (l_lo || !l_hi)
			add_error(c, l_lo, "%s.%s: must be %s %s.%s (%u)", s,
				  pairs[i].lo, what, s, pairs[i].hi, hi);
		else
			add_error(c, l_hi, "%s.%s: must be %s %s.%s (%u)", s,
				  pairs[i].hi,
				  pairs[i].strict ? "above" : "at least", s,
				  pairs[i].lo, lo);
	}
	found = allowed->n == 0 || is_bad(c, "templates", "default") ||
		is_bad(c, "templates", "allowed");
	for (size_t i = 0; i < allowed->n; i++)
		found |= strcmp(allowed->name[i], cfg->templates.default_) == 0;
	if (!found) {
		const struct al_config_key *k =
		    find_key("templates", "default");

		add_error(c, c->set[k - keys],
			  "templates.default: \"%s\" is not in "
			  "templates.allowed",
			  cfg->templates.default_);
	}
	check_policies(c);
}

static unsigned sort_key(unsigned line)
{
	return line ? line : UINT_MAX;
}

/* Errors, sorted by line, one per line of `err`. */
static void format_errors(struct load_ctx *c, char *err, size_t errlen)
{
	size_t n = 0;
	int w;

	/* stable insertion sort; problems of the whole file go last */
	for (size_t i = 1; i < c->n_err; i++) {
		struct load_error e = c->err[i];
		size_t j = i;

		while (j && sort_key(c->err[j - 1].line) > sort_key(e.line)) {
			c->err[j] = c->err[j - 1];
			j--;
		}
		c->err[j] = e;
	}
	for (size_t i = 0; i < c->n_err && n < errlen; i++) {
		if (c->err[i].line)
			w = snprintf(err + n, errlen - n, "%s%s:%u: %s",
				     i ? "\n" : "", c->name, c->err[i].line,
				     c->err[i].text);
		else
			w = snprintf(err + n, errlen - n, "%s%s: %s",
				     i ? "\n" : "", c->name, c->err[i].text);
		n += w < 0 ? 0 : (size_t)w;
	}
	if (c->dropped && n < errlen)
		snprintf(err + n, errlen - n, "\n%s: %zu more problems",
			 c->name, c->dropped);
}

static bool error_on_line(const struct load_ctx *c, unsigned line)
{
	for (size_t i = 0; i < c->n_err; i++)
		if (c->err[i].line == line)
			return true;
	return false;
}

static int load_text(struct al_config *cfg, const char *name, const char *text,
		     size_t len, char *err, size_t errlen)
{
	struct load_ctx *c;
	const char *nul;
	int rc;

	if (err && errlen)
		err[0] = 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	c->name = name;
	c->text = c->pos = text;
	nul = memchr(text, 0, len);
	if (nul) {
		unsigned line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		add_error(c, line, "contains a NUL byte");
	} else {
		rc = ini_parse_stream(read_line, c, on_key, c);
		if (rc == -2) {
			free(c);
			return -ENOMEM;
		}
		if (rc > 0 && !error_on_line(c, (unsigned)rc))
			add_error(c, (unsigned)rc,
				  "syntax error: want KEY = VALUE or "
				  "[SECTION]");
		check_across(c);
	}
	rc = c->n_err ? -EINVAL : 0;
	if (rc == 0) {
		*cfg = c->cfg;
		snprintf(cfg->source, sizeof(cfg->source), "%s", name);
	} else if (err && errlen) {
		format_errors(c, err, errlen);
	}
	free(c);
	return rc;
}

int al_config_load_string(struct al_config *cfg, const char *name,
			  const char *text, char *err, size_t errlen)
{
	return load_text(cfg, name, text, strlen(text), err, errlen);
}

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* Read the whole file, capped, NUL-terminated; *ret_len excludes the NUL. */
static int read_file(const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	rc = -EINVAL;
	if (!S_ISREG(st.st_mode))
		goto out;
	rc = -ENOMEM;
	buf = malloc(AL_CONFIG_FILE_MAX + 2);
	if (!buf)
		goto out;
	for (;;) {
		n = read(fd, buf + len, AL_CONFIG_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		rc = -E2BIG;
		if (len > AL_CONFIG_FILE_MAX)
			goto out;
	}
	buf[len] = 0;
	*ret = buf;
	*ret_len = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

int al_config_load(struct al_config *cfg, const char *path, char *err,
		   size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = read_file(path, &text, &len);
	if (rc == -EINVAL)
		return set_err(err, errlen, rc, "%s: not a regular file", path);
	if (rc == -E2BIG)
		return set_err(err, errlen, rc, "%s: larger than %u bytes",
			       path, AL_CONFIG_FILE_MAX);
	if (rc < 0)
		return set_err(err, errlen, rc, "%s: cannot read: %s", path,
			       strerror(-rc));
	rc = load_text(cfg, path, text, len, err, errlen);
	free(text);
	return rc;
}

/* $AIRLOCK_REDIS, when set and not empty, replaces redis.url. */
static int redis_from_env(struct al_config *cfg, char *err, size_t errlen)
{
	const struct al_config_key *k = find_key("redis", "url");
	const char *v = getenv("AIRLOCK_REDIS");
	struct al_config tmp;
	char buf[512];
	const char *why;

	if (!v || !*v)
		return 0;
	tmp = *cfg;
	why = parse_value(&tmp, k, v, buf, sizeof(buf));
	if (why)
		return set_err(err, errlen, -EINVAL, "AIRLOCK_REDIS: %s", why);
	memcpy(cfg->redis.url, tmp.redis.url, sizeof(cfg->redis.url));
	cfg->redis_from_env = true;
	return 0;
}

int al_config_load_default(struct al_config *cfg, const char *explicit_path,
			   char *err, size_t errlen)
{
	const char *path = explicit_path;
	struct al_config tmp = *cfg;
	char sys[PATH_MAX];
	struct stat st;
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!path || !*path)
		path = getenv("AIRLOCK_CONFIG");
	if (!path || !*path) {
		if (al_config_system_path(sys, sizeof(sys)) < 0)
			return set_err(err, errlen, -ENAMETOOLONG,
				       "the installed config's path is too "
				       "long");
		path = sys;
		if (stat(path, &st) < 0 && errno == ENOENT)
			path = NULL;
	}
	if (path) {
		rc = al_config_load(&tmp, path, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = redis_from_env(&tmp, err, errlen);
	if (rc < 0)
		return rc;
	*cfg = tmp;
	return 0;
}

/* --- using it ------------------------------------------------------------- */

const struct sb_net_policy *al_config_net_policy(const struct al_config *cfg,
						 const char *name)
{
	if (!name || strcmp(name, "none") == 0)
		return NULL;
	for (size_t i = 0; i < cfg->network.n; i++)
		if (strcmp(cfg->network.policy[i].name, name) == 0)
			return &cfg->network.policy[i];
	return NULL;
}

static int join_path(char *buf, size_t len, size_t cap, const char *a,
		     const char *b)
{
	int w = snprintf(buf, len, "%s%s", a, b);

	if (w < 0 || (size_t)w >= len || (size_t)w > cap)
		return -ENAMETOOLONG;
	return 0;
}

int al_config_state_dir(const struct al_config *cfg, char *buf, size_t len)
{
	const size_t cap = AL_CONFIG_STATE_DIR_MAX;
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (cfg->sandbox.state_dir[0])
		return join_path(buf, len, cap, cfg->sandbox.state_dir, "");
	if (geteuid() == 0)
		return join_path(buf, len, cap, "/var/lib/airlock", "");
	if (xdg && xdg[0] == '/')
		return join_path(buf, len, cap, xdg, "/airlock");
	if (!home || home[0] != '/') {
		pw = getpwuid(geteuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/')
		return -ENOENT;
	return join_path(buf, len, cap, home, "/.local/state/airlock");
}

int al_config_templates_dir(const struct al_config *cfg, char *buf, size_t len)
{
	const char *env = getenv("AIRLOCK_TEMPLATES_DIR");

	if (cfg->templates.dir[0])
		return join_path(buf, len, SIZE_MAX, cfg->templates.dir, "");
	if (env && *env)
		return join_path(buf, len, SIZE_MAX, env, "");
	return al_install_path(AL_REL_TEMPLATES, AL_TEMPLATES_DIR, buf, len);
}

bool al_config_template_next(DIR *d, char name[AL_NAME_MAX + 1])
{
	struct dirent *e;

	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n < 6 || n - 5 > AL_NAME_MAX ||
		    strcmp(e->d_name + n - 5, ".conf"))
			continue;
		snprintf(name, AL_NAME_MAX + 1, "%.*s", (int)(n - 5),
			 e->d_name);
		return true;
	}
	return false;
}

/* The prefix this binary is installed under: /proc/self/exe's dir minus
 * the bin dir ("/usr/bin/airlock" -> "/usr"); false if it is not in one
 * (a build tree). */
static bool install_prefix(char *buf, size_t len)
{
	char exe[PATH_MAX];
	size_t nb = strlen(AL_REL_BINDIR);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return false;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = 0; /* the dir */
	n = slash - exe;
	if ((size_t)n <= nb || exe[n - nb - 1] != '/' ||
	    strcmp(exe + n - nb, AL_REL_BINDIR) != 0)
		return false;
	exe[n - nb - 1] = 0;
	return join_path(buf, len, SIZE_MAX, exe, "") == 0;
}

int al_install_path(const char *rel, const char *fallback, char *buf,
		    size_t len)
{
	char prefix[PATH_MAX], path[PATH_MAX * 2];

	/* installed: the prefix's path even when it is missing, so the
	 * error names it; never the build tree, which may be gone or, worse,
	 * still there and writable by whoever built it (issue 23) */
	if (install_prefix(prefix, sizeof(prefix))) {
		if (snprintf(path, sizeof(path), "%s/%s", prefix, rel) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		return join_path(buf, len, SIZE_MAX, path, "");
	}
	return join_path(buf, len, SIZE_MAX, fallback, "");
}

int al_config_system_path(char *buf, size_t len)
{
	char prefix[PATH_MAX];
	int n;

	if (AL_REL_SYSCONFDIR[0] == '/')
		n = snprintf(buf, len, "%s/airlock/airlock.conf",
			     AL_REL_SYSCONFDIR);
	else if (!install_prefix(prefix, sizeof(prefix)))
		n = snprintf(buf, len, "%s", AL_CONFIG_SYSTEM_PATH);
	else if (strcmp(prefix, "/usr") == 0) /* GNUInstallDirs' FHS rule */
		n = snprintf(buf, len, "/etc/airlock/airlock.conf");
	else
		n = snprintf(buf, len, "%s/%s/airlock/airlock.conf", prefix,
			     AL_REL_SYSCONFDIR);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --- printing ------------------------------------------------------------- */

size_t al_config_format(const struct al_config *cfg,
			const struct al_config_key *k, char *buf, size_t len)
{
	const void *p = cfield(cfg, k);
	const struct al_config_names *l = p;
	size_t n = 0;
	int w = 0;

	if (len)
		buf[0] = 0;
	switch (k->type) {
	case AL_CONFIG_U32:
		w = snprintf(buf, len, "%u", *(const uint32_t *)p);
		break;
	case AL_CONFIG_BOOL:
		w = snprintf(buf, len, "%s",
			     *(const bool *)p ? "true" : "false");
		break;
	case AL_CONFIG_ENUM:
		w = snprintf(buf, len, "%s", k->choices[*(const int *)p]);
		break;
	case AL_CONFIG_STR:
		w = snprintf(buf, len, "%s", (const char *)p);
		break;
	case AL_CONFIG_NAMES:
		for (size_t i = 0; i < l->n; i++) {
			w = snprintf(buf + (n < len ? n : len),
				     n < len ? len - n : 0, "%s%s",
				     i ? " " : "", l->name[i]);
			n += w < 0 ? 0 : (size_t)w;
		}
		return n;
	}
	return w < 0 ? 0 : (size_t)w;
}

/* redis://user:secret@host -> redis://user:REDACTED@host */
static void redact_url(char *url, size_t len)
{
	char *user = strstr(url, "://"), *at, *colon;
	char rest[AL_CONFIG_STR_MAX + 1];
	size_t auth;

	if (!user)
		return;
	user += 3;
	auth = strcspn(user, "/");
	at = memchr(user, '@', auth);
	if (!at)
		return;
	colon = memchr(user, ':', (size_t)(at - user));
	if (!colon)
		return;
	snprintf(rest, sizeof(rest), "%s", at);
	snprintf(colon, len - (size_t)(colon - url), ":REDACTED%s", rest);
}

int al_config_dump(const struct al_config *cfg, FILE *f)
{
	const char *section = NULL;
	char val[AL_CONFIG_NAMES_MAX * (AL_NAME_MAX + 1) + 16];
	char dir[4096];

	fprintf(f, "# airlock effective config: %s\n",
		cfg->source[0] ? cfg->source : "built-in defaults");
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct al_config_key *k = &keys[i];

		if (!section || strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		al_config_format(cfg, k, val, sizeof(val));
		if (cfield(cfg, k) == (const void *)cfg->redis.url) {
			redact_url(val, sizeof(val));
			if (cfg->redis_from_env)
				fputs("# from $AIRLOCK_REDIS\n", f);
		}
		if (cfield(cfg, k) == (const void *)cfg->sandbox.state_dir &&
		    !val[0] && al_config_state_dir(cfg, dir, sizeof(dir)) == 0)
			fprintf(f, "# empty means %s\n", dir);
		if (cfield(cfg, k) == (const void *)cfg->templates.dir &&
		    !val[0] &&
		    al_config_templates_dir(cfg, dir, sizeof(dir)) == 0)
			fprintf(f, "# empty means %s\n", dir);
		fprintf(f, val[0] ? "%s = %s\n" : "%s =\n", k->key, val);
	}
	for (size_t i = 0; i < cfg->network.n; i++)
		if (sb_net_policy_dump(&cfg->network.policy[i], f) < 0)
			return -EIO;
	if (fflush(f) != 0 || ferror(f))
		return -EIO;
	return 0;
}
