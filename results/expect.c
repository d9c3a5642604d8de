/* expect.c: comparing a step's output with its `expect`, on the host.
 *
 * The guest reports output; the host decides whether it matches, so a
 * guest that lies can at worst lie about its output, not about the
 * comparison. Modes:
 *   exact  byte for byte
 *   trim   ignoring leading and trailing white space of the whole output
 *   lines  line by line, ignoring trailing white space on each line and
 *          trailing empty lines (what most judges call "whitespace diff")
 */
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
	}
	return false;
}
