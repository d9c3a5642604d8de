/* fuzz_redirect.c: libFuzzer target for the Redis Cluster redirection
 * parser (dispatcher/queue/cluster.c): whatever the error text, it never reads
 * past len, and what it accepts is well-formed (a port in range, a host
 * within ALQ_HOST_MAX, NUL-terminated). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alq_redirect r;
	char *copy = malloc(size ? size : 1); /* exactly size: ASan sees
						 any read past it */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	alq_redirect_parse(copy, size, &r);
	if ((r.kind == ALQ_REDIRECT_MOVED || r.kind == ALQ_REDIRECT_ASK) &&
	    (r.port < 1 || r.port > 65535 || r.slot >= ALQ_SLOTS ||
	     strlen(r.host) > ALQ_HOST_MAX))
		abort();
	(void)alq_key_slot(copy, size);
	free(copy);
	return 0;
}

#ifdef FUZZ_SMOKE
/* Without libFuzzer: the seeds below, then 50000 seeded mutations of them
 * (byte flips, cuts, splices), each through the target (ASan in CI's
 * sanitizer build sees any read past len). */
int main(void)
{
	static const char *const seeds[] = {
	    "MOVED 3999 127.0.0.1:6381",
	    "ASK 16383 [::1]:7000",
	    "MOVED 1 :6380",
	    "TRYAGAIN Multiple keys",
	    "CLUSTERDOWN down",
	    "MOVED 12182 10.0.0.2:65535",
	    "READONLY You can't write",
	};
	const size_t ns = sizeof(seeds) / sizeof(seeds[0]);
	uint8_t buf[128];

	srand(42);
	for (size_t i = 0; i < ns; i++)
		LLVMFuzzerTestOneInput((const uint8_t *)seeds[i],
				       strlen(seeds[i]));
	for (unsigned r = 0; r < 50000; r++) {
		const char *s = seeds[(size_t)rand() % ns];
		size_t len = strlen(s), cut;

		memcpy(buf, s, len);
		for (int k = rand() % 4; k >= 0; k--)
			buf[(size_t)rand() % len] = (uint8_t)rand();
		cut = (size_t)rand() % (len + 1);
		if (rand() % 3 == 0) { /* splice another seed's tail */
			const char *t = seeds[(size_t)rand() % ns];
			size_t tl = strlen(t), from = (size_t)rand() % tl;

			if (cut + tl - from <= sizeof(buf)) {
				memcpy(buf + cut, t + from, tl - from);
				cut += tl - from;
			}
		}
		LLVMFuzzerTestOneInput(buf, cut);
	}
	printf("fuzz_redirect_smoke: ok\n");
	return 0;
}
#endif
