/* fuzz_e2b.c: libFuzzer target for E2B's Connect-RPC framing of untrusted
 * bytes (tools/api/doors/e2b_connect.c): the RPC route and a request
 * body, unary or enveloped, decoded as the door does.
 *
 * Input: byte 0 picks the RPC (index into the table below) and byte 1
 * the Content-Type; the rest is the body. Beyond "no crash, no leak": a
 * body that decodes is a JSON object, a refusal names a code with an
 * HTTP status, and an envelope re-made of a decoded message decodes
 * again to the same object.
 *
 * Built with FUZZ_SMOKE (no libFuzzer), it is a CTest unit test: each
 * seed in corpus/e2b, then seeded random mutations of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const paths[] = {
    "/process.Process/Start",	   "/process.Process/Connect",
    "/process.Process/List",	   "/process.Process/SendSignal",
    "/filesystem.Filesystem/Stat", "/filesystem.Filesystem/ListDir",
    "/filesystem.Filesystem/Nope", "/process.Process/",
};
static const char *const types[] = {
    "application/json", "application/connect+json",
    "application/connect+json; charset=x", NULL};

static void roundtrip(enum al_e2b_rpc rpc, json_t *m)
{
	uint8_t *b = NULL;
	size_t n = 0;
	unsigned h;
	char msg[160];
	json_t *again = NULL;

	if (al_connect_envelope(0, json_incref(m), &b, &n) < 0)
		abort();
	if (al_connect_decode(rpc, "application/connect+json", NULL, b, n,
			      &again, &h, msg, sizeof(msg)) != AL_CONNECT_OK ||
	    !json_equal(again, m))
		abort();
	json_decref(again);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum al_e2b_rpc rpc = AL_E2B_RPC_NONE;
	enum al_connect_code k;
	unsigned h = 0;
	char msg[160];
	json_t *m = NULL;

	if (size < 2)
		return 0;
	if (al_e2b_rpc_route(paths[data[0] % 8], &rpc) < 0)
		return 0;
	k = al_connect_decode(rpc, types[data[1] % 4],
			      data[1] & 0x80 ? "1" : NULL, data + 2, size - 2,
			      &m, &h, msg, sizeof(msg));
	if (k == AL_CONNECT_OK) {
		if (!json_is_object(m) || h != 200)
			abort();
		if (al_e2b_rpc_streaming(rpc))
			roundtrip(rpc, m);
		json_decref(m);
	} else if (m || h < 400 || !msg[0]) {
		abort();
	}
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

/* Bytes 0 and 1 pick the RPC and type: mutations leave them. */
int main(int argc, char **argv)
{
	static const char alphabet[] = "{}[]\":,\\\0\x02\x01\xff 0a";
	static const struct smoke s = {
	    .name = "fuzz_e2b",
	    .rounds = 30000,
	    .max_seeds = 32,
	    .seed_bytes = 8192,
	    .keep = 2,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = "{\"process\":{\"pid\":",
	    .n_splice = 18,
	};

	return smoke_main(&s, argc, argv);
}
#endif
