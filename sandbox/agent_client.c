/* agent_client.c: typed, deadline-bound calls to the guest agent.
 *
 * One request, then frames until the reply: `out` chunks (run_step only)
 * go to the caller's callback, anything else must be the expected reply or
 * `error`. The whole exchange shares one deadline, so a guest that trickles
 * bytes or streams output forever still ends at the timeout; streamed
 * output is also capped in total. Guest text never reaches a log raw: the
 * `error` message is escaped and truncated here.
 *
 * Output budget. The guest keeps the first `output_bytes` of each stream
 * and kills a step that writes more (OL), but a guest is not trusted to:
 * the host applies the same cut itself. Streamed chunks past the cap are
 * counted, not passed on; the `exit` reply's streams are cut to the cap
 * and the memory past it handed back (realloc), marked truncated, and the
 * step made OL. The largest a reply can be in flight is one frame
 * (AL_FRAME_MAX, and AL_OUTPUT_MAX per stream once decoded); what a step
 * keeps is at most its cap per stream. A `files` reply is checked against
 * the request: a path not asked for (or sent twice) is dropped, and more
 * bytes than `max_bytes` refuse the whole reply (-EMSGSIZE).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_client.h"
#include "util.h"

/* A step can keep at most AL_OUTPUT_MAX per stream; streaming more than
 * this in all is a misbehaving guest. */
#define STREAM_MAX (2 * (uint64_t)AL_OUTPUT_MAX + (1u << 20))

void sb__agent_client_init(struct sb__agent_client *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	al_frame_reader_init(&c->rd, AL_FRAME_MAX);
}

void sb__agent_client_release(struct sb__agent_client *c)
{
	al_frame_reader_release(&c->rd);
	c->fd = -1;
}

/* Keep printable ASCII of the guest's text, at most ERROR_MAX bytes. */
static void keep_error(struct sb__agent_client *c, const char *msg)
{
	size_t i;

	for (i = 0; msg && msg[i] && i < AL_AGENT_CLIENT_ERROR_MAX; i++)
		c->error[i] = msg[i] >= 0x20 && msg[i] < 0x7f ? msg[i] : '?';
	c->error[i] = '\0';
}

static int send_all(struct sb__agent_client *c, const char *buf, size_t len,
		    struct al_deadline d)
{
	struct pollfd p = {c->fd, POLLOUT, 0};
	ssize_t n;

	while (len) {
		n = send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(c->fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno == ECONNRESET ? -EPIPE : -errno;
		n = poll(&p, 1, al_deadline_poll_ms(d));
		if (n == 0)
			return -ETIMEDOUT;
		if (n > 0 && (p.revents & (POLLERR | POLLNVAL)))
			return -EPIPE;
	}
	return 0;
}

/* Read until one frame is complete, then decode it. */
static int recv_msg(struct sb__agent_client *c, struct al_deadline d,
		    struct al_msg *ret)
{
	static __thread uint8_t buf[64u << 10];
	size_t want, len;
	uint8_t *body;
	ssize_t n;
	int r;

	while (!al_frame_reader_ready(&c->rd)) {
		want = al_frame_reader_want(&c->rd);
		n = sb__read_deadline(
		    c->fd, buf, want < sizeof(buf) ? want : sizeof(buf), d);
		if (n == 0 || n == -ECONNRESET)
			return -EPIPE;
		if (n < 0)
			return (int)n;
		r = (int)al_frame_reader_feed(&c->rd, buf, (size_t)n);
		if (r < 0)
			return r;
	}
	r = al_frame_reader_take(&c->rd, &body, &len);
	if (r < 0)
		return r;
	r = al_msg_decode(body, len, ret, NULL);
	free(body);
	return r;
}

/* Where a run_step's `out` chunks go. */
struct sink {
	al_agent_out_fn fn; /* caller's callback, may be NULL */
	void *opaque;	    /* its argument */
	uint64_t cap;	    /* bytes passed on per stream */
	uint64_t seen[2];   /* bytes received per stream (stdout, stderr) */
	uint64_t total;	    /* bytes received in all */
	al_agent_tick_fn tick;	   /* while it runs, may be NULL */
	void *tick_opaque;	   /* its argument */
	struct al_deadline next;   /* when tick is due */
};

/* The step's tick is due: ask it, and send the signal it wants (only to
 * an agent that takes `signal`, proto.h v4). 0 or a send's -errno. */
static int sink_tick(struct sb__agent_client *c, struct sink *s,
		     struct al_deadline d)
{
	struct al_msg m = {.type = AL_MSG_SIGNAL};
	uint32_t sig = 0, grace = 0;
	char *buf = NULL;
	size_t len;
	int r;

	s->next = al_deadline_in(AL_AGENT_TICK_MS);
	if (s->tick(s->tick_opaque, &sig, &grace) <= 0 ||
	    c->v < AL_PROTO_SIGNAL_V)
		return 0;
	m.u.signal.sig = sig;
	m.u.signal.grace_ms = grace;
	if (al_msg_encode(&m, &buf, &len) < 0)
		return 0; /* a bad signal number: nothing sent */
	r = send_all(c, buf, len, d);
	free(buf);
	return r;
}

/* Count a chunk; pass on what fits under the stream's cap. */
static int sink_take(struct sink *s, const struct al_msg_out *o)
{
	int i = o->fd == 2;
	uint64_t room = s->seen[i] < s->cap ? s->cap - s->seen[i] : 0;
	size_t k = o->data.len < room ? o->data.len : (size_t)room;

	s->total += o->data.len;
	s->seen[i] += o->data.len;
	if (s->total > STREAM_MAX)
		return -EPROTO;
	if (k && s->fn)
		s->fn(s->opaque, (int)o->fd, o->data.data, k);
	return 0;
}

/* Send `req`, stream `out` chunks into `sink` (run_step only), and wait
 * for a reply of type `want` (left in *ret) or `error` (-EPROTO). */
static int call(struct sb__agent_client *c, const struct al_msg *req,
		enum al_msg_type want, struct sink *sink, int timeout_ms,
		struct al_msg *ret)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	struct al_msg m = {0};
	char *buf = NULL;
	size_t len;
	int r;

	c->error[0] = '\0';
	if (c->broken || c->fd < 0)
		return -EPIPE;
	r = al_msg_encode(req, &buf, &len);
	if (r < 0)
		return r; /* nothing sent: still usable */
	r = send_all(c, buf, len, d);
	free(buf);
	if (sink && sink->tick)
		sink->next = al_deadline_in(AL_AGENT_TICK_MS);
	while (r == 0) {
		bool ticks = sink && sink->tick;

		r = recv_msg(c, ticks ? al_deadline_min(d, sink->next) : d, &m);
		if (r == -ETIMEDOUT && ticks && !al_deadline_passed(d)) {
			r = sink_tick(c, sink, d);
			continue;
		}
		if (r < 0 || m.type != AL_MSG_OUT || !sink)
			break;
		r = sink_take(sink, &m.u.out);
		if (r < 0)
			break;
		al_msg_release(&m);
		if (ticks && al_deadline_passed(sink->next))
			r = sink_tick(c, sink, d);
	}
	if (r == 0 && m.type == want) {
		*ret = m;
		return 0;
	}
	if (r == 0 && m.type == AL_MSG_ERROR) {
		keep_error(c, m.u.error.msg);
		al_msg_release(&m);
		return -EPROTO; /* the exchange completed: still usable */
	}
	if (r == 0)
		r = -EPROTO;
	al_msg_release(&m);
	c->broken = true;
	return r;
}

/* A request whose only good reply carries no data. */
static int call_simple(struct sb__agent_client *c, const struct al_msg *req,
		       enum al_msg_type want, int timeout_ms)
{
	struct al_msg rep;
	int r;

	r = call(c, req, want, NULL, timeout_ms, &rep);
	if (r == 0)
		al_msg_release(&rep);
	return r;
}

int sb__agent_client_hello(struct sb__agent_client *c, int timeout_ms,
			   struct al_msg_hello *ret)
{
	struct al_msg req = {.type = AL_MSG_HELLO}, rep;
	int r;

	r = call(c, &req, AL_MSG_HELLO, NULL, timeout_ms, &rep);
	if (r < 0)
		return r;
	if (rep.u.hello.v == 0) {
		al_msg_release(&rep);
		c->broken = true;
		return -EPROTO;
	}
	c->v = rep.u.hello.v;
	*ret = rep.u.hello;
	return 0;
}

void sb__agent_client_hello_release(struct al_msg_hello *h)
{
	free(h->agent);
	free(h->kernel);
	free(h->template_);
	memset(h, 0, sizeof(*h));
}

int sb__agent_client_reseed(struct sb__agent_client *c, const void *entropy,
			    size_t len, uint64_t time_ns, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_RESEED};

	if (len < AL_ENTROPY_MIN || len > AL_ENTROPY_MAX)
		return -EINVAL;
	req.u.reseed.entropy.data = (uint8_t *)entropy;
	req.u.reseed.entropy.len = len;
	req.u.reseed.time_ns = time_ns;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

int sb__agent_client_setup(struct sb__agent_client *c,
			   const struct al_limits *limits, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_SETUP};

	req.u.setup.limits = *limits;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

int sb__agent_client_setup_reseed(struct sb__agent_client *c,
				  const struct al_limits *limits,
				  const void *entropy, size_t len,
				  uint64_t time_ns, int timeout_ms,
				  bool *reseeded)
{
	struct al_msg req = {.type = AL_MSG_SETUP}, rep;
	int r;

	*reseeded = false;
	if (len < AL_ENTROPY_MIN || len > AL_ENTROPY_MAX || !time_ns)
		return -EINVAL;
	req.u.setup.limits = *limits;
	req.u.setup.entropy.data = (uint8_t *)entropy;
	req.u.setup.entropy.len = len;
	req.u.setup.time_ns = time_ns;
	r = call(c, &req, AL_MSG_OK, NULL, timeout_ms, &rep);
	if (r < 0)
		return r;
	*reseeded = rep.u.ok.reseeded; /* false: a v1 agent ignored it */
	al_msg_release(&rep);
	return 0;
}

int sb__agent_client_put_files(struct sb__agent_client *c,
			       const struct al_file *files, size_t n,
			       int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_PUT_FILES};

	if (n > AL_FILES_MAX)
		return -E2BIG;
	req.u.files.files = (struct al_file *)files;
	req.u.files.n_files = n;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

/* Cut a stream the guest sent past `cap`; true when it was. */
static bool cut_stream(struct al_blob *b, uint64_t cap, uint64_t *bytes)
{
	uint8_t *p;

	if (*bytes < b->len)
		*bytes = b->len; /* it wrote at least what it sent */
	if (b->len <= cap)
		return false;
	p = realloc(b->data, (size_t)cap + 1); /* hand the rest back */
	if (p)
		b->data = p;
	b->len = (size_t)cap;
	b->data[b->len] = '\0';
	return true;
}

/* The host's own output cap on a step result (see the top of the file). */
static void enforce_output(struct al_step_result *r, const struct sink *s)
{
	bool over = s->seen[0] > s->cap || s->seen[1] > s->cap;

	if (cut_stream(&r->stdout_, s->cap, &r->stdout_bytes) ||
	    s->seen[0] > s->cap)
		r->stdout_truncated = true;
	if (cut_stream(&r->stderr_, s->cap, &r->stderr_bytes) ||
	    s->seen[1] > s->cap)
		r->stderr_truncated = true;
	over |= r->stdout_truncated || r->stderr_truncated;
	if (over &&
	    (r->status == AL_OK || r->status == AL_RE || r->status == AL_SG))
		r->status = AL_OL;
}

static int run_step(struct sb__agent_client *c, const struct al_step *step,
		    const struct al_limits *limits, bool warmup, bool background,
		    al_agent_out_fn out, void *opaque, al_agent_tick_fn tick,
		    void *tick_opaque, int timeout_ms,
		    struct al_step_result *ret)
{
	struct al_msg req = {.type = AL_MSG_RUN_STEP}, rep;
	struct sink sink = {.fn = out,
			    .opaque = opaque,
			    .cap = AL_OUTPUT_MAX,
			    .tick = tick,
			    .tick_opaque = tick_opaque};
	int r;

	req.u.run_step.step = *step;
	if (limits)
		req.u.run_step.limits = *limits;
	if (limits && limits->output_bytes &&
	    limits->output_bytes < AL_OUTPUT_MAX)
		sink.cap = limits->output_bytes;
	req.u.run_step.stream = out != NULL;
	req.u.run_step.warmup = warmup;
	req.u.run_step.background = background;
	r = call(c, &req, AL_MSG_EXIT, &sink, timeout_ms, &rep);
	if (r < 0)
		return r;
	*ret = rep.u.exit.result;
	enforce_output(ret, &sink);
	return 0;
}

int sb__agent_client_run_step(struct sb__agent_client *c,
			      const struct al_step *step,
			      const struct al_limits *limits,
			      al_agent_out_fn out, void *opaque, int timeout_ms,
			      struct al_step_result *ret)
{
	return run_step(c, step, limits, false, false, out, opaque, NULL, NULL,
			timeout_ms, ret);
}

int sb__agent_client_run_step_ctl(struct sb__agent_client *c,
				  const struct al_step *step,
				  const struct al_limits *limits,
				  const struct sb__step_ctl *ctl, int timeout_ms,
				  struct al_step_result *ret)
{
	const struct sb__step_ctl none = {0};

	if (!ctl)
		ctl = &none;
	return run_step(c, step, limits, false, ctl->background, ctl->out,
			ctl->opaque, ctl->tick, ctl->tick_opaque, timeout_ms,
			ret);
}

int sb__agent_client_run_warmup(struct sb__agent_client *c,
				const struct al_step *step,
				const struct al_limits *limits, int timeout_ms,
				struct al_step_result *ret)
{
	return run_step(c, step, limits, true, false, NULL, NULL, NULL, NULL,
			timeout_ms, ret);
}

/* Was `path` asked for (paths[0..n)) and not yet kept (kept[0..k))? */
static bool wanted(const char *path, char *const *paths, size_t n,
		   const struct al_file *kept, size_t k)
{
	bool asked = false;

	for (size_t i = 0; i < n && !asked; i++)
		asked = !strcmp(path, paths[i]);
	for (size_t i = 0; i < k && asked; i++)
		asked = strcmp(path, kept[i].path) != 0;
	return asked;
}

/* Keep the files of the reply that were asked for, once each; the count
 * dropped, or -EMSGSIZE when those kept hold more than max_bytes. */
static int check_files(struct al_msg_files *f, char *const *paths, size_t n,
		       uint64_t max_bytes)
{
	uint64_t bytes = 0;
	size_t k = 0;
	int dropped = 0;

	for (size_t i = 0; i < f->n_files; i++) {
		struct al_file *x = &f->files[i];

		if (!wanted(x->path, paths, n, f->files, k)) {
			free(x->path);
			free(x->content.data);
			dropped++;
			continue;
		}
		bytes += x->content.len;
		f->files[k++] = *x;
	}
	f->n_files = k;
	return max_bytes && bytes > max_bytes ? -EMSGSIZE : dropped;
}

int sb__agent_client_get_files(struct sb__agent_client *c, char *const *paths,
			       size_t n, uint64_t max_bytes, int timeout_ms,
			       struct al_msg_files *ret)
{
	struct al_msg req = {.type = AL_MSG_GET_FILES}, rep;
	int r;

	if (n > AL_FILES_MAX)
		return -E2BIG;
	req.u.get_files.paths = (char **)paths;
	req.u.get_files.n_paths = n;
	req.u.get_files.max_bytes = max_bytes;
	r = call(c, &req, AL_MSG_FILES, NULL, timeout_ms, &rep);
	if (r < 0)
		return r;
	r = check_files(&rep.u.files, paths, n, max_bytes);
	if (r == -EMSGSIZE) {
		snprintf(c->error, sizeof(c->error),
			 "files reply over %llu bytes",
			 (unsigned long long)max_bytes);
		al_msg_release(&rep);
		c->broken = true; /* a lying guest: trust nothing more */
		return r;
	}
	if (r > 0)
		snprintf(c->error, sizeof(c->error),
			 "dropped %d file(s) not asked for", r);
	*ret = rep.u.files;
	return r;
}

void sb__agent_client_files_release(struct al_msg_files *f)
{
	struct al_msg m = {.type = AL_MSG_FILES};

	m.u.files = *f;
	al_msg_release(&m);
	memset(f, 0, sizeof(*f));
}

/* The vsock gate (proto.h, "Authentication"): the agent's challenge
 * arrives unasked; we answer with the mac and never send the token. */
int sb__agent_client_auth(struct sb__agent_client *c,
			  const uint8_t token[AL_AUTH_TOKEN_LEN],
			  int timeout_ms)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	struct al_msg ch = {0}, req = {.type = AL_MSG_AUTH};
	uint8_t mac[AL_SHA256_LEN];
	int r, left;

	if (c->broken || c->fd < 0)
		return -EPIPE;
	r = recv_msg(c, d, &ch);
	if (r == 0 && ch.type != AL_MSG_CHALLENGE)
		r = -EPROTO;
	if (r < 0) {
		al_msg_release(&ch);
		c->broken = true;
		return r;
	}
	al_auth_mac(token, ch.u.challenge.nonce.data, mac);
	al_msg_release(&ch);
	req.u.auth.mac.data = mac;
	req.u.auth.mac.len = sizeof(mac);
	left = al_deadline_poll_ms(d);
	r = call_simple(c, &req, AL_MSG_OK, left == 0 ? 1 : left);
	explicit_bzero(mac, sizeof(mac));
	if (r == -EPROTO)
		c->broken = true; /* not authenticated: nothing else works */
	return r;
}

int sb__agent_client_zygote(struct sb__agent_client *c, const char *modules,
			    int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_ZYGOTE};

	req.u.zygote.modules = (char *)modules;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

int sb__agent_client_zygote_warm(struct sb__agent_client *c, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_ZYGOTE};

	req.u.zygote.warm = true;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

int sb__agent_client_ping(struct sb__agent_client *c, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_PING};

	return call_simple(c, &req, AL_MSG_PONG, timeout_ms);
}
