/* fuzz_result.c: libFuzzer target for the result decoder (msgpack, as
 * results are stored), with the same canonical re-encoding check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_result res = {0}, again = {0};
	char *mp = NULL, *mp2 = NULL, *json = NULL;
	size_t len = 0, len2 = 0;

	if (al_result_from_msgpack(data, size, &res, NULL) != 0)
		return 0;
	al_result_overall_status(&res);
	if (al_result_to_msgpack(&res, &mp, &len) != 0 ||
	    al_result_from_msgpack(mp, len, &again, NULL) != 0 ||
	    al_result_to_msgpack(&again, &mp2, &len2) != 0 || len != len2 ||
	    memcmp(mp, mp2, len) != 0 || al_result_to_json(&again, &json) != 0)
		abort();
	free(mp);
	free(mp2);
	free(json);
	al_result_release(&res);
	al_result_release(&again);
	return 0;
}
