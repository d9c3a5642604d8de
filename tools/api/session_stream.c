/* session_stream.c: an exec's output as a streaming HTTP response
 * (docs/sessions.md, "Streaming exec over HTTP").
 *
 * POST /sessions/{id}/exec?stream=1 and GET /sessions/{id}/exec/{n}
 * ?stream=1&offset=B&err_offset=B answer with NDJSON (one JSON object a
 * line, `application/x-ndjson`, chunked transfer): first
 * {"exec": N, "offset": B, "err_offset": B, "expires_at": ...}, then
 * {"fd": 1|2, "offset": B, "data": STR|{"base64": ...}} for each piece of
 * output as the session stores it, {"heartbeat": true, ...} after 5 s of
 * silence, and last the exec record itself ("state": "done", status,
 * exit_code, ..., the session's expires_at as it is then), or
 * {"error": ...} when the session ended without it.
 * curl -N prints the lines as they come; Python's http.client reads them
 * with resp.readline().
 *
 * Thread model. The API runs libmicrohttpd with a thread per connection;
 * MHD calls reader() on that connection's thread whenever it can send,
 * and reader() blocks there (50 ms naps, never longer than the heartbeat)
 * until it has a line: no other connection waits for it. Each stream owns
 * a Redis connection of its own (the handler's is closed when it
 * returns) and reads what the session process stored: the exec record,
 * then GETRANGE of each stream from its offset (al_sess_exec_read), at
 * most CHUNK bytes a stream a round. Nothing here talks to the session
 * process, so a client that goes away (noticed at the next write, the
 * heartbeat at the latest) only ends its own stream: the exec runs on
 * and a reattach from the last offset it got reads every byte once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "session_stream.h"
#include "sessions.h"

#define CHUNK	     (64u << 10) /* bytes of one stream read a round */
#define NAP_MS	     50u	 /* between rounds with nothing new */
#define HEARTBEAT_MS 5000u	 /* a line at least this often */
#define LIVE_MS	     1000u	 /* re-check the session this often */

struct sstream {
	struct alq_client cl;	       /* Redis, this stream's own */
	char id[AL_SESS_ID_MAX + 1];   /* the session */
	uint64_t n;		       /* the exec */
	uint64_t off[2];	       /* next stdout, stderr offsets */
	char *buf;		       /* lines not yet sent */
	size_t len, sent, cap;	       /* in buf: filled, sent, allocated */
	bool ended;		       /* the last line is in buf */
	uint64_t last_line, last_live; /* al_now_ms() of each */
};

/* Up to NAP_MS, less when the exec ends (al_sess_exec_nap). */
static void nap(struct sstream *s)
{
	al_sess_exec_nap(&s->cl, s->id, s->n, NAP_MS);
}

/* Append `j` (consumed) as one line; -ENOMEM. */
static int put_line(struct sstream *s, json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	size_t n;

	json_decref(j);
	if (!t)
		return -ENOMEM;
	n = strlen(t);
	if (s->len + n + 1 > s->cap) {
		size_t cap = (s->len + n + 1) * 2;
		char *b = realloc(s->buf, cap);

		if (!b) {
			free(t);
			return -ENOMEM;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, t, n);
	s->buf[s->len + n] = '\n';
	s->len += n + 1;
	free(t);
	s->last_line = al_now_ms();
	return 0;
}

static void end_with_error(struct sstream *s, const char *msg)
{
	put_line(s, json_pack("{s:s,s:I,s:I,s:I}", "error", msg, "exec",
			      (json_int_t)s->n, "offset", (json_int_t)s->off[0],
			      "err_offset", (json_int_t)s->off[1]));
	s->ended = true;
}

/* New output of stream fd (1, 2) as a line; 1 when there was some. */
static int read_stream(struct sstream *s, int fd)
{
	char *data = NULL;
	size_t len = 0;
	uint64_t *off = &s->off[fd - 1];
	int r = al_sess_exec_read(&s->cl, s->id, s->n, fd, *off, CHUNK, &data,
				  &len);

	if (r < 0)
		return r;
	if (len)
		r = put_line(s, json_pack("{s:i,s:I,s:o}", "fd", fd, "offset",
					  (json_int_t)*off, "data",
					  al_sess_blob_json(data, len)));
	free(data);
	if (r < 0)
		return r;
	*off += len;
	return len ? 1 : 0;
}

/* One round: the record's state first, then each stream; the record as
 * the last line once it was done before the streams were read (so they
 * were complete). 1 when a line was added. */
static int round_once(struct sstream *s)
{
	char *text = NULL;
	json_t *x;
	bool done;
	int got = 0, r;

	r = al_sess_exec_get(&s->cl, s->id, s->n, &text);
	if (r < 0) {
		end_with_error(s, s->cl.err);
		return 1;
	}
	x = json_loads(text, 0, NULL);
	free(text);
	done =
	    x && !strcmp(json_string_value(json_object_get(x, "state")) ?: "",
			 "done");
	for (int fd = 1; fd <= 2; fd++) {
		r = read_stream(s, fd);
		if (r < 0) {
			json_decref(x);
			end_with_error(s, s->cl.err[0] ? s->cl.err
						       : "read failed");
			return 1;
		}
		got |= r;
	}
	if (done && !got) {
		json_object_set_new(x, "offset",
				    json_integer((json_int_t)s->off[0]));
		json_object_set_new(x, "err_offset",
				    json_integer((json_int_t)s->off[1]));
		if (put_line(s, x) < 0)
			end_with_error(s, "out of memory");
		s->ended = true;
		return 1;
	}
	json_decref(x);
	return got;
}

/* Does record text `rec` say state "ended"? Parsed, not searched: its
 * metadata may hold any string. */
static bool ended(const char *rec)
{
	json_t *j = json_loads(rec, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "state"));
	bool e = !j || (st && !strcmp(st, "ended"));

	json_decref(j);
	return e;
}

/* Wait for the next line(s): output, the end, a heartbeat, or the
 * session gone (an exec of a `lost` session never ends by itself). */
static void fill(struct sstream *s)
{
	for (;;) {
		uint64_t now;

		if (round_once(s))
			return;
		now = al_now_ms();
		if (now - s->last_live >= LIVE_MS) {
			char *rec = NULL;

			s->last_live = now;
			if (al_sess_get(&s->cl, s->id, &rec) < 0 ||
			    ended(rec)) {
				/* the record may have been written just now */
				if (round_once(s))
					return;
				end_with_error(s, rec ? "the session ended"
						      : s->cl.err);
				free(rec);
				return;
			}
			free(rec);
		}
		if (now - s->last_line >= HEARTBEAT_MS) {
			put_line(s, json_pack("{s:b,s:I,s:I}", "heartbeat", 1,
					      "offset", (json_int_t)s->off[0],
					      "err_offset",
					      (json_int_t)s->off[1]));
			return;
		}
		nap(s);
	}
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct sstream *s = cls;
	size_t n;

	(void)pos;
	if (s->sent == s->len) {
		s->sent = s->len = 0;
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		fill(s);
		if (!s->len)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = s->len - s->sent < max ? s->len - s->sent : max;
	memcpy(out, s->buf + s->sent, n);
	s->sent += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct sstream *s = cls;

	alq_client_close(&s->cl);
	free(s->buf);
	free(s);
}

bool al_http_session_stream_wanted(struct MHD_Connection *c)
{
	const char *q =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stream");
	const char *a =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");

	return (q && (!strcmp(q, "1") || !strcmp(q, "true"))) ||
	       (a && strstr(a, "application/x-ndjson"));
}

enum MHD_Result al_http_session_stream(const struct al_http_opts *o,
				       struct MHD_Connection *c,
				       const char *principal, const char *id,
				       uint64_t n, uint64_t off1, uint64_t off2,
				       unsigned status)
{
	struct sstream *s = calloc(1, sizeof(*s));
	struct MHD_Response *r;
	enum MHD_Result ret;
	json_t *first = NULL;

	if (!s)
		return MHD_NO;
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->n = n;
	s->off[0] = off1;
	s->off[1] = off2;
	s->last_live = al_now_ms();
	if (alq_client_open(&s->cl, &o->url, o->cfg->queue.name,
			    o->cfg->redis.command_timeout_ms) < 0) {
		stream_free(s);
		return MHD_NO;
	}
	snprintf(s->cl.principal, sizeof(s->cl.principal), "%s", principal);
	first = json_pack("{s:I,s:I,s:I}", "exec", (json_int_t)n, "offset",
			  (json_int_t)off1, "err_offset", (json_int_t)off2);
	if (first)
		al_sess_expiry(&s->cl, id, first);
	if (put_line(s, first) < 0) { /* consumes first */
		stream_free(s);
		return MHD_NO;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
					      reader, s, stream_free);
	if (!r) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}
