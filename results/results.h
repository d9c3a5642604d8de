/* results.h: the job and result schema, the one thing host and guest share.
 *
 * Humans and harnesses write JSON; the wire (Redis, the guest channel) is
 * msgpack with the same field names. This library converts between the two
 * and C structs, and validates. It does no I/O and never logs: callers log.
 *
 * Using it:
 *
 *  1. Decode untrusted bytes with al_job_from_json() or al_job_from_msgpack()
 *     (or the al_result_* pair). Each decoder caps the input size first
 *     (caps.h), bounds nesting, and reports *every* problem it finds in a
 *     `struct al_diags`, each as a field path and a reason:
 *     `steps[1].timeout_ms: must be 1..600000`. Decoding returns 0 only for a
 *     valid document; `ret` is written only then.
 *  2. Defaults are not filled in: an absent field stays absent (0 / NULL) so
 *     that encoding gives back what was given. al_job_limits() resolves the
 *     effective limits against a `struct al_policy` when a job runs.
 *  3. Encode with al_job_to_msgpack() / al_job_to_json() (same for results).
 *     Encoding is canonical: fields in schema order, absent ones omitted, so
 *     JSON -> struct -> msgpack -> struct -> JSON gives identical text.
 *  4. Release with al_job_release() / al_result_release(); both accept a
 *     zeroed struct and leave the struct zeroed.
 *
 * Byte strings (`files` contents, stdin, stdout, expected output) are
 * `struct al_blob`. JSON carries them as a string when they are valid UTF-8
 * (NUL included, as \u0000), else as {"base64": "..."}; msgpack carries them as str when
 * valid UTF-8, else as bin. Both decoders accept every form.
 *
 * Errors are negative errno: -EINVAL invalid document (diags say why),
 * -E2BIG over a size cap (also in diags), -ENOMEM.
 */
#ifndef AL_RESULTS_H
#define AL_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "caps.h"

/* --- byte strings and maps ---------------------------------------------- */

struct al_blob {
	uint8_t *data; /* malloc'd; NUL-terminated for convenience, not counted */
	size_t len;    /* bytes of content */
};

/* base64 (RFC 4648's standard alphabet), the one codec of the results'
 * byte strings and of the front doors. */
size_t al_base64_encoded_len(size_t len);
/* Encode into out (al_base64_encoded_len(len) + 1 bytes, NUL-ended). */
void al_base64_encode(const uint8_t *in, size_t len, char *out);
/* Decode into *ret (malloc'd, NUL-ended past len): padding optional, no
 * white space, the last symbol's unused bits zero (one encoding per byte
 * string). AL_BASE64_LAX: line breaks skipped and the unused bits not
 * checked, as Ruby's decode64 takes what Judge0's clients send.
 * -EINVAL on bad input, -ENOMEM. */
#define AL_BASE64_LAX 1u
int al_base64_decode(const char *in, size_t len, unsigned flags,
		     struct al_blob *ret);

struct al_file {
	char *path;            /* relative, normalised (no ., .., //, leading /) */
	struct al_blob content; /* file bytes */
};

struct al_env {
	char *name;  /* [A-Za-z_][A-Za-z0-9_]* */
	char *value; /* no NUL */
};

/* --- the job -------------------------------------------------------------- */

enum al_compare {
	AL_COMPARE_EXACT = 0, /* byte for byte */
	AL_COMPARE_TRIM,      /* ignoring leading and trailing white space */
	AL_COMPARE_LINES,     /* line by line, ignoring trailing white space */
	AL_COMPARE_TOKENS,    /* white-space separated tokens, equal */
	AL_COMPARE_NUMBERS,   /* tokens; numbers within abs_tol / rel_tol */
};

enum al_run_if {
	AL_RUN_ALWAYS = 0, /* run even when an earlier step failed */
	AL_RUN_SUCCESS,    /* run only when every earlier step was OK */
	AL_RUN_SETUP_OK,   /* run when every earlier step that is not a test
			      was OK: later tests run after a failed one */
};

struct al_expect {
	bool present;           /* the step has `expect` */
	struct al_blob stdout_; /* expected standard output */
	enum al_compare compare; /* how to compare */
	double abs_tol;         /* numbers: absolute tolerance, >= 0 */
	double rel_tol;         /* numbers: relative tolerance, >= 0 */
};

/* A checker program (docs/schema.md, "Checkers"): run after its step
 * as `cmd... input output answer` in a directory of its own. */
struct al_check {
	bool present;            /* the step has `check` */
	char **argv;             /* `cmd`, argc strings, NULL-terminated */
	size_t argc;             /* entries in argv */
	struct al_file *files;   /* placed beside input, output, answer */
	size_t n_files;          /* entries in files */
	struct al_blob answer;   /* the `answer` file */
	uint32_t timeout_ms;     /* 0 = the policy's step default */
};

/* A step's test report file (docs/schema.md, "Test reports"). */
enum al_report_format {
	AL_REPORT_JUNIT = 0, /* JUnit XML (pytest, surefire, ctest, jest) */
	AL_REPORT_TAP,	     /* TAP 12/13 */
};
struct al_report_spec {
	char *path;		      /* relative to the work dir */
	enum al_report_format format; /* `junit:`/`tap:` or the extension */
};

struct al_step {
	char *name;               /* optional label, NULL when absent */
	char **argv;              /* `cmd`, argc strings, NULL-terminated */
	size_t argc;              /* 0 when the step uses `sh` */
	char *sh;                 /* script for /bin/sh -c, NULL when `cmd` */
	bool has_stdin;           /* `stdin` given (may be empty) */
	struct al_blob stdin_;    /* bytes fed to standard input */
	struct al_env *env;       /* extra environment */
	size_t n_env;             /* entries in env */
	char *cwd;                /* relative to the work dir, NULL = work dir */
	uint32_t timeout_ms;      /* 0 = the policy default */
	uint32_t cpu_ms;          /* CPU-time limit (all its processes), 0 = none */
	enum al_run_if run_if;    /* `if` */
	struct al_expect expect;  /* expected output */
	bool attest;              /* the host proves the step's last line
				     (docs/schema.md, "Attested steps") */
	struct al_check check;    /* checker program, judged on the host */
	bool compile;             /* a compile step: failing is CE */
	bool has_weight;          /* `weight` given */
	uint32_t weight;          /* a test's points (default 1 with expect) */
	struct al_report_spec *reports; /* read after the step, on the host */
	size_t n_reports;		/* entries in reports */
};

/* Is step s a test (it has `expect`, `check` or `weight`)? Tests get a verdict
 * and a score of their own (docs/schema.md, "Grading"). */
bool al_step_is_test(const struct al_step *s);
/* A test's weight: `weight`, else 1. */
uint32_t al_step_weight(const struct al_step *s);

/* Job-wide limits; 0 means "not given, use the policy default". */
struct al_limits {
	uint32_t memory_mb;    /* guest RAM */
	uint32_t vcpus;        /* guest CPUs */
	uint32_t wall_ms;      /* the whole VM, all steps */
	uint32_t output_bytes; /* kept per stream per step */
	uint32_t pids;         /* processes per step */
	uint32_t disk_mb;      /* writable space (work dir + /tmp) */
	uint32_t file_size_mb; /* largest file a step may write */
};

struct al_job {
	char *id;                 /* idempotency key, NULL = generate */
	char *template_;          /* VM template, NULL = policy default */
	struct al_file *files;    /* placed in the work dir before step 0 */
	size_t n_files;           /* entries in files */
	struct al_step *steps;    /* 1..AL_STEPS_MAX */
	size_t n_steps;           /* entries in steps */
	struct al_limits limits;  /* job-wide limits */
	char *network;            /* policy name, NULL = "none" */
	char **collect;           /* paths brought back after the last step */
	size_t n_collect;         /* entries in collect */
	struct al_blob meta;      /* any value, kept as its msgpack encoding */
	char *language;           /* `language`: expanded by the worker into
				     template, source file and steps
				     (al_job_expand_language), NULL = none */
	bool has_source;          /* `source_code` given */
	struct al_blob source;    /* `source_code`: the language's source file */
};

/* --- the result ----------------------------------------------------------- */

enum al_status {
	AL_OK = 0, /* exited 0 */
	AL_RE,     /* exited non-zero */
	AL_SG,     /* killed by a signal */
	AL_TO,     /* timed out */
	AL_TL,     /* CPU time limit (`cpu_ms`) exceeded */
	AL_ML,     /* memory limit / OOM kill */
	AL_OL,     /* output limit hit */
	AL_XX,     /* Airlock's own failure, never the job's */
	AL_RJ,     /* the job itself is invalid */
	AL_SK,     /* step skipped: an earlier step failed and it had if=success */
	AL_CX,     /* cancelled (`airlock cancel`): job status only */
	AL_CE,     /* a `compile` step failed (decided on the host) */
	AL_STATUS_COUNT
};

/* A grader's verdict, for the job and for each test step; the mapping
 * to Judge0's status ids is al_verdict_judge0() and docs/schema.md. */
enum al_verdict {
	AL_VERDICT_NONE = 0, /* no step is a test or a compile step */
	AL_VERDICT_ACCEPTED,
	AL_VERDICT_WRONG_ANSWER,
	AL_VERDICT_COMPILE_ERROR,
	AL_VERDICT_TIME_LIMIT,
	AL_VERDICT_MEMORY_LIMIT,
	AL_VERDICT_RUNTIME_ERROR,
	AL_VERDICT_OUTPUT_LIMIT,
	AL_VERDICT_INTERNAL_ERROR,
	AL_VERDICT_SKIPPED, /* a test that did not run: test verdicts only */
	AL_VERDICT_COUNT
};

enum al_accel {
	AL_ACCEL_NONE = 0, /* no VM ran (e.g. RJ) */
	AL_ACCEL_KVM,
	AL_ACCEL_TCG,
};

enum al_tristate {
	AL_UNSET = 0, /* absent */
	AL_FALSE,
	AL_TRUE,
};

/* One test case a step's report named (docs/schema.md, "Test reports"). */
enum al_test_status {
	AL_TEST_PASSED = 0,
	AL_TEST_FAILED,
	AL_TEST_ERROR,
	AL_TEST_SKIPPED,
	AL_TEST_STATUS_COUNT
};
struct al_test_case {
	char *name;		    /* at most AL_TEST_NAME_MAX bytes */
	char *suite;		    /* classname or suite, NULL = none */
	enum al_test_status status; /* passed, failed, error, skipped */
	uint64_t time_ms;	    /* its time, as the report says */
	char *message;		    /* why not passed, NULL = none */
	uint32_t report;	    /* index in the step's `reports` */
};
/* Tests counted, records kept or not. */
struct al_test_counts {
	uint64_t total, passed, failed, error, skipped;
};
/* "passed", "failed", "error", "skipped". */
const char *al_test_status_name(enum al_test_status s);
/* Free n records and the array (NULL is fine). */
void al_tests_release(struct al_test_case *t, size_t n);

struct al_step_result {
	char *name;              /* the step's name, NULL when it had none */
	enum al_status status;   /* how the step ended */
	bool has_exit_code;      /* exited normally */
	int32_t exit_code;       /* 0..255 when has_exit_code */
	int32_t signal;          /* killing signal, 0 = none */
	struct al_blob stdout_;  /* first output_bytes of standard output */
	struct al_blob stderr_;  /* first output_bytes of standard error */
	bool stdout_truncated;   /* stdout produced more than was kept */
	bool stderr_truncated;   /* stderr produced more than was kept */
	uint64_t stdout_bytes;   /* bytes the step wrote to stdout in all */
	uint64_t stderr_bytes;   /* bytes the step wrote to stderr in all */
	uint64_t wall_ms;        /* wall-clock time */
	uint64_t cpu_ms;         /* user + system CPU time */
	uint64_t max_rss_kb;     /* peak memory of the step's cgroup */
	enum al_tristate expect_ok; /* matched `expect`; unset without one */
	enum al_tristate attested; /* `attest`: the last stdout line carried
				      the host's token; unset without one */
	char *error;             /* XX: what failed on our side, else NULL */
	struct al_blob compile_output; /* CE: the compiler's stderr, then
					  its stdout (moved out of them) */
	enum al_verdict verdict; /* a test's verdict, NONE for other steps */
	uint32_t score;          /* a test's points: its weight if accepted */
	struct al_blob checker_output; /* `check`: the checker's stderr, then
					  stdout, the first AL_CHECKER_OUTPUT_MAX
					  bytes */
	bool has_tests;		       /* the step had `reports`: counts set */
	struct al_test_counts test_counts; /* every test of its reports */
	struct al_test_case *tests;	   /* the records kept, AL_TESTS_MAX */
	size_t n_tests;			   /* entries in tests */
	char *reports_error; /* a report refused, cut or missing */
};

struct al_vm_info {
	char *template_;     /* template that ran, NULL when none */
	enum al_accel accel; /* accelerator that ran */
	bool restored;       /* restored from a snapshot (vs cold boot) */
	uint64_t restore_ms; /* restore or boot time */
	enum al_tristate jailed; /* the worker jails its VMMs (root); false:
				    no jail at all (docs/operations.md);
				    unset when no worker made the result */
};

/* A networked job's traffic (docs/network.md): present when the job had a
 * `network` policy. */
#define AL_NET_DROPPED_MAX 16  /* dropped destinations kept */
#define AL_NET_DEST_MAX 63     /* "ADDR:PORT" or "[ADDR6]:PORT" */
#define AL_NET_PACKAGES_MAX 32 /* installed packages kept */
#define AL_NET_PACKAGE_MAX 295 /* "python:" + name (214) + "==" + version */
struct al_net_info {
	char *policy;        /* policy name, NULL = no network (omitted) */
	uint64_t bytes_in;   /* allowed bytes, world -> guest */
	uint64_t bytes_out;  /* allowed bytes, guest -> world */
	size_t n_dropped;    /* entries in dropped */
	char dropped[AL_NET_DROPPED_MAX][AL_NET_DEST_MAX + 1]; /* the first
			      * distinct refused destinations, sorted */
	size_t n_packages;   /* entries in packages */
	char packages[AL_NET_PACKAGES_MAX][AL_NET_PACKAGE_MAX + 1]; /* what
			      * the package gateway served the job,
			      * "ECOSYSTEM:NAME==VERSION", distinct, sorted
			      * (docs/packages.md) */
};

struct al_timing {
	uint64_t queued_ms; /* submit -> picked up */
	uint64_t run_ms;    /* picked up -> VM destroyed */
	uint64_t total_ms;  /* submit -> result stored */
};

struct al_result {
	char *id;                      /* the job's id */
	enum al_status status;         /* first non-OK step's, else OK */
	enum al_verdict verdict;       /* when any step has `expect` */
	char *error;                   /* human text for XX/RJ; no code parses it */
	struct al_step_result *steps;  /* one per job step, in order */
	size_t n_steps;                /* entries in steps */
	struct al_file *files;         /* collected files */
	size_t n_files;                /* entries in files */
	struct al_vm_info vm;          /* facts about the VM */
	struct al_net_info network;    /* its network, policy NULL = none */
	struct al_timing timing;       /* timings */
	uint32_t attempt;              /* 1 for the first delivery */
	char *worker;                  /* which worker ran it */
	struct al_blob meta;           /* the job's meta, msgpack */
	char *digest;                  /* SHA-256 of the job's payload as
					* stored (hex), NULL = unknown */
	bool graded;                   /* some step is a test: score and
					  max_score are set */
	uint64_t score;                /* the tests' scores added up */
	uint64_t max_score;            /* the tests' weights added up */
	bool has_tests;		       /* some step had `reports` */
	struct al_test_counts test_counts; /* the steps' counts added up */
};

/* --- diagnostics ---------------------------------------------------------- */

struct al_diag {
	char path[128];   /* field path, e.g. steps[1].timeout_ms ("" = root) */
	char reason[160]; /* what is wrong, lowercase, no trailing period */
};

struct al_diags {
	struct al_diag items[AL_DIAGS_MAX]; /* the first AL_DIAGS_MAX problems */
	size_t n;                           /* entries used in items */
	size_t dropped;                     /* problems past AL_DIAGS_MAX */
	char id[AL_ID_MAX + 1];             /* the job's id if it was readable */
};

/* Empty `d` (it needs no release). */
void al_diags_init(struct al_diags *d);
/* Append a problem; `fmt` is printf-style for the reason. */
void al_diags_add(struct al_diags *d, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Join as "path: reason; path: reason" into buf (always NUL-terminated);
 * returns the length it needed, like snprintf. */
size_t al_diags_format(const struct al_diags *d, char *buf, size_t size);

/* --- policy: config-driven defaults and maxima ------------------------------ */

struct al_policy {
	struct al_limits defaults;     /* used for absent limits */
	struct al_limits max;          /* largest value a job may ask for */
	uint32_t step_timeout_ms;      /* default step timeout */
	uint32_t step_timeout_max_ms;  /* largest step timeout */
	const char *template_;         /* default template */
	const char *const *templates;  /* allowed templates, NULL-terminated;
					  NULL = any name */
	const char *const *networks;   /* allowed network policies besides
					  "none", NULL-terminated; NULL = none */
	const char *const *snapshots;  /* snapshots jobs may name as their
					  template (besides `templates`),
					  NULL-terminated; NULL = none */
	const struct al_language *languages; /* what `language` may name */
	size_t n_languages;            /* entries in languages */
	const char *templates_from;    /* the config file that sets
					  `templates`, for the refusal;
					  NULL = unsaid */
	const char *const *unbuilt;    /* allowed templates with no image on
					  this host (refused), NULL-terminated;
					  NULL = not checked */
	/* templates.time_scale: "NAME:N ..." (N 1..20), the factor a
	 * `language` job's step timeouts and cpu_ms are multiplied by on
	 * template NAME (a JVM's start under TCG); NULL or "" = none */
	const char *time_scale;
	/* asked at each check instead (serve, which outlives an image
	 * build) of a template `templates` lists: is NAME's image on this
	 * host? NULL = not asked */
	bool (*image_built)(const char *name, const void *arg);
	const void *image_built_arg;
};

/* A language a template runs: its `language = NAME FILE | COMPILE | RUN`
 * line (docs/languages.md). Commands are words split on blanks, no shell. */
#define AL_LANGUAGES_MAX 48
#define AL_LANGUAGE_CMD_MAX 255
struct al_language {
	char name[AL_NAME_MAX + 1];          /* "java", [a-z0-9_+-] */
	char template_[AL_NAME_MAX + 1];     /* the template that runs it */
	char file[AL_NAME_MAX + 1];          /* its source file's name */
	char compile[AL_LANGUAGE_CMD_MAX + 1]; /* compile command, "" = none */
	char run[AL_LANGUAGE_CMD_MAX + 1];   /* run command */
};

/* Space-separated NAME:N pairs (templates.time_scale, [pool] warm): -1
 * when one is malformed (a NAME that breaks the jobs' rule, an N that is
 * not a number in lo..hi), 1 with *ret when `name` (NULL: none) is among
 * them, else 0. The one reader of that grammar, the config's check
 * included. */
int al_name_count(const char *spec, const char *name, unsigned long lo,
		  unsigned long hi, unsigned long *ret);

/* The factor templates.time_scale (`scales`, "NAME:N ...") gives template
 * `tmpl`: 1 when it names none, or scales is NULL or malformed. */
uint32_t al_time_scale(const char *scales, const char *tmpl);

/* Parse the value of a `language` line of template `tmpl` into *ret.
 * Returns 0, or -EINVAL with a reason in why (always NUL-terminated). */
int al_language_parse(const char *tmpl, const char *value,
		      struct al_language *ret, char *why, size_t why_len);

/* The built-in policy (docs/schema.md lists its values). */
const struct al_policy *al_policy_default(void);
/* Is `name` one of the policy's snapshots (docs/snapshots.md)? */
bool al_policy_snapshot(const struct al_policy *p, const char *name);
/* Check `job` against the policy's maxima and allow-lists; adds to `d`.
 * Returns 0 when it fits, -EINVAL otherwise. */
int al_job_check_policy(const struct al_job *job, const struct al_policy *p,
			struct al_diags *d);
/* A job naming a `language` made into a plain one (docs/schema.md,
 * "Languages"): its template (the one of p's allowed templates that
 * declares the language), `source_code` placed as the language's file, a
 * compile step put first (unless a step is `compile`), and the language's
 * run command given to every step without cmd or sh. Does nothing to a
 * job without `language`. Returns 0, -EINVAL (d says why: an unknown
 * language, naming the known ones; a template that does not run it) or
 * -ENOMEM. */
int al_job_expand_language(struct al_job *job, const struct al_policy *p,
			   struct al_diags *d);
/* Effective limits: the job's, else the policy's defaults. */
void al_job_limits(const struct al_job *job, const struct al_policy *p,
		   struct al_limits *ret);
/* Effective timeout of step `i`. */
uint32_t al_job_step_timeout(const struct al_job *job, size_t i,
			     const struct al_policy *p);

/* --- jobs ----------------------------------------------------------------- */

int al_job_from_json(const char *text, size_t len, struct al_job *ret,
		     struct al_diags *d);
int al_job_from_msgpack(const void *buf, size_t len, struct al_job *ret,
			struct al_diags *d);
/* One step alone, from JSON text (a session's exec body): the rules of
 * a job's step; diagnostics name the step's own fields ("cmd"). 0, or
 * -EINVAL / -E2BIG / -ENOMEM with *ret untouched. */
int al_step_from_json(const char *text, size_t len, struct al_step *ret,
		      struct al_diags *d);
/* Encoders return 0 or -ENOMEM; *ret is malloc'd (JSON is NUL-terminated). */
int al_job_to_msgpack(const struct al_job *job, char **ret, size_t *ret_len);
int al_job_to_json(const struct al_job *job, char **ret);
void al_job_release(struct al_job *job);
/* Is `id` a valid job id? [A-Za-z0-9._:/-]{1,AL_ID_MAX}, and no part
 * between slashes is empty, "." or "..". AL_ID_RULE says so (a format
 * taking AL_ID_MAX). */
#define AL_ID_RULE                                                             \
	"must match [A-Za-z0-9._:/-]{1,%d} with no empty, . or .. part "     \
	"between slashes"
bool al_id_valid(const char *id, size_t len);

/* --- results -------------------------------------------------------------- */

int al_result_from_json(const char *text, size_t len, struct al_result *ret,
			struct al_diags *d);
int al_result_from_msgpack(const void *buf, size_t len, struct al_result *ret,
			   struct al_diags *d);
int al_result_to_msgpack(const struct al_result *r, char **ret,
			 size_t *ret_len);
int al_result_to_json(const struct al_result *r, char **ret);
void al_result_release(struct al_result *r);
/* A job payload's digest: the lowercase hex SHA-256 of its bytes (the
 * msgpack stored under job:ID), as the queue keeps it beside the payload
 * and a result carries it (`digest`): docs/queue.md, "Job ids". */
#define AL_DIGEST_HEX 64
void al_digest_hex(const void *payload, size_t len,
		   char out[AL_DIGEST_HEX + 1]);
/* Does result `r` belong to the payload of digest `want` (hex)? False
 * when it carries another digest or none. */
bool al_result_digest_is(const struct al_result *r, const char *want);
/* The job status from its steps: the first non-OK (non-skipped) step's. */
enum al_status al_result_overall_status(const struct al_result *r);
/* Hold a step result the guest reported to what a guest may say: how the
 * step's processes ended (OK, RE, SG, TO, ML, OL). XX is the host's alone
 * (it is retried: a guest must not be able to ask for that), and RJ and
 * SK are decided on the host, so a guest reporting any of them, e.g. the
 * agent's own XX when a step could not be set up (which the job's earlier
 * steps may have caused), gets RE, not retried, with error "guest agent
 * reported XX: <its error>". What only the host decides, `expect_ok`
 * and `attested`, is cleared. 0 or -ENOMEM. */
int al_step_result_from_guest(struct al_step_result *sr);

/* Attested steps (attest.c). The stdin an attested step gets: `token`,
 * a newline, then the step's own stdin (`in` may be NULL); *ret is
 * malloc'd. 0, -EINVAL (empty or over AL_ATTEST_TOKEN_MAX) or -ENOMEM. */
#define AL_ATTEST_TOKEN_MAX 64
int al_attest_stdin(const char *token, const struct al_blob *in,
		    struct al_blob *ret);
/* Set sr->attested: true when the last line of its (untruncated) stdout
 * starts with `token` followed by a space or the line's end; that prefix
 * is then cut from stdout. False otherwise, stdout untouched. */
void al_attest_verify(const char *token, struct al_step_result *sr);

/* Does `out` match the expectation? (exact / trim / lines / tokens /
 * numbers, see expect.c) */
bool al_expect_match(const struct al_expect *e, const struct al_blob *out);

/* --- pieces for other protocols (the guest agent embeds steps) ------------ */

/* Pack one step / step result as a msgpack map into `pk`. */
int al_step_pack(msgpack_packer *pk, const struct al_step *s);
int al_step_result_pack(msgpack_packer *pk, const struct al_step_result *r);
/* Decode one step / step result from an already bounded object (see
 * al_mp_unpack); `path` prefixes diagnostics; `d` may be NULL. */
int al_step_unpack(const msgpack_object *o, const char *path,
		   struct al_step *ret, struct al_diags *d);
int al_step_result_unpack(const msgpack_object *o, const char *path,
			  struct al_step_result *ret, struct al_diags *d);
void al_step_release(struct al_step *s);
/* Limits as the `limits` map (absent = 0 entries omitted), and back with
 * the hard ranges of caps.h; `d` may be NULL. */
int al_limits_pack(msgpack_packer *pk, const struct al_limits *l);
int al_limits_unpack(const msgpack_object *o, const char *path,
		     struct al_limits *ret, struct al_diags *d);
/* Is p[0..len) a relative path as jobs may name them (no absolute path, no
 * . or .. or empty components, no NUL, valid UTF-8, <= AL_PATH_MAX)? */
bool al_relpath_valid(const char *p, size_t len);
void al_step_result_release(struct al_step_result *r);

/* Unpack one msgpack document of exactly `len` bytes into `zone`, after
 * checking, without allocating, that it is well formed, nests at most
 * AL_DEPTH_MAX deep and holds at most `max_nodes` objects. Returns 0,
 * -EBADMSG (malformed, trailing bytes), -E2BIG (too many nodes / too deep)
 * or -ENOMEM. */
int al_mp_unpack(const void *buf, size_t len, size_t max_nodes,
		 msgpack_zone *zone, msgpack_object *ret);
/* The same check alone; returns the object count or a negative errno. */
long al_mp_check(const void *buf, size_t len, size_t max_nodes);

/* --- names ---------------------------------------------------------------- */

const char *al_status_name(enum al_status s); /* "OK", "RE", ... */
int al_status_from_name(const char *s, size_t len); /* -EINVAL if unknown */
const char *al_verdict_name(enum al_verdict v);     /* "accepted", ... */
/* Judge0's status id for verdict v of a step that ended with `signal`
 * (the runtime errors are split by signal there): 3 Accepted .. 13
 * Internal Error; 0 for NONE and SKIPPED, which Judge0 has no id for. */
int al_verdict_judge0(enum al_verdict v, int signal);
/* "SIGSEGV" for 11 ...; NULL for a signal without a name here. */
const char *al_signal_name(int sig);
/* The verdict a finished step's status gives a test (expect_ok decides
 * between accepted and wrong answer for OK). */
enum al_verdict al_verdict_of_status(enum al_status s, bool output_ok);
/* The step the job's verdict comes from: the first test not accepted
 * (nor skipped), or the first other step that failed; SIZE_MAX when
 * none did. */
size_t al_result_failed_step(const struct al_result *r);
/* The signal of a runtime_error verdict's step, else 0. */
int al_result_verdict_signal(const struct al_result *r);
/* "runtime error (SIGSEGV)", "wrong answer": the verdict for people,
 * into buf (always NUL-terminated); returns what snprintf would. */
size_t al_verdict_text(enum al_verdict v, int signal, char *buf,
		       size_t size);
const char *al_accel_name(enum al_accel a);         /* "kvm", "tcg" */

/* Template, network and step names, one rule for jobs, the config and
 * `airlock image build`: [a-z0-9][a-z0-9_.-]*, 1..AL_NAME_MAX bytes. */
bool al_name_valid_n(const char *s, size_t len);
bool al_name_valid(const char *s); /* NUL-terminated */

/* Is data[0..len) valid UTF-8 (no overlongs, no surrogates)? */
bool al_utf8_valid(const uint8_t *data, size_t len);

/* The value of hex digit c (either case), or -1: for the percent escapes
 * of Redis URLs (dispatcher) and HTTP paths (tools/api, gateway). */
int al_hex_digit(int c);

/* A strict unsigned decimal in s[0..n): 1 to 20 digits 0-9 and nothing
 * else (no sign, no blanks, no base prefix), at most `max`. 0 with *ret;
 * -EINVAL (empty, too long or not a digit) or -ERANGE (above max), *ret
 * untouched. The one decimal parser of Redis replies, URLs, ports, the
 * config, network policies and API query values. */
int al_decimal_parse(const char *s, size_t n, uint64_t max, uint64_t *ret);

/* The TCP/UDP port in s[0..n): 1 to 5 decimal digits, 1..65535, nothing
 * else (no sign, no blanks). 0 with *ret, or -EINVAL and *ret untouched:
 * for Sentinel addresses (dispatcher) and network policies (sandbox). */
int al_port_parse(const char *s, size_t n, uint16_t *ret);

/* --- tar (session file transfer; tar.c) ---------------------------------- */

/* Decoding untrusted ustar bytes held in memory: al_tar_init(), then
 * al_tar_next() until it returns 0 (the end) or -EINVAL (t->err says why:
 * a path that is absolute or has a . or .. part, a symlink that does not
 * point down from its directory, a device node or fifo, a pax or GNU
 * extension header, a bad checksum, truncation, over the caps). Caps:
 * max_bytes of file contents in all, max_files entries. */
enum al_tar_type { AL_TAR_FILE, AL_TAR_DIR, AL_TAR_SYMLINK, AL_TAR_HARDLINK };

struct al_tar_entry {
	enum al_tar_type type;
	char path[AL_PATH_MAX + 1]; /* al_relpath_valid() */
	char link[101];             /* symlink or hard link target */
	uint32_t mode;              /* permission bits (& 0777) */
	uint64_t size;              /* bytes at data (files) */
	const uint8_t *data;        /* inside the buffer given */
};

struct al_tar {
	const uint8_t *buf;
	size_t len, off;
	uint64_t max_bytes, bytes;
	uint32_t max_files, files;
	unsigned zeros;
	bool done, failed;
	char err[160];
};

void al_tar_init(struct al_tar *t, const void *buf, size_t len,
		 uint64_t max_bytes, uint32_t max_files);
int al_tar_next(struct al_tar *t, struct al_tar_entry *e);
/* The whole archive: 0, or -EINVAL with the reason in err. */
int al_tar_check(const void *buf, size_t len, uint64_t max_bytes,
		 uint32_t max_files, char *err, size_t errlen);
/* One ustar header block for an entry: 0, -ENAMETOOLONG (a path that
 * does not fit ustar's prefix/name split, a link over 100 bytes) or
 * -EFBIG (8 GiB or more). */
int al_tar_header(uint8_t out[512], const char *path, enum al_tar_type type,
		  uint32_t mode, uint64_t size, const char *link);

#endif
