/* url.h: a Redis server's address, as alq_url_parse() (queue.h) reads
 * it and the Sentinel lookup (sentinel.h) completes it: its own header, so
 * that the queue client and the Sentinel code both include it and neither
 * includes the other's. */
#ifndef AL_URL_H
#define AL_URL_H

#include <stdbool.h>

#define ALQ_SENTINELS	      5	  /* sentinels in a redis+sentinel:// URL */
#define ALQ_SENTINEL_HOST_MAX 255 /* bytes of the host a sentinel names */

struct alq_url {
	bool unix_;	/* unix socket (path) vs TCP (host, port) */
	char host[256]; /* TCP host */
	int port;	/* TCP port, default 6379 */
	char path[108]; /* unix socket path */
	char user[128]; /* ACL user, "" = default */
	char pass[256]; /* password, "" = no AUTH */
	unsigned db;	/* SELECT db, 0 = none */
	/* redis+sentinel:// (sentinel.h): host and port above are the first
	 * sentinel's until the sentinels name the master */
	bool sentinel_;	      /* the master comes from sentinels */
	char master[64];      /* its name */
	unsigned n_sentinels; /* entries of sentinel[] */
	struct {
		char host[64]; /* a sentinel */
		int port;      /* its port, default 26379 */
	} sentinel[ALQ_SENTINELS];
};

#endif
