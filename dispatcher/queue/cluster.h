/* cluster.h: what the queue needs of Redis Cluster (cluster.c): reading a
 * redirection out of an error reply, and the hash slot of a key.
 *
 * hiredis 0.14 speaks no cluster protocol and Debian 12 packages no
 * cluster client, so the queue follows redirections itself. Every key of
 * a queue carries the queue's hash tag ({Q}), so one queue is one slot on
 * one master and every script's keys are in that slot; what moves is the
 * slot as a whole (a failover, a resharding). The two clients react to
 * what alq_redirect_parse() finds (docs/queue.md, "Redis Cluster", has the story):
 *
 *   MOVED slot host:port   the slot lives elsewhere now: connect there
 *                          and send the command again (it did not run)
 *   ASK slot host:port     the slot is migrating and this command's keys
 *                          are on the target already: the blocking client
 *                          sends ASKING + the command to the target once;
 *                          the async connections wait and send it again
 *   TRYAGAIN               a multi-key command (a script) during a
 *                          migration, its keys split between the nodes:
 *                          wait a moment, send it again
 *   CLUSTERDOWN            no master for the slot yet (a failover in
 *                          progress): wait, send it again
 *
 * None of them ran the command, so sending it again never doubles it.
 * The error text comes from the server; it is parsed with every length
 * checked (the host is at most ALQ_HOST_MAX bytes) and never trusted
 * further: a bad one is no redirection (the caller's plain error).
 */
#ifndef AL_CLUSTER_H
#define AL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALQ_HOST_MAX 255   /* bytes of a host in a redirection */
#define ALQ_SLOTS    16384 /* Redis Cluster's hash slots */

enum alq_redirect_kind {
	ALQ_REDIRECT_NONE = 0, /* not a cluster redirection */
	ALQ_REDIRECT_MOVED,    /* the slot moved: reconnect there */
	ALQ_REDIRECT_ASK,      /* this command only: ASKING on the target */
	ALQ_REDIRECT_TRYAGAIN, /* keys split mid-migration: retry soon */
	ALQ_REDIRECT_DOWN,     /* CLUSTERDOWN: retry soon */
};

struct alq_redirect {
	enum alq_redirect_kind kind;
	unsigned slot;		     /* MOVED, ASK */
	char host[ALQ_HOST_MAX + 1]; /* MOVED, ASK ("" = the same host) */
	int port;		     /* MOVED, ASK: 1..65535 */
};

/* What the error text `s` (len bytes, no NUL needed) of a reply says;
 * *ret is filled, kind NONE for anything that is not a well-formed
 * redirection. */
void alq_redirect_parse(const char *s, size_t len, struct alq_redirect *ret);
/* The hash slot of key (its {tag} when it has a non-empty one), as the
 * cluster computes it: CRC16-CCITT (XMODEM) mod 16384. */
unsigned alq_key_slot(const char *key, size_t len);

/* May a client follow a redirection or a Sentinel answer to `host` at
 * all? Never to an always-denied address (unspecified, link-local and
 * the cloud metadata addresses, multicast, broadcast), and to loopback
 * only when the configured `seed` is loopback itself: a node that names
 * one would aim the client, its commands and its password at a service
 * of the host. Pure (literal addresses and "localhost"; a name is
 * judged by the node list that must hold it, alq__node_known). */
bool alq_node_allowed(const char *host, const char *seed);

#endif
