/* internal.h: what the files of dispatcher/queue/ share with each other and
 * no one else may use (alq__ names; queue.h is the room's public header).
 *
 * Callers: script.c defines the reply predicates; client.c the
 * connection, the failure text and the redirect-following command; keys.c
 * a job's partition. submit.c, wait.c, status.c and job.c use them.
 */
#ifndef AL_QUEUE_INTERNAL_H
#define AL_QUEUE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "cluster.h"
#include "queue.h"

/* Redirections and fail-overs followed per command before the last reply
 * is the caller's to report (a few seconds; cluster.h). */
#define ALQ__REDIRECT_TRIES 16

/* The queue (partition) that holds job `id` for client c. */
const char *alq__qof(const struct alq_client *c, const char *id,
		     char buf[ALQ_PART_NAME_MAX]);

/* A string or status reply; one equal to s; an unsigned decimal of at
 * most 19 digits. */
bool alq__is_str(const redisReply *r);
bool alq__str_eq(const redisReply *r, const char *s);
bool alq__reply_u64(const redisReply *r, uint64_t *ret);

/* ms as a struct timeval (hiredis' timeouts). */
struct timeval alq__tv_ms(uint32_t ms);

/* Turn a failed call into -errno and remember why in c->err. */
int alq__client_fail(struct alq_client *c, const redisReply *r);

/* Is r a cluster redirection? (*rd filled) */
bool alq__redirected(const redisReply *r, struct alq_redirect *rd);
/* May the clients of URL u follow a redirection to host:port? Only to an
 * allowed address (alq_node_allowed) that is the URL's node or one that
 * CLUSTER SLOTS of it names (asked on a connection of its own, within
 * timeout_ms): nothing, the password least of all, goes to a node a
 * reply alone names. 0, or -EPERM / -EHOSTUNREACH with err set. Blocks. */
int alq__node_known(const struct alq_url *u, const char *host, int port,
		    uint32_t timeout_ms, char *err, size_t errlen);

/* One command on c, following Cluster redirections and Sentinel
 * fail-overs (client.c); NULL when the connection failed. */
redisReply *alq__cmd_argv(struct alq_client *c, int argc, const char **argv,
			  const size_t *lens);

/* After a pipeline saw redirection rd: reconnect or wait before the
 * caller sends its commands again; -EAGAIN once the tries are spent. */
int alq__follow(struct alq_client *c, const struct alq_redirect *rd,
		unsigned tries);

#endif
