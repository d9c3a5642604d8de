/* resolver.h: the per-VM DNS resolver that opens names in nftables.
 *
 * A networked VM's only DNS server. It answers for the names its policy
 * allows and for nothing else (NXDOMAIN, never forwarded; but every name
 * under an allowed `*.suffix` is forwarded, a channel to whoever sees that
 * suffix's queries), forwards allowed A / AAAA questions upstream, adds each
 * address of the answer to the VM's nft set with the record's TTL as the
 * element timeout, before the answer reaches the guest. Why our own and
 * not dnsmasq's nftset: docs/network.md, "Resolver".
 *
 * Using it (sandbox/net/net.c does this per networked VM):
 *
 *  1. Make the fds and the nft context: listen_fd a UDP socket bound in
 *     the VM's netns to the guest's resolver address, port 53;
 *     upstream_fd a UDP socket made in the uplink namespace and connect()ed
 *     to the upstream resolver (a socket keeps the namespace it was made
 *     in); nft from nft_ctx_new() run inside the VM's netns (its netlink
 *     socket stays bound there). The table and its sets must exist: set4
 *     of type ipv4_addr and set6 of ipv6_addr, both `flags timeout`.
 *  2. In a child (net.c spawns a fresh image of the program: a forked
 *     child sharing the worker's pages would cost it copy-on-write
 *     faults), call sb__resolver_run(), which never returns
 *     but on a fatal error (then _exit with it).
 *  3. Kill (SIGKILL) and reap the child with the VM. It also dies with
 *     its parent (PDEATHSIG).
 *
 * sb__resolver_run() splits the child in two (issue 23). The DNS side,
 * which parses what the guest and upstream send, is forked into a pid
 * namespace of its own, moves into new empty network, mount (an empty
 * read-only root), ipc and uts namespaces and keeps no capability; it
 * has the guest's socket, a relay to upstream and a request socket. The
 * caller's process becomes the opener: it keeps the nft context and the
 * upstream socket, CAP_NET_ADMIN alone (nf_tables checks the sender's
 * capability on every message, not only the opener's: measured, see
 * docs/network.md), moves into empty network and mount namespaces too,
 * relays datagrams and turns fixed-size requests into `add element`s of
 * set4 / set6; it parses no DNS. As root both run as the uid/gid given
 * (net.c leases one from the VMMs' range, so no other VM's resolver or
 * VMM shares it; SB_RESOLVER_UID when there is none), no groups,
 * no_new_privs, not dumpable, no fork. Killing the opener kills the DNS
 * side (PDEATHSIG; EOF on its request socket).
 */
#ifndef SB_RESOLVER_H
#define SB_RESOLVER_H

#include <sys/types.h>

#include "netpolicy.h"

#define SB_RESOLVER_UID 65534	    /* nobody: the uid when none is leased */
#define SB_RESOLVER_UPSTREAM_MS 2000 /* then the guest gets SERVFAIL */
#define SB_RESOLVER_PENDING_MAX 32   /* questions upstream at once */
#define SB_RESOLVER_CACHE_MAX 256    /* addresses whose expiry we track */
#define SB_RESOLVER_QPS 100	    /* questions sent upstream a second */

struct nft_ctx;

/* Serve the guest until a fatal error (-errno: a socket failed, the
 * privileges could not be dropped). As root, run as `uid` (== gid; 0 =
 * SB_RESOLVER_UID). `table` is "FAMILY NAME", e.g. "inet airlock".
 * parent_fd: a pidfd of the process to die with (readable once it died:
 * the caller may be pid 1 of a pid namespace, with no getppid()), or -1
 * to check getppid() against the parent it had at the call. */
int sb__resolver_run(const struct sb_net_policy *p, int listen_fd,
		     int upstream_fd, int parent_fd, struct nft_ctx *nft,
		     uid_t uid, const char *table, const char *set4,
		     const char *set6);

#endif
