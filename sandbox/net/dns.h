/* dns.h: the few DNS messages a per-VM resolver reads and writes.
 *
 * Not a DNS library: exactly what sandbox/net/resolver.c needs, strict about
 * what it accepts, because one side of it is a hostile guest. A query is
 * one question, no compression, labels of [A-Za-z0-9_-] only (a label
 * holding a dot could pass for two labels in text). A reply is matched to
 * the query we sent (id, question) and reduced to the A / AAAA addresses
 * reachable from the question through CNAMEs inside the same reply. Every
 * length is checked against the buffer before it is read; a compression
 * pointer must point backwards, so no loop can form. No I/O, no logging,
 * no allocation: tests/fuzz/fuzz_dns.c runs these on arbitrary bytes.
 */
#ifndef SB_DNS_H
#define SB_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "netpolicy.h" /* SB_NET_DNAME_MAX */

#define SB_DNS_MSG_MAX 4096   /* bytes of a message we read */
#define SB_DNS_ADDRS_MAX 16   /* addresses kept from one reply */
#define SB_DNS_UDP_SIZE 1232  /* EDNS payload size we ask upstream for */
#define SB_DNS_TTL_MAX_S 3600 /* TTLs are capped at an hour ... */
#define SB_DNS_TTL_MIN_S 1    /* ... and floored at a second */

enum {
	SB_DNS_NOERROR = 0,
	SB_DNS_FORMERR = 1,
	SB_DNS_SERVFAIL = 2,
	SB_DNS_NXDOMAIN = 3,
	SB_DNS_NOTIMP = 4,
	SB_DNS_REFUSED = 5,
};

enum {
	SB_DNS_T_A = 1,
	SB_DNS_T_CNAME = 5,
	SB_DNS_T_AAAA = 28,
	SB_DNS_C_IN = 1,
};

/* A guest's question. */
struct sb_dns_query {
	uint16_t id;			    /* the guest's id, echoed back */
	uint16_t flags;			    /* its header flags (RD, opcode) */
	uint16_t qtype, qclass;		    /* as asked */
	char name[SB_NET_DNAME_MAX + 2];    /* lowercase, no final dot */
	uint8_t wire[SB_NET_DNAME_MAX + 3]; /* the name as sent, case kept */
	size_t wire_len;		    /* 0: no question (FORMERR) */
};

struct sb_dns_addr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order */
	uint32_t ttl;	  /* seconds, SB_DNS_TTL_MIN_S..SB_DNS_TTL_MAX_S */
};

/* What an upstream reply comes down to. */
struct sb_dns_answer {
	uint8_t rcode; /* NOERROR, NXDOMAIN or SERVFAIL */
	size_t n;      /* addresses (NOERROR only) */
	struct sb_dns_addr addr[SB_DNS_ADDRS_MAX];
};

/* Read a guest's query. Returns 0; -EPROTO for a malformed query whose
 * header is readable (ret holds id and flags: answer FORMERR); -ENOTSUP for
 * an opcode other than QUERY (answer NOTIMP); -EBADMSG for bytes not worth
 * an answer (shorter than a header, or a response). */
int sb__dns_parse_query(const uint8_t *msg, size_t len,
			struct sb_dns_query *ret);
/* The query we send upstream for q: id `id`, RD, q's name lowercase, EDNS
 * with SB_DNS_UDP_SIZE. Returns its length, 0 when buf is too small. */
size_t sb__dns_build_query(const struct sb_dns_query *q, uint16_t id,
			   uint8_t *buf, size_t len);
/* Read upstream's reply to the query built for q with `id`. Returns 0
 * (ret filled; rcode is NOERROR, NXDOMAIN or SERVFAIL for any other or a
 * truncated reply) or -EBADMSG (not a reply to that query: ignore it). */
int sb__dns_parse_reply(const uint8_t *msg, size_t len,
			const struct sb_dns_query *q, uint16_t id,
			struct sb_dns_answer *ret);
/* The reply to the guest: its id and question, `rcode`, and when `a` is
 * not NULL the addresses of a of q's qtype, as records of the question's
 * name. Answers that do not fit 512 bytes are left out. Returns the
 * length, 0 when buf is too small. */
size_t sb__dns_build_reply(const struct sb_dns_query *q, uint8_t rcode,
			   const struct sb_dns_answer *a, uint8_t *buf,
			   size_t len);

#endif
