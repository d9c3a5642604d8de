/* door.h: the front doors of `airlock serve --http`: other protocols
 * (Judge0 CE, Piston v2, SandboxFusion) spoken on their own paths beside
 * the API (docs/compat.md is the user's view).
 *
 * Theory of operation. A door is a translation, nothing more: its
 * request becomes the body POST /jobs takes (a job naming a `language`
 * of the one language table), decoded by the same parser
 * (al_http_parse_jobs) and submitted by the same path (al_http_enqueue:
 * language expansion, policy, callback rules, queue cap, queue); its
 * answer is the job's stored result (al_http_job_result) translated
 * back. No door runs anything, stores anything or has a lifetime of
 * its own: a Judge0 token is the job id, a submission is the job.
 *
 * Each protocol is one file: judge0.c, piston.c, sandboxfusion.c. Each
 * splits into a pure translation of untrusted bytes (al_*_jobs: body ->
 * job JSON, or the protocol's own error; tests/fuzz/fuzz_doors.c) and a
 * handler that does the I/O. The caller of a door is authenticated by
 * http.c before any of it runs (the bearer token, or Judge0's
 * X-Auth-Token): that is where a principal will be attached.
 */
#ifndef AL_DOOR_H
#define AL_DOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "doorway.h"
#include "http.h"
#include "http_req.h"
#include "queue.h"
#include "respond.h"

enum al_door {
	AL_DOOR_NONE = 0,
	AL_DOOR_JUDGE0,	   /* /submissions, /languages, /statuses, ... */
	AL_DOOR_PISTON,	   /* /api/v2/runtimes, /api/v2/execute (+ /piston/) */
	AL_DOOR_SF,	   /* /run_code (SandboxFusion) */
	AL_DOOR_SF_SUBMIT, /* /submit (SandboxFusion's datasets) */
};

#define AL_DOOR_BATCH_MAX 20	     /* Judge0's own batch cap */
#define AL_DOOR_FIELD_MAX (1u << 20) /* a source, stdin or file, bytes */
#define AL_DOOR_FILES_MAX 64	     /* files of one request */
#define AL_DOOR_HOLD_S	  60 /* a held request waits in slices this long */

/* The doors as the API sees them (doorway.h): route, handle, errors.
 * `airlock serve` hands &al_doors to al_http_start in al_http_opts. */
extern const struct al_http_doors al_doors;

/* Which door path+method is: 0 with *ret (an enum al_door); -ENOENT not
 * a door's path; -EPERM a door's path with another method. */
int al_door_route(const char *method, const char *path, int *ret);
/* An error in the door's own shape: Judge0 {"error"}, Piston
 * {"message"}, SandboxFusion {"detail"}. */
enum MHD_Result al_door_error(int d, struct MHD_Connection *c, unsigned status,
			      const char *msg);

/* --- shared by the doors (door.c) -------------------------------------------
 */

/* One POST /jobs body per element of `bodies` (a JSON array of job
 * objects, consumed) parsed and enqueued, their callbacks (callback_url)
 * in `shape` (NULL = ours): ids into ret_ids (n of them).
 * 0, or an HTTP status with *ret_msg saying why (422 a job the engine
 * refuses: the first problem; 503 queue full or unavailable). */
unsigned al_door_submit(struct al_http *h, json_t *bodies,
			const struct al_callback_shape *shape,
			char (*ret_ids)[AL_ID_MAX + 1], char *ret_msg,
			size_t msglen);
/* Piston's and SandboxFusion's request: the one job of `jobs` (consumed)
 * enqueued, the request held until it has a result, answered with
 * answer(result, ctx) (200) or the door's error (a refusal's 422
 * answered as status422). */
enum MHD_Result al_door_run_held(
    const struct al_door_req *r, int d, json_t *jobs, unsigned status422,
    json_t *(*answer)(const struct al_result *, void *), void *ctx);
/* The language of `name` in the policy's table, when its template is
 * one the policy allows; else NULL. */
const struct al_language *al_door_language(const struct al_policy *p,
					   const char *name);
/* base64 (RFC 4648, padding optional, newlines ignored as Ruby's
 * decode64 does) of s[0..n) into a malloc'd buffer; -EINVAL bad input. */
int al_door_b64_decode(const char *s, size_t n, uint8_t **ret, size_t *ret_len);
/* base64 of data as a JSON string (NULL on out of memory). */
json_t *al_door_b64_json(const uint8_t *data, size_t len);
/* A blob as JSON for a job body: a string when UTF-8, else {"base64"}. */
json_t *al_door_blob_json(const uint8_t *data, size_t len);
/* "0.123": ms as seconds with 3 decimals. */
json_t *al_door_seconds(uint64_t ms);

/* A result's meta (a flat map the door wrote at submit) as JSON. */
json_t *al_door_meta(const struct al_blob *meta);
/* The compile step of a result made from a `language` job (named
 * "compile", or CE), and the run step (the last, when not that), or NULL. */
const struct al_step_result *al_door_compile_step(const struct al_result *r);
const struct al_step_result *al_door_run_step(const struct al_result *r);
/* The steps of a `language` job: the language's compile step with a
 * timeout of compile_ms (when it has one), then `run` (consumed), its
 * argv the language's run command and `args` (strings; none: the
 * language's own run). */
json_t *al_door_steps(const struct al_language *lang, uint32_t compile_ms,
		      json_t *run, json_t *args);
/* The job body (no meta) of source `src` in `lang` with `files` (an
 * object, may be NULL; neither consumed), a compile step of compile_ms,
 * the run step `run` (consumed) with `args`: a `language` job, or, for a
 * language whose compile step is only a syntax check (python, ...), the
 * same job written out without that step. */
/* Does lang's job check the source before it runs it (a syntax check
 * where the reference runs the interpreter alone)? */
bool al_door_check_only(const struct al_language *lang);

json_t *al_door_job(const struct al_language *lang, json_t *src, json_t *files,
		    uint32_t compile_ms, json_t *run, json_t *args);
/* A JSON number o[key] in [lo, hi] into *ret (dflt when absent or null):
 * false when it is not a number or out of range. */
bool al_door_number(json_t *o, const char *key, double lo, double hi,
		    double dflt, double *ret);
/* The blank-separated words of s appended to arr as strings. */
void al_door_words(json_t *arr, const char *s);
/* How many bytes of s (at most max, an int for "%.*s") end on a UTF-8
 * character's boundary: a cut string in a message stays UTF-8. */
int al_door_utf8_cut(const char *s, size_t max);
/* Is a query flag set ("true" or "1")? */
bool al_door_has(const char *query_value);

/* The doors' own handlers and translations. */
enum MHD_Result al_judge0_handle(const struct al_door_req *r);
enum MHD_Result al_piston_handle(const struct al_door_req *r);
enum MHD_Result al_sf_handle(const struct al_door_req *r);
enum MHD_Result al_sf_submit_handle(const struct al_door_req *r);

/* The pure translations (fuzzed): the request body to an array of job
 * bodies for al_door_submit, or NULL with the protocol's error in
 * *ret_err (a JSON object, caller's) and its HTTP status returned. */
unsigned al_judge0_jobs(const char *body, size_t len, bool batch, bool b64,
			const struct al_policy *p, json_t **ret_jobs,
			json_t **ret_err);
unsigned al_piston_jobs(const char *body, size_t len, const struct al_policy *p,
			json_t **ret_jobs, json_t **ret_err);
unsigned al_sf_jobs(const char *body, size_t len, const struct al_policy *p,
		    json_t **ret_jobs, json_t **ret_err);
/* SandboxFusion's /submit (sf_submit.c): the job, and in *ret_ctx what
 * its answer needs beside the result (id, extracted_code, full_code,
 * test_code); al_sf_submit_answer(result, ctx) is its EvalResult. */
unsigned al_sf_submit_jobs(const char *body, size_t len,
			   const struct al_policy *p, json_t **ret_jobs,
			   json_t **ret_ctx, json_t **ret_err);
json_t *al_sf_submit_answer(const struct al_result *r, void *ctx);

#endif
