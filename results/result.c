/* result.c: the result record: decoding, encoding, status names.
 *
 * Results are written by workers and read back by clients from Redis, so
 * their decoder is as strict with sizes as the job decoder: the store is
 * shared and a record may have been written by anything that can reach it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto.h"

static const char *const status_names[AL_STATUS_COUNT] = {
	[AL_OK] = "OK", [AL_RE] = "RE", [AL_SG] = "SG", [AL_TO] = "TO",
	[AL_ML] = "ML", [AL_OL] = "OL", [AL_XX] = "XX", [AL_RJ] = "RJ",
	[AL_SK] = "SK", [AL_TL] = "TL", [AL_CX] = "CX", [AL_CE] = "CE",
};

const char *al_status_name(enum al_status s)
{
	return (unsigned)s < AL_STATUS_COUNT ? status_names[s] : "??";
}

int al_status_from_name(const char *s, size_t len)
{
	for (int i = 0; i < AL_STATUS_COUNT; i++)
		if (len == 2 && memcmp(s, status_names[i], 2) == 0)
			return i;
	return -EINVAL;
}

static const char *const verdict_names[AL_VERDICT_COUNT] = {
	[AL_VERDICT_NONE] = "none",
	[AL_VERDICT_ACCEPTED] = "accepted",
	[AL_VERDICT_WRONG_ANSWER] = "wrong_answer",
	[AL_VERDICT_COMPILE_ERROR] = "compile_error",
	[AL_VERDICT_TIME_LIMIT] = "time_limit",
	[AL_VERDICT_MEMORY_LIMIT] = "memory_limit",
	[AL_VERDICT_RUNTIME_ERROR] = "runtime_error",
	[AL_VERDICT_OUTPUT_LIMIT] = "output_limit",
	[AL_VERDICT_INTERNAL_ERROR] = "internal_error",
	[AL_VERDICT_SKIPPED] = "skipped",
};

const char *al_verdict_name(enum al_verdict v)
{
	return (unsigned)v < AL_VERDICT_COUNT ? verdict_names[v] : "??";
}

/* Judge0 CE's statuses (its app/enumerations/status.rb): 3 Accepted,
 * 4 Wrong Answer, 5 Time Limit Exceeded, 6 Compilation Error, 7..12
 * Runtime Error by signal (SIGSEGV, SIGXFSZ, SIGFPE, SIGABRT, NZEC =
 * non-zero exit, Other), 13 Internal Error. Judge0 has no memory or output limit
 * status: isolate kills such a run, which it reports as a runtime error
 * (SIGKILL: Other, SIGXFSZ for a file too large). */
int al_verdict_judge0(enum al_verdict v, int signal)
{
	switch (v) {
	case AL_VERDICT_ACCEPTED: return 3;
	case AL_VERDICT_WRONG_ANSWER: return 4;
	case AL_VERDICT_TIME_LIMIT: return 5;
	case AL_VERDICT_COMPILE_ERROR: return 6;
	case AL_VERDICT_OUTPUT_LIMIT: return 8;
	case AL_VERDICT_MEMORY_LIMIT: return 12;
	case AL_VERDICT_INTERNAL_ERROR: return 13;
	case AL_VERDICT_RUNTIME_ERROR:
		switch (signal) {
		case 0: return 11;
		case 11: return 7;
		case 25: return 8;
		case 8: return 9;
		case 6: return 10;
		default: return 12;
		}
	default: return 0;
	}
}

/* The x86-64 / aarch64 Linux numbering (the guests we run). */
static const char *const signal_names[] = {
	[1] = "SIGHUP",	  [2] = "SIGINT",   [3] = "SIGQUIT", [4] = "SIGILL",
	[5] = "SIGTRAP",  [6] = "SIGABRT",  [7] = "SIGBUS",  [8] = "SIGFPE",
	[9] = "SIGKILL",  [10] = "SIGUSR1", [11] = "SIGSEGV", [12] = "SIGUSR2",
	[13] = "SIGPIPE", [14] = "SIGALRM", [15] = "SIGTERM", [24] = "SIGXCPU",
	[25] = "SIGXFSZ", [31] = "SIGSYS",
};

const char *al_signal_name(int sig)
{
	return sig > 0 && (size_t)sig < AL__ARRAY_SIZE(signal_names)
		       ? signal_names[sig]
		       : NULL;
}

size_t al_result_failed_step(const struct al_result *r)
{
	for (size_t i = 0; i < r->n_steps; i++) {
		const struct al_step_result *sr = &r->steps[i];

		if (sr->verdict == AL_VERDICT_NONE
			? sr->status != AL_OK && sr->status != AL_SK
			: sr->verdict != AL_VERDICT_ACCEPTED &&
				  sr->verdict != AL_VERDICT_SKIPPED)
			return i;
	}
	return SIZE_MAX;
}

int al_result_verdict_signal(const struct al_result *r)
{
	size_t i = al_result_failed_step(r);

	return r->verdict == AL_VERDICT_RUNTIME_ERROR && i < r->n_steps
		       ? r->steps[i].signal
		       : 0;
}

size_t al_verdict_text(enum al_verdict v, int signal, char *buf,
		       size_t size)
{
	const char *sig = al_signal_name(signal);
	char name[32];
	int n;

	snprintf(name, sizeof(name), "%s", al_verdict_name(v));
	for (char *p = name; *p; p++)
		if (*p == '_')
			*p = ' ';
	if (v == AL_VERDICT_RUNTIME_ERROR && signal)
		n = sig ? snprintf(buf, size, "%s (%s)", name, sig)
			: snprintf(buf, size, "%s (signal %d)", name, signal);
	else
		n = snprintf(buf, size, "%s", name);
	return n < 0 ? 0 : (size_t)n;
}

enum al_verdict al_verdict_of_status(enum al_status s, bool output_ok)
{
	switch (s) {
	case AL_OK:
		return output_ok ? AL_VERDICT_ACCEPTED
				 : AL_VERDICT_WRONG_ANSWER;
	case AL_RE: case AL_SG: return AL_VERDICT_RUNTIME_ERROR;
	case AL_TO: case AL_TL: return AL_VERDICT_TIME_LIMIT;
	case AL_ML: return AL_VERDICT_MEMORY_LIMIT;
	case AL_OL: return AL_VERDICT_OUTPUT_LIMIT;
	case AL_CE: return AL_VERDICT_COMPILE_ERROR;
	case AL_SK: return AL_VERDICT_SKIPPED;
	default: return AL_VERDICT_INTERNAL_ERROR;
	}
}

static const char *const accel_names[] = {
	[AL_ACCEL_NONE] = "none",
	[AL_ACCEL_KVM] = "kvm",
	[AL_ACCEL_TCG] = "tcg",
};

const char *al_accel_name(enum al_accel a)
{
	return (unsigned)a <= AL_ACCEL_TCG ? accel_names[a] : "??";
}

enum al_status al_result_overall_status(const struct al_result *r)
{
	for (size_t i = 0; i < r->n_steps; i++)
		if (r->steps[i].status != AL_OK && r->steps[i].status != AL_SK)
			return r->steps[i].status;
	return AL_OK;
}

int al_step_result_from_guest(struct al_step_result *sr)
{
	char buf[AL_ERROR_MAX];
	enum al_status st = sr->status;

	sr->expect_ok = AL_UNSET; /* the host's to say, never the guest's */
	sr->attested = AL_UNSET;
	sr->verdict = AL_VERDICT_NONE;
	sr->score = 0;
	al__blob_release(&sr->compile_output);
	al__blob_release(&sr->checker_output);
	al_tests_release(sr->tests, sr->n_tests); /* the host reads reports */
	sr->tests = NULL;
	sr->n_tests = 0;
	sr->has_tests = false;
	sr->test_counts = (struct al_test_counts){0};
	free(sr->reports_error);
	sr->reports_error = NULL;
	switch (st) {
	case AL_OK: case AL_RE: case AL_SG: case AL_TO: case AL_TL: case AL_ML:
	case AL_OL:
		return 0;
	default:
		break;
	}
	snprintf(buf, sizeof(buf), "guest agent reported %s%s%.4000s",
		 al_status_name(st), sr->error ? ": " : "",
		 sr->error ? sr->error : "");
	free(sr->error);
	sr->status = AL_RE;
	sr->error = strdup(buf);
	return sr->error ? 0 : -ENOMEM;
}

/* --- decoding --------------------------------------------------------------- */

/* A string from a small table; *ret gets its index. */
static int walk_enum(const msgpack_object *v, const char *path,
		     const char *const *names, size_t n, struct al_diags *d,
		     int *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (names[i] && al__walk_is_str(v, names[i])) {
			*ret = (int)i;
			return 0;
		}
	}
	al_diags_add(d, path, "unknown value");
	return 0;
}

/* An enum al_status at `out` (step result and result alike). */
static int walk_status(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	int s = 0, r;

	r = walk_enum(v, path, status_names, AL_STATUS_COUNT, d, &s);
	*(enum al_status *)out = (enum al_status)s;
	return r;
}

/* A step or worker name at `out` (step result and result alike). */
static int walk_label(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	return al__walk_str(v, path, AL_NAME_MAX, d, out);
}

/* An error message at `out` (step result and result alike). */
static int walk_error(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	return al__walk_str(v, path, AL_ERROR_MAX, d, out);
}

static int sr_exit_code(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	struct al_step_result *s = out;
	uint32_t code = 0;

	s->has_exit_code = true;
	al__walk_u32(v, path, 0, 255, d, &code);
	s->exit_code = (int32_t)code;
	return 0;
}

static int sr_signal(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_step_result *s = out;
	uint32_t sig = 0;

	al__walk_u32(v, path, 1, 127, d, &sig);
	s->signal = (int32_t)sig;
	return 0;
}

/* Stream contents: capped at AL_OUTPUT_MAX before they are copied. */
static int sr_stream(const msgpack_object *v, const char *path,
		     struct al_diags *d, struct al_blob *ret)
{
	if ((v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) &&
	    v->via.str.size > AL_OUTPUT_MAX) {
		al_diags_add(d, path, "larger than %u bytes", AL_OUTPUT_MAX);
		return 0;
	}
	return al__walk_blob(v, path, d, ret);
}

#define SR_FIELD(name, call)                                                  \
	static int sr_##name(const msgpack_object *v, const char *path,       \
			     void *out, struct al_diags *d)                   \
	{                                                                     \
		struct al_step_result *s = out;                               \
		return call;                                                  \
	}
SR_FIELD(stdout, sr_stream(v, path, d, &s->stdout_))
SR_FIELD(stderr, sr_stream(v, path, d, &s->stderr_))
SR_FIELD(stdout_truncated, al__walk_bool(v, path, d, &s->stdout_truncated))
SR_FIELD(stderr_truncated, al__walk_bool(v, path, d, &s->stderr_truncated))
SR_FIELD(stdout_bytes, al__walk_u64(v, path, d, &s->stdout_bytes))
SR_FIELD(stderr_bytes, al__walk_u64(v, path, d, &s->stderr_bytes))
SR_FIELD(wall_ms, al__walk_u64(v, path, d, &s->wall_ms))
SR_FIELD(cpu_ms, al__walk_u64(v, path, d, &s->cpu_ms))
SR_FIELD(max_rss_kb, al__walk_u64(v, path, d, &s->max_rss_kb))

static int walk_tristate(const msgpack_object *v, const char *path,
			 struct al_diags *d, enum al_tristate *ret)
{
	bool ok = false;

	if (v->type != MSGPACK_OBJECT_BOOLEAN) {
		al__walk_type_error(d, path, "a boolean");
		return 0;
	}
	al__walk_bool(v, path, d, &ok);
	*ret = ok ? AL_TRUE : AL_FALSE;
	return 0;
}
SR_FIELD(compile_output, sr_stream(v, path, d, &s->compile_output))
SR_FIELD(score, al__walk_u32(v, path, 0, UINT32_MAX, d, &s->score))

/* A checker's messages: capped before they are copied. */
static int sr_checker_output(const msgpack_object *v, const char *path,
			     void *out, struct al_diags *d)
{
	if ((v->type == MSGPACK_OBJECT_STR || v->type == MSGPACK_OBJECT_BIN) &&
	    v->via.str.size > AL_CHECKER_OUTPUT_MAX) {
		al_diags_add(d, path, "larger than %u bytes",
			     AL_CHECKER_OUTPUT_MAX);
		return 0;
	}
	return al__walk_blob(v, path, d,
			     &((struct al_step_result *)out)->checker_output);
}

/* A test's verdict: any but "none", which is written as no field. */
static int sr_verdict(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	int x = 0, r;

	r = walk_enum(v, path, verdict_names + 1, AL_VERDICT_COUNT - 1, d,
		      &x);
	((struct al_step_result *)out)->verdict = (enum al_verdict)(x + 1);
	return r;
}

SR_FIELD(expect_ok, walk_tristate(v, path, d, &s->expect_ok))
SR_FIELD(tests, al__walk_tests(v, path, d, &s->tests, &s->n_tests))
SR_FIELD(test_counts, (s->has_tests = true,
		       al__walk_test_counts(v, path, d, &s->test_counts)))
SR_FIELD(reports_error,
	 al__walk_str(v, path, AL_ERROR_MAX, d, &s->reports_error))
SR_FIELD(attested, walk_tristate(v, path, d, &s->attested))

static const struct al__walk_field step_result_fields[] = {
    {"name", offsetof(struct al_step_result, name), walk_label, false},
    {"status", offsetof(struct al_step_result, status), walk_status, true},
    {"exit_code", 0, sr_exit_code, false},
    {"signal", 0, sr_signal, false},
    {"stdout", 0, sr_stdout, false},
    {"stderr", 0, sr_stderr, false},
    {"stdout_truncated", 0, sr_stdout_truncated, false},
    {"stderr_truncated", 0, sr_stderr_truncated, false},
    {"stdout_bytes", 0, sr_stdout_bytes, false},
    {"stderr_bytes", 0, sr_stderr_bytes, false},
    {"wall_ms", 0, sr_wall_ms, false},
    {"cpu_ms", 0, sr_cpu_ms, false},
    {"max_rss_kb", 0, sr_max_rss_kb, false},
    {"expect_ok", 0, sr_expect_ok, false},
    {"attested", 0, sr_attested, false},
    {"error", offsetof(struct al_step_result, error), walk_error, false},
    {"compile_output", 0, sr_compile_output, false},
    {"verdict", 0, sr_verdict, false},
    {"score", 0, sr_score, false},
    {"checker_output", 0, sr_checker_output, false},
    {"test_counts", 0, sr_test_counts, false},
    {"tests", 0, sr_tests, false},
    {"reports_error", 0, sr_reports_error, false},
};

static const struct al__walk_table step_result_table =
    AL__WALK_TABLE(step_result_fields, NULL);

int al_step_result_unpack(const msgpack_object *o, const char *path,
			  struct al_step_result *ret, struct al_diags *d)
{
	struct al_step_result s = {0};
	int r;

	r = al__walk_object(o, path, &step_result_table, &s, d);
	if (r < 0) {
		al_step_result_release(&s);
		return r;
	}
	*ret = s;
	return 0;
}

void al_step_result_release(struct al_step_result *r)
{
	free(r->name);
	free(r->error);
	al__blob_release(&r->stdout_);
	al__blob_release(&r->stderr_);
	al__blob_release(&r->compile_output);
	al__blob_release(&r->checker_output);
	al_tests_release(r->tests, r->n_tests);
	free(r->reports_error);
	memset(r, 0, sizeof(*r));
}

static int vm_template(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	return al__walk_name(v, path, d,
			     &((struct al_vm_info *)out)->template_);
}

static int vm_accel(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	int a = 0, r;

	r = walk_enum(v, path, accel_names, AL__ARRAY_SIZE(accel_names), d, &a);
	((struct al_vm_info *)out)->accel = (enum al_accel)a;
	return r;
}

static int vm_restored(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	return al__walk_bool(v, path, d, &((struct al_vm_info *)out)->restored);
}

static int vm_restore_ms(const msgpack_object *v, const char *path, void *out,
			 struct al_diags *d)
{
	return al__walk_u64(v, path, d,
			    &((struct al_vm_info *)out)->restore_ms);
}

static int vm_jailed(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	return walk_tristate(v, path, d, &((struct al_vm_info *)out)->jailed);
}

static const struct al__walk_field vm_fields[] = {
    {"template", 0, vm_template, false},
    {"accel", 0, vm_accel, false},
    {"restored", 0, vm_restored, false},
    {"restore_ms", 0, vm_restore_ms, false},
    {"jailed", 0, vm_jailed, false},
};
static const struct al__walk_table vm_table = AL__WALK_TABLE(vm_fields, NULL);

static int net_policy(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	return al__walk_name(v, path, d, &((struct al_net_info *)out)->policy);
}

static int net_bytes_in(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	return al__walk_u64(v, path, d, &((struct al_net_info *)out)->bytes_in);
}

static int net_bytes_out(const msgpack_object *v, const char *path, void *out,
			 struct al_diags *d)
{
	return al__walk_u64(v, path, d,
			    &((struct al_net_info *)out)->bytes_out);
}

/* An array of at most AL_NET_DROPPED_MAX strings of AL_NET_DEST_MAX. */
static int net_dropped(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	struct al_net_info *n = out;
	char sub[160], *s;
	uint32_t len;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, 0, AL_NET_DROPPED_MAX,
			  d, &len))
		return 0;
	for (uint32_t i = 0; i < len; i++) {
		s = NULL;
		al__path_index(sub, sizeof(sub), path, i);
		if (al__walk_str(&v->via.array.ptr[i], sub, AL_NET_DEST_MAX, d,
				 &s) < 0)
			return -ENOMEM;
		if (s)
			snprintf(n->dropped[n->n_dropped++],
				 sizeof(n->dropped[0]), "%s", s);
		free(s);
	}
	return 0;
}

/* An array of at most AL_NET_PACKAGES_MAX strings of AL_NET_PACKAGE_MAX. */
static int net_packages(const msgpack_object *v, const char *path, void *out,
			struct al_diags *d)
{
	struct al_net_info *n = out;
	char sub[160], *s;
	uint32_t len;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, 0, AL_NET_PACKAGES_MAX,
			  d, &len))
		return 0;
	for (uint32_t i = 0; i < len; i++) {
		s = NULL;
		al__path_index(sub, sizeof(sub), path, i);
		if (al__walk_str(&v->via.array.ptr[i], sub, AL_NET_PACKAGE_MAX,
				 d, &s) < 0)
			return -ENOMEM;
		if (s)
			snprintf(n->packages[n->n_packages++],
				 sizeof(n->packages[0]), "%s", s);
		free(s);
	}
	return 0;
}

static const struct al__walk_field net_fields[] = {
    {"policy", 0, net_policy, true},
    {"bytes_in", 0, net_bytes_in, false},
    {"bytes_out", 0, net_bytes_out, false},
    {"dropped", 0, net_dropped, false},
    {"packages", 0, net_packages, false},
};
static const struct al__walk_table net_table =
    AL__WALK_TABLE(net_fields, NULL);

#define TIMING_FIELD(name)                                                     \
	static int timing_##name(const msgpack_object *v, const char *path,    \
				 void *out, struct al_diags *d)                \
	{                                                                      \
		return al__walk_u64(v, path, d,                                \
				    &((struct al_timing *)out)->name);         \
	}
TIMING_FIELD(queued_ms)
TIMING_FIELD(run_ms)
TIMING_FIELD(total_ms)

static const struct al__walk_field timing_fields[] = {
    {"queued_ms", 0, timing_queued_ms, false},
    {"run_ms", 0, timing_run_ms, false},
    {"total_ms", 0, timing_total_ms, false},
};
static const struct al__walk_table timing_table =
    AL__WALK_TABLE(timing_fields, NULL);

static int res_id(const msgpack_object *v, const char *path, void *out,
		  struct al_diags *d)
{
	if (v->type == MSGPACK_OBJECT_STR &&
	    !al_id_valid(v->via.str.ptr, v->via.str.size)) {
		al_diags_add(d, path, AL_ID_RULE, AL_ID_MAX);
		return 0;
	}
	return al__walk_str(v, path, AL_ID_MAX, d,
			    &((struct al_result *)out)->id);
}

/* A job's verdict: "none" is never written (the field is omitted), and
 * "skipped" is a test's alone. */
static int res_verdict(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	int x = 0, r;

	r = walk_enum(v, path, verdict_names + 1, AL_VERDICT_SKIPPED - 1, d,
		      &x);
	((struct al_result *)out)->verdict = (enum al_verdict)(x + 1);
	return r;
}

static int res_score(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_result *res = out;

	res->graded = true;
	return al__walk_u64(v, path, d, &res->score);
}

static int res_max_score(const msgpack_object *v, const char *path,
			 void *out, struct al_diags *d)
{
	struct al_result *res = out;

	res->graded = true;
	return al__walk_u64(v, path, d, &res->max_score);
}

static int step_result_elem(const msgpack_object *v, const char *path,
			    void *out, struct al_diags *d)
{
	return al_step_result_unpack(v, path, out, d);
}

static int res_steps(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_result *res = out;
	void *steps = NULL;
	int r;

	r = al__walk_array(v, path, 0, AL_STEPS_MAX, sizeof(*res->steps),
			   step_result_elem, &steps, &res->n_steps, d);
	if (steps)
		res->steps = steps;
	return r;
}

static int res_files(const msgpack_object *v, const char *path, void *out,
		     struct al_diags *d)
{
	struct al_result *res = out;

	return al__walk_files(v, path, d, &res->files, &res->n_files);
}

static int res_vm(const msgpack_object *v, const char *path, void *out,
		  struct al_diags *d)
{
	return al__walk_map(v, path, &vm_table, &((struct al_result *)out)->vm,
			    d, NULL);
}

static int res_network(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	return al__walk_map(v, path, &net_table,
			    &((struct al_result *)out)->network, d, NULL);
}

static int res_timing(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	return al__walk_map(v, path, &timing_table,
			    &((struct al_result *)out)->timing, d, NULL);
}

static int res_attempt(const msgpack_object *v, const char *path, void *out,
		       struct al_diags *d)
{
	return al__walk_u32(v, path, 0, UINT32_MAX, d,
			    &((struct al_result *)out)->attempt);
}

static int res_meta(const msgpack_object *v, const char *path, void *out,
		    struct al_diags *d)
{
	return al__walk_meta(v, path, d, &((struct al_result *)out)->meta);
}

/* `digest`: exactly AL_DIGEST_HEX lowercase hex digits. */
static int res_digest(const msgpack_object *v, const char *path, void *out,
		      struct al_diags *d)
{
	struct al_result *r = out;
	int rc = al__walk_str(v, path, AL_DIGEST_HEX, d, &r->digest);

	if (rc < 0 || !r->digest)
		return rc;
	if (strlen(r->digest) != AL_DIGEST_HEX ||
	    strspn(r->digest, "0123456789abcdef") != AL_DIGEST_HEX) {
		al_diags_add(d, path, "must be %d lowercase hex digits",
			     AL_DIGEST_HEX);
		free(r->digest);
		r->digest = NULL;
	}
	return rc;
}

static int res_test_counts(const msgpack_object *v, const char *path, void *out,
			   struct al_diags *d)
{
	struct al_result *res = out;

	res->has_tests = true;
	return al__walk_test_counts(v, path, d, &res->test_counts);
}

static const struct al__walk_field result_fields[] = {
    {"id", 0, res_id, true},
    {"status", offsetof(struct al_result, status), walk_status, true},
    {"verdict", 0, res_verdict, false},
    {"error", offsetof(struct al_result, error), walk_error, false},
    {"steps", 0, res_steps, false},
    {"files", 0, res_files, false},
    {"vm", 0, res_vm, false},
    {"network", 0, res_network, false},
    {"timing", 0, res_timing, false},
    {"attempt", 0, res_attempt, false},
    {"worker", offsetof(struct al_result, worker), walk_label, false},
    {"meta", 0, res_meta, false},
    {"digest", 0, res_digest, false},
    {"score", 0, res_score, false},
    {"max_score", 0, res_max_score, false},
    {"test_counts", 0, res_test_counts, false},
};
static const struct al__walk_table result_table =
    AL__WALK_TABLE(result_fields, NULL);

static int result_unpack(const msgpack_object *o, void *out,
			 struct al_diags *d)
{
	struct al_result res = {0};
	int r;

	r = al__walk_map(o, "", &result_table, &res, d, NULL);
	if (r < 0 || d->n || d->dropped) {
		al_result_release(&res);
		return r;
	}
	*(struct al_result *)out = res;
	return 0;
}

int al_result_from_msgpack(const void *buf, size_t len, struct al_result *ret,
			   struct al_diags *d)
{
	return al__decode_document(buf, len, AL_RESULT_MAX_BYTES, result_unpack,
				   ret, d);
}

int al_result_from_json(const char *text, size_t len, struct al_result *ret,
			struct al_diags *d)
{
	/* base64 makes JSON 4/3 the size of the msgpack record */
	return al__decode_json(text, len, AL_RESULT_MAX_BYTES / 3 * 4 + 4096,
			       AL_RESULT_MAX_BYTES, result_unpack, ret, d);
}

void al_result_release(struct al_result *r)
{
	free(r->id);
	free(r->error);
	for (size_t i = 0; r->steps && i < r->n_steps; i++)
		al_step_result_release(&r->steps[i]);
	free(r->steps);
	al__files_release(r->files, r->n_files);
	free(r->vm.template_);
	free(r->network.policy);
	free(r->worker);
	al__blob_release(&r->meta);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}

/* --- encoding ----------------------------------------------------------------- */

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	al__pack_key(pk, key);
	msgpack_pack_uint64(pk, v);
}

static void pack_bool(msgpack_packer *pk, const char *key, bool v)
{
	al__pack_key(pk, key);
	if (v)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

int al_step_result_pack(msgpack_packer *pk, const struct al_step_result *s)
{
	size_t n = 10 + !!s->name + s->has_exit_code + !!s->signal +
		   (s->expect_ok != AL_UNSET) + (s->attested != AL_UNSET) +
		   !!s->error + !!s->compile_output.data +
		   !!s->checker_output.data +
		   2 * (s->verdict != AL_VERDICT_NONE) + 2 * s->has_tests +
		   !!s->reports_error;

	msgpack_pack_map(pk, n);
	if (s->name) {
		al__pack_key(pk, "name");
		al__pack_str(pk, s->name);
	}
	al__pack_key(pk, "status");
	al__pack_str(pk, al_status_name(s->status));
	if (s->has_exit_code) {
		al__pack_key(pk, "exit_code");
		msgpack_pack_int32(pk, s->exit_code);
	}
	if (s->signal) {
		al__pack_key(pk, "signal");
		msgpack_pack_int32(pk, s->signal);
	}
	al__pack_key(pk, "stdout");
	al__pack_blob(pk, &s->stdout_);
	al__pack_key(pk, "stderr");
	al__pack_blob(pk, &s->stderr_);
	pack_bool(pk, "stdout_truncated", s->stdout_truncated);
	pack_bool(pk, "stderr_truncated", s->stderr_truncated);
	pack_u64(pk, "stdout_bytes", s->stdout_bytes);
	pack_u64(pk, "stderr_bytes", s->stderr_bytes);
	pack_u64(pk, "wall_ms", s->wall_ms);
	pack_u64(pk, "cpu_ms", s->cpu_ms);
	pack_u64(pk, "max_rss_kb", s->max_rss_kb);
	if (s->expect_ok != AL_UNSET)
		pack_bool(pk, "expect_ok", s->expect_ok == AL_TRUE);
	if (s->attested != AL_UNSET)
		pack_bool(pk, "attested", s->attested == AL_TRUE);
	if (s->error) {
		al__pack_key(pk, "error");
		al__pack_str(pk, s->error);
	}
	if (s->compile_output.data) {
		al__pack_key(pk, "compile_output");
		al__pack_blob(pk, &s->compile_output);
	}
	if (s->verdict != AL_VERDICT_NONE) {
		al__pack_key(pk, "verdict");
		al__pack_str(pk, al_verdict_name(s->verdict));
		al__pack_key(pk, "score");
		msgpack_pack_uint32(pk, s->score);
	}
	if (s->checker_output.data) {
		al__pack_key(pk, "checker_output");
		al__pack_blob(pk, &s->checker_output);
	}
	if (s->has_tests) {
		al__pack_test_counts(pk, &s->test_counts);
		al__pack_tests(pk, s->tests, s->n_tests);
	}
	if (s->reports_error) {
		al__pack_key(pk, "reports_error");
		al__pack_str(pk, s->reports_error);
	}
	return 0;
}

static void pack_vm(msgpack_packer *pk, const struct al_vm_info *vm)
{
	msgpack_pack_map(pk, 3 + !!vm->template_ + (vm->jailed != AL_UNSET));
	if (vm->template_) {
		al__pack_key(pk, "template");
		al__pack_str(pk, vm->template_);
	}
	al__pack_key(pk, "accel");
	al__pack_str(pk, al_accel_name(vm->accel));
	pack_bool(pk, "restored", vm->restored);
	pack_u64(pk, "restore_ms", vm->restore_ms);
	if (vm->jailed != AL_UNSET)
		pack_bool(pk, "jailed", vm->jailed == AL_TRUE);
}

static void pack_net(msgpack_packer *pk, const struct al_net_info *n)
{
	msgpack_pack_map(pk, n->n_packages ? 5 : 4);
	al__pack_key(pk, "policy");
	al__pack_str(pk, n->policy);
	pack_u64(pk, "bytes_in", n->bytes_in);
	pack_u64(pk, "bytes_out", n->bytes_out);
	al__pack_key(pk, "dropped");
	msgpack_pack_array(pk, n->n_dropped);
	for (size_t i = 0; i < n->n_dropped; i++)
		al__pack_str(pk, n->dropped[i]);
	if (!n->n_packages)
		return;
	al__pack_key(pk, "packages");
	msgpack_pack_array(pk, n->n_packages);
	for (size_t i = 0; i < n->n_packages; i++)
		al__pack_str(pk, n->packages[i]);
}

static void pack_result(msgpack_packer *pk, const void *obj)
{
	const struct al_result *r = obj;
	size_t n = 6 + (r->verdict != AL_VERDICT_NONE) + !!r->error +
		   !!r->n_files + !!r->worker + !!r->meta.len +
		   !!r->network.policy + !!r->digest + 2 * r->graded +
		   r->has_tests;

	msgpack_pack_map(pk, n);
	al__pack_key(pk, "id");
	al__pack_str(pk, r->id ? r->id : "");
	al__pack_key(pk, "status");
	al__pack_str(pk, al_status_name(r->status));
	if (r->verdict != AL_VERDICT_NONE) {
		al__pack_key(pk, "verdict");
		al__pack_str(pk, al_verdict_name(r->verdict));
	}
	if (r->error) {
		al__pack_key(pk, "error");
		al__pack_str(pk, r->error);
	}
	al__pack_key(pk, "steps");
	msgpack_pack_array(pk, r->n_steps);
	for (size_t i = 0; i < r->n_steps; i++)
		al_step_result_pack(pk, &r->steps[i]);
	if (r->n_files) {
		al__pack_key(pk, "files");
		al__pack_files(pk, r->files, r->n_files);
	}
	al__pack_key(pk, "vm");
	pack_vm(pk, &r->vm);
	if (r->network.policy) {
		al__pack_key(pk, "network");
		pack_net(pk, &r->network);
	}
	al__pack_key(pk, "timing");
	msgpack_pack_map(pk, 3);
	pack_u64(pk, "queued_ms", r->timing.queued_ms);
	pack_u64(pk, "run_ms", r->timing.run_ms);
	pack_u64(pk, "total_ms", r->timing.total_ms);
	al__pack_key(pk, "attempt");
	msgpack_pack_uint32(pk, r->attempt);
	if (r->worker) {
		al__pack_key(pk, "worker");
		al__pack_str(pk, r->worker);
	}
	if (r->meta.len) {
		al__pack_key(pk, "meta");
		al__pack_raw(pk, &r->meta);
	}
	if (r->digest) {
		al__pack_key(pk, "digest");
		al__pack_str(pk, r->digest);
	}
	if (r->graded) {
		pack_u64(pk, "score", r->score);
		pack_u64(pk, "max_score", r->max_score);
	}
	if (r->has_tests)
		al__pack_test_counts(pk, &r->test_counts);
}

void al_digest_hex(const void *payload, size_t len,
		   char out[AL_DIGEST_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t h[AL_SHA256_LEN];

	al_sha256(payload, len, h);
	for (size_t i = 0; i < AL_SHA256_LEN; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[AL_DIGEST_HEX] = '\0';
}

bool al_result_digest_is(const struct al_result *r, const char *want)
{
	return r->digest && want && strcmp(r->digest, want) == 0;
}

int al_result_to_msgpack(const struct al_result *r, char **ret,
			 size_t *ret_len)
{
	return al__encode(pack_result, r, ret, ret_len);
}

int al_result_to_json(const struct al_result *r, char **ret)
{
	return al__encode_json(pack_result, r, ret);
}
