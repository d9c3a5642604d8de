/* test_partition.c: the partitions of a queue (dispatcher/queue/queue.h):
 * their names, where an id goes, and that ids spread over them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "queue.h"

static void test_names(void **state)
{
	char b[ALQ_PART_NAME_MAX], key[ALQ_KEY_MAX], q[AL_NAME_MAX + 1];

	(void)state;
	/* partition 0 is the queue itself: N = 1 is today's layout */
	assert_int_equal(alq_partition_name(b, sizeof(b), "default", 0), 0);
	assert_string_equal(b, "default");
	assert_int_equal(alq_partition_name(b, sizeof(b), "default", 3), 0);
	assert_string_equal(b, "default~p3");
	assert_int_equal(alq_partition_name(b, sizeof(b), "q", 63), 0);
	assert_string_equal(b, "q~p63");
	/* the longest queue name still fits, and so do its keys */
	memset(q, 'a', AL_NAME_MAX);
	q[AL_NAME_MAX] = '\0';
	assert_int_equal(
	    alq_partition_name(b, sizeof(b), q, ALQ_PARTITIONS_MAX - 1), 0);
	assert_int_equal(alq_key(key, sizeof(key), b, ALQ_KEY_DIGEST,
				 "an-id-of-some-length"),
			 0);
	assert_int_equal(alq_partition_name(b, 4, "default", 1), -ENAMETOOLONG);
	/* each partition is its own hash tag, so (almost always) its own
	 * slot: these four are four slots */
	{
		unsigned slots[4];

		for (unsigned i = 0; i < 4; i++) {
			alq_partition_name(b, sizeof(b), "default", i);
			alq_key(key, sizeof(key), b, ALQ_KEY_JOBS, NULL);
			slots[i] = alq_key_slot(key, strlen(key));
			for (unsigned k = 0; k < i; k++)
				assert_int_not_equal(slots[i], slots[k]);
		}
	}
}

static void test_placement(void **state)
{
	unsigned count[8] = {0};
	char id[32];

	(void)state;
	assert_int_equal(alq_partition_of("anything", 0), 0);
	assert_int_equal(alq_partition_of("anything", 1), 0);
	/* FNV-1a 32: "a" is 0xe40c292c, "" the offset basis 0x811c9dc5;
	 * the placement is part of the layout and must never change */
	assert_int_equal(alq_partition_of("a", 0xffffffffu), 0xe40c292cu);
	assert_int_equal(alq_partition_of("", 0xffffffffu),
			 0x811c9dc5u % 0xffffffffu);
	assert_int_equal(alq_partition_of("a", 4), 0xe40c292cu % 4);
	/* 8000 ids over 8 partitions: each within 15 % of 1000 */
	for (int i = 0; i < 8000; i++) {
		unsigned p;

		snprintf(id, sizeof(id), "j-%d", i);
		p = alq_partition_of(id, 8);
		assert_true(p < 8);
		count[p]++;
	}
	for (int p = 0; p < 8; p++)
		if (count[p] < 850 || count[p] > 1150)
			fail_msg("partition %d got %u of 8000", p, count[p]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_placement),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
