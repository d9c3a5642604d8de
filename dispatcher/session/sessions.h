/* sessions.h: sessions on the queue's Redis, host side and client side.
 *
 * A session (docs/sessions.md) is one VM kept alive between requests. Its
 * VM lives in one session process (run.c) under one session host (host.c),
 * a child of `airlock serve`; every request reaches it through Redis, so
 * any CLI or HTTP front end can talk to any session.
 *
 * Keys, all under the queue's hash tag (P = airlock:{QUEUE}:sess):
 *
 *   P:create          list: create requests; a host with room BLPOPs it
 *   P:all             set: session ids (list)
 *   P:stats           hash: created, ended:REASON counters
 *   P:host:HOST       string, PX 3 heartbeats: the host is alive
 *   P:host:HOST:ctl   list: extend and delete for that host's sessions
 *   P:ID              hash: the session's record (state, reason, host,
 *                     created_at_ms, expires_at_ms, ttl_s, idle_s, ...)
 *   P:ID:req          list: exec requests, run in order by its process
 *   P:ID:sig          list: signal requests, served at once (while an
 *                     exec runs too)
 *   P:ID:x:N          hash: exec N's record (state, status, exit_code...)
 *   P:ID:x:N:1, :2    strings: exec N's stdout, stderr as produced, capped
 *   P:reply:RID       list: one reply to one request, short-lived
 *
 * Host side: al_sess_host_spawn() from `airlock serve`.
 * Client side: open an alq_client (queue.h), then al_sess_*(); each
 * returns 0 and malloc'd JSON, or -errno with c->err saying why.
 */
#ifndef AL_SESSIONS_H
#define AL_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "queue.h"
#include "results.h"
#include "sandbox.h"

struct al_serve_opts; /* serve.h */

#define AL_SESS_ID_MAX	 40		    /* "s-" and hex */
#define AL_SESS_BODY_MAX (AL_JOB_MAX_BYTES) /* create/exec request JSON */

struct al_sess_opts {
	struct alq_url url;		/* Redis */
	char queue[AL_NAME_MAX + 1];	/* queue name (hash tag) */
	uint32_t connect_timeout_ms;	/* per connect attempt */
	uint32_t command_timeout_ms;	/* per reply */
	uint32_t heartbeat_ms;		/* host liveness period */
	uint32_t max_sessions;		/* on this host; 0 = take none */
	uint32_t ttl_default_s;		/* lifetime when ttl_s is absent */
	uint32_t ttl_max_s;		/* longest lifetime, extend included */
	uint32_t idle_default_s;	/* idle timeout when idle_s absent */
	uint32_t hibernate_default_s;	/* hibernate_s when absent, 0 never */
	uint32_t keep_s;		/* ended records and output kept */
	uint32_t output_max;		/* stored bytes per exec stream */
	uint32_t output_budget;		/* kept per session, all execs:
					 * the oldest execs' output goes */
	uint32_t snapshots_per_principal; /* session snapshots one
					 * principal keeps on a host, 0 = no cap */
	bool spare;			/* keep a session process with the
					 * warm clones of sb->warm ready */
	const struct sb_options *sb;	/* for the VMs */
	const struct al_policy *policy; /* for the VMs */
	char host[AL_NAME_MAX + 1]; /* this host's name, "" = hostname:pid */
};

/* The options of the session host beside the dispatcher of `so`: its
 * Redis, queue, timeouts, heartbeat, sandbox and policy are so's (one
 * place for them); the rest are the session defaults. */
void al_sess_opts_init(struct al_sess_opts *o, const struct al_serve_opts *so);
/* Fork the session host (a worker-like child of the caller: dies with
 * it). Its pid, or -errno. Stop it with SIGTERM, then reap it. */
pid_t al_sess_host_spawn(const struct al_sess_opts *o);
/* The host loop itself (al_sess_host_spawn's child): 0 on SIGTERM. */
int al_sess_host_run(const struct al_sess_opts *o);

/* --- client side --------------------------------------------------------- */

/* Create a session from `body` (JSON: template, limits, network, env,
 * files, metadata, ttl_s, idle_s), waiting up to timeout_ms for a host
 * with room. 0 and the record (JSON) in *ret. */
int al_sess_create(struct alq_client *c, const char *body, uint32_t timeout_ms,
		   char **ret);
/* The record of session `id`; a session whose host stopped heartbeating
 * is ended `lost` here (naming the host). -ENOENT when none. */
int al_sess_get(struct alq_client *c, const char *id, char **ret);
/* The records of the sessions in `state` (NULL: any) whose metadata
 * holds every pair of object `meta` (NULL: no filter):
 * {"sessions": [...], "stats": {...}} (stats of all). */
struct json_t;
int al_sess_list(struct alq_client *c, const char *state, struct json_t *meta,
		 char **ret);
/* Move its end to ttl_s from now; -ERANGE (c->err says the maximum) when
 * that is past the configured maximum lifetime. The record in *ret. */
int al_sess_extend(struct alq_client *c, const char *id, uint32_t ttl_s,
		   char **ret);
/* Save it as snapshot `name` (save.c; created "saveable"); the reply
 * (snapshot, base, origin, mem_bytes, disk_bytes, save_ms) in *ret. */
int al_sess_snapshot(struct alq_client *c, const char *id, const char *name,
		     char **ret);
/* N new sessions from its current state (save.c; created "saveable"),
 * on its host, each a full session (saveable itself when `saveable`);
 * waits up to timeout_ms for room.
 * *ret: {"parent", "snapshot", "save_ms", "mem_bytes", "forks": [their
 * records, each with fork_ms], "errors": [...]}; fails only when no fork
 * started. */
#define AL_SESS_FORK_MAX 16
int al_sess_fork(struct alq_client *c, const char *id, unsigned n,
		 bool saveable, uint32_t timeout_ms, char **ret);
/* Destroy it; the final record in *ret. */
int al_sess_delete(struct alq_client *c, const char *id, char **ret);
/* Start an exec (`body` JSON: cmd or sh, stdin, env, cwd, timeout_ms,
 * cpu_ms); its number in *ret_n once the session took it. */
int al_sess_exec_start(struct alq_client *c, const char *id, const char *body,
		       uint32_t timeout_ms, uint64_t *ret_n);
/* Send `signal` (TERM when NULL; TERM KILL INT HUP QUIT USR1 USR2) to
 * running exec n's processes; grace_ms < 0: the default (2000 ms for a
 * cancel, TERM INT HUP QUIT; none for USR1/2), else SIGKILL after it (0:
 * never). 0 and {exec, signal, cancelled, grace_ms} in *ret once the
 * session sent it (with expires_at); -EALREADY when the exec has ended, -ENOENT when the
 * session has no exec n, -EINVAL for another signal (c->err says). */
int al_sess_exec_signal(struct alq_client *c, const char *id, uint64_t n,
			const char *signal, int64_t grace_ms, char **ret);
/* Exec n's record (JSON: state running|done, status, exit_code, ...,
 * and the session's expires_at). */
int al_sess_exec_get(struct alq_client *c, const char *id, uint64_t n,
		     char **ret);
/* Up to max bytes of exec n's stream fd (1, 2) from offset; *ret_len may
 * be 0 (nothing new). */
/* Sleep up to `ms`, or less: until exec `n` of `id` ends. The session
 * pushes one token on P:ID:x:N:end when the exec ends; a waiter BLPOPs it
 * between its reads of the record, so a lone waiter sees the end at once
 * and others within `ms`, as a plain sleep would. 0, or -EIO. */
int al_sess_exec_nap(struct alq_client *c, const char *id, uint64_t n,
		     uint32_t ms);
int al_sess_exec_read(struct alq_client *c, const char *id, uint64_t n, int fd,
		      uint64_t offset, size_t max, char **ret, size_t *ret_len);

/* Set expires_at_ms and expires_at (ISO 8601) of session `id`, as its
 * record holds them now, in `obj`: every reply carries them (exec
 * records, signal, fork, snapshot and files replies; records have them
 * already). Nothing is set while the session has none yet (pending);
 * -errno only when Redis fails. */
int al_sess_expiry(struct alq_client *c, const char *id, struct json_t *obj);

/* Directories as ustar streams (files.c). Caps: max_bytes of file
 * contents, max_files entries (AL_TAR_* in results/caps.h). `remote` is
 * "." or a relative path in the work dir. Upload: the tar is checked
 * (al_tar_check) and refused with -EINVAL before anything reaches the VM,
 * then extracted there by the guest's tar. Download: the guest's ustar
 * tar of `remote`, checked the same way, malloc'd in *ret. */
int al_sess_put_tar(struct alq_client *c, const char *id, const char *remote,
		    const void *tar, size_t len, uint64_t max_bytes,
		    uint32_t max_files);
int al_sess_get_tar(struct alq_client *c, const char *id, const char *remote,
		    uint64_t max_bytes, uint32_t max_files, uint8_t **ret,
		    size_t *ret_len);
/* Run `script` (sh -c, $1 $2 $3 = a1 a2 a3 when not NULL, stdin in[0..in_len)
 * when in) in session `id` to its end, as the tar path does: 0 when it
 * exited 0, its stdout (at most out_max bytes) in *out when out; else
 * -EIO with c->err its stderr's tail. For doors that act on the guest's
 * files (tools/api/doors/e2b.c). */
int al_sess_run(struct alq_client *c, const char *id, const char *what,
		const char *script, const char *a1, const char *a2,
		const char *a3, const uint8_t *in, size_t in_len, char **out,
		size_t *out_len, size_t out_max);
/* Host side, nothing followed: write a checked tar under `dir` (made if
 * missing; parents opened O_NOFOLLOW, files created O_EXCL), and make a
 * ustar tar of local `dir` (files, directories, symlinks; no device
 * nodes). 0 or -errno with err set. */
int al_sess_untar(const char *dir, const void *tar, size_t len,
		  uint64_t max_bytes, uint32_t max_files, char *err,
		  size_t errlen);
int al_sess_tar_dir(const char *dir, uint64_t max_bytes, uint32_t max_files,
		    uint8_t **ret, size_t *ret_len, char *err, size_t errlen);

/* A byte string as JSON, as the job schema carries bytes: a string when
 * valid UTF-8, else {"base64": "..."}; NULL when out of memory. (The
 * caller includes jansson.h.) */
struct json_t *al_sess_blob_json(const char *p, size_t n);

/* Prometheus lines of the queue's session counters (created, ended by
 * reason, alive) into buf: their length, or -EIO, -E2BIG. */
int al_sess_metrics(struct alq_client *c, char *buf, size_t len);

#endif
