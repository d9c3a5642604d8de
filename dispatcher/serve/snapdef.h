/* snapdef.h: snapshot definitions published through Redis
 * (docs/snapshots.md, "On every host").
 *
 * `airlock snapshot create NAME SETUP.json` builds NAME on its own host,
 * then publishes its definition (worker.h's struct al_snapdef: base,
 * base image hash, setup hash, key, the setup job's msgpack) so that any
 * host's dispatcher hands it to the worker with each job naming NAME;
 * the worker builds NAME from it when its own build differs
 * (worker/snapdef.c). Keys, all in the queue's own hash tag (partition
 * 0's with partitions: one slot, so one Cluster node):
 *
 *   airlock:{Q}:snapdefs          set: published names
 *   airlock:{Q}:snapdef:NAME      hash: name base image sha key setup
 *                                       by (the publishing host) at (ms)
 *   airlock:{Q}:snaphosts:NAME    hash: HOST -> "KEY MS", the key of the
 *                                       build a host last ran a job from
 *
 * HOST is `hostname:STATE_DIR` (al_snapdef_host): a snapshot build lives
 * in a state dir, and two state dirs on one machine are two hosts here.
 *
 * Everything read back is capped and checked before use (the setup at
 * AL_JOB_MAX_BYTES, names by the template-name rule, hashes as hex); the
 * worker checks the definition again and decodes the setup as a job.
 */
#ifndef AL_SNAPDEF_H
#define AL_SNAPDEF_H

#include "queue.h"
#include "worker.h"

#define ALQ_SNAPDEF_HOST_MAX 200 /* bytes of a HOST field */
#define ALQ_SNAPDEF_LIST_MAX 256 /* names or hosts listed */

struct redisReply;

/* This host's name in snaphosts: "hostname:state_dir", truncated to
 * ALQ_SNAPDEF_HOST_MAX - 1 bytes. */
void alq_snapdef_host(const char *state_dir, char out[ALQ_SNAPDEF_HOST_MAX]);

/* An HGETALL reply of a snapdef key into *ret; its setup is copied into
 * *ret_setup (malloc'd; ret->setup points to it). 0, -ENOENT (no such
 * definition: an empty reply), -EBADMSG (fields missing, oversized or
 * malformed, or a key that is not theirs), -ENOMEM. */
int alq_snapdef_parse(const struct redisReply *r, struct al_snapdef *ret,
		      char **ret_setup);

/* Publish d as queue q's definition of d->name (by = alq_snapdef_host
 * of the publisher): one HSET, then SADD to the names. 0 or -errno
 * (c->err says why). */
int alq_snapdef_publish(struct alq_client *c, const char *q,
			const struct al_snapdef *d, const char *by);
/* The definition of `name`: as alq_snapdef_parse. */
int alq_snapdef_get(struct alq_client *c, const char *q, const char *name,
		    struct al_snapdef *ret, char **ret_setup);
/* The published names (at most max, each AL_NAME_MAX + 1 bytes); the
 * count or -errno. */
int alq_snapdef_names(struct alq_client *c, const char *q,
		      char (*ret)[AL_NAME_MAX + 1], size_t max);
struct alq_snapdef_built {
	char host[ALQ_SNAPDEF_HOST_MAX]; /* hostname:state_dir */
	char key[33];                    /* the definition key it built */
	uint64_t at_ms;                  /* when it last ran a job from it */
};
/* Which hosts built which key of `name`; the count or -errno. */
int alq_snapdef_hosts(struct alq_client *c, const char *q, const char *name,
		      struct alq_snapdef_built *ret, size_t max);
/* Record that `host` has built `key` of `name` (what a dispatcher does,
 * async, after a job ran from it; the CLI after create). 0 or -errno. */
int alq_snapdef_record(struct alq_client *c, const char *q, const char *name,
		       const char *host, const char *key);
/* Remove the definition of `name` and its hosts' records; 0, -ENOENT
 * (none was published) or -errno. */
int alq_snapdef_remove(struct alq_client *c, const char *q, const char *name);

#endif
