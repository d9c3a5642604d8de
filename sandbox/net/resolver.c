/* resolver.c: a networked VM's DNS resolver, two processes per VM.
 *
 * Theory of operation. The process is given two UDP sockets and a
 * libnftables context, all made by its parent (resolver.h, steps 1-3), and
 * splits in two (issue 23). The DNS side, forked into a pid namespace of
 * its own, keeps the guest's socket and two SOCK_SEQPACKET pairs to the
 * other half, moves into empty network, mount, ipc and uts namespaces and
 * gives up uid 0, every capability and the right to fork: it parses
 * everything the guest and upstream send. The opener keeps the nft
 * context and the upstream socket, CAP_NET_ADMIN alone (each nf_tables
 * message needs it), empty network and mount namespaces, and parses no
 * DNS: it relays datagrams to and from upstream, and turns fixed-size
 * requests (family, address, TTL; each checked) into `add element`s.
 * The DNS side is one poll() loop, no threads:
 *
 *   guest query --> parse (dns.c, strict) --> name in the policy?
 *       no: NXDOMAIN, nothing leaves the VM's namespace;
 *       yes, not A/AAAA: an empty NOERROR (no other record type is
 *           fetched, so no TXT-style tunnel);
 *       yes, A/AAAA: a fresh query with a random id (getrandom) goes
 *           upstream; the guest's id, question and address wait in
 *           `pend` with a deadline.
 *   upstream reply --> matched by id and question (else ignored: a late
 *       or forged datagram) --> addresses reached from the question
 *       through the reply's CNAMEs --> `add element` into set4 / set6 with
 *       the TTL (1 s .. 1 h) as timeout, one request to the opener (one nft
 *       transaction) per reply
 *       --> only then the answer to the guest, the records owned by its
 *       question's name, with the same TTLs. An nft failure is a SERVFAIL:
 *       the guest never holds an address that is not open.
 *   deadline --> SERVFAIL.
 *
 * At most SB_RESOLVER_PENDING_MAX questions wait upstream and at most
 * SB_RESOLVER_QPS go out a second; past either the guest gets SERVFAIL,
 * so a guest cannot flood the upstream resolver through us.
 *
 * `cache` remembers until when each address is open, so an answer never
 * shortens an element (two names on one CDN address with different TTLs)
 * and a repeated answer costs no netlink round trip. Kernels since 6.10
 * update an existing element's timeout on `add element`; older ones keep
 * the first timeout (docs/network.md).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nftables/libnftables.h>

#include "clock.h"
#include "dns.h"
#include "resolver.h"

struct pending {
	bool used;
	uint16_t up_id;		      /* id of our query upstream */
	struct sb_dns_query q;	      /* the guest's question */
	struct sockaddr_storage from; /* where the guest asked from */
	socklen_t from_len;
	struct al_deadline dl; /* SERVFAIL then */
};

/* DNS side -> opener: open these addresses (answered with an int32_t:
 * 0 or -errno). Fixed size, checked field by field by the opener. */
struct open_req {
	uint32_t n; /* entries of a[] used */
	struct {
		uint32_t family;  /* AF_INET or AF_INET6 */
		uint8_t addr[16]; /* network byte order */
		uint32_t ttl;	  /* seconds, SB_DNS_TTL_MIN_S..MAX_S */
	} a[SB_DNS_ADDRS_MAX];
};

/* Opener -> DNS side on the relay: a one-byte message for "upstream
 * refused" (an ICMP port unreachable); upstream datagrams are >= 2. */
#define RELAY_REFUSED 1

struct opened {
	int family; /* 0 = free slot */
	uint8_t addr[16];
	uint64_t until_ms; /* al_now_ms() when its element expires */
};

struct resolver {
	struct sb_net_policy p;
	int lfd; /* the guest's side: UDP on the gateway, port 53 (VM ns) */
	int ufd; /* upstream: the opener's relay (a SOCK_SEQPACKET end) */
	int hfd; /* set updates: the opener's request socket */
	struct pending pend[SB_RESOLVER_PENDING_MAX];
	struct opened cache[SB_RESOLVER_CACHE_MAX];
	uint64_t second_ms;	/* start of the current second */
	unsigned sent;		/* questions sent upstream in it */
	uint8_t in[SB_DNS_MSG_MAX], out[SB_DNS_MSG_MAX];
};

/* --- giving things up --------------------------------------------------- */

static bool is_netlink(int fd)
{
	int dom = 0;
	socklen_t len = sizeof(dom);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 &&
	       dom == AF_NETLINK;
}

/* Close every fd but 0-2, the four in `keep` (-1: none) and, when
 * `netlink`, the netlink sockets (nft's: libnftables does not say which
 * fd it holds). */
static int close_others(const int keep[4], bool netlink)
{
	int fds[256], n = 0;
	struct dirent *e;
	DIR *d;

	do {
		d = opendir("/proc/self/fd");
		if (!d)
			return -errno;
		n = 0;
		while ((e = readdir(d)) && n < 256) {
			int fd = atoi(e->d_name);

			if (e->d_name[0] == '.' || fd <= 2 || fd == keep[0] ||
			    fd == keep[1] || fd == keep[2] || fd == keep[3] ||
			    fd == dirfd(d) ||
			    (netlink && is_netlink(fd)))
				continue;
			fds[n++] = fd;
		}
		closedir(d);
		for (int i = 0; i < n; i++)
			close(fds[i]);
	} while (n == 256);
	return 0;
}

static int set_caps(uint32_t caps)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {{0}};

	d[0].effective = d[0].permitted = caps;
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	return 0;
}

/* As root: uid/gid u, no groups, CAP_NET_ADMIN alone (`net_admin`) or
 * no capability at all. */
static int drop_root(uid_t u, bool net_admin)
{
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return -errno;
	for (int cap = 0; cap < 64; cap++) {
		if (net_admin && cap == CAP_NET_ADMIN)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the kernel's last cap */
			return -errno;
		}
	}
	if (setgroups(0, NULL) < 0 || setresgid(u, u, u) < 0 ||
	    setresuid(u, u, u) < 0)
		return -errno;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	return set_caps(net_admin ? 1u << CAP_NET_ADMIN : 0);
}

/* As root: new, empty network, mount, ipc and uts namespaces, and an
 * empty read-only tmpfs as the root (the host's tree detached). The fds
 * kept are sockets, which keep the namespace they were made in. */
static int empty_namespaces(void)
{
	const char *opts = "size=4k,nr_inodes=2,mode=0555";

	if (unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC |
		    CLONE_NEWUTS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, opts) < 0 ||
	    chdir("/tmp") < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/* Everything but `keep` closed; as root the namespaces emptied and uid
 * `uid` with CAP_NET_ADMIN (the opener) or nothing (the DNS side);
 * no_new_privs, not dumpable, no fork, dies with its parent. */
static int drop_privileges(const int keep[4], bool opener, pid_t parent,
			   int parent_fd, uid_t uid)
{
	const struct rlimit none = {0, 0};
	int rc;

	rc = close_others(keep, opener);
	if (rc == 0 && geteuid() == 0 && (rc = empty_namespaces()) == 0)
		rc = drop_root(uid ? uid : SB_RESOLVER_UID, opener);
	if (rc < 0)
		return rc;
	/* after the uid change, which clears the parent-death signal */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	/* pid 1 of a pid namespace has no getppid(): a pidfd of the parent
	 * tells (readable once it died); the DNS side has neither and sees
	 * its opener's death as EOF on hfd */
	if (parent_fd >= 0) {
		struct pollfd pf = {parent_fd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 0)
			return -ESRCH;
	} else if (parent && getppid() != parent) {
		return -ESRCH;
	}
	if (geteuid() != 0 && setrlimit(RLIMIT_NPROC, &none) < 0)
		return -errno;
	return 0;
}

/* --- nft ---------------------------------------------------------------- */

static struct opened *cache_find(struct resolver *r,
				 const struct sb_dns_addr *a)
{
	for (size_t i = 0; i < SB_RESOLVER_CACHE_MAX; i++)
		if (r->cache[i].family == a->family &&
		    memcmp(r->cache[i].addr, a->addr, 16) == 0)
			return &r->cache[i];
	return NULL;
}

/* Remember a's element open until `until`: its slot, else an expired
 * one, else the one expiring first. */
static void cache_put(struct resolver *r, const struct sb_dns_addr *a,
		      uint64_t until, uint64_t now)
{
	struct opened *c = cache_find(r, a), *soonest = &r->cache[0];

	for (size_t i = 0; !c && i < SB_RESOLVER_CACHE_MAX; i++) {
		if (!r->cache[i].family || r->cache[i].until_ms <= now)
			c = &r->cache[i];
		else if (r->cache[i].until_ms < soonest->until_ms)
			soonest = &r->cache[i];
	}
	if (!c)
		c = soonest;
	c->family = a->family;
	memcpy(c->addr, a->addr, 16);
	c->until_ms = until;
}

/* The addresses of `a` not already open long enough, as a request to
 * the opener; the count of them. */
static size_t open_request(struct resolver *r, const struct sb_dns_answer *a,
			   uint64_t now, struct open_req *req)
{
	memset(req, 0, sizeof(*req));
	for (size_t i = 0; i < a->n && i < SB_DNS_ADDRS_MAX; i++) {
		const struct sb_dns_addr *x = &a->addr[i];
		const struct opened *c = cache_find(r, x);

		if (c && c->until_ms >= now + x->ttl * 1000ull)
			continue;
		req->a[req->n].family = (uint32_t)x->family;
		memcpy(req->a[req->n].addr, x->addr, 16);
		req->a[req->n].ttl = x->ttl;
		req->n++;
	}
	return req->n;
}

/* Open every address of `a` for its TTL: one request to the opener (one
 * nft transaction there), answered with its result. */
static int open_addrs(struct resolver *r, const struct sb_dns_answer *a)
{
	struct open_req req;
	struct pollfd pf = {r->hfd, POLLIN, 0};
	uint64_t now = al_now_ms();
	int32_t rc;

	if (!open_request(r, a, now, &req))
		return 0;
	if (send(r->hfd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req))
		return -EIO;
	if (poll(&pf, 1, SB_RESOLVER_UPSTREAM_MS) != 1 ||
	    recv(r->hfd, &rc, sizeof(rc), 0) != sizeof(rc))
		return -EIO;
	if (rc < 0)
		return -EIO;
	for (size_t i = 0; i < a->n; i++)
		cache_put(r, &a->addr[i], now + a->addr[i].ttl * 1000ull, now);
	return 0;
}

/* --- the guest ---------------------------------------------------------- */

static void reply(struct resolver *r, const struct sb_dns_query *q,
		  const struct sockaddr_storage *to, socklen_t to_len,
		  uint8_t rcode, const struct sb_dns_answer *a)
{
	size_t n = sb__dns_build_reply(q, rcode, a, r->out, sizeof(r->out));

	/* a lost reply is the guest's to retry, like any lost datagram */
	if (n)
		(void)sendto(r->lfd, r->out, n, MSG_DONTWAIT,
			     (const struct sockaddr *)to, to_len);
}

static int new_id(struct resolver *r, uint16_t *ret)
{
	uint16_t id;
	bool taken;

	do {
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			return -EIO;
		taken = false;
		for (size_t i = 0; i < SB_RESOLVER_PENDING_MAX; i++)
			taken |= r->pend[i].used && r->pend[i].up_id == id;
	} while (taken);
	*ret = id;
	return 0;
}

/* An allowed A / AAAA question goes upstream; false when it cannot. */
static bool forward(struct resolver *r, const struct sb_dns_query *q,
		    const struct sockaddr_storage *from, socklen_t from_len)
{
	struct pending *p = NULL;
	size_t n;

	uint64_t now = al_now_ms();

	/* a guest must not turn us into a flood of its upstream's */
	if (now - r->second_ms >= 1000) {
		r->second_ms = now;
		r->sent = 0;
	}
	if (r->sent >= SB_RESOLVER_QPS)
		return false;
	for (size_t i = 0; !p && i < SB_RESOLVER_PENDING_MAX; i++)
		if (!r->pend[i].used)
			p = &r->pend[i];
	if (!p || new_id(r, &p->up_id) < 0)
		return false;
	r->sent++;
	n = sb__dns_build_query(q, p->up_id, r->out, sizeof(r->out));
	if (!n || send(r->ufd, r->out, n, MSG_DONTWAIT) != (ssize_t)n)
		return false;
	p->used = true;
	p->q = *q;
	p->from = *from;
	p->from_len = from_len;
	p->dl = al_deadline_in(SB_RESOLVER_UPSTREAM_MS);
	return true;
}

static void on_query(struct resolver *r, size_t len,
		     const struct sockaddr_storage *from, socklen_t from_len)
{
	struct sb_dns_query q;
	int rc = sb__dns_parse_query(r->in, len, &q);

	if (rc == -EBADMSG)
		return;
	if (rc < 0)
		reply(r, &q, from, from_len,
		      rc == -ENOTSUP ? SB_DNS_NOTIMP : SB_DNS_FORMERR, NULL);
	else if (q.qclass != SB_DNS_C_IN)
		reply(r, &q, from, from_len, SB_DNS_REFUSED, NULL);
	else if (!sb_net_policy_allows_name(&r->p, q.name))
		reply(r, &q, from, from_len, SB_DNS_NXDOMAIN, NULL);
	else if (q.qtype != SB_DNS_T_A && q.qtype != SB_DNS_T_AAAA)
		reply(r, &q, from, from_len, SB_DNS_NOERROR, NULL);
	else if (!forward(r, &q, from, from_len))
		reply(r, &q, from, from_len, SB_DNS_SERVFAIL, NULL);
}

/* Read what the guest sent; < 0 only when the socket is gone. */
static int on_guest(struct resolver *r)
{
	struct sockaddr_storage from;
	socklen_t from_len;
	ssize_t n;

	for (int i = 0; i < 64; i++) {
		from_len = sizeof(from);
		n = recvfrom(r->lfd, r->in, sizeof(r->in), MSG_DONTWAIT,
			     (struct sockaddr *)&from, &from_len);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0 && (errno == EBADF || errno == ENOTSOCK))
			return -errno;
		if (n < 0)
			continue; /* EINTR, ENOMEM, an ICMP error: go on */
		on_query(r, (size_t)n, &from, from_len);
	}
	return 0;
}

/* --- upstream ----------------------------------------------------------- */

static void finish(struct resolver *r, struct pending *p, size_t len)
{
	struct sb_dns_answer a;

	if (sb__dns_parse_reply(r->in, len, &p->q, p->up_id, &a) < 0)
		return; /* not the reply to this question: keep waiting */
	if (a.rcode == SB_DNS_NOERROR && open_addrs(r, &a) < 0)
		a.rcode = SB_DNS_SERVFAIL;
	reply(r, &p->q, &p->from, p->from_len, a.rcode,
	      a.rcode == SB_DNS_NOERROR ? &a : NULL);
	p->used = false;
}

static void fail_all(struct resolver *r)
{
	for (size_t i = 0; i < SB_RESOLVER_PENDING_MAX; i++) {
		struct pending *p = &r->pend[i];

		if (!p->used)
			continue;
		reply(r, &p->q, &p->from, p->from_len, SB_DNS_SERVFAIL, NULL);
		p->used = false;
	}
}

static int on_upstream(struct resolver *r)
{
	ssize_t n;

	for (int i = 0; i < 64; i++) {
		n = recv(r->ufd, r->in, sizeof(r->in), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n == 0 || (n < 0 && (errno == EBADF || errno == ENOTSOCK)))
			return -EPIPE; /* the opener is gone */
		if (n == RELAY_REFUSED)
			fail_all(r); /* nobody listens upstream */
		if (n < 2)
			continue;
		for (size_t j = 0; j < SB_RESOLVER_PENDING_MAX; j++) {
			struct pending *p = &r->pend[j];

			if (p->used && p->up_id == (r->in[0] << 8 | r->in[1]))
				finish(r, p, (size_t)n);
		}
	}
	return 0;
}

/* SERVFAIL for questions past their deadline; the next deadline. */
static struct al_deadline expire(struct resolver *r)
{
	struct al_deadline next = AL_NO_DEADLINE;

	for (size_t i = 0; i < SB_RESOLVER_PENDING_MAX; i++) {
		struct pending *p = &r->pend[i];

		if (!p->used)
			continue;
		if (al_deadline_passed(p->dl)) {
			reply(r, &p->q, &p->from, p->from_len, SB_DNS_SERVFAIL,
			      NULL);
			p->used = false;
			continue;
		}
		next = al_deadline_min(next, p->dl);
	}
	return next;
}

static int serve(struct resolver *r)
{
	struct pollfd pf[3] = {{r->lfd, POLLIN, 0},
			       {r->ufd, POLLIN, 0},
			       {r->hfd, 0, 0}};
	int rc;

	for (;;) {
		struct al_deadline next = expire(r);

		if (poll(pf, 3, al_deadline_poll_ms(next)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((pf[0].revents | pf[1].revents | pf[2].revents) & POLLNVAL)
			return -EBADF;
		if (pf[2].revents & (POLLHUP | POLLERR))
			return -EPIPE; /* the opener is gone */
		rc = pf[0].revents ? on_guest(r) : 0;
		if (rc == 0 && pf[1].revents)
			rc = on_upstream(r);
		if (rc < 0)
			return rc;
	}
}

/* --- the opener ----------------------------------------------------------- */

/* One request of the DNS side: each entry checked, then one nft
 * transaction adding them to set4 / set6 with their timeouts. */
static int32_t do_open(struct nft_ctx *nft, const char *table, const char *set4,
		       const char *set6, const struct open_req *q)
{
	char cmd[SB_DNS_ADDRS_MAX * 128], ip[INET6_ADDRSTRLEN];
	size_t n = 0;
	int w;

	if (q->n == 0 || q->n > SB_DNS_ADDRS_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < q->n; i++) {
		int fam = (int)q->a[i].family;

		if ((fam != AF_INET && fam != AF_INET6) ||
		    q->a[i].ttl < SB_DNS_TTL_MIN_S ||
		    q->a[i].ttl > SB_DNS_TTL_MAX_S)
			return -EINVAL;
		inet_ntop(fam, q->a[i].addr, ip, sizeof(ip));
		w = snprintf(cmd + n, sizeof(cmd) - n,
			     "add element %s %s { %s timeout %us }\n", table,
			     fam == AF_INET ? set4 : set6, ip, q->a[i].ttl);
		if (w < 0 || (size_t)w >= sizeof(cmd) - n)
			return -E2BIG;
		n += (size_t)w;
	}
	if (nft_run_cmd_from_buffer(nft, cmd) != 0) {
		const char *err = nft_ctx_get_error_buffer(nft);

		fprintf(stderr, "airlock-resolver: nft: %.200s\n",
			err ? err : "failed");
		return -EIO;
	}
	(void)nft_ctx_get_output_buffer(nft);
	return 0;
}

/* Upstream -> relay: each datagram as one message; a refusal as one
 * byte. < 0 when the relay is gone. */
static int relay_down(int ufd, int relay, uint8_t *buf, size_t len)
{
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(ufd, buf, len, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0 && errno == ECONNREFUSED)
			buf[0] = 0, n = RELAY_REFUSED;
		else if (n < 2)
			continue; /* nothing a reply could be */
		if (send(relay, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) <
			0 &&
		    errno == EPIPE)
			return -EPIPE;
	}
	return 0;
}

/* The opener's loop: set updates asked on hfd, queries from the relay
 * out of the upstream socket, replies back; it parses no DNS. Ends when
 * the DNS side is gone (EOF), killing and reaping it. */
static int opener_serve(struct nft_ctx *nft, const char *table,
			const char *set4, const char *set6, int ufd, int relay,
			int hfd, int parent_fd, pid_t dns)
{
	static uint8_t buf[SB_DNS_MSG_MAX];
	struct pollfd pf[4] = {{hfd, POLLIN, 0},
			       {relay, POLLIN, 0},
			       {ufd, POLLIN, 0},
			       {parent_fd, POLLIN, 0}};
	struct open_req q;
	int rc = 0;

	while (rc == 0) {
		ssize_t n;

		if (poll(pf, parent_fd >= 0 ? 4 : 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (parent_fd >= 0 && pf[3].revents)
			break; /* the worker died: PDEATHSIG's backstop */
		if (pf[0].revents) {
			int32_t res;

			n = recv(hfd, &q, sizeof(q), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			res = n == sizeof(q) ? do_open(nft, table, set4, set6, &q)
					     : -EINVAL;
			if (n > 0 && send(hfd, &res, sizeof(res),
					  MSG_NOSIGNAL) != sizeof(res))
				break;
		}
		if (pf[1].revents) {
			n = recv(relay, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			/* lost like any datagram; the guest retries */
			if (n > 0)
				(void)send(ufd, buf, (size_t)n, MSG_DONTWAIT);
		}
		if (pf[2].revents)
			rc = relay_down(ufd, relay, buf, sizeof(buf));
	}
	kill(dns, SIGKILL);
	while (waitpid(dns, NULL, 0) < 0 && errno == EINTR)
		;
	return rc;
}

/* The DNS side: a child in a pid namespace of its own (its pid 1), with
 * the guest's socket, the relay and the request socket. */
static _Noreturn void dns_side(const struct sb_net_policy *p, int lfd,
			       int relay, int hfd, uid_t uid)
{
	struct resolver *r = calloc(1, sizeof(*r));
	int rc = -ENOMEM;

	if (r) {
		r->p = *p;
		r->lfd = lfd;
		r->ufd = relay;
		r->hfd = hfd;
		rc = drop_privileges((int[4]){lfd, relay, hfd, -1}, false, 0,
				     -1, uid);
	}
	if (rc == 0)
		rc = serve(r);
	_exit(-rc);
}

int sb__resolver_run(const struct sb_net_policy *p, int listen_fd,
		     int upstream_fd, int parent_fd, struct nft_ctx *nft,
		     uid_t uid, const char *table, const char *set4,
		     const char *set6)
{
	pid_t parent = getppid(), dns;
	int relay[2] = {-1, -1}, req[2] = {-1, -1}, rc;

	if (nft_ctx_buffer_output(nft) != 0 || nft_ctx_buffer_error(nft) != 0)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, relay) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, req) < 0)
		return -errno;
	/* the DNS side alone in a pid namespace: it sees no process */
	if (geteuid() == 0 && unshare(CLONE_NEWPID) < 0)
		return -errno;
	dns = fork();
	if (dns < 0)
		return -errno;
	if (dns == 0) {
		close(upstream_fd);
		close(relay[0]);
		close(req[0]);
		if (parent_fd >= 0)
			close(parent_fd);
		dns_side(p, listen_fd, relay[1], req[1], uid);
	}
	close(listen_fd);
	close(relay[1]);
	close(req[1]);
	rc = drop_privileges((int[4]){upstream_fd, relay[0], req[0], parent_fd},
			     true, parent, parent_fd, uid);
	if (rc == 0)
		rc = opener_serve(nft, table, set4, set6, upstream_fd,
				  relay[0], req[0], parent_fd, dns);
	else
		kill(dns, SIGKILL);
	return rc;
}
