/* redisraw.h: plain hiredis commands against a redistest server, for the
 * tests that look at Redis's state behind the code under test. cmocka
 * asserts: include after <cmocka.h>.
 */
#ifndef AL_REDISRAW_H
#define AL_REDISRAW_H

#include <stdarg.h>

#include <hiredis/hiredis.h>

#include "redistest.h"

/* A blocking connection to t's socket; the test frees it. */
static inline redisContext *redistest_raw(const struct redistest *t)
{
	redisContext *rc = redisConnectUnix(t->sock);

	assert_non_null(rc);
	assert_int_equal(rc->err, 0);
	return rc;
}

/* A command whose reply must be an integer: that integer. */
static inline long long redistest_int(redisContext *rc, const char *fmt,
				      ...)
{
	redisReply *r;
	long long v;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	if (r->type != REDIS_REPLY_INTEGER)
		fail_msg("expected an integer, got type %d (%s)", r->type,
			 r->type == REDIS_REPLY_ERROR ? r->str : "");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

#endif
