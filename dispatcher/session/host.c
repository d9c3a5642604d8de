/* host.c: the session host, one per `airlock serve` that takes sessions.
 *
 * Theory of operation. A process of its own (al_sess_host_spawn: forked
 * like a worker, SIGKILLed when serve dies), single-threaded, with one
 * blocking Redis connection. Each turn of its loop it
 *
 *   1. reaps session processes that ended (one that did not end its own
 *      record, e.g. killed or crashed, is ended here: `ttl` when we killed
 *      it for its TTL, `destroyed` for a delete, else `failed`) and sweeps
 *      what a killed one left (sb_sweep: run dir, cgroup, network slot);
 *   2. reads their messages (ALIVE: the VM is up, the TTL starts);
 *   3. holds every session's hard TTL with its own monotonic timer: a
 *      session still running SESS_TTL_GRACE_MS past its end is SIGKILLed
 *      with its VM, whatever Redis is doing (Redis down only delays the
 *      record saying so);
 *   4. refreshes its liveness key P:host:HOST (PX 3 heartbeats): clients
 *      that find it gone end the host's sessions as `lost`, naming it;
 *   5. BLPOPs its control list P:host:HOST:ctl (extend, delete of its own
 *      sessions) and, only while it runs fewer than max_sessions, the
 *      shared P:create list: a host without room takes no create, so a
 *      create waits in the list for a host that has room (the client's
 *      create_timeout bounds the wait). Sessions have their own processes
 *      and cap, so they never take the batch workers' slots.
 *
 * Each session is a child (run.c) speaking struct sess__msg on a socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "serve.h"
#include "sess_internal.h"
#include "sessions.h"

#define HOST_MAX 1024u	/* sessions one host may hold */
#define BLOCK_S	 "0.25" /* BLPOP wait per turn */

struct child {
	pid_t pid;		     /* -1 = free */
	int fd;			     /* socket to it */
	char id[AL_SESS_ID_MAX + 1]; /* its session */
	uint64_t ttl_at;	     /* al_now_ms() end (provisional until
				      * ALIVE) */
	uint64_t alive_at;	     /* al_wall_ms() at ALIVE, 0 = not yet */
	uint64_t lineage_at;	     /* a fork's: al_wall_ms() its first
				      * ancestor came alive, 0 = not a fork */
	uint64_t kill_at;	     /* al_now_ms() stop deadline, 0 = none */
	const char *why;	     /* reason if we kill it */
};

/* A record to end once Redis answers again (a session killed while it
 * did not). */
struct unended {
	char id[AL_SESS_ID_MAX + 1];
	const char *reason;
	char error[128];
	uint64_t at; /* al_wall_ms() it ended at */
};
#define UNENDED_MAX 256

struct host {
	const struct al_sess_opts *o;
	struct unended unended[UNENDED_MAX]; /* ends Redis did not take */
	uint32_t n_unended;		     /* entries used */
	char name[AL_NAME_MAX + 1];
	struct alq_client cl;
	struct child *c;   /* max_sessions entries */
	pid_t spare;	   /* a spare session process, -1 = none */
	bool spare_ready;  /* it said READY: its warm clones wait */
	int spare_fd;	   /* its socket */
	uint64_t spare_at; /* al_now_ms() before which none is made */
	uint32_t n;	   /* live children */
	uint64_t hb_at;	   /* next heartbeat, al_now_ms() */
	uint64_t sweep_at; /* next sweep of saved states, al_now_ms() */
};

#define SWEEP_MS 60000u /* states of killed session processes go */

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

void al_sess_opts_init(struct al_sess_opts *o, const struct al_serve_opts *so)
{
	*o = (struct al_sess_opts){
	    .url = so->url,
	    .connect_timeout_ms = so->connect_timeout_ms,
	    .command_timeout_ms = so->command_timeout_ms,
	    .heartbeat_ms = so->heartbeat_ms,
	    .sb = so->sb,
	    .policy = so->policy,
	    .max_sessions = 4,
	    .ttl_default_s = 600,
	    .ttl_max_s = 3600,
	    .idle_default_s = 300,
	    .hibernate_default_s = 0,
	    .keep_s = 3600,
	    .output_max = 4u << 20,
	    .output_budget = 64u << 20,
	    .snapshots_per_principal = 8,
	};
	memcpy(o->queue, so->queue, sizeof(o->queue));
}

static redisContext *rc(struct host *h)
{
	return sess__rc(&h->cl, h->o);
}

static void reply_error(struct host *h, const char *rid, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (t && rid && rc(h))
		sess__reply(h->cl.rc, h->o->queue, rid, t);
	free(t);
	json_decref(j);
}

static void reply_record(struct host *h, const char *rid, const char *id)
{
	json_t *rec = NULL;
	char *t;

	if (!rc(h) ||
	    sess__record_json(h->cl.rc, h->o->queue, id, &rec, NULL, 0) < 0)
		return;
	t = json_dumps(rec, JSON_COMPACT);
	if (t)
		sess__reply(h->cl.rc, h->o->queue, rid, t);
	free(t);
	json_decref(rec);
}

static struct child *find(struct host *h, const char *id)
{
	for (uint32_t i = 0; i < h->o->max_sessions; i++)
		if (h->c[i].pid > 0 && !strcmp(h->c[i].id, id))
			return &h->c[i];
	return NULL;
}

static void kill_now(struct child *c, const char *why)
{
	c->why = why;
	kill(-c->pid, SIGKILL);
	kill(c->pid, SIGKILL);
}

/* A child is gone: end its record if it did not, sweep if it was
 * killed. */
static void gone(struct host *h, struct child *c, int status)
{
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	struct sb_sweep_stats st;
	char err[128];

	if (!clean) {
		snprintf(err, sizeof(err), "session process %s (%d)",
			 WIFSIGNALED(status) ? "killed by signal" : "exited",
			 WIFSIGNALED(status) ? WTERMSIG(status)
					     : WEXITSTATUS(status));
		if ((!rc(h) ||
		     sess__end(h->cl.rc, h->o->queue, c->id,
			      c->why ? c->why : "failed", c->why ? NULL : err,
			      h->o->keep_s, 0) < 0) &&
		    h->n_unended < UNENDED_MAX) {
			struct unended *u = &h->unended[h->n_unended++];

			snprintf(u->id, sizeof(u->id), "%s", c->id);
			u->reason = c->why ? c->why : "failed";
			u->at = al_wall_ms();
			snprintf(u->error, sizeof(u->error), "%s",
				 c->why ? "" : err);
		}
		sb_sweep(h->o->sb, &st);
	}
	al_info("session=%s process %d gone (%s)", c->id, (int)c->pid,
		clean	 ? "ended"
		: c->why ? c->why
			 : "failed");
	close(c->fd);
	c->pid = -1;
	c->fd = -1;
	h->n--;
}

/* A spare that died (its warm-up failed, or it was killed) is made again
 * at most every few seconds. */
static void spare_reap(struct host *h)
{
	int status;

	if (h->spare > 0 && !h->spare_ready) {
		struct sess__msg m;

		if (read(h->spare_fd, &m, sizeof(m)) == sizeof(m) &&
		    m.type == SESS_MSG_READY) {
			h->spare_ready = true;
			al_info("sessions: spare process %d ready",
				(int)h->spare);
		}
	}
	if (h->spare > 0 && waitpid(h->spare, &status, WNOHANG) == h->spare) {
		al_warn("sessions: spare process %d died", (int)h->spare);
		close(h->spare_fd);
		h->spare = -1;
		h->spare_fd = -1;
		h->spare_at = al_now_ms() + 5000;
	}
}

static void spare_make(struct host *h)
{
	int fd;
	pid_t pid;

	if (!h->o->spare || h->spare > 0 || stopping ||
	    h->n >= h->o->max_sessions || al_now_ms() < h->spare_at)
		return;
	pid = al_proc_fork(h->o->sb, &fd);
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		sess__spare(h->o, h->name, fd);
	}
	if (pid < 0) {
		h->spare_at = al_now_ms() + 5000;
		return;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	h->spare = pid;
	h->spare_fd = fd;
	h->spare_ready = false;
}

/* Hand `req` to the spare: its pid and socket, or -1 (none, or it did
 * not take it: fork one instead). */
static pid_t spare_take(struct host *h, json_t *req, uint32_t ttl,
			uint32_t idle, int *ret_fd)
{
	char *text;
	uint32_t len;
	pid_t pid = h->spare;
	bool ok;

	if (pid <= 0 || !h->spare_ready)
		return -1; /* still warming up: a fresh process is faster */
	fcntl(h->spare_fd, F_SETFL, fcntl(h->spare_fd, F_GETFL) & ~O_NONBLOCK);
	json_object_set_new(req, "ttl", json_integer(ttl));
	json_object_set_new(req, "idle", json_integer(idle));
	text = json_dumps(req, JSON_COMPACT);
	len = text ? (uint32_t)strlen(text) : 0;
	ok = text && write(h->spare_fd, &len, sizeof(len)) == sizeof(len);
	for (uint32_t off = 0; ok && off < len;) {
		ssize_t n = write(h->spare_fd, text + off, len - off);

		ok = n > 0;
		off += ok ? (uint32_t)n : 0;
	}
	free(text);
	h->spare = -1;
	*ret_fd = h->spare_fd;
	h->spare_fd = -1;
	if (!ok) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(*ret_fd);
		return -1;
	}
	return pid;
}

static void reap(struct host *h)
{
	for (uint32_t i = 0; i < h->o->max_sessions; i++) {
		struct child *c = &h->c[i];
		int status;

		if (c->pid > 0 && waitpid(c->pid, &status, WNOHANG) == c->pid)
			gone(h, c, status);
	}
}

/* ALIVE messages, TTL and stop deadlines. */
static void clocks(struct host *h)
{
	uint64_t now = al_now_ms();

	for (uint32_t i = 0; i < h->o->max_sessions; i++) {
		struct child *c = &h->c[i];
		struct sess__msg m;

		if (c->pid <= 0)
			continue;
		while (read(c->fd, &m, sizeof(m)) == sizeof(m))
			if (m.type == SESS_MSG_ALIVE) {
				uint64_t w = al_wall_ms(),
					 at = (uint64_t)m.value;

				c->alive_at = w;
				c->ttl_at = now + (at > w ? at - w : 0);
			}
		if (now >= c->ttl_at + SESS_TTL_GRACE_MS && !c->why) {
			al_warn("session=%s past its ttl: killed", c->id);
			kill_now(c, "ttl");
		} else if (c->kill_at && now >= c->kill_at && !c->why) {
			kill_now(c, "destroyed");
		}
	}
}

/* End the records Redis did not take when their sessions were killed. */
static void retry_ends(struct host *h)
{
	while (h->n_unended && rc(h)) {
		struct unended *u = &h->unended[h->n_unended - 1];

		if (sess__end(h->cl.rc, h->o->queue, u->id, u->reason,
			     u->error[0] ? u->error : NULL, h->o->keep_s,
			     u->at) < 0)
			return;
		h->n_unended--;
	}
}

static void heartbeat(struct host *h)
{
	char k[SESS_KEY_MAX];
	redisReply *r;

	if (al_now_ms() < h->hb_at || !rc(h))
		return;
	h->hb_at = al_now_ms() + h->o->heartbeat_ms;
	sess__key(k, sizeof(k), h->o->queue, "host:%s", h->name);
	r = redisCommand(h->cl.rc, "SET %s %u PX %u", k, h->n,
			 3 * h->o->heartbeat_ms);
	if (r)
		freeReplyObject(r);
}

/* ttl_s and idle_s of a create body; -1 with `err` when refused. */
static int clocks_of(struct host *h, json_t *body, uint32_t *ttl,
		     uint32_t *idle, char *err, size_t len)
{
	json_t *t = json_object_get(body, "ttl_s");
	json_t *i = json_object_get(body, "idle_s");

	*ttl = h->o->ttl_default_s;
	*idle = h->o->idle_default_s;
	if (t && (!json_is_integer(t) || json_integer_value(t) < 1 ||
		  json_integer_value(t) > h->o->ttl_max_s)) {
		snprintf(err, len,
			 "ttl_s: must be an integer, 1..%u seconds "
			 "(sessions.ttl_max_s)",
			 h->o->ttl_max_s);
		return -1;
	}
	if (i && (!json_is_integer(i) || json_integer_value(i) < 0 ||
		  json_integer_value(i) > h->o->ttl_max_s)) {
		snprintf(err, len,
			 "idle_s: must be an integer, 0..%u seconds (0 = "
			 "none)",
			 h->o->ttl_max_s);
		return -1;
	}
	if (t)
		*ttl = (uint32_t)json_integer_value(t);
	if (i)
		*idle = (uint32_t)json_integer_value(i);
	return 0;
}

/* KEYS[1] record; ARGV host, ttl_s, idle_s. Take a create: only a
 * pending record no host took yet (a create under a live session's id,
 * from a raw Redis client or twice, must not make two processes serve
 * it). {1, owner} taken, 0 not ours. */
static const char CLAIM_LUA[] =
    "if redis.call('HGET', KEYS[1], 'state') ~= 'pending' or\n"
    "   redis.call('HEXISTS', KEYS[1], 'host') == 1 then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', 'starting', 'host', ARGV[1],\n"
    "  'ttl_s', ARGV[2], 'idle_s', ARGV[3])\n"
    "return {1, redis.call('HGET', KEYS[1], 'owner') or ''}\n";

/* 1 taken (its owner, the principal the record names, in owner), 0 not
 * ours, -EIO. */
static int claim(struct host *h, const char *id, uint32_t ttl, uint32_t idle,
		 char *owner, size_t len)
{
	char k[SESS_KEY_MAX];
	redisReply *r;
	int x = -EIO;

	sess__key(k, sizeof(k), h->o->queue, "%s", id);
	r = redisCommand(h->cl.rc, "EVAL %s 1 %s %s %u %u", CLAIM_LUA, k,
			 h->name, ttl, idle);
	if (r && r->type == REDIS_REPLY_INTEGER)
		x = (int)r->integer;
	else if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		 r->element[1]->type == REDIS_REPLY_STRING &&
		 r->element[1]->len < len) {
		memcpy(owner, r->element[1]->str, r->element[1]->len);
		owner[r->element[1]->len] = '\0';
		x = 1;
	}
	if (r)
		freeReplyObject(r);
	return x;
}

/* A fork's lineage start (its parent's, or the parent's own start), and
 * its ttl cut to what is left of ttl_max_s from it (0: nothing left);
 * 0 for a create that is not a fork, or whose parent is gone. */
static uint64_t fork_lineage(struct host *h, json_t *body, uint32_t *ttl)
{
	const char *parent =
	    json_string_value(json_object_get(body, "fork_of"));
	struct child *p = parent ? find(h, parent) : NULL;
	uint64_t at, end, w = al_wall_ms();

	if (!p || !p->alive_at)
		return 0;
	at = p->lineage_at ? p->lineage_at : p->alive_at;
	end = at + (uint64_t)h->o->ttl_max_s * 1000;
	if (end <= w + 1000)
		*ttl = 0;
	else if ((uint64_t)*ttl * 1000 > end - w)
		*ttl = (uint32_t)((end - w) / 1000);
	return at;
}

static void create(struct host *h, json_t *req, bool own_list)
{
	const char *id = json_string_value(json_object_get(req, "id"));
	const char *rid = json_string_value(json_object_get(req, "rid"));
	json_t *dl = json_object_get(req, "deadline_ms");
	json_t *body = json_object_get(req, "body");
	struct child *c = NULL;
	char k[SESS_KEY_MAX], err[200], owner[AL_SESS_ORIGIN_MAX + 1];
	uint32_t ttl, idle;
	uint64_t lineage;
	int fd;
	pid_t pid;

	if (!id || !rid || !sess__id_valid(id) || !sess__id_valid(rid) ||
	    !json_is_object(body))
		return; /* not ours to answer: malformed */
	if (json_is_integer(dl) &&
	    (uint64_t)json_integer_value(dl) < al_wall_ms())
		return; /* its client gave up (create_timeout) */
	for (uint32_t i = 0; i < h->o->max_sessions && !c; i++)
		if (h->c[i].pid <= 0)
			c = &h->c[i];
	if (!c)
		return;
	if (json_object_get(body, "fork_of") && !own_list) {
		al_warn("session=%s create with fork_of on the shared list: "
			"refused",
			id);
		reply_error(h, rid, "fork_of: set by the host only");
		return;
	}
	if (clocks_of(h, body, &ttl, &idle, err, sizeof(err)) == 0)
		err[0] = '\0';
	lineage = fork_lineage(h, body, &ttl);
	if (lineage && !ttl && !err[0])
		snprintf(err, sizeof(err),
			 "fork: its parent's lineage is at sessions.ttl_max_s");
	if (claim(h, id, ttl, idle, owner, sizeof(owner)) != 1) {
		al_warn("session=%s create of an id already taken (or never "
			"recorded): refused",
			id);
		reply_error(h, rid, "create: that session id is taken");
		return;
	}
	if (err[0]) { /* refused, not failed: no session was made */
		sess__end(h->cl.rc, h->o->queue, id, "refused", err,
			  h->o->keep_s, 0);
		reply_error(h, rid, err);
		return;
	}
	/* the session process learns its principal from the record it
	 * was claimed from, not from what the request says */
	json_object_set_new(req, "owner", json_string(owner));
	pid = spare_take(h, req, ttl, idle, &fd);
	if (pid < 0)
		pid = al_proc_fork(h->o->sb, &fd);
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		sess__run(h->o, h->name, req, ttl, idle, fd);
	}
	if (pid < 0) {
		snprintf(err, sizeof(err), "create: fork: %s",
			 strerror((int)-pid));
		sess__end(h->cl.rc, h->o->queue, id, "failed", err, h->o->keep_s,
			 0);
		reply_error(h, rid, err);
		return;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	*c = (struct child){.pid = pid, .fd = fd, .lineage_at = lineage};
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->ttl_at = al_now_ms() + SESS_START_MAX_MS + ttl * 1000ull;
	h->n++;
	sess__key(k, sizeof(k), h->o->queue, "stats");
	redisReply *r = redisCommand(h->cl.rc, "HINCRBY %s created 1", k);
	if (r)
		freeReplyObject(r);
	al_info("session=%s started process %d ttl_s=%u idle_s=%u", id,
		(int)pid, ttl, idle);
}

static void extend(struct host *h, struct child *c, const char *rid,
		   json_t *ttl)
{
	uint64_t w = al_wall_ms(), at, max;
	struct sess__msg m;
	char k[SESS_KEY_MAX], err[300], a[32], b[32];

	if (!c->alive_at) {
		reply_error(h, rid, "extend: the session is still starting");
		return;
	}
	if (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
	    json_integer_value(ttl) > 100000000) {
		reply_error(h, rid, "extend: ttl_s must be a positive integer");
		return;
	}
	at = w + (uint64_t)json_integer_value(ttl) * 1000;
	/* a fork's lifetime counts from its first ancestor's start: a chain
	 * of forks never outlives ttl_max_s */
	max = (c->lineage_at ? c->lineage_at : c->alive_at) +
	      (uint64_t)h->o->ttl_max_s * 1000;
	if (at > max) {
		sess__iso(at, a);
		sess__iso(max, b);
		snprintf(err, sizeof(err),
			 "extend refused: ttl_s=%lld would end the session at "
			 "%s, past its maximum lifetime (sessions.ttl_max_s="
			 "%u from its start: %s)",
			 (long long)json_integer_value(ttl), a, h->o->ttl_max_s,
			 b);
		reply_error(h, rid, err);
		return;
	}
	c->ttl_at = al_now_ms() + (at - w);
	m = (struct sess__msg){SESS_MSG_EXTEND, (int64_t)at};
	if (write(c->fd, &m, sizeof(m)) != sizeof(m))
		al_warn("session=%s extend: the process did not take it",
			c->id);
	sess__key(k, sizeof(k), h->o->queue, "%s", c->id);
	redisReply *r = redisCommand(h->cl.rc, "HSET %s expires_at_ms %llu", k,
				     (unsigned long long)at);
	if (r)
		freeReplyObject(r);
	reply_record(h, rid, c->id);
}

static void control(struct host *h, json_t *req)
{
	const char *id = json_string_value(json_object_get(req, "id"));
	const char *rid = json_string_value(json_object_get(req, "rid"));
	const char *op = json_string_value(json_object_get(req, "op"));
	struct child *c;
	struct sess__msg m = {SESS_MSG_STOP, 0};

	if (!id || !rid || !op || !sess__id_valid(rid))
		return;
	c = find(h, id);
	if (!c) {
		reply_error(h, rid, "the session is not running on its host");
		return;
	}
	if (!strcmp(op, "extend")) {
		extend(h, c, rid, json_object_get(req, "ttl_s"));
	} else if (!strcmp(op, "delete")) {
		if (write(c->fd, &m, sizeof(m)) != sizeof(m) || !c->alive_at)
			kill_now(c, "destroyed");
		else if (!c->kill_at)
			c->kill_at = al_now_ms() + SESS_STOP_GRACE_MS;
		reply_error(h, rid, ""); /* "error": "" = taken */
	} else {
		reply_error(h, rid, "unknown request");
	}
}

/* One BLPOP on the control list and, with room, the create list. */
static void take(struct host *h)
{
	char ctl[SESS_KEY_MAX], cr[SESS_KEY_MAX], fk[SESS_KEY_MAX];
	redisReply *r;
	json_t *req;

	if (!rc(h)) {
		poll(NULL, 0, 250);
		return;
	}
	sess__key(ctl, sizeof(ctl), h->o->queue, "host:%s:ctl", h->name);
	sess__key(cr, sizeof(cr), h->o->queue, "create");
	sess__key(fk, sizeof(fk), h->o->queue, "host:%s:create", h->name);
	if (h->n < h->o->max_sessions && !stopping)
		/* forks of this host's sessions (save.c) come first */
		r = redisCommand(h->cl.rc, "BLPOP %s %s %s " BLOCK_S, ctl, fk,
				 cr);
	else
		r = redisCommand(h->cl.rc, "BLPOP %s " BLOCK_S, ctl);
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING &&
	    r->element[1]->len <= AL_SESS_BODY_MAX + 4096u) {
		req =
		    json_loadb(r->element[1]->str, r->element[1]->len, 0, NULL);
		if (json_is_object(req) && (!strcmp(r->element[0]->str, cr) ||
					      !strcmp(r->element[0]->str, fk)))
			create(h, req, !strcmp(r->element[0]->str, fk));
		else if (json_is_object(req))
			control(h, req);
		json_decref(req);
	}
	if (r)
		freeReplyObject(r);
}

int al_sess_host_run(const struct al_sess_opts *o)
{
	struct host h = {.o = o};
	struct sigaction sa = {.sa_handler = on_term};
	char k[SESS_KEY_MAX];

	snprintf(h.name, sizeof(h.name), "%s", o->host);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	h.c = calloc(o->max_sessions ? o->max_sessions : 1, sizeof(*h.c));
	if (!h.c)
		return -ENOMEM;
	for (uint32_t i = 0; i < o->max_sessions; i++)
		h.c[i].pid = -1;
	al_info("sessions: host %s takes up to %u", h.name, o->max_sessions);
	sess__sweep_saved(o); /* of sessions a dead host took with it */
	h.sweep_at = al_now_ms() + SWEEP_MS;
	h.spare = -1;
	h.spare_fd = -1;
	while (!stopping) {
		spare_reap(&h);
		spare_make(&h);
		reap(&h);
		clocks(&h);
		retry_ends(&h);
		heartbeat(&h);
		if (al_now_ms() >= h.sweep_at) {
			/* a session process killed (OOM, SIGKILL) left its
			 * fork or hibernation state: no flock holds it now */
			sess__sweep_saved(o);
			h.sweep_at = al_now_ms() + SWEEP_MS;
		}
		take(&h);
	}
	/* serve is stopping: its sessions end with it */
	if (h.spare > 0) {
		kill(-h.spare, SIGKILL);
		kill(h.spare, SIGKILL);
		waitpid(h.spare, NULL, 0);
		close(h.spare_fd);
	}
	for (uint32_t i = 0; i < o->max_sessions; i++)
		if (h.c[i].pid > 0)
			kill_now(&h.c[i], "lost");
	for (uint32_t i = 0; i < o->max_sessions; i++) {
		int status;

		if (h.c[i].pid > 0 && waitpid(h.c[i].pid, &status, 0) > 0)
			gone(&h, &h.c[i], status);
	}
	if (rc(&h)) {
		sess__key(k, sizeof(k), o->queue, "host:%s", h.name);
		redisReply *r = redisCommand(h.cl.rc, "DEL %s", k);
		if (r)
			freeReplyObject(r);
	}
	alq_client_close(&h.cl);
	free(h.c);
	return 0;
}

pid_t al_sess_host_spawn(const struct al_sess_opts *o)
{
	struct al_sess_opts *mine;
	int fd;
	pid_t pid;

	if (o->max_sessions > HOST_MAX)
		return -EINVAL;
	mine = malloc(sizeof(*mine));
	if (!mine)
		return -ENOMEM;
	*mine = *o;
	if (!mine->host[0]) {
		char hn[64] = "host";

		gethostname(hn, sizeof(hn) - 1);
		snprintf(mine->host, sizeof(mine->host), "%.40s:%d", hn,
			 (int)getpid());
	}
	pid = al_proc_fork(o->sb, &fd);
	if (pid == 0)
		_exit(al_sess_host_run(mine) < 0 ? 1 : 0);
	free(mine);
	if (pid > 0)
		close(fd);
	return pid;
}
