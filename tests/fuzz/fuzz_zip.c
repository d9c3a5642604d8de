/* fuzz_zip.c: libFuzzer target for Judge0's additional_files decoder
 * (tools/api/doors/zipfiles.c, over libzip): any bytes as a zip. Beyond
 * "no crash, no leak": an archive taken gives at most AL_ZIP_ENTRIES_MAX
 * files, each a valid relative path, at most AL_ZIP_BYTES_MAX bytes in
 * all; one refused says why.
 *
 * Built with FUZZ_SMOKE (no libFuzzer), it is a CTest unit test: the
 * seeds in corpus/zip (made by Python's zipfile: deflated, stored, a
 * directory, a symlink, a duplicate, a `..`), then seeded mutations.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "zipfiles.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A file's bytes: its string, or its base64's decoded length. */
static size_t file_len(json_t *v)
{
	json_t *b = json_object_get(v, "base64");
	uint8_t *d;
	size_t n;

	if (json_is_string(v))
		return json_string_length(v);
	if (!json_is_string(b) ||
	    al_door_b64_decode(json_string_value(b), json_string_length(b), &d,
			       &n) < 0)
		abort();
	free(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *files = NULL, *v;
	char err[160] = "";
	const char *k;
	size_t total = 0;
	int r = al_door_unzip(data, size, &files, err, sizeof(err));

	if (r < 0) {
		if (files || (r == -EINVAL && !err[0]))
			abort();
		return 0;
	}
	if (!json_is_object(files) ||
	    json_object_size(files) > AL_ZIP_ENTRIES_MAX)
		abort();
	json_object_foreach(files, k, v)
	{
		if (!al_relpath_valid(k, strlen(k)))
			abort();
		total += file_len(v);
	}
	if (total > AL_ZIP_BYTES_MAX)
		abort();
	json_decref(files);
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

/* Seeds, then 20000 mutations of them. */
int main(int argc, char **argv)
{
	static const char alphabet[] = "PK\x01\x02\x03\x04\x05\x06\x07\x08"
				       "\xff\x00/.\\";
	static const struct smoke s = {
	    .name = "fuzz_zip",
	    .rounds = 20000,
	    .max_seeds = 16,
	    .seed_bytes = 4096,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = "PK\x05\x06",
	    .n_splice = 4,
	};

	return smoke_main(&s, argc, argv);
}
#endif
