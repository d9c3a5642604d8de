/* fuzz_netpolicy.c: libFuzzer target for the network policy value parser
 * (sandbox/net/netpolicy.c), which reads `[network.NAME]` lines of a config.
 *
 * The input is lines of `KEY VALUE` (the first byte of a line picks the
 * key). Each goes through sb_net_policy_set(); a refused line must leave
 * the policy as it was. At the end the policy is checked, dumped, the dump
 * read back to the same policy, and matched against the input's lines as
 * names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_back(const struct sb_net_policy *p, char *dump)
{
	struct sb_net_policy back = {0};
	char why[256], *line, *save, *eq;

	memcpy(back.name, p->name, sizeof(back.name));
	for (line = strtok_r(dump, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '[')
			continue;
		eq = strstr(line, " = ");
		if (!eq)
			abort();
		*eq = 0;
		if (sb_net_policy_set(&back, line, eq + 3, why, sizeof(why)))
			abort();
	}
	if (memcmp(p, &back, sizeof(back)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"allow", "ports", "rate_kbit",
					   "conn_per_min"};
	static struct sb_net_policy p, before;
	char *text, *line, *save, why[256], *dump = NULL;
	size_t dlen = 0;
	FILE *f;

	if (size > 8192)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	memset(&p, 0, sizeof(p));
	strcpy(p.name, "fuzz");
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		before = p;
		if (sb_net_policy_set(&p, keys[(unsigned char)line[0] % 4],
				      line + 1, why, sizeof(why)) != 0 &&
		    memcmp(&p, &before, sizeof(p)) != 0)
			abort();
		(void)sb_net_policy_allows_name(&p, line + 1);
	}
	(void)sb_net_policy_check(&p, why, sizeof(why));
	f = open_memstream(&dump, &dlen);
	if (f && sb_net_policy_dump(&p, f) == 0 && fclose(f) == 0)
		read_back(&p, dump);
	free(dump);
	free(text);
	return 0;
}
