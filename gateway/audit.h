/* audit.h: one record per request a client makes of the gateway, allowed
 * or not: time, who asked (the job or session from the network slot, or
 * "host"), ecosystem, name, version, file, sha256, decision, reason, and
 * for refused names the look-alike found. One JSON object a line, written
 * with one write() to an O_APPEND fd the gateway got before it dropped
 * privileges (so it can add lines, never rewrite old ones), and to the
 * Redis stream when one is configured (gateway/main.c).
 *
 * `airlock packages log` and `pending` read the same lines back
 * (gw_audit_parse): the audit file is the pending list's source, the
 * gateway keeps no other state.
 */
#ifndef AL_GW_AUDIT_H
#define AL_GW_AUDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "pages.h"
#include "pkgfile.h"

#define GW_AUDIT_LINE_MAX 4096 /* bytes of one record */
#define GW_JOB_MAX	  128  /* bytes of a job or session id */
#define GW_REASON_MAX	  256

/* One request. Strings may be "" (unknown), never NULL. */
struct gw_audit {
	int64_t time_ms;		  /* wall clock, ms since the epoch */
	char job[GW_JOB_MAX + 1];	  /* job/session id, or "host" */
	char peer[48];			  /* the client's address */
	enum gw_eco eco;		  /* python or npm */
	char name[GW_NAME_MAX + 1];	  /* as normalised for lookup */
	char version[GW_VERSION_MAX + 1]; /* "" for a page; "*" any */
	char file[GW_FILE_MAX + 1];	  /* file served or refused */
	char sha256[GW_SHA256_HEX + 1];	  /* of the bytes served */
	char route[16]; /* index|project|file|metadata|doc|tarball|bad */
	bool allowed;	/* the decision */
	bool pending;	/* a refusal a person may approve */
	char reason[GW_REASON_MAX + 1];	 /* why, for people */
	char lookalike[GW_NAME_MAX + 1]; /* the near name, or "" */
};

/* The record as one JSON line (with '\n') appended to out. */
int gw_audit_format(const struct gw_audit *r, struct gw_buf *out);
/* One line back; -EBADMSG for a line that is not a record. */
int gw_audit_parse(const char *line, size_t len, struct gw_audit *ret);
/* Format and write to fd with one write(). */
int gw_audit_write(int fd, const struct gw_audit *r);

/* The Redis stream the records also go to: XADD GW_AUDIT_STREAM MAXLEN ~
 * GW_AUDIT_STREAM_MAX * job J decision D record JSON. A connection made
 * before the gateway drops privileges; every command has a short timeout
 * so a slow Redis cannot stall requests (the JSONL file is the record of
 * last resort). */
#define GW_AUDIT_STREAM	    "airlock:packages:audit"
#define GW_AUDIT_STREAM_MAX 1000000
/* The file in the packages dir naming the stream's Redis (ADDR below and
 * a newline), written by the gateway at start, absent without one: the
 * workers add their own records to the same stores. */
#define GW_AUDIT_REDIS_FILE "audit-redis"
struct gw_audit_redis;
/* ADDR is unix:PATH or HOST:PORT. 0 and *ret, or -errno. */
int gw_audit_redis_open(const char *addr, struct gw_audit_redis **ret);
/* Add one record; serialised by an internal lock. 0 or -EIO. */
int gw_audit_redis_add(struct gw_audit_redis *rd, const struct gw_audit *r);
void gw_audit_redis_close(struct gw_audit_redis *rd);

#endif
