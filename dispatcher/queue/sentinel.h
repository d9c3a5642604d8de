/* sentinel.h: finding the master through Redis Sentinel (sentinel.c).
 *
 * A `redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]]...
 * [/MASTER[/DB]]` URL names the sentinels (port 26379 by default, at most
 * ALQ_SENTINELS) and the master's name (default `mymaster`); the
 * password and the DB are the master's. Both clients ask the sentinels,
 * in order, `SENTINEL get-master-addr-by-name MASTER` each time they
 * connect, and connect to the address the first one that answers gives:
 *
 *  - the blocking client (CLI, HTTP API) when it opens;
 *  - each async connection (conn.c) before each connect attempt, so after
 *    a failover (the old master dead, or demoted: a write answered
 *    `READONLY` drops the connection) it reconnects to the new master.
 *
 * The query blocks for at most timeout_ms per sentinel; the async
 * connections pay it on their loop only while they are down. The
 * sentinels' replies are capped: a host of at most ALQ_SENTINEL_HOST_MAX
 * bytes, a port 1..65535, else the next sentinel is asked.
 */
#ifndef AL_SENTINEL_H
#define AL_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include "url.h"

/* Parse "HOST[:PORT][,HOST[:PORT]]...[/MASTER[/DB]]" (the part after the
 * scheme and any userinfo) into u's sentinel fields. 0 or -EINVAL. */
int alq_sentinel_parse(const char *s, struct alq_url *u);
/* The master's address as the sentinels of u say: 0, or -EHOSTUNREACH
 * when none answered with one (err says what each said, shortened). */
int alq_sentinel_master(const struct alq_url *u, uint32_t timeout_ms,
			char *host, size_t hostlen, int *port, char *err,
			size_t errlen);

#endif
