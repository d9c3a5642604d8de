/* mkseeds.c: turn the JSONL corpora into msgpack seed files for the fuzz
 * targets: mkseeds job|result IN.jsonl OUTDIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

static int emit(const char *dir, const char *kind, size_t n, const char *mp,
		size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%03zu.mp", dir, kind, n);
	f = fopen(path, "wbe");
	if (!f || fwrite(mp, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bool job = argc == 4 && !strcmp(argv[1], "job");
	char *line = NULL, *mp;
	size_t cap = 0, n = 0, len;
	ssize_t got;
	FILE *in;

	if (argc != 4 || (!job && strcmp(argv[1], "result"))) {
		fprintf(stderr, "usage: mkseeds job|result IN.jsonl OUTDIR\n");
		return 2;
	}
	in = fopen(argv[2], "re");
	if (!in) {
		perror(argv[2]);
		return 1;
	}
	while ((got = getline(&line, &cap, in)) > 0) {
		struct al_job j = {0};
		struct al_result r = {0};
		int rc;

		if (job)
			rc = al_job_from_json(line, (size_t)got, &j, NULL) ||
			     al_job_to_msgpack(&j, &mp, &len);
		else
			rc = al_result_from_json(line, (size_t)got, &r, NULL) ||
			     al_result_to_msgpack(&r, &mp, &len);
		al_job_release(&j);
		al_result_release(&r);
		if (rc) {
			fprintf(stderr, "%s:%zu: does not decode\n", argv[2],
				n + 1);
			return 1;
		}
		rc = emit(argv[3], argv[1], n++, mp, len);
		free(mp);
		if (rc)
			return 1;
	}
	free(line);
	fclose(in);
	return 0;
}
