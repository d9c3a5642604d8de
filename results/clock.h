/* clock.h: one time base and one deadline type for host and guest.
 *
 * Every wait in Airlock (a QMP reply, an agent frame, a step's timeout, a
 * queue heartbeat) is a deadline on CLOCK_MONOTONIC in milliseconds, so a
 * wall-clock jump never stretches or cuts one. al_wall_ms() is for the
 * few places that store an absolute time (Redis stream entries, results).
 * No I/O: reading a clock is all this does, so results/ stays shared by
 * host and guest.
 */
#ifndef AL_CLOCK_H
#define AL_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t al_now_ms(void);
/* CLOCK_REALTIME in milliseconds since the epoch. */
uint64_t al_wall_ms(void);

/* A point on the monotonic clock; 0 means "no deadline". */
struct al_deadline {
	uint64_t at_ms; /* al_now_ms() value at which it expires, 0 = never */
};

/* A deadline `ms` from now (0 ms: already expired; use AL_NO_DEADLINE for
 * none). */
struct al_deadline al_deadline_in(uint64_t ms);
#define AL_NO_DEADLINE ((struct al_deadline){0})
/* The earlier of two deadlines (a "never" loses to any real one). */
struct al_deadline al_deadline_min(struct al_deadline a, struct al_deadline b);
/* Milliseconds left, clamped to [0, INT32_MAX]: a poll() timeout. -1 (wait
 * forever) for a deadline of 0. */
int al_deadline_poll_ms(struct al_deadline d);
/* Has it passed? Never true for a deadline of 0. */
_Bool al_deadline_passed(struct al_deadline d);

#endif
