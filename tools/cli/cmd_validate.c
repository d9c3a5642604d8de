/* cmd_validate.c: `airlock validate`, check job files against the schema and
 * the effective config's policy (--config, $AIRLOCK_CONFIG or the system
 * config; the built-in policy when there is none): the same policy submit,
 * batch, run and serve apply (al_config_policy), without running anything.
 *
 * Input is untrusted: whatever the file holds, we never crash, never hold
 * more than a capped amount of it, and never echo its bytes (the library's
 * diagnostics are sanitised; we escape control bytes once more before they
 * reach a terminal).
 *
 * Format, decided by content, not by file name:
 *
 *  - JSONL when the first non-blank line is a complete JSON value and more
 *    non-blank lines follow it: each non-blank line is one job, blank lines
 *    are skipped, each line is capped at AL_JOB_MAX_BYTES.
 *  - Otherwise one JSON document (it may span lines), capped as a whole.
 *
 * A first non-blank line over the cap ends the file with one error: we
 * cannot tell which format it was meant to be.
 *
 * Output, one line per problem on stdout: `FILE:LINE: PATH: REASON`, or
 * `FILE:LINE: REASON` for a problem with the whole job; LINE is where the
 * job starts. `-v` adds `FILE:LINE: ok ID` for valid jobs, `-q` prints no
 * problems. Exit 0 all valid, 1 some job invalid, 2 a file could not be
 * read (the others are still checked) or usage error.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "results.h"

#define READ_CHUNK (64u << 10)

struct validate_opts {
	bool quiet;		      /* print no problems, exit code only */
	bool verbose;		      /* print `ok ID` for valid jobs */
	bool json;		      /* --json: one JSON object a line */
	const struct al_policy *policy; /* the effective config's */
};

/* Growable byte buffer, always NUL-terminated when data != NULL. */
struct buf {
	char *data;  /* malloc'd */
	size_t len;  /* bytes used, not counting the NUL */
	size_t size; /* bytes allocated */
};

/* Reads lines of any length while keeping at most a capped prefix. */
struct reader {
	FILE *f;		/* the input, not owned */
	char chunk[READ_CHUNK]; /* read-ahead */
	size_t pos;		/* next unread byte in chunk */
	size_t end;		/* bytes valid in chunk */
	unsigned long line;	/* 1-based number of the line last read */
};

/* One job's text and where it starts, for reporting. */
struct job_src {
	const char *file;   /* name to print */
	unsigned long line; /* line where the job starts */
};

static void buf_release(struct buf *b)
{
	free(b->data);
	*b = (struct buf){0};
}

/* Append n bytes; the caller has checked n against its cap. */
static int buf_append(struct buf *b, const void *p, size_t n)
{
	char *data;
	size_t size;

	if (b->len + n + 1 > b->size) {
		size = b->size ? b->size : 4096;
		while (size < b->len + n + 1)
			size *= 2;
		data = realloc(b->data, size);
		if (!data)
			return -ENOMEM;
		b->data = data;
		b->size = size;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static int reader_fill(struct reader *r)
{
	size_t n;

	errno = 0;
	n = fread(r->chunk, 1, sizeof(r->chunk), r->f);
	if (n == 0 && ferror(r->f))
		return errno ? -errno : -EIO;
	r->pos = 0;
	r->end = n;
	return n > 0;
}

/* Append the next line, without its '\n', to `out` as long as out->len stays
 * within `cap`; past that, skip to the end of the line and set *ret_over.
 * *ret_nl says whether the line ended in '\n' (not at EOF). Returns 1 for a
 * line, 0 at end of input, -errno. */
static int reader_line(struct reader *r, struct buf *out, size_t cap,
		       bool *ret_over, bool *ret_nl)
{
	bool any = false, over = false;
	int rc;

	*ret_nl = false;
	for (;;) {
		if (r->pos == r->end) {
			rc = reader_fill(r);
			if (rc < 0)
				return rc;
			if (rc == 0)
				break;
		}
		char *start = r->chunk + r->pos;
		char *nl = memchr(start, '\n', r->end - r->pos);
		size_t n = nl ? (size_t)(nl - start) : r->end - r->pos;

		any = true;
		if (!over && out->len + n > cap)
			over = true;
		if (!over) {
			rc = buf_append(out, start, n);
			if (rc < 0)
				return rc;
		}
		r->pos += n + (nl != NULL);
		if (nl) {
			*ret_nl = true;
			break;
		}
	}
	if (!any)
		return 0;
	r->line++;
	*ret_over = over;
	return 1;
}

static bool is_blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r", p[i]) || p[i] == '\0')
			return false;
	return true;
}

/* Is p[0..n) one complete JSON value (anything after it only white
 * space)? Decides JSONL vs one document. */
static bool is_complete_json(const char *p, size_t n)
{
	json_error_t err;
	json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);

	json_decref(v);
	return v != NULL;
}

/* Length of the printable UTF-8 character at p, 0 for a control byte (C0,
 * DEL, C1) or a byte that does not start valid UTF-8. */
static size_t printable_len(const unsigned char *p)
{
	size_t n;

	if (*p < 0x20 || *p == 0x7f)
		return 0;
	if (*p < 0x80)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
	if (p[0] == 0xc2 && p[1] < 0xa0) /* C1 controls */
		return 0;
	return al_utf8_valid(p, n) ? n : 0;
}

/* Print s with control bytes and invalid UTF-8 escaped as \xNN. */
static void put_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = printable_len(p);

		if (n == 0) {
			printf("\\x%02x", *p++);
			continue;
		}
		fwrite(p, 1, n, stdout);
		p += n;
	}
}

/* --json: one object a line; the reason is UTF-8-escaped by jansson. */
static void print_json(const struct job_src *src, const char *path,
		       const char *reason, const char *id)
{
	json_t *j = json_pack("{s:s, s:I}", "file", src->file, "line",
			      (json_int_t)src->line);

	if (reason) {
		json_object_set_new(j, "field", json_string(path));
		json_object_set_new(j, "reason", json_string(reason));
	} else {
		json_object_set_new(j, "ok", json_true());
		if (id)
			json_object_set_new(j, "id", json_string(id));
	}
	json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(j);
}

static void print_problem(const struct job_src *src, const char *path,
			  const char *reason, const struct validate_opts *o)
{
	if (o->json) {
		print_json(src, path, reason, NULL);
		return;
	}
	printf("%s:%lu: ", src->file, src->line);
	if (path[0]) {
		put_clean(path);
		fputs(": ", stdout);
	}
	put_clean(reason);
	putchar('\n');
}

static void print_diags(const struct job_src *src, const struct al_diags *d,
			const struct validate_opts *o)
{
	char more[64];

	for (size_t i = 0; i < d->n && i < AL_DIAGS_MAX; i++)
		print_problem(src, d->items[i].path, d->items[i].reason, o);
	snprintf(more, sizeof(more), "... and %zu more", d->dropped);
	if (d->dropped > 0)
		print_problem(src, "", more, o);
}

static void print_too_big(const struct job_src *src,
			  const struct validate_opts *o)
{
	char reason[64];

	if (o->quiet)
		return;
	snprintf(reason, sizeof(reason), "larger than %u bytes",
		 AL_JOB_MAX_BYTES);
	print_problem(src, "", reason, o);
}

/* Decode and policy-check one job; print what is wrong. Returns 1 valid,
 * 0 invalid, -ENOMEM. */
static int check_job(const struct job_src *src, const char *text, size_t len,
		     const struct validate_opts *o)
{
	struct al_job job = {0};
	struct al_diags d;
	int rc;

	al_diags_init(&d);
	rc = al_job_from_json(text, len, &job, &d);
	if (rc == 0) {
		al_diags_init(&d);
		rc = al_job_expand_language(&job, o->policy, &d);
		if (rc == 0)
			rc = al_job_check_policy(&job, o->policy, &d);
	}
	if (rc == -ENOMEM && d.n == 0)
		goto out;
	if (rc < 0 || d.n > 0 || d.dropped > 0) {
		if (!o->quiet && d.n == 0 && d.dropped == 0)
			print_problem(src, "", strerror(rc < 0 ? -rc : EINVAL),
				      o);
		if (!o->quiet)
			print_diags(src, &d, o);
		rc = 0;
		goto out;
	}
	if (o->verbose && !o->quiet && o->json)
		print_json(src, "", NULL, job.id);
	else if (o->verbose && !o->quiet)
		printf("%s:%lu: ok%s%s\n", src->file, src->line,
		       job.id ? " " : "", job.id ? job.id : "");
	rc = 1;
out:
	al_job_release(&job);
	return rc;
}

/* The rest of a JSONL file, one job per non-blank line. Returns the number
 * of invalid jobs or -errno. */
static int check_jsonl_rest(struct reader *r, const char *file,
			    const struct validate_opts *o)
{
	struct buf line = {0};
	bool over, nl;
	int rc, bad = 0;

	for (;;) {
		line.len = 0;
		rc = reader_line(r, &line, AL_JOB_MAX_BYTES, &over, &nl);
		if (rc <= 0)
			break;
		struct job_src src = {file, r->line};

		if (over) {
			print_too_big(&src, o);
			bad++;
			continue;
		}
		if (is_blank(line.data, line.len))
			continue;
		rc = check_job(&src, line.data ? line.data : "", line.len, o);
		if (rc < 0)
			break;
		bad += rc == 0;
	}
	buf_release(&line);
	return rc < 0 ? rc : bad;
}

/* Newlines standing in for blank lines, so that jansson's line numbers in a
 * document still match the file. */
static int put_newlines(struct buf *b, unsigned long n)
{
	int rc = 0;

	if (b->len + n > AL_JOB_MAX_BYTES)
		return -E2BIG;
	for (unsigned long i = 0; i < n && rc == 0; i++)
		rc = buf_append(b, "\n", 1);
	return rc;
}

/* A one-document file whose first lines are already read: `doc` holds
 * them; read the rest and check the whole. Returns invalid jobs or
 * -errno. */
static int check_document(struct reader *r, struct buf *doc, bool nl,
			  const struct job_src *src,
			  const struct validate_opts *o)
{
	bool over = false;
	int rc;

	while (nl) {
		if (doc->len + 1 > AL_JOB_MAX_BYTES)
			goto too_big;
		rc = buf_append(doc, "\n", 1);
		if (rc < 0)
			return rc;
		rc = reader_line(r, doc, AL_JOB_MAX_BYTES, &over, &nl);
		if (rc < 0)
			return rc;
		if (rc == 0)
			break;
		if (over)
			goto too_big;
	}
	rc = check_job(src, doc->data ? doc->data : "", doc->len, o);
	return rc < 0 ? rc : rc == 0;
too_big:
	print_too_big(src, o);
	return 1;
}

/* The first two non-blank lines decide the format. */
struct head {
	struct buf first;	 /* first non-blank line */
	struct buf second;	 /* second non-blank line */
	unsigned long line[2];	 /* their line numbers, 0 = none */
	bool over[2];		 /* over the cap */
	bool nl[2];		 /* ended in '\n' */
	unsigned long blanks[2]; /* blank lines before each */
};

static int read_head(struct reader *r, struct head *h)
{
	for (int i = 0; i < 2; i++) {
		struct buf *b = i == 0 ? &h->first : &h->second;

		for (;;) {
			b->len = 0;
			int rc = reader_line(r, b, AL_JOB_MAX_BYTES,
					     &h->over[i], &h->nl[i]);
			if (rc < 0)
				return rc;
			if (rc == 0)
				return 0;
			if (h->over[i] || !is_blank(b->data, b->len))
				break;
			h->blanks[i]++;
		}
		h->line[i] = r->line;
		if (h->over[0])
			return 0;
	}
	return 0;
}

/* Append one line to a document being rebuilt, keeping it within the cap. */
static int doc_put(struct buf *doc, const struct buf *line)
{
	if (doc->len + line->len > AL_JOB_MAX_BYTES)
		return -E2BIG;
	return line->len ? buf_append(doc, line->data, line->len) : 0;
}

/* Rebuild the start of a document from the head: returns 0, -E2BIG (over
 * the cap) or -ENOMEM. */
static int head_to_doc(const struct head *h, struct buf *doc)
{
	int rc = put_newlines(doc, h->blanks[0]);

	if (rc == 0)
		rc = doc_put(doc, &h->first);
	if (rc == 0 && h->line[1] && h->over[1])
		rc = -E2BIG;
	if (rc == 0 && h->line[1])
		rc = put_newlines(doc, 1 + h->blanks[1]);
	if (rc == 0 && h->line[1])
		rc = doc_put(doc, &h->second);
	return rc;
}

/* A JSONL file: check the two lines of the head, then the rest. Returns
 * invalid jobs or -errno. */
static int check_jsonl(struct reader *r, const struct head *h, const char *file,
		       const struct validate_opts *o)
{
	struct job_src src[2] = {{file, h->line[0]}, {file, h->line[1]}};
	int rc, bad = 0;

	rc = check_job(&src[0], h->first.data, h->first.len, o);
	if (rc < 0)
		return rc;
	bad += rc == 0;
	if (h->over[1]) {
		print_too_big(&src[1], o);
		rc = 0;
	} else {
		rc = check_job(&src[1], h->second.data, h->second.len, o);
	}
	if (rc < 0)
		return rc;
	bad += rc == 0;
	rc = check_jsonl_rest(r, file, o);
	return rc < 0 ? rc : rc + bad;
}

/* Check every job in one open file. Returns invalid jobs or -errno (read
 * error, -ENOMEM). */
static int check_stream(FILE *f, const char *file,
			const struct validate_opts *o)
{
	struct reader *r = NULL;
	struct head h = {0};
	struct buf doc = {0};
	struct job_src src = {file, 1};
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->f = f;
	rc = read_head(r, &h);
	if (rc < 0)
		goto out;
	if (h.line[0])
		src.line = h.line[0];
	if (h.over[0]) {
		print_too_big(&src, o);
		rc = 1;
		goto out;
	}
	if (h.line[1] && is_complete_json(h.first.data, h.first.len)) {
		rc = check_jsonl(r, &h, file, o);
		goto out;
	}
	rc = head_to_doc(&h, &doc);
	if (rc == -E2BIG) {
		print_too_big(&src, o);
		rc = 1;
		goto out;
	}
	if (rc < 0)
		goto out;
	rc = check_document(r, &doc, h.line[1] && h.nl[1], &src, o);
out:
	buf_release(&doc);
	buf_release(&h.first);
	buf_release(&h.second);
	free(r);
	return rc;
}

/* Check one FILE argument ("-" is stdin). Returns invalid jobs or
 * -errno; a read error is reported here. */
static int check_path(const char *path, const struct validate_opts *o)
{
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	FILE *f = is_stdin ? stdin : fopen(path, "re");
	int rc;

	if (!f) {
		rc = -errno;
		goto out;
	}
	rc = check_stream(f, name, o);
out:
	if (rc < 0 && rc != -ENOMEM)
		fprintf(stderr, "airlock: cannot read '%s': %s\n", path,
			strerror(-rc));
	if (f && !is_stdin)
		fclose(f);
	return rc;
}

static const struct al_opt opts[] = {
    {"quiet", 'q', AL_OPT_SHORT},
    {"verbose", 'v', AL_OPT_SHORT},
    {"json", 'j', 0},
    {NULL, 0, 0},
};

static int run_validate(struct al_cli *cli, int argc, char **argv)
{
	struct validate_opts o = {.quiet = cli->flag['q'],
				  .verbose = cli->flag['v'],
				  .json = cli->flag['j']};
	struct al_policy policy;
	int rc, exit_code = AL_EXIT_OK;

	/* the config the other commands would use, not built-in defaults:
	 * a job validate accepts is one submit takes and serve runs */
	if (al_cli_load(cli) < 0)
		return AL_EXIT_USAGE;
	al_config_policy(&cli->cfg, &policy);
	o.policy = &policy;
	for (int i = 0; i < argc; i++) {
		rc = check_path(argv[i], &o);
		if (rc == -ENOMEM) {
			fprintf(stderr, "airlock: out of memory\n");
			return AL_EXIT_USAGE;
		}
		if (rc < 0)
			exit_code = AL_EXIT_USAGE;
		else if (rc > 0 && exit_code == AL_EXIT_OK)
			exit_code = AL_EXIT_FAIL;
	}
	return exit_code;
}

const struct al_cmd al_cmd_validate = {
    .name = "validate",
    .summary = "check job files (JSON or JSONL) without running them",
    .usage = "usage: airlock validate [-q | -v] [--json] [--config PATH] "
	     "FILE...\n"
	     "\n"
	     "Check each job in each FILE against the job schema and the\n"
	     "limits and allow-lists of the effective config (--config,\n"
	     "$AIRLOCK_CONFIG or the system config; the built-in policy of\n"
	     "docs/schema.md when there is none): the policy submit, batch,\n"
	     "run and serve apply. `-` reads standard input.\n"
	     "\n"
	     "A FILE is JSONL (one job per line, blank lines skipped) when\n"
	     "its first non-blank line is a complete JSON value and more\n"
	     "non-blank lines follow; otherwise it is one JSON document,\n"
	     "which may span lines. A job may be at most 16 MiB.\n"
	     "\n"
	     "Each problem is printed as `FILE:LINE: FIELD: reason`, LINE\n"
	     "being the line where the job starts.\n"
	     "\n"
	     "options:\n"
	     "  -q, --quiet    print nothing, only set the exit code\n"
	     "  -v, --verbose  also print `FILE:LINE: ok ID` for valid jobs\n"
	     "      --json     one JSON object a line instead: {file, line,\n"
	     "                 field, reason}, or {file, line, ok, id} (-v)\n"
	     "\n"
	     "exit status: 0 every job valid, 1 some job invalid, 2 usage\n"
	     "error, an invalid config or a FILE could not be read.\n",
    .options = opts,
    .args_min = 1,
    .args_max = -1,
    .args_error = "no FILE given",
    .run = run_validate,
};
