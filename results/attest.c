/* attest.c: attested steps, the host's half (docs/schema.md, "Attested
 * steps").
 *
 * Why. A step's exit status and output are the job's to choose: code that
 * calls sys.exit(0) before its test ran "passes" any harness that trusts
 * them. An attested step gets a fresh random token from the host as the
 * first line of its stdin; a check runner (sandbox/agent/check.py) reads it
 * before any code under test runs, keeps it out of that code's reach, and
 * prints it at the start of its last stdout line only once the check has
 * returned. The host then believes that line, and only that line: a step
 * whose last line does not start with the token is not attested, whatever
 * it printed or however it exited. Absence of proof is never a pass.
 *
 * The token is made per step by the worker (getrandom), never stored: not
 * in Redis, not in the result (the verified prefix is cut from stdout).
 * Pure functions here; the worker does the I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int al_attest_stdin(const char *token, const struct al_blob *in,
		    struct al_blob *ret)
{
	size_t t = strlen(token), n = in ? in->len : 0;
	uint8_t *p;

	if (t == 0 || t > AL_ATTEST_TOKEN_MAX || n > SIZE_MAX - t - 2)
		return -EINVAL;
	p = malloc(t + 1 + n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, token, t);
	p[t] = '\n';
	if (n)
		memcpy(p + t + 1, in->data, n);
	p[t + 1 + n] = '\0';
	ret->data = p;
	ret->len = t + 1 + n;
	return 0;
}

/* Start of the last line of out[0..len): a final '\n' ends that line, it
 * does not start an empty one. */
static size_t last_line(const uint8_t *out, size_t len)
{
	size_t end = len && out[len - 1] == '\n' ? len - 1 : len;

	while (end > 0 && out[end - 1] != '\n')
		end--;
	return end;
}

void al_attest_verify(const char *token, struct al_step_result *sr)
{
	struct al_blob *o = &sr->stdout_;
	size_t t = strlen(token), at;

	sr->attested = AL_FALSE;
	if (t == 0 || !o->data || sr->stdout_truncated)
		return;
	at = last_line(o->data, o->len);
	if (o->len - at < t || memcmp(o->data + at, token, t) != 0)
		return;
	if (at + t < o->len && o->data[at + t] != ' ' &&
	    o->data[at + t] != '\n')
		return;
	/* cut "TOKEN " (or "TOKEN"): the rest of the line is the report */
	if (at + t < o->len && o->data[at + t] == ' ')
		t++;
	memmove(o->data + at, o->data + at + t, o->len - at - t);
	o->len -= t;
	o->data[o->len] = '\0';
	sr->attested = AL_TRUE;
}
