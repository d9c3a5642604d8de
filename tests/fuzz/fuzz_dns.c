/* fuzz_dns.c: libFuzzer target for the resolver's DNS code (sandbox/net/dns.c).
 *
 * The input is one datagram, read both ways: as a guest's query (hostile:
 * the guest is untrusted) and as an upstream reply to a fixed question
 * with the id taken from its first two bytes. A query that parses is
 * answered and sent upstream; a reply that parses is answered to the
 * guest. Every built message must fit its buffer and parse back.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t good[] = {0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
				       7, 'a', 'l', 'l', 'o', 'w', 'e', 'd',
				       4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
	uint8_t out[SB_DNS_MSG_MAX];
	struct sb_dns_query q, back;
	struct sb_dns_answer a;
	size_t n;

	if (size > SB_DNS_MSG_MAX)
		return 0;
	if (sb__dns_parse_query(data, size, &q) == 0) {
		n = sb__dns_build_query(&q, 77, out, sizeof(out));
		if (!n || sb__dns_parse_query(out, n, &back) != 0 ||
		    strcmp(back.name, q.name) != 0)
			abort();
		n = sb__dns_build_reply(&q, SB_DNS_NXDOMAIN, NULL, out,
					sizeof(out));
		if (!n)
			abort();
	}
	if (sb__dns_parse_query(good, sizeof(good), &q) != 0)
		abort();
	if (size < 2 ||
	    sb__dns_parse_reply(data, size, &q,
				(uint16_t)(data[0] << 8 | data[1]), &a) != 0)
		return 0;
	if (a.n > SB_DNS_ADDRS_MAX)
		abort();
	for (size_t i = 0; i < a.n; i++)
		if (a.addr[i].ttl < SB_DNS_TTL_MIN_S ||
		    a.addr[i].ttl > SB_DNS_TTL_MAX_S)
			abort();
	n = sb__dns_build_reply(&q, a.rcode, &a, out, sizeof(out));
	if (!n || n > 512)
		abort();
	return 0;
}
