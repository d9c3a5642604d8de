/* test_redirect.c: Cluster redirections and Sentinel answers are followed
 * only to nodes the configured node knows (dispatcher/queue/client.c,
 * cluster.c; issue 34 finding 8). A fake Redis speaking RESP on a
 * loopback port answers every command with MOVED to a second local port
 * that records every byte it receives: the client must refuse the MOVED
 * and send nothing there (its password least of all) unless CLUSTER
 * SLOTS of the configured node names that port; then it follows, and
 * the recorder sees AUTH and the command, which shows the test can see
 * a leak. No real Redis needed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "cluster.h"
#include "queue.h"

#define SECRET "pw-never-leaves-0xC0FFEE"

struct fake {
	int lfd;	 /* listening socket */
	int port;	 /* its port */
	bool recorder;	 /* records and answers +OK; else the seed */
	int other_port;	 /* seed: MOVED target */
	bool slots_name; /* seed: CLUSTER SLOTS names other_port too */
	char got[8192];	 /* recorder: bytes received */
	size_t n;
	volatile bool stop;
	pthread_t t;
	pthread_mutex_t mu; /* got, n, live */
	int live;	    /* connection threads running */
};

static int listen_any(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	getsockname(fd, (struct sockaddr *)&a, &l);
	*port = ntohs(a.sin_port);
	return fd;
}

static void say(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		return;
}

/* The seed's answer to one request held in buf (RESP array). */
static void seed_answer(struct fake *f, int fd, const char *buf)
{
	char out[512];

	if (strstr(buf, "AUTH") || strstr(buf, "PING")) {
		say(fd, "+OK\r\n");
	} else if (strstr(buf, "SLOTS")) {
		int n = snprintf(out, sizeof(out),
				 "*1\r\n*%d\r\n:0\r\n:16383\r\n"
				 "*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
				 f->slots_name ? 4 : 3, f->port);
		if (f->slots_name)
			snprintf(out + n, sizeof(out) - (size_t)n,
				 "*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n",
				 f->other_port);
		say(fd, out);
	} else {
		snprintf(out, sizeof(out), "-MOVED 866 127.0.0.1:%d\r\n",
			 f->other_port);
		say(fd, out);
	}
}

struct conn {
	struct fake *f;
	int fd;
};

/* One connection until stop: each read is taken as one whole request
 * (the client sends one and waits). */
static void *serve_conn(void *arg)
{
	struct conn *cn = arg;
	struct fake *f = cn->f;
	int fd = cn->fd;

	free(cn);
	for (;;) {
		char buf[2048];
		struct pollfd q = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&q, 1, 50) <= 0) {
			if (f->stop)
				break;
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			break;
		buf[n] = '\0';
		pthread_mutex_lock(&f->mu);
		if (f->recorder) {
			size_t k = (size_t)n < sizeof(f->got) - f->n - 1
				       ? (size_t)n
				       : sizeof(f->got) - f->n - 1;
			memcpy(f->got + f->n, buf, k);
			f->n += k;
			say(fd, "+OK\r\n");
		} else {
			seed_answer(f, fd, buf);
		}
		pthread_mutex_unlock(&f->mu);
	}
	close(fd);
	pthread_mutex_lock(&f->mu);
	f->live--;
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Accept until stop, a thread per connection (the client opens a second
 * one to the seed to ask CLUSTER SLOTS while its first stays open). */
static void *serve(void *arg)
{
	struct fake *f = arg;

	while (!f->stop) {
		struct pollfd p = {.fd = f->lfd, .events = POLLIN};
		struct conn *cn;
		pthread_t t;

		if (poll(&p, 1, 50) <= 0)
			continue;
		cn = malloc(sizeof(*cn));
		cn->f = f;
		cn->fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_mutex_lock(&f->mu);
		f->live++;
		pthread_mutex_unlock(&f->mu);
		pthread_create(&t, NULL, serve_conn, cn);
		pthread_detach(t);
	}
	return NULL;
}

static void start(struct fake *f)
{
	pthread_mutex_init(&f->mu, NULL);
	f->lfd = listen_any(&f->port);
	pthread_create(&f->t, NULL, serve, f);
}

static void stop(struct fake *f)
{
	int live = 1;

	f->stop = true;
	pthread_join(f->t, NULL);
	close(f->lfd);
	while (live) { /* the connection threads use f until they end */
		usleep(10 * 1000);
		pthread_mutex_lock(&f->mu);
		live = f->live;
		pthread_mutex_unlock(&f->mu);
	}
}

/* GET through a client of the seed, with the recorder as MOVED target. */
static void moved(bool slots_name, struct fake *rec, redisReply **ret,
		  char *err)
{
	struct fake seed = {.slots_name = slots_name};
	struct alq_client c;
	struct alq_url u;
	char url[128];
	const char *argv[] = {"GET", "airlock:{q}:x"};

	rec->recorder = true;
	start(rec);
	seed.other_port = rec->port;
	start(&seed);
	snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d", SECRET,
		 seed.port);
	assert_int_equal(alq_url_parse(url, &u), 0);
	assert_int_equal(alq_client_open(&c, &u, "q", 2000), 0);
	*ret = alq_client_command(&c, 2, argv, NULL);
	snprintf(err, 256, "%s", c.err);
	alq_client_close(&c);
	stop(&seed);
	stop(rec);
}

static void test_moved_unknown_refused(void **state)
{
	struct fake rec = {0};
	redisReply *r;
	char err[256];

	(void)state;
	moved(false, &rec, &r, err);
	/* the MOVED comes back as the reply; nothing reached the recorder */
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(r->str, "MOVED"));
	freeReplyObject(r);
	assert_non_null(strstr(err, "refused"));
	assert_int_equal(rec.n, 0);
}

static void test_moved_known_followed(void **state)
{
	struct fake rec = {0};
	redisReply *r;
	char err[256];

	(void)state;
	moved(true, &rec, &r, err);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STATUS); /* the recorder's OK */
	freeReplyObject(r);
	rec.got[rec.n] = '\0';
	/* a node CLUSTER SLOTS names gets the password and the command */
	assert_non_null(strstr(rec.got, SECRET));
	assert_non_null(strstr(rec.got, "airlock:{q}:x"));
}

static void test_allowed(void **state)
{
	(void)state;
	assert_true(alq_node_allowed("10.0.0.7", "10.0.0.1"));
	assert_true(alq_node_allowed("redis-2.internal", "10.0.0.1"));
	assert_true(alq_node_allowed("127.0.0.1", "127.0.0.1"));
	assert_true(alq_node_allowed("::1", "localhost"));
	/* loopback only from a loopback seed */
	assert_false(alq_node_allowed("127.0.0.1", "10.0.0.1"));
	assert_false(alq_node_allowed("localhost", "redis.example"));
	assert_false(alq_node_allowed("::ffff:127.0.0.1", "10.0.0.1"));
	/* never */
	assert_false(alq_node_allowed("169.254.169.254", "127.0.0.1"));
	assert_false(alq_node_allowed("fd00:ec2::254", "127.0.0.1"));
	assert_false(alq_node_allowed("fe80::1", "127.0.0.1"));
	assert_false(alq_node_allowed("0.0.0.0", "127.0.0.1"));
	assert_false(alq_node_allowed("224.0.0.1", "127.0.0.1"));
	assert_false(alq_node_allowed("255.255.255.255", "127.0.0.1"));
	assert_false(alq_node_allowed("100.100.100.200", "127.0.0.1"));
	assert_false(alq_node_allowed("::", "127.0.0.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allowed),
	    cmocka_unit_test(test_moved_unknown_refused),
	    cmocka_unit_test(test_moved_known_followed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
