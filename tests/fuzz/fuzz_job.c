/* fuzz_job.c: libFuzzer target for the job decoders (msgpack or JSON,
 * chosen at build time by FUZZ_JSON).
 *
 * Beyond "no crash, no leak" (ASan), it checks the canonical property: a
 * document that decodes re-encodes to bytes that decode to the same
 * encoding again; and a job naming a language expands (results/lang.c)
 * into one that encodes and decodes as a plain job. The JSON build also
 * decodes the input as one step alone (al_step_from_json, a session's
 * exec): what decodes as a step decodes as {"steps":[input]}.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A policy with two languages: one compiled, one not. */
static const struct al_policy *lang_policy(void)
{
	static struct al_language l[2];
	static struct al_policy p;
	char why[128];

	if (!p.n_languages) {
		p = *al_policy_default();
		if (al_language_parse("c", "c main.c | gcc -o main main.c | "
				      "./main", &l[0], why, sizeof(why)) ||
		    al_language_parse("python", "python main.py | - | "
				      "python3 main.py", &l[1], why,
				      sizeof(why)))
			abort();
		p.languages = l;
		p.n_languages = 2;
	}
	return &p;
}

/* Expand `job`; an expanded job is a plain one: it round-trips. */
static void expand(struct al_job *job)
{
	struct al_job back = {0};
	struct al_diags d;
	char *mp = NULL;
	size_t len = 0;

	al_diags_init(&d);
	if (al_job_expand_language(job, lang_policy(), &d) != 0)
		return;
	if (job->language || al_job_to_msgpack(job, &mp, &len) != 0 ||
	    al_job_from_msgpack(mp, len, &back, NULL) != 0)
		abort();
	free(mp);
	al_job_release(&back);
}

#ifdef FUZZ_JSON
/* What decodes as one step alone decodes as the one-step job around it. */
static void step_alone(const uint8_t *data, size_t size)
{
	struct al_step st = {0};
	struct al_job job = {0};
	char *doc = malloc(size + 12);
	int rs, rj;

	if (!doc)
		return;
	memcpy(doc, "{\"steps\":[", 10);
	memcpy(doc + 10, data, size);
	memcpy(doc + 10 + size, "]}", 2);
	rs = al_step_from_json((const char *)data, size, &st, NULL);
	rj = al_job_from_json(doc, size + 12, &job, NULL);
	/* (not the converse: `{..},{..}` is two steps, no one step) */
	if (rs == 0 && rj != 0 && rj != -E2BIG)
		abort();
	al_step_release(&st);
	al_job_release(&job);
	free(doc);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_job job = {0}, again = {0};
	struct al_diags d;
	char *mp = NULL, *mp2 = NULL, *json = NULL;
	size_t len = 0, len2 = 0;
	int r;

	al_diags_init(&d);
#ifdef FUZZ_JSON
	step_alone(data, size);
	r = al_job_from_json((const char *)data, size, &job, &d);
#else
	r = al_job_from_msgpack(data, size, &job, &d);
#endif
	if (r != 0)
		return 0;
	al_job_check_policy(&job, al_policy_default(), &d);
	if (al_job_to_msgpack(&job, &mp, &len) != 0 ||
	    al_job_from_msgpack(mp, len, &again, NULL) != 0 ||
	    al_job_to_msgpack(&again, &mp2, &len2) != 0 || len != len2 ||
	    memcmp(mp, mp2, len) != 0 || al_job_to_json(&again, &json) != 0)
		abort();
	free(mp);
	free(mp2);
	free(json);
	expand(&again);
	al_job_release(&job);
	al_job_release(&again);
	return 0;
}
