/* testreport.h: a step's test report (JUnit XML, TAP) read into per-test
 * records (testreport.c; docs/schema.md, "Test reports").
 *
 * The bytes are the job's and untrusted: they came back from the guest
 * as `collect`ed files do (capped, no guest path followed on the host).
 * JUnit XML is parsed by expat (Debian's libexpat), never by hand, with
 * any DOCTYPE refused (so no entity is ever declared or expanded), the
 * element nesting capped at AL_REPORT_DEPTH_MAX and every string copied
 * capped; TAP is read line by line. Records past a cap are counted, not
 * kept; a report that is refused or cut says why in `error`, and what was
 * read before the problem is kept. Nothing here allocates more than
 * the caps allow beyond expat's own buffers (bounded by the input).
 *
 * Using it: zero a struct al_report_out, set max_tests and max_bytes,
 * call al_report_parse() once per report file, then take tests, n_tests,
 * counts and error; al_report_out_release() frees what is left.
 */
#ifndef AL_TESTREPORT_H
#define AL_TESTREPORT_H

#include <stddef.h>
#include <stdint.h>

#include "results.h"

#define AL_REPORT_ERROR_MAX 1024 /* bytes of `error` kept */

struct al_report_out {
	struct al_test_case *tests;	 /* records kept, malloc'd */
	size_t n_tests, cap;		 /* used, allocated */
	struct al_test_counts counts;	 /* every test read, kept or not */
	size_t max_tests;		 /* records kept at most */
	uint64_t max_bytes;		 /* bytes of records kept at most */
	uint64_t bytes;			 /* bytes of records kept */
	uint64_t dropped;		 /* tests read but not kept */
	char error[AL_REPORT_ERROR_MAX]; /* "; "-joined problems, "" none */
};

/* The bytes a record adds to a result (its strings and a bound of the
 * rest), as max_bytes counts them. */
uint64_t al_report_record_bytes(const struct al_test_case *t);

/* Read report `index` (its position in the step's `reports`, for the
 * records and the messages) of `format` from p[0..n) into out. Returns 0
 * (problems, if any, are in out->error: a refused report, a cut one, a
 * broken plan) or -ENOMEM. */
int al_report_parse(enum al_report_format format, uint32_t index,
		    const uint8_t *p, size_t n, struct al_report_out *out);

/* Add a problem to out->error ("report[INDEX]: WHY"). */
void al_report_problem(struct al_report_out *out, uint32_t index,
		       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void al_report_out_release(struct al_report_out *out);

#endif
