/* bench_sesswire.c: what a session request and its records cost to
 * encode and decode as JSON (jansson, today's wire) and as msgpack
 * (msgpack-c, the queue's), against an exec's round trip.
 *
 * The decision it informs is docs/sessions.md's "Why JSON on Redis":
 * each exec makes one request (op, rid, body with sh/env/timeout), one
 * reply (rid, exec), and one exec record; each is encoded once and
 * decoded once. Usage: airlock-bench-sesswire [ITERATIONS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <msgpack.h>

#include "clock.h"

static const char RID[] = "5f0c3a9e1b2d4c6f8a7e9d0c1b2a3f4e";

static json_t *request_json(void)
{
	return json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s,s:s},s:i,s:s}}", "op", "exec", "rid", RID,
	    "body", "sh", "python3 -c 'print(sum(range(10)))'", "env", "LANG",
	    "C.UTF-8", "SEED", "42", "timeout_ms", 5000, "cwd", "/work");
}

static json_t *record_json(void)
{
	return json_pack("{s:i,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "exec", 7,
			 "status", "OK", "exit_code", 0, "signal", 0, "wall_ms",
			 212, "cpu_ms", 180, "max_rss_kb", 9120, "stdout_bytes",
			 3, "stderr_bytes", 0);
}

static void str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void request_mp(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 3);
	str(pk, "op"), str(pk, "exec");
	str(pk, "rid"), str(pk, RID);
	str(pk, "body");
	msgpack_pack_map(pk, 4);
	str(pk, "sh"), str(pk, "python3 -c 'print(sum(range(10)))'");
	str(pk, "env");
	msgpack_pack_map(pk, 2);
	str(pk, "LANG"), str(pk, "C.UTF-8");
	str(pk, "SEED"), str(pk, "42");
	str(pk, "timeout_ms"), msgpack_pack_uint32(pk, 5000);
	str(pk, "cwd"), str(pk, "/work");
}

static void record_mp(msgpack_packer *pk)
{
	static const char *const k[] = {
	    "exec",   "exit_code",  "signal",	    "wall_ms",
	    "cpu_ms", "max_rss_kb", "stdout_bytes", "stderr_bytes"};
	static const uint32_t v[] = {7, 0, 0, 212, 180, 9120, 3, 0};

	msgpack_pack_map(pk, 9);
	str(pk, "status"), str(pk, "OK");
	for (size_t i = 0; i < 8; i++)
		str(pk, k[i]), msgpack_pack_uint32(pk, v[i]);
}

/* ns per encode + decode of one JSON document. */
static double run_json(json_t *(*make)(void), unsigned n, size_t *ret_len)
{
	json_t *doc = make();
	uint64_t t0 = al_now_ms();

	for (unsigned i = 0; i < n; i++) {
		char *s = json_dumps(doc, JSON_COMPACT);
		json_t *back = json_loads(s, 0, NULL);

		*ret_len = strlen(s);
		if (!back)
			abort();
		json_decref(back);
		free(s);
	}
	json_decref(doc);
	return (double)(al_now_ms() - t0) * 1e6 / n;
}

/* ns per encode + decode (unpack into a zone) of one msgpack document. */
static double run_mp(void (*make)(msgpack_packer *), unsigned n,
		     size_t *ret_len)
{
	uint64_t t0 = al_now_ms();

	for (unsigned i = 0; i < n; i++) {
		msgpack_sbuffer sb;
		msgpack_packer pk;
		msgpack_zone z;
		msgpack_object o;

		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		make(&pk);
		msgpack_zone_init(&z, 1024);
		if (msgpack_unpack(sb.data, sb.size, NULL, &z, &o) !=
		    MSGPACK_UNPACK_SUCCESS)
			abort();
		*ret_len = sb.size;
		msgpack_zone_destroy(&z);
		msgpack_sbuffer_destroy(&sb);
	}
	return (double)(al_now_ms() - t0) * 1e6 / n;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 200000;
	size_t lj = 0, lm = 0;
	double j, m;

	if (!n)
		n = 1;
	printf("| document | JSON bytes | JSON ns (encode+decode) | msgpack "
	       "bytes | msgpack ns | saved per exec |\n| --- | ---: | ---: | "
	       "---: | ---: | ---: |\n");
	j = run_json(request_json, n, &lj);
	m = run_mp(request_mp, n, &lm);
	printf("| exec request | %zu | %.0f | %zu | %.0f | %.2f us |\n", lj, j,
	       lm, m, (j - m) / 1000);
	j = run_json(record_json, n, &lj);
	m = run_mp(record_mp, n, &lm);
	printf("| exec record | %zu | %.0f | %zu | %.0f | %.2f us |\n", lj, j,
	       lm, m, (j - m) / 1000);
	return 0;
}
