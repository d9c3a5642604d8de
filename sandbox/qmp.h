/* qmp.h: a small QMP (QEMU Machine Protocol) client with a deadline on
 * every exchange.
 *
 * QEMU is semi-trusted (a guest escape lands there), so replies are read
 * with a line cap and a timeout, and a QEMU that stops answering costs the
 * caller at most its timeout.
 *
 *  1. sb__qmp_connect(): connect to QEMU's -qmp unix socket, or
 *     sb__qmp_open_fd() on a socketpair end; read the greeting, negotiate
 *     capabilities.
 *  2. sb__qmp_execute() per command; sb__qmp_execute_fd() passes an fd
 *     along (SCM_RIGHTS), as `getfd` needs.
 *  3. sb__qmp_wait_event() for asynchronous events (events that arrive during
 *     sb__qmp_execute() are kept, the last QMP_EVENTS_MAX of them).
 *  4. sb__qmp_close().
 */
#ifndef AL_QMP_H
#define AL_QMP_H

#include <jansson.h>
#include <stddef.h>

#define QMP_LINE_MAX (1u << 20) /* a reply longer than this is an error */
#define QMP_EVENTS_MAX 32

struct qmp {
	int fd;                          /* the socket, -1 when closed */
	char *buf;                       /* bytes read, not yet a line */
	size_t len;                      /* bytes used in buf */
	json_t *events[QMP_EVENTS_MAX];  /* events not yet waited for */
	size_t n_events;                 /* entries used in events */
};

/* Connect and negotiate within timeout_ms. -ETIMEDOUT, -EPROTO, -errno. */
int sb__qmp_connect(struct qmp *q, const char *path, int timeout_ms);
/* The same on a connected stream `fd` (a socketpair end QEMU got as
 * `-chardev socket,fd=N`); takes fd, closing it on failure. */
int sb__qmp_open_fd(struct qmp *q, int fd, int timeout_ms);
/* Run `cmd` with `args` (may be NULL; the reference is stolen). On success
 * *ret_return (if non-NULL) gets the "return" value (caller decrefs).
 * A QMP error reply gives -EREMOTEIO with the message in errbuf. */
int sb__qmp_execute(struct qmp *q, const char *cmd, json_t *args,
		    int timeout_ms, json_t **ret_return, char *errbuf,
		    size_t errlen);
/* The same, passing `fd` with the command (for getfd / add-fd). */
int sb__qmp_execute_fd(struct qmp *q, const char *cmd, json_t *args, int fd,
		       int timeout_ms, char *errbuf, size_t errlen);
/* Wait for event `name`; *ret_event (if non-NULL) gets it. */
int sb__qmp_wait_event(struct qmp *q, const char *name, int timeout_ms,
		       json_t **ret_event);
void sb__qmp_close(struct qmp *q);

#endif
