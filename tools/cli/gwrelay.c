/* gwrelay.c: the gateway's audit records from its file to the Redis
 * stream (gwrelay.h). Runs in the gateway's keeper, a single-threaded
 * process of root's: every line it reads was written by the gateway,
 * whose uid is assumed compromised, so every length is capped and every
 * record parsed and encoded again before it reaches Redis.
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gwrelay.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int al_gw_relay_check(const char *line, size_t len, struct gw_audit *rec,
		      struct gw_buf *json)
{
	int rc;

	if (len > GW_AUDIT_LINE_MAX || memchr(line, '\n', len))
		return -EBADMSG;
	rc = gw_audit_parse(line, len, rec);
	if (rc < 0)
		return rc;
	if (!gw_audit_job_valid(rec->job))
		return -EBADMSG;
	rc = gw_audit_format(rec, json);
	if (rc < 0)
		return rc == -ENOMEM ? rc : -EBADMSG;
	json->data[--json->len] = '\0'; /* no newline in the stream */
	return 0;
}

int al_gw_relay_init(struct al_gw_relay *r, const char *dir,
		     const struct alq_url *url)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if ((size_t)snprintf(r->path, sizeof(r->path), "%s/audit.jsonl", dir) >=
	    sizeof(r->path))
		return -ENAMETOOLONG;
	/* what is there now was relayed by the keeper before us, or never
	 * will be: start at its end */
	if (stat(r->path, &st) == 0 && S_ISREG(st.st_mode)) {
		r->at = st.st_size;
		r->dev = st.st_dev;
		r->ino = st.st_ino;
	}
	if (url) {
		r->url = *url;
		r->have_url = true;
	}
	return 0;
}

/* The file open, and still the one at the path (a new one, or one cut
 * short, is followed from its start). 0, or -errno (none yet: -ENOENT). */
static int follow(struct al_gw_relay *r)
{
	struct stat st;

	if (stat(r->path, &st) < 0)
		return -errno;
	if (r->fd >= 0 && (st.st_dev != r->dev || st.st_ino != r->ino)) {
		close(r->fd);
		r->fd = -1;
		r->at = 0; /* replaced: the new file from its start */
	}
	if (r->fd < 0) {
		r->fd = open(r->path,
			     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (r->fd < 0)
			return -errno;
		if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(r->fd);
			r->fd = -1;
			return -EINVAL; /* a FIFO or a device is not the log */
		}
		if (st.st_dev != r->dev || st.st_ino != r->ino)
			r->at = 0;
		r->dev = st.st_dev;
		r->ino = st.st_ino;
	}
	if (st.st_size < r->at)
		r->at = 0; /* cut short: read again from its start */
	return 0;
}

/* Connected, or not yet time to try again. */
static bool connected(struct al_gw_relay *r)
{
	int64_t now = mono_ms();

	if (r->up || !r->have_url || now < r->retry_ms)
		return r->up;
	r->retry_ms = now + AL_GW_RELAY_RETRY_MS;
	r->up = alq_client_open(&r->c, &r->url, "packages", 1000) == 0;
	if (!r->up)
		alq_client_close(&r->c);
	return r->up;
}

/* Add one checked record. 0 (added, or refused by Redis: skipped), or
 * -EIO when the connection failed (the record waits). */
static int add(struct al_gw_relay *r, const struct gw_audit *rec,
	       const struct gw_buf *json)
{
	char max[24];
	const char *argv[] = {"XADD",	  GW_AUDIT_STREAM,
			      "MAXLEN",	  "~",
			      max,	  "*",
			      "job",	  rec->job,
			      "decision", rec->allowed ? "allow" : "deny",
			      "record",	  json->data};
	size_t lens[12];
	redisReply *reply;

	snprintf(max, sizeof(max), "%d", GW_AUDIT_STREAM_MAX);
	for (size_t i = 0; i < 12; i++)
		lens[i] = strlen(argv[i]);
	reply = alq_client_command(&r->c, 12, argv, lens);
	if (!reply) {
		alq_client_close(&r->c);
		r->up = false;
		return -EIO;
	}
	if (reply->type == REDIS_REPLY_STRING)
		r->added++;
	else
		r->skipped++;
	freeReplyObject(reply);
	return 0;
}

/* One line (no newline): relayed or skipped. -EIO: Redis down, the line
 * waits. */
static int relay_line(struct al_gw_relay *r, const char *line, size_t len)
{
	struct gw_audit *rec = malloc(sizeof(*rec));
	struct gw_buf json = {0};
	int rc;

	if (!rec)
		return -ENOMEM;
	rc = al_gw_relay_check(line, len, rec, &json);
	if (rc == 0)
		rc = connected(r) ? add(r, rec, &json) : -EIO;
	else if (rc == -EBADMSG)
		r->skipped++;
	gw_buf_release(&json);
	free(rec);
	return rc == -EBADMSG ? 0 : rc;
}

/* The complete lines in buf[0..n): relayed; the bytes consumed. */
static size_t relay_lines(struct al_gw_relay *r, const char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		const char *nl = memchr(buf + done, '\n', n - done);
		size_t len;

		if (!nl)
			break;
		len = (size_t)(nl - (buf + done));
		if (r->junk)
			r->junk = false; /* the end of an over-long line */
		else if (relay_line(r, buf + done, len) < 0)
			break;
		done += len + 1;
	}
	if (done == 0 && n == AL_GW_RELAY_CHUNK) {
		/* no newline in a whole chunk: no record, skip to its end */
		r->junk = true;
		r->skipped++;
		done = n;
	}
	return done;
}

int al_gw_relay_poll(struct al_gw_relay *r)
{
	char *buf;
	ssize_t n;
	uint64_t before = r->added;
	int rc;

	if (!r->have_url)
		return 0;
	rc = follow(r);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	buf = malloc(AL_GW_RELAY_CHUNK);
	if (!buf)
		return -ENOMEM;
	n = pread(r->fd, buf, AL_GW_RELAY_CHUNK, r->at);
	if (n > 0)
		r->at += (off_t)relay_lines(r, buf, (size_t)n);
	rc = n < 0 ? -errno : (int)(r->added - before);
	free(buf);
	return rc;
}

void al_gw_relay_release(struct al_gw_relay *r)
{
	if (r->up)
		alq_client_close(&r->c);
	r->up = false;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	explicit_bzero(&r->url, sizeof(r->url));
}
