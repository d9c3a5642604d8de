/* semver.c: npm `semver` range matching for Piston's `version` selector:
 * each comparator is rewritten to at most two primitive bounds, as
 * semver's desugaring does, and the version is checked against them. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "semver.h"

#define SV_MAX_RANGE 256 /* longer selectors fit nothing */
#define SV_DIGITS    15	 /* below 2^53, semver's MAX_SAFE_INTEGER */

enum sv_op { SV_EQ, SV_GT, SV_GE, SV_LT, SV_LE, SV_NONE };

struct sv_ver {
	unsigned long long p[3];
	int n; /* parts given before the first wildcard or gap */
};

struct sv_prim {
	enum sv_op op;
	struct sv_ver v;
};

static const struct {
	const char *tok;
	char op; /* '=' '>' 'G' (>=) '<' 'L' (<=) '~' '^' */
} sv_ops[] = {
    {">=", 'G'}, {"<=", 'L'}, {"~>", '~'}, {">", '>'},
    {"<", '<'},	 {"=", '='},  {"~", '~'},  {"^", '^'},
};

static int sv_cmp(const struct sv_ver *a, const struct sv_ver *b)
{
	for (int i = 0; i < 3; i++)
		if (a->p[i] != b->p[i])
			return a->p[i] < b->p[i] ? -1 : 1;
	return 0;
}

/* One part: a number without a leading zero, or x/X/'*'. 1 number,
 * 0 wildcard, -1 bad. */
static int sv_part(const char **s, unsigned long long *out)
{
	const char *c = *s;
	size_t k = 0;

	if (*c == 'x' || *c == 'X' || *c == '*') {
		*s = c + 1;
		return 0;
	}
	while (isdigit((unsigned char)c[k]))
		k++;
	if (!k || k > SV_DIGITS || (k > 1 && c[0] == '0'))
		return -1;
	*out = strtoull(c, NULL, 10);
	*s = c + k;
	return 1;
}

/* A partial version "v1.2", "1.x", "*", "" (s runs to end). */
static int sv_partial(const char *s, const char *end, struct sv_ver *v)
{
	bool wild = false;

	memset(v, 0, sizeof(*v));
	if (s < end && *s == 'v')
		s++;
	for (int i = 0; i < 3 && s < end; i++) {
		unsigned long long x = 0;
		int r = sv_part(&s, &x);

		if (r < 0)
			return -1;
		if (r == 0)
			wild = true;
		if (!wild) {
			v->p[i] = x;
			v->n++;
		}
		if (s < end && (*s != '.' || i == 2))
			return -1;
		if (s < end && ++s == end)
			return -1;
	}
	return s == end ? 0 : -1;
}

/* v with part i one up and the parts after it zero. */
static struct sv_ver sv_bump(struct sv_ver v, int i)
{
	v.p[i]++;
	for (int k = i + 1; k < 3; k++)
		v.p[k] = 0;
	v.n = 3;
	return v;
}

static int sv_add(struct sv_prim *pr, int k, enum sv_op op, struct sv_ver v)
{
	pr[k].op = op;
	pr[k].v = v;
	return k + 1;
}

/* The upper bound of a caret: the first non-zero part given moves. */
static int sv_caret_part(const struct sv_ver *v)
{
	if (v->p[0] || v->n == 1)
		return 0;
	if (v->p[1] || v->n == 2)
		return 1;
	return 2;
}

/* Comparator op v as primitive bounds in pr (two at most): the count. */
static int sv_expand(char op, const struct sv_ver *v, struct sv_prim *pr)
{
	int n = v->n, k = 0;

	if (n == 0)
		return op == '>' || op == '<' ? sv_add(pr, 0, SV_NONE, *v) : 0;
	switch (op) {
	case '=':
		if (n == 3)
			return sv_add(pr, 0, SV_EQ, *v);
		k = sv_add(pr, 0, SV_GE, *v);
		return sv_add(pr, k, SV_LT, sv_bump(*v, n - 1));
	case '>':
		if (n == 3)
			return sv_add(pr, 0, SV_GT, *v);
		return sv_add(pr, 0, SV_GE, sv_bump(*v, n - 1));
	case 'G':
		return sv_add(pr, 0, SV_GE, *v);
	case '<':
		return sv_add(pr, 0, SV_LT, *v);
	case 'L':
		if (n == 3)
			return sv_add(pr, 0, SV_LE, *v);
		return sv_add(pr, 0, SV_LT, sv_bump(*v, n - 1));
	case '~':
		k = sv_add(pr, 0, SV_GE, *v);
		return sv_add(pr, k, SV_LT, sv_bump(*v, n >= 2 ? 1 : 0));
	default: /* '^' */
		k = sv_add(pr, 0, SV_GE, *v);
		return sv_add(pr, k, SV_LT, sv_bump(*v, sv_caret_part(v)));
	}
}

static bool sv_prim_fits(const struct sv_prim *pr, const struct sv_ver *v)
{
	int c = sv_cmp(v, &pr->v);

	switch (pr->op) {
	case SV_EQ:
		return c == 0;
	case SV_GT:
		return c > 0;
	case SV_GE:
		return c >= 0;
	case SV_LT:
		return c < 0;
	case SV_LE:
		return c <= 0;
	default:
		return false;
	}
}

/* The operator at *s (skipped, with blanks after it), '=' when none. */
static char sv_op(const char **s)
{
	char op = '=';

	for (size_t i = 0; i < sizeof(sv_ops) / sizeof(sv_ops[0]); i++) {
		size_t l = strlen(sv_ops[i].tok);

		if (!strncmp(*s, sv_ops[i].tok, l)) {
			op = sv_ops[i].op;
			*s += l;
			break;
		}
	}
	while (**s == ' ' || **s == '\t')
		(*s)++;
	return op;
}

static const char *sv_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static const char *sv_word(const char *s, const char *end)
{
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	return s;
}

/* "A - B" once A is read (at s the blanks after it): bounds in pr. */
static int sv_hyphen(const struct sv_ver *a, const char **s, const char *end,
		     struct sv_prim *pr)
{
	const char *b = sv_blank(*s + 1, end), *e = sv_word(b, end);
	struct sv_ver vb;
	int k;

	if (b == *s + 1 || sv_partial(b, e, &vb))
		return -1;
	*s = e;
	k = a->n ? sv_add(pr, 0, SV_GE, *a) : 0;
	if (vb.n == 3)
		return sv_add(pr, k, SV_LE, vb);
	if (vb.n == 0)
		return k;
	return sv_add(pr, k, SV_LT, sv_bump(vb, vb.n - 1));
}

/* One comparator set (s..end): 1 fits, 0 not, -1 does not parse. */
static int sv_set(const char *s, const char *end, const struct sv_ver *v)
{
	int fits = 1;

	for (s = sv_blank(s, end); s < end; s = sv_blank(s, end)) {
		struct sv_prim pr[2];
		struct sv_ver a;
		const char *w, *o = s;
		char op = sv_op(&s);
		bool bare = s == o;
		int n;

		w = sv_word(s, end);
		if (s >= end || sv_partial(s, w, &a))
			return -1;
		s = sv_blank(w, end);
		if (bare && s + 1 < end && *s == '-' &&
		    (s[1] == ' ' || s[1] == '\t'))
			n = sv_hyphen(&a, &s, end, pr);
		else
			n = sv_expand(op, &a, pr);
		for (int i = 0; i < n; i++)
			fits &= sv_prim_fits(&pr[i], v);
		if (n < 0)
			return -1;
	}
	return fits;
}

bool al_semver_fits(const char *range, const char *v)
{
	struct sv_ver ver;
	size_t len = range ? strnlen(range, SV_MAX_RANGE + 1) : 0;
	const char *s = range, *end = range + len, *bar;
	bool any = false;

	if (!range || len > SV_MAX_RANGE || !v ||
	    sv_partial(v, v + strlen(v), &ver) || ver.n != 3)
		return false;
	for (;; s = bar + 2) {
		int r;

		bar = strstr(s, "||");
		if (!bar || bar > end)
			bar = end;
		r = sv_set(s, bar, &ver);
		if (r < 0)
			return false;
		any |= r == 1;
		if (bar == end)
			return any;
	}
}
