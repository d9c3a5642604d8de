/* caps.h: every hard size cap of the job and result schema, in one place.
 *
 * Decoders check these before they allocate. They are compile-time upper
 * bounds; a deployment's config may only lower the ones that are limits
 * (memory, time, ...), never raise them. docs/schema.md lists them all: keep
 * the two in step.
 */
#ifndef AL_CAPS_H
#define AL_CAPS_H

/* encoded sizes */
#define AL_JOB_MAX_BYTES (16u << 20)    /* one job, JSON text or msgpack */
#define AL_RESULT_MAX_BYTES (96u << 20) /* one result record, msgpack */
#define AL_META_MAX_BYTES (64u << 10)   /* `meta`, as msgpack */
#define AL_NODES_MAX (1u << 20)         /* msgpack objects in one document */
#define AL_DEPTH_MAX 32                 /* container nesting, root = 1 (msgpack-c's own stack is 32) */
#define AL_META_DEPTH_MAX 16            /* container nesting inside `meta` */

/* names and strings */
#define AL_ID_MAX 128           /* job id: [A-Za-z0-9._:/-]{1,128}, al_id_valid() */
#define AL_NAME_MAX 64          /* template, network, step name, worker */
#define AL_PATH_MAX 512         /* a relative path in files/collect/cwd */
#define AL_ERROR_MAX (8u << 10) /* a result's `error` text */

/* counts */
#define AL_FILES_MAX 1024  /* entries in `files` (job or result) */
#define AL_STEPS_MAX 256   /* steps in one job */
#define AL_ARGV_MAX 4096   /* arguments in one `cmd` */
#define AL_ENV_MAX 256     /* variables in one step's `env` */
#define AL_COLLECT_MAX 256 /* paths in `collect` */
/* Session directory transfer (tar): defaults and hard maxima. */
#define AL_TAR_BYTES_DEFAULT (256ull << 20) /* file contents, one tar */
#define AL_TAR_BYTES_MAX (1ull << 30)
#define AL_TAR_FILES_DEFAULT 10000u /* entries, one tar */
#define AL_TAR_FILES_MAX 100000u

/* per-step sizes */
#define AL_ARGV_MAX_BYTES (256u << 10) /* all of one step's argv, summed */
#define AL_SH_MAX_BYTES (256u << 10)   /* one `sh` script */
#define AL_ENV_NAME_MAX 128            /* one variable name */
#define AL_ENV_VALUE_MAX (32u << 10)   /* one variable value */
#define AL_OUTPUT_MAX (16u << 20)      /* kept bytes per stream per step */

/* limits: hard ranges; config chooses defaults and maxima inside them */
#define AL_TIMEOUT_MS_MAX 600000u /* one step */
#define AL_CPU_MS_MAX 600000u     /* one step's CPU time (`cpu_ms`) */
#define AL_TIME_SCALE_MAX 20u     /* templates.time_scale's factor */
#define AL_WALL_MS_MAX 3600000u   /* a whole VM */
#define AL_MEMORY_MB_MIN 64u
#define AL_MEMORY_MB_MAX 65536u
#define AL_VCPUS_MAX 64u
#define AL_PIDS_MAX 65536u
#define AL_DISK_MB_MAX 65536u
#define AL_FILE_SIZE_MB_MAX 65536u

/* grading (docs/schema.md, "Grading") */
#define AL_WEIGHT_MAX 1000000u /* one test's `weight` */
#define AL_TOL_MAX 1e9         /* `abs_tol`, `rel_tol` */
#define AL_CHECK_FILES_MAX 64  /* files of one `check` */
#define AL_CHECKER_OUTPUT_MAX 4096u /* kept of a checker's messages */

/* test reports (docs/schema.md, "Test reports"): a step's `reports`,
 * read on the host (worker/testreport.c) into per-test records */
#define AL_REPORTS_MAX	    16		/* report files of one step */
#define AL_REPORT_MAX_BYTES (16u << 20) /* a step's report files, all */
#define AL_TESTS_MAX	    10000u	/* test records of one step */
/* test records of one job: a result stays under AL_NODES_MAX */
#define AL_TESTS_JOB_MAX    50000u
#define AL_TEST_NAME_MAX    512u  /* a test's name or suite, bytes */
#define AL_TEST_MESSAGE_MAX 1024u /* a test's message, bytes */
#define AL_REPORT_DEPTH_MAX 32u	  /* XML element nesting */

/* diagnostics: errors kept per decode (the rest are counted) */
#define AL_DIAGS_MAX 64

#endif
