/* queue.h: the Redis protocol of the Airlock queue, shared by the dispatcher
 * (async, conn.h) and the CLI clients (blocking, below).
 *
 * Keys of queue Q, one hash tag per queue so a queue lives in one Cluster
 * slot (docs/queue.md has the full story):
 *
 *   airlock:{Q}:jobs        stream of {id, t: submit ms, w: wall ms};
 *                           consumer group `workers`
 *   airlock:{Q}:job:ID      the job, msgpack; SET NX makes ID the
 *                           idempotency key (expires with the result)
 *   airlock:{Q}:result:ID   the result, msgpack, with a TTL; written once
 *   airlock:{Q}:done:ID     list, RPUSHed once when the result is stored;
 *                           clients BLPOP it (pub/sub would lose signals)
 *   airlock:{Q}:dead        stream of dead letters {id, entry, reason, n}
 *   airlock:{Q}:serves      hash consumer -> "workers busy ms", liveness
 *   airlock:{Q}:tput:MIN    results stored in unix minute MIN (status)
 *   airlock:{Q}:sid:ID      the stream entry of ID's submission (status,
 *                           cancel); expires with the result
 *   airlock:{Q}:cancel      hash entry sid -> id: cancelled while pending;
 *                           the holding dispatcher kills its VM
 *   airlock:{Q}:digest:ID   SHA-256 (hex) of job:ID's payload; a second
 *                           submit of ID with another payload is refused
 *   airlock:{Q}:cancels     jobs cancelled, ever (a counter: CLI and API)
 *
 * Every multi-key step that must be atomic is a Lua script (EVALSHA, EVAL
 * when the server does not know the script): submit (SET NX + XADD),
 * complete (result SET NX + signal + XACK [+ dead letter]), fetch (the
 * payload, only when it is under the cap: hiredis 0.14 allocates whatever
 * length a reply announces), heartbeat, reclaim and trim.
 *
 * Using the blocking client (CLI):
 *
 *  1. alq_url_parse() then alq_client_open() (connects, AUTH, SELECT).
 *  2. alq_client_submit(), alq_client_wait(), alq_client_result(),
 *     alq_client_status().
 *  3. alq_client_close().
 *
 * Errors are negative errno: -ECONNREFUSED/-ETIMEDOUT/-EIO (connection),
 * -EPROTO (an unexpected reply), -ENOENT (no such result), -E2BIG (over a
 * cap). Nothing here logs; `err` buffers say what went wrong.
 */
#ifndef AL_QUEUE_H
#define AL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"
#include "url.h"

#define ALQ_GROUP	"workers"
#define ALQ_KEY_MAX	(16 + AL_NAME_MAX + 16 + AL_ID_MAX)
#define ALQ_SID_MAX	48	 /* a stream entry id: "ms-seq" */
#define ALQ_DEAD_MAXLEN "100000" /* dead letters kept (approximate) */

enum alq_key_kind {
	ALQ_KEY_JOBS = 0, /* the stream */
	ALQ_KEY_JOB,	  /* job:ID */
	ALQ_KEY_RESULT,	  /* result:ID */
	ALQ_KEY_DONE,	  /* done:ID */
	ALQ_KEY_DEAD,	  /* dead letters */
	ALQ_KEY_SERVES,	  /* live dispatchers */
	ALQ_KEY_TPUT,	  /* tput:MINUTE (id = the minute) */
	ALQ_KEY_SID,	  /* sid:ID */
	ALQ_KEY_CANCEL,	  /* cancelled pending entries */
	ALQ_KEY_DIGEST,	  /* digest:ID, its payload's SHA-256 (hex) */
	ALQ_KEY_CANCELS,  /* cancels counted (INCR by ALQ_CANCEL) */
	ALQ_KEY_SNAPDEFS, /* names of published snapshots (snapdef.h) */
	ALQ_KEY_SNAPDEF,  /* snapdef:NAME, a snapshot's definition */
	ALQ_KEY_SNAPHOSTS, /* snaphosts:NAME, which host built which key */
};

/* Write the key of `kind` for queue `q` (and `id` where the kind has one)
 * into buf; returns 0 or -ENAMETOOLONG. */
int alq_key(char *buf, size_t len, const char *q, enum alq_key_kind kind,
	    const char *id);

/* One command on the blocking client, following cluster redirections
 * and Sentinel failovers as its own commands do; the reply is the
 * caller's (freeReplyObject), NULL when the connection failed (c->err).
 * For the snapshot definitions (snapdef.h). */
struct alq_client;
struct redisReply *alq_client_command(struct alq_client *c, int argc,
				      const char **argv, const size_t *lens);

/* --- partitions ---------------------------------------------------------
 *
 * One logical queue Q may be spread over N partitions (queue.partitions,
 * docs/queue.md "Partitions"), each a queue of its own with its own hash
 * tag, so its own Cluster slot: partition 0 is Q itself (N = 1 is the
 * layout of a queue without partitions), partition I > 0 is "Q~pI" ('~'
 * is never in a queue name, so no partition is another queue). A job
 * lives in the partition its id hashes to (FNV-1a 32 of the id, mod N):
 * submit, status, cancel, wait and result all find it there.
 */
#define ALQ_PARTITIONS_MAX 64
#define ALQ_PART_NAME_MAX  (AL_NAME_MAX + 8) /* "~pNN" and the NUL */

/* The name of partition i of queue q into buf; 0 or -ENAMETOOLONG. */
int alq_partition_name(char *buf, size_t len, const char *q, unsigned i);
/* The partition of job `id` among n (0 when n <= 1). */
unsigned alq_partition_of(const char *id, unsigned n);

/* --- server address (struct alq_url: url.h) ----------------------------- */

/* Parse redis://[[USER]:PASSWORD@]HOST[:PORT][/DB],
 * unix://[[USER]:PASSWORD@]/PATH[?db=N] or
 * redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]]...
 * [/MASTER[/DB]] (sentinel.h). Returns 0 or -EINVAL. */
int alq_url_parse(const char *url, struct alq_url *ret);
/* "unix:/path" or "host:port", for logs (never the password). */
void alq_url_display(const struct alq_url *u, char *buf, size_t len);

/* --- scripts ------------------------------------------------------------ */

enum alq_script {
	ALQ_SUBMIT = 0, /* K: job jobs sid digest; A: payload id t w digest
			   -> sid | nil (same payload) | {conflict, digest} */
	ALQ_FETCH,	/* K: job result; A: max -> {kind, payload|len} */
	ALQ_COMPLETE,	/* K: result done jobs job tput dead [sid];
			   A: result ttl sid reason id n -> 1 stored | 0 */
	ALQ_HEARTBEAT,	/* K: jobs; A: consumer sid... -> {lost sid...} */
	ALQ_RECLAIM,	/* K: jobs; A: consumer slack count dflt_w max_w
			   -> {{sid, fields, n}...} */
	ALQ_TRIM,	/* K: jobs [cancel]; A: consumer_idle_ms -> trimmed */
	ALQ_JOB_STATUS, /* K: job result sid jobs -> {done|unknown} |
			   {queued, sid} | {running, sid, consumer, n} */
	ALQ_CANCEL,	/* K: job result done sid jobs cancel cancels; A: result
			   (queued) result (running) ttl id -> {was} */
	ALQ_CANCEL_POLL, /* K: cancel; A: sid... -> {cancelled sid...} */
	ALQ_REQUEUE,	/* K: job result done sid jobs dead; A: id t
			   dead_sid... -> {ok, sid} | {none} | {gone} */
	ALQ_N_SCRIPTS
};

/* The Lua text of a script. Connections SCRIPT LOAD them when they
 * connect and keep the SHA1s the server answers. */
const char *alq_script_text(enum alq_script s);

/* --- a stream entry, as XREADGROUP/XCLAIM return it ---------------------- */

struct alq_entry {
	char sid[ALQ_SID_MAX];	/* stream entry id */
	char id[AL_ID_MAX + 1]; /* job id, "" when missing or invalid */
	bool id_bad;		/* an `id` field was there but invalid */
	uint64_t submit_ms;	/* `t`, 0 = unknown */
	uint32_t wall_ms;	/* `w`, 0 = unknown */
	uint32_t deliveries;	/* delivery count, 1 = first */
};

struct redisReply;
/* Parse one entry [sid, [field, value, ...]]; `fields` may be a nil reply
 * (the entry was deleted). Returns 0 or -EPROTO (no usable sid). Bad field
 * values are noted (id_bad) but are no error: the caller answers them. */
int alq_entry_parse(const struct redisReply *r, struct alq_entry *ret);

/* Why a payload could not be fetched, as ALQ_FETCH answers. */
enum alq_fetch {
	ALQ_FETCH_OK = 0,  /* payload returned */
	ALQ_FETCH_DONE,	   /* a result exists already */
	ALQ_FETCH_MISSING, /* no job key */
	ALQ_FETCH_TYPE,	   /* job key is not a string */
	ALQ_FETCH_BIG,	   /* over the cap */
};
/* Parse the FETCH reply: *ret_kind, and for OK the payload (pointing into
 * the reply), for BIG its length in *ret_len. Returns 0 or -EPROTO. */
int alq_fetch_parse(const struct redisReply *r, enum alq_fetch *ret_kind,
		    const char **ret_payload, size_t *ret_len);

/* A fresh job id: "j-" + 20 random hex digits. */
void alq_new_id(char buf[AL_ID_MAX + 1]);

/* A job ready to submit: what alq_prepare() makes of a parsed job and what
 * alq_client_submit() and the HTTP API's pipelined submit take. */
struct alq_prepared {
	char id[AL_ID_MAX + 1]; /* its id (given or generated) */
	char *payload;		/* msgpack, malloc'd */
	size_t len;		/* bytes of payload */
	uint32_t wall_ms;	/* effective wall limit under `policy` */
};

/* Encode `job` for submission: give it `id_if_none` (or a fresh id) when
 * it has no id, resolve its wall time. The policy is not checked here:
 * the dispatcher's policy decides (an RJ result). 0 or -ENOMEM.
 * Callers: the CLI (run, submit, batch, eval), the HTTP API, bench_queue. */
int alq_prepare(struct al_job *job, const struct al_policy *policy,
		const char *id_if_none, struct alq_prepared *ret);

/* --- the blocking client (CLI) ------------------------------------------ */

struct redisContext;

/* longest principal name (tools/config/principal.h's, 64) */
#define ALQ_PRINCIPAL_MAX 64

struct alq_client {
	struct redisContext *rc;     /* connection, NULL when closed */
	char queue[AL_NAME_MAX + 1]; /* queue name */
	uint32_t timeout_ms;	     /* per command */
	uint32_t extra_ms;	     /* more for a blocking command (BLPOP) */
	char submit_sha[41];	     /* SHA1 of ALQ_SUBMIT, "" = use EVAL */
	char err[256];		     /* what went wrong last */
	struct alq_url url;	     /* AUTH, SELECT, unix path to reconnect */
	char host[256];		     /* TCP: the node now, after MOVED */
	int port;		     /* its port */
	uint64_t redirects;	     /* MOVED and ASK followed (cluster) */
	/* WAIT-based submits (docs/queue.md, "Sentinel"): after each window
	 * of submits, WAIT for this many replicas (0 = do not wait) up to
	 * wait_ms; new jobs not acknowledged by them get err -EAGAIN */
	unsigned wait_replicas;
	uint32_t wait_ms;
	/* partitions of the queue (0 or 1 = none; at most
	 * ALQ_PARTITIONS_MAX): set after alq_client_open() */
	unsigned partitions;
	/* the principal this client acts for in session operations
	 * (dispatcher/session/, docs/security.md "Principals"): "" = an
	 * operator (every session); else only sessions it owns. Set by a
	 * front end after alq_client_open(); a Redis connection itself is
	 * operator access whatever this says. */
	char principal[ALQ_PRINCIPAL_MAX + 1];
};

int alq_client_open(struct alq_client *c, const struct alq_url *u,
		    const char *queue, uint32_t timeout_ms);
void alq_client_close(struct alq_client *c);

/* Submit one job: `payload` is its msgpack (with `id` set), wall_ms its
 * effective wall limit (reclaim timing). *ret_dup is set when the id was
 * submitted before with the same payload (nothing enqueued); -EEXIST when
 * it was submitted with another payload (refused; c->err says so). */
int alq_client_submit(struct alq_client *c, const char *id, const char *payload,
		      size_t len, uint32_t wall_ms, bool *ret_dup);

struct alq_submit {
	const char *id;	     /* job id */
	const char *payload; /* msgpack */
	size_t len;	     /* bytes of payload */
	uint32_t wall_ms;    /* effective wall limit */
	bool dup;	     /* out: submitted before, same payload */
	int err;	     /* out: 0, -EEXIST (id taken by another
				payload) or -errno */
	char digest[AL_DIGEST_HEX + 1];	/* out: our payload's */
	char stored_digest[AL_DIGEST_HEX + 1]; /* out, -EEXIST: the other
						  payload's ("" unknown) */
};
/* Submit n jobs pipelined. Returns 0 when the connection held (per-job
 * outcomes in `err`/`dup`) or a negative errno. */
int alq_client_submit_many(struct alq_client *c, struct alq_submit *jobs,
			   size_t n);

/* Wait up to timeout_ms (0 = forever) for the result of `id`. Returns 0
 * when it is stored, -ETIMEDOUT, or a connection error. */
int alq_client_wait(struct alq_client *c, const char *id, uint32_t timeout_ms);
/* Of the ids in ids[0..n) (at most ALQ_WAIT_MANY), wait up to timeout_ms
 * for any to complete; *ret_index gets which one. -ETIMEDOUT when none. */
#define ALQ_WAIT_MANY 512
int alq_client_wait_any(struct alq_client *c, const char *const *ids, size_t n,
			uint32_t timeout_ms, size_t *ret_index);
/* The stored result of `id` (msgpack, malloc'd, capped). -ENOENT when
 * there is none (yet, or expired). */
int alq_client_result(struct alq_client *c, const char *id, char **ret,
		      size_t *ret_len);
/* Which of ids[0..n) have a result? done[i] set accordingly. */
int alq_client_have_results(struct alq_client *c, const char *const *ids,
			    size_t n, bool *done);

#define ALQ_STATUS_SERVES 64
/* With partitions, the counts are the sums over them; the dispatchers are
 * those of partition 0 (each serve heartbeats there once). */
struct alq_status {
	int64_t length;	   /* XLEN of the stream */
	int64_t depth;	   /* entries not yet delivered (-1 unknown) */
	int64_t pending;   /* delivered, not acknowledged */
	int64_t consumers; /* consumers in the group */
	int64_t dead;	   /* dead letters */
	uint64_t tput[5];  /* results stored, this minute and the 4 before */
	uint64_t cancels;  /* jobs cancelled on this queue, ever */
	size_t n_serves;   /* live dispatchers */
	struct {
		char name[AL_NAME_MAX + 1]; /* consumer name */
		uint32_t workers;	    /* worker processes */
		uint32_t busy;		    /* running a job */
		uint64_t age_ms;	    /* since its last heartbeat */
	} serves[ALQ_STATUS_SERVES];
};
int alq_client_status(struct alq_client *c, struct alq_status *ret);

/* --- one job: status, cancel, dead letters --------------------------------
 *
 * For the CLI (`airlock status ID`, `cancel`, `dead`), the HTTP API and
 * anything else with a blocking client. Each transition is one script.
 */

enum alq_state {
	ALQ_UNKNOWN = 0, /* no payload, no result: never submitted/expired */
	ALQ_QUEUED,	 /* submitted, not claimed by a dispatcher */
	ALQ_RUNNING,	 /* claimed (its entry pending) */
	ALQ_DONE,	 /* a result is stored */
	ALQ_DEAD,	 /* a result with status XX: a dead letter */
	ALQ_CANCELLED,	 /* a result with status CX */
};
/* "unknown", "queued", "running", "done", "dead", "cancelled" */
const char *alq_state_name(enum alq_state s);

struct alq_job {
	enum alq_state state;
	char sid[ALQ_SID_MAX];	      /* its stream entry, "" = unknown */
	char consumer[AL_NAME_MAX + 1]; /* running: the dispatcher */
	uint32_t attempt;	      /* running: delivery; done: the result's */
	enum al_status status;	      /* done, dead, cancelled: the result's */
	char worker[AL_NAME_MAX + 1]; /* done: the worker that ran it */
	char error[256];	      /* dead, cancelled: the result's error */
};
/* Where job `id` is. 0 (unknown ids too: state ALQ_UNKNOWN) or -errno. */
int alq_job_status(struct alq_client *c, const char *id,
		    struct alq_job *ret);

/* Cancel job `id`: store a CX result (result TTL ttl_s) and signal it. A
 * queued job is then never run (FETCH sees the result); a running one's
 * dispatcher learns it at its next heartbeat and kills the worker (and
 * with it the VM). *ret_was: ALQ_QUEUED or ALQ_RUNNING when cancelled
 * now, ALQ_DONE when it had a result already (nothing changed),
 * ALQ_UNKNOWN when there is no such job. 0 or -errno. */
int alq_job_cancel(struct alq_client *c, const char *id, uint32_t ttl_s,
		    enum alq_state *ret_was);

struct alq_dead {
	char sid[ALQ_SID_MAX];	 /* the dead letter's own entry */
	char id[AL_ID_MAX + 1];	 /* the job */
	char entry[ALQ_SID_MAX]; /* the job's stream entry */
	char reason[256];	 /* why */
	uint32_t deliveries;	 /* deliveries it had */
};
/* Up to `max` dead letters after stream id `after` ("" = from the first),
 * oldest first; *ret_n gets how many. 0 or -errno. */
int alq_dead_list(struct alq_client *c, const char *after,
		       struct alq_dead *ret, size_t max, size_t *ret_n);
/* Submit dead job `id` again (new entry, attempt 1; its dead letters,
 * result and signal go). 0; -ENOENT when it has no dead letter; -ESTALE
 * when its payload expired (it cannot run again). */
int alq_dead_requeue(struct alq_client *c, const char *id);
/* Requeue every dead job; *ret_n requeued, *ret_failed that could not be
 * (payload expired). 0 or -errno. */
int alq_dead_requeue_all(struct alq_client *c, size_t *ret_n,
			      size_t *ret_failed);

#endif
