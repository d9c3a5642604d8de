/* test_mp.c: the bounded msgpack front door (results/mp.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

static long check(const char *bytes, size_t len)
{
	return al_mp_check(bytes, len, AL_NODES_MAX);
}

/* A header announcing more elements than bytes remain is refused before
 * msgpack-c can allocate for it. */
static void test_hostile_counts(void **state)
{
	(void)state;
	assert_int_equal(check("\xdd\xff\xff\xff\xff", 5), -EBADMSG);
	assert_int_equal(check("\xdf\xff\xff\xff\xff", 5), -EBADMSG);
	assert_int_equal(check("\xdc\x00\x03\x01\x02", 5), -EBADMSG);
	assert_int_equal(check("\xde\x00\x02\x01\x02\x03", 6), -EBADMSG);
	assert_int_equal(check("\xc6\xff\xff\xff\xff", 5), -EBADMSG);
	assert_int_equal(check("\xdb\x00\x00\x00\x02x", 6), -EBADMSG);
	assert_int_equal(check("\xc9\x00\x00\x00\x01\x05", 6), -EBADMSG);
	assert_int_equal(check("\xc1", 1), -EBADMSG);
	assert_int_equal(check("", 0), -EBADMSG);
	assert_int_equal(check("\xcf\x00", 2), -EBADMSG);
}

static void test_well_formed(void **state)
{
	(void)state;
	assert_int_equal(check("\x92\x01\xa1x", 4), 3);
	assert_int_equal(check("\x81\xa1k\xc0", 4), 3);
	assert_int_equal(check("\xc4\x02\x00\x01", 4), 1);
	assert_int_equal(check("\xd4\x01\x02", 3), 1);
	assert_int_equal(check("\xcb\x00\x00\x00\x00\x00\x00\x00\x00", 9), 1);
	assert_int_equal(check("\x90", 1), 1);
	/* trailing bytes */
	assert_int_equal(check("\x01\x02", 2), -EBADMSG);
}

static void test_depth(void **state)
{
	char buf[AL_DEPTH_MAX + 2];
	msgpack_zone zone;
	msgpack_object o;

	(void)state;
	/* AL_DEPTH_MAX nested arrays: fine, and msgpack-c agrees */
	memset(buf, 0x91, AL_DEPTH_MAX - 1);
	buf[AL_DEPTH_MAX - 1] = (char)0x90;
	assert_int_equal(check(buf, AL_DEPTH_MAX), AL_DEPTH_MAX);
	msgpack_zone_init(&zone, 1024);
	assert_int_equal(al_mp_unpack(buf, AL_DEPTH_MAX, 100, &zone, &o), 0);
	msgpack_zone_destroy(&zone);
	/* one more: refused */
	memset(buf, 0x91, AL_DEPTH_MAX);
	buf[AL_DEPTH_MAX] = (char)0x90;
	assert_int_equal(check(buf, AL_DEPTH_MAX + 1), -E2BIG);
}

static void test_node_cap(void **state)
{
	char buf[1 + 4 + 100];
	msgpack_zone zone;
	msgpack_object o;

	(void)state;
	buf[0] = (char)0xdd;
	buf[1] = buf[2] = buf[3] = 0;
	buf[4] = 100;
	memset(buf + 5, 0, 100);
	assert_int_equal(al_mp_check(buf, sizeof(buf), 101), 101);
	assert_int_equal(al_mp_check(buf, sizeof(buf), 100), -E2BIG);
	msgpack_zone_init(&zone, 1024);
	assert_int_equal(al_mp_unpack(buf, sizeof(buf), 100, &zone, &o),
			 -E2BIG);
	assert_int_equal(al_mp_unpack(buf, sizeof(buf), 1000, &zone, &o), 0);
	assert_int_equal(o.type, MSGPACK_OBJECT_ARRAY);
	assert_int_equal(o.via.array.size, 100);
	msgpack_zone_destroy(&zone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_counts),
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_node_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
