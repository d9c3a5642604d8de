/* internal.h: what host.c, run.c and client.c share (keys, the host <->
 * session process messages, ending a record). Not for other rooms. */
#ifndef AL_SESS_INTERNAL_H
#define AL_SESS_INTERNAL_H

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "clock.h"

#include "sess_id.h"
#include "sessions.h"

#define SESS_KEY_MAX	   (64 + AL_NAME_MAX * 2 + AL_SESS_ID_MAX)
#define SESS_REPLY_TTL_S   120	   /* an unread reply goes after this */
#define SESS_END_TTL_S	   60	   /* an exec's untaken end token goes */
#define SESS_TTL_GRACE_MS  1000u   /* host kills a session past its TTL+this */
#define SESS_STOP_GRACE_MS 2000u   /* delete: killed if not gone by then */
#define SESS_START_MAX_MS  120000u /* a VM must be up within this */

/* The Redis timeout of the host and session processes: short, so that a
 * Redis that hangs (stopped, partitioned) never holds a clock up for
 * longer than this; every call they make is a short one or a BLPOP of
 * at most LOOP_MS. */
#define SESS_REDIS_TIMEOUT_MS 1000u
static inline uint32_t sess__timeout_ms(const struct al_sess_opts *o)
{
	return o->command_timeout_ms < SESS_REDIS_TIMEOUT_MS
		   ? o->command_timeout_ms
		   : SESS_REDIS_TIMEOUT_MS;
}

/* The host's and a session process's connection, reconnected when it
 * broke (one attempt per call, sess__timeout_ms): NULL while Redis does
 * not answer. */
redisContext *sess__rc(struct alq_client *cl, const struct al_sess_opts *o);

/* One message on the host <-> session process socket. */
struct sess__msg {
	int64_t type;  /* enum sess__msg_type */
	int64_t value; /* its argument */
};
enum sess__msg_type {
	SESS_MSG_ALIVE = 1,  /* session -> host: VM up; value = expires_at_ms */
	SESS_MSG_EXTEND = 2, /* host -> session: value = new expires_at_ms */
	SESS_MSG_STOP = 3,   /* host -> session: end now (delete) */
	SESS_MSG_READY = 4,  /* spare -> host: warm, ready for a create */
};

/* Exec run time (started to done) as a histogram in P:stats: one field
 * "exec_le:MS" per bucket (not cumulative; the reader sums them) and
 * "exec_ms_sum". SESS_EXEC_BUCKETS are the bounds in ms; past the last,
 * "exec_le:inf". */
#define SESS_EXEC_NBUCKETS 12
extern const unsigned SESS_EXEC_BUCKETS[SESS_EXEC_NBUCKETS];

/* "airlock:{Q}:sess:" then the formatted rest; -ENAMETOOLONG. */
int sess__key(char *buf, size_t len, const char *q, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Put the formatted reason in c->err; returns r (client side). */
int sess__fail(struct alq_client *c, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Is `id` a session or reply id we make ("s-" or "r-", 24 hex digits)? */
bool sess__id_valid(const char *id);
/* A fresh id: "s-" and 24 hex digits (or "r-" for replies). */
int sess__new_id(char *buf, size_t len, char prefix);
/* ISO 8601 UTC with ms. */
void sess__iso(uint64_t ms, char out[32]);
/* RPUSH a reply and give it SESS_REPLY_TTL_S; 0 or -EIO. */
int sess__reply(redisContext *rc, const char *q, const char *rid,
	       const char *json);
/* End record `id` with `reason` (and error text, may be NULL) unless it
 * ended already, at at_ms (al_wall_ms(); 0 = now); counts ended:REASON.
 * 1 ended now, 0 already, -EIO. */
int sess__end(redisContext *rc, const char *q, const char *id,
	     const char *reason, const char *error, uint32_t keep_s,
	     uint64_t at_ms);
/* Check a reply: NULL or an error reply is -EIO with `err` filled. */
int sess__check(redisContext *rc, redisReply *r, char *err, size_t len);

/* Record `id` as JSON (numbers as numbers, times also as ISO 8601); 0,
 * -ENOENT (no record) or -EIO/-ENOMEM (err says why). */
int sess__record_json(redisContext *rc, const char *q, const char *id,
		     json_t **ret, char *err, size_t len);
/* Exec n of `id` as JSON; same returns. */
int sess__exec_json(redisContext *rc, const char *q, const char *id, uint64_t n,
		   json_t **ret, char *err, size_t len);
/* save.c: save the session's live VM (ws) as the snapshot body.name,
 * owned by `owner` (the session's principal, "" for an operator's: no
 * cap); the reply's JSON, or NULL with err filled. */
struct al_wsess;
json_t *sess__snapshot(const struct al_sess_opts *o, struct al_wsess *ws,
		      const char *id, const char *owner, json_t *body,
		      char *err, size_t len);
/* client.c's steps for save.c: the record of a session not ended
 * (-ESRCH once it ended), RPUSH req (consumed) onto list k, wait for the
 * reply to rid while the session lives. */
int sess__live_record(struct alq_client *c, const char *id, json_t **ret);
int sess__push(struct alq_client *c, const char *k, json_t *req);
int sess__await(struct alq_client *c, const char *rid, const char *id,
	       uint64_t timeout_ms, json_t **ret);
/* A create of body b queued on list P:LIST ("create", or a host's
 * "host:HOST:create" for forks) and its wait; id, rid 32 bytes. */
int sess__create_on(struct alq_client *c, json_t *b, uint32_t timeout_ms,
		   const char *list, char *id, char *rid);
int sess__create_wait(struct alq_client *c, const char *id, const char *rid,
		     uint64_t start_ms, uint32_t timeout_ms, char **ret);
/* save.c, session process side of a fork: op "fork" saves the VM as a
 * fork snapshot (origin fork:ID) and answers with what the forks' creates
 * need; a fork's own start (body.fork_of) may then open that snapshot
 * (sess__fork_policy, which checks its origin); the parent removes its
 * fork snapshots on "fork_done" and when it ends. */
json_t *sess__fork(const struct al_sess_opts *o, struct al_wsess *ws,
		  const char *id, json_t *create_body, char *err, size_t len);
int sess__fork_policy(const struct al_sess_opts *o, struct al_wsess *ws,
		     json_t *body, char *err, size_t len);
void sess__fork_done(const struct al_sess_opts *o, const char *name);
/* save.c, hibernation: save the VM as snapshot hib-ID and end its VMM
 * (ws->vm NULL after; the session runs on when the save failed: err);
 * resume: a VM again from hib-ID with the create body's limits, within
 * ttl_ms, the snapshot then removed; *ret_ms the restore's time. */
/* The session's hibernated state removed (it ended). */
void sess__hib_done(const struct al_sess_opts *o, const char *id);
/* At the host's start: fork and hibernation states no live session
 * process holds (their sessions died with a host) removed. */
void sess__sweep_saved(const struct al_sess_opts *o);
int sess__hibernate(const struct al_sess_opts *o, struct al_wsess *ws,
		   const char *id, char *err, size_t len);
int sess__resume(const struct al_sess_opts *o, struct al_wsess *ws,
		const char *id, json_t *create_body, uint64_t ttl_ms,
		uint64_t *ret_ms, char *err, size_t len);
/* The session process (run.c): create session `id` from `req` (the create
 * request: body, rid), serve its execs until it ends, return the reason.
 * `fd` is the socket to the host. Never returns into the host's code. */
void sess__run(const struct al_sess_opts *o, const char *host, json_t *req,
	      uint32_t ttl_s, uint32_t idle_s, int fd)
    __attribute__((noreturn));
/* A spare session process (sessions.spare): warm clones first, then the
 * create the host writes on `fd`, then as sess__run(). */
void sess__spare(const struct al_sess_opts *o, const char *host, int fd)
    __attribute__((noreturn));
struct al_wsess;
void sess__go(const struct al_sess_opts *o, const char *host, json_t *req,
	     uint32_t ttl_s, uint32_t idle_s, int fd, struct al_wsess *ws)
    __attribute__((noreturn));

#endif
