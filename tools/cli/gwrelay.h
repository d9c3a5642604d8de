/* gwrelay.h: the package gateway's audit records, from its file to the
 * Redis stream (docs/packages.md, "The audit log").
 *
 * The gateway holds no Redis connection (gateway/main.c): it appends its
 * records to DIR/audit.jsonl through an O_APPEND fd opened before its
 * jail, and so do the workers (dropped connections, worker/pkglist.h).
 * The relay, run by the gateway's keeper (gwrun.c) in the host's
 * namespaces on serve's own Redis URL, follows that file from its end
 * when the relay starts and adds each new record to the stream:
 *
 *   XADD airlock:packages:audit MAXLEN ~ GW_AUDIT_STREAM_MAX *
 *        job J decision D record JSON
 *
 * after checking it (al_gw_relay_check): a line over GW_AUDIT_LINE_MAX,
 * a line that is not a record, or a record whose job is not a job id,
 * GW_HOST_JOB or "unknown ADDR" is skipped; what is added is the record
 * encoded again, never the line's bytes. A compromised gateway can thus
 * add records, as it can to its file, and do nothing else to Redis: no
 * other command, key or trim.
 *
 *  1. al_gw_relay_init(&r, DIR, &url): the file's end now (nothing
 *     connects yet; url NULL: records stay in the file).
 *  2. al_gw_relay_poll(&r) often (the keeper: every 100 ms): new
 *     complete lines, at most AL_GW_RELAY_CHUNK bytes a call. Redis
 *     unreachable: the records wait in the file and the relay connects
 *     again at most every AL_GW_RELAY_RETRY_MS.
 *  3. al_gw_relay_release(&r).
 */
#ifndef AL_GW_RELAY_H
#define AL_GW_RELAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "audit.h"
#include "queue.h"
#include "url.h"

#define AL_GW_RELAY_CHUNK    (64u << 10) /* bytes read a poll */
#define AL_GW_RELAY_RETRY_MS 2000	 /* between connects */

struct al_gw_relay {
	char path[4200];     /* DIR/audit.jsonl */
	int fd;		     /* the file, -1 until it exists */
	off_t at;	     /* its first byte not relayed yet */
	dev_t dev;	     /* the file followed, to see it replaced */
	ino_t ino;	     /* likewise */
	bool junk;	     /* skipping an over-long line to its end */
	bool have_url;	     /* a Redis to relay to */
	struct alq_url url;  /* which */
	struct alq_client c; /* connected when up */
	bool up;	     /* c is connected */
	int64_t retry_ms;    /* no connect before this (monotonic) */
	uint64_t added;	     /* records added */
	uint64_t skipped;    /* lines not records, or refused by Redis */
};

/* Step 1. 0, or -errno (DIR too long). */
int al_gw_relay_init(struct al_gw_relay *r, const char *dir,
		     const struct alq_url *url);
/* Step 2: the records added, or -errno when the file cannot be read. */
int al_gw_relay_poll(struct al_gw_relay *r);
void al_gw_relay_release(struct al_gw_relay *r);

/* One line (no newline) checked and encoded again into json (NUL-ended,
 * no newline) and *rec: 0, or -EBADMSG for a line not relayed. Pure. */
int al_gw_relay_check(const char *line, size_t len, struct gw_audit *rec,
		      struct gw_buf *json);

#endif
