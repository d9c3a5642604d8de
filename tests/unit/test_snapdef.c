/* test_snapdef.c: snapshot definitions published through Redis, without
 * Redis or VMs (dispatcher/serve/snapdef.c, worker/snapdef.c, worker/proc.c):
 * the key and what makes a definition valid; the HGETALL reply parser on
 * replies built by hand (missing, oversized, tampered fields); the worker
 * frame carrying a definition; and the worker's refusals that need no VM
 * (a malformed definition, a setup not matching its hash or naming
 * another base, no image of the base, another image of it). The build
 * itself is tests/vm/snapshot_hosts_test.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <hiredis/hiredis.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "proto.h"
#include "snapdef.h"

/* A valid definition of snapshot "snap1" on base "python" with `setup`
 * (JSON) as its setup job; *mp is the setup's msgpack (free it). */
static void make_def(struct al_snapdef *d, const char *setup, char **mp)
{
	struct al_job job = {0};
	struct al_diags diags;
	size_t len;

	memset(d, 0, sizeof(*d));
	al_diags_init(&diags);
	assert_int_equal(al_job_from_json(setup, strlen(setup), &job, &diags),
			 0);
	assert_int_equal(al_job_to_msgpack(&job, mp, &len), 0);
	assert_int_equal(al_worker_setup_hash(&job, d->setup_sha), 0);
	al_job_release(&job);
	snprintf(d->name, sizeof(d->name), "snap1");
	snprintf(d->base, sizeof(d->base), "python");
	snprintf(d->image, sizeof(d->image), "07232a8dc8bdd32b");
	d->setup = *mp;
	d->setup_len = len;
	al_snapdef_key(d, d->key);
}

#define SETUP "{\"template\":\"python\",\"sh\":\"echo 1 > /work/m\"}"

static void test_key_valid(void **state)
{
	struct al_snapdef d, e;
	char *mp, key[33];

	(void)state;
	make_def(&d, SETUP, &mp);
	assert_int_equal(strlen(d.key), 32);
	assert_true(al_snapdef_valid(&d));
	al_snapdef_key(&d, key);
	assert_string_equal(key, d.key); /* deterministic */
	/* each input changes the key: a stale key is invalid */
	e = d;
	e.image[0] = e.image[0] == '0' ? '1' : '0';
	assert_false(al_snapdef_valid(&e));
	al_snapdef_key(&e, e.key);
	assert_true(al_snapdef_valid(&e));
	assert_string_not_equal(e.key, d.key);
	e = d;
	snprintf(e.base, sizeof(e.base), "c");
	assert_false(al_snapdef_valid(&e));
	e = d;
	snprintf(e.name, sizeof(e.name), "snap2");
	assert_false(al_snapdef_valid(&e));
	/* malformed fields, even with their own key */
	e = d;
	snprintf(e.name, sizeof(e.name), "../x");
	al_snapdef_key(&e, e.key);
	assert_false(al_snapdef_valid(&e));
	e = d;
	snprintf(e.image, sizeof(e.image), "XYZ");
	al_snapdef_key(&e, e.key);
	assert_false(al_snapdef_valid(&e));
	e = d;
	e.setup_sha[63] = 0;
	al_snapdef_key(&e, e.key);
	assert_false(al_snapdef_valid(&e));
	e = d;
	e.setup_len = 0;
	assert_false(al_snapdef_valid(&e));
	e = d;
	e.setup_len = AL_JOB_MAX_BYTES + 1;
	assert_false(al_snapdef_valid(&e));
	free(mp);
}

/* An HGETALL-like reply: n/2 field-value pairs of strings. */
struct fake {
	redisReply top, el[32];
	redisReply *ptr[32];
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->top.type = REDIS_REPLY_ARRAY;
	f->top.element = f->ptr;
}

static void fake_add(struct fake *f, const char *s, size_t len)
{
	redisReply *e = &f->el[f->top.elements];

	e->type = REDIS_REPLY_STRING;
	e->str = (char *)s;
	e->len = len;
	f->ptr[f->top.elements++] = e;
}

static void fake_def(struct fake *f, const struct al_snapdef *d)
{
	fake_init(f);
	fake_add(f, "name", 4), fake_add(f, d->name, strlen(d->name));
	fake_add(f, "base", 4), fake_add(f, d->base, strlen(d->base));
	fake_add(f, "image", 5), fake_add(f, d->image, strlen(d->image));
	fake_add(f, "sha", 3), fake_add(f, d->setup_sha, 64);
	fake_add(f, "key", 3), fake_add(f, d->key, 32);
	fake_add(f, "by", 2), fake_add(f, "h:/s", 4);
	fake_add(f, "setup", 5), fake_add(f, d->setup, d->setup_len);
}

static void test_parse(void **state)
{
	struct al_snapdef d, out;
	struct fake f;
	char *mp, *setup, *big;

	(void)state;
	make_def(&d, SETUP, &mp);
	fake_def(&f, &d);
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), 0);
	assert_string_equal(out.key, d.key);
	assert_int_equal(out.setup_len, d.setup_len);
	assert_memory_equal(out.setup, d.setup, d.setup_len);
	assert_ptr_equal(out.setup, setup);
	free(setup);
	/* none: an empty reply */
	fake_init(&f);
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -ENOENT);
	assert_null(setup);
	/* a field missing (the setup) */
	fake_def(&f, &d);
	f.top.elements -= 2;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	/* an odd count, a value not a string */
	fake_def(&f, &d);
	f.top.elements--;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	fake_def(&f, &d);
	f.el[1].type = REDIS_REPLY_INTEGER;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	/* a NUL inside a name, an over-long key */
	fake_def(&f, &d);
	f.el[1].str = "snap1\0x";
	f.el[1].len = 7;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	fake_def(&f, &d);
	f.el[9].len = 33;
	f.el[9].str = "0123456789abcdef0123456789abcdef0";
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	/* a setup past the cap is refused before any copy */
	big = calloc(1, AL_JOB_MAX_BYTES + 1);
	assert_non_null(big);
	fake_def(&f, &d);
	f.el[13].str = big;
	f.el[13].len = AL_JOB_MAX_BYTES + 1;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	free(big);
	/* a setup that is not the one the key was made for is still parsed
	 * (the key covers its hash, not its bytes): the worker rehashes it */
	fake_def(&f, &d);
	f.el[13].str = "\x80";
	f.el[13].len = 1;
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), 0);
	free(setup);
	/* a tampered key */
	fake_def(&f, &d);
	f.el[9].str = "00000000000000000000000000000000";
	assert_int_equal(alq_snapdef_parse(&f.top, &out, &setup), -EBADMSG);
	free(mp);
}

static void test_frame(void **state)
{
	struct al_proc_job in = {.payload = "\x81\xa2sh\xa4true", .len = 9,
				 .queued_ms = 5, .attempt = 1};
	struct al_proc_job out;
	char *frame, *mp;
	size_t len;

	(void)state;
	make_def(&in.snap, SETUP, &mp);
	assert_int_equal(al_proc_job_frame(&in, &frame, &len), 0);
	assert_true(len <= AL_PROC_JOB_FRAME_MAX);
	assert_int_equal(al_proc_job_decode(frame + AL_FRAME_HDR,
					    len - AL_FRAME_HDR, &out), 0);
	assert_string_equal(out.snap.name, "snap1");
	assert_string_equal(out.snap.key, in.snap.key);
	assert_string_equal(out.snap.setup_sha, in.snap.setup_sha);
	assert_int_equal(out.snap.setup_len, in.snap.setup_len);
	assert_memory_equal(out.snap.setup, mp, in.snap.setup_len);
	assert_true(al_snapdef_valid(&out.snap));
	free(frame);
	/* a snap map short of a field, or with one of the wrong type, is
	 * not a frame */
	{
		msgpack_sbuffer sb;
		msgpack_packer pk;

		for (int bad = 0; bad < 2; bad++) {
			msgpack_sbuffer_init(&sb);
			msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
			msgpack_pack_map(&pk, 2);
			msgpack_pack_str_with_body(&pk, "job", 3);
			msgpack_pack_bin_with_body(&pk, in.payload, in.len);
			msgpack_pack_str_with_body(&pk, "snap", 4);
			msgpack_pack_map(&pk, bad ? 6 : 1);
			msgpack_pack_str_with_body(&pk, "name", 4);
			msgpack_pack_str_with_body(&pk, "snap1", 5);
			for (int i = 0; bad && i < 5; i++) {
				msgpack_pack_str_with_body(&pk, "key", 3);
				msgpack_pack_uint32(&pk, 1); /* not a str */
			}
			assert_int_equal(al_proc_job_decode(sb.data, sb.size,
							    &out), -EBADMSG);
			msgpack_sbuffer_destroy(&sb);
		}
	}
	/* a setup over the cap is not framed */
	in.snap.setup_len = AL_JOB_MAX_BYTES + 1;
	assert_int_equal(al_proc_job_frame(&in, &frame, &len), -E2BIG);
	/* no definition: the frame of before */
	memset(&in.snap, 0, sizeof(in.snap));
	assert_int_equal(al_proc_job_frame(&in, &frame, &len), 0);
	assert_int_equal(al_proc_job_decode(frame + AL_FRAME_HDR,
					    len - AL_FRAME_HDR, &out), 0);
	assert_int_equal(out.snap.name[0], 0);
	free(frame);
	free(mp);
}

/* The worker's refusals: none needs a VM. */
static void test_ensure_refuses(void **state)
{
	static const char *const snaps[] = {"snap1", NULL};
	char dir[] = "/tmp/al-snapdef-XXXXXX", err[300], *mp, *mp2;
	struct al_policy pol = *al_policy_default();
	struct al_snapdef d, e;
	struct sb_options sb;
	struct al_worker w;

	(void)state;
	assert_non_null(mkdtemp(dir));
	sb_options_init(&sb);
	snprintf(sb.state_dir, sizeof(sb.state_dir), "%s", dir);
	pol.snapshots = snaps;
	al_worker_init(&w, &sb, &pol, "t/w0");
	make_def(&d, SETUP, &mp);
	/* no definition handed over, or one of another name: as before */
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), 0);
	w.snapdef = &d;
	assert_int_equal(al_worker_snapshot_ensure(&w, "other", err,
						   sizeof(err)), 0);
	/* no image of the base in this state dir */
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "snapshot snap1: its base python has no "
				    "image on worker t/w0"));
	/* malformed: a key that is not its fields' */
	e = d;
	e.key[0] = e.key[0] == 'a' ? 'b' : 'a';
	w.snapdef = &e;
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), -ESTALE);
	assert_string_equal(err, "snapshot snap1: its published definition "
				 "is malformed");
	/* a setup that is not the one hashed (its key recomputed to match) */
	make_def(&e, "{\"template\":\"python\",\"sh\":\"echo 2\"}", &mp2);
	memcpy(e.setup_sha, d.setup_sha, sizeof(e.setup_sha));
	al_snapdef_key(&e, e.key);
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), -ESTALE);
	assert_string_equal(err, "snapshot snap1: its published setup does "
				 "not match its hash");
	free(mp2);
	/* a setup on another template than the base */
	make_def(&e, "{\"template\":\"c\",\"sh\":\"true\"}", &mp2);
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "names template c, not its base python"));
	free(mp2);
	/* bytes that are no job */
	e = d;
	e.setup = "\xc1";
	e.setup_len = 1;
	assert_int_equal(al_worker_snapshot_ensure(&w, "snap1", err,
						   sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "does not decode"));
	w.snapdef = NULL;
	al_worker_release(&w);
	free(mp);
	rmdir(dir);
}

/* The hosts' names: hostname:state_dir, two state dirs two hosts. */
static void test_host(void **state)
{
	char a[ALQ_SNAPDEF_HOST_MAX], b[ALQ_SNAPDEF_HOST_MAX], hn[65] = "";

	(void)state;
	gethostname(hn, sizeof(hn) - 1);
	alq_snapdef_host("/var/tmp/airlock-hostA", a);
	alq_snapdef_host("/var/tmp/airlock-hostB", b);
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(a, hn, strlen(hn)), 0);
	assert_string_equal(a + strlen(hn), ":/var/tmp/airlock-hostA");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key_valid),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_frame),
	    cmocka_unit_test(test_ensure_refuses),
	    cmocka_unit_test(test_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
