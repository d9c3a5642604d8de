/* dns.c: read a guest's DNS query, build the upstream query, read the
 * upstream reply, build the guest's answer (dns.h says what is accepted).
 *
 * Message layout (RFC 1035 4.1): a 12-byte header (id, flags, four section
 * counts), the question (name, type, class), then resource records (name,
 * type, class, ttl, rdlength, rdata). Names are length-prefixed labels
 * ending with a zero byte; in replies a label byte with its top two bits
 * set is a pointer to an earlier name. Every read below goes through a
 * bounds check against `len`; nothing is read past it.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "dns.h"

#define F_QR 0x8000
#define F_OPCODE 0x7800
#define F_TC 0x0200
#define F_RD 0x0100
#define F_RA 0x0080
#define F_RCODE 0x000f

#define HDR 12
#define RR_MAX 64    /* answer records looked at in one reply */
#define CHAIN_MAX 9  /* the question and up to 8 CNAME targets */
#define REPLY_MAX 512 /* a reply to the guest fits plain DNS over UDP */
#define T_OPT 41

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *wr32(uint8_t *p, uint32_t v)
{
	p = wr16(p, (uint16_t)(v >> 16));
	return wr16(p, (uint16_t)v);
}

static bool label_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static char lower(uint8_t c)
{
	return (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
}

/* Append label msg[at+1 .. at+l] to the text name `out` (lowercase, dot
 * separated). Returns false when a byte is not a label byte. */
static bool add_label(const uint8_t *msg, size_t at, size_t l, char *out,
		      size_t *olen)
{
	if (*olen)
		out[(*olen)++] = '.';
	for (size_t i = 0; i < l; i++) {
		if (!label_byte(msg[at + 1 + i]))
			return false;
		out[(*olen)++] = lower(msg[at + 1 + i]);
	}
	out[*olen] = 0;
	return true;
}

/* The name at *pos, pointers followed (each strictly backwards, so the
 * walk ends), into `out` (SB_NET_DNAME_MAX + 2 bytes). *pos moves past the
 * name where it is stored. Returns 0, 1 (well formed but holding bytes no
 * host name has: out is "" and matches nothing) or -EBADMSG. */
static int read_name(const uint8_t *msg, size_t len, size_t *pos, char *out)
{
	size_t at = *pos, olen = 0, wire = 0, end = 0, limit = at;
	bool odd = false;

	out[0] = 0;
	for (;;) {
		uint8_t l;

		if (at >= len)
			return -EBADMSG;
		l = msg[at];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			if (at + 1 >= len)
				return -EBADMSG;
			to = (size_t)(l & 0x3f) << 8 | msg[at + 1];
			if (to >= limit)
				return -EBADMSG;
			if (!end)
				end = at + 2;
			at = limit = to;
			continue;
		}
		if (l & 0xc0)
			return -EBADMSG;
		wire += 1u + l;
		if (wire > 255 || at + 1 + l > len)
			return -EBADMSG;
		if (l == 0)
			break;
		if (!odd && !add_label(msg, at, l, out, &olen))
			odd = true;
		at += 1u + l;
	}
	*pos = end ? end : at + 1;
	if (odd)
		out[0] = 0;
	return odd ? 1 : 0;
}

/* --- the guest's query -------------------------------------------------- */

/* The question name: no pointers, host-name bytes only, copied as sent. */
static int read_qname(const uint8_t *msg, size_t len, size_t *pos,
		      struct sb_dns_query *q)
{
	size_t at = *pos, olen = 0;

	for (;;) {
		uint8_t l;

		if (at >= len)
			return -EPROTO;
		l = msg[at];
		if (l > 63 || at + 1 + l > len || at - *pos + 1 + l > 254)
			return -EPROTO;
		if (l == 0)
			break;
		if (!add_label(msg, at, l, q->name, &olen))
			return -EPROTO;
		at += 1u + l;
	}
	q->wire_len = at + 1 - *pos;
	memcpy(q->wire, msg + *pos, q->wire_len);
	*pos = at + 1;
	return 0;
}

int sb__dns_parse_query(const uint8_t *msg, size_t len,
			struct sb_dns_query *ret)
{
	size_t pos = HDR;
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (len < HDR)
		return -EBADMSG;
	ret->id = rd16(msg);
	ret->flags = rd16(msg + 2);
	if (ret->flags & F_QR)
		return -EBADMSG;
	if (ret->flags & F_OPCODE)
		return -ENOTSUP;
	/* one question; an EDNS OPT record may follow, and is ignored */
	if (rd16(msg + 4) != 1 || rd16(msg + 6) || rd16(msg + 8) ||
	    rd16(msg + 10) > 1)
		return -EPROTO;
	rc = read_qname(msg, len, &pos, ret);
	if (rc == 0 && pos + 4 > len)
		rc = -EPROTO;
	if (rc < 0) {
		ret->wire_len = 0;
		ret->name[0] = 0;
		return rc;
	}
	ret->qtype = rd16(msg + pos);
	ret->qclass = rd16(msg + pos + 2);
	return 0;
}

/* --- upstream ----------------------------------------------------------- */

/* The text name as wire labels; 0 when it does not fit. */
static size_t put_name(const char *name, uint8_t *buf, size_t len)
{
	size_t n = 0;

	while (*name) {
		size_t l = strcspn(name, ".");

		if (l == 0 || l > 63 || n + 1 + l + 1 > len)
			return 0;
		buf[n++] = (uint8_t)l;
		memcpy(buf + n, name, l);
		n += l;
		name += l + (name[l] == '.');
	}
	if (n + 1 > len)
		return 0;
	buf[n++] = 0;
	return n;
}

size_t sb__dns_build_query(const struct sb_dns_query *q, uint16_t id,
			   uint8_t *buf, size_t len)
{
	uint8_t *p = buf;
	size_t n;

	if (len < HDR + 4 + 11)
		return 0;
	p = wr16(p, id);
	p = wr16(p, F_RD);
	p = wr16(p, 1);
	p = wr16(p, 0);
	p = wr16(p, 0);
	p = wr16(p, 1);
	n = put_name(q->name, p, len - HDR - 4 - 11);
	if (!n)
		return 0;
	p = wr16(p + n, q->qtype);
	p = wr16(p, SB_DNS_C_IN);
	*p++ = 0; /* OPT: the root name, type, payload size, ttl, rdlength */
	p = wr16(p, T_OPT);
	p = wr16(p, SB_DNS_UDP_SIZE);
	p = wr32(p, 0);
	p = wr16(p, 0);
	return (size_t)(p - buf);
}

struct rr {
	char owner[SB_NET_DNAME_MAX + 2];
	char target[SB_NET_DNAME_MAX + 2]; /* CNAME's */
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rdata;
};

/* One record at *pos into r; r->owner "" when it can match nothing. */
static int read_rr(const uint8_t *msg, size_t len, size_t *pos, struct rr *r)
{
	size_t at;
	int rc;

	rc = read_name(msg, len, pos, r->owner);
	if (rc < 0 || *pos + 10 > len)
		return -EBADMSG;
	r->type = rd16(msg + *pos);
	if (rd16(msg + *pos + 2) != SB_DNS_C_IN)
		r->owner[0] = 0;
	r->ttl = rd32(msg + *pos + 4);
	r->rdlen = rd16(msg + *pos + 8);
	*pos += 10;
	if (*pos + r->rdlen > len)
		return -EBADMSG;
	r->rdata = msg + *pos;
	r->target[0] = 0;
	if (r->type == SB_DNS_T_CNAME) {
		at = *pos;
		if (read_name(msg, *pos + r->rdlen, &at, r->target) < 0 ||
		    at != *pos + r->rdlen)
			r->target[0] = 0;
	}
	*pos += r->rdlen;
	return 0;
}

static int find(char (*names)[SB_NET_DNAME_MAX + 2], size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

static uint32_t clamp_ttl(uint32_t ttl)
{
	if (ttl > SB_DNS_TTL_MAX_S)
		return SB_DNS_TTL_MAX_S;
	return ttl < SB_DNS_TTL_MIN_S ? SB_DNS_TTL_MIN_S : ttl;
}

/* The question's name and the CNAME targets reachable from it; each
 * entry's TTL is the smallest along its chain. */
static size_t follow_cnames(const struct rr *rr, size_t n_rr, const char *q,
			    char (*chain)[SB_NET_DNAME_MAX + 2],
			    uint32_t *ttl)
{
	size_t n = 1;
	bool grew = true;

	strcpy(chain[0], q);
	ttl[0] = UINT32_MAX;
	while (grew && n < CHAIN_MAX) {
		grew = false;
		for (size_t i = 0; i < n_rr && n < CHAIN_MAX; i++) {
			int from = find(chain, n, rr[i].owner);

			if (rr[i].type != SB_DNS_T_CNAME || !rr[i].owner[0] ||
			    !rr[i].target[0] || from < 0 ||
			    find(chain, n, rr[i].target) >= 0)
				continue;
			strcpy(chain[n], rr[i].target);
			ttl[n] = rr[i].ttl < ttl[from] ? rr[i].ttl : ttl[from];
			n++;
			grew = true;
		}
	}
	return n;
}

static void add_addr(struct sb_dns_answer *a, const struct rr *r,
		     uint32_t ttl)
{
	struct sb_dns_addr x = {0};

	x.family = r->type == SB_DNS_T_A ? AF_INET : AF_INET6;
	memcpy(x.addr, r->rdata, r->rdlen);
	x.ttl = clamp_ttl(ttl);
	for (size_t i = 0; i < a->n; i++) {
		if (a->addr[i].family == x.family &&
		    memcmp(a->addr[i].addr, x.addr, 16) == 0) {
			if (x.ttl < a->addr[i].ttl)
				a->addr[i].ttl = x.ttl;
			return;
		}
	}
	if (a->n < SB_DNS_ADDRS_MAX)
		a->addr[a->n++] = x;
}

/* The addresses of q's type owned by a name of the CNAME chain. */
static int read_answers(const uint8_t *msg, size_t len, size_t pos,
			unsigned count, const struct sb_dns_query *q,
			struct sb_dns_answer *ret)
{
	struct rr rr[RR_MAX]; /* 33 KiB of stack: the resolver's own */
	char chain[CHAIN_MAX][SB_NET_DNAME_MAX + 2];
	uint32_t ttl[CHAIN_MAX];
	size_t n_rr = 0, n_chain;
	uint16_t want_len = q->qtype == SB_DNS_T_A ? 4 : 16;

	for (unsigned i = 0; i < count && n_rr < RR_MAX; i++) {
		if (read_rr(msg, len, &pos, &rr[n_rr]) < 0)
			return -EBADMSG;
		n_rr++;
	}
	n_chain = follow_cnames(rr, n_rr, q->name, chain, ttl);
	for (size_t i = 0; i < n_rr; i++) {
		int at = find(chain, n_chain, rr[i].owner);

		if (at < 0 || !rr[i].owner[0] || rr[i].type != q->qtype ||
		    rr[i].rdlen != want_len)
			continue;
		add_addr(ret, &rr[i], rr[i].ttl < ttl[at] ? rr[i].ttl : ttl[at]);
	}
	return 0;
}

int sb__dns_parse_reply(const uint8_t *msg, size_t len,
			const struct sb_dns_query *q, uint16_t id,
			struct sb_dns_answer *ret)
{
	char name[SB_NET_DNAME_MAX + 2];
	size_t pos = HDR;
	uint16_t flags;

	if (len < HDR || rd16(msg) != id)
		return -EBADMSG;
	flags = rd16(msg + 2);
	if (!(flags & F_QR) || (flags & F_OPCODE) || rd16(msg + 4) != 1)
		return -EBADMSG;
	if (read_name(msg, len, &pos, name) != 0 || strcmp(name, q->name) ||
	    pos + 4 > len || rd16(msg + pos) != q->qtype ||
	    rd16(msg + pos + 2) != q->qclass)
		return -EBADMSG;
	pos += 4;
	memset(ret, 0, sizeof(*ret));
	if ((flags & F_TC) || (flags & F_RCODE) > SB_DNS_NXDOMAIN ||
	    (flags & F_RCODE) == SB_DNS_FORMERR) {
		ret->rcode = SB_DNS_SERVFAIL;
		return 0;
	}
	ret->rcode = (uint8_t)(flags & F_RCODE);
	if (ret->rcode != SB_DNS_NOERROR)
		return 0;
	if (q->qtype != SB_DNS_T_A && q->qtype != SB_DNS_T_AAAA)
		return 0;
	if (read_answers(msg, len, pos, rd16(msg + 6), q, ret) < 0) {
		memset(ret, 0, sizeof(*ret));
		ret->rcode = SB_DNS_SERVFAIL;
	}
	return 0;
}

/* --- the guest's answer ------------------------------------------------- */

size_t sb__dns_build_reply(const struct sb_dns_query *q, uint8_t rcode,
			   const struct sb_dns_answer *a, uint8_t *buf,
			   size_t len)
{
	size_t cap = len < REPLY_MAX ? len : REPLY_MAX, n;
	int family = q->qtype == SB_DNS_T_A ? AF_INET : AF_INET6;
	uint16_t rdlen = family == AF_INET ? 4 : 16, an = 0;
	uint8_t *p = buf;

	if (cap < HDR + q->wire_len + (q->wire_len ? 4 : 0))
		return 0;
	p = wr16(p, q->id);
	p = wr16(p, (uint16_t)(F_QR | (q->flags & (F_OPCODE | F_RD)) | F_RA |
			       (rcode & F_RCODE)));
	p = wr16(p, q->wire_len ? 1 : 0);
	p = wr16(p, 0); /* answers: filled in below */
	p = wr32(p, 0);
	if (q->wire_len) {
		memcpy(p, q->wire, q->wire_len);
		p = wr16(p + q->wire_len, q->qtype);
		p = wr16(p, q->qclass);
	}
	for (size_t i = 0; a && q->wire_len && i < a->n; i++) {
		n = (size_t)(p - buf);
		if (a->addr[i].family != family || n + 12u + rdlen > cap)
			continue;
		p = wr16(p, 0xc000 | HDR); /* the question's name */
		p = wr16(p, q->qtype);
		p = wr16(p, SB_DNS_C_IN);
		p = wr32(p, a->addr[i].ttl);
		p = wr16(p, rdlen);
		memcpy(p, a->addr[i].addr, rdlen);
		p += rdlen;
		an++;
	}
	wr16(buf + 6, an);
	return (size_t)(p - buf);
}
