/* net.c: per-VM network slots (see net.h; design in docs/network.md).
 *
 * Theory of operation. A networked VM lives in a network namespace of its
 * own, made here by the worker (unshare, then an fd of it: no name under
 * /run/netns, so nothing outlives its last user). Inside it:
 *
 *     guest 10.200.0.2 --tap0-- [10.200.0.1  VM netns  10.201.I.2] --up0--
 *        --veth-- al<pid>-<I> 10.201.I.1 (host netns) -- host's uplink
 *
 *   - tap0, whose fd QEMU gets as its NIC: the guest's gateway and DNS
 *     resolver address. Every clone has the same guest address and MAC
 *     (a permanent neighbour entry here: no ARP to wait for);
 *   - up0, one end of a veth whose other end is in the host netns, on a
 *     /30 of 10.201.0.0/16 unique on the host (slot I, leased like a VMM
 *     uid: RUN/nets/I, flock'ed while the slot lives);
 *   - table inet airlock: all the rules (below), and a masquerade of the
 *     guest to 10.201.I.2, so the host routes only its own /30s. The host
 *     masquerades 10.201.0.0/16 out of its uplink (table ip airlock_nat,
 *     made once, shared by all slots) and forwards (ip_forward = 1).
 *
 * Rules, all in the VM's namespace, installed through libnftables (a
 * context opens its netlink socket when it is created, so one is made
 * inside the namespace and kept for the slot's life). The forward chain
 * drops by default both ways: from up0 only replies (ct established)
 * reach the guest; from tap0 each new flow goes through `egress`, where
 * the always-denied destinations come first (never: loopback, link-local
 * and the metadata address, multicast, the tap and veth ranges, i.e.
 * this host's other VMs; host: every address of the host; private: RFC
 * 1918, CGNAT, benchmarking, ULA, unless a policy CIDR lies inside
 * them), then the policy's CIDRs and the resolver's timeout sets, each
 * with the policy's protocol/port set. A refused flow is recorded in
 * dropped4/6 (address . port, a dynamic set capped at SB_NET_DROPPED_MAX
 * entries: its first distinct destinations), counted, and rejected: a TCP
 * reset or ICMP admin-prohibited, so the job fails at once instead of
 * hanging. The input chain lets the guest reach only the resolver (port
 * 53 on 10.200.0.1); the output chain lets the namespace send only to
 * the guest (no process lives in it: QEMU has only the tap's fd, in its
 * jail's empty namespace, and the resolver's halves move into empty
 * namespaces once their sockets are made). Named counters `out`, `in`,
 * `denied` give the figures for the result. In the host's namespace,
 * table inet airlock_host refuses whatever a slot link (al*) sends to the
 * host itself, at any address it has at that moment (host_prepare).
 *
 * Two halves. sb_net_base() makes everything above that no policy
 * changes: namespace, tap, veth, addresses, routes, NAT, the table with
 * its sets and chains (the allow sets empty: all is refused), and the
 * resolver's sockets and process, spawned now and waiting on a pipe for
 * its policy. sb_net_apply() adds one policy: host addresses refreshed,
 * its CIDRs and ports into the sets, its caps in front of `allowed`, and
 * the policy down the pipe (or the pipe closed: no names, no resolver).
 * sb_net_open() is both. A worker keeps [pool] net_ready bases made
 * between jobs (struct sb_net_pool), so a job waits only for the apply
 * (~1 ms of nft) instead of the whole set-up; a slot serves one job and
 * is closed after that job's result is sent (no reuse: no conntrack
 * entries, set elements or resolver state can pass between jobs).
 *
 * Callers: the worker (worker/job.c) per networked job, template.c for a
 * networked template (a slot with no policy), tests/net, tools/bench/bench_net.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lease.h"
#include "resolver.h"
#include "net.h"
#include "rtnl.h"
#include "util.h"

struct sb_net {
	const struct sb_net_policy *policy; /* NULL: no uplink */
	int ns_fd;			    /* the VM's netns */
	int tap_fd;			    /* tap0, QEMU's NIC */
	int lease_fd;			    /* holds slot `idx`, -1 = none */
	uint32_t idx;			    /* slot index, 0 = no uplink */
	char host_if[IFNAMSIZ];		    /* the veth's host end, "" = none */
	struct nft_ctx *nft; /* a context inside the VM's netns */
	pid_t resolver;	     /* the resolver child, -1 = none */
	int dns_listen;	     /* its socket on the gateway:53 (VM ns) */
	int dns_upstream;    /* its socket to the upstream (host ns) */
	int dns_go;	     /* the waiting resolver's policy pipe */
	int dns_err;	     /* why there is no resolver, 0 = there is */
	int dns_lease_fd;    /* holds dns_uid, -1 = none */
	uid_t dns_uid;	     /* the resolver's own uid, 0 = nobody's */
	char dns_why[128];   /* the same, said (set_err) */
};

static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0xa1, 0x0c, 0x02};

/* Destinations no policy opens, and private ones only an explicit CIDR
 * inside them opens. */
static const char never4[] = "0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, "
			     "168.63.129.16, 224.0.0.0/4, 240.0.0.0/4, "
			     "10.200.0.0/16, 10.201.0.0/16";
static const char never6[] = "::/127, fe80::/10, ff00::/8, ::ffff:0:0/96, "
			     "64:ff9b::/96";
static const char private4[] = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, "
			       "100.64.0.0/10, 198.18.0.0/15";
static const char private6[] = "fc00::/7";

/* The private ranges as (addr, prefix), to tell which CIDRs lie in one. */
static const struct {
	int family;
	const char *addr;
	uint8_t prefix;
} private_ranges[] = {
    {AF_INET, "10.0.0.0", 8},	  {AF_INET, "172.16.0.0", 12},
    {AF_INET, "192.168.0.0", 16}, {AF_INET, "100.64.0.0", 10},
    {AF_INET, "198.18.0.0", 15},  {AF_INET6, "fc00::", 7},
};

static void set_err(char *err, size_t len, const char *what, int r)
{
	if (len)
		snprintf(err, len, "%s: %s", what, strerror(-r));
}

/* Is `a` inside one of the comma-separated blocks of `list` (never4..)? */
static bool in_list(int af, const uint8_t *a, const char *list)
{
	int bytes = af == AF_INET ? 4 : 16;

	for (const char *p = list; *p; p += *p == ',') {
		size_t n = strcspn(p, ",");
		char buf[64], *slash;
		uint8_t net[16];
		bool in = true;
		int bits;

		if (n >= sizeof(buf)) {
			p += n;
			continue;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n;
		slash = strchr(buf, '/');
		if (slash)
			*slash = '\0';
		bits = slash ? atoi(slash + 1) : bytes * 8;
		if (inet_pton(af, buf + strspn(buf, " "), net) != 1 ||
		    bits < 0 || bits > bytes * 8)
			continue;
		for (int i = 0; i < bytes && bits > 0 && in; i++, bits -= 8) {
			uint8_t m =
			    bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));

			in = (a[i] & m) == (net[i] & m);
		}
		if (in)
			return true;
	}
	return false;
}

bool sb_net_always_denied(int family, const void *addr)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};
	const uint8_t *a = addr;

	if (family == AF_INET6 && !memcmp(a, mapped, sizeof(mapped)))
		return in_list(AF_INET, a + 12, never4);
	if (family == AF_INET)
		return in_list(AF_INET, a, never4);
	return family != AF_INET6 || in_list(AF_INET6, a, never6);
}

/* ---- namespaces ---------------------------------------------------- */

/* An fd of the calling thread's network namespace. */
static int ns_here(void)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int tap_open(void)
{
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI};
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", SB_NET_TAP);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static uint32_t ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a.s_addr;
}

/* 10.201.I.x: slot I's /30, host end x = 1, VM end x = 2. */
static uint32_t slot_ip(uint32_t idx, uint32_t x)
{
	return htonl((10u << 24 | 201u << 16) + idx * 4 + x);
}

/* ---- rules ----------------------------------------------------------- */

static bool in_range(const struct sb_net_cidr *c, int family,
		     const uint8_t *addr, uint8_t prefix)
{
	if (c->family != family || c->prefix < prefix)
		return false;
	for (unsigned b = 0; b < prefix; b++) {
		uint8_t m = (uint8_t)(0x80 >> (b % 8));

		if ((c->addr[b / 8] & m) != (addr[b / 8] & m))
			return false;
	}
	return true;
}

/* Does `c` lie inside a private range (so listing it opens it)? */
static bool cidr_private(const struct sb_net_cidr *c)
{
	uint8_t a[16];

	for (size_t i = 0; i < sizeof(private_ranges) / sizeof(*private_ranges);
	     i++) {
		inet_pton(private_ranges[i].family, private_ranges[i].addr, a);
		if (in_range(c, private_ranges[i].family, a,
			     private_ranges[i].prefix))
			return true;
	}
	return false;
}

/* `add element` of the CIDRs of `family` (only private ones when `priv`)
 * to `set`; nothing when there are none (nft refuses an empty list). */
static void put_cidrs(FILE *f, const struct sb_net_policy *p, int family,
		      bool priv, const char *set)
{
	char s[INET6_ADDRSTRLEN];
	size_t n = 0;

	for (size_t i = 0; i < p->n_cidrs; i++) {
		const struct sb_net_cidr *c = &p->cidrs[i];

		if (c->family != family || (priv && !cidr_private(c)))
			continue;
		inet_ntop(family, c->addr, s, sizeof(s));
		if (!n++)
			fprintf(f, "add element inet %s %s { ", SB_NET_TABLE,
				set);
		else
			fputs(", ", f);
		fprintf(f, "%s/%u", s, c->prefix);
	}
	if (n)
		fputs(" }\n", f);
}

static void put_ports(FILE *f, const struct sb_net_policy *p)
{
	fprintf(f, "add element inet %s ports { ", SB_NET_TABLE);
	for (size_t i = 0; i < p->n_ports; i++)
		fprintf(f, "%s%s . %u-%u", i ? ", " : "",
			p->ports[i].proto == IPPROTO_UDP ? "udp" : "tcp",
			p->ports[i].lo, p->ports[i].hi);
	fputs(" }\n", f);
}

/* The directed broadcast address of an IPv4 address's subnet into `s`;
 * false for /31 and /32, which have none. */
static bool broadcast4(const struct ifaddrs *i, char *s, size_t len)
{
	const struct sockaddr_in *a = (const void *)i->ifa_addr,
				 *m = (const void *)i->ifa_netmask;
	struct in_addr b;

	if (!m || m->sin_family != AF_INET || ntohl(m->sin_addr.s_addr) >=
						 0xfffffffeu)
		return false;
	b.s_addr = a->sin_addr.s_addr | ~m->sin_addr.s_addr;
	return inet_ntop(AF_INET, &b, s, (socklen_t)len) != NULL;
}

/* Every address of the host (its namespace: the caller's), and the
 * broadcast address of each of its IPv4 subnets (a datagram to it reaches
 * the host's sockets bound to any address), into host4/6. */
static int put_host_addrs(FILE *f)
{
	struct ifaddrs *ifa, *i;
	char s[INET6_ADDRSTRLEN];

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : 0;
		const void *a;

		if (fam == AF_INET)
			a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		else if (fam == AF_INET6)
			a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		else
			continue;
		inet_ntop(fam, a, s, sizeof(s));
		fprintf(f, "add element inet %s host%c { %s }\n", SB_NET_TABLE,
			fam == AF_INET ? '4' : '6', s);
		if (fam == AF_INET && broadcast4(i, s, sizeof(s)))
			fprintf(f, "add element inet %s host4 { %s }\n",
				SB_NET_TABLE, s);
	}
	freeifaddrs(ifa);
	return 0;
}

/* The table's skeleton: sets, counters, chains (the rules follow). */
static void put_sets(FILE *f)
{
	static const char *const sets[] = {
	    "never4 { type ipv4_addr; flags interval; auto-merge; }",
	    "never6 { type ipv6_addr; flags interval; auto-merge; }",
	    "private4 { type ipv4_addr; flags interval; auto-merge; }",
	    "private6 { type ipv6_addr; flags interval; auto-merge; }",
	    "host4 { type ipv4_addr; }",
	    "host6 { type ipv6_addr; }",
	    "allow4 { type ipv4_addr; flags interval; auto-merge; }",
	    "allow6 { type ipv6_addr; flags interval; auto-merge; }",
	    "private_ok4 { type ipv4_addr; flags interval; auto-merge; }",
	    "private_ok6 { type ipv6_addr; flags interval; auto-merge; }",
	    "ports { type inet_proto . inet_service; flags interval; }",
	    "dns4 { type ipv4_addr; flags timeout; }",
	    "dns6 { type ipv6_addr; flags timeout; }",
	};

	fprintf(f, "add table inet %s\n", SB_NET_TABLE);
	for (size_t i = 0; i < sizeof(sets) / sizeof(*sets); i++)
		fprintf(f, "add set inet %s %s\n", SB_NET_TABLE, sets[i]);
	for (int v = 4; v <= 6; v += 2)
		fprintf(f,
			"add set inet %s dropped%d { type ipv%d_addr . "
			"inet_service; size %d; flags dynamic; }\n",
			SB_NET_TABLE, v, v, SB_NET_DROPPED_MAX);
	fprintf(f,
		"add counter inet %s out\nadd counter inet %s in\n"
		"add counter inet %s denied\n",
		SB_NET_TABLE, SB_NET_TABLE, SB_NET_TABLE);
	fprintf(f,
		"add element inet %s never4 { %s }\n"
		"add element inet %s never6 { %s }\n"
		"add element inet %s private4 { %s }\n"
		"add element inet %s private6 { %s }\n",
		SB_NET_TABLE, never4, SB_NET_TABLE, never6, SB_NET_TABLE,
		private4, SB_NET_TABLE, private6);
}

/* The chains, the same for every policy. `deny` records, counts and
 * rejects; `allowed` counts (a policy's caps go in front: put_caps). Rules
 * are one per line, chain by chain. */
static void put_chains(FILE *f)
{
	const char *t = "inet " SB_NET_TABLE;

	fprintf(f,
		"add chain %s deny\n"
		"add rule %s deny meta nfproto ipv4 meta l4proto { tcp, udp } "
		"add @dropped4 { ip daddr . th dport }\n"
		"add rule %s deny meta nfproto ipv6 meta l4proto { tcp, udp } "
		"add @dropped6 { ip6 daddr . th dport }\n"
		"add rule %s deny counter name denied\n"
		"add rule %s deny meta l4proto tcp reject with tcp reset\n"
		"add rule %s deny reject with icmpx type admin-prohibited\n",
		t, t, t, t, t, t);
	fprintf(f, "add chain %s allowed\n", t);
	fprintf(f, "add rule %s allowed counter name out accept\n", t);
	fprintf(
	    f,
	    "add chain %s egress\n"
	    "add rule %s egress ip daddr @never4 goto deny\n"
	    "add rule %s egress ip6 daddr @never6 goto deny\n"
	    "add rule %s egress ip daddr @host4 goto deny\n"
	    "add rule %s egress ip6 daddr @host6 goto deny\n"
	    "add rule %s egress ip daddr @private4 ip daddr != @private_ok4 "
	    "goto deny\n"
	    "add rule %s egress ip6 daddr @private6 ip6 daddr != "
	    "@private_ok6 goto deny\n",
	    t, t, t, t, t, t, t);
	for (int v = 4; v <= 6; v += 2)
		fprintf(
		    f,
		    "add rule %s egress %s daddr @allow%d meta l4proto . th "
		    "dport @ports goto allowed\n"
		    "add rule %s egress %s daddr @dns%d meta l4proto . th "
		    "dport @ports goto allowed\n",
		    t, v == 4 ? "ip" : "ip6", v, t, v == 4 ? "ip" : "ip6", v);
	fprintf(f, "add rule %s egress goto deny\n", t);
}

/* The base chains: forward and input drop by default; NAT out of up0. */
static void put_hooks(FILE *f)
{
	const char *t = "inet " SB_NET_TABLE;

	fprintf(f,
		"add chain %s forward { type filter hook forward priority 0; "
		"policy drop; }\n",
		t);
	fprintf(f,
		"add rule %s forward iifname %s oifname %s ct state "
		"established,related counter name in accept\n"
		"add rule %s forward iifname %s oifname %s ct state "
		"established,related counter name out accept\n"
		"add rule %s forward iifname %s oifname %s jump egress\n"
		"add rule %s forward iifname %s jump deny\n"
		"add rule %s forward counter name denied drop\n",
		t, SB_NET_UPLINK, SB_NET_TAP, t, SB_NET_TAP, SB_NET_UPLINK, t,
		SB_NET_TAP, SB_NET_UPLINK, t, SB_NET_TAP, t);
	fprintf(f,
		"add chain %s input { type filter hook input priority 0; "
		"policy drop; }\n"
		"add rule %s input ct state established,related accept\n"
		"add rule %s input iifname lo accept\n"
		"add rule %s input iifname %s ip daddr %s udp dport 53 accept\n"
		"add rule %s input iifname %s jump deny\n"
		"add rule %s input counter name denied drop\n",
		t, t, t, t, SB_NET_TAP, SB_NET_GATEWAY_IP, t, SB_NET_TAP, t);
	/* Nothing in this namespace may send anywhere but to the guest: the
	 * resolver's answers, and the resets and ICMP errors the rules
	 * above send (the kernel's, through this hook too). QEMU and the
	 * resolver's DNS side live in empty namespaces of their own; this
	 * is the wall behind them (issue 23). */
	fprintf(f,
		"add chain %s output { type filter hook output priority 0; "
		"policy drop; }\n"
		"add rule %s output oifname %s ip daddr %s accept\n",
		t, t, SB_NET_TAP, SB_NET_GUEST_IP);
	fprintf(f,
		"add chain %s post { type nat hook postrouting priority "
		"srcnat; }\n"
		"add rule %s post oifname %s masquerade\n",
		t, t, SB_NET_UPLINK);
}

/* A policy's caps, inserted in front of the base rules. rate_kbit is a
 * policer at the top of `forward`, each way, on every packet (`allowed`
 * sees only a flow's first): with no burst given its bucket holds one
 * second's worth. conn_per_min goes first in `allowed`, with the whole
 * minute as its burst (N connects in a row pass; nft's default burst is 5
 * packets). */
static void put_caps(FILE *f, const struct sb_net_policy *p)
{
	const char *t = "inet " SB_NET_TABLE;
	unsigned long long bytes = p->rate_kbit * 125ull; /* a second */

	for (int i = 0; p->rate_kbit && i < 2; i++)
		fprintf(f,
			"insert rule %s forward iifname %s oifname %s limit "
			"rate over %llu bytes/second drop\n",
			t, i ? SB_NET_UPLINK : SB_NET_TAP,
			i ? SB_NET_TAP : SB_NET_UPLINK, bytes);
	if (p->conn_per_min)
		fprintf(f,
			"insert rule %s allowed ct state new limit rate over "
			"%u/minute burst %u packets goto deny\n",
			t, p->conn_per_min, p->conn_per_min);
}

/* The base ruleset, policy-free: sets, chains, hooks; every destination
 * is refused until a policy's part (policy_script) fills the allow sets.
 * One nft script (one transaction). */
static char *base_script(const char *host_addrs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	put_sets(f);
	fputs(host_addrs, f);
	put_chains(f);
	put_hooks(f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A policy's part: the host's addresses as they are now (a ready slot
 * may have waited), its CIDRs, ports and caps. One transaction. */
static char *policy_script(const struct sb_net_policy *p,
			   const char *host_addrs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "flush set inet %s host4\nflush set inet %s host6\n",
		SB_NET_TABLE, SB_NET_TABLE);
	fputs(host_addrs, f);
	put_cidrs(f, p, AF_INET, false, "allow4");
	put_cidrs(f, p, AF_INET6, false, "allow6");
	put_cidrs(f, p, AF_INET, true, "private_ok4");
	put_cidrs(f, p, AF_INET6, true, "private_ok6");
	if (p->n_ports)
		put_ports(f, p);
	put_caps(f, p);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The `add element` lines of every address of the host: *ret (free). */
static int host_addrs(char **ret)
{
	size_t len = 0;
	FILE *f = open_memstream(ret, &len);
	int r;

	if (!f)
		return -ENOMEM;
	r = put_host_addrs(f);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(*ret);
		*ret = NULL;
	}
	return r;
}

/* Run an nft script; on failure `err` gets nft's first error line. */
static int nft_apply(struct nft_ctx *nft, const char *script, char *err,
		     size_t errlen)
{
	const char *e;

	nft_ctx_buffer_error(nft);
	if (nft_run_cmd_from_buffer(nft, script) == 0)
		return 0;
	e = nft_ctx_get_error_buffer(nft);
	if (errlen)
		snprintf(err, errlen, "nftables: %.*s", (int)strcspn(e, "\n"),
			 e);
	return -EINVAL;
}

/* ---- the host side --------------------------------------------------- */

/* Forwarding on, the masquerade of all slots out of the host's own links
 * (table ip airlock_nat; but not to the package gateway's network: the
 * gateway tells jobs apart by their slot's address, docs/packages.md),
 * and the host's own wall against its slots
 * (table inet airlock_host): nothing arriving on a slot's link (`al*`)
 * is delivered to the host itself, whatever address it was sent to (the
 * host's addresses as they are at that moment, broadcasts included: this
 * follows address changes that the slots' host4 sets, read at each apply,
 * would miss), and what is forwarded must come from a slot's address and
 * go nowhere the always-denied list names. The slots' own tables do the
 * policy; this is the layer behind them. Each table is flushed and
 * refilled in one transaction, so workers doing it at once agree. */
static int host_prepare(char *err, size_t errlen)
{
	static const char script[] =
	    "add table ip airlock_nat\n"
	    "add chain ip airlock_nat post { type nat hook postrouting "
	    "priority srcnat; }\n"
	    "flush chain ip airlock_nat post\n"
	    "add rule ip airlock_nat post ip daddr " SB_NET_PACKAGES_NET
	    " return\n"
	    "add rule ip airlock_nat post ip saddr 10.201.0.0/16 oifname "
	    "!= \"al*\" masquerade\n"
	    "add table inet airlock_host\n"
	    "add chain inet airlock_host input { type filter hook input "
	    "priority -10; }\n"
	    "flush chain inet airlock_host input\n"
	    "add rule inet airlock_host input iifname \"al*\" meta l4proto "
	    "tcp counter reject with tcp reset\n"
	    /* the package gateway only answers (docs/packages.md, "The
	     * gateway as a second wall") */
	    "add rule inet airlock_host input iifname \"" SB_NET_GW_HOST_IF
	    "\" ct state != { established, related } counter reject\n"
	    "add rule inet airlock_host input iifname \"al*\" counter "
	    "reject with icmpx type admin-prohibited\n"
	    "add chain inet airlock_host forward { type filter hook forward "
	    "priority -10; }\n"
	    "flush chain inet airlock_host forward\n"
	    "add rule inet airlock_host forward iifname \"" SB_NET_GW_HOST_IF
	    "\" ct state != { established, related } counter reject\n"
	    "add rule inet airlock_host forward iifname \"al*\" meta nfproto "
	    "!= ipv4 counter drop\n"
	    "add rule inet airlock_host forward iifname \"al*\" ip saddr != "
	    "10.201.0.0/16 counter drop\n"
	    "add rule inet airlock_host forward iifname \"al*\" ip daddr { "
	    "0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 168.63.129.16, "
	    "224.0.0.0/4, 240.0.0.0/4, 10.200.0.0/16, 10.201.0.0/16 } "
	    "counter reject with icmpx type admin-prohibited\n";
	struct nft_ctx *nft;
	int r = write_file("/proc/sys/net/ipv4/ip_forward", "1");

	if (r < 0) {
		set_err(err, errlen, "net.ipv4.ip_forward", r);
		return r;
	}
	nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!nft)
		return -ENOMEM;
	r = nft_apply(nft, script, err, errlen);
	nft_ctx_free(nft);
	return r;
}

/* The veth's host end: address, up. In the host netns. */
static int host_link(struct sb_net *n, char *err, size_t errlen)
{
	int fd = sb__rtnl_open(), idx, r;

	if (fd < 0)
		return fd;
	idx = (int)if_nametoindex(n->host_if);
	r = idx ? sb__rtnl_addr4(fd, idx, slot_ip(n->idx, 1), SB_NET_PREFIX)
		: -ENODEV;
	if (r == 0)
		r = sb__rtnl_link_up(fd, idx);
	close(fd);
	if (r < 0)
		set_err(err, errlen, "host end of the veth", r);
	return r;
}

/* ---- the resolver ------------------------------------------------------ */

/* The upstream resolver: o->net_dns (IPv4[:PORT]), else the host's
 * first IPv4 nameserver, port 53. */
static int upstream_addr(const struct sb_options *o, struct sockaddr_in *ret)
{
	char line[256], addr[64] = "", *colon, *end;
	FILE *f;

	if (o->net_dns[0]) {
		snprintf(addr, sizeof(addr), "%s", o->net_dns);
		colon = strchr(addr, ':');
		if (colon) {
			long port = strtol(colon + 1, &end, 10);

			if (*end || port < 1 || port > 65535)
				return -EINVAL;
			ret->sin_port = htons((uint16_t)port);
			*colon = 0;
		}
		return inet_pton(AF_INET, addr, &ret->sin_addr) == 1 ? 0
								     : -EINVAL;
	}
	f = fopen("/etc/resolv.conf", "re");
	if (!f)
		return -errno;
	while (!addr[0] && fgets(line, sizeof(line), f))
		if (sscanf(line, " nameserver %63s", addr) == 1 &&
		    inet_pton(AF_INET, addr, &ret->sin_addr) != 1)
			addr[0] = 0; /* an IPv6 one: the next */
	fclose(f);
	return addr[0] ? 0 : -ENOENT;
}

/* The resolver's upstream socket, made here (the host's namespace). */
static int dns_upstream(const struct sb_options *o, struct sb_net *n, char *err,
			size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
	int r = upstream_addr(o, &sa);

	if (r == 0) {
		n->dns_upstream = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (n->dns_upstream < 0 ||
		    connect(n->dns_upstream, (struct sockaddr *)&sa,
			    sizeof(sa)) < 0)
			r = -errno;
	}
	if (r < 0)
		set_err(err, errlen, "upstream resolver", r);
	return r;
}

/* Inside the VM's namespace: the resolver's socket. */
static int dns_inside(struct sb_net *n)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};

	sa.sin_addr.s_addr = ip4(SB_NET_GATEWAY_IP);
	n->dns_listen = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n->dns_listen < 0 ||
	    bind(n->dns_listen, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

static bool read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t k = read(fd, (char *)buf + got, len - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		got += (size_t)k;
	}
	return true;
}

/* The resolver process is this same executable, started afresh (a
 * vfork-style clone + exec of /proc/self/exe, as posix_spawn does) rather
 * than forked: a forked child that lives on shares every page of the
 * worker, which then pays a copy-on-write fault on each page it writes
 * (measured ~0.2 ms a page on the 2-core test machine: tens of ms on the
 * next job's path). It is pid 1 of a new pid namespace, so that killing
 * it (sb_net_close) kills and reaps its DNS side too before our waitpid()
 * returns (resolver.c forks that into a namespace below its own). The new
 * image finds RESOLVER_ENV set and becomes the resolver in a constructor,
 * before any main() runs: every program that makes slots links this file,
 * so the entry point is always there. Its fds (RFD_PARENT a pidfd of the
 * worker: pid 1 of a new namespace has no getppid() to check): */
#define RESOLVER_ENV "AIRLOCK_NET_RESOLVER" /* "PARENT_PID UID COMM" */
enum { RFD_LISTEN = 3, RFD_UPSTREAM, RFD_GO, RFD_NS, RFD_PARENT, RFD_END };

/* In the new image: the resolver-to-be. Dies with the parent that
 * spawned it, waits for its policy (EOF: none, exit), makes its nft
 * context inside the VM's namespace and serves. */
static _Noreturn void resolver_main(const char *arg)
{
	struct sb_net_policy *p = malloc(sizeof(*p));
	char comm[16] = "";
	struct nft_ctx *nft;
	long parent = 0;
	unsigned uid = 0;

	struct pollfd pf = {.fd = RFD_PARENT, .events = POLLIN};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* blocked over the spawn */
	syscall(SYS_close_range, RFD_END, ~0u, 0);
	(void)parent;
	if (sscanf(arg, "%ld %u %15s", &parent, &uid, comm) < 2 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&pf, 1, 0) != 0)
		_exit(1); /* the worker died before the signal was armed */
	if (comm[0])
		prctl(PR_SET_NAME, comm); /* named like its worker */
	if (!p || !read_full(RFD_GO, p, sizeof(*p)))
		_exit(0);
	close(RFD_GO);
	if (setns(RFD_NS, CLONE_NEWNET) < 0)
		_exit(1);
	close(RFD_NS);
	nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!nft)
		_exit(1);
	_exit(-sb__resolver_run(p, RFD_LISTEN, RFD_UPSTREAM, RFD_PARENT, nft,
				(uid_t)uid, "inet " SB_NET_TABLE, "dns4",
				"dns6"));
}

__attribute__((constructor)) static void resolver_entry(void)
{
	const char *arg = getenv(RESOLVER_ENV);

	if (arg)
		resolver_main(arg);
}

/* Our executable's path when it is still there, so that the resolver is
 * named like us from its exec on (a process is named after the file it
 * executes: "exe" for /proc/self/exe, until the constructor renames it);
 * else `path` stays /proc/self/exe (the same file, even deleted). */
static void self_exe(char *path, size_t len)
{
	char buf[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	struct stat a, b;

	if (k <= 0 || (size_t)k >= len)
		return;
	buf[k] = 0;
	if (stat(buf, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		memcpy(path, buf, (size_t)k + 1);
}

/* The child of resolver_spawn's clone, on its own stack, sharing our
 * memory until its exec (CLONE_VFORK: we wait): the fds into place, exec.
 * Signals stay blocked (the new image unblocks them). */
struct spawn_arg {
	const char *exe;
	char **argv, **envp;
	const int *high; /* RFD_COUNT fds, CLOEXEC, to put at RFD_LISTEN.. */
};
#define RFD_COUNT (RFD_END - RFD_LISTEN)

static int spawn_child(void *arg)
{
	const struct spawn_arg *a = arg;

	for (int i = 0; i < RFD_COUNT; i++)
		if (dup2(a->high[i], RFD_LISTEN + i) < 0)
			_exit(127);
	execve(a->exe, a->argv, a->envp);
	_exit(127);
}

/* Spawn the resolver-to-be with `fds` (listen, upstream, go, ns) and a
 * pidfd of ours as its RFD_*: duplicated above them first, so that each
 * dup2 clears CLOEXEC; pid 1 of a new pid namespace. */
static int resolver_spawn(const int fds[4], uid_t uid, pid_t *ret)
{
	char env[64], comm[16] = "", *argv[] = {"airlock-resolver", NULL},
		      *envp[] = {env, NULL};
	char exe[PATH_MAX] = "/proc/self/exe";
	int high[RFD_COUNT], r = 0, n = 0;
	const size_t stack_len = 64 * 1024;
	struct spawn_arg a = {exe, argv, envp, high};
	sigset_t all, old;
	void *stack;
	pid_t pid;

	prctl(PR_GET_NAME, comm);
	self_exe(exe, sizeof(exe));
	snprintf(env, sizeof(env), RESOLVER_ENV "=%d %u %s", (int)getpid(),
		 (unsigned)uid, comm);
	for (; n < RFD_COUNT && r == 0; n++) {
		high[n] = n < 4 ? fcntl(fds[n], F_DUPFD_CLOEXEC, RFD_END)
				: (int)syscall(SYS_pidfd_open, getpid(), 0);
		if (high[n] < 0)
			r = -errno;
		else if (n == 4 && high[n] < RFD_END) {
			int h = fcntl(high[n], F_DUPFD_CLOEXEC, RFD_END);

			close(high[n]);
			if ((high[n] = h) < 0)
				r = -errno;
		}
	}
	stack = r == 0 ? mmap(NULL, stack_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)
		       : MAP_FAILED;
	if (r == 0 && stack == MAP_FAILED)
		r = -errno;
	if (r == 0) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pid = clone(spawn_child, (char *)stack + stack_len,
			    CLONE_VM | CLONE_VFORK | CLONE_NEWPID | SIGCHLD, &a);
		if (pid < 0)
			r = -errno;
		else
			*ret = pid;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		munmap(stack, stack_len);
	}
	while (n--)
		if (high[n] >= 0)
			close(high[n]);
	return r;
}

/* Start the resolver, to wait for its policy (dns_go); it dies with us
 * (PDEATHSIG) or with the slot. Our copies of its sockets go. */
static int dns_spawn(struct sb_net *n)
{
	int go[2], r;

	/* a socket, not a pipe: send() to a resolver that died is EPIPE,
	 * not SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0)
		return -errno;
	r = resolver_spawn(
	    (int[4]){n->dns_listen, n->dns_upstream, go[0], n->ns_fd},
	    n->dns_uid, &n->resolver);
	close(go[0]);
	if (r < 0) {
		n->resolver = -1;
		close(go[1]);
		return r;
	}
	n->dns_go = go[1];
	close(n->dns_listen);
	close(n->dns_upstream);
	n->dns_listen = n->dns_upstream = -1;
	return 0;
}

/* Start the waiting resolver with policy `p`. */
static int dns_start(struct sb_net *n, const struct sb_net_policy *p)
{
	const char *b = (const char *)p;
	size_t done = 0;

	while (done < sizeof(*p)) {
		ssize_t k =
		    send(n->dns_go, b + done, sizeof(*p) - done, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		done += (size_t)k;
	}
	close(n->dns_go);
	n->dns_go = -1;
	return 0;
}

/* A uid of its own for the resolver, from the VMMs' range (RUN/uids,
 * vm.c's leases): a resolver parses what its guest sends, and one that
 * was taken over must not be able to signal another VM's resolver or
 * QEMU. None (not root, no range, every uid taken): it runs as nobody,
 * shared by every such resolver. */
static void dns_lease(const struct sb_options *o, struct sb_net *n)
{
	char dir[PATH_MAX];

	if (geteuid() != 0 || !o->vmm_uid_count ||
	    snprintf(dir, sizeof(dir), "%s/uids", o->run_dir) >=
		(int)sizeof(dir) ||
	    sb__lease_uid(dir, o->vmm_uid_base, o->vmm_uid_count, &n->dns_uid,
			  &n->dns_lease_fd) < 0)
		n->dns_uid = 0;
}

/* The resolver's part of a base: its sockets and its waiting process.
 * Failing leaves a slot for policies without names (dns_err). */
static void dns_base(const struct sb_options *o, struct sb_net *n)
{
	int r = dns_upstream(o, n, n->dns_why, sizeof(n->dns_why));

	if (r == 0)
		dns_lease(o, n);
	if (r == 0 && (r = dns_spawn(n)) < 0)
		set_err(n->dns_why, sizeof(n->dns_why), "resolver", r);
	n->dns_err = r;
}

/* ---- inside the VM's namespace ---------------------------------------- */

/* lo and tap0 up, the gateway address, the guest's neighbour entry. */
static int inside_tap(struct sb_net *n, int fd)
{
	int lo = (int)if_nametoindex("lo"), tap, r;

	n->tap_fd = tap_open();
	if (n->tap_fd < 0)
		return n->tap_fd;
	tap = (int)if_nametoindex(SB_NET_TAP);
	if (!lo || !tap)
		return -ENODEV;
	if ((r = sb__rtnl_link_up(fd, lo)) < 0 ||
	    (r = sb__rtnl_addr4(fd, tap, ip4(SB_NET_GATEWAY_IP),
				SB_NET_PREFIX)) < 0 ||
	    (r = sb__rtnl_link_up(fd, tap)) < 0)
		return r;
	return sb__rtnl_neigh4(fd, tap, ip4(SB_NET_GUEST_IP), guest_mac);
}

/* The veth (its peer into the host netns `host_ns`), up0's address and
 * the default route, forwarding, the rules. */
static int inside_uplink(struct sb_net *n, int fd, int host_ns,
			 const char *rules, char *err, size_t errlen)
{
	int up, r;

	r = sb__rtnl_veth(fd, SB_NET_UPLINK, n->host_if, host_ns);
	if (r < 0) {
		set_err(err, errlen, "veth", r);
		return r;
	}
	up = (int)if_nametoindex(SB_NET_UPLINK);
	if (!up)
		return -ENODEV;
	if ((r = sb__rtnl_addr4(fd, up, slot_ip(n->idx, 2), SB_NET_PREFIX)) <
		0 ||
	    (r = sb__rtnl_link_up(fd, up)) < 0 ||
	    (r = sb__rtnl_default4(fd, slot_ip(n->idx, 1))) < 0 ||
	    (r = write_file("/proc/sys/net/ipv4/ip_forward", "1")) < 0) {
		set_err(err, errlen, "uplink", r);
		return r;
	}
	n->nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!n->nft)
		return -ENOMEM;
	r = nft_apply(n->nft, rules, err, errlen);
	if (r == 0 && (r = dns_inside(n)) < 0)
		set_err(err, errlen, "resolver socket", r);
	return r;
}

/* Everything inside the new namespace; the caller returns to the host's
 * whatever happens. */
static int inside(struct sb_net *n, int host_ns, const char *rules, char *err,
		  size_t errlen)
{
	int fd = sb__rtnl_open(), r;

	if (fd < 0)
		return fd;
	/* IPv4 only: no guest IPv6 address, no router advertisements */
	write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	r = inside_tap(n, fd);
	if (r < 0)
		set_err(err, errlen, "tap", r);
	else if (rules)
		r = inside_uplink(n, fd, host_ns, rules, err, errlen);
	close(fd);
	return r;
}

/* Make the namespace and enter it, set it up, come back. */
static int build(struct sb_net *n, const char *rules, char *err, size_t errlen)
{
	int host_ns = ns_here(), r;

	if (host_ns < 0)
		return host_ns;
	if (unshare(CLONE_NEWNET) < 0) {
		r = -errno;
		set_err(err, errlen, "unshare(CLONE_NEWNET)", r);
		close(host_ns);
		return r == -EPERM || r == -EINVAL ? -EOPNOTSUPP : r;
	}
	n->ns_fd = ns_here();
	r = n->ns_fd < 0 ? n->ns_fd : inside(n, host_ns, rules, err, errlen);
	if (setns(host_ns, CLONE_NEWNET) < 0)
		abort(); /* stranded in the VM's namespace: nothing is safe */
	close(host_ns);
	return r;
}

/* ---- the slot ------------------------------------------------------------ */

/* Lease a slot index under RUN/nets (free again when our fd closes). */
static int lease_slot(const struct sb_options *o, struct sb_net *n)
{
	char dir[PATH_MAX];
	uid_t idx;
	int r = sb__private_dir(o->run_dir, 0700);

	if (r < 0)
		return r;
	if (snprintf(dir, sizeof(dir), "%s/nets", o->run_dir) >=
	    (int)sizeof(dir))
		return -ENAMETOOLONG;
	r = sb__lease_uid(dir, 1, SB_NET_SLOTS, &idx, &n->lease_fd);
	if (r < 0)
		return r;
	n->idx = (uint32_t)idx;
	snprintf(n->host_if, sizeof(n->host_if), "al%d-%u", (int)getpid(),
		 n->idx);
	return 0;
}

/* The uplink part of a base: slot, host NAT, base rules text. */
static int open_uplink(const struct sb_options *o, struct sb_net *n,
		       char **ret_rules, char *err, size_t errlen)
{
	char *hosts = NULL;
	int r = lease_slot(o, n);

	if (r < 0) {
		set_err(err, errlen, "network slot lease", r);
		return r;
	}
	r = host_prepare(err, errlen);
	if (r == 0)
		r = host_addrs(&hosts);
	if (r < 0)
		return r;
	*ret_rules = base_script(hosts);
	free(hosts);
	return *ret_rules ? 0 : -ENOMEM;
}

static struct sb_net *net_new(char *err, size_t errlen)
{
	struct sb_net *n = calloc(1, sizeof(*n));

	if (errlen)
		err[0] = 0;
	if (!n)
		return NULL;
	n->ns_fd = n->tap_fd = n->lease_fd = -1;
	n->dns_listen = n->dns_upstream = n->dns_go = n->dns_lease_fd = -1;
	n->resolver = -1;
	return n;
}

int sb_net_base(const struct sb_options *o, struct sb_net **ret, char *err,
		size_t errlen)
{
	struct sb_net *n = net_new(err, errlen);
	char *rules = NULL;
	int r;

	if (!n)
		return -ENOMEM;
	r = open_uplink(o, n, &rules, err, errlen);
	if (r == 0)
		r = build(n, rules, err, errlen);
	if (r == 0)
		r = host_link(n, err, errlen);
	if (r == 0)
		dns_base(o, n);
	free(rules);
	if (r < 0) {
		sb_net_close(n);
		return r;
	}
	*ret = n;
	return 0;
}

int sb_net_apply(struct sb_net *n, const struct sb_net_policy *p, char *err,
		 size_t errlen)
{
	char *hosts = NULL, *script = NULL;
	int r;

	if (errlen)
		err[0] = 0;
	if (!n->nft || n->policy)
		return -EBUSY; /* no uplink, or a policy already */
	n->policy = p;
	r = host_addrs(&hosts);
	if (r == 0 && !(script = policy_script(p, hosts)))
		r = -ENOMEM;
	if (r == 0)
		r = nft_apply(n->nft, script, err, errlen);
	free(hosts);
	free(script);
	if (r == 0 && p->n_names && n->dns_err) {
		r = n->dns_err;
		if (errlen)
			snprintf(err, errlen, "%s", n->dns_why);
	} else if (r == 0 && p->n_names && (r = dns_start(n, p)) < 0) {
		set_err(err, errlen, "resolver", r);
	} else if (r == 0 && !p->n_names) {
		/* no names: the resolver-to-be exits, nothing answers on
		 * port 53 (port unreachable) */
		if (n->dns_go >= 0)
			close(n->dns_go);
		if (n->dns_listen >= 0)
			close(n->dns_listen);
		n->dns_go = n->dns_listen = -1;
	}
	return r;
}

int sb_net_open(const struct sb_options *o, const struct sb_net_policy *p,
		struct sb_net **ret, char *err, size_t errlen)
{
	struct sb_net *n;
	int r;

	if (p) {
		r = sb_net_base(o, &n, err, errlen);
		if (r == 0 && (r = sb_net_apply(n, p, err, errlen)) < 0)
			sb_net_close(n);
		if (r == 0)
			*ret = n;
		return r;
	}
	n = net_new(err, errlen);
	if (!n)
		return -ENOMEM;
	r = build(n, NULL, err, errlen);
	if (r < 0) {
		sb_net_close(n);
		return r;
	}
	*ret = n;
	return 0;
}

int sb_net_ns(const struct sb_net *n)
{
	return n->ns_fd;
}

int sb_net_tap(const struct sb_net *n)
{
	return n->tap_fd;
}

int sb_net_source_addr(const struct sb_net *n, char *buf, size_t len)
{
	uint32_t ip;

	if (!n || !n->idx)
		return -ENOENT;
	ip = slot_ip(n->idx, 2);
	return inet_ntop(AF_INET, &ip, buf, (socklen_t)len) ? 0 : -ENOSPC;
}

uint32_t sb_net_index(const struct sb_net *n)
{
	return n->idx;
}

void sb_net_close(struct sb_net *n)
{
	int fd;

	if (!n)
		return;
	if (n->resolver > 0) {
		kill(n->resolver, SIGKILL);
		while (waitpid(n->resolver, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (n->nft)
		nft_ctx_free(n->nft);
	if (n->dns_go >= 0)
		close(n->dns_go);
	if (n->dns_listen >= 0)
		close(n->dns_listen);
	if (n->dns_upstream >= 0)
		close(n->dns_upstream);
	/* the namespace goes with its last user (QEMU is gone by now), and
	 * the veth with it; delete the host end now so that its name and
	 * address are free at once (the namespace is freed asynchronously) */
	if (n->host_if[0] && (fd = sb__rtnl_open()) >= 0) {
		sb__rtnl_link_del(fd, n->host_if);
		close(fd);
	}
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	if (n->ns_fd >= 0)
		close(n->ns_fd);
	if (n->lease_fd >= 0)
		close(n->lease_fd);
	if (n->dns_lease_fd >= 0) /* its resolver is reaped above */
		close(n->dns_lease_fd);
	free(n);
}

/* ---- ready slots ------------------------------------------------------- */

void sb_net_pool_init(struct sb_net_pool *np, const struct sb_options *o)
{
	memset(np, 0, sizeof(*np));
	np->o = o;
	np->want =
	    o->net_ready < SB_NET_READY_MAX ? o->net_ready : SB_NET_READY_MAX;
	/* no policy to run: no slot to keep */
	if (!o->n_net_policies)
		np->want = 0;
}

int sb_net_pool_fill(struct sb_net_pool *np, bool (*stop)(void *), void *arg)
{
	char err[256];
	int r = 0;

	sb_net_close(np->spent);
	np->spent = NULL;
	while (!np->off && !np->failed && np->n_ready < np->want &&
	       !(stop && stop(arg))) {
		r = sb_net_base(np->o, &np->ready[np->n_ready], err,
				sizeof(err));
		/* the host cannot (jobs say so: RJ), or not now (again after
		 * the next job) */
		if (r == -EOPNOTSUPP || r == -EPERM || r == -EACCES)
			np->off = true;
		else if (r < 0)
			np->failed = true;
		if (r < 0)
			break;
		np->n_ready++;
	}
	return r;
}

int sb_net_pool_take(struct sb_net_pool *np, const struct sb_net_policy *p,
		     struct sb_net **ret, bool *ready, char *err, size_t errlen)
{
	struct sb_net *n;
	int r;

	np->failed = false;
	*ready = np->n_ready > 0;
	if (!*ready)
		return sb_net_open(np->o, p, ret, err, errlen);
	n = np->ready[--np->n_ready];
	np->ready[np->n_ready] = NULL;
	r = sb_net_apply(n, p, err, errlen);
	if (r < 0) {
		/* e.g. its resolver died waiting: one from scratch instead */
		sb_net_close(n);
		*ready = false;
		return sb_net_open(np->o, p, ret, err, errlen);
	}
	*ret = n;
	return 0;
}

void sb_net_pool_put(struct sb_net_pool *np, struct sb_net *n)
{
	sb_net_close(np->spent); /* one waits at most */
	np->spent = n;
}

void sb_net_pool_release(struct sb_net_pool *np)
{
	sb_net_close(np->spent);
	np->spent = NULL;
	while (np->n_ready)
		sb_net_close(np->ready[--np->n_ready]);
}

/* ---- figures ----------------------------------------------------------- */

/* Run a `list` command with JSON output: its "nftables" array (owned by
 * the caller) or NULL. */
static json_t *nft_list(struct nft_ctx *nft, const char *cmd)
{
	json_t *root, *arr = NULL;

	nft_ctx_output_set_flags(nft, NFT_CTX_OUTPUT_JSON);
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	if (nft_run_cmd_from_buffer(nft, cmd) == 0) {
		root = json_loads(nft_ctx_get_output_buffer(nft), 0, NULL);
		arr = json_incref(json_object_get(root, "nftables"));
		json_decref(root);
	}
	nft_ctx_output_set_flags(nft, 0);
	nft_ctx_unbuffer_output(nft);
	return arr;
}

static void read_counters(struct sb_net *n, struct sb_net_stats *s)
{
	json_t *arr =
	    nft_list(n->nft, "list counters table inet " SB_NET_TABLE);
	json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
	{
		json_t *c = json_object_get(e, "counter");
		const char *name =
		    json_string_value(json_object_get(c, "name"));
		uint64_t pk =
		    (uint64_t)json_integer_value(json_object_get(c, "packets"));
		uint64_t by =
		    (uint64_t)json_integer_value(json_object_get(c, "bytes"));

		if (!name)
			continue;
		if (!strcmp(name, "out"))
			s->packets_out = pk, s->bytes_out = by;
		else if (!strcmp(name, "in"))
			s->packets_in = pk, s->bytes_in = by;
		else if (!strcmp(name, "denied"))
			s->denied_packets = pk;
	}
	json_decref(arr);
}

/* One element of dropped4/6: {"concat": [ADDR, PORT]}, maybe wrapped in
 * {"elem": {"val": ...}}. */
static void add_dropped(struct sb_net_stats *s, json_t *el, int v)
{
	json_t *val = json_object_get(json_object_get(el, "elem"), "val");
	json_t *cc = json_object_get(val ? val : el, "concat");
	const char *addr = json_string_value(json_array_get(cc, 0));
	json_int_t port = json_integer_value(json_array_get(cc, 1));

	if (!addr || s->n_dropped >= SB_NET_DROPPED_MAX)
		return;
	snprintf(s->dropped[s->n_dropped++], sizeof(s->dropped[0]),
		 v == 4 ? "%s:%lld" : "[%s]:%lld", addr, (long long)port);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void read_dropped(struct sb_net *n, struct sb_net_stats *s)
{
	char cmd[64];

	for (int v = 4; v <= 6; v += 2) {
		json_t *arr, *e, *el;
		size_t i, j;

		snprintf(cmd, sizeof(cmd), "list set inet %s dropped%d",
			 SB_NET_TABLE, v);
		arr = nft_list(n->nft, cmd);
		json_array_foreach(arr, i, e)
		{
			json_t *elems =
			    json_object_get(json_object_get(e, "set"), "elem");

			json_array_foreach(elems, j, el) add_dropped(s, el, v);
		}
		json_decref(arr);
	}
	qsort(s->dropped, s->n_dropped, sizeof(s->dropped[0]), cmp_str);
}

int sb_net_stats(struct sb_net *n, struct sb_net_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!n->nft)
		return 0;
	read_counters(n, ret);
	read_dropped(n, ret);
	return 0;
}

/* ---- host support and sweep ----------------------------------------- */

int sb_net_probe(char *why, size_t len)
{
	struct sb_options o;
	struct sb_net *n = NULL;
	char err[256];
	int r;

	if (access("/dev/net/tun", R_OK | W_OK) < 0) {
		snprintf(why, len, "/dev/net/tun: %s (load the tun module)",
			 strerror(errno));
		return -EOPNOTSUPP;
	}
	sb_options_init(&o);
	r = sb_net_open(&o, NULL, &n, err, sizeof(err));
	if (r == 0) {
		struct nft_ctx *nft = NULL;
		int host_ns = ns_here();

		/* nf_tables: a table inside the slot's namespace */
		if (host_ns >= 0 && setns(n->ns_fd, CLONE_NEWNET) == 0) {
			nft = nft_ctx_new(NFT_CTX_DEFAULT);
			r = nft ? nft_apply(nft, "add table inet probe\n", err,
					    sizeof(err))
				: -ENOMEM;
			if (setns(host_ns, CLONE_NEWNET) < 0)
				abort();
		}
		if (nft)
			nft_ctx_free(nft);
		if (host_ns >= 0)
			close(host_ns);
	}
	sb_net_close(n);
	if (r < 0)
		snprintf(why, len,
			 "%s (needs root, network namespaces, "
			 "nf_tables and the tun module)",
			 err);
	return r;
}

struct sweep_links {
	bool (*dead)(pid_t pid);
	char names[64][IFNAMSIZ]; /* stale links found */
	unsigned n;		  /* entries in names */
	unsigned total;		  /* stale links seen, past names' cap too */
};

/* Collect al<pid>-<n> links whose pid is dead. */
static int stale_link(const char *name, void *arg)
{
	struct sweep_links *s = arg;
	char *end;
	long pid;

	if (strncmp(name, "al", 2) || name[2] < '1' || name[2] > '9')
		return 0;
	pid = strtol(name + 2, &end, 10);
	if (*end != '-' || pid <= 0 || pid > 0x3fffffff || !s->dead((pid_t)pid))
		return 0;
	s->total++;
	if (s->n < sizeof(s->names) / sizeof(s->names[0]))
		snprintf(s->names[s->n++], IFNAMSIZ, "%s", name);
	return 0;
}

unsigned sb_net_sweep(bool (*dead)(pid_t pid))
{
	struct sweep_links s = {.dead = dead};
	unsigned gone = 0;
	int fd = sb__rtnl_open();

	if (fd < 0)
		return 0;
	sb__rtnl_links(fd, stale_link, &s);
	for (unsigned i = 0; i < s.n; i++)
		if (sb__rtnl_link_del(fd, s.names[i]) == 0)
			gone++;
	close(fd);
	return gone;
}

unsigned sb_net_scan(bool (*dead)(pid_t pid), char *first, size_t len)
{
	struct sweep_links s = {.dead = dead};
	int fd = sb__rtnl_open();

	if (len)
		first[0] = 0;
	if (fd < 0)
		return 0;
	sb__rtnl_links(fd, stale_link, &s);
	close(fd);
	if (s.n && len)
		snprintf(first, len, "%s", s.names[0]);
	return s.total;
}

/* ---- the package gateway's link ---------------------------------------- */

int sb_net_gateway_link(int ns_fd, char *err, size_t errlen)
{
	int fd, idx, r;

	r = host_prepare(err, errlen);
	if (r < 0)
		return r;
	fd = sb__rtnl_open();
	if (fd < 0) {
		set_err(err, errlen, "netlink", fd);
		return fd;
	}
	/* a dead gateway's veth went with its namespace: one here is
	 * another live gateway's (-EEXIST) */
	r = sb__rtnl_veth(fd, SB_NET_GW_HOST_IF, SB_NET_GW_IF, ns_fd);
	idx = r < 0 ? 0 : (int)if_nametoindex(SB_NET_GW_HOST_IF);
	if (r == 0 && !idx)
		r = -ENODEV;
	if (r == 0)
		r = sb__rtnl_addr4(fd, idx, ip4(SB_NET_GW_HOST_IP),
				   SB_NET_PREFIX);
	if (r == 0)
		r = sb__rtnl_link_up(fd, idx);
	close(fd);
	if (r == -EEXIST)
		snprintf(err, errlen,
			 "the gateway's veth: " SB_NET_GW_HOST_IF
			 " exists: another gateway runs on this host");
	else if (r < 0)
		set_err(err, errlen, "the gateway's veth", r);
	return r;
}

void sb_net_gateway_unlink(void)
{
	int fd = sb__rtnl_open();

	if (fd < 0)
		return;
	sb__rtnl_link_del(fd, SB_NET_GW_HOST_IF);
	close(fd);
}

int sb_net_gateway_inner(char *err, size_t errlen)
{
	int fd = sb__rtnl_open(), lo, gw, r;

	if (fd < 0) {
		set_err(err, errlen, "netlink", fd);
		return fd;
	}
	lo = (int)if_nametoindex("lo");
	gw = (int)if_nametoindex(SB_NET_GW_IF);
	r = lo && gw ? 0 : -ENODEV;
	if (r == 0)
		r = sb__rtnl_link_up(fd, lo);
	if (r == 0)
		r = sb__rtnl_addr4(fd, gw, ip4(SB_NET_GW_IP), SB_NET_PREFIX);
	if (r == 0)
		r = sb__rtnl_link_up(fd, gw);
	/* the slots' addresses, which its answers go to; no default route */
	if (r == 0)
		r = sb__rtnl_route4(fd, ip4("10.201.0.0"), 16,
				    ip4(SB_NET_GW_HOST_IP));
	close(fd);
	if (r < 0)
		set_err(err, errlen, "the gateway's namespace", r);
	return r;
}
