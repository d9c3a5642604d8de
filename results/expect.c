/* expect.c: comparing a step's output with its `expect`, on the host.
 *
 * The guest reports output; the host decides whether it matches, so a
 * guest that lies can at worst lie about its output, not about the
 * comparison. Modes:
 *   exact  byte for byte
 *   trim   ignoring leading and trailing white space of the whole output
 *   lines  line by line, ignoring trailing white space on each line and
 *          trailing empty lines (what most judges call "whitespace diff")
 *   tokens the same white-space separated tokens (testlib's wcmp)
 *   numbers tokens; a pair that both read as finite decimal numbers is
 *          equal when |got - want| <= abs_tol or <= rel_tol * |want|
 *          (testlib's rcmp), any other pair must be the same bytes
 * Output is capped before it gets here (AL_OUTPUT_MAX), and every mode
 * is one pass over both buffers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

static void trim(const uint8_t **p, size_t *len)
{
	while (*len && is_space((*p)[0])) {
		(*p)++;
		(*len)--;
	}
	while (*len && is_space((*p)[*len - 1]))
		(*len)--;
}

/* Next line of [*p, end) without its trailing white space; false at end. */
static bool next_line(const uint8_t **p, const uint8_t *end,
		      const uint8_t **ret, size_t *ret_len)
{
	const uint8_t *s = *p, *nl;
	size_t n;

	if (s >= end)
		return false;
	nl = memchr(s, '\n', (size_t)(end - s));
	n = nl ? (size_t)(nl - s) : (size_t)(end - s);
	*p = nl ? nl + 1 : end;
	while (n && is_space(s[n - 1]))
		n--;
	*ret = s;
	*ret_len = n;
	return true;
}

/* Drop trailing lines that are empty once their white space is gone. */
static size_t strip_trailing_blank(const uint8_t *s, size_t len)
{
	while (len && is_space(s[len - 1]))
		len--;
	return len;
}

static bool lines_equal(const uint8_t *a, size_t alen, const uint8_t *b,
			size_t blen)
{
	const uint8_t *ae = a + strip_trailing_blank(a, alen);
	const uint8_t *be = b + strip_trailing_blank(b, blen);

	for (;;) {
		const uint8_t *la, *lb;
		size_t na, nb;
		bool ga = next_line(&a, ae, &la, &na);
		bool gb = next_line(&b, be, &lb, &nb);

		if (!ga || !gb)
			return ga == gb;
		if (na != nb || memcmp(la, lb, na) != 0)
			return false;
	}
}

#define NUM_TOKEN_MAX 64 /* a longer token is compared as bytes */

/* Next white-space separated token of [*p, end); false at end. */
static bool next_token(const uint8_t **p, const uint8_t *end,
		       const uint8_t **ret, size_t *ret_len)
{
	const uint8_t *s = *p;

	while (s < end && is_space(*s))
		s++;
	if (s == end)
		return false;
	*ret = s;
	while (s < end && !is_space(*s))
		s++;
	*ret_len = (size_t)(s - *ret);
	*p = s;
	return true;
}

/* Token t as a finite decimal number (digits, sign, point, exponent:
 * no hex, inf or nan, which strtod would take). */
static bool token_number(const uint8_t *t, size_t n, double *ret)
{
	char buf[NUM_TOKEN_MAX + 1], *end;

	if (n == 0 || n > NUM_TOKEN_MAX)
		return false;
	memcpy(buf, t, n);
	buf[n] = '\0';
	if (strspn(buf, "0123456789+-.eE") != n)
		return false;
	*ret = strtod(buf, &end);
	return end == buf + n && isfinite(*ret);
}

static bool token_equal(const struct al_expect *e, const uint8_t *a,
			size_t na, const uint8_t *b, size_t nb)
{
	double x, y;

	if (na == nb && memcmp(a, b, na) == 0)
		return true;
	if (e->compare != AL_COMPARE_NUMBERS || !token_number(a, na, &x) ||
	    !token_number(b, nb, &y))
		return false;
	return fabs(x - y) <= e->abs_tol || fabs(x - y) <= e->rel_tol * fabs(y);
}

static bool tokens_equal(const struct al_expect *e, const uint8_t *a,
			 size_t alen, const uint8_t *b, size_t blen)
{
	const uint8_t *ae = a + alen, *be = b + blen;

	for (;;) {
		const uint8_t *ta, *tb;
		size_t na, nb;
		bool ga = next_token(&a, ae, &ta, &na);
		bool gb = next_token(&b, be, &tb, &nb);

		if (!ga || !gb)
			return ga == gb;
		if (!token_equal(e, ta, na, tb, nb))
			return false;
	}
}

bool al_expect_match(const struct al_expect *e, const struct al_blob *out)
{
	const uint8_t *a = out->data, *b = e->stdout_.data;
	size_t alen = out->len, blen = e->stdout_.len;

	switch (e->compare) {
	case AL_COMPARE_TRIM:
		trim(&a, &alen);
		trim(&b, &blen);
		/* fall through */
	case AL_COMPARE_EXACT:
		return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
	case AL_COMPARE_LINES:
		return lines_equal(a, alen, b, blen);
	case AL_COMPARE_TOKENS:
	case AL_COMPARE_NUMBERS:
		return tokens_equal(e, a, alen, b, blen);
	}
	return false;
}
