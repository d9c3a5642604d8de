/* job.c: the job: decoding (msgpack, JSON), validation and encoding.
 *
 * Decoding walks the document with a table per object (walk.c), so every
 * problem is reported with its path in one pass. Hard caps (caps.h) are
 * checked here; a deployment's narrower maxima are checked by
 * al_job_check_policy() (policy.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Is the '/'-separated part id[0..len) empty, "." or ".."? */
static bool id_part_bad(const char *id, size_t len)
{
	return len == 0 || (len == 1 && id[0] == '.') ||
	       (len == 2 && id[0] == '.' && id[1] == '.');
}

/* Ids are dataset keys (`HumanEval/0`, `Mbpp/2`), so '/' is allowed; they
 * reach Redis keys and logs, never file names, but the parts between
 * slashes are still kept path-safe (no empty, "." or ".." part) so that a
 * later use as a relative path cannot climb. */
bool al_id_valid(const char *id, size_t len)
{
	size_t part = 0;

	if (len == 0 || len > AL_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (c == '/') {
			if (id_part_bad(id + part, i - part))
				return false;
			part = i + 1;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == ':' || c == '-'))
			return false;
	}
	return !id_part_bad(id + part, len - part);
}

/* --- step fields ------------------------------------------------------------ */

static int step_name(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_step *s = out;
	bool ok = v->type == MSGPACK_OBJECT_STR && v->via.str.size >= 1 &&
		  v->via.str.size <= AL_NAME_MAX;

	for (uint32_t i = 0; ok && i < v->via.str.size; i++)
		ok = (unsigned char)v->via.str.ptr[i] >= 0x20 &&
		     v->via.str.ptr[i] != 0x7f;
	if (ok)
		ok = al_utf8_valid((const uint8_t *)v->via.str.ptr,
				   v->via.str.size);
	if (!ok) {
		al_diags_add(d, path, "must be 1..%d printable characters",
			     AL_NAME_MAX);
		return 0;
	}
	return al__walk_str(v, path, AL_NAME_MAX, d, &s->name);
}

static void argv_release(char **argv, size_t argc)
{
	if (!argv)
		return;
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

static int step_cmd(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	struct al_step *s = out;
	size_t before = d->n + d->dropped, total = 0;
	char sub[160];
	char **argv;
	uint32_t n;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, 1, AL_ARGV_MAX, d, &n))
		return 0;
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *a = &v->via.array.ptr[i];

		al__path_index(sub, sizeof(sub), path, i);
		if (al__walk_str(a, sub, AL_ARGV_MAX_BYTES, d, &argv[i]) < 0) {
			argv_release(argv, n);
			return -ENOMEM;
		}
		if (a->type == MSGPACK_OBJECT_STR)
			total += a->via.str.size + 1;
		if (i == 0 && a->type == MSGPACK_OBJECT_STR &&
		    a->via.str.size == 0)
			al_diags_add(d, sub, "must not be empty");
	}
	if (total > AL_ARGV_MAX_BYTES)
		al_diags_add(d, path, "must be at most %u bytes in all",
			     AL_ARGV_MAX_BYTES);
	if (d->n + d->dropped != before) {
		argv_release(argv, n);
		return 0;
	}
	argv_release(s->argv, s->argc);
	s->argv = argv;
	s->argc = n;
	return 0;
}

static int step_sh(const msgpack_object *v, const char *path, void *out,
		   struct al_diags *d)
{
	struct al_step *s = out;

	if (v->type == MSGPACK_OBJECT_STR && v->via.str.size == 0) {
		al_diags_add(d, path, "must not be empty");
		return 0;
	}
	return al__walk_str(v, path, AL_SH_MAX_BYTES, d, &s->sh);
}

static int step_stdin(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	struct al_step *s = out;

	s->has_stdin = true;
	return al__walk_blob(v, path, d, &s->stdin_);
}

static bool env_name_valid(const char *s, size_t n)
{
	if (n == 0 || n > AL_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static void env_release(struct al_env *env, size_t n)
{
	if (!env)
		return;
	for (size_t i = 0; i < n; i++) {
		free(env[i].name);
		free(env[i].value);
	}
	free(env);
}

static int env_entry(const msgpack_object_kv *kv, const char *path,
		     struct al_env *e, struct al_diags *d)
{
	char sub[160];

	if (kv->key.type != MSGPACK_OBJECT_STR) {
		al_diags_add(d, path, "keys must be strings");
		return 0;
	}
	al__path_key(sub, sizeof(sub), path, kv->key.via.str.ptr,
		     kv->key.via.str.size);
	if (!env_name_valid(kv->key.via.str.ptr, kv->key.via.str.size)) {
		al_diags_add(d, sub, "must match [A-Za-z_][A-Za-z0-9_]*");
		return 0;
	}
	if (al__walk_str(&kv->val, sub, AL_ENV_VALUE_MAX, d, &e->value) < 0)
		return -ENOMEM;
	e->name = al__str_dup_n(kv->key.via.str.ptr, kv->key.via.str.size);
	return e->name ? 0 : -ENOMEM;
}

static int step_env(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	struct al_step *s = out;
	size_t before = d->n + d->dropped;
	struct al_env *env;
	uint32_t n;
	int r = 0;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_MAP, 0, AL_ENV_MAX, d, &n))
		return 0;
	env = calloc(n ? n : 1, sizeof(*env));
	if (!env)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = env_entry(&v->via.map.ptr[i], path, &env[i], d);
	for (uint32_t i = 0; i < n && r == 0; i++) {
		for (uint32_t j = 0; j < i; j++) {
			if (env[i].name && env[j].name &&
			    strcmp(env[i].name, env[j].name) == 0) {
				char sub[160];

				al__path_key(sub, sizeof(sub), path,
					     env[i].name, strlen(env[i].name));
				al_diags_add(d, sub, "duplicate key");
				break;
			}
		}
	}
	if (r < 0 || d->n + d->dropped != before) {
		env_release(env, n);
		return r;
	}
	env_release(s->env, s->n_env);
	s->env = env;
	s->n_env = n;
	return 0;
}

static int step_cwd(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	return al__walk_relpath(v, path, d, &((struct al_step *)out)->cwd);
}

static int step_timeout(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	return al__walk_u32(v, path, 1, AL_TIMEOUT_MS_MAX, d,
			    &((struct al_step *)out)->timeout_ms);
}

static int step_cpu(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	return al__walk_u32(v, path, 1, AL_CPU_MS_MAX, d,
			    &((struct al_step *)out)->cpu_ms);
}

static int step_if(const msgpack_object *v, const char *path, void *out,
		   struct al_diags *d)
{
	struct al_step *s = out;

	if (al__walk_is_str(v, "always"))
		s->run_if = AL_RUN_ALWAYS;
	else if (al__walk_is_str(v, "success"))
		s->run_if = AL_RUN_SUCCESS;
	else if (al__walk_is_str(v, "setup_ok"))
		s->run_if = AL_RUN_SETUP_OK;
	else
		al_diags_add(d, path,
			     "must be \"always\", \"success\" or \"setup_ok\"");
	return 0;
}

static int step_compile(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	if (v->type != MSGPACK_OBJECT_BOOLEAN) {
		al__walk_type_error(d, path, "a boolean");
		return 0;
	}
	return al__walk_bool(v, path, d, &((struct al_step *)out)->compile);
}

static int step_weight(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_step *s = out;

	s->has_weight = true;
	return al__walk_u32(v, path, 0, AL_WEIGHT_MAX, d, &s->weight);
}

bool al_step_is_test(const struct al_step *s)
{
	return s->expect.present || s->check.present || s->has_weight;
}

uint32_t al_step_weight(const struct al_step *s)
{
	return s->has_weight ? s->weight : 1;
}

static int expect_stdout(const msgpack_object *v, const char *path, void *out,
			 struct al_diags *d)
{
	return al__walk_blob(v, path, d, &((struct al_expect *)out)->stdout_);
}

static const char *const compare_names[] = {
	[AL_COMPARE_EXACT] = "exact",
	[AL_COMPARE_TRIM] = "trim",
	[AL_COMPARE_LINES] = "lines",
	[AL_COMPARE_TOKENS] = "tokens",
	[AL_COMPARE_NUMBERS] = "numbers",
};

static int expect_compare(const msgpack_object *v, const char *path,
			  void *out, struct al_diags *d)
{
	struct al_expect *e = out;

	for (size_t i = 0; i < AL__ARRAY_SIZE(compare_names); i++) {
		if (al__walk_is_str(v, compare_names[i])) {
			e->compare = (enum al_compare)i;
			return 0;
		}
	}
	al_diags_add(d, path, "must be \"exact\", \"trim\", \"lines\", "
			      "\"tokens\" or \"numbers\"");
	return 0;
}

/* A tolerance: a finite number 0..AL_TOL_MAX, integer or not. */
static void walk_tol(const msgpack_object *v, const char *path, double *ret,
		     struct al_diags *d)
{
	double x;

	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		x = (double)v->via.u64;
	else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		x = (double)v->via.i64;
	else if (v->type == MSGPACK_OBJECT_FLOAT32 ||
		 v->type == MSGPACK_OBJECT_FLOAT64)
		x = v->via.f64;
	else {
		al__walk_type_error(d, path, "a number");
		return;
	}
	if (!(x >= 0 && x <= AL_TOL_MAX)) { /* NaN fails too */
		al_diags_add(d, path, "must be 0..%g", AL_TOL_MAX);
		return;
	}
	*ret = x;
}

static int expect_abs_tol(const msgpack_object *v, const char *path,
			  void *out, struct al_diags *d)
{
	walk_tol(v, path, &((struct al_expect *)out)->abs_tol, d);
	return 0;
}

static int expect_rel_tol(const msgpack_object *v, const char *path,
			  void *out, struct al_diags *d)
{
	walk_tol(v, path, &((struct al_expect *)out)->rel_tol, d);
	return 0;
}

enum { EXPECT_STDOUT, EXPECT_COMPARE, EXPECT_ABS_TOL, EXPECT_REL_TOL };

/* Tolerances mean something only when comparing numbers. */
static void expect_check(uint32_t seen, const char *path, struct al_diags *d,
			 const struct al_expect *e)
{
	if ((AL__SEEN(seen, EXPECT_ABS_TOL) || AL__SEEN(seen, EXPECT_REL_TOL)) &&
	    e->compare != AL_COMPARE_NUMBERS)
		al_diags_add(d, path,
			     "abs_tol and rel_tol need compare \"numbers\"");
}

static const struct al__walk_field expect_fields[] = {
    [EXPECT_STDOUT] = {"stdout", 0, expect_stdout, true},
    [EXPECT_COMPARE] = {"compare", 0, expect_compare, false},
    [EXPECT_ABS_TOL] = {"abs_tol", 0, expect_abs_tol, false},
    [EXPECT_REL_TOL] = {"rel_tol", 0, expect_rel_tol, false},
};
static const struct al__walk_table expect_table =
    AL__WALK_TABLE(expect_fields, NULL);

static int step_expect(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_expect *e = &((struct al_step *)out)->expect;
	uint32_t seen = 0;
	int r;

	r = al__walk_map(v, path, &expect_table, e, d, &seen);
	if (r < 0)
		return r;
	expect_check(seen, path, d, e);
	e->present = true;
	return 0;
}

static int step_attest(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_step *s = out;

	if (v->type != MSGPACK_OBJECT_BOOLEAN) {
		al__walk_type_error(d, path, "a boolean");
		return 0;
	}
	return al__walk_bool(v, path, d, &s->attest);
}

/* One `reports` entry: "junit:PATH", "tap:PATH", or a PATH whose
 * extension says its format (.xml JUnit, .tap TAP). */
static int report_entry(const msgpack_object *v, const char *path,
			struct al_report_spec *ret, struct al_diags *d)
{
	static const struct {
		const char *prefix;
		enum al_report_format format;
	} pre[] = {{"junit:", AL_REPORT_JUNIT}, {"tap:", AL_REPORT_TAP}};
	msgpack_object rest = *v;
	size_t n, k;

	if (v->type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string");
		return 0;
	}
	for (k = 0; k < AL__ARRAY_SIZE(pre); k++) {
		n = strlen(pre[k].prefix);
		if (v->via.str.size > n &&
		    !memcmp(v->via.str.ptr, pre[k].prefix, n))
			break;
	}
	if (k < AL__ARRAY_SIZE(pre)) {
		rest.via.str.ptr += n;
		rest.via.str.size -= (uint32_t)n;
		ret->format = pre[k].format;
	} else if (n = v->via.str.size,
		   n > 4 && !memcmp(v->via.str.ptr + n - 4, ".xml", 4)) {
		ret->format = AL_REPORT_JUNIT;
	} else if (n > 4 && !memcmp(v->via.str.ptr + n - 4, ".tap", 4)) {
		ret->format = AL_REPORT_TAP;
	} else {
		al_diags_add(d, path,
			     "say its format: \"junit:PATH\" or "
			     "\"tap:PATH\" (or a .xml/.tap name)");
		return 0;
	}
	return al__walk_relpath(&rest, path, d, &ret->path);
}

static int step_reports(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	struct al_step *s = out;
	char sub[160];
	uint32_t n;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, 1, AL_REPORTS_MAX, d,
			  &n))
		return 0;
	s->reports = calloc(n, sizeof(*s->reports));
	if (!s->reports)
		return -ENOMEM;
	s->n_reports = n;
	for (uint32_t i = 0; i < n; i++) {
		al__path_index(sub, sizeof(sub), path, i);
		if (report_entry(&v->via.array.ptr[i], sub, &s->reports[i], d) <
		    0)
			return -ENOMEM;
	}
	return 0;
}

static int check_cmd(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_check *c = out;
	struct al_step tmp = {0};
	int r = step_cmd(v, path, &tmp, d);

	c->argv = tmp.argv;
	c->argc = tmp.argc;
	return r;
}

static int check_files(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_check *c = out;
	uint32_t n;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_MAP, 0, AL_CHECK_FILES_MAX,
			  d, &n))
		return 0;
	return al__walk_files(v, path, d, &c->files, &c->n_files);
}

static int check_answer(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	return al__walk_blob(v, path, d, &((struct al_check *)out)->answer);
}

static int check_timeout(const msgpack_object *v, const char *path,
			 void *out, struct al_diags *d)
{
	return al__walk_u32(v, path, 1, AL_TIMEOUT_MS_MAX, d,
			    &((struct al_check *)out)->timeout_ms);
}

static const struct al__walk_field check_fields[] = {
    {"cmd", 0, check_cmd, true},
    {"files", 0, check_files, false},
    {"answer", 0, check_answer, false},
    {"timeout_ms", 0, check_timeout, false},
};
static const struct al__walk_table check_table =
    AL__WALK_TABLE(check_fields, NULL);

static int step_check_prog(const msgpack_object *v, const char *path,
			   void *out, struct al_diags *d)
{
	struct al_step *s = out;
	int r = al__walk_map(v, path, &check_table, &s->check, d, NULL);

	s->check.present = true;
	for (size_t i = 0; r == 0 && i < s->check.n_files; i++) {
		const char *f = s->check.files[i].path;
		size_t first = strcspn(f, "/");

		/* input, output and answer are the checker's own names */
		if ((first == 5 && !strncmp(f, "input", 5)) ||
		    (first == 6 && (!strncmp(f, "output", 6) ||
				    !strncmp(f, "answer", 6))))
			al_diags_add(d, path, "files: \"%.*s\" is the "
					      "checker's own file",
				     (int)first, f);
	}
	return r;
}

/* The fields a step shares with the job's top level (its one-step
 * shorthand), at index base + STEP_* of a table; `off` locates the step. */
enum {
	STEP_CMD,
	STEP_SH,
	STEP_STDIN,
	STEP_ENV,
	STEP_CWD,
	STEP_TIMEOUT,
	STEP_CPU,
	STEP_EXPECT,
	STEP_ATTEST,
	STEP_REPORTS,
	STEP_SHARED, /* count of the above */
};
/* clang-format off */
#define STEP_FIELDS(base, off)                                                 \
	[(base) + STEP_CMD] = {"cmd", off, step_cmd, false},                   \
	[(base) + STEP_SH] = {"sh", off, step_sh, false},                      \
	[(base) + STEP_STDIN] = {"stdin", off, step_stdin, false},             \
	[(base) + STEP_ENV] = {"env", off, step_env, false},                   \
	[(base) + STEP_CWD] = {"cwd", off, step_cwd, false},                   \
	[(base) + STEP_TIMEOUT] = {"timeout_ms", off, step_timeout, false},    \
	[(base) + STEP_CPU] = {"cpu_ms", off, step_cpu, false},                \
	[(base) + STEP_EXPECT] = {"expect", off, step_expect, false},          \
	[(base) + STEP_ATTEST] = {"attest", off, step_attest, false},          \
	[(base) + STEP_REPORTS] = {"reports", off, step_reports, false}
/* clang-format on */

/* Bit 0: cmd seen, bit 1: sh seen, for STEP_FIELDS at `base`. */
static unsigned seen_cmd_sh(uint32_t seen, unsigned base)
{
	unsigned cmd = AL__SEEN(seen, base + STEP_CMD);
	unsigned sh = AL__SEEN(seen, base + STEP_SH);

	return cmd | sh << 1;
}

static void step_check(uint32_t seen, const char *path, struct al_diags *d)
{
	unsigned cmd_sh = seen_cmd_sh(seen, 0);

	if (cmd_sh != 1 && cmd_sh != 2)
		al_diags_add(d, path, "must have exactly one of cmd or sh");
	if (AL__SEEN(seen, STEP_EXPECT) && AL__SEEN(seen, STEP_SHARED + 4))
		al_diags_add(d, path, "must have at most one of expect or "
				      "check");
}

static const struct al__walk_field step_fields[] = {
    STEP_FIELDS(0, 0),
    [STEP_SHARED] = {"name", 0, step_name, false},
    [STEP_SHARED + 1] = {"if", 0, step_if, false},
    [STEP_SHARED + 2] = {"compile", 0, step_compile, false},
    [STEP_SHARED + 3] = {"weight", 0, step_weight, false},
    [STEP_SHARED + 4] = {"check", 0, step_check_prog, false},
};
static const struct al__walk_table step_table =
    AL__WALK_TABLE(step_fields, step_check);

/* A job's step may have neither cmd nor sh when the job names a
 * `language` (its run command); job_shape() checks that. */
static void job_step_check(uint32_t seen, const char *path,
			   struct al_diags *d)
{
	if (seen_cmd_sh(seen, 0) == 3)
		al_diags_add(d, path, "must have exactly one of cmd or sh");
	if (AL__SEEN(seen, STEP_EXPECT) && AL__SEEN(seen, STEP_SHARED + 4))
		al_diags_add(d, path, "must have at most one of expect or "
				      "check");
}
static const struct al__walk_table job_step_table =
    AL__WALK_TABLE(step_fields, job_step_check);

int al_step_unpack(const msgpack_object *o, const char *path,
		   struct al_step *ret, struct al_diags *d)
{
	struct al_step s = {0};
	int r;

	r = al__walk_object(o, path, &step_table, &s, d);
	if (r < 0) {
		al_step_release(&s);
		return r;
	}
	*ret = s;
	return 0;
}

void al_step_release(struct al_step *s)
{
	free(s->name);
	argv_release(s->argv, s->argc);
	free(s->sh);
	al__blob_release(&s->stdin_);
	env_release(s->env, s->n_env);
	free(s->cwd);
	al__blob_release(&s->expect.stdout_);
	argv_release(s->check.argv, s->check.argc);
	al__files_release(s->check.files, s->check.n_files);
	al__blob_release(&s->check.answer);
	for (size_t i = 0; s->reports && i < s->n_reports; i++)
		free(s->reports[i].path);
	free(s->reports);
	memset(s, 0, sizeof(*s));
}

/* --- job fields ------------------------------------------------------------- */

/* The job as it is walked: top-level step fields (the one-step shorthand)
 * land in `top`. */
struct job_walk {
	struct al_job job; /* first: the job fields' offsets are into it */
	struct al_step top;
	bool has_language; /* the map has a `language` key (steps may then
			      leave out cmd and sh) */
};

static int job_id(const msgpack_object *v, const char *path, void *out,
		  struct al_diags *d)
{
	struct al_job *j = out;

	if (v->type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string");
		return 0;
	}
	if (!al_id_valid(v->via.str.ptr, v->via.str.size)) {
		al_diags_add(d, path, AL_ID_RULE, AL_ID_MAX);
		return 0;
	}
	memcpy(d->id, v->via.str.ptr, v->via.str.size);
	d->id[v->via.str.size] = 0;
	return al__walk_str(v, path, AL_ID_MAX, d, &j->id);
}

static int job_template(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	return al__walk_name(v, path, d, &((struct al_job *)out)->template_);
}

static int job_network(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	return al__walk_name(v, path, d, &((struct al_job *)out)->network);
}

static int job_files(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_job *j = out;

	return al__walk_files(v, path, d, &j->files, &j->n_files);
}

static int step_elem(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	return al_step_unpack(v, path, out, d);
}

/* A step of a job naming a `language`: cmd and sh may both be absent. */
static int lang_step_elem(const msgpack_object *v, const char *path,
			  void *out, struct al_diags *d)
{
	struct al_step s = {0};
	int r = al__walk_object(v, path, &job_step_table, &s, d);

	if (r < 0)
		al_step_release(&s);
	else
		*(struct al_step *)out = s;
	return r;
}

static int job_steps(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct job_walk *w = out; /* JOB_STEPS' offset is 0 */
	struct al_job *j = &w->job;
	void *steps = NULL;
	int r;

	r = al__walk_array(v, path, 1, AL_STEPS_MAX, sizeof(*j->steps),
			   w->has_language ? lang_step_elem : step_elem,
			   &steps, &j->n_steps, d);
	if (steps)
		j->steps = steps;
	return r;
}

#define LIMIT_FIELD(name, lo, hi)                                              \
	static int limit_##name(const msgpack_object *v, const char *path,     \
				void *out, struct al_diags *d)                 \
	{                                                                      \
		return al__walk_u32(v, path, lo, hi, d,                        \
				    &((struct al_limits *)out)->name);         \
	}
LIMIT_FIELD(memory_mb, AL_MEMORY_MB_MIN, AL_MEMORY_MB_MAX)
LIMIT_FIELD(vcpus, 1, AL_VCPUS_MAX)
LIMIT_FIELD(wall_ms, 1, AL_WALL_MS_MAX)
LIMIT_FIELD(output_bytes, 1, AL_OUTPUT_MAX)
LIMIT_FIELD(pids, 1, AL_PIDS_MAX)
LIMIT_FIELD(disk_mb, 1, AL_DISK_MB_MAX)
LIMIT_FIELD(file_size_mb, 1, AL_FILE_SIZE_MB_MAX)

static const struct al__walk_field limit_fields[] = {
    {"memory_mb", 0, limit_memory_mb, false},
    {"vcpus", 0, limit_vcpus, false},
    {"wall_ms", 0, limit_wall_ms, false},
    {"output_bytes", 0, limit_output_bytes, false},
    {"pids", 0, limit_pids, false},
    {"disk_mb", 0, limit_disk_mb, false},
    {"file_size_mb", 0, limit_file_size_mb, false},
};
static const struct al__walk_table limit_table =
    AL__WALK_TABLE(limit_fields, NULL);

int al_limits_unpack(const msgpack_object *o, const char *path,
		     struct al_limits *ret, struct al_diags *d)
{
	struct al_limits l = {0};
	int r;

	r = al__walk_object(o, path, &limit_table, &l, d);
	if (r < 0)
		return r;
	*ret = l;
	return 0;
}

static int job_limits(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	int r = al_limits_unpack(v, path, &((struct al_job *)out)->limits, d);

	return r == -ENOMEM ? r : 0;
}

static int job_collect(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_job *j = out;
	char sub[160];
	uint32_t n;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, 0, AL_COLLECT_MAX, d,
			  &n))
		return 0;
	j->collect = calloc(n + 1, sizeof(*j->collect));
	if (!j->collect)
		return -ENOMEM;
	j->n_collect = n;
	for (uint32_t i = 0; i < n; i++) {
		al__path_index(sub, sizeof(sub), path, i);
		if (al__walk_relpath(&v->via.array.ptr[i], sub, d,
				     &j->collect[i]) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int job_meta(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	return al__walk_meta(v, path, d, &((struct al_job *)out)->meta);
}

static int job_language(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	return al__walk_name(v, path, d, &((struct al_job *)out)->language);
}

static int job_source(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	struct al_job *j = out;

	j->has_source = true;
	return al__walk_blob(v, path, d, &j->source);
}

enum {
	JOB_ID,
	JOB_TEMPLATE,
	JOB_FILES,
	JOB_STEPS,
	JOB_LIMITS,
	JOB_NETWORK,
	JOB_COLLECT,
	JOB_META,
	JOB_LANGUAGE,
	JOB_SOURCE,
	JOB_TOP, /* then the STEP_FIELDS of the one-step shorthand */
};
static const struct al__walk_field job_fields[] = {
    [JOB_ID] = {"id", 0, job_id, false},
    [JOB_TEMPLATE] = {"template", 0, job_template, false},
    [JOB_FILES] = {"files", 0, job_files, false},
    [JOB_STEPS] = {"steps", 0, job_steps, false},
    [JOB_LIMITS] = {"limits", 0, job_limits, false},
    [JOB_NETWORK] = {"network", 0, job_network, false},
    [JOB_COLLECT] = {"collect", 0, job_collect, false},
    [JOB_META] = {"meta", 0, job_meta, false},
    [JOB_LANGUAGE] = {"language", 0, job_language, false},
    [JOB_SOURCE] = {"source_code", 0, job_source, false},
    STEP_FIELDS(JOB_TOP, offsetof(struct job_walk, top)),
};
static const struct al__walk_table job_table = AL__WALK_TABLE(job_fields, NULL);

/* steps, or the one-step shorthand, but not both; with `language`, the
 * shorthand's cmd/sh may be left out (the language's run command) */
static int job_shape(struct job_walk *w, uint32_t seen, struct al_diags *d)
{
	uint32_t top = seen >> JOB_TOP;
	unsigned cmd_sh = seen_cmd_sh(seen, JOB_TOP);

	if (!w->job.language && w->job.has_source)
		al_diags_add(d, "source_code", "needs a language");
	if (AL__SEEN(seen, JOB_STEPS)) {
		if (cmd_sh)
			al_diags_add(d, "", "cannot give both steps and a "
				     "top-level cmd/sh");
		else if (top)
			al_diags_add(d, "", "step fields at top level need a "
				     "top-level cmd or sh instead of steps");
		return 0;
	}
	if (!cmd_sh && !w->job.language) {
		al_diags_add(d, "steps", "required (or give cmd or sh at top "
			     "level)");
		return 0;
	}
	if (cmd_sh == 3) {
		al_diags_add(d, "", "must have exactly one of cmd or sh");
		return 0;
	}
	w->job.steps = calloc(1, sizeof(*w->job.steps));
	if (!w->job.steps)
		return -ENOMEM;
	w->job.steps[0] = w->top;
	memset(&w->top, 0, sizeof(w->top));
	w->job.n_steps = 1;
	return 0;
}

static int job_unpack(const msgpack_object *o, void *out, struct al_diags *d)
{
	struct job_walk w = {0};
	uint32_t seen;
	int r;

	for (uint32_t i = 0; o->type == MSGPACK_OBJECT_MAP &&
			     i < o->via.map.size; i++)
		w.has_language |=
		    al__walk_is_str(&o->via.map.ptr[i].key, "language");
	r = al__walk_map(o, "", &job_table, &w, d, &seen);
	if (r == 0 && o->type == MSGPACK_OBJECT_MAP)
		r = job_shape(&w, seen, d);
	al_step_release(&w.top);
	if (r < 0 || d->n || d->dropped) {
		al_job_release(&w.job);
		return r;
	}
	*(struct al_job *)out = w.job;
	return 0;
}

int al_job_from_msgpack(const void *buf, size_t len, struct al_job *ret,
			struct al_diags *d)
{
	return al__decode_document(buf, len, AL_JOB_MAX_BYTES, job_unpack, ret,
				   d);
}

int al_job_from_json(const char *text, size_t len, struct al_job *ret,
		     struct al_diags *d)
{
	return al__decode_json(text, len, AL_JOB_MAX_BYTES, SIZE_MAX,
			       job_unpack, ret, d);
}

/* One step alone (a session's exec): the step rules of a job's steps,
 * problems named by the step's own fields ("cmd", "env[\"X\"]"). */
static int step_doc(const msgpack_object *o, void *out, struct al_diags *d)
{
	size_t before = al__diags_count(d);
	struct al_step s = {0};
	int r = al_step_unpack(o, "", &s, d);

	if (r == 0 && s.n_reports)
		al_diags_add(d, "reports",
			     "a job's steps only, not a "
			     "session's exec");
	if (r == 0 && al__diags_count(d) != before)
		al_step_release(&s); /* the caller answers -EINVAL */
	else if (r == 0)
		*(struct al_step *)out = s;
	return r;
}

int al_step_from_json(const char *text, size_t len, struct al_step *ret,
		      struct al_diags *d)
{
	return al__decode_json(text, len, AL_JOB_MAX_BYTES, SIZE_MAX, step_doc,
			       ret, d);
}

void al_job_release(struct al_job *job)
{
	free(job->id);
	free(job->template_);
	al__files_release(job->files, job->n_files);
	for (size_t i = 0; job->steps && i < job->n_steps; i++)
		al_step_release(&job->steps[i]);
	free(job->steps);
	free(job->network);
	for (size_t i = 0; job->collect && i < job->n_collect; i++)
		free(job->collect[i]);
	free(job->collect);
	al__blob_release(&job->meta);
	free(job->language);
	al__blob_release(&job->source);
	memset(job, 0, sizeof(*job));
}

/* --- encoding ----------------------------------------------------------------- */

/* A tolerance as an integer when it is one (JSON's 1, not 1.0), so
 * JSON -> msgpack -> JSON gives the same text. */
static void pack_tol(msgpack_packer *pk, const char *key, double x)
{
	al__pack_key(pk, key);
	if (x == (double)(uint64_t)x)
		msgpack_pack_uint64(pk, (uint64_t)x);
	else
		msgpack_pack_double(pk, x);
}

static void pack_expect(msgpack_packer *pk, const struct al_expect *e)
{
	al__pack_key(pk, "expect");
	msgpack_pack_map(pk, 1 + (e->compare != AL_COMPARE_EXACT) +
				     (e->abs_tol != 0) + (e->rel_tol != 0));
	al__pack_key(pk, "stdout");
	al__pack_blob(pk, &e->stdout_);
	if (e->compare != AL_COMPARE_EXACT) {
		al__pack_key(pk, "compare");
		al__pack_str(pk, compare_names[e->compare]);
	}
	if (e->abs_tol != 0)
		pack_tol(pk, "abs_tol", e->abs_tol);
	if (e->rel_tol != 0)
		pack_tol(pk, "rel_tol", e->rel_tol);
}

static void pack_check(msgpack_packer *pk, const struct al_check *c)
{
	al__pack_key(pk, "check");
	msgpack_pack_map(pk, 1 + !!c->n_files + !!c->answer.data +
				     !!c->timeout_ms);
	al__pack_key(pk, "cmd");
	msgpack_pack_array(pk, c->argc);
	for (size_t i = 0; i < c->argc; i++)
		al__pack_str(pk, c->argv[i]);
	if (c->n_files) {
		al__pack_key(pk, "files");
		al__pack_files(pk, c->files, c->n_files);
	}
	if (c->answer.data) {
		al__pack_key(pk, "answer");
		al__pack_blob(pk, &c->answer);
	}
	if (c->timeout_ms) {
		al__pack_key(pk, "timeout_ms");
		msgpack_pack_uint32(pk, c->timeout_ms);
	}
}

/* Does a `reports` entry need its format's prefix to read back the
 * same: its extension says another format (or none), or the path itself
 * starts like a prefix? */
static bool report_needs_prefix(const struct al_report_spec *r)
{
	size_t n = strlen(r->path);
	const char *ext = r->format == AL_REPORT_TAP ? ".tap" : ".xml";

	return n <= 4 || memcmp(r->path + n - 4, ext, 4) ||
	       !strncmp(r->path, "junit:", 6) || !strncmp(r->path, "tap:", 4);
}

/* `reports` as written: a prefix only where it is needed, so JSON ->
 * struct -> JSON gives the same text. */
static void pack_reports(msgpack_packer *pk, const struct al_report_spec *r,
			 size_t n)
{
	char buf[AL_PATH_MAX + 8];

	al__pack_key(pk, "reports");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++) {
		if (!report_needs_prefix(&r[i])) {
			al__pack_str(pk, r[i].path);
			continue;
		}
		snprintf(buf, sizeof(buf), "%s:%s",
			 r[i].format == AL_REPORT_TAP ? "tap" : "junit",
			 r[i].path);
		al__pack_str(pk, buf);
	}
}

int al_step_pack(msgpack_packer *pk, const struct al_step *s)
{
	size_t n = !!s->name + (s->sh || s->argc) + s->has_stdin + !!s->n_env +
		   !!s->cwd + !!s->timeout_ms + !!s->cpu_ms +
		   (s->run_if != AL_RUN_ALWAYS) + s->expect.present +
		   s->attest + s->compile + s->has_weight + s->check.present +
		   !!s->n_reports;

	msgpack_pack_map(pk, n);
	if (s->name) {
		al__pack_key(pk, "name");
		al__pack_str(pk, s->name);
	}
	if (s->sh) {
		al__pack_key(pk, "sh");
		al__pack_str(pk, s->sh);
	} else if (s->argc) {
		al__pack_key(pk, "cmd");
		msgpack_pack_array(pk, s->argc);
		for (size_t i = 0; i < s->argc; i++)
			al__pack_str(pk, s->argv[i]);
	}
	if (s->has_stdin) {
		al__pack_key(pk, "stdin");
		al__pack_blob(pk, &s->stdin_);
	}
	if (s->n_env) {
		al__pack_key(pk, "env");
		msgpack_pack_map(pk, s->n_env);
		for (size_t i = 0; i < s->n_env; i++) {
			al__pack_str(pk, s->env[i].name);
			al__pack_str(pk, s->env[i].value);
		}
	}
	if (s->cwd) {
		al__pack_key(pk, "cwd");
		al__pack_str(pk, s->cwd);
	}
	if (s->timeout_ms) {
		al__pack_key(pk, "timeout_ms");
		msgpack_pack_uint32(pk, s->timeout_ms);
	}
	if (s->cpu_ms) {
		al__pack_key(pk, "cpu_ms");
		msgpack_pack_uint32(pk, s->cpu_ms);
	}
	if (s->run_if != AL_RUN_ALWAYS) {
		al__pack_key(pk, "if");
		al__pack_str(pk, s->run_if == AL_RUN_SUCCESS ? "success"
							       : "setup_ok");
	}
	if (s->expect.present)
		pack_expect(pk, &s->expect);
	if (s->attest) {
		al__pack_key(pk, "attest");
		msgpack_pack_true(pk);
	}
	if (s->compile) {
		al__pack_key(pk, "compile");
		msgpack_pack_true(pk);
	}
	if (s->has_weight) {
		al__pack_key(pk, "weight");
		msgpack_pack_uint32(pk, s->weight);
	}
	if (s->check.present)
		pack_check(pk, &s->check);
	if (s->n_reports)
		pack_reports(pk, s->reports, s->n_reports);
	return 0;
}

int al_limits_pack(msgpack_packer *pk, const struct al_limits *l)
{
	const struct {
		const char *name;
		uint32_t v;
	} f[] = {
		{"memory_mb", l->memory_mb},   {"vcpus", l->vcpus},
		{"wall_ms", l->wall_ms},       {"output_bytes", l->output_bytes},
		{"pids", l->pids},             {"disk_mb", l->disk_mb},
		{"file_size_mb", l->file_size_mb},
	};
	size_t n = 0;

	for (size_t i = 0; i < AL__ARRAY_SIZE(f); i++)
		n += f[i].v != 0;
	msgpack_pack_map(pk, n);
	for (size_t i = 0; i < AL__ARRAY_SIZE(f); i++) {
		if (f[i].v) {
			al__pack_key(pk, f[i].name);
			msgpack_pack_uint32(pk, f[i].v);
		}
	}
	return 0;
}

static bool limits_any(const struct al_limits *l)
{
	return l->memory_mb || l->vcpus || l->wall_ms || l->output_bytes ||
	       l->pids || l->disk_mb || l->file_size_mb;
}

static void pack_job(msgpack_packer *pk, const void *obj)
{
	const struct al_job *j = obj;
	size_t n = !!j->id + !!j->template_ + !!j->n_files + 1 +
		   limits_any(&j->limits) + !!j->network + !!j->n_collect +
		   !!j->meta.len + !!j->language + j->has_source;

	msgpack_pack_map(pk, n);
	if (j->id) {
		al__pack_key(pk, "id");
		al__pack_str(pk, j->id);
	}
	if (j->template_) {
		al__pack_key(pk, "template");
		al__pack_str(pk, j->template_);
	}
	if (j->n_files) {
		al__pack_key(pk, "files");
		al__pack_files(pk, j->files, j->n_files);
	}
	al__pack_key(pk, "steps");
	msgpack_pack_array(pk, j->n_steps);
	for (size_t i = 0; i < j->n_steps; i++)
		al_step_pack(pk, &j->steps[i]);
	if (limits_any(&j->limits)) {
		al__pack_key(pk, "limits");
		al_limits_pack(pk, &j->limits);
	}
	if (j->network) {
		al__pack_key(pk, "network");
		al__pack_str(pk, j->network);
	}
	if (j->n_collect) {
		al__pack_key(pk, "collect");
		msgpack_pack_array(pk, j->n_collect);
		for (size_t i = 0; i < j->n_collect; i++)
			al__pack_str(pk, j->collect[i]);
	}
	if (j->meta.len) {
		al__pack_key(pk, "meta");
		al__pack_raw(pk, &j->meta);
	}
	if (j->language) {
		al__pack_key(pk, "language");
		al__pack_str(pk, j->language);
	}
	if (j->has_source) {
		al__pack_key(pk, "source_code");
		al__pack_blob(pk, &j->source);
	}
}

int al_job_to_msgpack(const struct al_job *job, char **ret, size_t *ret_len)
{
	return al__encode(pack_job, job, ret, ret_len);
}

int al_job_to_json(const struct al_job *job, char **ret)
{
	return al__encode_json(pack_job, job, ret);
}
