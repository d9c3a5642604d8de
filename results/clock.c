/* clock.c: the monotonic time base and deadlines (see clock.h). */
#include <stdint.h>
#include <time.h>

#include "clock.h"

static uint64_t read_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t al_now_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

uint64_t al_wall_ms(void)
{
	return read_ms(CLOCK_REALTIME);
}

struct al_deadline al_deadline_in(uint64_t ms)
{
	uint64_t now = al_now_ms();

	/* never 0, which would read as "no deadline" */
	return (struct al_deadline){.at_ms = now + ms > now ? now + ms : now};
}

struct al_deadline al_deadline_min(struct al_deadline a, struct al_deadline b)
{
	if (a.at_ms == 0)
		return b;
	if (b.at_ms == 0)
		return a;
	return a.at_ms < b.at_ms ? a : b;
}

int al_deadline_poll_ms(struct al_deadline d)
{
	uint64_t now;

	if (d.at_ms == 0)
		return -1;
	now = al_now_ms();
	if (now >= d.at_ms)
		return 0;
	return d.at_ms - now > INT32_MAX ? INT32_MAX : (int)(d.at_ms - now);
}

_Bool al_deadline_passed(struct al_deadline d)
{
	return d.at_ms != 0 && al_now_ms() >= d.at_ms;
}
