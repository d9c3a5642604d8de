/* test_resolver.c: the per-VM resolver (sandbox/net/resolver.c) for real: its
 * own network namespace, an nft table with timeout sets made through
 * libnftables, a fake upstream DNS server on real UDP (a thread here),
 * sb__resolver_run() in a child, and queries as a guest sends them. Needs
 * root (label `net`); skipped otherwise. Nothing leaves the namespace. */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <nftables/libnftables.h>

#include "clock.h"
#include "resolver.h"

#define RESOLVER_IP "127.0.0.53"
#define TEST_UID 60999 /* as net.c's leased uids: not nobody */
#define UPSTREAM_IP "127.0.0.54"

static struct nft_ctx *nft;
static pid_t child = -1;
static int up_fd = -1;
static pthread_t up_thread;
static atomic_int forwarded; /* queries the fake upstream received */

/* --- the fake upstream ---------------------------------------------------- */

static uint8_t *put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put_name(uint8_t *p, const char *name)
{
	while (*name) {
		size_t l = strcspn(name, ".");

		*p++ = (uint8_t)l;
		memcpy(p, name, l);
		p += l;
		name += l + (name[l] == '.');
	}
	*p++ = 0;
	return p;
}

/* One record: owner name written out, type, ttl, rdata. */
static uint8_t *put_rr(uint8_t *p, const char *owner, unsigned type,
		       unsigned ttl, const void *rdata, size_t rdlen)
{
	p = put_name(p, owner);
	p = put16(p, type);
	p = put16(p, 1);
	p = put16(p, ttl >> 16);
	p = put16(p, ttl & 0xffff);
	p = put16(p, (unsigned)rdlen);
	memcpy(p, rdata, rdlen);
	return p + rdlen;
}

static uint8_t *put_a(uint8_t *p, const char *owner, unsigned ttl,
		      const char *ip)
{
	uint8_t a[16];

	if (strchr(ip, ':')) {
		inet_pton(AF_INET6, ip, a);
		return put_rr(p, owner, 28, ttl, a, 16);
	}
	inet_pton(AF_INET, ip, a);
	return put_rr(p, owner, 1, ttl, a, 4);
}

/* The reply to question (name, type) of `q` (qlen bytes), by name. */
static size_t answer(const uint8_t *q, size_t qend, const char *name,
		     unsigned type, uint8_t *out, unsigned *id_xor)
{
	uint8_t *p = out, cname[64];
	unsigned an = 0, rcode = 0;

	memcpy(out, q, qend);
	p = out + qend;
	if (strcmp(name, "allowed.test") == 0 && type == 1) {
		p = put_a(p, name, 2, "192.0.2.10");
		an = 1;
	} else if (strcmp(name, "allowed.test") == 0 && type == 28) {
		p = put_a(p, name, 2, "2001:db8::10");
		an = 1;
	} else if (strcmp(name, "www.cdn.test") == 0) {
		/* compressed as servers do: the CNAME's owner points at the
		 * question, the A record's at the CNAME's target */
		static const uint8_t ptr_q[] = {0xc0, 12};
		uint8_t ptr_t[2];
		size_t n = (size_t)(put_name(cname, "edge.other.test") - cname);

		memcpy(p, ptr_q, 2);
		p = put16(p + 2, 5);
		p = put16(p, 1);
		p = put16(p, 0);
		p = put16(p, 300);
		p = put16(p, (unsigned)n);
		put16(ptr_t, 0xc000 | (unsigned)(p - out));
		memcpy(p, cname, n);
		p += n;
		memcpy(p, ptr_t, 2);
		p = put16(p + 2, 1);
		p = put16(p, 1);
		p = put16(p, 0);
		p = put16(p, 600);
		p = put16(p, 4);
		inet_pton(AF_INET, "198.51.100.5", p);
		p += 4;
		p = put_a(p, "evil.test", 600, "203.0.113.66");
		an = 3;
	} else if (strcmp(name, "gone.test") == 0) {
		rcode = 3;
	} else if (strcmp(name, "spoof.test") == 0 && *id_xor == 0) {
		p = put_a(p, name, 60, "203.0.113.99");
		an = 1;
		*id_xor = 0x5555; /* this one goes out with a wrong id */
	} else if (strcmp(name, "spoof.test") == 0) {
		p = put_a(p, name, 60, "192.0.2.77");
		an = 1;
	}
	put16(out + 2, 0x8180 | rcode);
	put16(out + 6, an);
	put16(out + 10, 0); /* no OPT back */
	return (size_t)(p - out);
}

static void *upstream_main(void *arg)
{
	uint8_t in[1500], out[1500];
	struct sockaddr_storage from;
	socklen_t flen;
	ssize_t n;

	(void)arg;
	for (;;) {
		char name[256] = "";
		size_t pos = 12, nl = 0, len;
		unsigned id_xor = 0, type;

		flen = sizeof(from);
		n = recvfrom(up_fd, in, sizeof(in), 0, (struct sockaddr *)&from,
			     &flen);
		if (n < 12)
			continue;
		atomic_fetch_add(&forwarded, 1);
		while (pos < (size_t)n && in[pos] && in[pos] < 64) {
			if (nl)
				name[nl++] = '.';
			memcpy(name + nl, in + pos + 1, in[pos]);
			nl += in[pos];
			name[nl] = 0;
			pos += 1u + in[pos];
		}
		pos++;
		type = (unsigned)(in[pos] << 8 | in[pos + 1]);
		if (strcmp(name, "slow.test") == 0)
			continue;
		for (int round = 0; round < 2; round++) {
			len = answer(in, pos + 4, name, type, out, &id_xor);
			if (id_xor)
				put16(out, (unsigned)(in[0] << 8 | in[1]) ^
					       (round ? 0 : id_xor));
			sendto(up_fd, out, len, 0, (struct sockaddr *)&from,
			       flen);
			if (!id_xor)
				break;
		}
	}
	return NULL;
}

/* --- the guest's side ----------------------------------------------------- */

static int udp_socket(const char *ip, bool do_bind)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, ip, &a.sin_addr);
	if (do_bind)
		assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	else
		assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)),
				 0);
	return fd;
}

/* Send raw bytes to the resolver; the reply's length, 0 for none within
 * wait_ms. */
static size_t exchange(const void *msg, size_t len, uint8_t *reply,
		       int wait_ms)
{
	int fd = udp_socket(RESOLVER_IP, false);
	struct pollfd pf = {fd, POLLIN, 0};
	ssize_t n = 0;

	assert_int_equal(send(fd, msg, len, 0), (ssize_t)len);
	if (poll(&pf, 1, wait_ms) == 1)
		n = recv(fd, reply, 4096, 0);
	close(fd);
	return n > 0 ? (size_t)n : 0;
}

/* A question as a stub resolver sends it. */
static size_t query(const char *name, unsigned type, uint16_t id,
		    uint8_t *buf)
{
	uint8_t *p = buf;

	p = put16(p, id);
	p = put16(p, 0x0100);
	p = put16(p, 1);
	p = put16(p, 0);
	p = put16(p, 0);
	p = put16(p, 0);
	p = put_name(p, name);
	p = put16(p, type);
	p = put16(p, 1);
	return (size_t)(p - buf);
}

struct result {
	int rcode;
	int n;		    /* addresses */
	char addr[8][64];   /* as text */
	unsigned ttl[8];
	uint16_t id;
	char qname[1100];   /* as the reply spells it */
};

/* Ask up to `tries` times, `wait_ms` each, as a stub resolver does, and
 * parse the reply with libresolv (not our own parser). */
static void ask_tries(const char *name, unsigned type, struct result *r,
		      int tries, int wait_ms)
{
	uint8_t q[512], reply[4096];
	size_t n = 0;
	ns_msg m;
	ns_rr rr;

	memset(r, 0, sizeof(*r));
	while (!n && tries-- > 0)
		n = exchange(q, query(name, type, 0x1234, q), reply, wait_ms);
	if (!n)
		fail_msg("%s: no reply", name);
	assert_int_equal(ns_initparse(reply, (int)n, &m), 0);
	r->rcode = ns_msg_getflag(m, ns_f_rcode);
	r->id = ns_msg_id(m);
	if (ns_msg_count(m, ns_s_qd) == 1) {
		assert_int_equal(ns_parserr(&m, ns_s_qd, 0, &rr), 0);
		snprintf(r->qname, sizeof(r->qname), "%s", ns_rr_name(rr));
	}
	for (int i = 0; i < ns_msg_count(m, ns_s_an) && r->n < 8; i++) {
		assert_int_equal(ns_parserr(&m, ns_s_an, i, &rr), 0);
		assert_string_equal(ns_rr_name(rr), name);
		inet_ntop(ns_rr_type(rr) == ns_t_a ? AF_INET : AF_INET6,
			  ns_rr_rdata(rr), r->addr[r->n], 64);
		r->ttl[r->n++] = ns_rr_ttl(rr);
	}
}

/* One question, one answer: the tests that time the resolver. */
static void ask(const char *name, unsigned type, struct result *r)
{
	ask_tries(name, type, r, 1, 5000);
}

/* After a flood the resolver's socket may have dropped the question. */
static void ask_retrying(const char *name, unsigned type, struct result *r)
{
	ask_tries(name, type, r, 10, 1000);
}

/* Is `ip` an element of set `set` now? */
static bool in_set(const char *set, const char *ip)
{
	char cmd[128], want[80];
	const char *out;

	snprintf(cmd, sizeof(cmd), "list set inet airlock %s", set);
	assert_int_equal(nft_run_cmd_from_buffer(nft, cmd), 0);
	out = nft_ctx_get_output_buffer(nft);
	snprintf(want, sizeof(want), " %s timeout ", ip);
	return strstr(out, want) != NULL;
}

static bool child_alive(void)
{
	return waitpid(child, NULL, WNOHANG) == 0;
}

/* --- set-up --------------------------------------------------------------- */

static void lo_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	strcpy(ifr.ifr_name, "lo");
	assert_int_equal(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	assert_int_equal(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
}

static int setup(void **state)
{
	struct sb_net_policy p = {0};
	char why[128];
	int lfd, ufd;

	(void)state;
	if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0)
		return 0; /* each test skips */
	lo_up();
	nft = nft_ctx_new(NFT_CTX_DEFAULT);
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	if (nft_run_cmd_from_buffer(
		nft, "add table inet airlock\n"
		     "add set inet airlock a4 { type ipv4_addr; flags timeout; }\n"
		     "add set inet airlock a6 { type ipv6_addr; flags timeout; }\n"))
		fail_msg("nft: %s", nft_ctx_get_error_buffer(nft));
	strcpy(p.name, "testnet");
	assert_int_equal(sb_net_policy_set(&p, "allow",
					   "allowed.test *.cdn.test slow.test "
					   "gone.test spoof.test",
					   why, sizeof(why)),
			 0);
	assert_int_equal(sb_net_policy_set(&p, "ports", "tcp/80", why,
					   sizeof(why)),
			 0);
	up_fd = udp_socket(UPSTREAM_IP, true);
	lfd = udp_socket(RESOLVER_IP, true);
	ufd = udp_socket(UPSTREAM_IP, false);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);
		int rc = sb__resolver_run(&p, lfd, ufd, -1, c, TEST_UID,
					  "inet airlock", "a4", "a6");

		fprintf(stderr, "resolver: %s\n", strerror(-rc));
		_exit(2);
	}
	close(lfd);
	close(ufd);
	/* the thread only after fork(): the child must not inherit it */
	assert_int_equal(pthread_create(&up_thread, NULL, upstream_main, NULL),
			 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (nft)
		nft_ctx_free(nft);
	return 0;
}

#define NEED_ROOT()                                                          \
	do {                                                                 \
		if (child <= 0)                                              \
			skip();                                              \
	} while (0)

/* --- the tests ------------------------------------------------------------ */

/* The `key:\tvalue` line of /proc/PID/status, tabs as they are. */
static bool status_has(pid_t pid, const char *line_want)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found |= strcmp(line, line_want) == 0;
	fclose(f);
	return found;
}

/* Is `pid`'s namespace `ns` ("net", "mnt", "pid") ours? */
static bool same_ns(pid_t pid, const char *ns)
{
	char a[64], b[64], la[64] = "", lb[64] = "";

	snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)pid, ns);
	snprintf(b, sizeof(b), "/proc/self/ns/%s", ns);
	assert_true(readlink(a, la, sizeof(la) - 1) > 0);
	assert_true(readlink(b, lb, sizeof(lb) - 1) > 0);
	return strcmp(la, lb) == 0;
}

/* The DNS side: the opener's only child. */
static pid_t dns_side(void)
{
	char path[64];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)child,
		 (int)child);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	return (pid_t)pid;
}

/* Two processes (issue 23). The opener, which holds the nft context and
 * the upstream socket, runs as the uid it was given with CAP_NET_ADMIN
 * alone, in empty network and mount namespaces, and nft still works. The
 * DNS side, which parses what the guest sends, has no capability at all
 * and is alone in new network, mount and pid namespaces. */
static void test_privileges(void **state)
{
	pid_t dns;

	(void)state;
	NEED_ROOT();
	{
		struct result r; /* a round trip: the drop is done */

		ask("gone.test", 1, &r);
	}
	assert_true(status_has(child, "Uid:\t60999\t60999\t60999\t60999\n"));
	assert_true(status_has(child, "CapEff:\t0000000000001000\n"));
	assert_true(status_has(child, "NoNewPrivs:\t1\n"));
	assert_false(same_ns(child, "net"));
	assert_false(same_ns(child, "mnt"));
	dns = dns_side();
	assert_true(status_has(dns, "Uid:\t60999\t60999\t60999\t60999\n"));
	assert_true(status_has(dns, "CapEff:\t0000000000000000\n"));
	assert_true(status_has(dns, "CapPrm:\t0000000000000000\n"));
	assert_true(status_has(dns, "CapBnd:\t0000000000000000\n"));
	assert_true(status_has(dns, "NoNewPrivs:\t1\n"));
	assert_false(same_ns(dns, "net"));
	assert_false(same_ns(dns, "mnt"));
	assert_false(same_ns(dns, "pid"));
	{
		char want[64];

		/* pid 1 of its own pid namespace: it sees no other process */
		snprintf(want, sizeof(want), "NSpid:\t%d\t1\n", (int)dns);
		assert_true(status_has(dns, want));
	}
}

/* An allowed name: the address is in the set when the answer arrives,
 * and gone once the 2-second TTL has passed. */
static void test_allowed_expires(void **state)
{
	struct result r;
	uint64_t t0;

	(void)state;
	NEED_ROOT();
	assert_false(in_set("a4", "192.0.2.10"));
	ask("Allowed.TEST", 1, &r);
	t0 = al_now_ms();
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.id, 0x1234);
	assert_string_equal(r.qname, "Allowed.TEST"); /* the guest's case */
	assert_int_equal(r.n, 1);
	assert_string_equal(r.addr[0], "192.0.2.10");
	assert_int_equal(r.ttl[0], 2);
	assert_true(in_set("a4", "192.0.2.10"));
	ask("allowed.test", 28, &r);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.addr[0], "2001:db8::10");
	assert_true(in_set("a6", "2001:db8::10"));
	usleep(1000 * 1000);
	assert_true(in_set("a4", "192.0.2.10"));
	while (in_set("a4", "192.0.2.10") && al_now_ms() - t0 < 5000)
		usleep(50 * 1000);
	assert_false(in_set("a4", "192.0.2.10"));
	assert_true(al_now_ms() - t0 < 3500);
	assert_false(in_set("a6", "2001:db8::10"));
}

/* CNAMEs inside the reply are followed, other records are not opened. */
static void test_cname(void **state)
{
	struct result r;

	(void)state;
	NEED_ROOT();
	ask("www.cdn.test", 1, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.addr[0], "198.51.100.5");
	assert_int_equal(r.ttl[0], 300); /* the chain's smallest TTL */
	assert_true(in_set("a4", "198.51.100.5"));
	assert_false(in_set("a4", "203.0.113.66"));
}

/* Unlisted names and other types never leave; NXDOMAIN / empty. */
static void test_unlisted(void **state)
{
	struct result r;
	int before;

	(void)state;
	NEED_ROOT();
	before = atomic_load(&forwarded);
	ask("denied.test", 1, &r);
	assert_int_equal(r.rcode, 3);
	assert_int_equal(r.n, 0);
	ask("cdn.test", 1, &r); /* *.cdn.test is not cdn.test */
	assert_int_equal(r.rcode, 3);
	ask("allowed.test.evil", 28, &r);
	assert_int_equal(r.rcode, 3);
	ask("allowed.test", 16, &r); /* TXT: no tunnel */
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.n, 0);
	usleep(200 * 1000);
	assert_int_equal(atomic_load(&forwarded), before);
	/* upstream's NXDOMAIN is passed on */
	ask("gone.test", 1, &r);
	assert_int_equal(r.rcode, 3);
}

/* A reply with the wrong id is ignored; a silent upstream is SERVFAIL. */
static void test_upstream(void **state)
{
	struct result r;
	uint64_t t0;

	(void)state;
	NEED_ROOT();
	ask("spoof.test", 1, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.addr[0], "192.0.2.77");
	assert_false(in_set("a4", "203.0.113.99"));
	t0 = al_now_ms();
	ask("slow.test", 1, &r);
	assert_int_equal(r.rcode, 2);
	assert_true(al_now_ms() - t0 >= SB_RESOLVER_UPSTREAM_MS - 100);
	assert_true(al_now_ms() - t0 < SB_RESOLVER_UPSTREAM_MS + 1000);
}

/* Allowed questions one after another: within one second at most
 * SB_RESOLVER_QPS go upstream, the rest get SERVFAIL at once; the next
 * second serves again. One question in flight at a time, so the pending
 * cap never answers for the rate cap. */
static void test_rate(void **state)
{
	int fd = udp_socket(RESOLVER_IP, false), nx = 0, servfail = 0;
	struct pollfd pf = {fd, POLLIN, 0};
	uint8_t q[512], reply[4096];
	int before = atomic_load(&forwarded);
	struct result r;
	uint64_t took;

	(void)state;
	NEED_ROOT();
	usleep(1100 * 1000); /* the resolver starts a fresh second */
	took = al_now_ms();
	for (int i = 0; i < 2 * SB_RESOLVER_QPS; i++) {
		size_t n = query("gone.test", 1, (uint16_t)i, q);

		assert_int_equal(send(fd, q, n, 0), (ssize_t)n);
		assert_int_equal(poll(&pf, 1, 5000), 1);
		assert_true(recv(fd, reply, sizeof(reply), 0) >= 12);
		nx += (reply[3] & 0xf) == 3;
		servfail += (reply[3] & 0xf) == 2;
	}
	took = al_now_ms() - took;
	close(fd);
	assert_int_equal(nx + servfail, 2 * SB_RESOLVER_QPS);
	assert_int_equal(atomic_load(&forwarded) - before, nx);
	/* every window the resolver opened began inside [start, end] */
	assert_true(nx <= SB_RESOLVER_QPS * (int)(1 + took / 1000));
	if (took < 1000) { /* one window: exactly the cap went out */
		assert_int_equal(nx, SB_RESOLVER_QPS);
		assert_int_equal(servfail, SB_RESOLVER_QPS);
	}
	usleep(1100 * 1000);
	ask("gone.test", 1, &r);
	assert_int_equal(r.rcode, 3);
}

/* Hostile bytes: FORMERR, NOTIMP or silence, and it keeps serving. */
static void test_malformed(void **state)
{
	static const uint8_t loop[] = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
				       0xc0, 12, 0, 1, 0, 1};
	static const uint8_t dot[] = {0, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 12,
				      'a', 'l', 'l', 'o', 'w', 'e', 'd', '.',
				      't', 'e', 's', 't', 0, 0, 1, 0, 1};
	uint8_t q[600], reply[4096];
	struct result r;
	size_t n;

	(void)state;
	NEED_ROOT();
	n = exchange(loop, sizeof(loop), reply, 2000);
	assert_true(n >= 12);
	assert_int_equal(reply[3] & 0xf, 1); /* FORMERR */
	n = exchange(dot, sizeof(dot), reply, 2000);
	assert_true(n >= 12);
	assert_int_equal(reply[3] & 0xf, 1);
	n = query("allowed.test", 1, 7, q);
	q[2] |= 0x80; /* a response: not answered */
	assert_int_equal(exchange(q, n, reply, 300), 0);
	q[2] = 0x10; /* opcode 2 */
	n = exchange(q, n, reply, 2000);
	assert_true(n >= 12);
	assert_int_equal(reply[3] & 0xf, 4); /* NOTIMP */
	/* every truncation of a good query, then random bytes */
	n = query("allowed.test", 1, 7, q);
	for (size_t i = 0; i < n; i++)
		exchange(q, i, reply, 0);
	for (int i = 0; i < 2000; i++) {
		uint16_t len;
		int fd = udp_socket(RESOLVER_IP, false);

		assert_int_equal(getrandom(&len, 2, 0), 2);
		len %= sizeof(q);
		assert_int_equal(getrandom(q, len, 0), len);
		if (i % 2)
			q[2] &= 0x07; /* a query, opcode 0 */
		send(fd, q, len, 0);
		close(fd);
	}
	assert_true(child_alive());
	ask_retrying("allowed.test", 1, &r);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.n, 1);
	assert_true(child_alive());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_privileges),
	    cmocka_unit_test(test_allowed_expires),
	    cmocka_unit_test(test_cname),
	    cmocka_unit_test(test_unlisted),
	    cmocka_unit_test(test_upstream),
	    cmocka_unit_test(test_rate),
	    cmocka_unit_test(test_malformed),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
