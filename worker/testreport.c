/* testreport.c: JUnit XML and TAP test reports read into per-test records
 * (testreport.h). The bytes are a job's: expat parses the XML (no DTD,
 * so no entity, is ever accepted), TAP is read line by line, every copy
 * is capped and made valid UTF-8, and records past the caps are counted
 * only. */
#include <errno.h>
#include <expat.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testreport.h"

#define RECORD_BYTES 64u	/* a record's keys and numbers */
#define XML_CHUNK    (1u << 20) /* bytes fed to expat at a time */
#define TIME_S_MAX   1e9	/* a test's time past this is 0 */

/* --- records ------------------------------------------------------------ */

void al_report_problem(struct al_report_out *out, uint32_t index,
		       const char *fmt, ...)
{
	size_t used = strlen(out->error);
	va_list ap;
	int n;

	if (used + 16 >= sizeof(out->error))
		return;
	n = snprintf(out->error + used, sizeof(out->error) - used,
		     "%sreport[%u]: ", used ? "; " : "", index);
	if (n < 0 || (size_t)n >= sizeof(out->error) - used)
		return;
	used += (size_t)n;
	va_start(ap, fmt);
	vsnprintf(out->error + used, sizeof(out->error) - used, fmt, ap);
	va_end(ap);
}

/* Length of the valid UTF-8 sequence at p[0..n), 0 if none (NUL too). */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	size_t want = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;

	if (p[0] == 0 || want > n)
		return 0;
	return al_utf8_valid(p, want) ? want : 0;
}

/* p[0..n) as a NUL-ended UTF-8 string of at most max bytes: invalid bytes
 * and NUL become U+FFFD, cut at a character's boundary. NULL: ENOMEM. */
static char *text_copy(const uint8_t *p, size_t n, size_t max)
{
	static const char repl[] = "\xef\xbf\xbd";
	char *s = malloc(max + 1);
	size_t o = 0;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len(p + i, n - i);
		const void *from = k ? (const void *)(p + i) : repl;
		size_t len = k ? k : 3;

		if (o + len > max)
			break;
		memcpy(s + o, from, len);
		o += len;
		i += k ? k : 1;
	}
	s[o] = '\0';
	return s;
}

uint64_t al_report_record_bytes(const struct al_test_case *t)
{
	return RECORD_BYTES + (t->name ? strlen(t->name) : 0) +
	       (t->suite ? strlen(t->suite) : 0) +
	       (t->message ? strlen(t->message) : 0);
}

static void case_release(struct al_test_case *t)
{
	free(t->name);
	free(t->suite);
	free(t->message);
	memset(t, 0, sizeof(*t));
}

/* Count *t and keep it (taking its strings) when the caps allow; t is
 * emptied either way. 0 or -ENOMEM. */
static int add_case(struct al_report_out *out, struct al_test_case *t)
{
	uint64_t *by[AL_TEST_STATUS_COUNT] = {
	    &out->counts.passed, &out->counts.failed, &out->counts.error,
	    &out->counts.skipped};
	uint64_t b = al_report_record_bytes(t);

	out->counts.total++;
	(*by[(unsigned)t->status % AL_TEST_STATUS_COUNT])++;
	if (out->n_tests >= out->max_tests || out->bytes + b > out->max_bytes) {
		out->dropped++;
		case_release(t);
		return 0;
	}
	if (out->n_tests == out->cap) {
		size_t nc = out->cap ? out->cap * 2 : 64;
		struct al_test_case *nt = realloc(out->tests, nc * sizeof(*nt));

		if (!nt) {
			case_release(t);
			return -ENOMEM;
		}
		out->tests = nt;
		out->cap = nc;
	}
	out->tests[out->n_tests++] = *t;
	out->bytes += b;
	memset(t, 0, sizeof(*t));
	return 0;
}

void al_report_out_release(struct al_report_out *out)
{
	al_tests_release(out->tests, out->n_tests);
	out->tests = NULL;
	out->n_tests = out->cap = 0;
}

/* --- JUnit XML ------------------------------------------------------------ */

/* Where the parse is: one testcase at a time, the innermost testsuite's
 * name for cases without a classname. */
struct junit {
	XML_Parser p;
	struct al_report_out *out;
	uint32_t index;		/* the report's */
	unsigned depth;		/* open elements */
	unsigned case_depth;	/* depth of the open testcase, 0 = none */
	unsigned text_depth;	/* depth of the failure/error/skipped whose
				   text is the message, 0 = none */
	bool root_seen;		/* the root element was checked */
	bool refused;		/* stopped by us: why is in out->error */
	bool child_seen;	/* a child element set the case's status */
	int err;		/* -ENOMEM seen in a handler */
	struct al_test_case tc; /* the open testcase */
	char *suites[AL_REPORT_DEPTH_MAX + 1]; /* testsuite name by depth */
	char text[AL_TEST_MESSAGE_MAX + 4];    /* the message's text */
	size_t text_len;		       /* bytes in text */
};

static void junit_stop(struct junit *j, const char *why)
{
	if (!j->refused && !j->err)
		al_report_problem(j->out, j->index, "refused at line %lu: %s",
				  (unsigned long)XML_GetCurrentLineNumber(j->p),
				  why);
	j->refused = true;
	XML_StopParser(j->p, XML_FALSE);
}

static void junit_nomem(struct junit *j)
{
	j->err = -ENOMEM;
	XML_StopParser(j->p, XML_FALSE);
}

static const char *attr(const XML_Char **a, const char *name)
{
	for (; a[0]; a += 2)
		if (!strcmp(a[0], name))
			return a[1];
	return NULL;
}

static char *attr_copy(const XML_Char **a, const char *name, size_t max)
{
	const char *v = attr(a, name);

	return v ? text_copy((const uint8_t *)v, strlen(v), max) : NULL;
}

/* A time in seconds ("0.012", "1,234.5") as ms; 0 when it is none. */
static uint64_t time_ms(const char *v)
{
	char buf[64], *end;
	size_t o = 0;
	double x;

	if (!v)
		return 0;
	for (; *v && o + 1 < sizeof(buf); v++)
		if (*v != ',')
			buf[o++] = *v;
	buf[o] = '\0';
	x = strtod(buf, &end);
	if (end == buf || *end || !isfinite(x) || x < 0 || x > TIME_S_MAX)
		return 0;
	return (uint64_t)(x * 1000.0 + 0.5);
}

/* Which status a child element gives its testcase; -1 none. Stronger
 * ones win: error over failure over skipped. */
static int child_status(const char *name)
{
	if (!strcmp(name, "error"))
		return AL_TEST_ERROR;
	if (!strcmp(name, "failure"))
		return AL_TEST_FAILED;
	if (!strcmp(name, "skipped"))
		return AL_TEST_SKIPPED;
	return -1;
}

static int rank(enum al_test_status s)
{
	static const int r[AL_TEST_STATUS_COUNT] = {[AL_TEST_PASSED] = 0,
						    [AL_TEST_SKIPPED] = 1,
						    [AL_TEST_FAILED] = 2,
						    [AL_TEST_ERROR] = 3};
	return r[s];
}

static void open_case(struct junit *j, const XML_Char **a)
{
	const char *st = attr(a, "status");

	memset(&j->tc, 0, sizeof(j->tc));
	j->child_seen = false;
	j->tc.report = j->index;
	j->tc.time_ms = time_ms(attr(a, "time"));
	j->tc.name = attr_copy(a, "name", AL_TEST_NAME_MAX);
	j->tc.suite = attr_copy(a, "classname", AL_TEST_NAME_MAX);
	if (!j->tc.suite && j->suites[j->depth - 1])
		j->tc.suite = strdup(j->suites[j->depth - 1]);
	if (!j->tc.name)
		j->tc.name = strdup("");
	/* ctest: a test not run is status="notrun" or "disabled" */
	if (st && (!strcmp(st, "notrun") || !strcmp(st, "disabled")))
		j->tc.status = AL_TEST_SKIPPED;
	if (!j->tc.name || (attr(a, "classname") && !j->tc.suite) ||
	    (!attr(a, "classname") && j->suites[j->depth - 1] && !j->tc.suite))
		junit_nomem(j);
	j->case_depth = j->depth;
}

static void open_child(struct junit *j, const XML_Char *name,
		       const XML_Char **a)
{
	int s = child_status(name);
	const char *msg;

	if (s < 0 || rank((enum al_test_status)s) < rank(j->tc.status) ||
	    (rank((enum al_test_status)s) == rank(j->tc.status) &&
	     j->child_seen))
		return;
	j->child_seen = true;
	j->tc.status = (enum al_test_status)s;
	free(j->tc.message);
	j->tc.message = NULL;
	j->text_depth = 0;
	msg = attr(a, "message");
	if (msg && *msg) {
		j->tc.message = text_copy((const uint8_t *)msg, strlen(msg),
					  AL_TEST_MESSAGE_MAX);
		if (!j->tc.message)
			junit_nomem(j);
		return;
	}
	j->text_depth = j->depth; /* its text is the message */
	j->text_len = 0;
}

static void XMLCALL junit_start(void *ud, const XML_Char *name,
				const XML_Char **a)
{
	struct junit *j = ud;

	if (++j->depth > AL_REPORT_DEPTH_MAX) {
		junit_stop(j, "elements nested deeper than 32");
		return;
	}
	if (!j->root_seen) {
		j->root_seen = true;
		if (strcmp(name, "testsuites") && strcmp(name, "testsuite")) {
			junit_stop(j, "not JUnit XML (the root element is "
				      "not testsuites or testsuite)");
			return;
		}
	}
	if (!strcmp(name, "testsuite")) {
		const char *n = attr(a, "name");

		j->suites[j->depth] = n ? text_copy((const uint8_t *)n,
						    strlen(n), AL_TEST_NAME_MAX)
					: (j->suites[j->depth - 1]
					       ? strdup(j->suites[j->depth - 1])
					       : NULL);
		if ((n || j->suites[j->depth - 1]) && !j->suites[j->depth])
			junit_nomem(j);
	} else if (!strcmp(name, "testcase") && !j->case_depth) {
		open_case(j, a);
	} else if (j->case_depth && j->depth == j->case_depth + 1) {
		open_child(j, name, a);
	}
}

static void close_case(struct junit *j)
{
	if (j->tc.status != AL_TEST_PASSED && !j->tc.message && j->text_len) {
		j->tc.message = text_copy((const uint8_t *)j->text, j->text_len,
					  AL_TEST_MESSAGE_MAX);
		if (!j->tc.message)
			junit_nomem(j);
	}
	j->case_depth = 0;
	j->text_depth = 0;
	j->text_len = 0;
	if (!j->err && add_case(j->out, &j->tc) < 0)
		junit_nomem(j);
	case_release(&j->tc);
}

static void XMLCALL junit_end(void *ud, const XML_Char *name)
{
	struct junit *j = ud;

	(void)name;
	if (j->depth <= AL_REPORT_DEPTH_MAX) {
		free(j->suites[j->depth]);
		j->suites[j->depth] = NULL;
	}
	if (j->case_depth && j->depth == j->case_depth)
		close_case(j);
	else if (j->text_depth == j->depth)
		j->text_depth = 0;
	j->depth--;
}

static void XMLCALL junit_text(void *ud, const XML_Char *s, int len)
{
	struct junit *j = ud;
	size_t room = sizeof(j->text) - j->text_len;
	size_t n = len > 0 ? (size_t)len : 0;

	if (!j->text_depth || j->depth < j->text_depth)
		return;
	n = n < room ? n : room;
	memcpy(j->text + j->text_len, s, n);
	j->text_len += n;
}

/* A DTD could declare entities (billion laughs, external files): none
 * is accepted, so nothing is ever expanded. */
static void XMLCALL junit_doctype(void *ud, const XML_Char *name,
				  const XML_Char *sys, const XML_Char *pub,
				  int internal)
{
	(void)name, (void)sys, (void)pub, (void)internal;
	junit_stop(ud, "a DOCTYPE (DTD, entities) is not accepted");
}

static void XMLCALL junit_entity(void *ud, const XML_Char *name, int pe,
				 const XML_Char *value, int len,
				 const XML_Char *base, const XML_Char *sys,
				 const XML_Char *pub, const XML_Char *notation)
{
	(void)name, (void)pe, (void)value, (void)len, (void)base;
	(void)sys, (void)pub, (void)notation;
	junit_stop(ud, "an entity declaration is not accepted");
}

static void junit_setup(struct junit *j)
{
	XML_SetUserData(j->p, j);
	XML_SetElementHandler(j->p, junit_start, junit_end);
	XML_SetCharacterDataHandler(j->p, junit_text);
	XML_SetStartDoctypeDeclHandler(j->p, junit_doctype);
	XML_SetEntityDeclHandler(j->p, junit_entity);
	XML_SetParamEntityParsing(j->p, XML_PARAM_ENTITY_PARSING_NEVER);
}

static void junit_release(struct junit *j)
{
	for (size_t i = 0; i <= AL_REPORT_DEPTH_MAX; i++)
		free(j->suites[i]);
	case_release(&j->tc);
	if (j->p)
		XML_ParserFree(j->p);
}

static int parse_junit(uint32_t index, const uint8_t *p, size_t n,
		       struct al_report_out *out)
{
	struct junit j = {.out = out, .index = index};
	enum XML_Status st = XML_STATUS_OK;
	size_t off = 0;

	j.p = XML_ParserCreate(NULL);
	if (!j.p)
		return -ENOMEM;
	junit_setup(&j);
	do {
		size_t k = n - off < XML_CHUNK ? n - off : XML_CHUNK;

		st =
		    XML_Parse(j.p, (const char *)p + off, (int)k, off + k == n);
		off += k;
	} while (st == XML_STATUS_OK && off < n);
	if (st != XML_STATUS_OK && !j.refused && !j.err)
		al_report_problem(out, index,
				  "not well-formed XML at line "
				  "%lu: %s",
				  (unsigned long)XML_GetCurrentLineNumber(j.p),
				  XML_ErrorString(XML_GetErrorCode(j.p)));
	else if (st == XML_STATUS_OK && !j.root_seen)
		al_report_problem(out, index, "no XML element");
	junit_release(&j);
	return j.err;
}

/* --- TAP ------------------------------------------------------------------ */

struct tap {
	struct al_report_out *out;
	uint32_t index;		   /* the report's */
	uint64_t seen;		   /* test lines read */
	uint64_t planned;	   /* the plan's N */
	bool has_plan;		   /* a plan line was read */
	bool bailed;		   /* "Bail out!" was read */
	bool in_yaml;		   /* inside a TAP 13 YAML block */
	struct al_test_case *last; /* the record the YAML block is of */
	size_t last_i;		   /* its index in out->tests */
	char yaml[AL_TEST_MESSAGE_MAX + 4]; /* the block, for its message */
	size_t yaml_len;		    /* bytes in yaml */
};

static bool has_prefix(const char *s, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && !strncmp(s, pre, k);
}

static bool has_prefix_ci(const char *s, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && !strncasecmp(s, pre, k);
}

static size_t skip_blank(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* The first '#' not escaped with a backslash, or n. */
static size_t directive_at(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n)
			i++;
		else if (s[i] == '#')
			return i;
	}
	return n;
}

/* A description's escapes: "\\#" is '#', "\\\\" is '\\'. */
static void tap_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && (s[1] == '#' || s[1] == '\\'))
			s++;
		*o++ = *s;
	}
	*o = '\0';
}

/* "ok 3 - desc # SKIP why": its status, name and message. */
static int tap_test(struct tap *t, const char *s, size_t n, bool ok)
{
	struct al_test_case tc = {.report = t->index};
	size_t i = skip_blank(s, n, ok ? 2 : 6), d, e;
	char num[32];

	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	i = skip_blank(s, n, i);
	if (i < n && s[i] == '-')
		i = skip_blank(s, n, i + 1);
	d = i + directive_at(s + i, n - i);
	for (e = d; e > i && (s[e - 1] == ' ' || s[e - 1] == '\t'); e--)
		;
	tc.status = ok ? AL_TEST_PASSED : AL_TEST_FAILED;
	if (d < n) {
		size_t k = skip_blank(s, n, d + 1);
		bool skip = has_prefix_ci(s + k, n - k, "skip");
		bool todo = has_prefix_ci(s + k, n - k, "todo");

		if (skip || (todo && !ok))
			tc.status = AL_TEST_SKIPPED;
		if ((skip || todo) &&
		    !(tc.message = text_copy((const uint8_t *)s + k, n - k,
					     AL_TEST_MESSAGE_MAX)))
			return -ENOMEM;
	}
	t->seen++;
	snprintf(num, sizeof(num), "test %llu", (unsigned long long)t->seen);
	tc.name =
	    e > i ? text_copy((const uint8_t *)s + i, e - i, AL_TEST_NAME_MAX)
		  : strdup(num);
	if (!tc.name) {
		case_release(&tc);
		return -ENOMEM;
	}
	tap_unescape(tc.name);
	t->last_i = t->out->n_tests;
	if (add_case(t->out, &tc) < 0)
		return -ENOMEM;
	t->last =
	    t->out->n_tests > t->last_i ? &t->out->tests[t->last_i] : NULL;
	return 0;
}

/* "1..N" or "1..0 # SKIP why". */
static void tap_plan(struct tap *t, const char *s, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 3; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		v = v < UINT64_MAX / 10 ? v * 10 + (uint64_t)(s[i] - '0') : v;
	if (t->has_plan)
		al_report_problem(t->out, t->index, "more than one plan");
	t->has_plan = true;
	t->planned = v;
}

/* The end of a YAML block: its text is a failed test's message, and
 * node's `duration_ms` its time. */
static int tap_yaml_end(struct tap *t)
{
	const char *dur = NULL;
	struct al_test_case *tc = t->last;

	t->in_yaml = false;
	if (!tc)
		return 0;
	t->yaml[t->yaml_len] = '\0';
	dur = strstr(t->yaml, "duration_ms:");
	if (dur) {
		double ms = strtod(dur + 12, NULL);

		tc->time_ms = isfinite(ms) && ms >= 0 && ms <= TIME_S_MAX * 1000
				  ? (uint64_t)(ms + 0.5)
				  : 0;
	}
	if (tc->status == AL_TEST_FAILED && !tc->message && t->yaml_len) {
		uint64_t before = al_report_record_bytes(tc);
		uint64_t room = t->out->max_bytes - t->out->bytes;

		/* the record is kept already: its message fits what is left */
		tc->message =
		    text_copy((const uint8_t *)t->yaml, t->yaml_len,
			      room < AL_TEST_MESSAGE_MAX ? (size_t)room
							 : AL_TEST_MESSAGE_MAX);
		if (!tc->message)
			return -ENOMEM;
		t->out->bytes += al_report_record_bytes(tc) - before;
	}
	return 0;
}

static void tap_yaml_line(struct tap *t, const char *s, size_t n)
{
	size_t room = sizeof(t->yaml) - 1 - t->yaml_len;
	size_t i = skip_blank(s, n, 0);

	n -= i;
	n = n + 1 < room ? n : (room ? room - 1 : 0);
	memcpy(t->yaml + t->yaml_len, s + i, n);
	t->yaml_len += n;
	if (t->yaml_len + 1 < sizeof(t->yaml))
		t->yaml[t->yaml_len++] = '\n';
}

/* "Bail out! why": the run stopped; an error record says so. */
static int tap_bail(struct tap *t, const char *s, size_t n)
{
	struct al_test_case tc = {.report = t->index, .status = AL_TEST_ERROR};
	size_t i = skip_blank(s, n, 0);

	t->bailed = true;
	tc.name = strdup("Bail out!");
	tc.message = i < n ? text_copy((const uint8_t *)s + i, n - i,
				       AL_TEST_MESSAGE_MAX)
			   : NULL;
	if (!tc.name || (i < n && !tc.message)) {
		case_release(&tc);
		return -ENOMEM;
	}
	al_report_problem(t->out, t->index, "bailed out after %llu tests",
			  (unsigned long long)t->seen);
	return add_case(t->out, &tc);
}

static int tap_line(struct tap *t, const char *s, size_t n)
{
	size_t i = skip_blank(s, n, 0);

	if (t->in_yaml) {
		if (i && has_prefix(s + i, n - i, "..."))
			return tap_yaml_end(t);
		tap_yaml_line(t, s, n);
		return 0;
	}
	if (i && has_prefix(s + i, n - i, "---")) {
		t->in_yaml = true;
		t->yaml_len = 0;
		return 0;
	}
	if (i) /* a subtest's line: its parent's line sums it up */
		return 0;
	t->last = NULL;
	if (has_prefix(s, n, "ok") && (n == 2 || s[2] == ' ' || s[2] == '\t'))
		return tap_test(t, s, n, true);
	if (has_prefix(s, n, "not ok") &&
	    (n == 6 || s[6] == ' ' || s[6] == '\t'))
		return tap_test(t, s, n, false);
	if (has_prefix(s, n, "1..") && n > 3 && s[3] >= '0' && s[3] <= '9')
		tap_plan(t, s, n);
	else if (has_prefix(s, n, "Bail out!"))
		return tap_bail(t, s + 9, n - 9);
	return 0;
}

static int parse_tap(uint32_t index, const uint8_t *p, size_t n,
		     struct al_report_out *out)
{
	struct tap t = {.out = out, .index = index};
	const char *s = (const char *)p, *end = s + n;
	int r = 0;

	while (s < end && r == 0 && !t.bailed) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = (size_t)((nl ? nl : end) - s);

		if (len && s[len - 1] == '\r')
			len--;
		r = tap_line(&t, s, len);
		s = nl ? nl + 1 : end;
	}
	if (r == 0 && t.in_yaml)
		r = tap_yaml_end(&t);
	if (r < 0 || t.bailed)
		return r;
	if (!t.has_plan && !t.seen)
		al_report_problem(out, index, "no TAP plan or test line");
	else if (!t.has_plan)
		al_report_problem(out, index,
				  "no plan (1..N): the run may "
				  "have stopped early (%llu tests read)",
				  (unsigned long long)t.seen);
	else if (t.planned != t.seen)
		al_report_problem(out, index, "planned %llu tests, read %llu",
				  (unsigned long long)t.planned,
				  (unsigned long long)t.seen);
	return 0;
}

/* --- the entry point ---------------------------------------------------------
 */

int al_report_parse(enum al_report_format format, uint32_t index,
		    const uint8_t *p, size_t n, struct al_report_out *out)
{
	uint64_t dropped = out->dropped;
	int r;

	if (n > AL_REPORT_MAX_BYTES) {
		al_report_problem(out, index, "larger than %u bytes",
				  AL_REPORT_MAX_BYTES);
		return 0;
	}
	r = format == AL_REPORT_TAP ? parse_tap(index, p, n, out)
				    : parse_junit(index, p, n, out);
	if (r == 0 && out->dropped > dropped)
		al_report_problem(out, index,
				  "%llu test records not kept "
				  "(past %zu records or %llu bytes); counted",
				  (unsigned long long)(out->dropped - dropped),
				  out->max_tests,
				  (unsigned long long)out->max_bytes);
	return r;
}
