/* net.h: a VM's network slot: its own network namespace with a tap for
 * QEMU, a veth to the host and the nftables rules of one policy (net.c
 * has the theory of operation, docs/network.md the design).
 *
 * Using it (a worker, for a job with `network = NAME`):
 *
 *  1. sb_net_open() with the policy (or sb_net_pool_take(), below): the
 *     namespace, tap, veth, addresses, rules and (for a policy with
 *     names) the resolver are ready.
 *  2. Launch the VMM into sb_net_ns() with sb_net_tap() as its NIC
 *     (struct sb_vm_net, sandbox.h).
 *  3. After the job, sb_net_stats(): bytes each way and the first
 *     destinations the rules refused.
 *  4. sb_net_close(): resolver killed and reaped, rules, veth, tap and
 *     namespace gone (the kernel frees the namespace with its last user,
 *     so a killed worker leaves nothing but what sb_sweep() removes).
 *
 * A slot with no policy (NULL) is a namespace and a tap only, with no way
 * out: what a networked template is built in.
 *
 * sb_net_open() is sb_net_base() (the policy-free part: namespace, tap,
 * veth, addresses, routes, NAT, the always-denied rules; everything is
 * refused) then sb_net_apply() (the policy's allow sets, ports, caps and
 * resolver). A worker keeps a few bases ready (struct sb_net_pool, made
 * between jobs) so a job pays only for sb_net_apply(); a slot serves one
 * job and is then closed, after the job's result is sent (no conntrack
 * state or rules ever pass from one job to the next).
 */
#ifndef AL_SB_NET_H
#define AL_SB_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netpolicy.h"
#include "options.h"

/* Every clone of a networked template has the same address and MAC: each
 * has a namespace of its own. The namespace end of the tap is the
 * guest's gateway and DNS resolver. */
#define SB_NET_GUEST_IP	   "10.200.0.2"
#define SB_NET_GATEWAY_IP  "10.200.0.1"
#define SB_NET_PREFIX	   30
#define SB_NET_GUEST_MAC   "52:54:00:a1:0c:02"
#define SB_NET_TAP	   "tap0"    /* the tap, in the VM's namespace */
#define SB_NET_UPLINK	   "up0"     /* the veth's end in the VM's namespace */
#define SB_NET_TABLE	   "airlock" /* the nft table (family inet) there */
#define SB_NET_SLOTS	   16383 /* slots on a host: 10.201.0.0/16 in /30s */
#define SB_NET_DROPPED_MAX 16	 /* dropped destinations kept per VM */
/* The package gateway's network (docs/packages.md): slot traffic to it is
 * not masqueraded, so the gateway sees each slot's own address. A policy
 * still has to allow it (its CIDR and port) for a VM to reach it. */
#define SB_NET_PACKAGES_NET "10.202.0.0/30"
#define SB_NET_GW_HOST_IF   "agw0"	 /* its veth's host end */
#define SB_NET_GW_IF	    "agw1"	 /* its end, in its namespace */
#define SB_NET_GW_HOST_IP   "10.202.0.1" /* the host end's address */
#define SB_NET_GW_IP	    "10.202.0.2" /* the gateway's address */
#define SB_NET_GW_PORT	    3141	 /* where it listens */

/* The package gateway's network, made by whoever starts it
 * (tools/cli/gwrun.c). sb_net_gateway_link(), in the host's namespace:
 * the host's wall (as for a slot; it also refuses whatever the gateway
 * starts itself: it may only answer), then a veth, SB_NET_GW_HOST_IF with
 * SB_NET_GW_HOST_IP here, its peer SB_NET_GW_IF moved into the namespace
 * `ns_fd`. sb_net_gateway_inner(), then, in that namespace: lo and the
 * link up, SB_NET_GW_IP, a route to the slots (10.201.0.0/16) and no
 * other. 0 or -errno, `err` says what failed. */
int sb_net_gateway_link(int ns_fd, char *err, size_t errlen);
int sb_net_gateway_inner(char *err, size_t errlen);
/* Once the gateway is reaped: its veth, at once (its namespace's end
 * would take it along, but later: the kernel frees namespaces lazily). */
void sb_net_gateway_unlink(void);

/* What a VM's traffic came to. */
struct sb_net_stats {
	uint64_t bytes_out, packets_out;      /* allowed, guest -> world */
	uint64_t bytes_in, packets_in;	      /* allowed, world -> guest */
	uint64_t denied_packets;	      /* refused, either way */
	size_t n_dropped;		      /* entries in dropped */
	char dropped[SB_NET_DROPPED_MAX][64]; /* "ADDR:PORT", sorted */
};

struct sb_net;

/* Make a slot for policy `p` (NULL: a tap in an empty namespace). On
 * failure, `err` says what failed. -EOPNOTSUPP when the kernel lacks
 * something networking needs (sb_net_probe says what). */
int sb_net_open(const struct sb_options *o, const struct sb_net_policy *p,
		struct sb_net **ret, char *err, size_t errlen);
/* The namespace (an fd to setns() into) and the tap (QEMU's NIC). */
int sb_net_ns(const struct sb_net *n);
int sb_net_tap(const struct sb_net *n);
/* The slot's index (its host link is al<pid>-<index>), 0 if none. */
uint32_t sb_net_index(const struct sb_net *n);
/* The address the slot's traffic leaves its host link with, "10.201.I.2"
 * (what the package gateway sees, docs/packages.md), into buf; -ENOENT
 * for a slot without an uplink. */
int sb_net_source_addr(const struct sb_net *n, char *buf, size_t len);
/* Read the counters and dropped destinations. */
int sb_net_stats(struct sb_net *n, struct sb_net_stats *ret);
/* Tear everything down; accepts NULL. */
void sb_net_close(struct sb_net *n);

/* The policy-free base of a slot with an uplink: every destination is
 * refused until sb_net_apply(). */
int sb_net_base(const struct sb_options *o, struct sb_net **ret, char *err,
		size_t errlen);
/* Give base `n` policy `p`: its allow sets, ports and caps, and (when it
 * has names) the policy to the base's resolver, spawned with the base and
 * waiting for it. -EBUSY if `n` has a policy
 * already or no uplink. On failure the caller closes `n`. */
int sb_net_apply(struct sb_net *n, const struct sb_net_policy *p, char *err,
		 size_t errlen);

/* A worker's ready slots (bases) and the slot of its last job, closed
 * when it is idle again. Ready slots are named and leased like any slot
 * (host link al<pid>-<index>), so a killed worker's are swept the same
 * way (sb_net_sweep) and the kernel frees their namespaces. */
#define SB_NET_READY_MAX 4
struct sb_net_pool {
	const struct sb_options *o;		/* outlives the pool */
	struct sb_net *ready[SB_NET_READY_MAX]; /* bases, no policy yet */
	size_t n_ready;				/* entries used */
	unsigned want;				/* o->net_ready, capped; 0 with
						 * no policy configured */
	bool off;				/* the host cannot: no retry */
	bool failed;				/* a base failed: retry after
						 * the next take */
	struct sb_net *spent;			/* a done job's, to close */
};

void sb_net_pool_init(struct sb_net_pool *np, const struct sb_options *o);
/* Between jobs: close the spent slot, then make bases up to `want`,
 * stopping when stop(arg) says a job waits (stop may be NULL). 0 or the
 * -errno of the base that failed. */
int sb_net_pool_fill(struct sb_net_pool *np, bool (*stop)(void *), void *arg);
/* A slot with policy `p`: a ready base given `p` (*ready = true), else
 * one opened from scratch (sb_net_open). */
int sb_net_pool_take(struct sb_net_pool *np, const struct sb_net_policy *p,
		     struct sb_net **ret, bool *ready, char *err,
		     size_t errlen);
/* Hand back a done job's slot (its VM destroyed): closed by the next
 * sb_net_pool_fill or put, or sb_net_pool_release. Accepts NULL. */
void sb_net_pool_put(struct sb_net_pool *np, struct sb_net *n);
/* Close every slot the pool holds. */
void sb_net_pool_release(struct sb_net_pool *np);

/* Can this host run networked jobs? 0, or -errno with `why` saying what
 * is missing and what to do (doctor, and the RJ of a networked job). */
int sb_net_probe(char *why, size_t len);

/* Is `addr` (AF_INET: 4 bytes, AF_INET6: 16, network order) one of the
 * destinations no policy opens (never4/never6 in net.c: loopback,
 * link-local and metadata, 0.0.0.0/8, multicast, the slots' ranges..)?
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is checked as a.b.c.d;
 * any other family is denied. Pure: no I/O; the callbacks' target check
 * (tools/api/callback.c) uses it too. */
bool sb_net_always_denied(int family, const void *addr);

/* Remove the host links (al<pid>-<n>) of dead owners: sweep.c. Returns
 * how many went. */
unsigned sb_net_sweep(bool (*dead)(pid_t pid));
/* Count them and remove none (doctor: sb_sweep_scan); the first one's
 * name goes to `first` (len bytes, "" when none). */
unsigned sb_net_scan(bool (*dead)(pid_t pid), char *first, size_t len);

#endif
