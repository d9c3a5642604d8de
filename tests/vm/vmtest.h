/* vmtest.h: shared setup for tests that run real VMs.
 *
 * Images are built by the `vm_images` CTest fixture into the test state dir
 * ($AIRLOCK_TEST_STATE, default /var/tmp/airlock-test: content-addressed,
 * so reusing it across runs is safe and saves the image build).
 */
#ifndef AL_VMTEST_H
#define AL_VMTEST_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "worker.h"

static char vmtest_run_dir[PATH_MAX];
static pid_t vmtest_pid;

static inline int vmtest_rm(const char *path, const struct stat *st,
			    int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* At exit (of the test process, not of a child it forked): remove our
 * run dir (its uid leases, the jail's mount point), as a host would
 * clear /run at boot. */
static inline void vmtest_cleanup(void)
{
	if (vmtest_run_dir[0] && getpid() == vmtest_pid)
		nftw(vmtest_run_dir, vmtest_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void vmtest_options(struct sb_options *o)
{
	const char *st = getenv("AIRLOCK_TEST_STATE");

	sb_options_init(o);
	snprintf(o->state_dir, sizeof(o->state_dir), "%s",
		 st && *st ? st : "/var/tmp/airlock-test");
	/* a run dir per test process: leak checks count only our VMMs */
	snprintf(o->run_dir, sizeof(o->run_dir), "/tmp/al-run-%d",
		 (int)getpid());
	if (!vmtest_run_dir[0]) {
		snprintf(vmtest_run_dir, sizeof(vmtest_run_dir), "%s",
			 o->run_dir);
		vmtest_pid = getpid();
		atexit(vmtest_cleanup);
	}
	o->accel = SB_ACCEL_AUTO;
	o->memory_mb = 1024;
}

/* Decode a JSON job (the test's own text: must be valid) and run it. */
static inline void vmtest_run(struct al_worker *w, const char *json,
			      struct al_result *res)
{
	struct al_job job = {0};
	struct al_diags d;
	char buf[1024];

	al_diags_init(&d);
	if (al_job_from_json(json, strlen(json), &job, &d) != 0) {
		al_diags_format(&d, buf, sizeof(buf));
		fprintf(stderr, "test job invalid: %s\n", buf);
		abort();
	}
	if (al_worker_run(w, &job, 0, 1, res) != 0)
		abort();
	al_job_release(&job);
}

/* Print the result when an assertion is about to fail. */
static inline void vmtest_dump(const struct al_result *res)
{
	char *json = NULL;

	if (al_result_to_json(res, &json) == 0)
		fprintf(stderr, "result: %.4000s\n", json);
	free(json);
}

/* assert_true(cond), printing the result first when it fails. */
#define CHECK(cond, res)                                                      \
	do {                                                                  \
		if (!(cond))                                                  \
			vmtest_dump(res);                                     \
		assert_true(cond);                                            \
	} while (0)

#endif
