/* test_gate.c: the agent's vsock gate (serve.c) in our own process.
 *
 * The gate runs on a thread over a real AF_UNIX listener standing in for
 * the vsock one (the gate does not care which); the host side is the real
 * agent_client. Checks: the right proof is served, a wrong or missing one
 * is closed, a second connection never disturbs a live host, no token
 * means no vsock at all, and the HMAC and constant-time compare are right.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "agent_client.h"

#define T_MS 5000

struct fixture {
	char dir[64];			 /* temp dir: socket and token */
	char sock[128];			 /* listener path */
	char token_path[128];		 /* the token file */
	uint8_t token[AL_AUTH_TOKEN_LEN]; /* its bytes */
	struct al_agent_config cfg;	 /* agent config (host test) */
	struct al_agent a;		 /* the agent */
	struct al_gate g;		 /* the gate under test */
	pthread_t thread;		 /* runs the gate */
	atomic_bool stop;		 /* tells it to end */
};

static void *gate_thread(void *arg)
{
	struct fixture *f = arg;
	struct pollfd p[AL_GATE_NPOLL];
	int t;

	while (!atomic_load(&f->stop)) {
		t = al_gate_pollfds(&f->g, p);
		poll(p, AL_GATE_NPOLL, t < 0 || t > 20 ? 20 : t);
		al_gate_act(&f->a, &f->g, p);
	}
	return NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, lfd;

	strcpy(f->dir, "/tmp/test_gate.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/s", f->dir);
	snprintf(f->token_path, sizeof(f->token_path), "%s/token", f->dir);
	for (size_t i = 0; i < sizeof(f->token); i++)
		f->token[i] = (uint8_t)(i * 7 + 1);
	fd = open(f->token_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->token, sizeof(f->token)),
			 sizeof(f->token));
	close(fd);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	strcpy(sa.sun_path, f->sock);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 32), 0);
	f->cfg = (struct al_agent_config){.work_dir = f->dir, .serve_fd = -1};
	f->a = (struct al_agent){.cfg = &f->cfg, .sig_fd = -1, .work_fd = -1,
				 .random_fd = -1};
	al_gate_init(&f->g, lfd, f->token_path);
	assert_int_equal(pthread_create(&f->thread, NULL, gate_thread, f), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	al_gate_release(&f->g);
	unlink(f->sock);
	unlink(f->token_path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static int dial(struct fixture *f)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, f->sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* The agent closes the stream: read sees EOF (or a reset) in time. */
static void assert_closed(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	char buf[512];
	ssize_t n;

	do {
		assert_int_equal(poll(&p, 1, T_MS), 1);
		n = read(fd, buf, sizeof(buf));
	} while (n > 0); /* a challenge may come before the close */
	assert_true(n == 0 || errno == ECONNRESET);
}

/* Connect and authenticate with `token`; returns the fd, client in *c. */
static int host(struct fixture *f, const uint8_t *token,
		struct sb__agent_client *c, int *ret)
{
	int fd = dial(f);

	sb__agent_client_init(c, fd);
	*ret = sb__agent_client_auth(c, token, T_MS);
	return fd;
}

static void test_right_proof_served(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c;
	int r, fd = host(f, f->token, &c, &r);

	assert_int_equal(r, 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
}

static void test_wrong_proof_closed(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c;
	uint8_t bad[AL_AUTH_TOKEN_LEN];
	int r, fd;

	memcpy(bad, f->token, sizeof(bad));
	bad[31] ^= 1; /* one bit off */
	fd = host(f, bad, &c, &r);
	assert_true(r < 0);
	assert_true(c.broken);
	assert_closed(fd);
	sb__agent_client_release(&c);
	close(fd);
	/* the gate is still open to the real host */
	fd = host(f, f->token, &c, &r);
	assert_int_equal(r, 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
}

/* A request instead of `auth` is not served: the stream closes. */
static void test_request_without_proof_closed(void **state)
{
	struct fixture *f = *state;
	struct al_msg m = {.type = AL_MSG_PING};
	char *buf;
	size_t len;
	int fd = dial(f);

	assert_int_equal(al_msg_encode(&m, &buf, &len), 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	free(buf);
	assert_closed(fd);
	close(fd);
}

static void test_second_connection_refused(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c, c2;
	int r, fd = host(f, f->token, &c, &r), fd2;

	assert_int_equal(r, 0);
	/* even with the right token: one host at a time */
	fd2 = host(f, f->token, &c2, &r);
	assert_true(r < 0);
	assert_closed(fd2);
	sb__agent_client_release(&c2);
	close(fd2);
	fd2 = dial(f); /* and without: closed before any challenge */
	assert_closed(fd2);
	close(fd2);
	/* the live host did not notice */
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
	/* once it is gone, the next host gets in */
	fd = host(f, f->token, &c, &r);
	assert_int_equal(r, 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
}

/* Wait until the gate sent its challenge on fd (it took the connection). */
static void await_challenge(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};

	assert_int_equal(poll(&p, 1, T_MS), 1);
}

/* Connections made while the host is still answering its challenge do
 * not push the host out (issue 23, finding 9): before, each new one
 * replaced the one waiting, so a local process connecting in a loop kept
 * the host out for good. */
static void test_flood_does_not_evict_host(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c, c2;
	int r, fd = dial(f), other[AL_GATE_PENDING - 1], fd2;

	await_challenge(fd); /* the host's connection is waiting */
	for (size_t i = 0; i < AL_GATE_PENDING - 1; i++) {
		other[i] = dial(f); /* an attacker's, never answered */
		await_challenge(other[i]);
	}
	sb__agent_client_init(&c, fd);
	assert_int_equal(sb__agent_client_auth(&c, f->token, T_MS), 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	/* the first to prove it won: the others are closed */
	for (size_t i = 0; i < AL_GATE_PENDING - 1; i++) {
		assert_closed(other[i]);
		close(other[i]);
	}
	/* and a right proof after it is refused: one host at a time */
	fd2 = host(f, f->token, &c2, &r);
	assert_true(r < 0);
	sb__agent_client_release(&c2);
	close(fd2);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
}

/* More connections than slots: the oldest waiting one goes, the gate
 * stays bounded and the host that comes next still gets in. */
static void test_waiting_bounded(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c;
	int r, fd, other[AL_GATE_PENDING + 2];

	for (size_t i = 0; i < AL_GATE_PENDING + 2; i++) {
		other[i] = dial(f);
		await_challenge(other[i]);
	}
	assert_closed(other[0]); /* the oldest made room */
	assert_closed(other[1]);
	fd = host(f, f->token, &c, &r);
	assert_int_equal(r, 0);
	assert_int_equal(sb__agent_client_ping(&c, T_MS), 0);
	sb__agent_client_release(&c);
	close(fd);
	for (size_t i = 0; i < AL_GATE_PENDING + 2; i++)
		close(other[i]);
}

static void test_no_token_no_vsock(void **state)
{
	struct fixture *f = *state;
	struct sb__agent_client c;
	int r, fd;

	assert_int_equal(unlink(f->token_path), 0);
	fd = host(f, f->token, &c, &r);
	assert_true(r < 0);
	assert_closed(fd);
	sb__agent_client_release(&c);
	close(fd);
}

/* RFC 4231 test cases 1 and 2, FIPS 180-2 "abc". */
static void test_hmac_vectors(void **state)
{
	static const uint8_t abc[] = {
	    0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
	    0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
	    0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
	static const uint8_t tc1[] = {
	    0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf,
	    0xce, 0xaf, 0x0b, 0xf1, 0x2b, 0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83,
	    0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
	static const uint8_t tc2[] = {
	    0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
	    0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
	    0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
	uint8_t key[20], out[AL_SHA256_LEN];

	(void)state;
	al_sha256("abc", 3, out);
	assert_memory_equal(out, abc, sizeof(out));
	memset(key, 0x0b, sizeof(key));
	al_hmac_sha256(key, sizeof(key), "Hi There", 8, out);
	assert_memory_equal(out, tc1, sizeof(out));
	al_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
	assert_memory_equal(out, tc2, sizeof(out));
}

/* Equal only when every byte is; any single differing bit is seen. */
static void test_constant_time_equal(void **state)
{
	uint8_t a[AL_SHA256_LEN], b[AL_SHA256_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 13);
	memcpy(b, a, sizeof(a));
	assert_true(al_auth_equal(a, b, sizeof(a)));
	for (size_t i = 0; i < sizeof(a); i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			assert_false(al_auth_equal(a, b, sizeof(a)));
			b[i] ^= (uint8_t)(1u << bit);
		}
	assert_true(al_auth_equal(a, b, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_right_proof_served, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_wrong_proof_closed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_request_without_proof_closed,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_second_connection_refused,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flood_does_not_evict_host,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_waiting_bounded, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_no_token_no_vsock, setup,
					    teardown),
	    cmocka_unit_test(test_hmac_vectors),
	    cmocka_unit_test(test_constant_time_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
