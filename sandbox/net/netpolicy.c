/* netpolicy.c: a network policy's values read, checked, printed, matched.
 *
 * Theory of operation. A policy is written as a `[network.NAME]` section:
 *
 *     allow = allowed.test *.example.org 192.0.2.0/24 2001:db8::/32
 *     ports = tcp/80 tcp/443 udp/1000-2000
 *     rate_kbit = 0
 *     conn_per_min = 0
 *
 * `allow` and `ports` are lists, and may be given on several lines (the
 * config's lines are short, a policy's list need not be); each line adds
 * to the list, a repeated entry is an error. Every entry is checked
 * strictly, because a typo in an allowlist is silent otherwise: a name is
 * LDH labels (underscore allowed) of 1..63 bytes, at most 253 bytes, not
 * numeric at the end (so `192.0.2.300` is an error, not a host name); a
 * CIDR must have its host bits zero (`192.0.2.1/24` is refused with the
 * network it probably meant). Values are stored lowercase, so matching a
 * query is a case-insensitive compare (sb_net_policy_allows_name, used by
 * the resolver on every guest query).
 *
 * Callers: tools/config/config.c (parsing, dump), sandbox/net/resolver.c
 * (matching), tests/unit/test_netpolicy.c and tests/fuzz/fuzz_netpolicy.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "netpolicy.h"
#include "results.h"

#define RATE_KBIT_MAX 10000000u	 /* 10 Gbit/s */
#define CONN_PER_MIN_MAX 1000000u /* about 16 000 a second */

static const struct sb_net_key keys[] = {
    {"allow", true,
     "names (host.example, *.example) and CIDRs (192.0.2.0/24, "
     "2001:db8::/32), space-separated",
     "what may be reached; several lines add up"},
    {"ports", true, "tcp/PORT, udp/PORT or PROTO/LO-HI, space-separated",
     "protocols and ports allowed to those destinations; several lines "
     "add up"},
    {"rate_kbit", false, "0..10000000",
     "bandwidth cap each way in kbit/s; 0 = none"},
    {"conn_per_min", false, "0..1000000",
     "new connections a minute; 0 = none"},
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

const struct sb_net_key *sb_net_policy_keys(size_t *ret_n)
{
	*ret_n = N_KEYS;
	return keys;
}

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* --- one entry of allow ------------------------------------------------- */

static bool label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_';
}

/* `s` (lowercase already) is a domain name: labels of 1..63 label_chars,
 * not all digits in the last one. */
static bool name_ok(const char *s)
{
	size_t len = strlen(s), label = 0;
	bool digits = true;

	if (len == 0 || len > SB_NET_DNAME_MAX)
		return false;
	for (; *s; s++) {
		if (*s == '.') {
			if (label == 0)
				return false;
			label = 0;
			digits = true;
			continue;
		}
		if (!label_char(*s) || ++label > 63)
			return false;
		digits &= *s >= '0' && *s <= '9';
	}
	return label > 0 && !digits;
}

static void mask_host_bits(uint8_t *a, size_t bytes, unsigned prefix)
{
	for (size_t i = 0; i < bytes; i++) {
		unsigned keep = prefix >= 8 * (i + 1) ? 8
				: prefix > 8 * i      ? prefix - 8 * i
						      : 0;

		a[i] &= (uint8_t)(0xff00u >> keep);
	}
}

static int parse_prefix(const char *s, unsigned max, unsigned *ret)
{
	uint64_t n;

	if (strlen(s) > 3 || al_decimal_parse(s, strlen(s), max, &n) < 0)
		return -EINVAL;
	*ret = (unsigned)n;
	return 0;
}

/* An address with an optional /PREFIX. -ENOENT when `s` is no address at
 * all (it may be a name), -EINVAL when it is a bad one. */
static int parse_cidr(const char *s, struct sb_net_cidr *ret, char *why,
		      size_t whylen)
{
	char addr[INET6_ADDRSTRLEN + 8], back[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s), bytes;
	struct sb_net_cidr c = {0};
	unsigned prefix;
	uint8_t orig[16];

	if (n >= sizeof(addr))
		return slash ? fail(why, whylen, "\"%s\" is not a CIDR", s)
			     : -ENOENT;
	memcpy(addr, s, n);
	addr[n] = 0;
	if (inet_pton(AF_INET, addr, c.addr) == 1)
		c.family = AF_INET;
	else if (inet_pton(AF_INET6, addr, c.addr) == 1)
		c.family = AF_INET6;
	else if (slash || strchr(addr, ':'))
		return fail(why, whylen, "\"%s\" is not a CIDR", s);
	else
		return -ENOENT;
	bytes = c.family == AF_INET ? 4 : 16;
	prefix = (unsigned)bytes * 8;
	if (slash && parse_prefix(slash + 1, prefix, &prefix) < 0)
		return fail(why, whylen, "\"%s\": prefix must be 0..%zu", s,
			    bytes * 8);
	memcpy(orig, c.addr, bytes);
	mask_host_bits(c.addr, bytes, prefix);
	if (memcmp(orig, c.addr, bytes) != 0) {
		inet_ntop(c.family, c.addr, back, sizeof(back));
		return fail(why, whylen,
			    "\"%s\" has host bits set (network %s/%u?)", s,
			    back, prefix);
	}
	c.prefix = (uint8_t)prefix;
	*ret = c;
	return 0;
}

static bool same_cidr(const struct sb_net_cidr *a, const struct sb_net_cidr *b)
{
	return a->family == b->family && a->prefix == b->prefix &&
	       memcmp(a->addr, b->addr, 16) == 0;
}

/* One `allow` entry (lowercased, NUL-terminated) into p. */
static int add_allow(struct sb_net_policy *p, const char *tok, char *why,
		     size_t whylen)
{
	struct sb_net_name nm = {0};
	struct sb_net_cidr c;
	const char *s = tok;
	int rc;

	rc = parse_cidr(tok, &c, why, whylen);
	if (rc == 0) {
		for (size_t i = 0; i < p->n_cidrs; i++)
			if (same_cidr(&p->cidrs[i], &c))
				return fail(why, whylen, "lists \"%s\" twice",
					    tok);
		if (p->n_cidrs == SB_NET_CIDRS_MAX)
			return fail(why, whylen, "more than %d CIDRs",
				    SB_NET_CIDRS_MAX);
		p->cidrs[p->n_cidrs++] = c;
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	if (strncmp(s, "*.", 2) == 0) {
		nm.suffix = true;
		s += 2;
	}
	if (!name_ok(s))
		return fail(why, whylen,
			    "\"%s\" is neither a name (host.example, "
			    "*.example) nor a CIDR",
			    tok);
	strcpy(nm.name, s);
	for (size_t i = 0; i < p->n_names; i++)
		if (p->names[i].suffix == nm.suffix &&
		    strcmp(p->names[i].name, nm.name) == 0)
			return fail(why, whylen, "lists \"%s\" twice", tok);
	if (p->n_names == SB_NET_NAMES_MAX)
		return fail(why, whylen, "more than %d names",
			    SB_NET_NAMES_MAX);
	p->names[p->n_names++] = nm;
	return 0;
}

/* --- one entry of ports ------------------------------------------------- */

static int add_port(struct sb_net_policy *p, const char *tok, char *why,
		    size_t whylen)
{
	struct sb_net_port pt = {0};
	const char *num, *dash;

	if (strncmp(tok, "tcp/", 4) == 0)
		pt.proto = IPPROTO_TCP;
	else if (strncmp(tok, "udp/", 4) == 0)
		pt.proto = IPPROTO_UDP;
	else
		return fail(why, whylen,
			    "\"%s\": want tcp/PORT, udp/PORT or PROTO/LO-HI",
			    tok);
	num = tok + 4;
	dash = strchr(num, '-');
	if (al_port_parse(num, dash ? (size_t)(dash - num) : strlen(num),
		       &pt.lo) < 0 ||
	    (dash && al_port_parse(dash + 1, strlen(dash + 1), &pt.hi) < 0))
		return fail(why, whylen, "\"%s\": ports are 1..65535", tok);
	if (!dash)
		pt.hi = pt.lo;
	if (pt.lo > pt.hi)
		return fail(why, whylen, "\"%s\": range is backwards", tok);
	for (size_t i = 0; i < p->n_ports; i++)
		if (p->ports[i].proto == pt.proto && p->ports[i].lo == pt.lo &&
		    p->ports[i].hi == pt.hi)
			return fail(why, whylen, "lists \"%s\" twice", tok);
	if (p->n_ports == SB_NET_PORTS_MAX)
		return fail(why, whylen, "more than %d port ranges",
			    SB_NET_PORTS_MAX);
	p->ports[p->n_ports++] = pt;
	return 0;
}

/* --- the keys ----------------------------------------------------------- */

/* Each space-separated token of v, lowercased, through add(). */
static int add_list(struct sb_net_policy *p, const char *v,
		    int (*add)(struct sb_net_policy *, const char *, char *,
			       size_t),
		    char *why, size_t whylen)
{
	char tok[SB_NET_DNAME_MAX + 3];
	size_t n, any = 0;
	int rc;

	while (*v) {
		if (*v == ' ' || *v == '\t') {
			v++;
			continue;
		}
		n = strcspn(v, " \t");
		if (n >= sizeof(tok))
			return fail(why, whylen, "an entry is longer than %zu "
				    "bytes", sizeof(tok) - 1);
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)v[i];

			if (ch < 0x20 || ch >= 0x7f)
				return fail(why, whylen,
					    "must be printable ASCII");
			tok[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
		}
		tok[n] = 0;
		rc = add(p, tok, why, whylen);
		if (rc < 0)
			return rc;
		any++;
		v += n;
	}
	return any ? 0 : fail(why, whylen, "is empty");
}

static int set_u32(uint32_t *dst, const char *v, uint32_t max, char *why,
		   size_t whylen)
{
	uint64_t n;
	int r = al_decimal_parse(v, strlen(v), max, &n);

	if (r == -ERANGE)
		return fail(why, whylen, "must be 0..%u", max);
	if (r < 0)
		return fail(why, whylen, "must be an integer 0..%u", max);
	*dst = (uint32_t)n;
	return 0;
}

int sb_net_policy_set(struct sb_net_policy *p, const char *key,
		      const char *value, char *why, size_t whylen)
{
	struct sb_net_policy tmp;
	int rc;

	if (strcmp(key, "rate_kbit") == 0)
		return set_u32(&p->rate_kbit, value, RATE_KBIT_MAX, why,
			       whylen);
	if (strcmp(key, "conn_per_min") == 0)
		return set_u32(&p->conn_per_min, value, CONN_PER_MIN_MAX, why,
			       whylen);
	if (strcmp(key, "allow") != 0 && strcmp(key, "ports") != 0)
		return -ENOENT;
	/* lists: all of the line or none of it */
	tmp = *p;
	rc = add_list(&tmp, value, key[0] == 'a' ? add_allow : add_port, why,
		      whylen);
	if (rc == 0)
		*p = tmp;
	return rc;
}

int sb_net_policy_check(const struct sb_net_policy *p, char *why,
			size_t whylen)
{
	if (!p->n_names && !p->n_cidrs)
		return fail(why, whylen,
			    "allows nothing: set allow (names, CIDRs)");
	if (!p->n_ports)
		return fail(why, whylen,
			    "names no ports: set ports (e.g. tcp/443)");
	return 0;
}

/* --- printing ----------------------------------------------------------- */

static void print_cidr(const struct sb_net_cidr *c, FILE *f)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(c->family, c->addr, a, sizeof(a));
	fprintf(f, "allow = %s/%u\n", a, c->prefix);
}

int sb_net_policy_dump(const struct sb_net_policy *p, FILE *f)
{
	fprintf(f, "\n[network.%s]\n", p->name);
	for (size_t i = 0; i < p->n_names; i++)
		fprintf(f, "allow = %s%s\n", p->names[i].suffix ? "*." : "",
			p->names[i].name);
	for (size_t i = 0; i < p->n_cidrs; i++)
		print_cidr(&p->cidrs[i], f);
	for (size_t i = 0; i < p->n_ports; i++) {
		const struct sb_net_port *pt = &p->ports[i];
		const char *proto = pt->proto == IPPROTO_TCP ? "tcp" : "udp";

		if (pt->lo == pt->hi)
			fprintf(f, "ports = %s/%u\n", proto, pt->lo);
		else
			fprintf(f, "ports = %s/%u-%u\n", proto, pt->lo, pt->hi);
	}
	fprintf(f, "rate_kbit = %u\nconn_per_min = %u\n", p->rate_kbit,
		p->conn_per_min);
	return ferror(f) ? -EIO : 0;
}

/* --- matching ----------------------------------------------------------- */

bool sb_net_policy_allows_name(const struct sb_net_policy *p,
			       const char *name)
{
	size_t len = strlen(name);

	if (len && name[len - 1] == '.')
		len--;
	if (len == 0)
		return false;
	for (size_t i = 0; i < p->n_names; i++) {
		const struct sb_net_name *n = &p->names[i];
		size_t nl = strlen(n->name);

		if (!n->suffix) {
			if (len == nl && strncasecmp(name, n->name, len) == 0)
				return true;
			continue;
		}
		if (len > nl + 1 && name[len - nl - 1] == '.' &&
		    strncasecmp(name + len - nl, n->name, nl) == 0)
			return true;
	}
	return false;
}
