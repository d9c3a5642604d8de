/* util.h: small helpers shared inside sandbox/. */
#ifndef AL_SB_UTIL_H
#define AL_SB_UTIL_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t sb_now_ms(void);
/* Milliseconds left until `deadline` (0 when past), for poll(). */
int sb_remaining(uint64_t deadline);
/* Connect a stream to a unix socket, retrying while it does not exist yet
 * or refuses, until `deadline`. Returns the fd (CLOEXEC) or -errno
 * (-ETIMEDOUT when it never appeared). */
int sb_connect_unix(const char *path, uint64_t deadline);

#endif
