/* bench_humaneval.h: airlock-bench-queue's HumanEval mode. */
#ifndef AL_BENCH_HUMANEVAL_H
#define AL_BENCH_HUMANEVAL_H

/* What the HumanEval run needs. */
struct he_opts {
	const char *dataset;   /* HumanEval.jsonl.gz */
	const char *airlock;   /* the airlock binary (`airlock batch`) */
	const char *state_dir; /* images and templates; NULL = default */
	const char *json;      /* figures as JSON, NULL = none */
	unsigned workers;      /* Airlock's workers = the peers' concurrency */
};

/* The canonical solutions of every problem, each with its tests, through
 * `airlock batch` (embedded Redis, o->workers workers), `runsc do`,
 * `bwrap` and plain python3, each peer o->workers at a time in a clean
 * environment: wall time, passes and the ratio to Airlock's, on stdout
 * and as JSON. 0, or -errno when the dataset cannot be read. */
int bench_humaneval(const struct he_opts *o);

#endif
