/* fuzz_job.c: libFuzzer target for the job decoders (msgpack or JSON,
 * chosen at build time by FUZZ_JSON).
 *
 * Beyond "no crash, no leak" (ASan), it checks the canonical property: a
 * document that decodes re-encodes to bytes that decode to the same
 * encoding again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_job job = {0}, again = {0};
	struct al_diags d;
	char *mp = NULL, *mp2 = NULL, *json = NULL;
	size_t len = 0, len2 = 0;
	int r;

	al_diags_init(&d);
#ifdef FUZZ_JSON
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
	al_job_release(&job);
	al_job_release(&again);
	return 0;
}
