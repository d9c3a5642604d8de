/* agent_client.c: typed, deadline-bound calls to the guest agent.
 *
 * One request, then frames until the reply: `out` chunks (run_step only)
 * go to the caller's callback, anything else must be the expected reply or
 * `error`. The whole exchange shares one deadline, so a guest that trickles
 * bytes or streams output forever still ends at the timeout; streamed
 * output is also capped in total. Guest text never reaches a log raw: the
 * `error` message is escaped and truncated here.
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

void al_agent_client_init(struct al_agent_client *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	al_frame_reader_init(&c->rd, AL_FRAME_MAX);
}

void al_agent_client_release(struct al_agent_client *c)
{
	al_frame_reader_release(&c->rd);
	c->fd = -1;
}

/* Keep printable ASCII of the guest's text, at most ERROR_MAX bytes. */
static void keep_error(struct al_agent_client *c, const char *msg)
{
	size_t i;

	for (i = 0; msg && msg[i] && i < AL_AGENT_CLIENT_ERROR_MAX; i++)
		c->error[i] = msg[i] >= 0x20 && msg[i] < 0x7f ? msg[i] : '?';
	c->error[i] = '\0';
}

static int send_all(struct al_agent_client *c, const char *buf, size_t len,
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
static int recv_msg(struct al_agent_client *c, struct al_deadline d,
		    struct al_msg *ret)
{
	static __thread uint8_t buf[64u << 10];
	size_t want, len;
	uint8_t *body;
	ssize_t n;
	int r;

	while (!al_frame_reader_ready(&c->rd)) {
		want = al_frame_reader_want(&c->rd);
		n = sb_read_deadline(c->fd, buf,
				     want < sizeof(buf) ? want : sizeof(buf), d);
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

/* Send `req`, stream `out` chunks, and wait for a reply of type `want`
 * (left in *ret) or `error` (-EPROTO). */
static int call(struct al_agent_client *c, const struct al_msg *req,
		enum al_msg_type want, al_agent_out_fn out, void *opaque,
		int timeout_ms, struct al_msg *ret)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	uint64_t streamed = 0;
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
	while (r == 0) {
		r = recv_msg(c, d, &m);
		if (r < 0 || m.type != AL_MSG_OUT ||
		    req->type != AL_MSG_RUN_STEP)
			break;
		streamed += m.u.out.data.len;
		if (streamed > STREAM_MAX) {
			r = -EPROTO;
			break;
		}
		if (out)
			out(opaque, (int)m.u.out.fd, m.u.out.data.data,
			    m.u.out.data.len);
		al_msg_release(&m);
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
static int call_simple(struct al_agent_client *c, const struct al_msg *req,
		       enum al_msg_type want, int timeout_ms)
{
	struct al_msg rep;
	int r;

	r = call(c, req, want, NULL, NULL, timeout_ms, &rep);
	if (r == 0)
		al_msg_release(&rep);
	return r;
}

int al_agent_client_hello(struct al_agent_client *c, int timeout_ms,
			  struct al_msg_hello *ret)
{
	struct al_msg req = {.type = AL_MSG_HELLO}, rep;
	int r;

	r = call(c, &req, AL_MSG_HELLO, NULL, NULL, timeout_ms, &rep);
	if (r < 0)
		return r;
	if (rep.u.hello.v == 0) {
		al_msg_release(&rep);
		c->broken = true;
		return -EPROTO;
	}
	*ret = rep.u.hello;
	return 0;
}

void al_agent_client_hello_release(struct al_msg_hello *h)
{
	free(h->agent);
	free(h->kernel);
	free(h->template_);
	memset(h, 0, sizeof(*h));
}

int al_agent_client_reseed(struct al_agent_client *c, const void *entropy,
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

int al_agent_client_setup(struct al_agent_client *c,
			  const struct al_limits *limits, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_SETUP};

	req.u.setup.limits = *limits;
	return call_simple(c, &req, AL_MSG_OK, timeout_ms);
}

int al_agent_client_put_files(struct al_agent_client *c,
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

int al_agent_client_run_step(struct al_agent_client *c,
			     const struct al_step *step,
			     const struct al_limits *limits,
			     al_agent_out_fn out, void *opaque, int timeout_ms,
			     struct al_step_result *ret)
{
	struct al_msg req = {.type = AL_MSG_RUN_STEP}, rep;
	int r;

	req.u.run_step.step = *step;
	if (limits)
		req.u.run_step.limits = *limits;
	req.u.run_step.stream = out != NULL;
	r = call(c, &req, AL_MSG_EXIT, out, opaque, timeout_ms, &rep);
	if (r < 0)
		return r;
	*ret = rep.u.exit.result;
	return 0;
}

int al_agent_client_get_files(struct al_agent_client *c, char *const *paths,
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
	r = call(c, &req, AL_MSG_FILES, NULL, NULL, timeout_ms, &rep);
	if (r < 0)
		return r;
	*ret = rep.u.files;
	return 0;
}

void al_agent_client_files_release(struct al_msg_files *f)
{
	struct al_msg m = {.type = AL_MSG_FILES};

	m.u.files = *f;
	al_msg_release(&m);
	memset(f, 0, sizeof(*f));
}

/* The vsock gate (proto.h, "Authentication"): the agent's challenge
 * arrives unasked; we answer with the mac and never send the token. */
int al_agent_client_auth(struct al_agent_client *c,
			 const uint8_t token[AL_AUTH_TOKEN_LEN], int timeout_ms)
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

int al_agent_client_ping(struct al_agent_client *c, int timeout_ms)
{
	struct al_msg req = {.type = AL_MSG_PING};

	return call_simple(c, &req, AL_MSG_PONG, timeout_ms);
}
