/* fuzz_http.c: libFuzzer target for the HTTP API's request handling of
 * untrusted bytes (tools/api/http_req.c): the route, ?wait= and both body
 * forms, plus the log line splitter that sees job ids and guest text.
 *
 * Input: "METHOD PATH[?wait=N]\n" then the body; PATH and N are
 * percent-decoded first, as libmicrohttpd does with our callback. Beyond
 * "no crash, no leak", a body that decodes must give jobs that re-encode,
 * and a route that matches must give a valid id where it has one.
 *
 * Built with FUZZ_SMOKE (no libFuzzer), it is a CTest unit test instead:
 * each seed in tests/data/http, then seeded random mutations of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_req.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void body(const char *b, size_t len, bool batch)
{
	struct al_http_job *jobs = NULL;
	struct al_diags d;
	size_t n = 0;

	al_diags_init(&d);
	if (al_http_parse_jobs(b, len, batch, &jobs, &n, &d) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char *mp = NULL;
		size_t mlen;

		if (al_job_to_msgpack(&jobs[i].job, &mp, &mlen) != 0)
			abort();
		free(mp);
		if (jobs[i].callback && !jobs[i].callback[0])
			abort();
	}
	al_http_jobs_free(jobs, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t hlen = nl ? (size_t)(nl - (const char *)data) : size;
	char head[512], id[AL_ID_MAX + 1], *sp, *q;
	struct al_log_pair pairs[8];
	const char *event;
	enum al_route route;
	uint32_t wait;

	if (hlen >= sizeof(head))
		return 0;
	memcpy(head, data, hlen);
	head[hlen] = '\0';
	al_log_split(head, pairs, 8, &event);
	(void)al_http_host_allowed(head, "127.0.0.1:8080");
	(void)al_http_host_allowed("localhost", head);
	(void)al_http_json_type(head);
	sp = strchr(head, ' ');
	if (sp) {
		*sp++ = '\0';
		q = strchr(sp, '?');
		if (q) {
			*q++ = '\0';
			if (al_http_unescape(q) != strlen(q))
				abort();
			if (!strncmp(q, "wait=", 5))
				al_http_parse_wait(q + 5, 3600, &wait);
		}
		if (al_http_unescape(sp) != strlen(sp))
			abort();
		if (al_http_route(head, sp, &route, id) == 0 &&
		    (route == AL_ROUTE_JOB || route == AL_ROUTE_CANCEL) &&
		    !al_id_valid(id, strlen(id)))
			abort();
		/* a session route's id is "s-" + 24 hex, "/N" for an exec */
		if (al_http_route(head, sp, &route, id) == 0 &&
		    route >= AL_ROUTE_SESS_GET &&
		    (strncmp(id, "s-", 2) ||
		     strspn(id + 2, "0123456789abcdef") != 24 ||
		     (route == AL_ROUTE_SESS_OUTPUT || route == AL_ROUTE_SESS_SIGNAL
			  ? id[26] != '/' ||
				strspn(id + 27, "0123456789") != strlen(id + 27)
			  : id[26] != '\0')))
			abort();
	}
	if (nl) {
		const char *b = nl + 1;
		size_t blen = size - hlen - 1;

		body(b, blen, false);
		body(b, blen, true);
	}
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

/* Seeds, then 20000 mutations (byte flips, cuts, splices) of them. */
int main(int argc, char **argv)
{
	static const char alphabet[] = "{}[]\",:\\\n?/=";
	static const struct smoke s = {
	    .name = "fuzz_http",
	    .rounds = 20000,
	    .max_seeds = 64,
	    .seed_bytes = 4096,
	    .keep = 0,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = "\"\\u0000\"",
	    .n_splice = 8,
	};

	return smoke_main(&s, argc, argv);
}
#endif
