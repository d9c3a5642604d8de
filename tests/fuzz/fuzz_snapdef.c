/* fuzz_snapdef.c: libFuzzer target for the snapshot definitions read from
 * Redis (dispatcher/serve/snapdef.c) and handed to workers (worker/proc.c).
 *
 * The input is tried two ways: as the bytes of a Redis reply (hiredis's
 * reader, then alq_snapdef_parse(): whoever can write Redis writes the
 * definition), and as the body of a worker job frame (al_proc_job_decode,
 * whose `snap` map carries it). What either accepts must be well formed:
 * a valid definition (al_snapdef_valid), a setup within the cap.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "proc.h"
#include "proto.h"
#include "snapdef.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Does the input declare an array of more than `max` elements? hiredis
 * 0.14's reader callocs a multi-bulk's element array from its header
 * before any element arrives (no maxelements yet), so `*1000000009`
 * asks for 8 GB. A Redis server only sends a header for elements it
 * holds and sends, so such an input tests hiredis, not our parser.
 * Every `*` counts, not only one at a line's start: a bulk string whose
 * declared length is shorter than its text leaves the reader at a
 * header in the middle of a line (a CI run found `000*1200000009`). */
static bool huge_array(const uint8_t *data, size_t size, unsigned long max)
{
	for (size_t i = 0; i < size; i++) {
		unsigned long n = 0;
		size_t j = i + 1;

		if (data[i] != '*')
			continue;
		while (j < size && data[j] >= '0' && data[j] <= '9' && n <= max)
			n = n * 10 + (unsigned long)(data[j++] - '0');
		if (n > max)
			return true;
	}
	return false;
}

static void as_reply(const uint8_t *data, size_t size)
{
	redisReader *rd;
	void *reply = NULL;
	struct al_snapdef d;
	char *setup = NULL;

	if (huge_array(data, size, 4096))
		return;
	rd = redisReaderCreate();
	if (!rd)
		return;
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK &&
	    redisReaderGetReply(rd, &reply) == REDIS_OK && reply &&
	    alq_snapdef_parse(reply, &d, &setup) == 0) {
		if (!al_snapdef_valid(&d) || d.setup != setup ||
		    d.setup_len > AL_JOB_MAX_BYTES)
			abort();
		free(setup);
	}
	if (reply)
		freeReplyObject(reply);
	redisReaderFree(rd);
}

static void as_frame(const uint8_t *data, size_t size)
{
	struct al_proc_job j;
	uint8_t *copy = malloc(size ? size : 1); /* ASan sees reads past it */

	if (!copy)
		return;
	memcpy(copy, data, size);
	if (al_proc_job_decode(copy, size, &j) == 0 && j.snap.name[0]) {
		if (j.snap.setup_len > AL_JOB_MAX_BYTES ||
		    strlen(j.snap.key) >= sizeof(j.snap.key))
			abort();
		(void)al_snapdef_valid(&j.snap);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_reply(data, size);
	as_frame(data, size);
	return 0;
}

#ifdef FUZZ_SMOKE
/* Without libFuzzer: a valid definition as a Redis reply and as a job
 * frame, then 20000 seeded mutations of them (byte flips, cuts). */
#define SEED_MAX 4096

static size_t resp_def(uint8_t *out, const struct al_snapdef *d)
{
	const char *f[] = {"name",  d->name,	  "base", d->base,
			   "image", d->image,	  "sha",  d->setup_sha,
			   "key",   d->key,	  "setup", d->setup};
	size_t n = (size_t)sprintf((char *)out, "*12\r\n");

	for (size_t i = 0; i < 12; i++) {
		size_t len = i == 11 ? d->setup_len : strlen(f[i]);

		n += (size_t)sprintf((char *)out + n, "$%zu\r\n", len);
		memcpy(out + n, f[i], len);
		n += len;
		memcpy(out + n, "\r\n", 2);
		n += 2;
	}
	return n;
}

/* The unmutated seeds parse: else the mutations prove little. */
static bool seeds_accepted(const uint8_t *resp, size_t rlen,
			   const uint8_t *body, size_t blen)
{
	redisReader *rd = redisReaderCreate();
	void *reply = NULL;
	struct al_snapdef d;
	struct al_proc_job j;
	char *setup = NULL;
	bool ok;

	ok = rd && redisReaderFeed(rd, (const char *)resp, rlen) == REDIS_OK &&
	     redisReaderGetReply(rd, &reply) == REDIS_OK && reply &&
	     alq_snapdef_parse(reply, &d, &setup) == 0;
	free(setup);
	if (reply)
		freeReplyObject(reply);
	if (rd)
		redisReaderFree(rd);
	return ok && al_proc_job_decode(body, blen, &j) == 0 &&
	       al_snapdef_valid(&j.snap);
}

int main(void)
{
	const char *json = "{\"template\":\"python\",\"sh\":\"echo 1 > /w\"}";
	static uint8_t seed[2][SEED_MAX], buf[SEED_MAX];
	struct al_proc_job pj = {.payload = "\x81\xa2sh\xa4true", .len = 9};
	size_t len[2], flen;
	struct al_job job = {0};
	struct al_diags diags;
	char *mp, *frame;

	al_diags_init(&diags);
	if (al_job_from_json(json, strlen(json), &job, &diags) < 0 ||
	    al_job_to_msgpack(&job, &mp, &pj.snap.setup_len) < 0 ||
	    al_worker_setup_hash(&job, pj.snap.setup_sha) < 0)
		return 1;
	pj.snap.setup = mp;
	snprintf(pj.snap.name, sizeof(pj.snap.name), "snap1");
	snprintf(pj.snap.base, sizeof(pj.snap.base), "python");
	snprintf(pj.snap.image, sizeof(pj.snap.image), "07232a8dc8bdd32b");
	al_snapdef_key(&pj.snap, pj.snap.key);
	len[0] = resp_def(seed[0], &pj.snap);
	if (al_proc_job_frame(&pj, &frame, &flen) < 0 ||
	    flen - AL_FRAME_HDR > SEED_MAX)
		return 1;
	len[1] = flen - AL_FRAME_HDR;
	memcpy(seed[1], frame + AL_FRAME_HDR, len[1]);
	free(frame);
	if (!seeds_accepted(seed[0], len[0], seed[1], len[1])) {
		fprintf(stderr, "fuzz_snapdef_smoke: a seed is refused\n");
		return 1;
	}
	srand(42);
	for (unsigned r = 0; r < 20000; r++) {
		size_t s = r % 2, cut;

		memcpy(buf, seed[s], len[s]);
		for (int k = r < 2 ? -1 : rand() % 4; k >= 0; k--)
			buf[(size_t)rand() % len[s]] = (uint8_t)rand();
		cut = r < 2 || rand() % 2 ? len[s]
					  : (size_t)rand() % (len[s] + 1);
		LLVMFuzzerTestOneInput(buf, cut);
	}
	al_job_release(&job);
	free(mp);
	printf("fuzz_snapdef_smoke: ok\n");
	return 0;
}
#endif
