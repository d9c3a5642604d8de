/* netpolicy.h: a named network policy: what a networked job may reach.
 *
 * A policy is plain data, parsed from the config's `[network.NAME]`
 * sections (tools/config/config.c) and enforced per VM by
 * sandbox/net/net.c (the network namespace, tap, veth and nftables rules)
 * and sandbox/net/resolver.c (the DNS resolver that answers only for the
 * policy's names and opens each answer's addresses in nftables for the
 * record's TTL).
 *
 * A destination is allowed when it is one of `names` (resolved through the
 * VM's resolver) or inside one of `cidrs`, AND the packet's protocol and
 * destination port match one of `ports`. Whatever a policy says, the
 * always-denied ranges (link-local, loopback, the host and other VMs, and
 * private ranges not listed in `cidrs`) stay closed: docs/network.md.
 *
 * No pointers: a policy can be copied, and lives inside struct al_config.
 */
#ifndef AL_NETPOLICY_H
#define AL_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "caps.h" /* AL_NAME_MAX */

#define SB_NET_POLICIES_MAX 16 /* [network.NAME] sections in one config */
#define SB_NET_NAMES_MAX 32    /* domain names in one policy */
#define SB_NET_CIDRS_MAX 32    /* CIDRs in one policy */
#define SB_NET_PORTS_MAX 16    /* protocol/port ranges in one policy */
#define SB_NET_DNAME_MAX 253   /* a domain name, without the final dot */

/* A domain name: `allowed.test` (exactly that name) or `*.example.org`
 * (any name below example.org, not example.org itself). Stored lowercase,
 * without the `*.` and without a trailing dot. */
struct sb_net_name {
	char name[SB_NET_DNAME_MAX + 1];
	bool suffix; /* written as `*.name` */
};

/* An address range. A host address is a /32 (or /128). */
struct sb_net_cidr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order, host bits zero */
	uint8_t prefix;	  /* 0..32 or 0..128 */
};

/* A protocol and a port range: `tcp/80`, `udp/1000-2000`. */
struct sb_net_port {
	uint8_t proto;	 /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t lo, hi; /* inclusive, 1..65535, lo <= hi */
};

struct sb_net_policy {
	char name[AL_NAME_MAX + 1]; /* the NAME of [network.NAME] */
	size_t n_names;
	struct sb_net_name names[SB_NET_NAMES_MAX];
	size_t n_cidrs;
	struct sb_net_cidr cidrs[SB_NET_CIDRS_MAX];
	size_t n_ports; /* at least one: a policy must name its ports */
	struct sb_net_port ports[SB_NET_PORTS_MAX];
	uint32_t rate_kbit;	 /* bandwidth cap each way, 0 = none */
	uint32_t conn_per_min;	 /* new connections a minute, 0 = none */
};

/* --- reading, printing and matching policies (netpolicy.c) ---------------
 *
 * The config parser (tools/config/config.c) owns the file: sections, lines,
 * errors with FILE:LINE. It hands each `KEY = VALUE` of a [network.NAME]
 * section to sb_net_policy_set(), then calls sb_net_policy_check() once
 * the file is read. These functions do no I/O but the dumper's and never
 * log; `why` gets a lowercase reason without the key. */

/* One key of a [network.NAME] section: for the parser, docs and tests. */
struct sb_net_key {
	const char *key;  /* "allow" */
	bool repeat;	  /* may be given on several lines, each adds */
	const char *rule; /* what it accepts, for messages and docs */
	const char *doc;  /* one line: what it means */
};

/* The keys, in the order the dumper writes them; *ret_n gets the count. */
const struct sb_net_key *sb_net_policy_keys(size_t *ret_n);
/* Apply `key = value` to p: allow and ports add to what p holds, the
 * numbers replace. Returns 0, -ENOENT (no such key) or -EINVAL (why says
 * what is wrong with the value; p is then unchanged). */
int sb_net_policy_set(struct sb_net_policy *p, const char *key,
		      const char *value, char *why, size_t whylen);
/* Checks of the whole policy, after its last key: it allows something and
 * names its ports. Returns 0 or -EINVAL with why. */
int sb_net_policy_check(const struct sb_net_policy *p, char *why,
			size_t whylen);
/* Write p as a `[network.NAME]` section that sb_net_policy_set() reads
 * back to the same policy (one allow / ports line per entry, so no line is
 * longer than the config's line limit). Returns 0 or -EIO. */
int sb_net_policy_dump(const struct sb_net_policy *p, FILE *f);
/* Is `name` (a DNS name in any case, a trailing dot allowed) one of p's
 * names: equal to an exact one, or strictly below a `*.` one? */
bool sb_net_policy_allows_name(const struct sb_net_policy *p,
			       const char *name);

#endif
