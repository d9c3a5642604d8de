/* test_agent_client.c: the host's caps against a guest that ignores them.
 *
 * A fake agent, a forked child on the other end of a real socketpair,
 * reads each real request frame and answers with real frames built by
 * al_msg_encode, lying the way a compromised guest would: a step's stdout
 * far past the job's output_bytes, streamed chunks past the cap, files
 * nobody asked for, files past max_bytes. The host must cut, mark and
 * refuse on its own.
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_client.h"

#define CALL_MS 10000
#define BIG	(16u << 20) /* what the lying guest sends: AL_OUTPUT_MAX */

/* What the fake agent answers with (built in the child, after the fork). */
typedef void (*reply_fn)(int fd);

struct fx {
	int fd;			  /* our end */
	pid_t agent;		  /* the fake agent */
	struct sb__agent_client c; /* client on fd */
};

static void send_msg(int fd, const struct al_msg *m)
{
	char *buf = NULL;
	size_t len = 0, off = 0;

	if (al_msg_encode(m, &buf, &len) < 0)
		_exit(2);
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n <= 0)
			_exit(3);
		off += (size_t)n;
	}
	free(buf);
}

/* Read one request frame (and ignore it: the reply is scripted). */
static void read_request(int fd)
{
	struct al_frame_reader rd;
	uint8_t buf[4096], *body;
	size_t len;

	al_frame_reader_init(&rd, 0);
	while (!al_frame_reader_ready(&rd)) {
		size_t want = al_frame_reader_want(&rd);
		ssize_t n =
		    read(fd, buf, want < sizeof(buf) ? want : sizeof(buf));

		if (n <= 0 || al_frame_reader_feed(&rd, buf, (size_t)n) < 0)
			_exit(4);
	}
	if (al_frame_reader_take(&rd, &body, &len) < 0)
		_exit(5);
	free(body);
	al_frame_reader_release(&rd);
}

static void start(struct fx *f, reply_fn reply)
{
	int sv[2];

	memset(f, 0, sizeof(*f));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	f->agent = fork();
	assert_true(f->agent >= 0);
	if (f->agent == 0) {
		close(sv[0]);
		read_request(sv[1]);
		reply(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	f->fd = sv[0];
	sb__agent_client_init(&f->c, f->fd);
}

static void stop(struct fx *f)
{
	int st = 0;

	sb__agent_client_release(&f->c);
	close(f->fd);
	assert_int_equal(waitpid(f->agent, &st, 0), f->agent);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static struct al_blob filled(size_t len, int c)
{
	struct al_blob b = {malloc(len + 1), len};

	if (!b.data)
		_exit(6);
	memset(b.data, c, len);
	b.data[len] = '\0';
	return b;
}

/* A step "OK" with 16 MiB of stdout, not truncated, 0 bytes written. */
static void reply_big_exit(int fd)
{
	struct al_msg m = {.type = AL_MSG_EXIT};

	m.u.exit.result.status = AL_OK;
	m.u.exit.result.has_exit_code = true;
	m.u.exit.result.stdout_ = filled(BIG, 'x');
	m.u.exit.result.stderr_ = filled(3, 'e');
	send_msg(fd, &m);
	al_msg_release(&m);
}

static void test_exit_past_cap_is_cut(void **state)
{
	struct al_step s = {.sh = "yes"};
	struct al_limits lim = {.output_bytes = 1024};
	struct al_step_result r = {0};
	struct fx f;

	(void)state;
	start(&f, reply_big_exit);
	assert_int_equal(
	    sb__agent_client_run_step(&f.c, &s, &lim, NULL, NULL, CALL_MS, &r),
	    0);
	assert_int_equal(r.stdout_.len, 1024);
	assert_true(r.stdout_truncated);
	assert_true(r.stdout_bytes >= BIG); /* what it sent, at least */
	assert_int_equal(r.status, AL_OL);
	assert_int_equal(r.stdout_.data[1024], '\0');
	/* the 16 MiB past the cap were handed back, not kept */
	assert_true(malloc_usable_size(r.stdout_.data) < (64u << 10));
	/* stderr was under the cap: untouched */
	assert_int_equal(r.stderr_.len, 3);
	assert_false(r.stderr_truncated);
	assert_false(f.c.broken);
	al_step_result_release(&r);
	stop(&f);
}

/* Within the cap nothing changes (a real status stays). */
static void reply_small_exit(int fd)
{
	struct al_msg m = {.type = AL_MSG_EXIT};

	m.u.exit.result.status = AL_RE;
	m.u.exit.result.has_exit_code = true;
	m.u.exit.result.exit_code = 1;
	m.u.exit.result.stdout_ = filled(1024, 'y');
	m.u.exit.result.stdout_bytes = 1024;
	send_msg(fd, &m);
	al_msg_release(&m);
}

static void test_exit_at_cap_is_kept(void **state)
{
	struct al_step s = {.sh = "true"};
	struct al_limits lim = {.output_bytes = 1024};
	struct al_step_result r = {0};
	struct fx f;

	(void)state;
	start(&f, reply_small_exit);
	assert_int_equal(
	    sb__agent_client_run_step(&f.c, &s, &lim, NULL, NULL, CALL_MS, &r),
	    0);
	assert_int_equal(r.stdout_.len, 1024);
	assert_false(r.stdout_truncated);
	assert_int_equal(r.status, AL_RE);
	al_step_result_release(&r);
	stop(&f);
}

/* Three 1 MiB chunks on stdout, then an exit that admits to none. */
static void reply_stream(int fd)
{
	struct al_msg m = {.type = AL_MSG_OUT};

	m.u.out.fd = 1;
	m.u.out.data = filled(1u << 20, 'z');
	for (int i = 0; i < 3; i++)
		send_msg(fd, &m);
	al_msg_release(&m);
	m = (struct al_msg){.type = AL_MSG_EXIT};
	m.u.exit.result.status = AL_OK;
	send_msg(fd, &m);
	al_msg_release(&m);
}

static void count_out(void *opaque, int fd, const uint8_t *data, size_t len)
{
	size_t *seen = opaque;

	assert_int_equal(fd, 1);
	assert_int_equal(data[0], 'z');
	*seen += len;
}

static void test_stream_past_cap_is_dropped(void **state)
{
	struct al_step s = {.sh = "yes"};
	struct al_limits lim = {.output_bytes = 1536u << 10};
	struct al_step_result r = {0};
	size_t seen = 0;
	struct fx f;

	(void)state;
	start(&f, reply_stream);
	assert_int_equal(sb__agent_client_run_step(&f.c, &s, &lim, count_out,
						   &seen, CALL_MS, &r),
			 0);
	assert_int_equal(seen, 1536u << 10); /* passed on: the cap, no more */
	assert_true(r.stdout_truncated);
	assert_int_equal(r.status, AL_OL);
	al_step_result_release(&r);
	stop(&f);
}

static struct al_file file_of(const char *path, size_t len)
{
	struct al_file x = {strdup(path), filled(len, 'f')};

	return x;
}

/* Asked for a and b: sends a, c (not asked for) and b. */
static void reply_unasked(int fd)
{
	struct al_msg m = {.type = AL_MSG_FILES};
	struct al_file files[3];

	files[0] = file_of("a", 4);
	files[1] = file_of("c", 4);
	files[2] = file_of("b", 4);
	m.u.files.files = files;
	m.u.files.n_files = 3;
	send_msg(fd, &m);
	for (int i = 0; i < 3; i++) {
		free(files[i].path);
		free(files[i].content.data);
	}
}

static void test_files_not_asked_for_dropped(void **state)
{
	char *paths[] = {"a", "b"};
	struct al_msg_files got = {0};
	struct fx f;

	(void)state;
	start(&f, reply_unasked);
	assert_int_equal(
	    sb__agent_client_get_files(&f.c, paths, 2, 1024, CALL_MS, &got), 1);
	assert_int_equal(got.n_files, 2);
	assert_string_equal(got.files[0].path, "a");
	assert_string_equal(got.files[1].path, "b");
	assert_non_null(strstr(f.c.error, "not asked for"));
	sb__agent_client_files_release(&got);
	stop(&f);
}

/* Asked for a with max_bytes 1024: sends 2048 bytes of it. */
static void reply_too_big(int fd)
{
	struct al_msg m = {.type = AL_MSG_FILES};
	struct al_file x = file_of("a", 2048);

	m.u.files.files = &x;
	m.u.files.n_files = 1;
	send_msg(fd, &m);
	free(x.path);
	free(x.content.data);
}

static void test_files_past_max_refused(void **state)
{
	char *paths[] = {"a"};
	struct al_msg_files got = {0};
	struct fx f;

	(void)state;
	start(&f, reply_too_big);
	assert_int_equal(
	    sb__agent_client_get_files(&f.c, paths, 1, 1024, CALL_MS, &got),
	    -EMSGSIZE);
	assert_int_equal(got.n_files, 0);
	assert_null(got.files);
	assert_true(f.c.broken); /* a guest that lies is not asked again */
	stop(&f);
}

/* A v1 agent: it ignores setup's reseed keys and answers a plain ok. */
static void reply_plain_ok(int fd)
{
	struct al_msg m = {.type = AL_MSG_OK};

	send_msg(fd, &m);
}

/* A v2 agent's acknowledgement. */
static void reply_reseeded(int fd)
{
	struct al_msg m = {.type = AL_MSG_OK};

	m.u.ok.reseeded = true;
	send_msg(fd, &m);
}

/* The host learns from the reply alone whether the reseed in setup was
 * applied: a plain ok (v1) says it was not, and the caller must reseed
 * before any step (sandbox/vm.c sb__vm_setup_reseed does). */
static void test_setup_reseed_ack(void **state)
{
	struct al_limits lim = {.memory_mb = 256};
	uint8_t ent[AL_ENTROPY_MIN] = {7};
	bool done = true;
	struct fx f;

	(void)state;
	start(&f, reply_plain_ok);
	assert_int_equal(sb__agent_client_setup_reseed(
			     &f.c, &lim, ent, sizeof(ent), 1, CALL_MS, &done),
			 0);
	assert_false(done);
	stop(&f);
	start(&f, reply_reseeded);
	assert_int_equal(sb__agent_client_setup_reseed(
			     &f.c, &lim, ent, sizeof(ent), 1, CALL_MS, &done),
			 0);
	assert_true(done);
	stop(&f);
	/* refused locally, nothing sent: too little entropy, or no clock */
	start(&f, reply_plain_ok);
	assert_int_equal(sb__agent_client_setup_reseed(&f.c, &lim, ent, 8, 1,
						       CALL_MS, &done),
			 -EINVAL);
	assert_int_equal(sb__agent_client_setup_reseed(
			     &f.c, &lim, ent, sizeof(ent), 0, CALL_MS, &done),
			 -EINVAL);
	assert_int_equal(sb__agent_client_setup(&f.c, &lim, CALL_MS), 0);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exit_past_cap_is_cut),
	    cmocka_unit_test(test_exit_at_cap_is_kept),
	    cmocka_unit_test(test_stream_past_cap_is_dropped),
	    cmocka_unit_test(test_files_not_asked_for_dropped),
	    cmocka_unit_test(test_files_past_max_refused),
	    cmocka_unit_test(test_setup_reseed_ack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
