/* report.c: a grader's report over a results file (report.h).
 *
 * Results are read one line at a time with a cap per line (a result's
 * JSON is at most 4/3 of AL_RESULT_MAX_BYTES); each is kept in memory with
 * the outputs of every step but its first failing one dropped, so a class
 * of thousands costs little. Jobs (optional) are kept only for their
 * expected outputs, looked up by id. Every byte from a result is the
 * job's: escaped for HTML, and defused for spreadsheets in CSV.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

#define LINE_MAX_BYTES ((size_t)AL_RESULT_MAX_BYTES / 3 * 4 + 4096)
#define SHOW_BYTES 4096u  /* of an output shown in the page */
#define DIFF_CONTEXT 2    /* lines around the first difference */
#define TESTS_MAX 256     /* columns of the pass table */
#define CASES_SHOWN    50 /* not-passed report tests listed per submission */

struct sub {
	struct al_result res; /* outputs kept only for the failed step */
	size_t failed;	      /* al_result_failed_step() */
	struct al_job job;    /* its job when known (expected output) */
	bool has_job;	      /* job is set */
};

struct report {
	struct sub *subs; /* in file order */
	size_t n, cap;	  /* used, allocated */
	size_t *order;	  /* subs indices sorted by id (index_subs) */
	bool keep;	  /* keep every step's outputs (printing) */
	char *err;	  /* message buffer */
	size_t errlen;	  /* its size */
};

static int fail(struct report *rp, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct report *rp, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rp->err, rp->errlen, fmt, ap);
	va_end(ap);
	return r;
}

/* Read one line into *buf (grown up to LINE_MAX_BYTES): its length, -1 at
 * the end, -E2BIG for a longer line (skipped), -ENOMEM. */
static long read_line(FILE *f, char **buf, size_t *cap)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (n + 1 >= LINE_MAX_BYTES) {
			while ((c = getc(f)) != EOF && c != '\n')
				;
			return -E2BIG;
		}
		if (n + 1 >= *cap) {
			size_t nc = *cap ? *cap * 2 : 4096;
			char *nb = realloc(*buf, nc);

			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = nc;
		}
		(*buf)[n++] = (char)c;
	}
	if (c == EOF && n == 0)
		return -1;
	if (*cap == 0 && !(*buf = malloc(*cap = 1)))
		return -ENOMEM;
	(*buf)[n] = '\0';
	return (long)n;
}

/* Each line of `path` to fn(line, len, ctx); blank lines skipped. */
static int each_line(struct report *rp, const char *path,
		     int (*fn)(struct report *, const char *, size_t, size_t),
		     bool all)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, no = 0;
	long n;
	int r = 0;

	if (!f)
		return fail(rp, -errno, "%s: %s", path, strerror(errno));
	while ((n = read_line(f, &buf, &cap)) != -1) {
		no++;
		if (n == -ENOMEM) {
			r = -ENOMEM;
			break;
		}
		if (n == -E2BIG) {
			if (!all)
				continue; /* a job we cannot use: no diff */
			r = fail(rp, -E2BIG, "%s:%zu: line over %zu bytes",
				 path, no, LINE_MAX_BYTES);
			break;
		}
		if (n == 0)
			continue;
		r = fn(rp, buf, (size_t)n, no);
		if (r < 0)
			break;
	}
	free(buf);
	fclose(f);
	return r;
}

/* Keep a step's outputs only where the report shows them. */
static void slim(struct sub *s)
{
	for (size_t i = 0; i < s->res.n_steps; i++) {
		struct al_step_result *sr = &s->res.steps[i];

		if (i == s->failed)
			continue;
		free(sr->stdout_.data);
		free(sr->stderr_.data);
		sr->stdout_ = (struct al_blob){0};
		sr->stderr_ = (struct al_blob){0};
	}
}

static int add_result(struct report *rp, const char *line, size_t len,
		      size_t no)
{
	struct al_diags d;
	struct sub *s;
	char msg[512];

	if (rp->n == rp->cap) {
		size_t nc = rp->cap ? rp->cap * 2 : 64;
		struct sub *ns = realloc(rp->subs, nc * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		rp->subs = ns;
		rp->cap = nc;
	}
	s = &rp->subs[rp->n];
	memset(s, 0, sizeof(*s));
	al_diags_init(&d);
	if (al_result_from_json(line, len, &s->res, &d) < 0) {
		al_diags_format(&d, msg, sizeof(msg));
		return fail(rp, -EINVAL, "results line %zu: %s", no, msg);
	}
	s->failed = al_result_failed_step(&s->res);
	if (!rp->keep)
		slim(s);
	rp->n++;
	return 0;
}

/* Submissions by id, for the jobs file's lookups: rp->order sorted. */
static int cmp_sub(const void *a, const void *b, void *ctx)
{
	const struct sub *s = ctx;
	const char *x = s[*(const size_t *)a].res.id;
	const char *y = s[*(const size_t *)b].res.id;

	return strcmp(x ? x : "", y ? y : "");
}

static struct sub *find_sub(struct report *rp, const char *id)
{
	size_t lo = 0, hi = rp->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct sub *s = &rp->subs[rp->order[mid]];
		int c = strcmp(id, s->res.id ? s->res.id : "");

		if (c == 0) {
			/* the first in file order of that id without a job */
			while (mid > 0 && !strcmp(id, rp->subs[rp->order[mid - 1]]
							  .res.id ?: ""))
				mid--;
			for (; mid < rp->n; mid++) {
				s = &rp->subs[rp->order[mid]];
				if (strcmp(id, s->res.id ? s->res.id : ""))
					return NULL;
				if (!s->has_job)
					return s;
			}
			return NULL;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* A job line: kept (its steps' expected outputs, not its files) for the
 * submission of its id. */
static int add_job(struct report *rp, const char *line, size_t len,
		   size_t no)
{
	struct al_job job = {0};
	struct al_diags d;
	struct sub *s;

	(void)no;
	al_diags_init(&d);
	if (al_job_from_json(line, len, &job, &d) < 0)
		return 0; /* an RJ line: its result says why */
	s = job.id ? find_sub(rp, job.id) : NULL;
	if (!s) {
		al_job_release(&job);
		return 0;
	}
	for (size_t i = 0; i < job.n_files; i++) {
		free(job.files[i].path);
		free(job.files[i].content.data);
	}
	free(job.files);
	job.files = NULL;
	job.n_files = 0;
	s->job = job;
	s->has_job = true;
	return 0;
}

/* Sort the submissions by id for add_job. */
static int index_subs(struct report *rp)
{
	rp->order = malloc((rp->n ? rp->n : 1) * sizeof(*rp->order));
	if (!rp->order)
		return -ENOMEM;
	for (size_t i = 0; i < rp->n; i++)
		rp->order[i] = i;
	qsort_r(rp->order, rp->n, sizeof(*rp->order), cmp_sub, rp->subs);
	return 0;
}

/* --- text --------------------------------------------------------------- */

/* Code points a reader cannot see or that reorder what follows: every
 * format character (Unicode's Cf: LRM, RLM, ALM, the embeddings,
 * overrides and isolates, zero-width space and joiners, word joiner,
 * BOM, soft hyphen, tags, ...), the line and paragraph separators
 * U+2028/2029, and the blank fillers (CGJ, Hangul and Khmer fillers,
 * Mongolian selectors). Ranges, sorted, from Unicode 15. */
static const uint32_t invisible_cps[][2] = {
    {0xad, 0xad},	{0x34f, 0x34f},	    {0x600, 0x605},
    {0x61c, 0x61c},	{0x6dd, 0x6dd},	    {0x70f, 0x70f},
    {0x890, 0x891},	{0x8e2, 0x8e2},	    {0x115f, 0x1160},
    {0x17b4, 0x17b5},	{0x180b, 0x180f},   {0x200b, 0x200f},
    {0x2028, 0x202e},	{0x2060, 0x2064},   {0x2066, 0x206f},
    {0x3164, 0x3164},	{0xfeff, 0xfeff},   {0xffa0, 0xffa0},
    {0xfff9, 0xfffb},	{0x110bd, 0x110bd}, {0x110cd, 0x110cd},
    {0x13430, 0x1343f}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a},
    {0xe0001, 0xe0001}, {0xe0020, 0xe007f},
};

/* The code point of the valid UTF-8 sequence p[0..len). */
static uint32_t utf8_cp(const uint8_t *p, size_t len)
{
	static const uint8_t lead[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = p[0] & lead[len];

	for (size_t i = 1; i < len; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

static bool invisible(const uint8_t *p, size_t len)
{
	uint32_t cp = utf8_cp(p, len);

	for (size_t i = 0; i < sizeof(invisible_cps) / sizeof(*invisible_cps);
	     i++)
		if (cp >= invisible_cps[i][0] && cp <= invisible_cps[i][1])
			return true;
	return false;
}

/* Bytes as HTML text: escaped; invalid UTF-8, controls, bidirectional and
 * invisible characters (invisible_cps) as \xNN, as the text output shows
 * them (al_cli_utf8_printable). */
static void html_bytes(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		size_t u = c >= 0x80 ? al_cli_utf8_printable(p + i, n - i) : 0;

		if (u && invisible(p + i, u))
			u = 0;

		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&#39;", f);
		else if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f))
			fputc(c, f);
		else if (u) {
			fwrite(p + i, 1, u, f);
			i += u - 1;
		} else
			fprintf(f, "\\x%02x", c);
	}
}

static void html_str(FILE *f, const char *s)
{
	if (s)
		html_bytes(f, (const uint8_t *)s, strlen(s));
}

static void html_blob(FILE *f, const struct al_blob *b)
{
	html_bytes(f, b->data, b->len < SHOW_BYTES ? b->len : SHOW_BYTES);
	if (b->len > SHOW_BYTES)
		fprintf(f, "\n... (%zu more bytes)", b->len - SHOW_BYTES);
}

/* A CSV cell: quoted, quotes doubled, a formula's first byte defused. */
static void csv_cell(FILE *f, const uint8_t *p, size_t n, bool last)
{
	fputc('"', f);
	if (n && strchr("=+-@\t\r", p[0]))
		fputc('\'', f);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"')
			fputc('"', f);
		if (p[i] != '\0')
			fputc(p[i], f);
	}
	fputc('"', f);
	fputc(last ? '\n' : ',', f);
}

static void csv_str(FILE *f, const char *s, bool last)
{
	csv_cell(f, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0, last);
}

static void csv_num(FILE *f, unsigned long long v, bool last)
{
	fprintf(f, "%llu%c", v, last ? '\n' : ',');
}

/* --- what a result says --------------------------------------------------- */

static const char *short_name(enum al_verdict v)
{
	static const char *const names[AL_VERDICT_COUNT] = {
	    [AL_VERDICT_NONE] = "-",	       [AL_VERDICT_ACCEPTED] = "AC",
	    [AL_VERDICT_WRONG_ANSWER] = "WA",  [AL_VERDICT_COMPILE_ERROR] = "CE",
	    [AL_VERDICT_TIME_LIMIT] = "TLE",   [AL_VERDICT_MEMORY_LIMIT] = "MLE",
	    [AL_VERDICT_RUNTIME_ERROR] = "RE", [AL_VERDICT_OUTPUT_LIMIT] = "OLE",
	    [AL_VERDICT_INTERNAL_ERROR] = "IE", [AL_VERDICT_SKIPPED] = "skip",
	};
	return (unsigned)v < AL_VERDICT_COUNT ? names[v] : "?";
}

/* The compile step that failed, or NULL. */
static const struct al_step_result *compile_error(const struct al_result *r)
{
	for (size_t i = 0; i < r->n_steps; i++)
		if (r->steps[i].status == AL_CE)
			return &r->steps[i];
	return NULL;
}

static void count_tests(const struct al_result *r, size_t *passed,
			size_t *tests)
{
	*passed = *tests = 0;
	for (size_t i = 0; i < r->n_steps; i++) {
		if (r->steps[i].verdict == AL_VERDICT_NONE)
			continue;
		(*tests)++;
		*passed += r->steps[i].verdict == AL_VERDICT_ACCEPTED;
	}
}

/* The verdict as people read it, with its signal. */
static void verdict_text(const struct al_result *r, char *buf, size_t size)
{
	if (r->verdict == AL_VERDICT_NONE)
		snprintf(buf, size, "%s", al_status_name(r->status));
	else
		al_verdict_text(r->verdict, al_result_verdict_signal(r), buf,
				size);
}

/* --- CSV -------------------------------------------------------------------- */

/* The verdict's token as results carry it (`wrong_answer`; "" for an
 * ungraded job: its status says it), for programs. */
static const char *verdict_token(enum al_verdict v)
{
	return v == AL_VERDICT_NONE ? "" : al_verdict_name(v);
}

/* The CSVs: `status` and `verdict` are the result's own codes and tokens
 * (one vocabulary with the JSON results, issue 37), `verdict_text` the
 * words the summary and the HTML report print. */
static int write_csv(const struct report *rp, FILE *sf, FILE *tf)
{
	fputs("id,status,verdict,verdict_text,judge0_status,score,max_score,"
	      "tests_passed,tests,first_failed_test,compile_output\n",
	      sf);
	fputs("id,test,name,status,verdict,verdict_text,judge0_status,wall_ms,"
	      "cpu_ms,max_rss_kb,score\n",
	      tf);
	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;
		const struct al_step_result *ce = compile_error(r);
		size_t failed = rp->subs[i].failed, passed, tests, t = 0;
		char v[64];

		count_tests(r, &passed, &tests);
		verdict_text(r, v, sizeof(v));
		csv_str(sf, r->id, false);
		csv_str(sf, al_status_name(r->status), false);
		csv_str(sf, verdict_token(r->verdict), false);
		csv_str(sf, v, false);
		csv_num(sf, (unsigned long long)al_verdict_judge0(
				r->verdict, al_result_verdict_signal(r)),
			false);
		csv_num(sf, r->score, false);
		csv_num(sf, r->max_score, false);
		csv_num(sf, passed, false);
		csv_num(sf, tests, false);
		csv_str(sf,
			failed < r->n_steps && r->steps[failed].name
			    ? r->steps[failed].name
			    : "",
			false);
		csv_cell(sf, ce ? ce->compile_output.data : NULL,
			 ce ? ce->compile_output.len : 0, true);
		for (size_t k = 0; k < r->n_steps; k++) {
			const struct al_step_result *s = &r->steps[k];

			if (s->verdict == AL_VERDICT_NONE)
				continue;
			al_verdict_text(s->verdict, s->signal, v, sizeof(v));
			csv_str(tf, r->id, false);
			csv_num(tf, ++t, false);
			csv_str(tf, s->name, false);
			csv_str(tf, al_status_name(s->status), false);
			csv_str(tf, verdict_token(s->verdict), false);
			csv_str(tf, v, false);
			csv_num(tf, (unsigned long long)al_verdict_judge0(
					s->verdict, s->signal),
				false);
			csv_num(tf, s->wall_ms, false);
			csv_num(tf, s->cpu_ms, false);
			csv_num(tf, s->max_rss_kb, false);
			csv_num(tf, s->score, true);
		}
	}
	return ferror(sf) || ferror(tf) ? -EIO : 0;
}

/* cases.csv: every test record of every step's test reports. */
static int write_cases(const struct report *rp, FILE *f)
{
	fputs("id,step,report,suite,name,status,time_ms,message\n", f);
	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;

		for (size_t k = 0; k < r->n_steps; k++) {
			const struct al_step_result *s = &r->steps[k];

			for (size_t c = 0; c < s->n_tests; c++) {
				const struct al_test_case *t = &s->tests[c];

				csv_str(f, r->id, false);
				csv_num(f, k, false);
				csv_num(f, t->report, false);
				csv_str(f, t->suite, false);
				csv_str(f, t->name, false);
				csv_str(f, al_test_status_name(t->status),
					false);
				csv_num(f, t->time_ms, false);
				csv_str(f, t->message, true);
			}
		}
	}
	return ferror(f) ? -EIO : 0;
}

/* --- HTML ----------------------------------------------------------------- */

static const char css[] =
    "body{font:14px/1.4 sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    "th{background:#f0f0f0}td.n{text-align:right}"
    ".AC{background:#c8f0c8}.WA{background:#f8c8c8}.CE{background:#f0d8a0}"
    ".TLE{background:#c8d8f8}.MLE{background:#e0c8f0}.RE{background:#f8b0a0}"
    ".OLE{background:#f0f0a0}.IE{background:#ddd}.skip{color:#999}"
    "pre{background:#f8f8f8;border:1px solid #ddd;padding:6px;"
    "white-space:pre-wrap;max-width:60em}"
    ".del{background:#fdd}.ins{background:#dfd}";

static void count_row(FILE *f, const char *text, size_t n)
{
	fputs("<tr><td>", f);
	html_str(f, text);
	fprintf(f, "</td><td class=\"n\">%zu</td></tr>\n", n);
}

/* Submissions by verdict (runtime errors by signal), in the verdicts'
 * order, then those without a verdict by status. */
static void html_counts(const struct report *rp, FILE *f)
{
	size_t by[AL_VERDICT_COUNT][128] = {{0}}; /* 10 KiB */
	size_t st[AL_STATUS_COUNT] = {0};
	char text[64];

	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;
		int sig = al_result_verdict_signal(r);

		if (r->verdict != AL_VERDICT_NONE &&
		    (unsigned)r->verdict < AL_VERDICT_COUNT)
			by[r->verdict][sig > 0 && sig < 128 ? sig : 0]++;
		else if ((unsigned)r->status < AL_STATUS_COUNT)
			st[r->status]++;
	}
	fputs("<h2>Verdicts</h2>\n<table id=\"counts\"><tr><th>verdict</th>"
	      "<th>submissions</th></tr>\n",
	      f);
	for (int v = 1; v < AL_VERDICT_COUNT; v++)
		for (int g = 0; g < 128; g++)
			if (by[v][g]) {
				al_verdict_text(v, g, text, sizeof(text));
				count_row(f, text, by[v][g]);
			}
	for (int k = 0; k < AL_STATUS_COUNT; k++)
		if (st[k]) {
			snprintf(text, sizeof(text), "status %s",
				 al_status_name(k));
			count_row(f, text, st[k]);
		}
	fprintf(f, "<tr><th>total</th><td class=\"n\">%zu</td></tr>\n</table>\n",
		rp->n);
}

/* The pass table: a row per submission, a column per test. */
static void html_table(const struct report *rp, FILE *f)
{
	size_t cols = 0;

	for (size_t i = 0; i < rp->n; i++) {
		size_t p, t;

		count_tests(&rp->subs[i].res, &p, &t);
		cols = t > cols ? t : cols;
	}
	cols = cols > TESTS_MAX ? TESTS_MAX : cols;
	fputs("<h2>Tests</h2>\n<table id=\"tests\"><tr><th>submission</th>"
	      "<th>verdict</th><th>score</th>",
	      f);
	for (size_t c = 0; c < cols; c++)
		fprintf(f, "<th>%zu</th>", c + 1);
	fputs("</tr>\n", f);
	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;
		size_t c = 0;
		char v[64];

		verdict_text(r, v, sizeof(v));
		fprintf(f, "<tr><td><a href=\"#s%zu\">", i);
		html_str(f, r->id);
		fprintf(f, "</a></td><td class=\"%s\">", short_name(r->verdict));
		html_str(f, v);
		fprintf(f, "</td><td class=\"n\">%llu/%llu</td>",
			(unsigned long long)r->score,
			(unsigned long long)r->max_score);
		for (size_t k = 0; k < r->n_steps && c < cols; k++) {
			const struct al_step_result *s = &r->steps[k];

			if (s->verdict == AL_VERDICT_NONE)
				continue;
			fprintf(f,
				"<td class=\"%s\" title=\"%llu ms, %llu KiB\">"
				"%s</td>",
				short_name(s->verdict),
				(unsigned long long)s->wall_ms,
				(unsigned long long)s->max_rss_kb,
				short_name(s->verdict));
			c++;
		}
		for (; c < cols; c++)
			fputs("<td></td>", f);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* Start of line `k` of b (0-based), or NULL past the end; *ret_len its
 * length without the newline. */
static const uint8_t *line_at(const struct al_blob *b, size_t k,
			      size_t *ret_len)
{
	const uint8_t *p = b->data, *end = b->data + b->len, *nl;

	if (!p)
		return NULL;
	for (; k > 0; k--) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return NULL;
		p = nl + 1;
	}
	if (p >= end)
		return NULL;
	nl = memchr(p, '\n', (size_t)(end - p));
	*ret_len = nl ? (size_t)(nl - p) : (size_t)(end - p);
	return p;
}

/* The first differing line of want and got, with context: "-" expected,
 * "+" got. */
static void html_diff(FILE *f, const struct al_blob *want,
		      const struct al_blob *got)
{
	size_t k = 0, na = 0, nb = 0, from;
	const uint8_t *a, *b;

	for (;; k++) {
		a = line_at(want, k, &na);
		b = line_at(got, k, &nb);
		if (!a || !b || na != nb || memcmp(a, b, na))
			break;
	}
	fprintf(f, "<p>first difference at line %zu</p>\n<pre class=\"diff\">",
		k + 1);
	from = k > DIFF_CONTEXT ? k - DIFF_CONTEXT : 0;
	for (size_t i = from; i < k; i++) {
		a = line_at(want, i, &na);
		fputs("  ", f);
		html_bytes(f, a, na);
		fputc('\n', f);
	}
	for (size_t i = k; i <= k + DIFF_CONTEXT; i++) {
		if ((a = line_at(want, i, &na))) {
			fputs("<span class=\"del\">- ", f);
			html_bytes(f, a, na < SHOW_BYTES ? na : SHOW_BYTES);
			fputs("</span>\n", f);
		}
	}
	for (size_t i = k; i <= k + DIFF_CONTEXT; i++) {
		if ((b = line_at(got, i, &nb))) {
			fputs("<span class=\"ins\">+ ", f);
			html_bytes(f, b, nb < SHOW_BYTES ? nb : SHOW_BYTES);
			fputs("</span>\n", f);
		}
	}
	fputs("</pre>\n", f);
}

/* A failed submission: its compile error, or its first failing test. */
/* The job's step that result step i ran. A `language` job as submitted
 * has no compile step: the worker put one first (al_job_expand_language),
 * so its result's steps are one ahead of the job's. NULL: none. */
static const struct al_step *job_step(const struct sub *s, size_t i)
{
	const struct al_result *r = &s->res;
	size_t shift = 0;

	if (!s->has_job)
		return NULL;
	if (s->job.language && r->n_steps == s->job.n_steps + 1 &&
	    r->steps[0].name && !strcmp(r->steps[0].name, "compile")) {
		shift = 1;
		for (size_t k = 0; k < s->job.n_steps; k++)
			shift &= !s->job.steps[k].compile;
	}
	if (i < shift || i - shift >= s->job.n_steps)
		return NULL;
	return &s->job.steps[i - shift];
}

static void html_detail(const struct sub *s, size_t i, FILE *f)
{
	const struct al_result *r = &s->res;
	const struct al_step_result *ce = compile_error(r), *st;
	const struct al_step *js;
	char v[64];

	verdict_text(r, v, sizeof(v));
	fprintf(f, "<h3 id=\"s%zu\">", i);
	html_str(f, r->id);
	fputs(": ", f);
	html_str(f, v);
	fputs("</h3>\n", f);
	if (r->error) {
		fputs("<p>error: ", f);
		html_str(f, r->error);
		fputs("</p>\n", f);
	}
	if (ce) {
		fprintf(f, "<p>compile step: ");
		if (ce->signal)
			fprintf(f, "killed by %s",
				al_signal_name(ce->signal)
				    ? al_signal_name(ce->signal)
				    : "a signal");
		else
			fprintf(f, "exit %d", ce->exit_code);
		fprintf(f, " after %llu ms; compiler output:</p>\n"
			   "<pre class=\"compile\">",
			(unsigned long long)ce->wall_ms);
		html_blob(f, &ce->compile_output);
		fputs("</pre>\n", f);
		return;
	}
	if (s->failed >= r->n_steps)
		return;
	st = &r->steps[s->failed];
	fprintf(f, "<p>step %zu", s->failed);
	if (st->name) {
		fputs(" (", f);
		html_str(f, st->name);
		fputc(')', f);
	}
	fprintf(f, ": %s", al_status_name(st->status));
	if (st->signal && al_signal_name(st->signal))
		fprintf(f, ", %s", al_signal_name(st->signal));
	else if (st->has_exit_code)
		fprintf(f, ", exit %d", st->exit_code);
	fprintf(f, ", %llu ms</p>\n", (unsigned long long)st->wall_ms);
	js = job_step(s, s->failed);
	if (st->checker_output.len) {
		fputs("<p>checker:</p>\n<pre class=\"checker\">", f);
		html_blob(f, &st->checker_output);
		fputs("</pre>\n", f);
	}
	if (js && js->expect.present && st->status == AL_OK)
		html_diff(f, &js->expect.stdout_, &st->stdout_);
	else if (st->stdout_.len) {
		fputs("<p>stdout:</p>\n<pre>", f);
		html_blob(f, &st->stdout_);
		fputs("</pre>\n", f);
	}
	if (st->stderr_.len) {
		fputs("<p>stderr:</p>\n<pre>", f);
		html_blob(f, &st->stderr_);
		fputs("</pre>\n", f);
	}
}

static void html_count_cells(FILE *f, const struct al_test_counts *c)
{
	fprintf(f,
		"<td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
		"<td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
		"<td class=\"n\">%llu</td>",
		(unsigned long long)c->total, (unsigned long long)c->passed,
		(unsigned long long)c->failed, (unsigned long long)c->error,
		(unsigned long long)c->skipped);
}

/* One submission's report tests that did not pass, and its reports'
 * problems. */
static void html_cases(FILE *f, const struct al_result *r, size_t i)
{
	size_t shown = 0;

	fprintf(f, "<h3 id=\"t%zu\">", i);
	html_str(f, r->id);
	fputs("</h3>\n", f);
	for (size_t k = 0; k < r->n_steps; k++)
		if (r->steps[k].reports_error) {
			fprintf(f, "<p>step %zu reports: ", k);
			html_str(f, r->steps[k].reports_error);
			fputs("</p>\n", f);
		}
	fputs("<table class=\"cases\"><tr><th>step</th><th>suite</th>"
	      "<th>test</th><th>status</th><th>ms</th><th>message</th></tr>\n",
	      f);
	for (size_t k = 0; k < r->n_steps; k++)
		for (size_t c = 0; c < r->steps[k].n_tests; c++) {
			const struct al_test_case *t = &r->steps[k].tests[c];

			if (t->status == AL_TEST_PASSED ||
			    shown++ >= CASES_SHOWN)
				continue;
			fprintf(f, "<tr><td class=\"n\">%zu</td><td>", k);
			html_str(f, t->suite);
			fputs("</td><td>", f);
			html_str(f, t->name);
			fprintf(f,
				"</td><td class=\"%s\">%s</td>"
				"<td class=\"n\">%llu</td><td><pre>",
				t->status == AL_TEST_SKIPPED ? "skip" : "WA",
				al_test_status_name(t->status),
				(unsigned long long)t->time_ms);
			html_str(f, t->message);
			fputs("</pre></td></tr>\n", f);
		}
	fputs("</table>\n", f);
	if (shown > CASES_SHOWN)
		fprintf(f, "<p>... and %zu more (cases.csv has them all)</p>\n",
			shown - CASES_SHOWN);
}

static bool reports_trouble(const struct al_result *r)
{
	for (size_t k = 0; k < r->n_steps; k++)
		if (r->steps[k].reports_error)
			return true;
	return false;
}

/* The test reports (JUnit XML, TAP) of the submissions that had any:
 * counts, then each one's tests that did not pass. */
static void html_reports(const struct report *rp, FILE *f)
{
	size_t any = 0;

	for (size_t i = 0; i < rp->n; i++)
		any += rp->subs[i].res.has_tests;
	if (!any)
		return;
	fputs("<h2>Test reports</h2>\n<table id=\"reports\"><tr>"
	      "<th>submission</th><th>tests</th><th>passed</th>"
	      "<th>failed</th><th>error</th><th>skipped</th></tr>\n",
	      f);
	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;

		if (!r->has_tests)
			continue;
		fprintf(f, "<tr><td><a href=\"#t%zu\">", i);
		html_str(f, r->id);
		fputs("</a></td>", f);
		html_count_cells(f, &r->test_counts);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	for (size_t i = 0; i < rp->n; i++) {
		const struct al_result *r = &rp->subs[i].res;

		if (r->has_tests &&
		    (r->test_counts.total != r->test_counts.passed ||
		     reports_trouble(r)))
			html_cases(f, r, i);
	}
}

static int write_html(const struct report *rp, FILE *f)
{
	time_t now = time(NULL);
	char when[64];

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	fprintf(f,
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		"<title>Airlock report</title><style>%s</style></head>\n"
		"<body>\n<h1>Airlock report</h1>\n<p>%zu submissions, %s</p>\n",
		css, rp->n, when);
	html_counts(rp, f);
	html_table(rp, f);
	html_reports(rp, f);
	fputs("<h2>Failures</h2>\n", f);
	for (size_t i = 0; i < rp->n; i++)
		if (rp->subs[i].res.verdict != AL_VERDICT_ACCEPTED)
			html_detail(&rp->subs[i], i, f);
	fputs("</body></html>\n", f);
	return ferror(f) ? -EIO : 0;
}

/* --- files ---------------------------------------------------------------- */

/* Open dir/name for writing, created 0644 (not following a symlink). */
static FILE *open_out(int dfd, const char *name)
{
	int fd = openat(dfd, name,
			O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
			0644);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

static int close_out(FILE *f, int r)
{
	if (f && fclose(f) != 0 && r == 0)
		r = -EIO;
	return r;
}

static void report_release(struct report *rp)
{
	for (size_t i = 0; i < rp->n; i++) {
		al_result_release(&rp->subs[i].res);
		al_job_release(&rp->subs[i].job);
	}
	free(rp->subs);
	free(rp->order);
}

static int write_all(struct report *rp, const char *dir)
{
	FILE *sf = NULL, *tf = NULL, *hf = NULL, *cf = NULL;
	int dfd, r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fail(rp, -errno, "%s: %s", dir, strerror(errno));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(rp, -errno, "%s: %s", dir, strerror(errno));
	sf = open_out(dfd, "submissions.csv");
	tf = open_out(dfd, "tests.csv");
	hf = open_out(dfd, "index.html");
	cf = open_out(dfd, "cases.csv");
	r = sf && tf && hf && cf ? 0 : -errno;
	if (r == 0)
		r = write_csv(rp, sf, tf);
	if (r == 0)
		r = write_cases(rp, cf);
	if (r == 0)
		r = write_html(rp, hf);
	r = close_out(sf, r);
	r = close_out(tf, r);
	r = close_out(hf, r);
	r = close_out(cf, r);
	close(dfd);
	if (r < 0)
		fail(rp, r, "%s: %s", dir, strerror(-r));
	return r;
}

int al_report_write(const char *results, const char *jobs, const char *dir,
		    char *err, size_t errlen)
{
	struct report rp = {.err = err, .errlen = errlen};
	int r;

	err[0] = '\0';
	r = each_line(&rp, results, add_result, true);
	if (r == 0 && jobs)
		r = index_subs(&rp);
	if (r == 0 && jobs)
		r = each_line(&rp, jobs, add_job, false);
	if (r == 0)
		r = write_all(&rp, dir);
	if (r == -ENOMEM && !err[0])
		fail(&rp, r, "out of memory");
	report_release(&rp);
	return r;
}

static int print_one(struct report *rp, const char *line, size_t len,
		     size_t no)
{
	int r = add_result(rp, line, len, no);

	if (r < 0)
		return r;
	rp->n--;
	al_cli_print_result(&rp->subs[rp->n].res, stdout, SHOW_BYTES);
	al_result_release(&rp->subs[rp->n].res);
	return 0;
}

int al_report_print(const char *results, char *err, size_t errlen)
{
	struct report rp = {.keep = true, .err = err, .errlen = errlen};
	int r;

	err[0] = '\0';
	r = each_line(&rp, results, print_one, true);
	free(rp.subs);
	return r;
}
