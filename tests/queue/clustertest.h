/* clustertest.h: a real local Redis Cluster for a test: 3 masters and 3
 * replicas, six `redis-server --cluster-enabled yes` processes on TCP
 * ports of 127.0.0.1 the test picks, joined by `redis-cli --cluster
 * create`; killed, reaped and removed by clustertest_stop(). Also: which
 * node serves a slot, and moving a slot from one master to another key by
 * key, as `redis-cli --cluster reshard` does, at a pace the test chooses.
 * cmocka asserts: include after <cmocka.h>.
 */
#ifndef AL_CLUSTERTEST_H
#define AL_CLUSTERTEST_H

#include <stdarg.h>

#include <hiredis/hiredis.h>

#include "redistest.h"

#define CT_NODES 6

struct clustertest {
	char dir[64];	       /* temp dir: configs, logs */
	int port[CT_NODES];    /* client ports; bus = port + 10000 */
	pid_t pid[CT_NODES];   /* redis-server, -1 when stopped */
	char id[CT_NODES][41]; /* node ids */
};

static inline redisContext *ct_conn(int port)
{
	struct timeval tv = {2, 0};
	redisContext *rc = redisConnectWithTimeout("127.0.0.1", port, tv);

	if (rc && rc->err) {
		redisFree(rc);
		return NULL;
	}
	if (rc)
		redisSetTimeout(rc, tv);
	return rc;
}

/* A command on node port whose reply is a string or status: strdup'd. */
static inline char *ct_str(int port, const char *fmt, ...)
{
	redisContext *rc = ct_conn(port);
	redisReply *r = NULL;
	char *s = NULL;
	va_list ap;

	if (!rc)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	if (r &&
	    (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
		s = strdup(r->str);
	freeReplyObject(r);
	redisFree(rc);
	return s;
}

static inline bool ct_state_ok(int port)
{
	char *s = ct_str(port, "CLUSTER INFO");
	bool ok = s && strstr(s, "cluster_state:ok") &&
		  strstr(s, "cluster_slots_ok:16384") &&
		  strstr(s, "cluster_known_nodes:6");

	free(s);
	return ok;
}

static inline pid_t ct_spawn(const struct clustertest *t, int i)
{
	char port[16], conf[128], log[128];
	pid_t pid;

	snprintf(port, sizeof(port), "%d", t->port[i]);
	snprintf(conf, sizeof(conf), "%s/nodes-%d.conf", t->dir, t->port[i]);
	snprintf(log, sizeof(log), "%s/redis-%d.log", t->dir, t->port[i]);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("redis-server", "redis-server", "--port", port, "--bind",
		       "127.0.0.1", "--cluster-enabled", "yes",
		       "--cluster-config-file", conf, "--cluster-node-timeout",
		       "1000", "--dir", t->dir, "--save", "", "--appendonly",
		       "no", "--logfile", log, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* 0, -1 (failed), 77 (no redis-server / redis-cli: skip). */
static inline int clustertest_start(struct clustertest *t)
{
	char cmd[1024];
	int n, base;

	if (system("command -v redis-server >/dev/null && "
		   "command -v redis-cli >/dev/null") != 0)
		return 77;
	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/al-cluster-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	/* ports in 20000..29999 (bus ports 30000..39999), by pid; another
	 * range when one is taken (a node that does not answer) */
	for (int attempt = 0;; attempt++) {
		bool up = true;

		base = 20000 + (int)((getpid() + attempt * 577) % 1600) * 6;
		for (int i = 0; i < CT_NODES; i++) {
			t->port[i] = base + i;
			t->pid[i] = ct_spawn(t, i);
			if (t->pid[i] < 0)
				return -1;
		}
		for (int i = 0; i < CT_NODES && up; i++) {
			redisContext *rc = NULL;

			for (int k = 0; k < 300 && !(rc = ct_conn(t->port[i]));
			     k++)
				redistest_sleep_ms(10);
			up = rc != NULL;
			if (rc)
				redisFree(rc);
			/* ours, not another test's server on a port
			 * ours could not bind */
			if (up) {
				char *info = ct_str(t->port[i], "INFO server");
				char *p = info ? strstr(info, "process_id:")
					       : NULL;

				up = p && atoi(p + 11) == (int)t->pid[i];
				free(info);
			}
		}
		if (up)
			break;
		for (int i = 0; i < CT_NODES; i++) {
			kill(t->pid[i], SIGKILL);
			waitpid(t->pid[i], NULL, 0);
			t->pid[i] = -1;
		}
		if (attempt == 2)
			return -1;
	}
	n = snprintf(cmd, sizeof(cmd), "redis-cli --cluster create");
	for (int i = 0; i < CT_NODES; i++)
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " 127.0.0.1:%d",
			      t->port[i]);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n,
		 " --cluster-replicas 1 --cluster-yes > %s/create.log 2>&1",
		 t->dir);
	if (system(cmd) != 0)
		return -1;
	for (int k = 0; k < 500; k++) {
		bool ok = true;

		for (int i = 0; i < CT_NODES && ok; i++)
			ok = ct_state_ok(t->port[i]);
		if (ok)
			break;
		if (k == 499)
			return -1;
		redistest_sleep_ms(20);
	}
	for (int i = 0; i < CT_NODES; i++) {
		char *id = ct_str(t->port[i], "CLUSTER MYID");

		if (!id)
			return -1;
		snprintf(t->id[i], sizeof(t->id[i]), "%s", id);
		free(id);
	}
	return 0;
}

/* clustertest_start(), or exit 77 (CTest's skip) when redis-server or
 * redis-cli is missing: a cmocka group setup's body. 0 or -1. */
static inline int clustertest_start_or_skip(struct clustertest *t)
{
	int r = clustertest_start(t);

	if (r == 77) {
		fprintf(stderr, "SKIP: no redis-server or redis-cli\n");
		exit(77);
	}
	return r;
}

static inline void clustertest_stop(struct clustertest *t)
{
	char cmd[128];

	for (int i = 0; i < CT_NODES; i++) {
		if (t->pid[i] <= 0)
			continue;
		kill(t->pid[i], SIGKILL);
		while (waitpid(t->pid[i], NULL, 0) < 0 && errno == EINTR)
			;
		t->pid[i] = -1;
	}
	if (t->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "clustertest: could not remove %s\n",
				t->dir);
	}
}

/* Index of the master that serves `slot` now, as node i0 sees it; -1. */
static inline int ct_owner(const struct clustertest *t, unsigned slot)
{
	redisContext *rc = ct_conn(t->port[0]);
	redisReply *r;
	int owner = -1;

	if (!rc)
		return -1;
	r = redisCommand(rc, "CLUSTER SLOTS");
	for (size_t i = 0;
	     r && r->type == REDIS_REPLY_ARRAY && i < r->elements && owner < 0;
	     i++) {
		redisReply *e = r->element[i];

		if (e->elements < 3 ||
		    (unsigned)e->element[0]->integer > slot ||
		    (unsigned)e->element[1]->integer < slot)
			continue;
		for (int n = 0; n < CT_NODES; n++)
			if (e->element[2]->element[1]->integer == t->port[n])
				owner = n;
	}
	freeReplyObject(r);
	redisFree(rc);
	return owner;
}

/* Is node i a master now? */
static inline bool ct_is_master(const struct clustertest *t, int i)
{
	char *s = ct_str(t->port[i], "INFO replication");
	bool m = s && strstr(s, "role:master");

	free(s);
	return m;
}

/* Move `slot` from master `from` to master `to`, `batch` keys per MIGRATE
 * with `pause_ms` between batches, as redis-cli's reshard does: IMPORTING
 * on the target, MIGRATING on the source, the keys, then NODE everywhere.
 * Returns the keys moved, or -1. */
static inline long ct_move_slot(const struct clustertest *t, unsigned slot,
				int from, int to, unsigned batch,
				unsigned pause_ms)
{
	redisContext *src = ct_conn(t->port[from]);
	redisContext *dst = ct_conn(t->port[to]);
	long moved = 0;
	redisReply *r;

	if (!src || !dst)
		goto fail;
	r = redisCommand(dst, "CLUSTER SETSLOT %u IMPORTING %s", slot,
			 t->id[from]);
	if (!r || r->type == REDIS_REPLY_ERROR)
		goto fail_r;
	freeReplyObject(r);
	r = redisCommand(src, "CLUSTER SETSLOT %u MIGRATING %s", slot,
			 t->id[to]);
	if (!r || r->type == REDIS_REPLY_ERROR)
		goto fail_r;
	freeReplyObject(r);
	for (;;) {
		const char *argv[7 + 64];
		char port[16];
		size_t n;

		r = redisCommand(src, "CLUSTER GETKEYSINSLOT %u %u", slot,
				 batch);
		if (!r || r->type != REDIS_REPLY_ARRAY)
			goto fail_r;
		if (r->elements == 0) {
			freeReplyObject(r);
			break;
		}
		snprintf(port, sizeof(port), "%d", t->port[to]);
		argv[0] = "MIGRATE", argv[1] = "127.0.0.1", argv[2] = port;
		argv[3] = "", argv[4] = "0", argv[5] = "5000";
		argv[6] = "KEYS";
		for (n = 0; n < r->elements && n < 64; n++)
			argv[7 + n] = r->element[n]->str;
		{
			redisReply *m =
			    redisCommandArgv(src, (int)(7 + n), argv, NULL);

			if (!m || m->type == REDIS_REPLY_ERROR) {
				fprintf(stderr, "MIGRATE: %s\n",
					m ? m->str : "no reply");
				freeReplyObject(m);
				goto fail_r;
			}
			freeReplyObject(m);
		}
		moved += (long)n;
		freeReplyObject(r);
		redistest_sleep_ms(pause_ms);
	}
	/* the target first, then the source, then everyone else */
	for (int k = 0; k < CT_NODES + 2; k++) {
		int i = k == 0 ? to : k == 1 ? from : k - 2;
		redisContext *rc;

		if (k >= 2 && (i == to || i == from || !ct_is_master(t, i)))
			continue;
		rc = ct_conn(t->port[i]);
		if (!rc)
			goto fail;
		r = redisCommand(rc, "CLUSTER SETSLOT %u NODE %s", slot,
				 t->id[to]);
		redisFree(rc);
		if (!r || r->type == REDIS_REPLY_ERROR)
			goto fail_r;
		freeReplyObject(r);
	}
	redisFree(src);
	redisFree(dst);
	return moved;
fail_r:
	if (r && r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "move slot: %s\n", r->str);
	freeReplyObject(r);
fail:
	if (src)
		redisFree(src);
	if (dst)
		redisFree(dst);
	return -1;
}

#endif
