/* test_proto.c: the agent protocol: round trips, framing, hostile bytes. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

/* Encode, decode the whole frame, return the decoded message. */
static void round_trip(const struct al_msg *in, struct al_msg *out)
{
	struct al_diags d;
	char *buf = NULL;
	size_t len = 0;

	al_diags_init(&d);
	assert_int_equal(al_msg_encode(in, &buf, &len), 0);
	assert_true(len > AL_FRAME_HDR);
	assert_int_equal(al_frame_len((uint8_t *)buf), len - AL_FRAME_HDR);
	assert_int_equal(al_frame_decode(buf, len, out, &d), 0);
	assert_int_equal(out->type, in->type);
	free(buf);
}

static void blob_eq(const struct al_blob *a, const struct al_blob *b)
{
	assert_int_equal(a->len, b->len);
	if (a->len)
		assert_memory_equal(a->data, b->data, a->len);
}

static void test_simple_types(void **state)
{
	static const enum al_msg_type types[] = {AL_MSG_HELLO, AL_MSG_PING,
						 AL_MSG_OK, AL_MSG_PONG};
	struct al_msg in = {0}, out;

	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		in.type = types[i];
		round_trip(&in, &out);
		al_msg_release(&out);
	}
	assert_string_equal(al_msg_type_name(AL_MSG_RUN_STEP), "run_step");
	assert_null(al_msg_type_name(AL_MSG_TYPE_COUNT));
}

static void test_hello(void **state)
{
	struct al_msg in = {.type = AL_MSG_HELLO}, out;

	(void)state;
	in.u.hello.v = AL_PROTO_VERSION;
	in.u.hello.agent = "0.1.0";
	in.u.hello.kernel = "6.1.0-28-cloud-amd64";
	in.u.hello.template_ = "python";
	round_trip(&in, &out);
	assert_int_equal(out.u.hello.v, AL_PROTO_VERSION);
	assert_string_equal(out.u.hello.agent, "0.1.0");
	assert_string_equal(out.u.hello.kernel, "6.1.0-28-cloud-amd64");
	assert_string_equal(out.u.hello.template_, "python");
	al_msg_release(&out);
}

/* signal {sig, grace_ms} (v4): bounded; the names the host takes */
static void test_signal_msg(void **state)
{
	struct al_msg in = {.type = AL_MSG_SIGNAL}, out;
	char *buf = NULL;
	size_t len;

	(void)state;
	in.u.signal.sig = SIGTERM;
	in.u.signal.grace_ms = 2000;
	round_trip(&in, &out);
	assert_int_equal(out.u.signal.sig, SIGTERM);
	assert_int_equal(out.u.signal.grace_ms, 2000);
	al_msg_release(&out);
	/* sig 0 and past 64, a grace past the cap: refused */
	for (int i = 0; i < 3; i++) {
		in.u.signal.sig = i == 0 ? 0 : i == 1 ? 65 : SIGTERM;
		in.u.signal.grace_ms = i == 2 ? AL_SIGNAL_GRACE_MAX + 1 : 0;
		assert_int_equal(al_msg_encode(&in, &buf, &len), 0);
		assert_int_not_equal(al_frame_decode(buf, len, &out, NULL), 0);
		free(buf);
	}
	assert_int_equal(al_step_signal_number("TERM"), SIGTERM);
	assert_int_equal(al_step_signal_number("sigkill"), SIGKILL);
	assert_int_equal(al_step_signal_number("usr1"), SIGUSR1);
	assert_int_equal(al_step_signal_number("STOP"), 0);
	assert_int_equal(al_step_signal_number("SIG"), 0);
	assert_int_equal(al_step_signal_number(NULL), 0);
	assert_true(al_step_signal_ok(SIGINT));
	assert_false(al_step_signal_ok(SIGSTOP));
	assert_false(al_step_signal_ok(0));
}

/* zygote {modules}, bounded; run_step's optional warmup flag */
static void test_zygote_warmup(void **state)
{
	struct al_msg in = {.type = AL_MSG_ZYGOTE}, out;
	char *argv[] = {"true", NULL};
	char *big = malloc(AL_ZYGOTE_MODULES_MAX + 2);
	char *buf = NULL;
	size_t len;

	(void)state;
	in.u.zygote.modules = "typing re json";
	round_trip(&in, &out);
	assert_string_equal(out.u.zygote.modules, "typing re json");
	al_msg_release(&out);
	/* one byte over the cap: the decoder refuses it */
	assert_non_null(big);
	memset(big, 'a', AL_ZYGOTE_MODULES_MAX + 1);
	big[AL_ZYGOTE_MODULES_MAX + 1] = '\0';
	in.u.zygote.modules = big;
	assert_int_equal(al_msg_encode(&in, &buf, &len), 0);
	assert_int_not_equal(al_frame_decode(buf, len, &out, NULL), 0);
	free(buf);
	free(big);
	in = (struct al_msg){.type = AL_MSG_RUN_STEP};
	in.u.run_step.step.argv = argv;
	in.u.run_step.step.argc = 1;
	in.u.run_step.warmup = true;
	round_trip(&in, &out);
	assert_true(out.u.run_step.warmup);
	al_msg_release(&out);
	in.u.run_step.warmup = false;
	round_trip(&in, &out);
	assert_false(out.u.run_step.warmup);
	assert_false(out.u.run_step.background);
	al_msg_release(&out);
}

/* v5: run_step's optional background flag (a session exec's), a bool
 * and nothing else; an old decoder's view (no key) is false */
static void test_run_step_background(void **state)
{
	static const uint8_t not_bool[] = {
	    0x83, 0xa1, 't',  0xa8, 'r', 'u', 'n', '_', 's', 't', 'e', 'p',
	    0xa4, 's',	't',  'e',  'p', 0x81, 0xa2, 's', 'h', 0xa1, 'x',
	    0xaa, 'b',	'a',  'c',  'k', 'g', 'r', 'o', 'u', 'n', 'd', 0x01};
	struct al_msg in = {.type = AL_MSG_RUN_STEP}, out;
	char *argv[] = {"true", NULL};

	(void)state;
	in.u.run_step.step.argv = argv;
	in.u.run_step.step.argc = 1;
	in.u.run_step.background = true;
	round_trip(&in, &out);
	assert_true(out.u.run_step.background);
	assert_false(out.u.run_step.warmup);
	al_msg_release(&out);
	assert_int_equal(al_msg_decode(not_bool, sizeof(not_bool), &out, NULL),
			 -EBADMSG);
	assert_true(AL_PROTO_VERSION >= AL_PROTO_BACKGROUND_V);
}

static void test_reseed_setup(void **state)
{
	uint8_t ent[64];
	struct al_msg in = {.type = AL_MSG_RESEED}, out;

	(void)state;
	for (size_t i = 0; i < sizeof(ent); i++)
		ent[i] = (uint8_t)(i * 37);
	in.u.reseed.entropy = (struct al_blob){ent, sizeof(ent)};
	in.u.reseed.time_ns = 1732240000123456789ull;
	round_trip(&in, &out);
	blob_eq(&in.u.reseed.entropy, &out.u.reseed.entropy);
	assert_true(out.u.reseed.time_ns == in.u.reseed.time_ns);
	al_msg_release(&out);

	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_SETUP;
	in.u.setup.limits = (struct al_limits){.memory_mb = 512,
					       .output_bytes = 1 << 20,
					       .pids = 64,
					       .disk_mb = 100};
	round_trip(&in, &out);
	assert_memory_equal(&in.u.setup.limits, &out.u.setup.limits,
			    sizeof(struct al_limits));
	assert_null(out.u.setup.entropy.data); /* v1 setup: no reseed */
	assert_true(out.u.setup.time_ns == 0);
	al_msg_release(&out);

	/* v2: setup carries a reseed; ok acknowledges it */
	in.u.setup.entropy = (struct al_blob){ent, sizeof(ent)};
	in.u.setup.time_ns = 1732240000123456789ull;
	round_trip(&in, &out);
	assert_memory_equal(&in.u.setup.limits, &out.u.setup.limits,
			    sizeof(struct al_limits));
	blob_eq(&in.u.setup.entropy, &out.u.setup.entropy);
	assert_true(out.u.setup.time_ns == in.u.setup.time_ns);
	al_msg_release(&out);
	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_OK;
	in.u.ok.reseeded = true;
	round_trip(&in, &out);
	assert_true(out.u.ok.reseeded);
	al_msg_release(&out);
}

/* A v1 peer's messages decode in v2 and v2's extra keys are skipped by
 * the generic decoder the v1 code shares: the bytes of each version. */
static void test_setup_versions(void **state)
{
	struct al_msg m;

	(void)state;
	/* v1 ok: {"t": "ok"} */
	assert_int_equal(al_msg_decode("\x81\xa1t\xa2ok", 6, &m, NULL), 0);
	assert_int_equal(m.type, AL_MSG_OK);
	assert_false(m.u.ok.reseeded);
	al_msg_release(&m);
	/* v2 setup with a reseed of 32 bytes of 0x41, time_ns 7 */
	assert_int_equal(
	    al_msg_decode("\x84\xa1t\xa5setup\xa6limits\x81\xa9memory_mb"
			  "\xcd\x02\x00\xa7" "entropy\xc4\x20"
			  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
			  "\xa7time_ns\x07",
			  81, &m, NULL),
	    0);
	assert_int_equal(m.type, AL_MSG_SETUP);
	assert_int_equal(m.u.setup.limits.memory_mb, 512);
	assert_int_equal(m.u.setup.entropy.len, 32);
	assert_true(m.u.setup.time_ns == 7);
	al_msg_release(&m);
	/* the reseed's bounds hold in setup too: 31 bytes is refused */
	assert_int_equal(
	    al_msg_decode("\x83\xa1t\xa5setup\xa6limits\x80\xa7" "entropy"
			  "\xc4\x1f" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			  58, &m, NULL),
	    -EBADMSG);
}

static void test_files(void **state)
{
	uint8_t bin[] = {0, 1, 0xff, 0xfe};
	struct al_file files[] = {
	    {"main.py", {(uint8_t *)"print(1)\n", 9}},
	    {"data/blob.bin", {bin, sizeof(bin)}},
	    {"empty", {NULL, 0}},
	};
	char *missing[] = {"nope.txt"};
	struct al_msg in = {.type = AL_MSG_PUT_FILES}, out;

	(void)state;
	in.u.files.files = files;
	in.u.files.n_files = 3;
	round_trip(&in, &out);
	assert_int_equal(out.u.files.n_files, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(out.u.files.files[i].path, files[i].path);
		blob_eq(&files[i].content, &out.u.files.files[i].content);
	}
	al_msg_release(&out);

	in.type = AL_MSG_FILES;
	in.u.files.missing = missing;
	in.u.files.n_missing = 1;
	round_trip(&in, &out);
	assert_int_equal(out.u.files.n_files, 3);
	assert_int_equal(out.u.files.n_missing, 1);
	assert_string_equal(out.u.files.missing[0], "nope.txt");
	al_msg_release(&out);
}

static void test_run_step_exit(void **state)
{
	char *argv[] = {"echo", "hi", NULL};
	struct al_env env[] = {{"FOO", "bar"}};
	struct al_msg in = {.type = AL_MSG_RUN_STEP}, out;
	struct al_step_result *res;

	(void)state;
	in.u.run_step.step = (struct al_step){.argv = argv,
					      .argc = 2,
					      .env = env,
					      .n_env = 1,
					      .cwd = "sub",
					      .timeout_ms = 500,
					      .cpu_ms = 250,
					      .has_stdin = true,
					      .stdin_ = {(uint8_t *)"abc", 3}};
	in.u.run_step.limits.output_bytes = 4096;
	in.u.run_step.stream = true;
	round_trip(&in, &out);
	assert_int_equal(out.u.run_step.step.argc, 2);
	assert_string_equal(out.u.run_step.step.argv[1], "hi");
	assert_string_equal(out.u.run_step.step.env[0].value, "bar");
	assert_string_equal(out.u.run_step.step.cwd, "sub");
	assert_int_equal(out.u.run_step.step.timeout_ms, 500);
	assert_int_equal(out.u.run_step.step.cpu_ms, 250);
	blob_eq(&in.u.run_step.step.stdin_, &out.u.run_step.step.stdin_);
	assert_int_equal(out.u.run_step.limits.output_bytes, 4096);
	assert_true(out.u.run_step.stream);
	al_msg_release(&out);

	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_EXIT;
	res = &in.u.exit.result;
	res->status = AL_SG;
	res->signal = 9;
	res->stdout_ = (struct al_blob){(uint8_t *)"\xff\x00x", 3};
	res->stdout_bytes = 3;
	res->wall_ms = 12;
	round_trip(&in, &out);
	assert_int_equal(out.u.exit.result.status, AL_SG);
	assert_int_equal(out.u.exit.result.signal, 9);
	blob_eq(&res->stdout_, &out.u.exit.result.stdout_);
	assert_int_equal(out.u.exit.result.wall_ms, 12);
	al_msg_release(&out);
}

static void test_out_error_get(void **state)
{
	char *paths[] = {"a", "b/c"};
	struct al_msg in = {.type = AL_MSG_OUT}, out;

	(void)state;
	in.u.out.fd = 2;
	in.u.out.data = (struct al_blob){(uint8_t *)"oops\n", 5};
	round_trip(&in, &out);
	assert_int_equal(out.u.out.fd, 2);
	blob_eq(&in.u.out.data, &out.u.out.data);
	al_msg_release(&out);

	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_ERROR;
	in.u.error.msg = "cgroup: no space";
	round_trip(&in, &out);
	assert_string_equal(out.u.error.msg, "cgroup: no space");
	al_msg_release(&out);

	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_GET_FILES;
	in.u.get_files.paths = paths;
	in.u.get_files.n_paths = 2;
	in.u.get_files.max_bytes = 1000;
	round_trip(&in, &out);
	assert_int_equal(out.u.get_files.n_paths, 2);
	assert_string_equal(out.u.get_files.paths[1], "b/c");
	assert_int_equal(out.u.get_files.max_bytes, 1000);
	al_msg_release(&out);

	/* required fields must be there to encode */
	memset(&in, 0, sizeof(in));
	in.type = AL_MSG_ERROR;
	assert_int_equal(al_msg_encode(&in, &(char *){NULL}, &(size_t){0}),
			 -EINVAL);
}

static void test_truncated(void **state)
{
	struct al_msg in = {.type = AL_MSG_ERROR}, out;
	char *buf;
	size_t len;

	(void)state;
	in.u.error.msg = "some message";
	assert_int_equal(al_msg_encode(&in, &buf, &len), 0);
	for (size_t n = 0; n < len; n++) {
		struct al_diags d;

		al_diags_init(&d);
		assert_true(al_frame_decode(buf, n, &out, &d) < 0);
		assert_int_equal(out.type, AL_MSG_NONE);
		/* a body cut short, with the prefix saying so */
		if (n <= AL_FRAME_HDR)
			continue;
		assert_true(al_msg_decode(buf + AL_FRAME_HDR, n - AL_FRAME_HDR,
					  &out, NULL) < 0);
	}
	free(buf);
}

static void test_reader_oversize(void **state)
{
	static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff};
	static const uint8_t over[] = {0x02, 0x80, 0x00, 0x01};
	static const uint8_t zero[] = {0, 0, 0, 0};
	struct al_frame_reader r;

	(void)state;
	al_frame_reader_init(&r, 0);
	assert_int_equal(al_frame_reader_feed(&r, huge, 4), -EMSGSIZE);
	assert_null(r.body); /* rejected before any allocation */
	al_frame_reader_release(&r);

	al_frame_reader_init(&r, 0);
	assert_int_equal(al_frame_len(over), AL_FRAME_MAX + 1);
	assert_int_equal(al_frame_reader_feed(&r, over, 4), -EMSGSIZE);
	assert_null(r.body);
	al_frame_reader_release(&r);

	al_frame_reader_init(&r, 0);
	assert_int_equal(al_frame_reader_feed(&r, zero, 4), -EMSGSIZE);
	al_frame_reader_release(&r);

	/* a lower cap is honoured; a huge announced frame allocates only as
	 * bytes arrive */
	al_frame_reader_init(&r, 100);
	assert_int_equal(al_frame_reader_feed(&r, "\0\0\0\x65", 4), -EMSGSIZE);
	al_frame_reader_release(&r);
	/* so is a higher one: a result frame may pass AL_FRAME_MAX */
	al_frame_reader_init(&r, AL_RESULT_MAX_BYTES);
	assert_int_equal(al_frame_reader_feed(&r, "\x06\0\0\0", 4), 4);
	assert_int_equal(al_frame_reader_want(&r), AL_RESULT_MAX_BYTES);
	al_frame_reader_release(&r);
	al_frame_reader_init(&r, AL_RESULT_MAX_BYTES);
	assert_int_equal(al_frame_reader_feed(&r, "\x06\0\0\x01", 4),
			 -EMSGSIZE);
	al_frame_reader_release(&r);
	al_frame_reader_init(&r, 0);
	assert_int_equal(al_frame_reader_feed(&r, "\x02\x00\x00\x00xy", 6), 6);
	assert_true(r.cap <= (64u << 10));
	assert_int_equal(al_frame_reader_want(&r), (32u << 20) - 2);
	al_frame_reader_release(&r);

	assert_int_equal(al_frame_decode(huge, 4, &(struct al_msg){0}, NULL),
			 -EMSGSIZE);
}

static void test_reader_stream(void **state)
{
	struct al_msg a = {.type = AL_MSG_PING}, b = {.type = AL_MSG_ERROR};
	struct al_frame_reader r;
	char *fa, *fb, both[256];
	size_t la, lb, off = 0, got = 0;
	uint8_t *body;
	size_t blen;

	(void)state;
	b.u.error.msg = "x";
	assert_int_equal(al_msg_encode(&a, &fa, &la), 0);
	assert_int_equal(al_msg_encode(&b, &fb, &lb), 0);
	memcpy(both, fa, la);
	memcpy(both + la, fb, lb);
	al_frame_reader_init(&r, 0);
	/* a caller reading at most want() bytes never crosses a frame */
	while (off < la + lb) {
		size_t n = al_frame_reader_want(&r);
		long used;

		n = n < 3 ? n : 3;
		used = al_frame_reader_feed(&r, both + off, n);
		assert_int_equal(used, (long)n);
		off += n;
		if (al_frame_reader_ready(&r)) {
			struct al_msg m;

			assert_int_equal(al_frame_reader_take(&r, &body, &blen),
					 0);
			assert_int_equal(al_msg_decode(body, blen, &m, NULL),
					 0);
			assert_int_equal(m.type,
					 got ? AL_MSG_ERROR : AL_MSG_PING);
			al_msg_release(&m);
			free(body);
			got++;
		}
	}
	assert_int_equal(got, 2);
	assert_int_equal(al_frame_reader_take(&r, &body, &blen), -EAGAIN);
	/* feeding everything at once stops at the end of the first frame */
	assert_int_equal(al_frame_reader_feed(&r, both, la + lb), (long)la);
	assert_int_equal(al_frame_reader_feed(&r, both + la, lb), 0);
	al_frame_reader_release(&r);
	free(fa);
	free(fb);
}

/* Decode a msgpack body built by hand; expect failure. */
static void bad(const char *body, size_t len)
{
	struct al_msg m;
	struct al_diags d;

	al_diags_init(&d);
	assert_true(al_msg_decode(body, len, &m, &d) < 0);
	assert_int_equal(m.type, AL_MSG_NONE);
}

#define BAD(lit) bad(lit, sizeof(lit) - 1)

static void test_garbage(void **state)
{
	uint8_t junk[4096];
	struct al_msg m;
	uint32_t x = 12345;

	(void)state;
	BAD("\xc1");		      /* never-used byte */
	BAD("\x91\x01");	      /* array, not map */
	BAD("\x80");		      /* no t */
	BAD("\x81\xa1t\xa4nope");     /* unknown type */
	BAD("\x81\xa1t\x01");	      /* t not a string */
	BAD("\x81\xa1t\xa4ping\x00"); /* trailing byte */
	BAD("\x81\xa1t\xa5reset");    /* unknown */
	BAD("\x81\xa1t\xa5"
	    "error"); /* missing msg */
	BAD("\x82\xa1t\xa5"
	    "error\xa3msg\x01"); /* msg not a string */
	BAD("\x83\xa1t\xa3out\xa2"
	    "fd\x03\xa4"
	    "data\xc4\x01x"); /* fd 3 */
	BAD("\x83\xa1t\xa3out\xa2"
	    "fd\x01\xa4"
	    "data\xc4\x00"); /* empty */
	BAD("\x83\xa1t\xa5"
	    "error\xa3msg\xa1"
	    "a\xa3msg\xa1"
	    "b"); /* dup */
	BAD("\x83\xa1t\xa6reseed\xa7"
	    "entropy\xc4\x01x\xa7time_ns\x00");
	BAD("\x82\xa1t\xa9get_files\xa5paths\x91\xa3../x"); /* escape */
	BAD("\x82\xa1t\xa9get_files\xa5paths\x91\xa2/x");   /* absolute */
	BAD("\x82\xa1t\xa5"
	    "error\xa3msg\xa2"
	    "a\x00"); /* NUL */
	/* a 2^32-1 element array announced in 6 bytes */
	BAD("\x81\xa1t\xdd\xff\xff\xff\xff");
	for (int round = 0; round < 2000; round++) {
		size_t n = 1 + (x % sizeof(junk));

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			junk[i] = (uint8_t)(x >> 16);
		}
		if (al_msg_decode(junk, n, &m, NULL) == 0)
			al_msg_release(&m);
	}
}

static void test_paths(void **state)
{
	static const char *const good[] = {"a", "a/b", "a.b/c..d", ".x",
					   "a/.b"};
	static const char *const evil[] = {"",	 "/a",	   "a/",  "a//b", ".",
					   "..", "a/../b", "a/.", "./a"};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(al_relpath_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(evil) / sizeof(evil[0]); i++)
		assert_false(al_relpath_valid(evil[i], strlen(evil[i])));
	assert_false(al_relpath_valid("a\0b", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simple_types),
	    cmocka_unit_test(test_hello),
	    cmocka_unit_test(test_zygote_warmup),
	    cmocka_unit_test(test_run_step_background),
	    cmocka_unit_test(test_signal_msg),
	    cmocka_unit_test(test_reseed_setup),
	    cmocka_unit_test(test_setup_versions),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_run_step_exit),
	    cmocka_unit_test(test_out_error_get),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_reader_oversize),
	    cmocka_unit_test(test_reader_stream),
	    cmocka_unit_test(test_garbage),
	    cmocka_unit_test(test_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
