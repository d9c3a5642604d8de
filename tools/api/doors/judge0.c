/* judge0.c: the Judge0 CE door (docs/compat.md, "Judge0 CE"): a
 * submission is a `language` job, its token the job id, its status the
 * job's verdict through al_verdict_judge0().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "door.h"
#include "zipfiles.h"

#define J0_VERSION "1.13.1"

/* Judge0's language ids for the languages the templates run. `name`
 * states the version the image has (Debian bookworm's); `alias` ids
 * are Judge0's ids for other versions of the same language, accepted
 * and run on ours (docs/compat.md). */
static const struct j0_lang {
	int id;
	const char *lang, *name;
	int alias[3];
	bool compiled; /* Judge0's own has a compile_cmd: compiler_options */
} langs[] = {
    {43, "plain-text", "Plain Text", {0}, false},
    {44, "executable", "Executable", {0}, false},
    {45, "nasm", "Assembly (NASM 2.16.01)", {0}, true},
    {46, "bash", "Bash (5.2.15)", {0}, false},
    {50, "c", "C (GCC 12.2.0)", {48, 49, 0}, true},
    {51, "csharp", "C# (Mono 6.8.0)", {0}, true},
    {54, "cpp", "C++ (GCC 12.2.0)", {52, 53, 0}, true},
    {55, "lisp", "Common Lisp (SBCL 2.2.9)", {0}, false},
    {56, "d", "D (GDC 12.2.0)", {0}, true},
    {57, "elixir", "Elixir (1.14.0)", {0}, false},
    {58, "erlang", "Erlang (OTP 25.2)", {0}, false},
    {59, "fortran", "Fortran (GFortran 12.2.0)", {0}, true},
    {60, "go", "Go (1.19)", {0}, true},
    {61, "haskell", "Haskell (GHC 9.0.2)", {0}, true},
    {62, "java", "Java (OpenJDK 17)", {0}, true},
    {63, "javascript", "JavaScript (Node.js)", {0}, false},
    {64, "lua", "Lua (5.4.4)", {0}, true},
    {65, "ocaml", "OCaml (4.13.1)", {0}, true},
    {66, "octave", "Octave (7.3.0)", {0}, false},
    {67, "pascal", "Pascal (FPC 3.2.2)", {0}, true},
    {68, "php", "PHP (8.2)", {0}, false},
    {69, "prolog", "Prolog (SWI-Prolog 9.0)", {0}, true},
    {92, "python", "Python (3.11.2)", {71, 0}, false},
    {72, "ruby", "Ruby (3.1.2)", {0}, false},
    {73, "rust", "Rust (1.63.0)", {0}, true},
    {74, "typescript", "TypeScript (4.8.4)", {0}, true},
    {75, "c-clang", "C (Clang 14.0.6)", {0}, true},
    {76, "cpp-clang", "C++ (Clang 14.0.6)", {0}, true},
    {77, "cobol", "COBOL (GnuCOBOL 3.1.2)", {0}, true},
    {78, "kotlin", "Kotlin (1.3.31)", {0}, true},
    {79, "objective-c", "Objective-C (Clang 14.0.6)", {0}, true},
    {80, "r", "R (4.2.2)", {0}, false},
    {81, "scala", "Scala (2.11.12)", {0}, true},
    {82, "sql", "SQL (SQLite 3.40.1)", {0}, false},
    {85, "perl", "Perl (5.36.0)", {0}, false},
    {86, "clojure", "Clojure (1.11.1)", {0}, false},
    {88, "groovy", "Groovy (2.4.21)", {0}, true},
    {89, "multi-file", "Multi-file program", {0}, false},
};

#define N_LANGS (sizeof(langs) / sizeof(langs[0]))

static const char *const statuses[] = {
    [1] = "In Queue",
    [2] = "Processing",
    [3] = "Accepted",
    [4] = "Wrong Answer",
    [5] = "Time Limit Exceeded",
    [6] = "Compilation Error",
    [7] = "Runtime Error (SIGSEGV)",
    [8] = "Runtime Error (SIGXFSZ)",
    [9] = "Runtime Error (SIGFPE)",
    [10] = "Runtime Error (SIGABRT)",
    [11] = "Runtime Error (NZEC)",
    [12] = "Runtime Error (Other)",
    [13] = "Internal Error",
    [14] = "Exec Format Error",
};

/* The entry of id (its own or an alias) that this host runs, or NULL. */
static const struct j0_lang *lang_of(int id, const struct al_policy *p)
{
	for (size_t i = 0; i < N_LANGS; i++) {
		bool hit = langs[i].id == id;

		for (size_t k = 0; !hit && langs[i].alias[k]; k++)
			hit = langs[i].alias[k] == id;
		if (hit)
			return al_door_language(p, langs[i].lang) ? &langs[i]
								  : NULL;
	}
	return NULL;
}

/* --- limits: Judge0's defaults and maxima (its config_info) --------------- */

static const struct j0_limit {
	const char *field;
	double dflt, max;
} limits[] = {
    {"cpu_time_limit", 5, 15},	    {"cpu_extra_time", 1, 5},
    {"wall_time_limit", 10, 20},    {"memory_limit", 128000, 512000},
    {"stack_limit", 64000, 128000}, {"max_processes_and_or_threads", 60, 120},
    {"max_file_size", 1024, 4096},  {"number_of_runs", 1, 20},
};

enum { L_CPU, L_EXTRA, L_WALL, L_MEM, L_STACK, L_PROCS, L_FSIZE, L_RUNS, L_N };

static void field_err(json_t *errs, const char *field, const char *msg)
{
	json_t *a = json_object_get(errs, field);

	if (!a) {
		a = json_array();
		json_object_set_new(errs, field, a);
	}
	json_array_append_new(a, json_string(msg));
}

/* A number field (a JSON number or a numeric string, as Rails takes it)
 * into v[i] with its default and range checked. */
static void number(json_t *sub, size_t i, double v[L_N], json_t *errs)
{
	json_t *x = json_object_get(sub, limits[i].field);
	char msg[64], *end;

	v[i] = limits[i].dflt;
	if (!x || json_is_null(x))
		return;
	if (json_is_number(x))
		v[i] = json_number_value(x);
	else if (json_is_string(x) && json_string_length(x) < 32 &&
		 (v[i] = strtod(json_string_value(x), &end), *end == 0) &&
		 end != json_string_value(x))
		;
	else
		return field_err(errs, limits[i].field, "is not a number");
	if (v[i] < 0 || (i == L_RUNS && v[i] < 1))
		return field_err(errs, limits[i].field,
				 i == L_RUNS
				     ? "must be greater than or equal to 1"
				     : "must be greater than or equal to 0");
	snprintf(msg, sizeof(msg), "must be less than or equal to %g",
		 limits[i].max);
	if (v[i] > limits[i].max)
		field_err(errs, limits[i].field, msg);
}

/* A text field: a string (or null); base64 decoded when b64. NULL when
 * absent; *ok false (with an error added) when bad. */
static json_t *text(json_t *sub, const char *field, bool b64, json_t *errs,
		    bool *ok)
{
	json_t *x = json_object_get(sub, field);
	uint8_t *bytes = NULL;
	size_t n;
	json_t *j;

	if (!x || json_is_null(x))
		return NULL;
	if (!json_is_string(x)) {
		*ok = false;
		field_err(errs, field, "must be a string");
		return NULL;
	}
	if (json_string_length(x) > AL_DOOR_FIELD_MAX) {
		*ok = false;
		field_err(errs, field, "is too long");
		return NULL;
	}
	if (!b64)
		return json_stringn(json_string_value(x),
				    json_string_length(x));
	if (al_door_b64_decode(json_string_value(x), json_string_length(x),
			       &bytes, &n) < 0) {
		*ok = false;
		field_err(errs, field, "is not valid base64");
		return NULL;
	}
	j = al_door_blob_json(bytes, n);
	free(bytes);
	return j;
}


/* The language: a number (or numeric string), that this host runs. */
static const struct j0_lang *language(json_t *sub, const struct al_policy *p,
				      json_t *errs)
{
	json_t *x = json_object_get(sub, "language_id");
	const struct j0_lang *l;
	long long id = -1;
	char msg[96];

	if (!x || json_is_null(x)) {
		field_err(errs, "language_id", "can't be blank");
		return NULL;
	}
	if (json_is_integer(x))
		id = json_integer_value(x);
	else if (json_is_string(x) && json_string_length(x) < 12)
		id = strtoll(json_string_value(x), NULL, 10);
	l = id > 0 && id < 100000 ? lang_of((int)id, p) : NULL;
	if (!l) {
		snprintf(msg, sizeof(msg),
			 "language with id %lld doesn't exist", id);
		field_err(errs, "language_id", msg);
	}
	return l;
}

/* Shell words for the run (Judge0 runs its run_cmd through bash, args
 * and redirection included): "exec RUN ARGS [2>&1]". */
static json_t *run_sh(const struct al_language *lang, const char *args,
		      bool redirect)
{
	size_t n = strlen(lang->run) + strlen(args) + 16;
	char *s = malloc(n);
	json_t *j;

	if (!s)
		return NULL;
	snprintf(s, n, "exec %s %s%s", lang->run, args,
		 redirect ? " 2>&1" : "");
	j = json_string(s);
	free(s);
	return j;
}

/* Options that change the steps: compiler_options, command_line_arguments,
 * redirect_stderr_to_stdout. Adds to run (the run step) and steps. */
static void options(json_t *sub, const struct j0_lang *j,
		    const struct al_language *lang, json_t *run, json_t *steps,
		    json_t *errs)
{
	json_t *co = json_object_get(sub, "compiler_options"),
	       *args = json_object_get(sub, "command_line_arguments"),
	       *red = json_object_get(sub, "redirect_stderr_to_stdout");
	const char *a = "";

	if (co && !json_is_null(co) &&
	    (!json_is_string(co) || json_string_length(co) > 512))
		field_err(errs, "compiler_options",
			  "must be a string of at "
			  "most 512 characters");
	else if (co && json_string_length(co) &&
		 (!j->compiled || !lang->compile[0])) /* Judge0's rule */
		field_err(errs, "compiler_options",
			  "setting compiler options is only allowed for "
			  "compiled languages");
	else if (co && json_string_length(co)) {
		json_t *cmd = json_array();

		al_door_words(cmd, lang->compile);
		al_door_words(cmd, json_string_value(co));
		json_array_append_new(steps,
				      json_pack("{sssosb}", "name", "compile",
						"cmd", cmd, "compile", 1));
		json_object_set_new(run, "if", json_string("success"));
	}
	if (args && !json_is_null(args) &&
	    (!json_is_string(args) || json_string_length(args) > 512)) {
		field_err(errs, "command_line_arguments",
			  "must be a string of at most 512 characters");
		return;
	}
	if (args && json_is_string(args))
		a = json_string_value(args);
	if (red && !json_is_null(red) && !json_is_boolean(red))
		return field_err(errs, "redirect_stderr_to_stdout",
				 "must be a boolean");
	if (a[0] || json_is_true(red))
		json_object_set_new(run, "sh",
				    run_sh(lang, a, json_is_true(red)));
}

/* Inputs refused as Judge0 refuses them with its defaults, or that have
 * no meaning here (docs/compat.md). */
static void refused(json_t *sub, json_t *errs)
{
	json_t *net = json_object_get(sub, "enable_network"),
	       *cb = json_object_get(sub, "callback_url");

	if (net && !json_is_null(net) && !json_is_boolean(net))
		field_err(errs, "enable_network", "must be a boolean");
	else if (json_is_true(net))
		field_err(errs, "enable_network",
			  "setting enable_network is not allowed");
	if (cb && !json_is_null(cb) &&
	    (!json_is_string(cb) || json_string_length(cb) > AL_HTTP_URL_MAX))
		field_err(errs, "callback_url", "must be a URL");
}

/* additional_files: base64 of a zip (whatever base64_encoded says, as
 * Judge0's controller decodes it), into {path: content}; NULL when
 * absent. Language 89 needs one. */
static json_t *additional(json_t *sub, const struct j0_lang *l, json_t *errs)
{
	json_t *add = json_object_get(sub, "additional_files"), *files = NULL;
	uint8_t *zip = NULL;
	size_t n;
	char why[160] = "is not base64";
	int r = -EINVAL;

	if (!add || json_is_null(add) ||
	    (json_is_string(add) && !json_string_length(add))) {
		if (l && !strcmp(l->lang, "multi-file"))
			field_err(errs, "additional_files", "can't be blank");
		return NULL;
	}
	if (!json_is_string(add) ||
	    json_string_length(add) > AL_DOOR_FIELD_MAX * 4 / 3 + 4) {
		field_err(errs, "additional_files",
			  "must be a base64 zip of at most 1 MiB");
		return NULL;
	}
	if (al_door_b64_decode(json_string_value(add), json_string_length(add),
			       &zip, &n) == 0)
		r = al_door_unzip(zip, n, &files, why, sizeof(why));
	free(zip);
	if (r == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	if (r < 0) {
		char msg[200];

		snprintf(msg, sizeof(msg), "is not a zip this server takes: %s",
			 why);
		field_err(errs, "additional_files", msg);
	}
	return files;
}

/* The first of names that files holds, or NULL. */
static const char *first_of(json_t *files, const char *const *names)
{
	for (; *names; names++)
		if (json_object_get(files, *names))
			return *names;
	return NULL;
}

/* Language 89, a project as Judge0 runs one: the zip's files alone (no
 * source file), its `compile.sh` or else `compile` run by bash when there
 * is one (a compile step), then `run.sh` or else `run` by bash; no
 * compiler options or arguments (Judge0 writes no script for a project).
 * job becomes a template job; run is its run step. */
static void project(json_t *job, const struct al_language *lang, json_t *run,
		    json_t *files, bool redirect)
{
	static const char *const compiles[] = {"compile.sh", "compile", NULL},
				 *const runs[] = {"run.sh", "run", NULL};
	const char *c = first_of(files, compiles), *r = first_of(files, runs);
	json_t *steps = json_array();
	char sh[32];

	json_object_del(job, "source_code");
	json_object_del(job, "language");
	json_object_set_new(job, "template", json_string(lang->template_));
	json_object_set(job, "files", files);
	if (c) {
		json_array_append_new(steps, json_pack("{sss[ss]sb}", "name",
						       "compile", "cmd", "bash",
						       c, "compile", 1));
		json_object_set_new(run, "if", json_string("success"));
	} else {
		json_object_del(run, "if");
	}
	json_object_del(run, "sh");
	snprintf(sh, sizeof(sh), "exec bash %s 2>&1", r ? r : "run.sh");
	json_object_set_new(run, "cmd",
			    redirect
				? json_pack("[sss]", "sh", "-c", sh)
				: json_pack("[ss]", "bash", r ? r : "run.sh"));
	json_array_append(steps, run);
	json_object_set_new(job, "steps", steps);
}

/* Another language's additional files, beside the source: a file of the
 * source's name is not taken (Judge0's `unzip -n` keeps the source). */
static void beside(json_t *job, const struct al_language *lang, json_t *files)
{
	json_t *f = json_object_get(job, "files");

	json_object_del(files, lang->file);
	if (f)
		json_object_update_missing(f, files);
	else
		json_object_set(job, "files", files);
}

/* Is a limit field given (a number or a numeric string)? */
static bool given(json_t *sub, size_t i)
{
	json_t *x = json_object_get(sub, limits[i].field);

	return json_is_number(x) || json_is_string(x);
}

/* stack_limit (KB) when given, memory_limit (KB) per process when
 * enable_per_process_and_thread_memory_limit is set (0: not): the run
 * through a shell that sets RLIMIT_STACK and RLIMIT_AS first, as
 * isolate's -k and -m do; its command the run's own sh or cmd (words
 * quoted), else lang's run command. */
static void rlimit_wrap(json_t *run, const struct al_language *lang,
			double stack_kb, double as_kb)
{
	json_t *sh = json_object_get(run, "sh"),
	       *cmd = json_object_get(run, "cmd");
	size_t i, n = 64;

	if (!sh && !cmd) { /* the language's run command */
		cmd = json_array();
		al_door_words(cmd, lang->run);
		json_object_set_new(run, "cmd", cmd);
	}
	json_t *w;
	char *t, *o;

	json_array_foreach(cmd, i, w) n += json_string_length(w) * 4 + 3;
	n += json_string_length(sh);
	if (!(o = t = malloc(n)))
		return;
	if (stack_kb)
		o += sprintf(o, "ulimit -s %u && ", (unsigned)stack_kb);
	if (as_kb)
		o += sprintf(o, "ulimit -v %u && ", (unsigned)as_kb);
	if (json_is_string(sh))
		o += sprintf(o, "%s", json_string_value(sh));
	else
		o += sprintf(o, "exec");
	json_array_foreach(cmd, i, w)
	{
		*o++ = ' ', *o++ = '\'';
		for (const char *c = json_string_value(w); c && *c; c++)
			o += *c == '\'' ? sprintf(o, "'\\''")
					: sprintf(o, "%c", *c);
		*o++ = '\'';
	}
	*o = 0;
	json_object_del(run, "cmd");
	json_object_set_new(run, "sh", json_string(t));
	free(t);
}

/* number_of_runs: the run step n times in the one VM, each after the
 * last succeeded (Judge0 stops at the first run that is not 3). */
static void runs(json_t *job, json_t *run, unsigned n)
{
	json_t *steps = json_object_get(job, "steps");

	for (unsigned i = 1; i < n && json_is_array(steps); i++) {
		json_t *again = json_deep_copy(run);

		json_object_set_new(again, "if", json_string("success"));
		json_array_append_new(steps, again);
	}
}

/* The job limits Judge0's fields give, only those the submission sets:
 * Judge0's defaults are for a process in isolate, ours for a VM. */
static void job_limits(json_t *sub, json_t *job, const double v[L_N])
{
	json_t *lim = json_object();

	if (json_is_number(json_object_get(sub, limits[L_PROCS].field)) ||
	    json_is_string(json_object_get(sub, limits[L_PROCS].field)))
		json_object_set_new(lim, "pids", json_integer((int)v[L_PROCS]));
	if (json_is_number(json_object_get(sub, limits[L_FSIZE].field)) ||
	    json_is_string(json_object_get(sub, limits[L_FSIZE].field)))
		json_object_set_new(
		    lim, "file_size_mb",
		    json_integer((int)((v[L_FSIZE] + 1023) / 1024) ?: 1));
	if (job && json_object_size(lim))
		json_object_set(job, "limits", lim);
	json_decref(lim);
}

/* Would execve(2) refuse these bytes as a program here (ENOEXEC, Judge0's
 * 14)? What the kernel runs: a 64-bit ELF for this machine's
 * architecture, or a "#!" script. The guest's agent falls back to sh
 * instead, so the door notes it at submit and answers 14 for a run that
 * failed (docs/compat.md). */
static bool exec_format_bad(json_t *src)
{
#if defined(__x86_64__)
	const unsigned machine = 62;
#elif defined(__aarch64__)
	const unsigned machine = 183;
#else
	const unsigned machine = 0;
#endif
	const uint8_t *d;
	uint8_t *bytes = NULL;
	size_t n;
	bool bad;

	if (json_is_string(src)) {
		d = (const uint8_t *)json_string_value(src);
		n = json_string_length(src);
	} else if (al_door_b64_decode(
		       json_string_value(json_object_get(src, "base64")) ?: "",
		       json_string_length(json_object_get(src, "base64")),
		       &bytes, &n) == 0) {
		d = bytes;
	} else {
		return false;
	}
	bad = !(n >= 2 && d[0] == '#' && d[1] == '!') &&
	      !(n >= 20 &&
		!memcmp(d,
			"\x7f"
			"ELF",
			4) &&
		d[4] == 2 && (unsigned)(d[18] | d[19] << 8) == machine);
	free(bytes);
	return bad;
}

/* One submission to a POST /jobs body, or NULL with errs filled. */
/* An interpreted language's job as Judge0 runs it: the interpreter on
 * the source, no syntax-check step, so a syntax error is the run's
 * non-zero exit (11, NZEC) as in Judge0, not a compile error (6). */
static void interpreted(json_t *job, const struct al_language *lang,
			json_t *run)
{
	json_t *files = json_object_get(job, "files"), *cmd;

	if (!files) {
		files = json_object();
		json_object_set_new(job, "files", files);
	}
	json_object_set(files, lang->file, json_object_get(job, "source_code"));
	json_object_del(job, "source_code");
	json_object_del(job, "language");
	json_object_set_new(job, "template", json_string(lang->template_));
	if (!json_object_get(run, "sh") && !json_object_get(run, "cmd")) {
		cmd = json_array();
		al_door_words(cmd, lang->run);
		json_object_set_new(run, "cmd", cmd);
	}
}

static json_t *one_job(json_t *sub, bool b64, const struct al_policy *p,
		       json_t *errs)
{
	const struct j0_lang *l;
	const struct al_language *lang;
	json_t *job = NULL, *run, *steps, *src, *in, *exp, *cb, *zf;
	bool per_process = json_is_true(
	    json_object_get(sub, "enable_per_process_and_thread_memory_limit"));
	double v[L_N];
	bool ok = true;

	if (!json_is_object(sub)) {
		field_err(errs, "submission", "must be an object");
		return NULL;
	}
	l = language(sub, p, errs);
	src = text(sub, "source_code", b64, errs, &ok);
	in = text(sub, "stdin", b64, errs, &ok);
	exp = text(sub, "expected_output", b64, errs, &ok);
	for (size_t i = 0; i < L_N; i++)
		number(sub, i, v, errs);
	if (ok && !src && l && strcmp(l->lang, "multi-file"))
		field_err(errs, "source_code", "can't be blank");
	refused(sub, errs);
	zf = additional(sub, l, errs);
	run = json_object();
	steps = json_array();
	lang = l ? al_door_language(p, l->lang) : NULL;
	if (lang)
		options(sub, l, lang, run, steps, errs);
	if (json_object_size(errs))
		goto out;
	json_object_set_new(run, "stdin",
			    in ? json_incref(in) : json_string(""));
	if (exp)
		json_object_set_new(
		    run, "expect",
		    json_pack("{sOss}", "stdout", exp, "compare", "lines"));
	json_object_set_new(run, "timeout_ms",
			    json_integer((json_int_t)(v[L_WALL] * 1000)));
	json_object_set_new(
	    run, "cpu_ms",
	    json_integer((json_int_t)((v[L_CPU] + v[L_EXTRA]) * 1000)));
	json_array_append(steps, run);
	job = json_pack(
	    "{sssosOs{sssisIsfsfsfsfsfsfsfsf}}", "language", l->lang,
	    "source_code", src ? json_incref(src) : json_string(""), "steps",
	    steps, "meta", "door", "judge0", "language_id", l->id, "created_ms",
	    (json_int_t)al_wall_ms(), "cpu_time_limit", v[L_CPU],
	    "cpu_extra_time", v[L_EXTRA], "wall_time_limit", v[L_WALL],
	    "memory_limit", v[L_MEM], "stack_limit", v[L_STACK],
	    "max_file_size", v[L_FSIZE], "number_of_runs", v[L_RUNS],
	    "max_processes_and_or_threads", v[L_PROCS]);
	job_limits(sub, job, v);
	if (job && zf && !strcmp(l->lang, "multi-file"))
		project(job, lang, run, zf,
			json_is_true(
			    json_object_get(sub, "redirect_stderr_to_stdout")));
	else if (job && zf)
		beside(job, lang, zf);
	if (job && al_door_check_only(lang))
		interpreted(job, lang, run);
	if (job && (given(sub, L_STACK) || per_process))
		rlimit_wrap(run, lang, given(sub, L_STACK) ? v[L_STACK] : 0,
			    per_process ? v[L_MEM] : 0);
	if (job)
		runs(job, run, (unsigned)v[L_RUNS]);
	if (job && b64)
		json_object_set_new(json_object_get(job, "meta"), "base64",
				    json_true());
	if (job && !strcmp(l->lang, "executable") && src &&
	    exec_format_bad(src))
		json_object_set_new(json_object_get(job, "meta"), "exec_format",
				    json_true());
	if (job && (cb = json_object_get(sub, "callback_url")) &&
	    json_is_string(cb))
		json_object_set(job, "callback_url", cb);
out:
	json_decref(zf);
	json_decref(run);
	json_decref(steps);
	json_decref(src);
	json_decref(in);
	json_decref(exp);
	return job;
}

unsigned al_judge0_jobs(const char *body, size_t len, bool batch, bool b64,
			const struct al_policy *p, json_t **ret_jobs,
			json_t **ret_err)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL), *subs;
	json_t *jobs = json_array(), *errs = json_array();
	bool bad = false;
	size_t i;
	json_t *s;

	*ret_jobs = *ret_err = NULL;
	subs = batch ? json_object_get(doc, "submissions") : doc;
	if (!json_is_object(doc) || (batch && !json_is_array(subs))) {
		*ret_err = json_pack("{ss}", "error",
				     batch ? "submissions: must be an array"
					   : "the body must be a JSON object");
		json_decref(doc), json_decref(jobs), json_decref(errs);
		return 400;
	}
	if (batch && (json_array_size(subs) == 0 ||
		      json_array_size(subs) > AL_DOOR_BATCH_MAX)) {
		*ret_err = json_pack(
		    "{ss}", "error",
		    "number of submissions in a batch should be between 1 and "
		    "20");
		json_decref(doc), json_decref(jobs), json_decref(errs);
		return 422;
	}
	if (!batch) {
		json_t *a = json_array();

		json_array_append(a, doc);
		subs = a;
	} else {
		json_incref(subs);
	}
	json_array_foreach(subs, i, s)
	{
		json_t *e = json_object(), *job = one_job(s, b64, p, e);

		bad |= !job;
		json_array_append_new(jobs, job ? job : json_null());
		json_array_append_new(errs, e);
	}
	json_decref(subs);
	json_decref(doc);
	if (!batch && bad) {
		*ret_err = json_incref(json_array_get(errs, 0));
		json_decref(errs), json_decref(jobs);
		return 422;
	}
	*ret_jobs = jobs;
	*ret_err = errs; /* per submission: {} for the good ones */
	return 0;
}

/* --- the answer: a result in Judge0's fields ----------------------------- */

static bool has_text(const struct al_blob *b, const char *needle)
{
	return b->data && memmem(b->data, b->len, needle, strlen(needle));
}

/* The run Judge0 reports: the last run step that ran (with
 * number_of_runs, later ones are skipped after one that failed). */
static const struct al_step_result *last_run(const struct al_result *r)
{
	const struct al_step_result *c = al_door_compile_step(r),
				    *run = al_door_run_step(r);

	while (run && run > r->steps && run->status == AL_SK && run - 1 != c)
		run--;
	return run;
}

/* Judge0's status id of a finished job (meta: what the door noted). */
static int status_id(const struct al_result *r, json_t *meta)
{
	const struct al_step_result *cmp = al_door_compile_step(r),
				    *run = last_run(r);
	enum al_verdict v;
	int id;

	if (cmp && cmp->status == AL_CE)
		return 6;
	if (r->status == AL_XX || r->status == AL_RJ || r->status == AL_CX ||
	    !run)
		return 13;
	if (has_text(&run->stderr_, "Exec format error") ||
	    (run->status != AL_OK &&
	     json_is_true(json_object_get(meta, "exec_format"))))
		return 14;
	v = r->verdict != AL_VERDICT_NONE
		? r->verdict
		: al_verdict_of_status(run->status, true);
	id = al_verdict_judge0(v, run->signal);
	return id ? id : 13;
}

/* isolate's words for how the run ended, as Judge0 passes them on. */
static void message(const struct al_result *r, int id, char *buf, size_t n)
{
	const struct al_step_result *run = last_run(r);

	buf[0] = 0;
	if (id == 13)
		snprintf(buf, n, "%s", r->error ? r->error : "internal error");
	else if (!run || id == 6)
		return;
	else if (id == 5)
		snprintf(buf, n, "Time limit exceeded");
	else if (run->signal)
		snprintf(buf, n, "Caught fatal signal %d", run->signal);
	else if (run->has_exit_code && run->exit_code)
		snprintf(buf, n, "Exited with error status %d", run->exit_code);
}

/* A text field: null when empty (as Judge0), base64 when asked; false
 * when it is not UTF-8 and base64 was not asked. */
static bool put_text(json_t *o, const char *key, const uint8_t *data,
		     size_t len, bool b64)
{
	if (!data || !len) {
		json_object_set_new(o, key, json_null());
		return true;
	}
	if (b64) {
		json_object_set_new(o, key, al_door_b64_json(data, len));
		return true;
	}
	if (!al_utf8_valid(data, len))
		return false;
	json_object_set_new(o, key, json_stringn((const char *)data, len));
	return true;
}

static json_t *iso_time(uint64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[40];

	if (!ms || !gmtime_r(&t, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03uZ",
		 (unsigned)(ms % 1000));
	return json_string(buf);
}

/* The run's facts: time, memory, exit. With number_of_runs, time and
 * memory are the mean over the runs that ran, as Judge0 reports them. */
static void run_facts(json_t *o, const struct al_result *r,
		      const struct al_step_result *run)
{
	const struct al_step_result *c = r ? al_door_compile_step(r) : NULL;
	uint64_t cpu = 0, rss = 0, n = 0;

	for (size_t i = 0; run && i < r->n_steps; i++)
		if (&r->steps[i] != c && r->steps[i].status != AL_SK)
			cpu += r->steps[i].cpu_ms,
			    rss += r->steps[i].max_rss_kb, n++;
	n = n ? n : 1;
	json_object_set_new(
	    o, "time", run ? al_door_seconds((cpu + n / 2) / n) : json_null());
	json_object_set_new(o, "wall_time",
			    run ? al_door_seconds(run->wall_ms) : json_null());
	json_object_set_new(o, "memory",
			    run ? json_integer((json_int_t)((rss + n / 2) / n))
				: json_null());
	json_object_set_new(o, "exit_code",
			    run && run->has_exit_code
				? json_integer(run->exit_code)
				: json_null());
	json_object_set_new(o, "exit_signal",
			    run && run->signal ? json_integer(run->signal)
					       : json_null());
}

/* The whole submission (every field we have) of a job in state st;
 * NULL when some text is not UTF-8 and b64 is off. */
static json_t *submission(const char *token, enum alq_state st,
			  const struct al_result *r, bool b64)
{
	const struct al_step_result *run = NULL, *cmp = NULL;
	json_t *o = r ? al_door_meta(&r->meta) : json_object();
	int id = st == ALQ_QUEUED ? 1 : st == ALQ_RUNNING ? 2 : status_id(r, o);
	json_t *created = json_object_get(o, "created_ms");
	char msg[256] = "";
	bool ok = true;

	json_object_del(o, "door");
	json_object_del(o, "exec_format");
	json_object_del(o, "base64");
	if (id > 2) {
		run = last_run(r);
		run = run && run->status != AL_SK ? run : NULL;
		cmp = al_door_compile_step(r);
		message(r, id, msg, sizeof(msg));
	}
	json_object_set_new(o, "token", json_string(token));
	ok &= put_text(o, "stdout", run ? run->stdout_.data : NULL,
		       run ? run->stdout_.len : 0, b64);
	ok &= put_text(o, "stderr", run ? run->stderr_.data : NULL,
		       run ? run->stderr_.len : 0, b64);
	ok &=
	    put_text(o, "compile_output", cmp ? cmp->compile_output.data : NULL,
		     cmp ? cmp->compile_output.len : 0, b64);
	ok &= put_text(o, "message", (const uint8_t *)msg, strlen(msg), b64);
	run_facts(o, r, run);
	json_object_set_new(
	    o, "status",
	    json_pack("{siss}", "id", id, "description", statuses[id]));
	json_object_set_new(o, "status_id", json_integer(id));
	json_object_set_new(o, "created_at",
			    iso_time(json_is_integer(created)
					 ? (uint64_t)json_integer_value(created)
					 : 0));
	json_object_set_new(
	    o, "finished_at",
	    iso_time(id > 2 && json_is_integer(created)
			 ? (uint64_t)json_integer_value(created) +
			       r->timing.total_ms
			 : 0));
	json_object_del(o, "created_ms");
	for (size_t i = 0; i < 3; i++) /* kept once, in the job: not here */
		json_object_set_new(o,
				    (const char *[]){"source_code", "stdin",
						     "expected_output"}[i],
				    json_null());
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

#define DEFAULT_FIELDS                                                         \
	"token,stdout,stderr,compile_output,message,status,time,memory"

/* The fields asked for (?fields=a,b or *), from the whole submission. */
static json_t *select_fields(json_t *full, const char *fields)
{
	json_t *o;
	char name[64];

	if (fields && !strcmp(fields, "*"))
		return full;
	if (!fields || !fields[0])
		fields = DEFAULT_FIELDS;
	o = json_object();
	while (*fields) {
		size_t n = strcspn(fields, ",");
		json_t *v;

		if (n && n < sizeof(name)) {
			memcpy(name, fields, n);
			name[n] = 0;
			v = json_object_get(full, name);
			if (v)
				json_object_set(o, name, v);
		}
		fields += n + (fields[n] == ',');
	}
	json_decref(full);
	return o;
}

/* A Judge0 callback: PUT of the submission, its default fields, base64
 * when it was submitted so (or when its output is not UTF-8). */
static char *callback_body(const struct al_result *r, const char *id)
{
	json_t *meta = al_door_meta(&r->meta), *j;
	bool b64 = json_is_true(json_object_get(meta, "base64"));
	char *s;

	json_decref(meta);
	j = submission(id, ALQ_DONE, r, b64);
	if (!j)
		j = submission(id, ALQ_DONE, r, true);
	j = j ? select_fields(j, NULL) : NULL;
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

static const struct al_callback_shape j0_callback = {"PUT", callback_body};

#define NOT_UTF8                                                               \
	"some attributes for this submission cannot be converted to UTF-8, "   \
	"use base64_encoded=true query parameter"

static const char *query(const struct al_door_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result err(const struct al_door_req *r, unsigned status,
			   const char *msg)
{
	return al_door_error(AL_DOOR_JUDGE0, r->c, status, msg);
}

/* One submission as asked, or NULL (not UTF-8, *bad set; or unknown). */
static json_t *fetch(const struct al_door_req *r, const char *token,
		     uint32_t wait_s, bool *bad, int *ret_err)
{
	struct al_result res = {0};
	enum alq_state st;
	json_t *j = NULL;

	*ret_err = al_id_valid(token, strlen(token))
		       ? al_http_job_result(r->h, token, wait_s, &st, &res)
		       : -ENOENT;
	if (*ret_err == 0 && st == ALQ_UNKNOWN)
		*ret_err = -ENOENT;
	if (*ret_err == 0) {
		j = submission(token, st, &res,
			       al_door_has(query(r, "base64_encoded")));
		*bad |= !j;
	}
	al_result_release(&res);
	return j ? select_fields(j, query(r, "fields")) : NULL;
}

static enum MHD_Result get_one(const struct al_door_req *r, const char *token,
			       uint32_t wait_s, unsigned status)
{
	bool bad = false;
	int e;
	json_t *j = fetch(r, token, wait_s, &bad, &e);

	if (j)
		return al_http_send_json_retry(r->c, status, j, 0);
	if (bad)
		return err(r, 400, NOT_UTF8);
	return e == -ENOENT ? err(r, 404, "submission not found")
			    : err(r, 503, "the queue is unavailable");
}

/* GET /submissions/batch?tokens=a,b: {"submissions": [...]}. */
static enum MHD_Result get_batch(const struct al_door_req *r)
{
	const char *t = query(r, "tokens");
	json_t *arr = json_array();
	char token[AL_ID_MAX + 1];
	bool bad = false;
	size_t k = 0;
	int e;

	if (!t || !t[0]) {
		json_decref(arr);
		return err(r, 400, "tokens: required");
	}
	while (*t && k++ < AL_DOOR_BATCH_MAX) {
		size_t n = strcspn(t, ",");
		json_t *j = NULL;

		if (n <= AL_ID_MAX) {
			memcpy(token, t, n);
			token[n] = 0;
			j = fetch(r, token, 0, &bad, &e);
		}
		json_array_append_new(arr, j ? j : json_null());
		t += n + (t[n] == ',');
	}
	if (*t || bad) {
		json_decref(arr);
		return bad ? err(r, 400, NOT_UTF8)
			   : err(r, 422,
				 "number of tokens should be at most 20");
	}
	return al_http_send_json_retry(
	    r->c, 200, json_pack("{so}", "submissions", arr), 0);
}

/* POST /submissions and /submissions/batch. */
static enum MHD_Result create(const struct al_door_req *r, bool batch)
{
	const struct al_http_opts *o = al_http_options(r->h);
	json_t *jobs = NULL, *errs = NULL, *good, *out, *job;
	char(*ids)[AL_ID_MAX + 1] = NULL, why[512];
	unsigned st;
	size_t i, k = 0;

	st = al_judge0_jobs(r->body, r->len, batch,
			    al_door_has(query(r, "base64_encoded")), o->policy,
			    &jobs, &errs);
	if (st)
		return al_http_send_json_retry(r->c, st, errs, 0);
	good = json_array();
	json_array_foreach(jobs, i, job) if (!json_is_null(job))
	    json_array_append(good, job);
	ids = calloc(json_array_size(good) + 1, sizeof(*ids));
	st = !ids		     ? 503
	     : json_array_size(good) ? al_door_submit(r->h, good, &j0_callback,
						      ids, why, sizeof(why))
				     : (json_decref(good), 0);
	if (st) {
		free(ids);
		json_decref(jobs), json_decref(errs);
		return err(r, st, why);
	}
	if (!batch) {
		json_decref(jobs), json_decref(errs);
		st =
		    al_door_has(query(r, "wait"))
			? (unsigned)get_one(r, ids[0], o->cfg->http.max_wait_s,
					    201)
			: (unsigned)al_http_send_json_retry(
			      r->c, 201, json_pack("{ss}", "token", ids[0]), 0);
		free(ids);
		return (enum MHD_Result)st;
	}
	out = json_array();
	json_array_foreach(jobs, i, job) json_array_append_new(
	    out, json_is_null(job) ? json_incref(json_array_get(errs, i))
				   : json_pack("{ss}", "token", ids[k++]));
	free(ids);
	json_decref(jobs), json_decref(errs);
	return al_http_send_json_retry(r->c, 201, out, 0);
}

/* --- the static routes --------------------------------------------------- */

static json_t *lang_json(const struct j0_lang *l, const struct al_policy *p,
			 bool full)
{
	const struct al_language *a = al_door_language(p, l->lang);

	if (!full)
		return json_pack("{siss}", "id", l->id, "name", l->name);
	return json_pack("{sisssbssss?ss}", "id", l->id, "name", l->name,
			 "is_archived", 0, "source_file", a->file,
			 "compile_cmd", a->compile[0] ? a->compile : NULL,
			 "run_cmd", a->run);
}

static enum MHD_Result languages(const struct al_door_req *r)
{
	const struct al_policy *p = al_http_options(r->h)->policy;
	bool all = !strcmp(r->path, "/languages/all");
	json_t *arr = json_array();

	for (size_t i = 0; i < N_LANGS; i++)
		if (al_door_language(p, langs[i].lang)) {
			json_t *j = lang_json(&langs[i], p, false);

			if (all)
				json_object_set_new(j, "is_archived",
						    json_false());
			json_array_append_new(arr, j);
		}
	return al_http_send_json_retry(r->c, 200, arr, 0);
}

static enum MHD_Result language_one(const struct al_door_req *r)
{
	const struct al_policy *p = al_http_options(r->h)->policy;
	const char *s = r->path + strlen("/languages/");
	char *end;
	long id = strtol(s, &end, 10);
	const struct j0_lang *l = *end || end == s ? NULL : lang_of((int)id, p);

	if (!l || l->id != id)
		return err(r, 404, "language not found");
	return al_http_send_json_retry(r->c, 200, lang_json(l, p, true), 0);
}

static enum MHD_Result statuses_get(const struct al_door_req *r)
{
	json_t *arr = json_array();

	for (int i = 1; i <= 14; i++)
		json_array_append_new(
		    arr,
		    json_pack("{siss}", "id", i, "description", statuses[i]));
	return al_http_send_json_retry(r->c, 200, arr, 0);
}

static enum MHD_Result config_info(const struct al_door_req *r)
{
	const struct al_http_opts *o = al_http_options(r->h);
	json_t *j = json_pack(
	    "{sbsbsbsbsbsbsbsisbsisi}", "maintenance_mode", 0,
	    "enable_wait_result", 1, "enable_compiler_options", 1,
	    "enable_command_line_arguments", 1, "enable_submission_delete", 0,
	    "enable_callbacks", o->callbacks != NULL, "enable_additional_files",
	    1, "max_queue_size", (int)o->cfg->http.queue_cap,
	    "enable_batched_submissions", 1, "max_submission_batch_size",
	    AL_DOOR_BATCH_MAX, "callbacks_max_tries",
	    (int)o->cfg->http.callback_attempts);

	for (size_t i = 0; i < L_N; i++) {
		char key[64];

		json_object_set_new(j, limits[i].field,
				    json_real(limits[i].dflt));
		snprintf(key, sizeof(key), "max_%s", limits[i].field);
		json_object_set_new(j, key, json_real(limits[i].max));
	}
	json_object_set_new(j, "allow_enable_network", json_false());
	json_object_set_new(j, "enable_network", json_false());
	json_object_set_new(j, "redirect_stderr_to_stdout", json_false());
	return al_http_send_json_retry(r->c, 200, j, 0);
}

static enum MHD_Result about(const struct al_door_req *r)
{
	if (!strcmp(r->path, "/version")) {
		char *v = strdup(J0_VERSION);
		struct MHD_Response *res;
		enum MHD_Result ret;

		if (!v)
			return MHD_NO;
		res = MHD_create_response_from_buffer(strlen(v), v,
						      MHD_RESPMEM_MUST_FREE);
		if (!res)
			return MHD_NO;
		MHD_add_response_header(res, "Content-Type", "text/plain");
		ret = MHD_queue_response(r->c, 200, res);
		MHD_destroy_response(res);
		return ret;
	}
	return al_http_send_json_retry(
	    r->c, 200,
	    json_pack("{ssssss}", "version", J0_VERSION, "homepage",
		      "docs/compat.md", "maintainer",
		      "Airlock (a Judge0 CE door onto its queue)"),
	    0);
}

static enum MHD_Result workers(const struct al_door_req *r)
{
	struct alq_status st;
	uint32_t n = 0, busy = 0;

	if (al_http_queue_status(r->h, &st) < 0)
		return err(r, 503, "the queue is unavailable");
	for (size_t i = 0; i < st.n_serves; i++)
		n += st.serves[i].workers, busy += st.serves[i].busy;
	return al_http_send_json_retry(
	    r->c, 200,
	    json_pack("[{sssIsisisisisi}]", "queue", J0_VERSION, "size",
		      (json_int_t)(st.depth > 0 ? st.depth : 0), "available",
		      (int)n, "idle", (int)(n - busy), "working", (int)busy,
		      "paused", 0, "failed", 0),
	    0);
}

enum MHD_Result al_judge0_handle(const struct al_door_req *r)
{
	static const struct {
		const char *path;
		enum MHD_Result (*fn)(const struct al_door_req *r);
	} fixed[] = {
	    {"/languages", languages},	 {"/languages/all", languages},
	    {"/statuses", statuses_get}, {"/config_info", config_info},
	    {"/about", about},		 {"/version", about},
	    {"/workers", workers},
	};
	bool post = !strcmp(r->method, "POST");

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(r->path, fixed[i].path))
			return fixed[i].fn(r);
	if (!strncmp(r->path, "/languages/", 11))
		return language_one(r);
	if (!strcmp(r->path, "/submissions"))
		return post ? create(r, false)
			    : err(r, 405, "method not allowed");
	if (!strcmp(r->path, "/submissions/batch"))
		return post ? create(r, true) : get_batch(r);
	if (post)
		return err(r, 405, "method not allowed");
	return get_one(r, r->path + strlen("/submissions/"), 0, 200);
}
