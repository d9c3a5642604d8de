/* run.c: one session process: its VM, its exec requests, its clocks.
 *
 * Theory of operation. The session host (host.c) forks one process per
 * session (al_proc_fork: the worker's cgroup and hygiene, SIGKILL when the
 * host dies). It opens the VM through worker/session.h exactly as a job's
 * is opened, marks the record alive, tells the host its expires_at (the
 * TTL runs from the moment the VM is ready) and answers the create. Then
 * it serves its request list P:ID:req, one request at a time, in order:
 * execs of one session never run concurrently; a second exec waits in the
 * list until the first ends (docs/sessions.md says so and tests it).
 *
 * Signals (cancel) do not wait: they come on a list of their own,
 * P:ID:sig, read first between requests and, while an exec runs, every
 * 100 ms from inside the exec (exec_tick, called by the agent client as
 * it reads the guest). A signal for the running exec goes to the guest
 * (proto v4 `signal`) and is noted on the exec's record (`signals_sent`,
 * `cancelled`); one for an exec that ended, or that never was, is
 * refused with the reason. The same tick reads the host's socket, so a
 * delete (STOP) kills the running exec at once and an extend moves the
 * TTL while an exec runs. Execs (and the file transfers, which are
 * execs) queue on P:ID:req behind the running one.
 *
 * Clocks: the TTL and idle deadlines are monotonic here and are checked
 * between requests; an exec's timeout is cut to the TTL left, so a
 * `sleep 100` in a session with 5 s left is ended by the guest at 5 s and
 * the session ends `ttl`. The host holds the same TTL with its own timer
 * and SIGKILLs this process SESS_TTL_GRACE_MS past it whatever it is
 * doing, Redis or not. Idle: the session ends idle_s after its last
 * request finished (an exec running is never idle).
 *
 * Output: each exec's stdout and stderr are APPENDed to P:ID:x:N:1 and :2
 * as the guest produces them (sb_vm_run_step_out), up to output_max bytes
 * each (the first bytes: offsets never move, so a client can reattach and
 * read from any offset); the record's `stdout`/`stderr` keep the LAST
 * output_bytes (the session's limit) with `*_truncated` when more was
 * written. A client going away changes nothing here: the exec runs on.
 *
 * Redis lost: requests cannot arrive, but the clocks still run; the
 * process keeps reconnecting and ends at its TTL or idle deadline.
 *
 * Hibernation (save.c): hibernate_s after the last request ended, a
 * saveable session's VM is saved and its VMM ended; the clocks run on;
 * the next request restores it first (resumed_ms in the record).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sess_internal.h"
#include "proto.h"
#include "log.h"
#include "sessions.h"

#include "session.h" /* worker/: the VM side */

#define LOOP_MS 250u /* longest wait between clock checks */
#define REQ_MAX (AL_SESS_BODY_MAX + 4096u)

struct ring {
	char *buf;	/* cap bytes */
	size_t cap;	/* tail kept */
	size_t pos;	/* next write */
	uint64_t total; /* bytes seen */
};

struct sess {
	const struct al_sess_opts *o;
	const char *host;
	char id[AL_SESS_ID_MAX + 1];
	char owner[AL_SESS_ORIGIN_MAX + 1]; /* its principal, "" operator */
	struct alq_client cl; /* Redis, may be down */
	struct al_wsess *ws;  /* the VM */
	int fd;		      /* socket to the host */
	json_t *env;	      /* session-wide env (object) */
	json_t *body;	      /* the create request's body (forks copy it) */
	uint32_t idle_s;      /* 0 = no idle timeout */
	uint32_t hib_s;	      /* hibernate after this idle, 0 = never */
	uint64_t last_at;     /* al_now_ms() the last request ended */
	bool hibernated;      /* VM saved, VMM ended (save.c) */
	uint64_t resumed_ms;  /* the resume the next exec waited for, 0 */
	uint64_t ttl_at;      /* al_now_ms() deadline */
	uint64_t idle_at;     /* al_now_ms() deadline, 0 = none */
	uint64_t execs;	      /* execs started */
	const char *reason;   /* why it ended, NULL = alive */
	uint64_t ended_at;    /* al_wall_ms() when it was decided */
	char error[256];      /* with `failed` */
	int can_signal;	      /* agent takes signals: 1, 0 no, -1 unasked */
	/* the exec running */
	uint64_t running;	    /* its number, 0 = none */
	bool killed;		    /* STOP during it: SIGKILL sent */
	char sigs[64];		    /* signals sent to it, space-separated */
	char okey[2][SESS_KEY_MAX]; /* its stream keys */
	uint64_t stored[2];	    /* bytes APPENDed */
	struct ring tail[2];	    /* last output_bytes */
	/* the output budget (sessions.output_budget_bytes) */
	uint64_t kept;	 /* bytes of output kept in Redis, every exec */
	uint64_t oldest; /* the oldest exec whose output is kept, 0 none */
};

static redisContext *rc(struct sess *s)
{
	return sess__rc(&s->cl, s->o);
}

/* A command whose reply we only check. */
static int cmd(struct sess *s, const char *fmt, ...)
{
	redisContext *c = rc(s);
	redisReply *r;
	va_list ap;
	int ret;

	if (!c)
		return -EIO;
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ret = sess__check(c, r, NULL, 0);
	if (r)
		freeReplyObject(r);
	return ret;
}

static void reply_error(struct sess *s, const char *rid, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (t && rc(s))
		sess__reply(s->cl.rc, s->o->queue, rid, t);
	free(t);
	json_decref(j);
}

static void reply_json(struct sess *s, const char *rid, json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (t && rc(s))
		sess__reply(s->cl.rc, s->o->queue, rid, t);
	free(t);
}

/* --- output ------------------------------------------------------------- */

static void ring_put(struct ring *g, const uint8_t *p, size_t n)
{
	g->total += n;
	if (!g->cap)
		return;
	if (n > g->cap) {
		p += n - g->cap;
		n = g->cap;
	}
	for (size_t i = 0; i < n; i++) {
		g->buf[g->pos] = (char)p[i];
		g->pos = (g->pos + 1) % g->cap;
	}
}

/* The kept tail, in order, into buf (cap bytes); its length. */
static size_t ring_get(const struct ring *g, char *buf)
{
	size_t n = g->total < g->cap ? (size_t)g->total : g->cap;
	size_t start = (g->pos + g->cap - n) % (g->cap ? g->cap : 1);

	for (size_t i = 0; i < n; i++)
		buf[i] = g->buf[(start + i) % g->cap];
	return n;
}

/* --- the output budget -----------------------------------------------------
 *
 * One session keeps at most output_budget bytes of exec output in Redis
 * (finding 7 of issue 34: unbounded execs of 2 x output_max each filled
 * the shared Redis while the session lived). `kept` counts the streams
 * as APPENDed and each ended exec's record tails; an exec's own count is
 * in its record (kept_bytes). Past the budget the oldest ended execs'
 * output goes first: their streams deleted, their tails removed from the
 * record, which says output_dropped 1 (state, status, byte counts
 * stay). An exec that alone passes it stores no more (its record's
 * tail still has the last output_bytes). */
static void drop_oldest(struct sess *s)
{
	char xk[SESS_KEY_MAX], k1[SESS_KEY_MAX], k2[SESS_KEY_MAX];
	unsigned long long n = s->oldest++, b = 0;
	redisReply *r;

	sess__key(xk, sizeof(xk), s->o->queue, "%s:x:%llu", s->id, n);
	sess__key(k1, sizeof(k1), s->o->queue, "%s:x:%llu:1", s->id, n);
	sess__key(k2, sizeof(k2), s->o->queue, "%s:x:%llu:2", s->id, n);
	r = rc(s) ? redisCommand(s->cl.rc, "HGET %s kept_bytes", xk) : NULL;
	if (r && r->type == REDIS_REPLY_STRING && r->len < 21)
		b = strtoull(r->str, NULL, 10);
	if (r)
		freeReplyObject(r);
	if (cmd(s, "DEL %s %s", k1, k2) < 0)
		return;
	cmd(s, "HDEL %s stdout stderr", xk);
	cmd(s, "HSET %s output_dropped 1 kept_bytes 0", xk);
	s->kept = s->kept > b ? s->kept - b : 0;
}

/* Room for `want` more bytes within the budget, older output dropped
 * first when needed. */
static uint64_t budget_room(struct sess *s, uint64_t want)
{
	while (s->kept + want > s->o->output_budget && s->oldest &&
	       s->oldest < s->execs)
		drop_oldest(s);
	return s->o->output_budget > s->kept ? s->o->output_budget - s->kept
					     : 0;
}

static void on_out(void *opaque, int fd, const uint8_t *data, size_t len)
{
	struct sess *s = opaque;
	int i = fd == 2;
	uint64_t room = s->stored[i] < s->o->output_max
			    ? s->o->output_max - s->stored[i]
			    : 0;
	size_t k = len < room ? len : (size_t)room;

	ring_put(&s->tail[i], data, len);
	if (k)
		room = budget_room(s, k);
	k = k < room ? k : (size_t)room;
	if (k && cmd(s, "APPEND %s %b", s->okey[i], data, k) == 0) {
		s->stored[i] += k;
		s->kept += k;
	}
}

/* --- exec ----------------------------------------------------------------- */

/* The step of an exec body, decoded as one step (al_step_from_json), so
 * every rule a job's step follows (caps, cmd or sh, env names, cwd)
 * holds and errors name the exec's own fields; the session's env goes
 * first, the exec's own overrides it. */
static int exec_step(struct sess *s, json_t *body, struct al_step *ret,
		     char *err, size_t len)
{
	json_t *step = json_copy(body), *env = json_object(); /* shallow */
	struct al_diags d;
	char *text = NULL;
	int r;

	if (!step || !env || !json_is_object(step)) {
		json_decref(step);
		json_decref(env);
		snprintf(err, len, "exec: the body is not an object");
		return -EINVAL;
	}
	if (s->env)
		json_object_update(env, s->env);
	if (json_is_object(json_object_get(step, "env")))
		json_object_update(env, json_object_get(step, "env"));
	if (!json_object_size(env) || json_object_set(step, "env", env) == 0)
		text = json_dumps(step, JSON_COMPACT);
	json_decref(env);
	json_decref(step);
	if (!text)
		return -ENOMEM;
	al_diags_init(&d);
	r = al_step_from_json(text, strlen(text), ret, &d);
	free(text);
	if (r < 0) {
		char why[512];

		al_diags_format(&d, why, sizeof(why));
		snprintf(err, len, "exec: %s", why);
	}
	return r;
}

/* The exec's run time into the queue's session stats (al_sess_metrics
 * renders it); a lost count is a metric off by one, nothing more. */
static void count_exec(struct sess *s, uint64_t wall_ms)
{
	char ks[SESS_KEY_MAX], f[32] = "exec_le:inf";

	for (size_t i = 0; i < SESS_EXEC_NBUCKETS; i++)
		if (wall_ms <= SESS_EXEC_BUCKETS[i]) {
			snprintf(f, sizeof(f), "exec_le:%u",
				 SESS_EXEC_BUCKETS[i]);
			break;
		}
	if (sess__key(ks, sizeof(ks), s->o->queue, "stats") < 0)
		return;
	cmd(s, "HINCRBY %s %s 1", ks, f);
	cmd(s, "HINCRBY %s exec_ms_sum %llu", ks, (unsigned long long)wall_ms);
}

static void exec_done(struct sess *s, const char *xk,
		      const struct al_step_result *sr, const char *error)
{
	size_t cap =
	    s->tail[0].cap > s->tail[1].cap ? s->tail[0].cap : s->tail[1].cap;
	char *buf = malloc(cap ? cap : 1);
	size_t n1 = 0, n2 = 0;
	char *b2 = malloc(cap ? cap : 1);

	uint64_t room;
	size_t c1 = 0, c2 = 0; /* bytes cut off the tails' fronts */

	if (buf && b2) {
		n1 = ring_get(&s->tail[0], buf);
		n2 = ring_get(&s->tail[1], b2);
	}
	/* the tails count too: past the budget, older output goes, then
	 * the tails keep only their last bytes that fit */
	room = budget_room(s, n1 + n2);
	if (n1 > room)
		c1 = n1 - (size_t)room;
	if (n2 > room - (n1 - c1))
		c2 = n2 - (size_t)(room - (n1 - c1));
	n1 -= c1;
	n2 -= c2;
	s->kept += n1 + n2;
	cmd(s,
	    "HSET %s state done status %s exit_code %d signal %d wall_ms "
	    "%llu cpu_ms %llu stdout_bytes %llu stderr_bytes %llu "
	    "stdout_truncated %d stderr_truncated %d stdout %b stderr %b "
	    "ended_at_ms %llu error %s",
	    xk, al_status_name(sr->status),
	    sr->has_exit_code ? sr->exit_code : -1, sr->signal,
	    (unsigned long long)sr->wall_ms, (unsigned long long)sr->cpu_ms,
	    (unsigned long long)s->tail[0].total,
	    (unsigned long long)s->tail[1].total, s->tail[0].total > n1,
	    s->tail[1].total > n2, buf ? buf + c1 : "", n1, b2 ? b2 + c2 : "",
	    n2, (unsigned long long)al_wall_ms(), error ? error : "");
	free(buf);
	free(b2);
	cmd(s, "HSET %s kept_bytes %llu", xk,
	    (unsigned long long)(s->stored[0] + s->stored[1] + n1 + n2));
	/* wake a waiter blocked on the end (al_sess_exec_nap): one token,
	 * gone within SESS_END_TTL_S when nobody took it */
	cmd(s, "RPUSH %s:end 1", xk);
	cmd(s, "EXPIRE %s:end %u", xk, SESS_END_TTL_S);
	count_exec(s, sr->wall_ms);
}

static void host_msgs(struct sess *s);

/* Default grace before SIGKILL: a cancel (TERM, INT, HUP, QUIT) gets one;
 * USR1/USR2 are deliveries, not cancels, and get none unless asked. */
#define CANCEL_GRACE_MS 2000u

static bool is_cancel(int sig)
{
	return sig == SIGTERM || sig == SIGKILL || sig == SIGINT ||
	       sig == SIGHUP || sig == SIGQUIT;
}

/* A signal request {rid, exec, signal, grace_ms?}: 1 with *sig, *grace
 * when it is for the exec running (the reply and the record are written
 * here), else 0 (refused with the reason). */
static int sig_request(struct sess *s, json_t *req, uint32_t *sig,
		       uint32_t *grace)
{
	const char *rid = json_string_value(json_object_get(req, "rid"));
	json_t *n = json_object_get(req, "exec"),
	       *g = json_object_get(req, "grace_ms");
	int no = al_step_signal_number(
	    json_string_value(json_object_get(req, "signal")));
	char xk[SESS_KEY_MAX], msg[160];
	uint64_t x = json_is_integer(n) ? (uint64_t)json_integer_value(n) : 0;

	if (!no) {
		reply_error(s, rid,
			    "signal: not one of TERM KILL INT HUP QUIT USR1 "
			    "USR2");
		return 0;
	}
	if (!x || x > s->execs) {
		snprintf(msg, sizeof(msg), "no exec %llu in this session",
			 (unsigned long long)x);
		reply_error(s, rid, msg);
		return 0;
	}
	if (x != s->running) {
		snprintf(msg, sizeof(msg), "exec %llu has already ended",
			 (unsigned long long)x);
		reply_error(s, rid, msg);
		return 0;
	}
	if (s->can_signal <= 0) {
		reply_error(s, rid,
			    "the session's guest agent predates signals "
			    "(protocol v4): rebuild its image");
		return 0;
	}
	*sig = (uint32_t)no;
	*grace = is_cancel(no) && no != SIGKILL ? CANCEL_GRACE_MS : 0;
	if (json_is_integer(g) && json_integer_value(g) >= 0)
		*grace = json_integer_value(g) > AL_SIGNAL_GRACE_MAX
			     ? AL_SIGNAL_GRACE_MAX
			     : (uint32_t)json_integer_value(g);
	sess__key(xk, sizeof(xk), s->o->queue, "%s:x:%llu", s->id,
		 (unsigned long long)x);
	if (strlen(s->sigs) + 6 < sizeof(s->sigs)) {
		size_t at = strlen(s->sigs);

		snprintf(s->sigs + at, sizeof(s->sigs) - at, "%s%s",
			 at ? " " : "", al_step_signal_name(no));
	}
	cmd(s, "HSET %s signals_sent %s", xk, s->sigs);
	if (is_cancel(no))
		cmd(s, "HSET %s cancelled 1", xk);
	reply_json(s, rid,
		   json_pack("{s:I,s:s,s:b,s:I}", "exec", (json_int_t)x,
			     "signal", al_step_signal_name(no), "cancelled",
			     is_cancel(no), "grace_ms", (json_int_t)*grace));
	al_info("session=%s exec=%llu signal=%s grace_ms=%u", s->id,
		(unsigned long long)x, al_step_signal_name(no), *grace);
	return 1;
}

/* While an exec runs (every AL_AGENT_TICK_MS): the host's messages (a
 * delete kills the exec), then one pending signal request. */
static int exec_tick(void *opaque, uint32_t *sig, uint32_t *grace)
{
	struct sess *s = opaque;
	char k[SESS_KEY_MAX];
	redisContext *c;
	redisReply *r;
	int ret = 0;

	host_msgs(s);
	if (s->reason && !s->killed && s->can_signal > 0) {
		s->killed = true;
		*sig = SIGKILL;
		*grace = 0;
		return 1;
	}
	c = s->cl.rc && !s->cl.rc->err ? s->cl.rc : NULL; /* no reconnect */
	if (!c)
		return 0;
	sess__key(k, sizeof(k), s->o->queue, "%s:sig", s->id);
	r = redisCommand(c, "LPOP %s", k);
	if (r && r->type == REDIS_REPLY_STRING && r->len <= REQ_MAX) {
		json_t *req = json_loadb(r->str, r->len, 0, NULL);

		if (json_is_string(json_object_get(req, "rid")) &&
		    strlen(json_string_value(json_object_get(req, "rid"))) <=
			AL_SESS_ID_MAX)
			ret = sig_request(s, req, sig, grace);
		json_decref(req);
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

/* An exec's record and its outputs started afresh, and the session's
 * count of execs, in one script: a reader never sees the record of exec
 * N beside the output of an earlier N. K: record out1 out2 session;
 * A: exec started_at_ms resumed_ms (0: none). */
static const char EXEC_START_LUA[] =
    "redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])\n"
    "redis.call('HSET', KEYS[1], 'exec', ARGV[1], 'state', 'running',\n"
    "           'started_at_ms', ARGV[2])\n"
    "if ARGV[3] ~= '0' then\n"
    "  redis.call('HSET', KEYS[1], 'resumed_ms', ARGV[3])\n"
    "end\n"
    "redis.call('HSET', KEYS[4], 'execs', ARGV[1])\n"
    "return 1\n";

static void exec_start(struct sess *s, const char *xk)
{
	char k[SESS_KEY_MAX];

	sess__key(k, sizeof(k), s->o->queue, "%s", s->id);
	/* resumed_ms: the restore this exec waited for (save.c) */
	cmd(s, "EVAL %s 4 %s %s %s %s %llu %llu %llu", EXEC_START_LUA, xk,
	    s->okey[0], s->okey[1], k, (unsigned long long)s->execs,
	    (unsigned long long)al_wall_ms(),
	    (unsigned long long)s->resumed_ms);
	s->resumed_ms = 0;
}

static void run_exec(struct sess *s, const char *rid, json_t *body)
{
	struct al_step_result sr = {0};
	struct al_step step = {0};
	char xk[SESS_KEY_MAX], err[600] = "";
	uint64_t now = al_now_ms(), left;
	uint32_t t;
	int r;

	if (exec_step(s, body, &step, err, sizeof(err)) < 0) {
		reply_error(s, rid, err);
		return;
	}
	s->execs++;
	if (!s->oldest)
		s->oldest = s->execs;
	sess__key(xk, sizeof(xk), s->o->queue, "%s:x:%llu", s->id,
		 (unsigned long long)s->execs);
	for (int i = 0; i < 2; i++) {
		sess__key(s->okey[i], sizeof(s->okey[i]), s->o->queue,
			 "%s:x:%llu:%d", s->id, (unsigned long long)s->execs,
			 i + 1);
		s->stored[i] = 0;
		s->tail[i].pos = 0;
		s->tail[i].total = 0;
	}
	exec_start(s, xk);
	reply_json(s, rid, json_pack("{s:I}", "exec", (json_int_t)s->execs));
	left = s->ttl_at > now ? s->ttl_at - now : 0;
	t = step.timeout_ms ? step.timeout_ms
				    : s->ws->step_timeout_ms;
	if (t > s->ws->step_timeout_max_ms && s->ws->step_timeout_max_ms)
		t = s->ws->step_timeout_max_ms;
	if (left < t)
		t = (uint32_t)left;
	if (s->can_signal < 0)
		s->can_signal = al_wsess_can_signal(s->ws);
	s->running = s->execs;
	s->killed = false;
	s->sigs[0] = '\0';
	r = t ? al_wsess_exec_tick(s->ws, &step, t, s->o->output_max,
				   on_out, exec_tick, s, &sr)
	      : 0;
	s->running = 0;
	if (!t) {
		sr.status = AL_TO;
	} else if (r < 0) {
		sr.status = AL_XX;
		snprintf(s->error, sizeof(s->error),
			 "exec %llu: the VM "
			 "failed: %s",
			 (unsigned long long)s->execs, sb_vm_error(s->ws->vm));
		s->reason = "failed";
	}
	if (al_now_ms() >= s->ttl_at && sr.status == AL_TO)
		snprintf(err, sizeof(err), "the session's ttl ended it");
	exec_done(s, xk, &sr, r < 0 ? s->error : err[0] ? err : NULL);
	free(sr.stdout_.data);
	free(sr.stderr_.data);
	free(sr.error);
	free(sr.name);
	al_step_release(&step);
}

/* --- the loop ----------------------------------------------------------- */

static void host_msgs(struct sess *s)
{
	struct sess__msg m;

	while (read(s->fd, &m, sizeof(m)) == sizeof(m)) {
		if (m.type == SESS_MSG_STOP) {
			s->reason = "destroyed";
		} else if (m.type == SESS_MSG_EXTEND) {
			uint64_t w = al_wall_ms(), at = (uint64_t)m.value;

			s->ttl_at = al_now_ms() + (at > w ? at - w : 0);
			al_wsess_set_ttl(s->ws, s->ttl_at - al_now_ms() +
						    SESS_TTL_GRACE_MS);
			if (s->idle_s)
				s->idle_at = al_now_ms() + s->idle_s * 1000ull;
		}
	}
}

static void touch(struct sess *s)
{
	char k[SESS_KEY_MAX];

	s->last_at = al_now_ms();
	if (!s->idle_s)
		return;
	s->idle_at = al_now_ms() + s->idle_s * 1000ull;
	sess__key(k, sizeof(k), s->o->queue, "%s", s->id);
	cmd(s, "HSET %s idle_at_ms %llu", k,
	    (unsigned long long)(al_wall_ms() + s->idle_s * 1000ull));
}

/* --- hibernation (save.c) ------------------------------------------------ */

static void hibernate(struct sess *s)
{
	char k[SESS_KEY_MAX], err[400] = "";
	uint64_t t0 = al_now_ms();

	sess__key(k, sizeof(k), s->o->queue, "%s", s->id);
	if (sess__hibernate(s->o, s->ws, s->id, err, sizeof(err)) < 0) {
		al_warn("session=%s %s: it stays up", s->id, err);
		s->hib_s = 0; /* not again: it runs on as it was */
		return;
	}
	s->hibernated = true;
	cmd(s, "HSET %s hibernated 1 hibernated_at_ms %llu hibernate_ms %llu",
	    k, (unsigned long long)al_wall_ms(),
	    (unsigned long long)(al_now_ms() - t0));
}

/* The VM back before a request; 0, or -1 with the session failed. */
static int resume(struct sess *s, const char *rid, uint64_t *ret_ms)
{
	char k[SESS_KEY_MAX], err[600] = "";
	uint64_t now = al_now_ms();
	int r;

	r = s->ttl_at > now
		? sess__resume(s->o, s->ws, s->id, s->body,
			      s->ttl_at - now + SESS_TTL_GRACE_MS, ret_ms, err,
			      sizeof(err))
		: -ETIMEDOUT;
	if (r < 0) {
		snprintf(s->error, sizeof(s->error), "%.250s",
			 err[0] ? err : "resume: the ttl ended");
		s->reason = "failed";
		reply_error(s, rid, s->error);
		return -1;
	}
	s->hibernated = false;
	sess__key(k, sizeof(k), s->o->queue, "%s", s->id);
	cmd(s, "HSET %s hibernated 0 resumed_ms %llu", k,
	    (unsigned long long)*ret_ms);
	cmd(s, "HINCRBY %s resumes 1", k);
	return 0;
}

/* A snapshot of the live VM (save.c), between execs. */
static void op_snapshot(struct sess *s, const char *rid, json_t *body)
{
	char err[400] = "";
	json_t *j = sess__snapshot(s->o, s->ws, s->id, s->owner, body, err,
				   sizeof(err));

	if (j)
		reply_json(s, rid, j);
	else
		reply_error(s, rid, err);
	json_decref(j);
}

/* A fork: the VM saved for the forks' creates (save.c). */
static void op_fork(struct sess *s, const char *rid)
{
	char err[400] = "";
	json_t *j = sess__fork(s->o, s->ws, s->id, s->body, err, sizeof(err));

	if (j)
		reply_json(s, rid, j);
	else
		reply_error(s, rid, err);
	json_decref(j);
}

static void one_request(struct sess *s, const redisReply *r)
{
	json_t *req, *rid, *op;
	uint64_t resumed_ms = 0;
	bool resumed = false;

	if (r->element[1]->len > REQ_MAX)
		return; /* over the cap: dropped, not parsed */
	/* an exec's stdin may hold NULs (\u0000): al_sess_exec_start */
	req = json_loadb(r->element[1]->str, r->element[1]->len,
			 JSON_ALLOW_NUL, NULL);
	rid = json_object_get(req, "rid");
	op = json_object_get(req, "op");
	if (!json_is_string(rid) || !json_is_string(op) ||
	    strlen(json_string_value(rid)) > AL_SESS_ID_MAX) {
		json_decref(req);
		return;
	}
	if (!strcmp(json_string_value(op), "signal")) {
		uint32_t sig, grace;

		/* before any resume: no exec runs, so it is refused, and a
		 * hibernated VM is not woken to say so */
		sig_request(s, req, &sig, &grace);
		json_decref(req);
		return; /* a refused signal is no activity */
	}
	if (s->hibernated) {
		if (resume(s, json_string_value(rid), &resumed_ms) < 0) {
			json_decref(req);
			return;
		}
		resumed = true;
	}
	s->resumed_ms = resumed ? resumed_ms : 0;
	if (!strcmp(json_string_value(op), "exec"))
		run_exec(s, json_string_value(rid),
			 json_object_get(req, "body"));
	else if (!strcmp(json_string_value(op), "fork"))
		op_fork(s, json_string_value(rid));
	else if (!strcmp(json_string_value(op), "fork_done")) {
		sess__fork_done(s->o, json_string_value(json_object_get(
					 json_object_get(req, "body"), "name")));
		reply_error(s, json_string_value(rid), "");
	} else if (!strcmp(json_string_value(op), "snapshot"))
		op_snapshot(s, json_string_value(rid),
			    json_object_get(req, "body"));
	else
		reply_error(s, json_string_value(rid), "unknown request");
	json_decref(req);
	touch(s);
}

static void serve(struct sess *s)
{
	char k[SESS_KEY_MAX], ks[SESS_KEY_MAX];

	sess__key(k, sizeof(k), s->o->queue, "%s:req", s->id);
	sess__key(ks, sizeof(ks), s->o->queue, "%s:sig", s->id);
	while (!s->reason) {
		uint64_t now = al_now_ms(), until = now + LOOP_MS;
		redisContext *c;
		redisReply *r;

		host_msgs(s);
		if (s->reason)
			break;
		if (now >= s->ttl_at) {
			s->reason = "ttl";
			break;
		}
		if (s->idle_at && now >= s->idle_at) {
			s->reason = "idle";
			break;
		}
		if (s->hib_s && !s->hibernated &&
		    now >= s->last_at + s->hib_s * 1000ull) {
			hibernate(s);
			continue;
		}
		if (!s->hibernated && !al_wsess_alive(s->ws)) {
			snprintf(s->error, sizeof(s->error), "the VMM died");
			s->reason = "failed";
			break;
		}
		if (s->ttl_at < until)
			until = s->ttl_at;
		if (s->idle_at && s->idle_at < until)
			until = s->idle_at;
		if (s->hib_s && !s->hibernated &&
		    s->last_at + s->hib_s * 1000ull < until)
			until = s->last_at + s->hib_s * 1000ull;
		c = rc(s);
		if (!c) {
			poll(NULL, 0, (int)(until - now));
			continue;
		}
		r = redisCommand(c, "BLPOP %s %s %.3f", ks, k,
				 (double)(until - now + 1) / 1000.0);
		if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    r->element[1]->type == REDIS_REPLY_STRING)
			one_request(s, r);
		if (r)
			freeReplyObject(r);
	}
}

/* Open the VM and answer the create; 0 or -1 (ended `failed`). */
static int start(struct sess *s, json_t *req, uint32_t ttl_s)
{
	json_t *body = json_object_get(req, "body"), *job, *rec = NULL;
	const char *rid = json_string_value(json_object_get(req, "rid"));
	static const char *const keep[] = {"template", "limits", "network",
					   "files"};
	struct al_job j = {0};
	struct al_diags d;
	struct sess__msg m;
	char *text, err[600] = "", k[SESS_KEY_MAX];
	uint64_t w;
	int r;

	job = json_object();
	for (size_t i = 0; job && i < 4; i++)
		if (json_object_get(body, keep[i]))
			json_object_set(job, keep[i],
					json_object_get(body, keep[i]));
	json_object_set_new(job, "steps", json_pack("[{s:s}]", "sh", "true"));
	/* the package gateway audits the VM's requests under this id */
	json_object_set_new(job, "id", json_string(s->id));
	text = json_dumps(job, JSON_COMPACT);
	json_decref(job);
	al_diags_init(&d);
	r = text ? al_job_from_json(text, strlen(text), &j, &d) : -ENOMEM;
	free(text);
	/* a snapshot's VM has no NIC: a networked session is never saveable
	 * (the C client refuses that create; its record says saveable 0) */
	s->ws->w.saveable =
	    (json_is_true(json_object_get(body, "saveable")) || s->hib_s) &&
	    (!json_string_value(json_object_get(body, "network")) ||
	     !strcmp(json_string_value(json_object_get(body, "network")),
		     "none"));
	if (r < 0) {
		al_diags_format(&d, err, sizeof(err));
	} else if ((r = sess__fork_policy(s->o, s->ws, body, err,
					 sizeof(err))) < 0) {
		al_job_release(&j);
	} else {
		r = al_wsess_open(s->ws, &j,
				  (uint64_t)ttl_s * 1000 + SESS_TTL_GRACE_MS,
				  err, sizeof(err));
		al_job_release(&j);
	}
	if (r < 0) {
		snprintf(s->error, sizeof(s->error), "create: %.240s", err);
		if (rc(s))
			sess__end(s->cl.rc, s->o->queue, s->id, "failed",
				 s->error, s->o->keep_s, 0);
		reply_error(s, rid, s->error);
		return -1;
	}
	w = al_wall_ms();
	s->ttl_at = al_now_ms() + ttl_s * 1000ull;
	m = (struct sess__msg){SESS_MSG_ALIVE, (int64_t)(w + ttl_s * 1000ull)};
	if (write(s->fd, &m, sizeof(m)) != sizeof(m))
		return -1;
	sess__key(k, sizeof(k), s->o->queue, "%s", s->id);
	cmd(s,
	    "HSET %s state alive alive_at_ms %llu expires_at_ms %llu "
	    "restore_ms %llu warm %d saveable %d",
	    k, (unsigned long long)w, (unsigned long long)(w + ttl_s * 1000ull),
	    (unsigned long long)sb_vm_ready_ms(s->ws->vm),
	    sb_vm_warm(s->ws->vm) ? 1 : 0,
	    sb_vm_saveable(s->ws->vm) ? 1 : 0);
	touch(s);
	if (rc(s) &&
	    sess__record_json(s->cl.rc, s->o->queue, s->id, &rec, NULL, 0) == 0)
		reply_json(s, rid, rec);
	json_decref(rec);
	return 0;
}

/* Give every key of the session the keep time. */
static void expire_all(struct sess *s)
{
	char k[SESS_KEY_MAX];

	sess__key(k, sizeof(k), s->o->queue, "%s:req", s->id);
	cmd(s, "DEL %s", k);
	sess__key(k, sizeof(k), s->o->queue, "%s:sig", s->id);
	cmd(s, "DEL %s", k);
	for (uint64_t n = 1; n <= s->execs; n++) {
		sess__key(k, sizeof(k), s->o->queue, "%s:x:%llu", s->id,
			 (unsigned long long)n);
		cmd(s, "EXPIRE %s %u", k, s->o->keep_s);
		for (int i = 1; i <= 2; i++) {
			sess__key(k, sizeof(k), s->o->queue, "%s:x:%llu:%d",
				 s->id, (unsigned long long)n, i);
			cmd(s, "EXPIRE %s %u", k, s->o->keep_s);
		}
	}
}

/* A spare: warm clones made while no session waits, then the create the
 * host hands over on the socket (4-byte length, then the request with
 * its resolved ttl_s and idle_s as "ttl", "idle"). */
void sess__spare(const struct al_sess_opts *o, const char *host, int fd)
{
	struct al_wsess *ws = malloc(sizeof(*ws));
	uint32_t len = 0, got = 0;
	char *buf;
	json_t *req;

	if (!ws)
		_exit(1);
	al_wsess_init(ws, o->sb, o->policy, host);
	al_wsess_warm(ws);
	{
		struct sess__msg m = {SESS_MSG_READY, 0};

		if (write(fd, &m, sizeof(m)) != sizeof(m))
			_exit(0);
	}
	if (read(fd, &len, sizeof(len)) != sizeof(len) || !len || len > REQ_MAX)
		_exit(0); /* the host is gone or stopping: no session */
	buf = malloc(len);
	while (buf && got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			_exit(0);
		got += (uint32_t)n;
	}
	req = buf ? json_loadb(buf, len, 0, NULL) : NULL;
	free(buf);
	if (!json_is_integer(json_object_get(req, "ttl")) ||
	    !json_is_integer(json_object_get(req, "idle")))
		_exit(1);
	sess__go(o, host, req,
		(uint32_t)json_integer_value(json_object_get(req, "ttl")),
		(uint32_t)json_integer_value(json_object_get(req, "idle")), fd,
		ws);
}

void sess__run(const struct al_sess_opts *o, const char *host, json_t *req,
	      uint32_t ttl_s, uint32_t idle_s, int fd)
{
	struct al_wsess *ws = malloc(sizeof(*ws));

	if (!ws)
		_exit(1);
	al_wsess_init(ws, o->sb, o->policy, host);
	sess__go(o, host, req, ttl_s, idle_s, fd, ws);
}

void sess__go(const struct al_sess_opts *o, const char *host, json_t *req,
	     uint32_t ttl_s, uint32_t idle_s, int fd, struct al_wsess *ws)
{
	struct sess s = {
	    .o = o, .host = host, .fd = fd, .idle_s = idle_s, .can_signal = -1};
	json_t *body = json_object_get(req, "body");
	uint32_t cap = o->policy->defaults.output_bytes;
	int code = 0;

	s.ws = ws;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	snprintf(s.id, sizeof(s.id), "%s",
		 json_string_value(json_object_get(req, "id")));
	/* set by the host from the record it claimed (host.c), never by
	 * the client's request */
	snprintf(s.owner, sizeof(s.owner), "%s",
		 json_string_value(json_object_get(req, "owner")) ?: "");
	s.env = json_object_get(body, "env");
	s.hib_s = o->hibernate_default_s;
	if (json_is_integer(json_object_get(body, "hibernate_s")))
		s.hib_s = (uint32_t)json_integer_value(
		    json_object_get(body, "hibernate_s"));
	s.body = body;
	if (!cap)
		cap = 1u << 20;
	if (json_is_integer(json_object_get(json_object_get(body, "limits"),
					    "output_bytes")))
		cap = (uint32_t)json_integer_value(json_object_get(
		    json_object_get(body, "limits"), "output_bytes"));
	if (cap > o->output_max)
		cap = o->output_max;
	for (int i = 0; i < 2; i++) {
		s.tail[i].cap = cap;
		s.tail[i].buf = malloc(cap ? cap : 1);
		if (!s.tail[i].buf)
			_exit(1);
	}
	rc(&s);
	if (start(&s, req, ttl_s) < 0)
		_exit(1);
	if (s.hib_s) {
		char k[SESS_KEY_MAX];

		sess__key(k, sizeof(k), o->queue, "%s", s.id);
		cmd(&s, "HSET %s hibernate_s %u hibernated 0", k, s.hib_s);
	}
	al_info("session=%s alive ttl_s=%u idle_s=%u", s.id, ttl_s, idle_s);
	serve(&s);
	s.ended_at = al_wall_ms(); /* the end, not the VM's teardown after */
	al_wsess_close(s.ws);
	sess__fork_done(o, NULL); /* fork snapshots a lost client left */
	if (s.hib_s) /* a hibernated session's state */
		sess__hib_done(o, s.id);
	for (int tries = 0; tries < 20; tries++) {
		if (rc(&s) && sess__end(s.cl.rc, o->queue, s.id, s.reason,
				       s.error[0] ? s.error : NULL, o->keep_s,
				       s.ended_at) >= 0)
			break;
		poll(NULL, 0, 250);
	}
	expire_all(&s);
	al_info("session=%s ended reason=%s execs=%llu", s.id, s.reason,
		(unsigned long long)s.execs);
	if (!strcmp(s.reason, "failed"))
		code = 1;
	alq_client_close(&s.cl);
	_exit(code);
}
