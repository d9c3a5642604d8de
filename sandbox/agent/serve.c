/* serve.c: the agent's request loop on its channels (see results/proto.h).
 *
 * One poll loop, one request at a time. In the guest the channels are the
 * virtio-serial port `org.airlock.agent` and, when the vsock module loaded,
 * an AF_VSOCK listener on port 1024 behind the gate below: a connection is
 * served once it proved the host, and never replaces a live host (after a
 * snapshot restore the old one is dead and the host reconnects). The
 * virtio-serial port needs no proof: its host end is a socket in the VM's
 * private run dir that QEMU serves to one client. A virtio-serial port
 * reports POLLHUP for as long as no host is connected, so a hung-up port
 * leaves the poll set and is re-checked on a short timer; any partial frame
 * is dropped, so the guest never notices a reconnect. The loop also reaps
 * zombies (we are PID 1) and never exits in the guest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "version.h"

#define SEND_TIMEOUT_MS 60000 /* a host that stops reading loses the reply */
#define RECHECK_MS	200   /* re-check a hung-up or missing port */
#define ZYGOTE_READY_MS 100000u /* its imports under TCG; the host waits 120 s */
/* where the qemu_fw_cfg module shows the host's token (read by root only) */
#define AL_AGENT_TOKEN_PATH \
	"/sys/firmware/qemu_fw_cfg/by_name/" AL_AUTH_FW_CFG "/raw"


typedef int (*handler_fn)(struct al_agent *a, struct al_chan *c,
			  struct al_msg *req, struct al_msg *rep, char *err,
			  size_t err_size);

/* --- sending -------------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
	struct pollfd p = {fd, POLLOUT, 0};
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		n = poll(&p, 1, SEND_TIMEOUT_MS);
		if (n == 0)
			return -ETIMEDOUT;
		if (n > 0 && (p.revents & (POLLHUP | POLLERR)))
			return -EPIPE;
	}
	return 0;
}

static int chan_send(struct al_chan *c, const struct al_msg *m)
{
	char *buf = NULL;
	size_t len;
	int r;

	r = al_msg_encode(m, &buf, &len);
	if (r < 0)
		return r;
	r = write_all(c->fd, buf, len);
	free(buf);
	return r;
}

static int send_error(struct al_chan *c, const char *msg)
{
	struct al_msg m = {.type = AL_MSG_ERROR};

	m.u.error.msg = (char *)msg;
	return chan_send(c, &m);
}

/* --- handlers ------------------------------------------------------------- */

/* airlock.template=NAME from the kernel command line, or NULL. */
static char *cmdline_template(void)
{
	char buf[4096], *p, *e;
	ssize_t n;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	for (p = strtok_r(buf, " \n", &e); p; p = strtok_r(NULL, " \n", &e))
		if (!strncmp(p, "airlock.template=", 17) &&
		    strlen(p + 17) <= AL_NAME_MAX)
			return strdup(p + 17);
	return NULL;
}

static int on_hello(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		    struct al_msg *rep, char *err, size_t err_size)
{
	struct utsname u;

	(void)a, (void)c, (void)req, (void)err, (void)err_size;
	rep->type = AL_MSG_HELLO;
	rep->u.hello.v = AL_PROTO_VERSION;
	rep->u.hello.agent = strdup(AIRLOCK_VERSION);
	if (uname(&u) == 0)
		rep->u.hello.kernel = strdup(u.release);
	rep->u.hello.template_ = cmdline_template();
	return rep->u.hello.agent ? 0 : -ENOMEM;
}

static int add_entropy(int fd, const struct al_blob *b)
{
	/* rand_pool_info ends in a flexible array: room for it, int-aligned */
	uint32_t raw[(sizeof(struct rand_pool_info) + AL_ENTROPY_MAX) / 4 + 1];
	struct rand_pool_info *info = (struct rand_pool_info *)raw;
	int r = 0;

	if (fd < 0)
		return -ENODEV;
	if (b->len > AL_ENTROPY_MAX)
		return -E2BIG;
	info->entropy_count = (int)b->len * 8;
	info->buf_size = (int)b->len;
	memcpy(info->buf, b->data, b->len);
	if (ioctl(fd, RNDADDENTROPY, info) < 0 ||
	    ioctl(fd, RNDRESEEDCRNG) < 0)
		r = -errno;
	explicit_bzero(raw, sizeof(raw));
	return r;
}

/* Mix `entropy` into the CRNG, reseed it, and set the clock: a clone's
 * first act for a job (reseed, or setup since v2). */
static int reseed_apply(struct al_agent *a, const struct al_blob *entropy,
			uint64_t time_ns, char *err, size_t err_size)
{
	struct timespec ts = {(time_t)(time_ns / 1000000000u),
			      (long)(time_ns % 1000000000u)};
	int r;

	if (!a->cfg->init) /* host tests: never touch the host's clock */
		return 0;
	r = add_entropy(a->random_fd, entropy);
	if (r < 0) {
		snprintf(err, err_size, "add entropy: %s", strerror(-r));
		return r;
	}
	if (clock_settime(CLOCK_REALTIME, &ts) < 0) {
		r = -errno;
		snprintf(err, err_size, "set clock: %s", strerror(-r));
	}
	return r;
}

static int on_reseed(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		     struct al_msg *rep, char *err, size_t err_size)
{
	int r;

	(void)c;
	rep->type = AL_MSG_OK;
	r = reseed_apply(a, &req->u.reseed.entropy, req->u.reseed.time_ns, err,
			 err_size);
	if (r == 0) /* a template's last request before its snapshot */
		al_exec_prepare(a);
	return r;
}

/* The job's limits; since v2 a reseed may come with them (a warm clone's
 * hand-off), applied first and acknowledged in the reply. */
static int on_setup(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		    struct al_msg *rep, char *err, size_t err_size)
{
	const struct al_msg_setup *su = &req->u.setup;
	int r;

	(void)c;
	rep->type = AL_MSG_OK;
	if (!su->entropy.data != !su->time_ns) {
		snprintf(err, err_size, "setup: entropy and time_ns go together");
		return -EINVAL;
	}
	if (su->entropy.data) {
		r = reseed_apply(a, &su->entropy, su->time_ns, err, err_size);
		if (r < 0)
			return r;
		rep->u.ok.reseeded = true;
	}
	a->limits = su->limits;
	r = al_agent_apply_limits(a, &a->limits, err, err_size);
	if (r == 0)
		al_exec_prepare(a);
	return r;
}

static int on_put_files(struct al_agent *a, struct al_chan *c, struct al_msg *req,
			struct al_msg *rep, char *err, size_t err_size)
{
	(void)c;
	rep->type = AL_MSG_OK;
	return al_files_put(a, &req->u.files, err, err_size);
}

static int stream_out(void *opaque, int fd, const void *data, size_t len)
{
	struct al_msg m = {.type = AL_MSG_OUT};

	m.u.out.fd = (uint32_t)fd;
	m.u.out.data.data = (uint8_t *)data;
	m.u.out.data.len = len;
	return chan_send(opaque, &m);
}

/* The step's limits: its own where given, else those of `setup`. */
static void merge_limits(const struct al_limits *base,
			 const struct al_limits *over, struct al_limits *ret)
{
	const uint32_t *b = (const uint32_t *)base;
	const uint32_t *o = (const uint32_t *)over;
	uint32_t *r = (uint32_t *)ret;

	for (size_t i = 0; i < sizeof(*ret) / sizeof(uint32_t); i++)
		r[i] = o[i] ? o[i] : b[i];
}

static int chan_take(struct al_chan *c, uint8_t **body, size_t *len);

/* The request channel while a step runs (proto v4): only `signal` is
 * taken; anything else is a host that broke the protocol, dropped with a
 * log line (a reply now would be read as the step's). */
static int step_ctl_read(void *opaque, uint32_t *sig, uint32_t *grace_ms)
{
	struct al_chan *c = opaque;
	struct al_msg m = {0};
	uint8_t *body;
	size_t len;
	int r = chan_take(c, &body, &len);

	if (r <= 0)
		return r;
	r = al_msg_decode(body, len, &m, NULL);
	free(body);
	if (r == 0 && m.type == AL_MSG_SIGNAL) {
		*sig = m.u.signal.sig;
		*grace_ms = m.u.signal.grace_ms;
		r = 1;
	} else {
		al_agent_log("request during a step: dropped");
		r = 0;
	}
	al_msg_release(&m);
	return r;
}

static int on_run_step(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		       struct al_msg *rep, char *err, size_t err_size)
{
	struct al_msg_run_step *rs = &req->u.run_step;
	struct al_exec_ctl ctl = {c->fd, step_ctl_read, c,
				  rs->background && !rs->warmup};
	struct al_limits lim;
	int r;

	merge_limits(&a->limits, &rs->limits, &lim);
	r = rs->warmup ? al_exec_warmup(a, &rs->step, &lim,
					&rep->u.exit.result)
		       : al_exec_step_ctl(a, &rs->step, &lim,
					  rs->stream ? stream_out : NULL, c,
					  &ctl, &rep->u.exit.result);
	if (r < 0) {
		snprintf(err, err_size, "run step: %s", strerror(-r));
		return r;
	}
	rep->type = AL_MSG_EXIT;
	return 0;
}

static int on_get_files(struct al_agent *a, struct al_chan *c, struct al_msg *req,
			struct al_msg *rep, char *err, size_t err_size)
{
	int r;

	(void)c;
	r = al_files_get(a, &req->u.get_files, &rep->u.files);
	if (r < 0) {
		snprintf(err, err_size, "get files: %s", strerror(-r));
		return r;
	}
	rep->type = AL_MSG_FILES;
	return 0;
}

static int on_ping(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		   struct al_msg *rep, char *err, size_t err_size)
{
	(void)a, (void)c, (void)req, (void)err, (void)err_size;
	rep->type = AL_MSG_PONG;
	return 0;
}

/* A template's, before its snapshot: start the python zygote; a warm
 * clone's, after its restore: warm the waiting one up. */
static int on_zygote(struct al_agent *a, struct al_chan *c, struct al_msg *req,
		     struct al_msg *rep, char *err, size_t err_size)
{
	(void)c;
	rep->type = AL_MSG_OK;
	if (req->u.zygote.warm)
		return al_zygote_warm(a, ZYGOTE_READY_MS, err, err_size);
	if (!req->u.zygote.modules) {
		snprintf(err, err_size, "zygote: modules missing");
		return -EINVAL;
	}
	return al_zygote_start(a, req->u.zygote.modules, ZYGOTE_READY_MS, err,
			       err_size);
}

static const handler_fn handlers[AL_MSG_TYPE_COUNT] = {
    [AL_MSG_HELLO] = on_hello,	     [AL_MSG_RESEED] = on_reseed,
    [AL_MSG_SETUP] = on_setup,	     [AL_MSG_PUT_FILES] = on_put_files,
    [AL_MSG_RUN_STEP] = on_run_step, [AL_MSG_GET_FILES] = on_get_files,
    [AL_MSG_PING] = on_ping,	     [AL_MSG_ZYGOTE] = on_zygote,
};

/* Decode one request, run its handler, send the reply. */
static int handle(struct al_agent *a, struct al_chan *c, const uint8_t *body,
		  size_t len)
{
	struct al_msg req = {0}, rep = {0};
	struct al_diags d;
	char err[512] = "";
	int r;

	al_diags_init(&d);
	r = al_msg_decode(body, len, &req, &d);
	if (r < 0) {
		al_diags_format(&d, err, sizeof(err));
		r = send_error(c, err[0] ? err : "bad request");
		goto out;
	}
	if (req.type == AL_MSG_SIGNAL) {
		r = 0; /* a step's, arrived after its end: no reply (proto.h) */
		goto out;
	}
	if (!handlers[req.type]) {
		r = send_error(c, "not a request");
		goto out;
	}
	r = handlers[req.type](a, c, &req, &rep, err, sizeof(err));
	if (r < 0 && !err[0])
		snprintf(err, sizeof(err), "%s: %s", al_msg_type_name(req.type),
			 strerror(-r));
	r = r < 0 ? send_error(c, err) : chan_send(c, &rep);
out:
	al_msg_release(&rep);
	al_msg_release(&req);
	return r;
}

/* --- channels ------------------------------------------------------------- */

static void chan_close(struct al_chan *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->hup = false;
	al_frame_reader_release(&c->rd);
}

/* Read what is there. Returns 1 with a complete frame in *body (caller
 * frees), 0 when more is needed, or -EPIPE when the peer is gone. */
static int chan_take(struct al_chan *c, uint8_t **body, size_t *len)
{
	static uint8_t buf[64u << 10];
	size_t want = al_frame_reader_want(&c->rd);
	ssize_t n;

	n = read(c->fd, buf, want < sizeof(buf) ? want : sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -EPIPE;
	if (al_frame_reader_feed(&c->rd, buf, (size_t)n) < 0) {
		send_error(c, "bad frame length");
		return -EPIPE; /* no way to resynchronise */
	}
	return al_frame_reader_take(&c->rd, body, len) < 0 ? 0 : 1;
}

/* Read what is there; handle a request once it is complete. Returns 0,
 * or -EPIPE when the peer is gone. */
static int chan_read(struct al_agent *a, struct al_chan *c)
{
	uint8_t *body;
	size_t len;
	int r = chan_take(c, &body, &len);

	if (r <= 0)
		return r;
	if (handle(a, c, body, len) < 0)
		al_agent_log("reply failed; dropping the connection");
	free(body);
	return 0;
}

/* Serve a single fd until EOF (host tests, --serve-fd / --socket). */
static int serve_one(struct al_agent *a, int fd)
{
	struct al_chan c = {.fd = fd};
	struct pollfd p[2];

	al_frame_reader_init(&c.rd, AL_FRAME_MAX);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		p[0] = (struct pollfd){a->sig_fd, POLLIN, 0};
		p[1] = (struct pollfd){c.fd, POLLIN, 0};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			al_agent_reap(a, -1, NULL, NULL);
		if (p[1].revents && chan_read(a, &c) < 0)
			break;
	}
	chan_close(&c);
	return 0;
}

/* Open the virtio-serial port named AL_AGENT_VPORT, or -errno. */
static int vport_open(void)
{
	char path[300], name[64];
	struct dirent *de;
	DIR *dir = opendir("/sys/class/virtio-ports");
	int fd = -ENOENT, nfd;
	ssize_t n;

	if (!dir)
		return -errno;
	while (fd < 0 && (de = readdir(dir))) {
		if (strncmp(de->d_name, "vport", 5))
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name",
			 de->d_name);
		nfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nfd < 0)
			continue;
		n = read(nfd, name, sizeof(name) - 1);
		close(nfd);
		if (n <= 0)
			continue;
		name[n] = '\0';
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, AL_AGENT_VPORT))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	}
	closedir(dir);
	return fd;
}

static int vsock_listen(void)
{
	struct sockaddr_vm sa = {
	    .svm_family = AF_VSOCK,
	    .svm_cid = VMADDR_CID_ANY,
	    .svm_port = AL_AGENT_VSOCK_PORT,
	};
	int fd =
	    socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* The vport came back (host reconnected) or appeared (driver bound). */
static void vport_recheck(struct al_chan *vp)
{
	struct pollfd p = {vp->fd, POLLIN, 0};
	int fd;

	if (vp->fd < 0) {
		fd = vport_open();
		if (fd >= 0) {
			vp->fd = fd;
			vp->hup = true; /* check for a host below */
			al_agent_log("virtio-serial port %s open",
				     AL_AGENT_VPORT);
		}
	}
	if (vp->fd >= 0 && vp->hup && poll(&p, 1, 0) >= 0 &&
	    !(p.revents & POLLHUP))
		vp->hup = false;
}

/* --- the vsock gate --------------------------------------------------------
 *
 * vsock has no notion of who connects: any process on the host that can
 * open an AF_VSOCK socket reaches our port on a CID it can read off QEMU's
 * command line. So a vsock connection is served only once the peer proved
 * that it holds this VM's token, which the host gave QEMU as an fw_cfg
 * file (proto.h, "Authentication"; docs/vsock-auth.md):
 *
 *   accept   while an authenticated host is connected and alive, a new
 *            connection is closed at once; the host is not disturbed. Else
 *            it takes a free waiting slot (AL_GATE_PENDING of them; when
 *            all are taken the oldest waiting connection is closed for
 *            it), gets a fresh nonce of its own in a `challenge`, and
 *            AUTH_TIMEOUT_MS to answer.
 *   auth     the first frame of a waiting connection must be `auth` with
 *            the mac of its nonce under the token, compared in constant
 *            time; the first that sends it is the host (answered `ok`)
 *            and every other waiting connection is closed. Anything else
 *            closes that one connection only.
 *
 * Several waiting slots, not one: with a single slot each new connection
 * replaced the waiting one, so a local process connecting in a loop kept
 * the host out. Now such a process must open AL_GATE_PENDING connections
 * between the host's connect and its answer (one round trip) to push the
 * host's out, and whatever it does it reads and runs nothing.
 *
 * The token is read from fw_cfg at each accept, not once: a clone runs the
 * template's memory, but fw_cfg is device configuration that QEMU builds
 * from its own command line, so it holds the clone's token. A restore also
 * resets every vsock connection (the template's host connection dies), so
 * "host alive" is checked at accept time rather than trusted; the host
 * retries a refused connect until its deadline.
 */

#define AUTH_TIMEOUT_MS 5000u /* a pending connection's time to answer */
#define AUTH_FRAME_MAX	256u  /* frame cap before auth: nothing to hoard */

static void wait_close(struct al_gate_wait *w)
{
	chan_close(&w->ch);
	explicit_bzero(w->expect, sizeof(w->expect));
	w->by = AL_NO_DEADLINE;
}

void al_gate_init(struct al_gate *g, int lfd, const char *token_path)
{
	memset(g, 0, sizeof(*g));
	g->lfd = lfd;
	g->token_path = token_path;
	g->host.fd = -1;
	al_frame_reader_init(&g->host.rd, AL_FRAME_MAX);
	for (size_t i = 0; i < AL_GATE_PENDING; i++) {
		g->wait[i].ch.fd = -1;
		al_frame_reader_init(&g->wait[i].ch.rd, AUTH_FRAME_MAX);
	}
}

void al_gate_release(struct al_gate *g)
{
	chan_close(&g->host);
	for (size_t i = 0; i < AL_GATE_PENDING; i++)
		wait_close(&g->wait[i]);
	if (g->lfd >= 0)
		close(g->lfd);
	g->lfd = -1;
}

/* The VM's token: exactly AL_AUTH_TOKEN_LEN bytes at `path`. */
static int read_token(const char *path, uint8_t ret[AL_AUTH_TOKEN_LEN])
{
	uint8_t buf[AL_AUTH_TOKEN_LEN + 1];
	size_t got = 0;
	ssize_t n = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	while (got < sizeof(buf) && n > 0) {
		n = pread(fd, buf + got, sizeof(buf) - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n < 0)
			r = -errno;
		else
			got += (size_t)n;
	}
	close(fd);
	if (r == 0 && got != AL_AUTH_TOKEN_LEN)
		r = -EBADMSG;
	if (r == 0)
		memcpy(ret, buf, AL_AUTH_TOKEN_LEN);
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/* Challenge a new connection: nonce out, expected mac kept. */
static int gate_challenge(struct al_gate *g, struct al_gate_wait *w)
{
	uint8_t token[AL_AUTH_TOKEN_LEN], nonce[AL_AUTH_NONCE_LEN];
	struct al_msg m = {.type = AL_MSG_CHALLENGE};
	int r = read_token(g->token_path, token);

	if (r < 0) {
		al_agent_log("vsock: no token at %s (%s): refused",
			     g->token_path, strerror(-r));
		return r;
	}
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		r = -EIO;
	if (r == 0) {
		al_auth_mac(token, nonce, w->expect);
		m.u.challenge.nonce.data = nonce;
		m.u.challenge.nonce.len = sizeof(nonce);
		r = chan_send(&w->ch, &m);
	}
	explicit_bzero(token, sizeof(token));
	return r;
}

/* Is the host connection still there? A restore resets it under us. */
static bool host_alive(const struct al_chan *h)
{
	struct pollfd p = {h->fd, POLLRDHUP, 0};

	return h->fd >= 0 && poll(&p, 1, 0) >= 0 &&
	       !(p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

/* A slot for a new connection: a free one, else the oldest waiting. */
static struct al_gate_wait *gate_slot(struct al_gate *g)
{
	struct al_gate_wait *old = &g->wait[0];

	for (size_t i = 0; i < AL_GATE_PENDING; i++) {
		if (g->wait[i].ch.fd < 0)
			return &g->wait[i];
		if (g->wait[i].seq < old->seq)
			old = &g->wait[i];
	}
	al_agent_log("vsock: %u connections waiting: the oldest dropped",
		     (unsigned)AL_GATE_PENDING);
	wait_close(old);
	return old;
}

static void gate_accept(struct al_gate *g)
{
	int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct al_gate_wait *w;

	if (fd < 0)
		return;
	if (host_alive(&g->host)) {
		close(fd); /* one host at a time: the live one stays */
		al_agent_log("vsock: refused a connection (host connected)");
		return;
	}
	chan_close(&g->host);
	w = gate_slot(g);
	w->ch.fd = fd;
	al_frame_reader_init(&w->ch.rd, AUTH_FRAME_MAX);
	w->by = al_deadline_in(AUTH_TIMEOUT_MS);
	w->seq = ++g->accepted;
	if (gate_challenge(g, w) < 0)
		wait_close(w);
}

/* A waiting connection's first frame: the right `auth` (it is the host
 * now, the others go) or goodbye. */
static void gate_auth(struct al_gate *g, struct al_gate_wait *w)
{
	struct al_msg m = {0}, ok = {.type = AL_MSG_OK};
	uint8_t *body = NULL;
	size_t len;
	bool good;
	int r = chan_take(&w->ch, &body, &len);

	if (r == 0)
		return;
	good = r > 0 && al_msg_decode(body, len, &m, NULL) == 0 &&
	       m.type == AL_MSG_AUTH &&
	       al_auth_equal(m.u.auth.mac.data, w->expect, AL_SHA256_LEN);
	al_msg_release(&m);
	free(body);
	if (!good || chan_send(&w->ch, &ok) < 0) {
		if (r > 0)
			al_agent_log("vsock: authentication failed");
		wait_close(w);
		return;
	}
	g->host.fd = w->ch.fd; /* hand-off: the waiting one is the host */
	w->ch.fd = -1;
	wait_close(w);
	for (size_t i = 0; i < AL_GATE_PENDING; i++)
		wait_close(&g->wait[i]); /* the first to prove it won */
	al_frame_reader_init(&g->host.rd, AL_FRAME_MAX);
	al_agent_log("vsock: host authenticated");
}

int al_gate_pollfds(const struct al_gate *g, struct pollfd *p)
{
	struct al_deadline d = AL_NO_DEADLINE;

	p[0] = (struct pollfd){g->lfd, POLLIN, 0};
	p[1] = (struct pollfd){g->host.fd, POLLIN, 0};
	for (size_t i = 0; i < AL_GATE_PENDING; i++) {
		const struct al_gate_wait *w = &g->wait[i];

		p[2 + i] = (struct pollfd){w->ch.fd, POLLIN, 0};
		if (w->ch.fd >= 0)
			d = al_deadline_min(d, w->by);
	}
	return al_deadline_poll_ms(d);
}

void al_gate_act(struct al_agent *a, struct al_gate *g,
		 const struct pollfd *p)
{
	if (p[1].revents && chan_read(a, &g->host) < 0)
		chan_close(&g->host);
	for (size_t i = 0; i < AL_GATE_PENDING; i++) {
		struct al_gate_wait *w = &g->wait[i];

		if (p[2 + i].revents && w->ch.fd >= 0)
			gate_auth(g, w);
		if (w->ch.fd >= 0 && al_deadline_passed(w->by)) {
			al_agent_log("vsock: no authentication in time");
			wait_close(w);
		}
	}
	if (p[0].revents)
		gate_accept(g);
}

/* One round of the guest loop: poll, then act on what is ready. */
static void guest_round(struct al_agent *a, struct al_chan *vp,
			struct al_gate *g)
{
	struct pollfd p[2 + AL_GATE_NPOLL] = {
	    {a->sig_fd, POLLIN, 0},
	    {vp->hup ? -1 : vp->fd, POLLIN, 0},
	};
	int timeout = al_gate_pollfds(g, p + 2);

	if ((vp->fd < 0 || vp->hup) &&
	    (timeout < 0 || timeout > (int)RECHECK_MS))
		timeout = RECHECK_MS;
	if (poll(p, 2 + AL_GATE_NPOLL, timeout) < 0)
		return;
	if (p[0].revents)
		al_agent_reap(a, -1, NULL, NULL);
	if (p[1].revents & POLLIN && chan_read(a, vp) < 0)
		p[1].revents |= POLLHUP;
	if (p[1].revents & (POLLHUP | POLLERR)) {
		vp->hup = true;
		al_frame_reader_reset(&vp->rd);
	}
	al_gate_act(a, g, p + 2);
	vport_recheck(vp);
}

int al_agent_serve(struct al_agent *a, int fd)
{
	struct al_chan vp = {.fd = -1, .vport = true};
	struct al_gate g;
	int lfd;

	if (fd >= 0)
		return serve_one(a, fd);
	al_frame_reader_init(&vp.rd, AL_FRAME_MAX);
	lfd = vsock_listen();
	if (lfd < 0)
		al_agent_log("no vsock (%s); virtio-serial only",
			     strerror(-lfd));
	al_gate_init(&g, lfd, AL_AGENT_TOKEN_PATH);
	vport_recheck(&vp);
	al_agent_log("ready");
	for (;;)
		guest_round(a, &vp, &g);
}
