/* e2b_envd.c: E2B's in-VM API (envd: spec/envd/process, filesystem and
 * the /files routes) as operations of the session behind the sandbox.
 *
 * A process is an exec of the session: its pid is the exec's number.
 * Start queues the exec (cmd and args as the SDK sends them, /bin/bash
 * -l -c CMD; envs; cwd by a `cd` before it; Connect-Timeout-Ms as the
 * exec's own timeout) and streams its stored output as Connect envelopes
 * (start, data, keepalive, end), read from Redis by offset exactly as
 * the session stream does (session_stream.c): a client that goes away
 * ends only its stream, and Connect {pid} reattaches from byte 0.
 * Filesystem RPCs and /files are short execs of the same session
 * (al_sess_run), the tar path's way: no second file path into the VM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "e2b.h"
#include "results.h"
#include "sessions.h"

#define CHUNK	     (64u << 10) /* bytes of one stream read a round */
#define NAP_MS	     50u
#define KEEPALIVE_MS 5000u
#define LIST_EXECS   64		/* the newest execs List looks at */
#define LS_MAX	     (4u << 20) /* bytes of a listing */

json_t *al_e2b_b64(const uint8_t *p, size_t n)
{
	static const char t[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *s = malloc(4 * ((n + 2) / 3) + 1), *q = s;
	json_t *j;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 |
			     (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		*q++ = t[v >> 18 & 63];
		*q++ = t[v >> 12 & 63];
		*q++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*q++ = i + 2 < n ? t[v & 63] : '=';
	}
	*q = '\0';
	j = json_string(s);
	free(s);
	return j;
}

/* --- answers ------------------------------------------------------------ */

static enum MHD_Result send_raw(struct MHD_Connection *c, unsigned st,
				const char *type, void *buf, size_t len)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(c, st, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_j(struct MHD_Connection *c, unsigned st, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return MHD_NO;
	return send_raw(c, st, "application/json", s, strlen(s));
}

/* A unary RPC's error. */
static enum MHD_Result rpc_err(struct MHD_Connection *c, enum al_connect_code k,
			       const char *msg)
{
	return send_j(c, al_connect_http_status(k), al_connect_error(k, msg));
}

/* A streaming RPC's error: HTTP 200, one end-of-stream envelope. */
static enum MHD_Result stream_err(struct MHD_Connection *c,
				  enum al_connect_code k, const char *msg)
{
	uint8_t *b = NULL;
	size_t n = 0;

	if (al_connect_envelope(
		0x02, json_pack("{so}", "error", al_connect_error(k, msg)), &b,
		&n) < 0)
		return MHD_NO;
	return send_raw(c, 200, "application/connect+json", b, n);
}

static enum connect_map { MAP_UNARY, MAP_STREAM } mapping(enum al_e2b_rpc r)
{
	return al_e2b_rpc_streaming(r) ? MAP_STREAM : MAP_UNARY;
}

static enum MHD_Result fail(struct MHD_Connection *c, enum al_e2b_rpc r,
			    enum al_connect_code k, const char *msg)
{
	return mapping(r) == MAP_STREAM ? stream_err(c, k, msg)
					: rpc_err(c, k, msg);
}

static enum al_connect_code code_of(int x)
{
	return x == -ENOENT || x == -EALREADY ? AL_CONNECT_NOT_FOUND
	       : x == -EINVAL		      ? AL_CONNECT_INVALID_ARGUMENT
	       : x == -E2BIG		      ? AL_CONNECT_RESOURCE_EXHAUSTED
	       : x == -ETIMEDOUT	      ? AL_CONNECT_DEADLINE_EXCEEDED
					      : AL_CONNECT_UNAVAILABLE;
}

/* --- process streams ---------------------------------------------------- */

struct pstream {
	struct alq_client cl;	     /* Redis, this stream's own */
	char id[AL_SESS_ID_MAX + 1]; /* the session */
	uint64_t n;		     /* the exec (pid) */
	uint64_t off[2];	     /* next stdout, stderr offsets */
	uint8_t *buf;		     /* envelopes not yet sent */
	size_t len, sent;	     /* in buf: filled, sent */
	bool ended;		     /* the last envelope is in buf */
	uint64_t last;		     /* al_now_ms() of the last envelope */
	uint64_t deadline;	     /* al_now_ms() to give up, 0 never */
	bool raw; /* stdout as it is (NDJSON of the kernel), no envelopes */
};

/* Up to NAP_MS, less when the exec ends (al_sess_exec_nap). */
static void nap(struct pstream *s)
{
	al_sess_exec_nap(&s->cl, s->id, s->n, NAP_MS);
}

static int event(struct pstream *s, json_t *ev)
{
	s->last = al_now_ms();
	return al_connect_envelope(0, json_pack("{so}", "event", ev), &s->buf,
				   &s->len);
}

/* Output of one stream into a data event; 1 when there was some. */
static int pump(struct pstream *s, int fd)
{
	char *p = NULL;
	size_t l = 0;
	int r = al_sess_exec_read(&s->cl, s->id, s->n, fd, s->off[fd - 1],
				  CHUNK, &p, &l);

	if (r < 0 || l == 0) {
		free(p);
		return r;
	}
	s->off[fd - 1] += l;
	if (s->raw) { /* the kernel client's stdout; its stderr is not
		       * the SDK's (a failed client ends as finish_raw says) */
		uint8_t *b = fd == 1 ? realloc(s->buf, s->len + l) : NULL;

		if (b) {
			s->last = al_now_ms();
			memcpy(b + s->len, p, l);
			s->buf = b;
			s->len += l;
		}
		free(p);
		return fd == 1 && !b ? -ENOMEM : 1;
	}
	r = event(s, json_pack("{s{so}}", "data", fd == 1 ? "stdout" : "stderr",
			       al_e2b_b64((uint8_t *)p, l)));
	free(p);
	return r < 0 ? r : 1;
}

/* The end of a kernel exec: an error line unless it ended OK. */
static int finish_raw(struct pstream *s, const char *st, json_t *x)
{
	json_t *j;
	char *t;
	size_t n;
	uint8_t *b;

	s->ended = true;
	if (!strcmp(st, "OK"))
		return 0;
	j = json_pack("{ssssssss}", "type", "error", "name",
		      !strcmp(st, "TO") ? "TimeoutError" : "KernelError",
		      "value",
		      !strcmp(st, "TO")
			  ? "the execution timed out"
			  : json_string_value(json_object_get(x, "stderr"))
				?: "the kernel ended",
		      "traceback", "");
	t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	n = t ? strlen(t) : 0;
	b = t ? realloc(s->buf, s->len + n + 1) : NULL;
	if (!b) {
		free(t);
		return -ENOMEM;
	}
	memcpy(b + s->len, t, n);
	b[s->len + n] = '\n';
	s->buf = b;
	s->len += n + 1;
	free(t);
	return 0;
}

/* The end of the exec record x: end event, or a deadline error. */
static int finish(struct pstream *s, json_t *x)
{
	const char *st =
	    json_string_value(json_object_get(x, "status")) ?: "XX";
	json_int_t code = json_integer_value(json_object_get(x, "exit_code"));
	json_int_t sig = json_integer_value(json_object_get(x, "signal"));
	json_t *trailer;
	char status[64];
	int r;

	if (s->raw)
		return finish_raw(s, st, x);
	trailer = json_object();
	if (!strcmp(st, "TO")) {
		json_object_set_new(
		    trailer, "error",
		    al_connect_error(AL_CONNECT_DEADLINE_EXCEEDED,
				     "the command's timeout passed"));
	} else {
		if (sig)
			snprintf(status, sizeof(status), "signal: %lld",
				 (long long)sig);
		else
			snprintf(status, sizeof(status), "exit status %lld",
				 (long long)code);
		r = event(s, json_pack("{s{sIsbss}}", "end", "exitCode",
				       sig ? (json_int_t)-1 : code, "exited",
				       !sig, "status", status));
		if (r < 0) {
			json_decref(trailer);
			return r;
		}
	}
	s->ended = true;
	return al_connect_envelope(0x02, trailer, &s->buf, &s->len);
}

/* A line of a type the code interpreter's SDK ignores, so that the
 * connection is never idle for http.timeout_s (a kernel's first start
 * can take that long under load). */
static int keepalive_line(struct pstream *s)
{
	static const char line[] = "{\"type\":\"keepalive\"}\n";
	uint8_t *b = realloc(s->buf, s->len + sizeof(line) - 1);

	if (!b)
		return -ENOMEM;
	memcpy(b + s->len, line, sizeof(line) - 1);
	s->buf = b;
	s->len += sizeof(line) - 1;
	s->last = al_now_ms();
	return 0;
}

/* One round: new output, else the end, else a nap. */
static int round_once(struct pstream *s)
{
	char *xs = NULL;
	json_t *x;
	int a, b, r;

	if ((a = pump(s, 1)) < 0 || (b = pump(s, 2)) < 0)
		return a < 0 ? a : b;
	if (a || b)
		return 0;
	r = al_sess_exec_get(&s->cl, s->id, s->n, &xs);
	if (r < 0)
		return r;
	x = json_loads(xs, JSON_ALLOW_NUL, NULL);
	free(xs);
	if (!strcmp(json_string_value(json_object_get(x, "state")) ?: "",
		    "done")) {
		/* drained above after the record said done? read once more */
		if ((a = pump(s, 1)) == 0 && (b = pump(s, 2)) == 0)
			r = finish(s, x);
		else
			r = a < 0 ? a : b < 0 ? b : 0;
		json_decref(x);
		return r;
	}
	json_decref(x);
	if (s->deadline && al_now_ms() > s->deadline) {
		s->ended = true;
		return al_connect_envelope(
		    0x02,
		    json_pack("{so}", "error",
			      al_connect_error(AL_CONNECT_DEADLINE_EXCEEDED,
					       "deadline exceeded")),
		    &s->buf, &s->len);
	}
	if (al_now_ms() - s->last >= KEEPALIVE_MS)
		return s->raw ? keepalive_line(s)
			      : event(s, json_pack("{s{}}", "keepalive"));
	nap(s);
	return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct pstream *s = cls;
	size_t n;

	(void)pos;
	while (s->sent == s->len) {
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		s->sent = s->len = 0;
		if (round_once(s) < 0) {
			s->ended = true;
			if (s->raw) {
				json_t *e =
				    json_pack("{ssss}", "stderr", s->cl.err,
					      "status", "XX");
				int x = finish_raw(s, "XX", e);

				json_decref(e);
				if (x < 0)
					return MHD_CONTENT_READER_END_WITH_ERROR;
				continue;
			}
			if (al_connect_envelope(
				0x02,
				json_pack(
				    "{so}", "error",
				    al_connect_error(AL_CONNECT_UNAVAILABLE,
						     s->cl.err)),
				&s->buf, &s->len) < 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
	n = s->len - s->sent < max ? s->len - s->sent : max;
	memcpy(out, s->buf + s->sent, n);
	s->sent += n;
	return (ssize_t)n;
}

static void pstream_free(void *cls)
{
	struct pstream *s = cls;

	alq_client_close(&s->cl);
	free(s->buf);
	free(s);
}

enum MHD_Result al_e2b_stream(const struct al_http_opts *o,
			      struct MHD_Connection *c, const char *id,
			      uint64_t n, bool raw, uint64_t timeout_ms)
{
	struct pstream *s = calloc(1, sizeof(*s));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!s)
		return MHD_NO;
	if (alq_client_open(&s->cl, &o->url, o->cfg->queue.name,
			    o->cfg->redis.command_timeout_ms) < 0) {
		pstream_free(s);
		return stream_err(c, AL_CONNECT_UNAVAILABLE,
				  "the queue is unavailable");
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->n = n;
	s->deadline = timeout_ms ? al_now_ms() + timeout_ms + 2000 : 0;
	s->raw = raw;
	s->last = al_now_ms();
	if (!raw &&
	    event(s, json_pack("{s{sI}}", "start", "pid", (json_int_t)n)) < 0) {
		pstream_free(s);
		return MHD_NO;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 << 10,
					      reader, s, pstream_free);
	if (!r) {
		pstream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				raw ? "application/x-ndjson"
				    : "application/connect+json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* The pid of {"process": {"pid": N}} (0: none). */
static uint64_t pid_of(json_t *m)
{
	json_t *p = json_object_get(json_object_get(m, "process"), "pid");

	return json_is_integer(p) && json_integer_value(p) > 0
		   ? (uint64_t)json_integer_value(p)
		   : 0;
}

/* The exec body of a StartRequest's process config, or NULL. */
static json_t *exec_body(json_t *m, uint64_t timeout_ms)
{
	json_t *p = json_object_get(m, "process"), *args, *cmd, *v;
	const char *bin = json_string_value(json_object_get(p, "cmd"));
	const char *cwd = json_string_value(json_object_get(p, "cwd"));
	size_t i;

	if (!bin || !*bin)
		return NULL;
	cmd = cwd && *cwd
		  ? json_pack("[ssss]", "/bin/sh", "-c",
			      "cd -- \"$1\" && shift && exec \"$@\"", "e2b")
		  : json_array();
	if (cwd && *cwd)
		json_array_append_new(cmd, json_string(cwd));
	json_array_append_new(cmd, json_string(bin));
	args = json_object_get(p, "args");
	json_array_foreach(args, i, v)
	{
		if (!json_is_string(v)) {
			json_decref(cmd);
			return NULL;
		}
		json_array_append(cmd, v);
	}
	return json_pack(
	    "{s:o,s:o,s:I}", "cmd", cmd, "env",
	    json_is_object(json_object_get(p, "envs"))
		? json_incref(json_object_get(p, "envs"))
		: json_object(),
	    "timeout_ms",
	    (json_int_t)(timeout_ms ? timeout_ms : AL_TIMEOUT_MS_MAX));
}

static uint64_t timeout_header(struct MHD_Connection *c)
{
	const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Connect-Timeout-Ms");
	unsigned long long v = t ? strtoull(t, NULL, 10) : 0;

	return v > AL_TIMEOUT_MS_MAX ? AL_TIMEOUT_MS_MAX : v;
}

static enum MHD_Result proc_start(const struct al_http_opts *o,
				  struct MHD_Connection *c,
				  struct alq_client *cl, const char *id,
				  json_t *m)
{
	uint64_t to = timeout_header(c), n;
	json_t *b = exec_body(m, to);
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	int r;

	json_decref(b);
	if (!text)
		return stream_err(c, AL_CONNECT_INVALID_ARGUMENT,
				  "process.cmd (a string) and args (strings) "
				  "are required");
	r = al_sess_exec_start(cl, id, text, 0, &n);
	free(text);
	if (r < 0)
		return stream_err(c, code_of(r), cl->err);
	return al_e2b_stream(o, c, id, n, false, to);
}

static enum MHD_Result proc_connect(const struct al_http_opts *o,
				    struct MHD_Connection *c,
				    struct alq_client *cl, const char *id,
				    json_t *m)
{
	uint64_t n = pid_of(m);
	char *xs = NULL;
	int r;

	if (!n)
		return stream_err(c, AL_CONNECT_INVALID_ARGUMENT,
				  "process.pid is required");
	r = al_sess_exec_get(cl, id, n, &xs);
	free(xs);
	if (r < 0)
		return stream_err(c, AL_CONNECT_NOT_FOUND, "process not found");
	return al_e2b_stream(o, c, id, n, false, 0);
}

static enum MHD_Result proc_signal(struct MHD_Connection *c,
				   struct alq_client *cl, const char *id,
				   json_t *m)
{
	const char *sig = json_string_value(json_object_get(m, "signal"));
	uint64_t n = pid_of(m);
	char *rep = NULL;
	int r;

	if (!n || !sig)
		return rpc_err(c, AL_CONNECT_INVALID_ARGUMENT,
			       "process.pid and signal are required");
	r = al_sess_exec_signal(
	    cl, id, n, !strcmp(sig, "SIGNAL_SIGTERM") ? "TERM" : "KILL",
	    !strcmp(sig, "SIGNAL_SIGTERM") ? -1 : 0, &rep);
	free(rep);
	if (r < 0)
		return rpc_err(c, code_of(r), "process not found");
	return send_j(c, 200, json_object());
}

/* Running execs among the newest LIST_EXECS, as ProcessInfo. */
static enum MHD_Result proc_list(struct MHD_Connection *c,
				 struct alq_client *cl, const char *id)
{
	json_t *out = json_array(), *rec;
	char *text = NULL;
	json_int_t k;

	if (al_sess_get(cl, id, &text) < 0) {
		free(text);
		json_decref(out);
		return rpc_err(c, AL_CONNECT_NOT_FOUND, "sandbox not found");
	}
	rec = json_loads(text, 0, NULL);
	free(text);
	k = json_integer_value(json_object_get(rec, "execs"));
	json_decref(rec);
	for (json_int_t n = k > LIST_EXECS ? k - LIST_EXECS + 1 : 1; n <= k;
	     n++) {
		json_t *x;

		if (al_sess_exec_get(cl, id, (uint64_t)n, &text) < 0) {
			free(text);
			continue;
		}
		x = json_loads(text, JSON_ALLOW_NUL, NULL);
		free(text);
		if (!strcmp(json_string_value(json_object_get(x, "state"))
				?: "",
			    "running"))
			json_array_append_new(out,
					      json_pack("{sIs{ss}}", "pid", n,
							"config", "cmd", ""));
		json_decref(x);
	}
	return send_j(c, 200, json_pack("{so}", "processes", out));
}

/* --- filesystem --------------------------------------------------------- */

#define ENTRY_FMT  "%y\\t%s\\t%m\\t%u\\t%g\\t%T@\\t%p\\t%l\\0"
#define FILE_CHUNK (4u << 20)

/* One find -printf ENTRY_FMT record as EntryInfo, or NULL. */
static json_t *entry(char *rec)
{
	char *f[8], *save = NULL, mt[40];
	size_t k = 0;
	const char *base;
	time_t t;
	struct tm tm;

	for (char *p = strtok_r(rec, "\t", &save); p && k < 8;
	     p = strtok_r(NULL, "\t", &save))
		f[k++] = p;
	if (k < 7)
		return NULL;
	t = (time_t)strtoll(f[5], NULL, 10);
	gmtime_r(&t, &tm);
	strftime(mt, sizeof(mt), "%Y-%m-%dT%H:%M:%SZ", &tm);
	base = strrchr(f[6], '/') ? strrchr(f[6], '/') + 1 : f[6];
	return json_pack(
	    "{ss,ss,ss,sI,si,ss,ss,ss,ss}", "name", base, "type",
	    f[0][0] == 'd' ? "FILE_TYPE_DIRECTORY" : "FILE_TYPE_FILE", "path",
	    f[6], "size", (json_int_t)strtoll(f[1], NULL, 10), "mode",
	    (int)strtol(f[2], NULL, 8), "permissions", f[2], "owner", f[3],
	    "group", f[4], "modifiedTime", mt);
}

/* Run a filesystem script; its records as EntryInfo into *ret (an array).
 * A script prints NOENT, EXISTS or NOTDIR for those refusals. */
static enum al_connect_code fs_run(struct alq_client *cl, const char *id,
				   const char *script, const char *a1,
				   const char *a2, json_t **ret)
{
	char *out = NULL;
	size_t len = 0;
	int r = al_sess_run(cl, id, "e2b", script, a1, a2, NULL, NULL, 0, &out,
			    &len, LS_MAX);

	*ret = NULL;
	if (r < 0)
		return code_of(r == -EIO ? -EINVAL : r);
	if (!strcmp(out, "NOENT") || !strcmp(out, "EXISTS") ||
	    !strcmp(out, "NOTDIR")) {
		enum al_connect_code k =
		    out[0] == 'N' && out[2] == 'E' ? AL_CONNECT_NOT_FOUND
		    : out[0] == 'E'		   ? AL_CONNECT_ALREADY_EXISTS
				    : AL_CONNECT_INVALID_ARGUMENT;
		free(out);
		return k;
	}
	*ret = json_array();
	for (size_t i = 0; i < len;) {
		size_t n = strnlen(out + i, len - i);

		if (n)
			json_array_append_new(*ret, entry(out + i));
		i += n + 1;
	}
	free(out);
	return AL_CONNECT_OK;
}

static const struct {
	enum al_e2b_rpc rpc;
	const char *a1, *a2; /* request fields */
	const char *script;
} fs_ops[] = {
    {AL_E2B_FS_STAT, "path", NULL,
     "[ -e \"$1\" ] || [ -L \"$1\" ] || { printf NOENT; exit 0; }; "
     "find \"$1\" -maxdepth 0 -printf '" ENTRY_FMT "'"},
    {AL_E2B_FS_LIST_DIR, "path", NULL,
     "[ -e \"$1\" ] || { printf NOENT; exit 0; }; "
     "[ -d \"$1\" ] || { printf NOTDIR; exit 0; }; "
     "find \"$1\" -mindepth 1 -maxdepth \"${2:-1}\" -printf '" ENTRY_FMT "'"},
    {AL_E2B_FS_MAKE_DIR, "path", NULL,
     "[ -e \"$1\" ] && { printf EXISTS; exit 0; }; mkdir -p -- \"$1\" && "
     "find \"$1\" -maxdepth 0 -printf '" ENTRY_FMT "'"},
    {AL_E2B_FS_MOVE, "source", "destination",
     "[ -e \"$1\" ] || { printf NOENT; exit 0; }; mkdir -p -- "
     "\"$(dirname -- \"$2\")\" && mv -- \"$1\" \"$2\" && "
     "find \"$2\" -maxdepth 0 -printf '" ENTRY_FMT "'"},
    {AL_E2B_FS_REMOVE, "path", NULL,
     "[ -e \"$1\" ] || [ -L \"$1\" ] || { printf NOENT; exit 0; }; "
     "rm -rf -- \"$1\""},
};

static enum MHD_Result fs(struct MHD_Connection *c, struct alq_client *cl,
			  const char *id, enum al_e2b_rpc rpc, json_t *m)
{
	char depth[12] = "1";
	const char *a1, *a2 = NULL;
	enum al_connect_code k;
	json_t *ents;
	size_t i = 0;

	while (fs_ops[i].rpc != rpc)
		i++;
	a1 = json_string_value(json_object_get(m, fs_ops[i].a1));
	if (fs_ops[i].a2)
		a2 = json_string_value(json_object_get(m, fs_ops[i].a2));
	if (!a1 || !*a1 || (fs_ops[i].a2 && (!a2 || !*a2)))
		return rpc_err(c, AL_CONNECT_INVALID_ARGUMENT,
			       "a path is required");
	if (rpc == AL_E2B_FS_LIST_DIR) {
		json_int_t d = json_integer_value(json_object_get(m, "depth"));

		snprintf(depth, sizeof(depth), "%lld",
			 (long long)(d > 0 && d < 64 ? d : 1));
		a2 = depth;
	}
	k = fs_run(cl, id, fs_ops[i].script, a1, a2, &ents);
	if (k != AL_CONNECT_OK)
		return rpc_err(c, k,
			       k == AL_CONNECT_NOT_FOUND ? "path not found"
			       : k == AL_CONNECT_ALREADY_EXISTS
				   ? "path already exists"
				   : cl->err);
	if (rpc == AL_E2B_FS_LIST_DIR)
		return send_j(c, 200, json_pack("{so}", "entries", ents));
	if (rpc == AL_E2B_FS_REMOVE) {
		json_decref(ents);
		return send_j(c, 200, json_object());
	}
	{
		json_t *e = json_incref(json_array_get(ents, 0));

		json_decref(ents);
		return send_j(c, 200, json_pack("{so*}", "entry", e));
	}
}

/* --- /files ------------------------------------------------------------- */

static enum MHD_Result files_err(struct MHD_Connection *c, unsigned st,
				 const char *msg)
{
	return send_j(c, st, json_pack("{siss}", "code", st, "message", msg));
}

static enum MHD_Result files_get(struct MHD_Connection *c,
				 struct alq_client *cl, const char *id,
				 const char *path)
{
	char *s = NULL, a[24], b[24];
	uint8_t *buf;
	size_t l = 0, got = 0;
	unsigned long long total;
	int r = al_sess_run(cl, id, "e2b",
			    "[ -e \"$1\" ] || { printf NOENT; "
			    "exit 0; }; [ -d \"$1\" ] && { printf ISDIR; exit "
			    "0; }; wc -c < \"$1\"",
			    path, NULL, NULL, NULL, 0, &s, &l, 64);

	if (r < 0)
		return files_err(c, 500, cl->err);
	if (!strcmp(s, "NOENT") || !strcmp(s, "ISDIR")) {
		r = s[0] == 'N';
		free(s);
		return files_err(c, r ? 404 : 400,
				 r ? "path not found" : "path is a directory");
	}
	total = strtoull(s, NULL, 10);
	free(s);
	if (total > AL_E2B_FILE_MAX)
		return files_err(c, 413, "file over the door's cap (64 MiB)");
	buf = malloc(total ? total : 1);
	while (buf && got < total) {
		snprintf(a, sizeof(a), "%zu", got + 1);
		snprintf(b, sizeof(b), "%llu",
			 total - got > FILE_CHUNK ? FILE_CHUNK : total - got);
		r = al_sess_run(cl, id, "e2b",
				"tail -c +\"$2\" -- \"$1\" | head -c \"$3\"",
				path, a, b, NULL, 0, &s, &l, FILE_CHUNK);
		if (r < 0 || l == 0 || l > total - got) {
			free(s);
			free(buf);
			return files_err(c, 500,
					 r < 0 ? cl->err : "file changed");
		}
		memcpy(buf + got, s, l);
		free(s);
		got += l;
	}
	if (!buf)
		return MHD_NO;
	return send_raw(c, 200, "application/octet-stream", buf, total);
}

/* The first part of a multipart/form-data body: its bytes. */
static int multipart(const char *ctype, const char *body, size_t len,
		     const char **ret, size_t *ret_len)
{
	const char *bd = strstr(ctype, "boundary=");
	char delim[128];
	const char *p, *e;
	int n;

	if (!bd)
		return -EINVAL;
	bd += 9;
	if (*bd == '"')
		bd++;
	n = snprintf(delim, sizeof(delim), "\r\n--%.*s",
		     (int)strcspn(bd, "\";"), bd);
	if (n < 0 || (size_t)n >= sizeof(delim))
		return -EINVAL;
	p = memmem(body, len, "\r\n\r\n", 4);
	if (!p)
		return -EINVAL;
	p += 4;
	e = memmem(p, len - (size_t)(p - body), delim, (size_t)n);
	if (!e)
		return -EINVAL;
	*ret = p;
	*ret_len = (size_t)(e - p);
	return 0;
}

static enum MHD_Result files_post(struct MHD_Connection *c,
				  struct alq_client *cl, const char *id,
				  const char *path, const char *body,
				  size_t len)
{
	const char *ct = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *data = body ? body : "";
	size_t n = len, off = 0;
	int r;

	if (ct && !strncmp(ct, "multipart/form-data", 19) &&
	    multipart(ct, data, len, &data, &n) < 0)
		return files_err(c, 400, "a bad multipart body");
	do {
		size_t k = n - off > FILE_CHUNK ? FILE_CHUNK : n - off;

		r = al_sess_run(cl, id, "e2b",
				off ? "cat >> \"$1\""
				    : "mkdir -p -- \"$(dirname -- \"$1\")\" && "
				      "cat > \"$1\"",
				path, NULL, NULL, (const uint8_t *)data + off,
				k, NULL, NULL, 0);
		off += k;
	} while (r == 0 && off < n);
	if (r < 0)
		return files_err(c, 400, cl->err);
	return send_j(
	    c, 200,
	    json_pack("[{ssssss}]", "name",
		      strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
		      "type", "file", "path", path));
}

/* --- dispatch ----------------------------------------------------------- */

enum MHD_Result al_e2b_envd(const struct al_http_opts *o,
			    struct MHD_Connection *c, struct alq_client *cl,
			    const char *id, const char *method, const char *url,
			    const char *body, size_t len)
{
	enum al_e2b_rpc rpc;
	enum al_connect_code k;
	unsigned http;
	char msg[160];
	json_t *m = NULL;
	enum MHD_Result ret;

	if (!strcmp(url, "/files")) {
		const char *p = MHD_lookup_connection_value(
		    c, MHD_GET_ARGUMENT_KIND, "path");

		if (!p || !*p)
			return files_err(c, 400, "path is required");
		if (!strcmp(method, "GET"))
			return files_get(c, cl, id, p);
		if (!strcmp(method, "POST"))
			return files_post(c, cl, id, p, body, len);
		return files_err(c, 405, "method not allowed");
	}
	if (!strcmp(url, "/health"))
		return send_raw(c, 204, "text/plain", NULL, 0);
	if (al_e2b_rpc_route(url, &rpc) < 0)
		return rpc_err(c, AL_CONNECT_NOT_FOUND, "no such service");
	if (strcmp(method, "POST"))
		return rpc_err(c, AL_CONNECT_UNIMPLEMENTED, "POST only");
	k = al_connect_decode(
	    rpc,
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					"Connect-Protocol-Version"),
	    (const uint8_t *)(body ? body : ""), len, &m, &http, msg,
	    sizeof(msg));
	if (k != AL_CONNECT_OK)
		return http == 415 ? send_j(c, 415, al_connect_error(k, msg))
				   : fail(c, rpc, k, msg);
	switch (rpc) {
	case AL_E2B_PROC_START:
		ret = proc_start(o, c, cl, id, m);
		break;
	case AL_E2B_PROC_CONNECT:
		ret = proc_connect(o, c, cl, id, m);
		break;
	case AL_E2B_PROC_LIST:
		ret = proc_list(c, cl, id);
		break;
	case AL_E2B_PROC_SEND_SIGNAL:
		ret = proc_signal(c, cl, id, m);
		break;
	case AL_E2B_PROC_SEND_INPUT:
	case AL_E2B_PROC_CLOSE_STDIN:
		ret = rpc_err(c, AL_CONNECT_UNIMPLEMENTED,
			      "stdin is given at start: a session exec's "
			      "stdin cannot be written while it runs");
		break;
	default:
		ret = fs(c, cl, id, rpc, m);
		break;
	}
	json_decref(m);
	return ret;
}
