/* report.h: a grader's report over a results file (report.c): HTML and
 * CSV a course staff reads, per submission and per test.
 *
 * Using it: al_report_write(results, jobs, dir, ...) reads RESULTS.jsonl
 * (what `airlock batch -o` writes) and, when `jobs` is not NULL, the
 * JSONL jobs they came from (for the expected output of the first failing
 * test's diff), and writes into `dir` (created if needed):
 *
 *   index.html       status counts, a pass table (a row per submission,
 *                    a column per test), then per submission that failed:
 *                    its compile error or its first failing test's diff
 *   submissions.csv  id, status, verdict, judge0_status, score, max_score,
 *                    tests_passed, tests, first_failed_test,
 *                    compile_output
 *   tests.csv        id, test, name, status, verdict, judge0_status,
 *                    wall_ms, cpu_ms, max_rss_kb, score
 *   cases.csv        every test of the steps' test reports (JUnit XML,
 *                    TAP; docs/schema.md, "Test reports"): id, step,
 *                    report, suite, name, status, time_ms, message
 *
 * The page also has, when some result has test reports, their counts per
 * submission and each one's tests that did not pass.
 *
 * Everything from a result is the job's own bytes: HTML-escaped (and
 * invalid UTF-8 shown as \xNN) in the page, and in the CSV a cell that a
 * spreadsheet would read as a formula (= + - @ first) gets a ' before it.
 */
#ifndef AL_REPORT_H
#define AL_REPORT_H

#include <stddef.h>

/* Write the report; 0, or -errno with a message in err. */
int al_report_write(const char *results, const char *jobs, const char *dir,
		    char *err, size_t errlen);

/* Print every result of `results` as `airlock result` does; 0 or -errno
 * with a message in err. */
int al_report_print(const char *results, char *err, size_t errlen);

#endif
