/* smoke.h: a fuzz target run without libFuzzer, as a unit test (built with
 * -DFUZZ_SMOKE; ASan in CI's sanitizer build sees any read past len): the
 * seed files named on the command line, each once, then `rounds` seeded
 * mutations of them (byte flips, bytes of the target's own alphabet, cuts,
 * a splice of the target's own token), each through
 * LLVMFuzzerTestOneInput(). The same seed (srand(42)) every run, so a
 * failure repeats. For fuzz_gw and fuzz_http; fuzz_tar and fuzz_redirect
 * mutate in their own ways (tar headers with their checksums; seeds in
 * the source).
 *
 * A target's main():
 *
 *	static const struct smoke s = {.name = "fuzz_x", ...};
 *	return smoke_main(&s, argc, argv);
 */
#ifndef AL_FUZZ_SMOKE_H
#define AL_FUZZ_SMOKE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMOKE_SEEDS	 64   /* seed files read at the most */
#define SMOKE_SEED_BYTES 8192 /* bytes read of each */
#define SMOKE_SPLICE_MAX 64   /* bytes of the splice token */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct smoke {
	const char *name;     /* the target, for the closing line */
	unsigned rounds;      /* mutations run */
	size_t max_seeds;     /* seed files used, at most SMOKE_SEEDS */
	size_t seed_bytes;    /* bytes read of each, at most SMOKE_SEED_BYTES */
	size_t keep;	      /* leading bytes never mutated (a selector) */
	const char *alphabet; /* bytes a mutation may write (may hold NUL) */
	size_t n_alphabet;    /* its length */
	const char *splice;   /* inserted at a random place */
	size_t n_splice;      /* its length, at most SMOKE_SPLICE_MAX */
};

/* 0 after the last round, 2 when a seed file cannot be opened. */
static int smoke_main(const struct smoke *s, int argc, char **argv)
{
	static uint8_t buf[1 << 16], seed[SMOKE_SEEDS][SMOKE_SEED_BYTES];
	size_t lens[SMOKE_SEEDS], n = 0;

	srand(42);
	for (int i = 1; i < argc && n < s->max_seeds && n < SMOKE_SEEDS; i++) {
		FILE *f = fopen(argv[i], "rb");

		if (!f)
			return 2;
		lens[n] =
		    fread(seed[n], 1,
			  s->seed_bytes < SMOKE_SEED_BYTES ? s->seed_bytes
							   : SMOKE_SEED_BYTES,
			  f);
		fclose(f);
		LLVMFuzzerTestOneInput(seed[n], lens[n]);
		n++;
	}
	for (unsigned r = 0; n && r < s->rounds; r++) {
		size_t k = (size_t)rand() % n, len = lens[k];

		memcpy(buf, seed[k], len);
		for (int m = rand() % 8; m >= 0 && len > s->keep; m--) {
			size_t at = s->keep + (size_t)rand() % (len - s->keep);

			switch (rand() % 4) {
			case 0:
				buf[at] = (uint8_t)rand();
				break;
			case 1:
				len = at;
				break;
			case 2:
				buf[at] = (uint8_t)s->alphabet[(size_t)rand() %
							       s->n_alphabet];
				break;
			default:
				if (len < sizeof(buf) - SMOKE_SPLICE_MAX &&
				    s->n_splice <= SMOKE_SPLICE_MAX) {
					memmove(buf + at + s->n_splice,
						buf + at, len - at);
					memcpy(buf + at, s->splice,
					       s->n_splice);
					len += s->n_splice;
				}
			}
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("%s: %zu seeds, %u mutations, no crash\n", s->name, n,
	       s->rounds);
	return 0;
}

#endif
