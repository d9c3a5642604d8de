/* rtnl.c: rtnetlink requests for net.c (see rtnl.h).
 *
 * Each request is built in a stack buffer: a struct nlmsghdr, the
 * family's header, then attributes (rta_put). Nested attributes (a veth's
 * peer, inside IFLA_LINKINFO / IFLA_INFO_DATA) are opened with nest_open
 * and their length fixed by nest_close. No library: libmnl's headers are
 * not a dependency of ours, and these are six small messages.
 */
#include <errno.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "rtnl.h"

#define RTNL_BUF 4096

struct req {
	union {
		struct nlmsghdr h;
		char buf[RTNL_BUF];
	};
};

int sb__rtnl_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static void *tail(struct req *r)
{
	return r->buf + NLMSG_ALIGN(r->h.nlmsg_len);
}

static void rta_put(struct req *r, unsigned short type, const void *data,
		    size_t len)
{
	struct rtattr *a = tail(r);

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static struct rtattr *nest_open(struct req *r, unsigned short type)
{
	struct rtattr *a = tail(r);

	rta_put(r, type, NULL, 0);
	return a;
}

static void nest_close(struct req *r, struct rtattr *a)
{
	a->rta_len = (unsigned short)((char *)tail(r) - (char *)a);
}

/* Start a request of `type` with a family header of `hlen` bytes whose
 * first byte, the address family in every rtnetlink header (ifi_family,
 * ifa_family, rtm_family, ndm_family), is `family`. */
static void *req_init(struct req *r, unsigned short type, unsigned short flags,
		      unsigned char family, size_t hlen)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = (uint32_t)NLMSG_LENGTH(hlen);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	r->h.nlmsg_seq = 1;
	*(unsigned char *)NLMSG_DATA(&r->h) = family;
	return NLMSG_DATA(&r->h);
}

_Static_assert(offsetof(struct ifinfomsg, ifi_family) == 0 &&
		   offsetof(struct ifaddrmsg, ifa_family) == 0 &&
		   offsetof(struct rtmsg, rtm_family) == 0 &&
		   offsetof(struct ndmsg, ndm_family) == 0,
	       "rtnetlink headers start with the family");

/* recv() again when a signal interrupts it: bytes or -errno. */
static ssize_t recv_retry(int fd, char *buf, size_t len)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

/* Send r, then read replies into buf: each message that is neither an
 * error nor the end of a dump goes to each() (may be NULL). Returns the
 * kernel's answer (0 for an ack, or -errno), 1 at the end of a dump, or
 * the -errno of send/recv. */
static int req_talk(int fd, struct req *r, char *buf, size_t len,
		    void (*each)(struct nlmsghdr *h, void *arg), void *arg)
{
	ssize_t n;

	if (send(fd, r->buf, r->h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		n = recv_retry(fd, buf, len);
		if (n < 0)
			return (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 1;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))
				    ->error;
			if (each)
				each(h, arg);
		}
	}
}

/* Send, then read the ack: 0 or the kernel's -errno. */
static int req_send(int fd, struct req *r)
{
	char buf[RTNL_BUF];

	return req_talk(fd, r, buf, sizeof(buf), NULL, NULL);
}

int sb__rtnl_veth(int fd, const char *name, const char *peer, int peer_ns_fd)
{
	struct req r;
	struct ifinfomsg *ifi, *pi;
	struct rtattr *li, *data, *pa;

	ifi = req_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, AF_UNSPEC,
		       sizeof(*ifi));
	rta_put(&r, IFLA_IFNAME, name, strlen(name) + 1);
	li = nest_open(&r, IFLA_LINKINFO);
	rta_put(&r, IFLA_INFO_KIND, "veth", 4);
	data = nest_open(&r, IFLA_INFO_DATA);
	pa = nest_open(&r, VETH_INFO_PEER);
	pi = tail(&r);
	memset(pi, 0, sizeof(*pi));
	r.h.nlmsg_len += NLMSG_ALIGN(sizeof(*pi));
	rta_put(&r, IFLA_IFNAME, peer, strlen(peer) + 1);
	if (peer_ns_fd >= 0)
		rta_put(&r, IFLA_NET_NS_FD, &(uint32_t){(uint32_t)peer_ns_fd},
			4);
	nest_close(&r, pa);
	nest_close(&r, data);
	nest_close(&r, li);
	return req_send(fd, &r);
}

int sb__rtnl_link_up(int fd, int ifindex)
{
	struct req r;
	struct ifinfomsg *ifi =
	    req_init(&r, RTM_NEWLINK, 0, AF_UNSPEC, sizeof(*ifi));

	ifi->ifi_index = ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return req_send(fd, &r);
}

int sb__rtnl_link_del(int fd, const char *name)
{
	struct req r;
	struct ifinfomsg *ifi =
	    req_init(&r, RTM_DELLINK, 0, AF_UNSPEC, sizeof(*ifi));

	rta_put(&r, IFLA_IFNAME, name, strlen(name) + 1);
	return req_send(fd, &r);
}

int sb__rtnl_addr4(int fd, int ifindex, uint32_t addr, unsigned prefix)
{
	struct req r;
	struct ifaddrmsg *ifa = req_init(
	    &r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, AF_INET, sizeof(*ifa));

	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_index = (unsigned)ifindex;
	rta_put(&r, IFA_LOCAL, &addr, 4);
	rta_put(&r, IFA_ADDRESS, &addr, 4);
	return req_send(fd, &r);
}

int sb__rtnl_route4(int fd, uint32_t dst, unsigned prefix, uint32_t gw)
{
	struct req r;
	struct rtmsg *rt = req_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL,
				    AF_INET, sizeof(*rt));

	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	rt->rtm_dst_len = (unsigned char)prefix;
	if (prefix)
		rta_put(&r, RTA_DST, &dst, 4);
	rta_put(&r, RTA_GATEWAY, &gw, 4);
	return req_send(fd, &r);
}

int sb__rtnl_default4(int fd, uint32_t gw)
{
	return sb__rtnl_route4(fd, 0, 0, gw);
}

int sb__rtnl_neigh4(int fd, int ifindex, uint32_t addr, const uint8_t mac[6])
{
	struct req r;
	struct ndmsg *nd =
	    req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, AF_INET,
		     sizeof(*nd));

	nd->ndm_ifindex = ifindex;
	nd->ndm_state = NUD_PERMANENT;
	rta_put(&r, NDA_DST, &addr, 4);
	rta_put(&r, NDA_LLADDR, mac, 6);
	return req_send(fd, &r);
}

/* One message of a link dump: its IFLA_IFNAME to fn. */
static int link_name(struct nlmsghdr *h, int (*fn)(const char *, void *),
		     void *arg)
{
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = (int)IFLA_PAYLOAD(h);

	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len);
	     a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_IFNAME)
			return fn(RTA_DATA(a), arg);
	return 0;
}

struct link_walk {
	int (*fn)(const char *name, void *arg); /* the caller's */
	void *arg;				/* its argument */
	int ret;				/* fn's first non-zero, or 0 */
};

/* req_talk's each() for a link dump: names to fn until it says stop. */
static void each_link(struct nlmsghdr *h, void *arg)
{
	struct link_walk *w = arg;

	if (!w->ret && h->nlmsg_type == RTM_NEWLINK)
		w->ret = link_name(h, w->fn, w->arg);
}

int sb__rtnl_links(int fd, int (*fn)(const char *name, void *arg), void *arg)
{
	static char buf[32768];
	struct link_walk w = {fn, arg, 0};
	struct req r;
	struct ifinfomsg *ifi =
	    req_init(&r, RTM_GETLINK, NLM_F_DUMP, AF_UNSPEC, sizeof(*ifi));
	int rc;

	rc = req_talk(fd, &r, buf, sizeof(buf), each_link, &w);
	return rc == 1 ? w.ret : rc;
}
