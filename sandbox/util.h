/* util.h: small helpers shared inside sandbox/: the one deadline-bound
 * read, unix-socket connect and the binary lookup. Time is results/
 * clock.h's (al_now_ms, struct al_deadline). Internal to sandbox/. */
#ifndef AL_SB_UTIL_H
#define AL_SB_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "clock.h"

/* Wait until `fd` is readable or `d` passes, then read once into buf.
 * Returns the bytes read (> 0), 0 at end of stream, -ETIMEDOUT when the
 * deadline came first, or -errno; EINTR and EAGAIN are retried. The one
 * read loop of QMP replies and agent frames. */
ssize_t sb_read_deadline(int fd, void *buf, size_t len, struct al_deadline d);
/* Connect a stream to a unix socket, retrying while it does not exist yet
 * or refuses, until `d`. Returns the fd (CLOEXEC) or -errno (-ETIMEDOUT
 * when it never appeared). */
int sb_connect_unix(const char *path, struct al_deadline d);
/* A binary: a path (checked executable), or a name looked up in PATH.
 * -ENOENT when not found. */
int sb_find_binary(const char *name, char *out, size_t size);

#endif
