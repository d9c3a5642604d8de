/* jobset.h: a set of jobs run through the queue and collected in input
 * order, surviving interruption: the machinery of `airlock batch` and
 * `airlock eval`.
 *
 * Theory of operation. The caller adds jobs in input order
 * (al_jobset_add(), or al_jobset_add_local() for a line that already has
 * its result, such as an RJ for an undecodable line), then calls
 * al_jobset_run(), which
 *
 *  1. refuses duplicate ids (or, with allow_duplicates, warns and lets the
 *     later copies share the first one's result: one output line each);
 *  2. opens the store, a JSONL file of result records in arrival order
 *     (`store`, or an unlinked temp file when NULL). Without `resume` it
 *     starts empty; with it, its complete lines (a torn last line is cut
 *     off) and then the lines of `previous` (a finished output, e.g. the
 *     -o file of the last run) mark their ids done: those jobs are not
 *     submitted again;
 *  3. starts the embedded Redis and dispatcher when no Redis is configured
 *     (with an append-only file in the state dir: with `resume`, the
 *     results of an interrupted run are still there), submits the jobs
 *     not done (their ids are idempotency keys: a job whose result is in
 *     Redis does not run again), and waits for them, appending each
 *     result to the store as it arrives (one write(2) per line);
 *  4. returns 0 when every job has a line, -EINTR on SIGINT/SIGTERM (the
 *     store keeps what arrived: rerun with resume), -errno otherwise.
 *
 * An id the queue holds with another payload (a submit refused with
 * -EEXIST, or a stored result whose `digest` is not our payload's) is
 * never taken for ours: the job gets a local RJ line saying so, its input
 * line is named on stderr and `conflicts` counts it (the callers exit 1).
 *
 * Then al_jobset_line() reads job i's line back from the store, and
 * al_jobset_write() writes them all in input order to a temp file beside
 * the output and renames it into place, so an output file is either the
 * old one or a complete new one, never half of one.
 */
#ifndef AL_JOBSET_H
#define AL_JOBSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "embed.h"

/* One job of the set. */
struct al_jobset_job {
	char id[AL_ID_MAX + 1]; /* its id */
	char *payload;		/* msgpack to submit, NULL when local */
	size_t len;		/* bytes of payload */
	uint32_t wall_ms;	/* its effective wall limit */
	char *local;		/* its result's JSON when local, else NULL */
	size_t dup_of;		/* index of the job it repeats, or SIZE_MAX */
	bool done;		/* its line is in the store */
	int8_t status;		/* its status, -1 unknown */
	int8_t verdict;		/* its verdict */
	int8_t signal;		/* a runtime error's signal, else 0 */
	int8_t passed;		/* opts.judge's answer (1, 0), -1 none */
	uint64_t run_ms;	/* its run time */
	off_t off;		/* its line in the store */
	size_t line_len;	/* bytes of that line, '\n' excluded */
	size_t line;		/* its input line (1-based), 0 = unknown */
	char digest[AL_DIGEST_HEX + 1]; /* of payload, "" when local */
};

struct al_jobset_opts {
	const char *name;      /* command name for messages: "batch" */
	/* A job's outcome when its verdict is not the job's (eval: the
	 * check runner's report): 1 passed, 0 failed; NULL = by verdict,
	 * else status. Progress and summary count outcomes only, so they
	 * never say OK of a failed sample (issue 37). */
	int (*judge)(const struct al_result *r);
	const char *store;     /* arrival-order store, NULL = a temp file */
	const char *previous;  /* a finished output to resume from, or NULL */
	bool resume;	       /* keep the store's lines, read `previous` */
	bool allow_duplicates; /* a repeated id warns instead of failing */
	uint32_t workers;      /* embedded workers, 0 = workers.count */
	bool quiet;	       /* no progress or summary */
};

struct al_jobset {
	struct al_jobset_job *jobs;	/* in input order */
	size_t n;			/* entries in jobs */
	size_t done;			/* of them with a line */
	size_t submitted;		/* sent to the queue by this run */
	size_t resumed;			/* done from the store or `previous` */
	size_t conflicts;		/* ids another payload holds: RJ */
	size_t counts[AL_STATUS_COUNT]; /* by status */
	size_t verdicts[AL_VERDICT_COUNT]; /* by verdict */
	size_t plain[AL_STATUS_COUNT];	   /* jobs with no verdict, by status */
	size_t judged[2];		   /* opts.judge: failed, passed */
	size_t rte_signal[128];		/* runtime errors by signal (0 =
					   a non-zero exit) */
	double t0;			/* start, monotonic seconds */
	double last_draw;		/* last progress output */
	bool tty;			/* stderr is a terminal */
	int store_fd;			/* the store, -1 = not open */
	off_t store_end;		/* its length */
	struct al_jobset_opts o;	/* as given to run */
	struct al_cli *cli;		/* config, errors */
	struct alq_client cl;		/* connection */
};

void al_jobset_init(struct al_jobset *s);
void al_jobset_release(struct al_jobset *s);

/* Add a job to submit (its id set: alq_prepare()); takes the payload.
 * 0 or -ENOMEM (the payload is freed then too). */
int al_jobset_add(struct al_jobset *s, const struct alq_prepared *p);
/* Add a job whose result is already known (JSON, copied). */
int al_jobset_add_local(struct al_jobset *s, const char *id, const char *json);

/* A content-derived id for a job without one: "h-" and 24 hex digits of
 * the SHA-256 of its canonical msgpack; the n-th (n >= 2) repeat of the
 * same content gets "-n" appended, so a rerun maps every line to the same
 * id. */
void al_jobset_derive_id(const void *msgpack, size_t len, unsigned nth,
			 char ret[AL_ID_MAX + 1]);

/* Steps 1-4 above. */
int al_jobset_run(struct al_jobset *s, struct al_cli *cli,
		  const struct al_jobset_opts *o);
/* Job i's result line (malloc'd, NUL-terminated, no '\n'). 0, -ENOENT
 * (not done), -errno. */
int al_jobset_line(struct al_jobset *s, size_t i, char **ret);
/* Write every line in input order to `path` (NULL or "-": stdout) through
 * PATH.tmp and rename(2). 0 or -errno. */
int al_jobset_write(struct al_jobset *s, const char *path);
/* The status table and timings (batch's summary) on f. */
void al_jobset_summary(struct al_jobset *s, FILE *f, const char *out_name);
/* Remove the store (after the output is in place). */
void al_jobset_drop_store(struct al_jobset *s);

#endif
