/* fuzz_doors.c: libFuzzer target for the front doors' translations of
 * untrusted bytes (tools/api/doors/): the route of a path, and a body
 * through Judge0's (single and batch, base64 or not), Piston's and
 * SandboxFusion's (/run_code and /submit) translation into job bodies, each of
 * which then goes through POST /jobs's own decoder.
 *
 * Input: one selector byte (which door and flags), "METHOD PATH\n", then
 * the body. Beyond "no crash, no leak": a translation gives either jobs
 * (an array of objects) and a status of 0, or an error object and a 4xx
 * status; a job the decoder takes re-encodes.
 *
 * Built with FUZZ_SMOKE (no libFuzzer), it is a CTest unit test: the
 * seeds in corpus/doors, then seeded mutations of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A policy with a few languages, as templates would declare them. */
static const struct al_policy *policy(void)
{
	static struct al_language langs[5];
	static struct al_policy p;
	static const char *const lines[][2] = {
	    {"python", "python main.py | python3 -m py_compile main.py | "
		       "python3 main.py"},
	    {"c", "c main.c | gcc -O2 -o main main.c | ./main"},
	    {"c", "cpp main.cc | g++ -O2 -o main main.cc | ./main"},
	    {"c", "executable a.out | chmod +x a.out | ./a.out"},
	    {"node",
	     "javascript main.js | node --check main.js | node main.js"},
	};
	char why[160];

	if (p.n_languages)
		return &p;
	p = *al_policy_default();
	for (size_t i = 0; i < 5; i++)
		if (al_language_parse(lines[i][0], lines[i][1], &langs[i], why,
				      sizeof(why)) < 0)
			abort();
	p.languages = langs;
	p.n_languages = 5;
	p.templates = NULL;
	return &p;
}

/* Every job body through POST /jobs's decoder. */
static void jobs_check(json_t *jobs)
{
	size_t i;
	json_t *j;

	if (!json_is_array(jobs))
		abort();
	json_array_foreach(jobs, i, j)
	{
		struct al_http_job *hj = NULL;
		struct al_diags d;
		char *text, *mp;
		size_t n = 0, mlen;

		if (json_is_null(j))
			continue; /* a Judge0 batch's refused submission */
		if (!json_is_object(j))
			abort();
		text = json_dumps(j, JSON_COMPACT);
		if (!text)
			abort();
		al_diags_init(&d);
		if (al_http_parse_jobs(text, strlen(text), false, &hj, &n,
				       &d) == 0) {
			if (al_job_expand_language(&hj[0].job, policy(), &d) ==
				0 &&
			    al_job_to_msgpack(&hj[0].job, &mp, &mlen) == 0)
				free(mp);
			al_http_jobs_free(hj, n);
		}
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct al_policy *p = policy();
	const char *b, *nl;
	json_t *jobs = NULL, *err = NULL, *ctx = NULL;
	char head[512], *sp;
	int door;
	unsigned st = 0;
	size_t blen;

	if (size < 1)
		return 0;
	nl = memchr(data + 1, '\n', size - 1);
	if (nl && (size_t)(nl - (const char *)data - 1) < sizeof(head)) {
		memcpy(head, data + 1, (size_t)(nl - (const char *)data - 1));
		head[nl - (const char *)data - 1] = 0;
		sp = strchr(head, ' ');
		if (sp) {
			*sp++ = 0;
			(void)al_door_route(head, sp, &door);
		}
	}
	b = nl ? nl + 1 : (const char *)data + 1;
	blen = size - (size_t)(b - (const char *)data);
	switch (data[0] % 4) {
	case 0:
	case 1:
		st = al_judge0_jobs(b, blen, data[0] % 4 == 1, data[0] & 4, p,
				    &jobs, &err);
		break;
	case 2:
		st = al_piston_jobs(b, blen, p, &jobs, &err);
		break;
	case 3: /* bit 8: /submit */
		st = data[0] & 8
			 ? al_sf_submit_jobs(b, blen, p, &jobs, &ctx, &err)
			 : al_sf_jobs(b, blen, p, &jobs, &err);
		break;
	}
	if (st ? st < 400 || st > 499 || !err || jobs || ctx : !jobs)
		abort();
	if (data[0] % 4 == 3 && data[0] & 8 && !st && !json_is_object(ctx))
		abort();
	if (jobs)
		jobs_check(jobs);
	json_decref(jobs);
	json_decref(err);
	json_decref(ctx);
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

/* Seeds, then 20000 mutations of them (the selector byte kept). */
int main(int argc, char **argv)
{
	static const char alphabet[] = "{}[]\",:\\\n0123456789=+/";
	static const struct smoke s = {
	    .name = "fuzz_doors",
	    .rounds = 20000,
	    .max_seeds = 64,
	    .seed_bytes = 4096,
	    .keep = 1,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = "\"base64\"",
	    .n_splice = 8,
	};

	return smoke_main(&s, argc, argv);
}
#endif
