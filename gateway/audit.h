/* audit.h: one record per request a client makes of the gateway, allowed
 * or not: time, who asked (the job or session from the network slot, or
 * "host"), ecosystem, name, version, file, sha256, decision, reason, and
 * for refused names the look-alike found. One JSON object a line, written
 * with one write() to an O_APPEND fd the gateway got before it dropped
 * privileges (so it can add lines, never rewrite old ones); a relay adds
 * them to the Redis stream (tools/cli/gwrelay.h).
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
	char job[GW_JOB_MAX + 1];	  /* job/session id, or GW_HOST_JOB */
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
 * GW_AUDIT_STREAM_MAX * job J decision D record JSON, added by a relay
 * that follows the file (tools/cli/gwrelay.h), never by the gateway,
 * which holds no Redis connection. */
#define GW_AUDIT_STREAM	    "airlock:packages:audit"
#define GW_AUDIT_STREAM_MAX 1000000

/* The job of a record from the host itself (loopback): not a job id
 * (results.h, al_id_valid(): no '@'), so a job named "host" never
 * passes for the host, nor the host for it. */
#define GW_HOST_JOB "@host"

/* A record's job is a job or session id, GW_HOST_JOB, or "unknown ADDR"
 * (an address with no slot file). */
bool gw_audit_job_valid(const char *job);

#endif
