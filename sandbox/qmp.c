/* qmp.c: QMP client: newline-delimited JSON over a unix socket, every read
 * under a deadline and a line cap. Callers: vm.c (connect, the migration
 * capability and fd hand-over), template.c (saving a template), clone.c
 * (loading a snapshot), tests/vm/test_qmp.c and tools/bench/bench_vm.c. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "qmp.h"
#include "util.h"

/* One JSON object per line; *ret is the parsed line. */
static int read_line(struct qmp *q, struct al_deadline d, json_t **ret)
{
	for (;;) {
		char *nl = q->len ? memchr(q->buf, '\n', q->len) : NULL;
		ssize_t n;

		if (nl) {
			size_t line = (size_t)(nl - q->buf) + 1;
			json_error_t err;

			*ret = json_loadb(q->buf, line, 0, &err);
			memmove(q->buf, q->buf + line, q->len - line);
			q->len -= line;
			return *ret ? 0 : -EPROTO;
		}
		if (q->len >= QMP_LINE_MAX)
			return -EPROTO;
		n = sb__read_deadline(q->fd, q->buf + q->len,
				      QMP_LINE_MAX - q->len, d);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ECONNRESET;
		q->len += (size_t)n;
	}
}

static void keep_event(struct qmp *q, json_t *ev)
{
	if (q->n_events == QMP_EVENTS_MAX) {
		json_decref(q->events[0]);
		memmove(q->events, q->events + 1,
			(QMP_EVENTS_MAX - 1) * sizeof(q->events[0]));
		q->n_events--;
	}
	q->events[q->n_events++] = ev;
}

static int send_all(int fd, const char *buf, size_t len, int pass_fd)
{
	while (len) {
		struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
		char cbuf[CMSG_SPACE(sizeof(int))] = {0};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		if (pass_fd >= 0) {
			struct cmsghdr *c;

			msg.msg_control = cbuf;
			msg.msg_controllen = sizeof(cbuf);
			c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
		}
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		pass_fd = -1; /* the fd rides on the first bytes only */
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int exchange(struct qmp *q, const char *cmd, json_t *args, int fd,
		    int timeout_ms, json_t **ret_return, char *errbuf,
		    size_t errlen)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	json_t *req, *reply = NULL;
	char *text;
	int r;

	if (errlen)
		errbuf[0] = 0;
	req = json_pack("{s:s}", "execute", cmd);
	if (!req) {
		json_decref(args);
		return -ENOMEM;
	}
	if (args)
		json_object_set_new(req, "arguments", args);
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!text)
		return -ENOMEM;
	r = send_all(q->fd, text, strlen(text), fd);
	if (r == 0)
		r = send_all(q->fd, "\n", 1, -1);
	free(text);
	while (r == 0) {
		r = read_line(q, d, &reply);
		if (r < 0)
			break;
		if (json_object_get(reply, "event")) {
			keep_event(q, reply);
			continue;
		}
		if (json_object_get(reply, "return")) {
			if (ret_return)
				*ret_return = json_incref(
					json_object_get(reply, "return"));
			json_decref(reply);
			return 0;
		}
		if (errlen) {
			const char *desc = json_string_value(json_object_get(
				json_object_get(reply, "error"), "desc"));

			snprintf(errbuf, errlen, "%s: %s", cmd,
				 desc ? desc : "malformed reply");
		}
		json_decref(reply);
		return -EREMOTEIO;
	}
	if (errlen && r < 0)
		snprintf(errbuf, errlen, "%s: %s", cmd, strerror(-r));
	return r;
}

int sb__qmp_execute(struct qmp *q, const char *cmd, json_t *args,
		    int timeout_ms, json_t **ret_return, char *errbuf,
		    size_t errlen)
{
	return exchange(q, cmd, args, -1, timeout_ms, ret_return, errbuf,
			errlen);
}

int sb__qmp_execute_fd(struct qmp *q, const char *cmd, json_t *args, int fd,
		       int timeout_ms, char *errbuf, size_t errlen)
{
	return exchange(q, cmd, args, fd, timeout_ms, NULL, errbuf, errlen);
}

int sb__qmp_wait_event(struct qmp *q, const char *name, int timeout_ms,
		       json_t **ret_event)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);

	for (;;) {
		json_t *ev = NULL;
		int r;

		for (size_t i = 0; i < q->n_events; i++) {
			const char *n = json_string_value(
				json_object_get(q->events[i], "event"));

			if (n && strcmp(n, name) == 0) {
				ev = q->events[i];
				memmove(q->events + i, q->events + i + 1,
					(q->n_events - i - 1) *
						sizeof(q->events[0]));
				q->n_events--;
				if (ret_event)
					*ret_event = ev;
				else
					json_decref(ev);
				return 0;
			}
		}
		r = read_line(q, d, &ev);
		if (r < 0)
			return r;
		if (json_object_get(ev, "event"))
			keep_event(q, ev);
		else
			json_decref(ev); /* a stray reply: not ours */
	}
}

/* Read the greeting on q->fd and negotiate capabilities. */
static int qmp_greet(struct qmp *q, struct al_deadline d)
{
	json_t *greeting = NULL;
	int r = read_line(q, d, &greeting);

	if (r < 0)
		return r;
	if (!json_object_get(greeting, "QMP")) {
		json_decref(greeting);
		return -EPROTO;
	}
	json_decref(greeting);
	return sb__qmp_execute(q, "qmp_capabilities", NULL,
			       al_deadline_poll_ms(d), NULL, NULL, 0);
}

/* Take `fd` (closed on failure too) and greet within `d`. */
static int qmp_start(struct qmp *q, int fd, struct al_deadline d)
{
	int r;

	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->buf = malloc(QMP_LINE_MAX);
	r = q->buf ? qmp_greet(q, d) : -ENOMEM;
	if (r < 0)
		sb__qmp_close(q);
	return r;
}

int sb__qmp_connect(struct qmp *q, const char *path, int timeout_ms)
{
	struct al_deadline d = al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	int fd = sb__connect_unix(path, d);

	if (fd < 0) {
		memset(q, 0, sizeof(*q));
		q->fd = -1;
		return fd;
	}
	return qmp_start(q, fd, d);
}

int sb__qmp_open_fd(struct qmp *q, int fd, int timeout_ms)
{
	return qmp_start(q, fd,
			 al_deadline_in(timeout_ms < 0 ? 0 : timeout_ms));
}

void sb__qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	free(q->buf);
	q->buf = NULL;
	q->len = 0;
	for (size_t i = 0; i < q->n_events; i++)
		json_decref(q->events[i]);
	q->n_events = 0;
}
