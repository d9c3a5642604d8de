/* fuzz_tar.c: libFuzzer target for the session tar decoder (results/tar.c):
 * whatever the bytes, it never reads past len, and every entry it accepts
 * keeps the rules: a valid relative path, a symlink target that points
 * down, contents inside the buffer, the caps held. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int decode(const uint8_t *data, size_t size, bool verbose)
{
	struct al_tar t;
	struct al_tar_entry e;
	uint64_t bytes = 0;
	uint32_t n = 0;
	int r;

	al_tar_init(&t, data, size, 1u << 20, 64);
	while ((r = al_tar_next(&t, &e)) > 0) {
		if (!al_relpath_valid(e.path, strlen(e.path)) ||
		    (e.type == AL_TAR_SYMLINK &&
		     !al_relpath_valid(e.link, strlen(e.link))) ||
		    e.data < data || e.size > size ||
		    e.data + e.size > data + size)
			abort();
		bytes += e.size;
		if (++n > 64 || bytes > (1u << 20))
			abort();
		if (verbose)
			printf("%d %s %llu%s%s\n", (int)e.type, e.path,
			       (unsigned long long)e.size,
			       *e.link ? " -> " : "", e.link);
	}
	if (verbose && r < 0)
		printf("refused: %s\n", t.err);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1); /* exactly size */

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	decode(copy, size, false);
	free(copy);
	return 0;
}

#ifdef FUZZ_SMOKE
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    n < (8 << 20) && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n + 1)) &&
	    fread(b, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

/* Without libFuzzer: `--show FILE` decodes one file and says what it
 * holds (exit 0 accepted, 1 refused); else the seed files given, then
 * 20000 seeded mutations of them (byte flips in headers, cuts). */
int main(int argc, char **argv)
{
	uint8_t *seeds[64];
	size_t lens[64], ns = 0;

	if (argc == 3 && !strcmp(argv[1], "--show")) {
		size_t len = 0;
		uint8_t *b = slurp(argv[2], &len);

		if (!b)
			return 2;
		int r = decode(b, len, true);

		free(b);
		return r < 0;
	}
	for (int i = 1; i < argc && ns < 64; i++)
		if ((seeds[ns] = slurp(argv[i], &lens[ns])))
			ns++;
	if (!ns) {
		fprintf(stderr, "fuzz_tar_smoke: no seeds\n");
		return 1;
	}
	srand(42);
	for (size_t i = 0; i < ns; i++)
		LLVMFuzzerTestOneInput(seeds[i], lens[i]);
	for (unsigned r = 0; r < 20000; r++) {
		size_t k = (size_t)rand() % ns, len = lens[k], cut;
		uint8_t *b = malloc(len ? len : 1);

		if (!b)
			return 1;
		memcpy(b, seeds[k], len);
		for (int j = rand() % 6; j >= 0 && len; j--) {
			/* mostly inside a header block */
			size_t at = (size_t)rand() % len;

			if (rand() % 2 && len >= 512)
				at = ((size_t)rand() % (len / 512)) * 512 +
				     (size_t)rand() % 512;
			b[at] = (uint8_t)rand();
			if (rand() % 2) { /* and make its checksum right */
				uint8_t *h = b + at / 512 * 512;
				unsigned sum = 0;

				if (h + 512 > b + len)
					continue;
				memset(h + 148, ' ', 8);
				for (int q = 0; q < 512; q++)
					sum += h[q];
				snprintf((char *)h + 148, 8, "%06o", sum);
			}
		}
		cut = rand() % 4 ? len : (size_t)rand() % (len + 1);
		LLVMFuzzerTestOneInput(b, cut);
		free(b);
	}
	for (size_t i = 0; i < ns; i++)
		free(seeds[i]);
	printf("fuzz_tar_smoke: ok\n");
	return 0;
}
#endif
