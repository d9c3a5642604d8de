/* rtnl.h: the few rtnetlink requests a VM's network slot needs (links,
 * addresses, routes, neighbours), on a NETLINK_ROUTE socket. Internal to
 * sandbox/; only net.c calls it.
 *
 * A netlink socket stays bound to the network namespace it was opened in,
 * so net.c opens one per namespace. Every call sends one request with
 * NLM_F_ACK and waits for the kernel's answer: 0 or -errno.
 */
#ifndef AL_SB_RTNL_H
#define AL_SB_RTNL_H

#include <stdbool.h>
#include <stdint.h>

/* A NETLINK_ROUTE socket (CLOEXEC) in the caller's namespace, or -errno. */
int sb__rtnl_open(void);
/* A veth pair: `name` here, its peer `peer` moved into the namespace of
 * `peer_ns_fd` (-1: stays here). */
int sb__rtnl_veth(int fd, const char *name, const char *peer, int peer_ns_fd);
/* Set a link up, by index. */
int sb__rtnl_link_up(int fd, int ifindex);
/* Delete a link by name (-ENODEV when there is none). */
int sb__rtnl_link_del(int fd, const char *name);
/* Add IPv4 address `addr` (network byte order) / `prefix` to a link. */
int sb__rtnl_addr4(int fd, int ifindex, uint32_t addr, unsigned prefix);
/* A default IPv4 route via `gw` (network byte order). */
int sb__rtnl_default4(int fd, uint32_t gw);
/* An IPv4 route to `dst`/`prefix` via `gw` (network byte order). */
int sb__rtnl_route4(int fd, uint32_t dst, unsigned prefix, uint32_t gw);
/* A permanent neighbour entry: `addr` is at `mac` on the link. */
int sb__rtnl_neigh4(int fd, int ifindex, uint32_t addr, const uint8_t mac[6]);
/* Call `fn` with the name of every link here; stops at the first nonzero
 * return and returns it (or -errno of the dump). */
int sb__rtnl_links(int fd, int (*fn)(const char *name, void *arg), void *arg);

#endif
