/* net.c: the guest's network, brought up by init at template time.
 *
 * A networked template's kernel command line carries
 * `airlock.net=ADDR/PREFIX,GATEWAY` (sandbox/machine.c). Then, as PID 1
 * and before any job runs: lo and eth0 up, ADDR on eth0, a default route
 * via GATEWAY, and /etc/resolv.conf naming GATEWAY (the VM's resolver:
 * a file on /run bound over the read-only root's empty one). Clones keep
 * all of it: each runs in a host network namespace of its own, so every
 * clone can have the same address. Jobs run unprivileged (no
 * CAP_NET_ADMIN): they cannot change addresses or routes. Without the
 * parameter nothing here runs: the VM has no NIC and only lo, down.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define NET_PARAM   "airlock.net="
#define NET_IF	    "eth0"
#define NET_WAIT_MS 10000u /* the NIC's driver probes asynchronously */
#define RESOLV_RUN  "/run/resolv.conf"

struct guest_net {
	struct in_addr addr, mask, gw;
};

/* airlock.net=A.B.C.D/P,G.H.I.J from /proc/cmdline; -ENOENT if absent. */
static int net_param(struct guest_net *n)
{
	char buf[4096], *p, *slash, *comma;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	long prefix;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return -ENOENT;
	buf[len] = 0;
	p = strstr(buf, NET_PARAM);
	if (!p || (p > buf && p[-1] != ' '))
		return -ENOENT;
	p += strlen(NET_PARAM);
	p[strcspn(p, " \n")] = 0;
	slash = strchr(p, '/');
	comma = strchr(p, ',');
	if (!slash || !comma || comma < slash)
		return -EINVAL;
	*slash = *comma = 0;
	prefix = strtol(slash + 1, NULL, 10);
	if (prefix < 1 || prefix > 32 || !inet_aton(p, &n->addr) ||
	    !inet_aton(comma + 1, &n->gw))
		return -EINVAL;
	n->mask.s_addr = htonl(~0u << (32 - prefix));
	return 0;
}

static int if_up(int s, const char *name)
{
	struct ifreq ifr = {0};

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int if_addr(int s, unsigned long req, struct in_addr a)
{
	struct ifreq ifr = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), NET_IF);
	sin->sin_family = AF_INET;
	sin->sin_addr = a;
	return ioctl(s, req, &ifr) < 0 ? -errno : 0;
}

static int default_route(int s, struct in_addr gw)
{
	struct rtentry rt = {0};
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
	struct sockaddr_in *g = (struct sockaddr_in *)&rt.rt_gateway;
	struct sockaddr_in *m = (struct sockaddr_in *)&rt.rt_genmask;

	dst->sin_family = g->sin_family = m->sin_family = AF_INET;
	g->sin_addr = gw;
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	return ioctl(s, SIOCADDRT, &rt) < 0 && errno != EEXIST ? -errno : 0;
}

static int wait_nic(void)
{
	struct timespec ts = {0, 10 * 1000000};
	struct stat st;

	for (unsigned waited = 0; waited < NET_WAIT_MS; waited += 10) {
		if (stat("/sys/class/net/" NET_IF, &st) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ENODEV;
}

/* /etc/resolv.conf: the gateway, bound from /run over the empty file. */
static int write_resolv(struct in_addr gw)
{
	FILE *f = fopen(RESOLV_RUN, "we");

	if (!f)
		return -errno;
	fprintf(f, "nameserver %s\noptions timeout:2 attempts:2\n",
		inet_ntoa(gw));
	if (fclose(f) != 0)
		return -EIO;
	chmod(RESOLV_RUN, 0644);
	return mount(RESOLV_RUN, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0
		   ? -errno
		   : 0;
}

int al_agent_net_up(void)
{
	struct guest_net n;
	int r = net_param(&n), s;

	if (r == -ENOENT)
		return 0; /* not networked: no NIC, lo stays as it is */
	if (r < 0 || (r = wait_nic()) < 0) {
		al_agent_log("network: %s", strerror(-r));
		return r;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if ((r = if_up(s, "lo")) < 0 ||
	    (r = if_addr(s, SIOCSIFADDR, n.addr)) < 0 ||
	    (r = if_addr(s, SIOCSIFNETMASK, n.mask)) < 0 ||
	    (r = if_up(s, NET_IF)) < 0 || (r = default_route(s, n.gw)) < 0)
		al_agent_log("network: %s", strerror(-r));
	close(s);
	if (r == 0 && (r = write_resolv(n.gw)) < 0)
		al_agent_log("resolv.conf: %s", strerror(-r));
	return r;
}
