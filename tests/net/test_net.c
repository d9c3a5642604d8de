/* test_net.c: sandbox/net/net.c's slots and rules, with no VM: the test plays
 * the guest by writing Ethernet frames into the slot's tap and reading
 * what comes back.
 *
 * The test first moves itself into a network namespace of its own (the
 * "host": ip_forward and the host NAT table stay in it) wired by a veth to
 * an "internet" namespace holding documentation addresses: 192.0.2.10
 * (allowed by the policy, listening on 80 and 81), 192.0.2.20 (not
 * allowed) and 169.254.169.254 (the metadata address), each with TCP
 * listeners made in that namespace. A TCP SYN from the "guest" then gets
 * a SYN-ACK (allowed) or a reset (refused: fast, no hang), a UDP datagram
 * to a refused place an ICMP admin-prohibited, and every refusal shows
 * in the slot's dropped destinations. Two slots cannot reach each other;
 * a closed slot and a SIGKILLed owner leave no host link. Needs root.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <nftables/libnftables.h>

#include "clock.h"
#include "net.h"
#include "rtnl.h"

#define HOST_IP	   "198.51.100.1"
#define INET_IP	   "198.51.100.2"
#define ALLOWED_IP "192.0.2.10"
#define DENIED_IP  "192.0.2.20"
#define META_IP	   "169.254.169.254"
#define AZURE_IP   "168.63.129.16" /* Azure's wireserver: always denied */
#define HOST_BCAST "198.51.100.255" /* the host's wan0 subnet's broadcast */
#define LATE_IP	   "203.0.113.7"    /* a host address added after apply */
#define HOST_PORT  7777		    /* a host service on every address */

static struct sb_options opts;
static char run_dir[64];
static int host_ns = -1, inet_ns = -1;
static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0xa1, 0x0c, 0x02};

/* ---- packets ---------------------------------------------------------- */

static uint16_t csum(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		sum += (uint32_t)(b[n - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A guest frame: Ethernet, IPv4, then a TCP SYN or an 8-byte UDP
 * datagram to dst:port from the guest's address. Returns its length. */
static size_t frame_with(uint8_t *f, const uint8_t gw_mac[6], const char *dst,
			 uint16_t port, int proto, uint16_t sport,
			 const void *payload, size_t plen)
{
	uint8_t *ip = f + 14, *l4 = ip + 20, pseudo[12];
	size_t l4len = proto == IPPROTO_TCP ? 20 : 8 + plen;
	uint32_t s = inet_addr(SB_NET_GUEST_IP), d = inet_addr(dst);
	uint16_t c;

	memset(f, 0, 14 + 20 + l4len);
	memcpy(f, gw_mac, 6);
	memcpy(f + 6, guest_mac, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + l4len) >> 8);
	ip[3] = (uint8_t)(20 + l4len);
	ip[8] = 64;
	ip[9] = (uint8_t)proto;
	memcpy(ip + 12, &s, 4);
	memcpy(ip + 16, &d, 4);
	c = csum(ip, 20, 0);
	ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
	l4[0] = (uint8_t)(sport >> 8), l4[1] = (uint8_t)sport;
	l4[2] = (uint8_t)(port >> 8), l4[3] = (uint8_t)port;
	if (proto == IPPROTO_TCP) {
		l4[4] = 0x12;  /* sequence number */
		l4[12] = 0x50; /* data offset 5 */
		l4[13] = 0x02; /* SYN */
		l4[14] = 0xff, l4[15] = 0xff;
	} else {
		l4[4] = (uint8_t)(l4len >> 8);
		l4[5] = (uint8_t)l4len;
		memcpy(l4 + 8, payload, plen);
	}
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0, pseudo[9] = (uint8_t)proto;
	pseudo[10] = (uint8_t)(l4len >> 8), pseudo[11] = (uint8_t)l4len;
	c = csum(l4, l4len, (uint32_t)~csum(pseudo, 12, 0) & 0xffff);
	l4[proto == IPPROTO_TCP ? 16 : 6] = (uint8_t)(c >> 8);
	l4[proto == IPPROTO_TCP ? 17 : 7] = (uint8_t)c;
	return 14 + 20 + l4len;
}

static size_t frame(uint8_t *f, const uint8_t gw_mac[6], const char *dst,
		    uint16_t port, int proto, uint16_t sport)
{
	static const uint8_t zeros[8];

	return frame_with(f, gw_mac, dst, port, proto, sport, zeros, 8);
}

enum answer { NONE, SYNACK, RESET, PROHIBITED, OTHER, NOERROR, NXDOMAIN };

/* What came back for a probe from source port `sport`, within 2 s. */
static enum answer answer(int tap, uint16_t sport)
{
	struct al_deadline d = al_deadline_in(2000);
	uint8_t f[2048];

	while (!al_deadline_passed(d)) {
		struct pollfd p = {.fd = tap, .events = POLLIN};
		uint8_t *ip = f + 14, *l4;
		ssize_t n;

		if (poll(&p, 1, al_deadline_poll_ms(d)) <= 0)
			continue;
		n = read(tap, f, sizeof(f));
		if (n < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0)
			continue;
		l4 = ip + (ip[0] & 15) * 4;
		if (ip[9] == IPPROTO_TCP && (l4[2] << 8 | l4[3]) == sport)
			return (l4[13] & 0x12) == 0x12 ? SYNACK
			       : (l4[13] & 0x04)       ? RESET
						       : OTHER;
		if (ip[9] == IPPROTO_UDP && (l4[2] << 8 | l4[3]) == sport &&
		    n >= 14 + 20 + 8 + 12) {
			unsigned rcode = l4[8 + 3] & 15,
				 an = l4[8 + 6] << 8 | l4[8 + 7];

			return rcode == 3	      ? NXDOMAIN
			       : rcode == 0 && an > 0 ? NOERROR
						      : OTHER;
		}
		if (ip[9] == IPPROTO_ICMP && l4[0] == 3) {
			uint8_t *inner = l4 + 8, *il4 = inner + 20;

			if ((il4[0] << 8 | il4[1]) == sport)
				return l4[1] == 13 ? PROHIBITED : OTHER;
		}
	}
	return NONE;
}

static enum answer probe(int tap, const uint8_t gw[6], const char *dst,
			 uint16_t port, int proto)
{
	static uint16_t sport = 40000;
	uint8_t f[128];
	size_t n = frame(f, gw, dst, port, proto, ++sport);

	assert_int_equal(write(tap, f, n), (ssize_t)n);
	return answer(tap, sport);
}

/* A DNS question for `name` (type A) through the slot's resolver. */
static enum answer ask(int tap, const uint8_t gw[6], const char *name)
{
	static uint16_t sport = 50000;
	uint8_t q[300] = {0x12, 0x34, 0x01, 0x00, 0, 1}, f[400], *p = q + 12;
	size_t n;

	for (const char *s = name; *s;) {
		size_t l = strcspn(s, ".");

		*p++ = (uint8_t)l;
		memcpy(p, s, l);
		p += l;
		s += l + (s[l] == '.');
	}
	*p++ = 0;
	*p++ = 0, *p++ = 1, *p++ = 0, *p++ = 1; /* A, IN */
	n = frame_with(f, gw, SB_NET_GATEWAY_IP, 53, IPPROTO_UDP, ++sport, q,
		       (size_t)(p - q));
	assert_int_equal(write(tap, f, n), (ssize_t)n);
	return answer(tap, sport);
}

/* ---- the test internet ----------------------------------------------- */

#define DNS_IP "192.0.2.53"

/* The internet's DNS server: allowed.test is 192.0.2.10 for 2 seconds,
 * denied.test 192.0.2.20; anything else does not exist. */
static void *dns_main(void *arg)
{
	int fd = *(int *)arg;
	uint8_t m[1500];

	for (;;) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		ssize_t n =
		    recvfrom(fd, m, 1000, 0, (struct sockaddr *)&from, &flen);
		size_t end = 12;
		bool allowed, denied;

		if (n < 17)
			continue;
		while (end < (size_t)n && m[end])
			end += 1u + m[end];
		end += 5; /* root label, type, class */
		allowed = !memcmp(m + 12, "\7allowed\4test", 14);
		denied = !memcmp(m + 12, "\6denied\4test", 13);
		m[2] = 0x81, m[3] = (allowed || denied) ? 0x80 : 0x83;
		m[6] = 0, m[7] = (allowed || denied) ? 1 : 0;
		m[10] = m[11] = 0; /* no OPT back */
		if (allowed || denied) {
			static const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1,
						     0,	   0,  0, 2, 0, 4};

			memcpy(m + end, rr, sizeof(rr));
			inet_pton(AF_INET, allowed ? ALLOWED_IP : DENIED_IP,
				  m + end + sizeof(rr));
			end += sizeof(rr) + 4;
		}
		sendto(fd, m, end, 0, (struct sockaddr *)&from, flen);
	}
	return NULL;
}

static void start_dns(void)
{
	static int fd;
	static pthread_t t;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, DNS_IP, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(pthread_create(&t, NULL, dns_main, &fd), 0);
}

static void in_ns(int ns)
{
	assert_int_equal(setns(ns, CLONE_NEWNET), 0);
}

static int ns_fd(void)
{
	return open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
}

/* The allowed server's page: one line per connection. */
static void *http_main(void *arg)
{
	int fd = *(int *)arg, c;

	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		if (write(c, "hello\n", 6) != 6)
			break;
		close(c);
	}
	return NULL;
}

static int listen_on(const char *ip, uint16_t port);

/* Port 8080 of the allowed server: a stream of bytes to whoever
 * connects, until they hang up. */
static void *blast_conn(void *arg)
{
	static char buf[65536];
	int c = (int)(intptr_t)arg;

	while (send(c, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
		;
	close(c);
	return NULL;
}

/* Port 8081: a sink counting what arrives (sink_bytes). */
static uint64_t sink_bytes;

static void *sink_conn(void *arg)
{
	static char buf[65536];
	int c = (int)(intptr_t)arg;
	ssize_t n;

	while ((n = read(c, buf, sizeof(buf))) > 0)
		__atomic_add_fetch(&sink_bytes, (uint64_t)n, __ATOMIC_RELAXED);
	close(c);
	return NULL;
}

/* A thread per connection: a guest that went away without a FIN leaves
 * its connection hanging, and must not hold up the next. */
struct server {
	int fd;
	void *(*conn)(void *arg);
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	pthread_t t;
	int c;

	while ((c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		if (pthread_create(&t, NULL, s->conn, (void *)(intptr_t)c) == 0)
			pthread_detach(t);
	return NULL;
}

static int listen_on(const char *ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, ip, &a.sin_addr);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 64), 0); /* kept open: the test's life */
	return fd;
}

/* The internet namespace: its end of the wire, the servers' addresses
 * (on lo: /32s), listeners. */
static void make_internet(int fd)
{
	static const char *const ips[] = {ALLOWED_IP, DENIED_IP, META_IP,
					  DNS_IP, AZURE_IP};
	int lo = (int)if_nametoindex("lo"), wan = (int)if_nametoindex("wan1");

	assert_int_equal(sb__rtnl_link_up(fd, lo), 0);
	assert_int_equal(sb__rtnl_addr4(fd, wan, inet_addr(INET_IP), 24), 0);
	assert_int_equal(sb__rtnl_link_up(fd, wan), 0);
	static int http_fd;
	static pthread_t http;

	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(sb__rtnl_addr4(fd, lo, inet_addr(ips[i]), 32),
				 0);
		if (i == 0)
			http_fd = listen_on(ips[i], 80);
		else
			listen_on(ips[i], 80);
	}
	assert_int_equal(pthread_create(&http, NULL, http_main, &http_fd), 0);
	listen_on(ALLOWED_IP, 81);
	{
		static struct server blast = {.conn = blast_conn},
				     sink = {.conn = sink_conn};
		static pthread_t blast_t, sink_t;

		blast.fd = listen_on(ALLOWED_IP, 8080);
		sink.fd = listen_on(ALLOWED_IP, 8081);
		assert_int_equal(
		    pthread_create(&blast_t, NULL, server_main, &blast), 0);
		assert_int_equal(
		    pthread_create(&sink_t, NULL, server_main, &sink), 0);
	}
	start_dns();
}

/* The host's service, the stand-in for its Redis: TCP on every address
 * of the host namespace (served by http_main), and a UDP socket on every
 * address counting what arrives (host_udp_got). */
static int host_udp = -1;

static void host_listen(void)
{
	static int tcp;
	static pthread_t t;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(HOST_PORT)};
	int on = 1;

	tcp = listen_on("0.0.0.0", HOST_PORT);
	assert_int_equal(pthread_create(&t, NULL, http_main, &tcp), 0);
	host_udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	setsockopt(host_udp, SOL_SOCKET, SO_BROADCAST, &on, sizeof(on));
	assert_int_equal(bind(host_udp, (struct sockaddr *)&a, sizeof(a)), 0);
}

/* Datagrams the host's UDP service received since the last call. */
static int host_udp_got(void)
{
	char b[64];
	int n = 0;

	while (recv(host_udp, b, sizeof(b), 0) >= 0)
		n++;
	return n;
}

static int setup(void **state)
{
	int fd;

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(run_dir, sizeof(run_dir), "/tmp/al-net-XXXXXX");
	if (!mkdtemp(run_dir))
		return -1;
	sb_options_init(&opts);
	snprintf(opts.run_dir, sizeof(opts.run_dir), "%s", run_dir);
	snprintf(opts.net_dns, sizeof(opts.net_dns), DNS_IP);
	if (getenv("AIRLOCK_TEST_STATE") && *getenv("AIRLOCK_TEST_STATE"))
		snprintf(opts.state_dir, sizeof(opts.state_dir), "%s",
			 getenv("AIRLOCK_TEST_STATE"));
	else
		snprintf(opts.state_dir, sizeof(opts.state_dir),
			 "/var/tmp/airlock-test");
	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	host_ns = ns_fd();
	fd = sb__rtnl_open();
	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	inet_ns = ns_fd();
	/* the wire: wan0 in the host, wan1 here */
	in_ns(host_ns);
	if (sb__rtnl_veth(fd, "wan0", "wan1", inet_ns) < 0)
		return -1;
	sb__rtnl_link_up(fd, (int)if_nametoindex("lo"));
	sb__rtnl_addr4(fd, (int)if_nametoindex("wan0"), inet_addr(HOST_IP), 24);
	sb__rtnl_link_up(fd, (int)if_nametoindex("wan0"));
	sb__rtnl_default4(fd, inet_addr(INET_IP));
	close(fd);
	host_listen();
	in_ns(inet_ns);
	fd = sb__rtnl_open();
	make_internet(fd);
	close(fd);
	in_ns(host_ns);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (run_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", run_dir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

/* ---- helpers ------------------------------------------------------------ */

/* The MAC of the slot's tap (the guest's gateway). */
static void gw_mac(struct sb_net *n, uint8_t mac[6])
{
	struct ifreq ifr = {0};
	int s;

	in_ns(sb_net_ns(n));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), SB_NET_TAP);
	assert_int_equal(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
	in_ns(host_ns);
}

static void policy(struct sb_net_policy *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "testnet");
	p->n_cidrs = 1;
	p->cidrs[0].family = AF_INET;
	inet_pton(AF_INET, ALLOWED_IP, p->cidrs[0].addr);
	p->cidrs[0].prefix = 32;
	p->n_ports = 1;
	p->ports[0] = (struct sb_net_port){IPPROTO_TCP, 80, 80};
}

static bool dropped(const struct sb_net_stats *s, const char *what)
{
	for (size_t i = 0; i < s->n_dropped; i++)
		if (!strcmp(s->dropped[i], what))
			return true;
	return false;
}

static struct sb_net *open_slot(const struct sb_net_policy *p)
{
	struct sb_net *n = NULL;
	char err[256];
	uint64_t t0 = al_now_ms();
	int r = sb_net_open(&opts, p, &n, err, sizeof(err));

	if (r < 0)
		fail_msg("sb_net_open: %s (%s)", err, strerror(-r));
	print_message("slot %u ready in %llu ms\n", sb_net_index(n),
		      (unsigned long long)(al_now_ms() - t0));
	return n;
}

#define SKIP_UNLESS_ROOT()                                                     \
	do {                                                                   \
		if (geteuid() != 0)                                            \
			skip();                                                \
	} while (0)

/* The policy's address on its port gets through; everything else is
 * refused at once and listed. */
static void test_policy(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct sb_net *n;
	uint8_t gw[6];
	char other[32];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	n = open_slot(&p);
	gw_mac(n, gw);
	assert_int_equal(probe(sb_net_tap(n), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	assert_int_equal(probe(sb_net_tap(n), gw, ALLOWED_IP, 81, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(n), gw, DENIED_IP, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(n), gw, META_IP, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(n), gw, HOST_IP, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(n), gw, DENIED_IP, 53, IPPROTO_UDP),
			 PROHIBITED);
	/* the gateway answers DNS only (no resolver here: a refusal would be
	 * an ICMP port unreachable, not a reset); other ports are refused */
	assert_int_equal(
	    probe(sb_net_tap(n), gw, SB_NET_GATEWAY_IP, 22, IPPROTO_TCP),
	    RESET);
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_true(st.bytes_out > 0 && st.bytes_in > 0);
	assert_true(st.denied_packets >= 6);
	for (size_t i = 0; i < st.n_dropped; i++)
		print_message("dropped %s\n", st.dropped[i]);
	assert_true(dropped(&st, ALLOWED_IP ":81"));
	assert_true(dropped(&st, DENIED_IP ":80"));
	assert_true(dropped(&st, META_IP ":80"));
	assert_true(dropped(&st, HOST_IP ":80"));
	assert_true(dropped(&st, DENIED_IP ":53"));
	assert_false(dropped(&st, ALLOWED_IP ":80"));
	snprintf(other, sizeof(other), "%s:22", SB_NET_GATEWAY_IP);
	assert_true(dropped(&st, other));
	sb_net_close(n);
}

/* A name opens its addresses through the slot's resolver, for the
 * record's TTL (2 s here) only; an unlisted name does not exist. */
static void test_names(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct sb_net *n;
	uint8_t gw[6];
	int tap;

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	p.n_cidrs = 0;
	p.n_names = 1;
	snprintf(p.names[0].name, sizeof(p.names[0].name), "allowed.test");
	n = open_slot(&p);
	tap = sb_net_tap(n);
	gw_mac(n, gw);
	assert_int_equal(probe(tap, gw, ALLOWED_IP, 80, IPPROTO_TCP), RESET);
	assert_int_equal(ask(tap, gw, "denied.test"), NXDOMAIN);
	assert_int_equal(ask(tap, gw, "allowed.test"), NOERROR);
	assert_int_equal(probe(tap, gw, ALLOWED_IP, 80, IPPROTO_TCP), SYNACK);
	assert_int_equal(probe(tap, gw, ALLOWED_IP, 81, IPPROTO_TCP), RESET);
	assert_int_equal(probe(tap, gw, DENIED_IP, 80, IPPROTO_TCP), RESET);
	/* DNS to anyone but the slot's resolver is refused */
	assert_int_equal(probe(tap, gw, DNS_IP, 53, IPPROTO_UDP), PROHIBITED);
	sleep(3); /* past the TTL: the element is gone */
	assert_int_equal(probe(tap, gw, ALLOWED_IP, 80, IPPROTO_TCP), RESET);
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_true(dropped(&st, DNS_IP ":53"));
	assert_true(dropped(&st, ALLOWED_IP ":81"));
	sb_net_close(n);
}

/* The dropped list is capped. */
static void test_dropped_cap(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct sb_net *n;
	uint8_t gw[6];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	n = open_slot(&p);
	gw_mac(n, gw);
	for (uint16_t port = 1000; port < 1000 + SB_NET_DROPPED_MAX + 4; port++)
		assert_int_equal(
		    probe(sb_net_tap(n), gw, DENIED_IP, port, IPPROTO_TCP),
		    RESET); /* still refused once the list is full */
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_int_equal(st.n_dropped, SB_NET_DROPPED_MAX);
	sb_net_close(n);
}

/* A private range is closed unless the policy lists it; the veth ranges
 * (this host's other VMs) never open. */
static void test_two_slots(void **state)
{
	struct sb_net_policy p;
	struct sb_net *a, *b;
	uint8_t gw[6];
	char b_host[32], b_vm[32];
	uint32_t i;

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	/* even a policy opening all of 10.0.0.0/8 cannot reach a slot */
	p.n_cidrs = 2;
	p.cidrs[1].family = AF_INET;
	inet_pton(AF_INET, "10.0.0.0", p.cidrs[1].addr);
	p.cidrs[1].prefix = 8;
	a = open_slot(&p);
	b = open_slot(&p);
	assert_int_not_equal(sb_net_index(a), sb_net_index(b));
	i = sb_net_index(b);
	snprintf(b_host, sizeof(b_host), "10.201.%u.%u", (i * 4) >> 8 & 255,
		 (i * 4 + 1) & 255);
	snprintf(b_vm, sizeof(b_vm), "10.201.%u.%u", (i * 4) >> 8 & 255,
		 (i * 4 + 2) & 255);
	gw_mac(a, gw);
	assert_int_equal(probe(sb_net_tap(a), gw, b_host, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(a), gw, b_vm, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(probe(sb_net_tap(a), gw, ALLOWED_IP, 80, IPPROTO_TCP),
			 SYNACK);
	sb_net_close(a);
	sb_net_close(b);
}

static int count_links(const char *name, void *arg)
{
	if (!strncmp(name, "al", 2) && name[2] >= '1' && name[2] <= '9')
		++*(int *)arg;
	return 0;
}

static int host_links(void)
{
	int fd = sb__rtnl_open(), n = 0;

	assert_true(fd >= 0);
	assert_int_equal(sb__rtnl_links(fd, count_links, &n), 0);
	close(fd);
	return n;
}

/* Processes named like us: ourselves, and resolvers forked by slots
 * (readdir lists processes, not our threads). */
static int our_processes(void)
{
	char path[300], comm[32], mine[32] = "";
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	FILE *f = fopen("/proc/self/comm", "re");

	if (f && !fgets(mine, sizeof(mine), f))
		mine[0] = 0;
	if (f)
		fclose(f);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, mine))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static bool gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* The uids of our children that are not root (the resolvers, once they
 * have dropped), up to `max`, waiting up to 5 s for `want` of them. */
static int child_uids(uid_t *uids, int max, int want)
{
	int n = 0;

	for (int tries = 0; tries < 50 && n < want; tries++) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		n = 0;
		while (d && (e = readdir(d)) && n < max) {
			char path[300], line[128];
			long ppid = -1, uid = -1;
			FILE *f;

			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/status",
				 e->d_name);
			if (!(f = fopen(path, "re")))
				continue;
			while (fgets(line, sizeof(line), f)) {
				sscanf(line, "PPid: %ld", &ppid);
				sscanf(line, "Uid: %ld", &uid);
			}
			fclose(f);
			if (ppid == getpid() && uid > 0)
				uids[n++] = (uid_t)uid;
		}
		if (d)
			closedir(d);
		if (n < want)
			usleep(100 * 1000);
	}
	return n;
}

/* Each slot's resolver runs as a uid of its own, leased from the VMMs'
 * range: not nobody, not shared with another VM's resolver. */
static void test_resolver_uids(void **state)
{
	struct sb_net_policy p;
	struct sb_net *a, *b;
	uid_t uids[4];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	p.n_names = 1;
	snprintf(p.names[0].name, sizeof(p.names[0].name), "allowed.test");
	a = open_slot(&p);
	b = open_slot(&p);
	assert_int_equal(child_uids(uids, 4, 2), 2);
	assert_int_not_equal(uids[0], uids[1]);
	for (int i = 0; i < 2; i++) {
		assert_true(uids[i] >= opts.vmm_uid_base);
		assert_true(uids[i] < opts.vmm_uid_base + opts.vmm_uid_count);
	}
	sb_net_close(a);
	sb_net_close(b);
}

/* Closed slots leave no host link; nor does an owner killed with its
 * slots open (the kernel frees the namespace, the sweep the rest), and
 * its resolvers die with it. */
static void test_no_leftovers(void **state)
{
	struct sb_net_policy p;
	struct sb_net *n[4];
	int pipefd[2];
	pid_t pid;
	char c, c_name[16];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 4; i++)
			n[i] = open_slot(&p);
		assert_int_equal(host_links(), 4);
		for (int i = 0; i < 4; i++)
			sb_net_close(n[i]);
		assert_int_equal(host_links(), 0);
	}
	p.n_names = 1; /* resolvers too */
	snprintf(p.names[0].name, sizeof(p.names[0].name), "allowed.test");
	/* a name of our own, which forked children inherit: another
	 * test_net running on this host is not counted */
	snprintf(c_name, sizeof(c_name), "tnl%d", (int)getpid());
	prctl(PR_SET_NAME, c_name);
	assert_int_equal(our_processes(), 1);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		struct sb_net *m[3];
		char e[128];

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed assert: no orphan */
		for (int i = 0; i < 3; i++)
			if (sb_net_open(&opts, &p, &m[i], e, sizeof(e)) < 0)
				_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	assert_int_equal(host_links(), 3);
	/* a resolver takes our name in its constructor, just after its exec:
	 * give the last one that long; each is two processes once it has its
	 * policy (the opener and its DNS side, issue 23) */
	for (int i = 0; i < 50 && our_processes() < 1 + 1 + 2 * 3; i++)
		usleep(100 * 1000);
	assert_int_equal(our_processes(), 1 + 1 + 2 * 3); /* child, resolvers */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* the namespaces are freed asynchronously; the sweep deletes what
	 * is still there */
	sb_net_sweep(gone);
	for (int i = 0; i < 50 && host_links(); i++)
		usleep(100 * 1000);
	assert_int_equal(host_links(), 0);
	for (int i = 0; i < 50 && our_processes() > 1; i++)
		usleep(100 * 1000);
	assert_int_equal(our_processes(), 1);
	close(pipefd[0]);
}

/* ---- a guest with a kernel network stack ------------------------------ */

/* The "guest" of the limit tests is a namespace of its own holding a tap
 * eth0 with the guest's MAC and address; a thread copies frames between
 * its fd and the slot's tap, as QEMU would, so real sockets made there
 * go through the slot's rules. */
struct guest {
	int ns;	      /* the guest's namespace */
	int tap;      /* eth0's fd */
	int slot_tap; /* the slot's tap fd */
	int stop[2];  /* a byte on stop[1] ends the pump */
	pthread_t pump;
};

static void *pump_main(void *arg)
{
	struct guest *g = arg;
	static char buf[65536];

	for (;;) {
		struct pollfd p[3] = {{.fd = g->tap, .events = POLLIN},
				      {.fd = g->slot_tap, .events = POLLIN},
				      {.fd = g->stop[0], .events = POLLIN}};
		ssize_t n;

		if (poll(p, 3, -1) < 0 || p[2].revents)
			return NULL;
		for (int i = 0; i < 2; i++)
			if (p[i].revents & POLLIN) {
				n = read(p[i].fd, buf, sizeof(buf));
				/* a frame not written is lost, as on a wire */
				if (n > 0 &&
				    write(p[1 - i].fd, buf, (size_t)n) != n)
					continue;
			}
	}
}

static void guest_open(struct guest *g, struct sb_net *n)
{
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI};
	int fd, s, eth;

	assert_int_equal(unshare(CLONE_NEWNET), 0);
	g->ns = ns_fd();
	g->slot_tap = sb_net_tap(n);
	g->tap = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	assert_true(g->tap >= 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
	assert_int_equal(ioctl(g->tap, TUNSETIFF, &ifr), 0);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifr.ifr_hwaddr.sa_family = 1; /* ARPHRD_ETHER */
	memcpy(ifr.ifr_hwaddr.sa_data, guest_mac, 6);
	assert_int_equal(ioctl(s, SIOCSIFHWADDR, &ifr), 0);
	close(s);
	fd = sb__rtnl_open();
	eth = (int)if_nametoindex("eth0");
	assert_int_equal(sb__rtnl_link_up(fd, (int)if_nametoindex("lo")), 0);
	assert_int_equal(
	    sb__rtnl_addr4(fd, eth, inet_addr(SB_NET_GUEST_IP), SB_NET_PREFIX),
	    0);
	assert_int_equal(sb__rtnl_link_up(fd, eth), 0);
	assert_int_equal(sb__rtnl_default4(fd, inet_addr(SB_NET_GATEWAY_IP)),
			 0);
	close(fd);
	in_ns(host_ns);
	assert_int_equal(pipe2(g->stop, O_CLOEXEC), 0);
	assert_int_equal(pthread_create(&g->pump, NULL, pump_main, g), 0);
}

static void guest_close(struct guest *g)
{
	assert_int_equal(write(g->stop[1], "x", 1), 1);
	pthread_join(g->pump, NULL);
	close(g->stop[0]);
	close(g->stop[1]);
	close(g->tap);
	close(g->ns);
}

/* A TCP connect from the guest to ip:port within 3 s: the socket, or
 * -errno (ECONNREFUSED: a reset, as the deny chain sends). */
static int guest_connect(struct guest *g, const char *ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 3};
	int fd, r;

	in_ns(g->ns);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	in_ns(host_ns);
	assert_true(fd >= 0);
	inet_pton(AF_INET, ip, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

#define RATE_KBIT 2000 /* 250000 bytes a second */
#define RATE_MS	  2000 /* measured over this long */

/* At most the cap times the window, plus the burst (one second's worth)
 * and a TCP window in flight; and at least a quarter of the cap: a
 * policer, not a wall. */
static void check_rate(const char *what, uint64_t bytes, uint64_t ms)
{
	uint64_t cap = RATE_KBIT * 125ull, most = cap * ms / 1000 + cap + 65536;

	print_message("%s: %llu bytes in %llu ms (cap %llu/s, at most %llu)\n",
		      what, (unsigned long long)bytes, (unsigned long long)ms,
		      (unsigned long long)cap, (unsigned long long)most);
	assert_true(bytes <= most);
	assert_true(bytes >= cap * ms / 1000 / 4);
}

/* rate_kbit caps a TCP stream each way: a download from the allowed
 * server's blast port and an upload to its sink. Without the cap the same
 * streams run at memory speed (checked first: the test can fail). */
static void test_rate(void **state)
{
	static char buf[65536];
	struct sb_net_policy p;
	struct guest g;
	struct sb_net *n;
	uint64_t got = 0, t0, base;
	int fd;

	(void)state;
	SKIP_UNLESS_ROOT();
	for (int capped = 0; capped < 2; capped++) {
		policy(&p);
		p.n_ports = 2;
		p.ports[1] = (struct sb_net_port){IPPROTO_TCP, 8080, 8081};
		p.rate_kbit = capped ? RATE_KBIT : 0;
		n = open_slot(&p);
		guest_open(&g, n);
		fd = guest_connect(&g, ALLOWED_IP, 8080);
		assert_true(fd >= 0);
		got = 0;
		t0 = al_now_ms();
		while (al_now_ms() - t0 < RATE_MS) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r > 0)
				got += (uint64_t)r;
		}
		close(fd);
		if (capped)
			check_rate("download", got, al_now_ms() - t0);
		else /* uncapped: well past what the cap would let through */
			assert_true(got > 8 * RATE_KBIT * 125ull);
		fd = guest_connect(&g, ALLOWED_IP, 8081);
		assert_true(fd >= 0);
		base = __atomic_load_n(&sink_bytes, __ATOMIC_RELAXED);
		t0 = al_now_ms();
		fcntl(fd, F_SETFL, O_NONBLOCK);
		while (al_now_ms() - t0 < RATE_MS)
			if (write(fd, buf, sizeof(buf)) < 0)
				usleep(1000);
		got = __atomic_load_n(&sink_bytes, __ATOMIC_RELAXED) - base;
		if (capped)
			check_rate("upload", got, al_now_ms() - t0);
		else
			assert_true(got > 8 * RATE_KBIT * 125ull);
		close(fd);
		guest_close(&g);
		sb_net_close(n);
	}
}

#define CONNS 6 /* conn_per_min of the test */

/* conn_per_min: that many connects in a row succeed, the next ones are
 * reset at once (and listed), while the open ones keep working. */
static void test_conn_rate(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct guest g;
	struct sb_net *n;
	int fds[CONNS];
	char c[6];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	p.conn_per_min = CONNS;
	n = open_slot(&p);
	guest_open(&g, n);
	for (int i = 0; i < CONNS; i++) {
		fds[i] = guest_connect(&g, ALLOWED_IP, 80);
		if (fds[i] < 0)
			fail_msg("connect %d of %d: %s", i + 1, CONNS,
				 strerror(-fds[i]));
	}
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = al_now_ms();

		assert_int_equal(guest_connect(&g, ALLOWED_IP, 80),
				 -ECONNREFUSED);
		assert_true(al_now_ms() - t0 < 1000); /* a reset, no wait */
	}
	for (int i = 0; i < CONNS; i++) {
		assert_int_equal(read(fds[i], c, 6), 6); /* still served */
		close(fds[i]);
	}
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_true(dropped(&st, ALLOWED_IP ":80"));
	guest_close(&g);
	sb_net_close(n);
}

/* ---- issue 23 ------------------------------------------------------------ */

/* A UDP datagram from the guest's kernel to ip:port, then whether the
 * host's UDP service got anything within 500 ms. */
static bool guest_udp_reaches_host(struct guest *g, const char *ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(HOST_PORT)};
	int fd, on = 1, got = 0;

	host_udp_got();
	in_ns(g->ns);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	in_ns(host_ns);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof(on));
	inet_pton(AF_INET, ip, &a.sin_addr);
	for (int i = 0; i < 3; i++)
		(void)sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	for (int i = 0; i < 10 && !got; i++) {
		usleep(50 * 1000);
		got = host_udp_got();
	}
	return got > 0;
}

/* Finding 8: the broadcast address of a host subnet is the host. A
 * policy opening the host's whole /24 (the host's own .1 stays denied)
 * lets no datagram through to .255 either, and lists it as dropped. */
static void test_host_broadcast(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct guest g;
	struct sb_net *n;

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	p.cidrs[0].family = AF_INET;
	inet_pton(AF_INET, "198.51.100.0", p.cidrs[0].addr);
	p.cidrs[0].prefix = 24;
	p.ports[0] = (struct sb_net_port){IPPROTO_UDP, HOST_PORT, HOST_PORT};
	n = open_slot(&p);
	guest_open(&g, n);
	assert_false(guest_udp_reaches_host(&g, HOST_IP));
	assert_false(guest_udp_reaches_host(&g, HOST_BCAST));
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_true(dropped(&st, HOST_BCAST ":7777"));
	guest_close(&g);
	sb_net_close(n);
}

/* Finding 8: Azure's wireserver is always denied, like the metadata
 * address, even under a policy listing it. */
static void test_azure_denied(void **state)
{
	struct sb_net_policy p;
	struct sb_net_stats st;
	struct sb_net *n;
	uint8_t gw[6];

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	inet_pton(AF_INET, "168.63.0.0", p.cidrs[0].addr);
	p.cidrs[0].prefix = 16;
	n = open_slot(&p);
	gw_mac(n, gw);
	assert_int_equal(probe(sb_net_tap(n), gw, AZURE_IP, 80, IPPROTO_TCP),
			 RESET);
	assert_int_equal(sb_net_stats(n, &st), 0);
	assert_true(dropped(&st, AZURE_IP ":80"));
	sb_net_close(n);
}

/* Finding 8: an address the host gains after the policy was applied is
 * the host's too: a guest cannot reach the host's service on it (the
 * host's own wall drops whatever arrives from a slot for itself). */
static void test_host_addr_later(void **state)
{
	struct sb_net_policy p;
	struct guest g;
	struct sb_net *n;
	int fd, lo;

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	inet_pton(AF_INET, "203.0.113.0", p.cidrs[0].addr);
	p.cidrs[0].prefix = 24;
	p.ports[0] = (struct sb_net_port){IPPROTO_TCP, HOST_PORT, HOST_PORT};
	n = open_slot(&p);
	guest_open(&g, n);
	fd = sb__rtnl_open();
	lo = (int)if_nametoindex("lo");
	assert_int_equal(sb__rtnl_addr4(fd, lo, inet_addr(LATE_IP), 32), 0);
	close(fd);
	fd = guest_connect(&g, LATE_IP, HOST_PORT);
	if (fd >= 0)
		close(fd);
	assert_true(fd < 0);
	assert_false(guest_udp_reaches_host(&g, LATE_IP));
	guest_close(&g);
	sb_net_close(n); /* LATE_IP stays: the test's own namespace */
}

/* A TCP connect from a socket made in namespace `ns` to ip:port, within
 * 2 s: 0 when it connected, else -errno. */
static int connect_from(int ns, const char *ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 2};
	int fd, r;

	in_ns(ns);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	in_ns(host_ns);
	assert_true(fd >= 0);
	inet_pton(AF_INET, ip, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* Finding 1, the walls behind QEMU and the resolver: a socket made in the
 * slot's own namespace (where a resolver's guest-side socket lives)
 * reaches nothing, not even what the policy allows the guest (the output
 * chain); and with that chain gone, nothing of the host either (the
 * host's wall), while forwarded traffic still flows. */
static void test_slot_walls(void **state)
{
	static const char *const dsts[] = {ALLOWED_IP, DENIED_IP, META_IP,
					   HOST_IP, AZURE_IP};
	struct sb_net_policy p;
	struct nft_ctx *nft;
	struct sb_net *n;
	char up_host[32];
	int ns;

	(void)state;
	SKIP_UNLESS_ROOT();
	policy(&p);
	n = open_slot(&p);
	ns = sb_net_ns(n);
	snprintf(up_host, sizeof(up_host), "10.201.%u.%u",
		 (sb_net_index(n) * 4 + 1) >> 8, (sb_net_index(n) * 4 + 1) & 255);
	for (size_t i = 0; i < 5; i++)
		assert_int_not_equal(connect_from(ns, dsts[i], 80), 0);
	assert_int_not_equal(connect_from(ns, HOST_IP, HOST_PORT), 0);
	assert_int_not_equal(connect_from(ns, up_host, HOST_PORT), 0);
	/* the output chain away: the host still refuses the slot */
	in_ns(ns);
	nft = nft_ctx_new(NFT_CTX_DEFAULT);
	in_ns(host_ns);
	assert_int_equal(nft_run_cmd_from_buffer(
			     nft, "flush chain inet airlock output\n"
				  "delete chain inet airlock output\n"),
			 0);
	nft_ctx_free(nft);
	assert_int_equal(connect_from(ns, ALLOWED_IP, 80), 0); /* forwarded */
	assert_int_equal(connect_from(ns, HOST_IP, HOST_PORT), -ECONNREFUSED);
	assert_int_equal(connect_from(ns, up_host, HOST_PORT), -ECONNREFUSED);
	assert_int_not_equal(connect_from(ns, META_IP, 80), 0);
	assert_int_not_equal(connect_from(ns, AZURE_IP, 80), 0);
	sb_net_close(n);
}

#ifdef NET_VM
#include "vm_part.h"
#else
int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_dropped_cap),
	    cmocka_unit_test(test_two_slots),
	    cmocka_unit_test(test_no_leftovers),
	    cmocka_unit_test(test_resolver_uids),
	    cmocka_unit_test(test_rate),
	    cmocka_unit_test(test_conn_rate),
	    cmocka_unit_test(test_host_broadcast),
	    cmocka_unit_test(test_azure_denied),
	    cmocka_unit_test(test_host_addr_later),
	    cmocka_unit_test(test_slot_walls),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
