/* fuzz_redirect.c: libFuzzer target for the Redis Cluster redirection
 * parser (dispatcher/cluster.c): whatever the error text, it never reads
 * past len, and what it accepts is well-formed (a port in range, a host
 * within ALQ_HOST_MAX, NUL-terminated). */
#include <stdint.h>
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
