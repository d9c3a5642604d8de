/* callback.h: POST a job's result to its callback_url once it is stored,
 * from a thread of its own, so no worker, dispatcher or HTTP client ever
 * waits on a slow or dead receiver.
 *
 * Theory of operation. POST /jobs with a callback_url adds (job id, URL)
 * to an in-memory list (at most AL_CALLBACKS_MAX). The thread polls Redis
 * for the results of listed jobs every POLL_MS (one pipelined EXISTS per
 * job, on its own blocking connection); for each job done it fetches the
 * result, encodes it as the JSON GET /jobs/{id} returns, and POSTs it with
 * libcurl (no redirects, http/https only, 10 s timeout). A 2xx answer ends
 * it; anything else is retried 1, 2, 4, 8.. s later (at most 60 s apart)
 * until http.callback_attempts POSTs were made. The list lives in the
 * serve process: callbacks of jobs still pending when serve stops are
 * lost (docs/http.md says so).
 *
 * Targets: a URL is allowed only when its host and port match an
 * http.callback_allow entry HOST:PORT, or every address its host resolves
 * to lies in an entry ADDR/PREFIX; curl is then pinned to the address
 * checked (CURLOPT_RESOLVE), so a DNS answer that changes in between
 * cannot point the POST elsewhere. No entries: no callbacks at all.
 * Whatever the entries say, no address may be on the VMs' always-denied
 * list (sb_net_always_denied: loopback, link-local and metadata,
 * 0.0.0.0/8..), a HOST:PORT entry's name included (resolved, checked and
 * pinned like the rest); IPv4-mapped IPv6 addresses are checked as IPv4;
 * and curl never uses a proxy from the environment.
 */
#ifndef AL_CALLBACK_H
#define AL_CALLBACK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"
#include "queue.h"

#define AL_CALLBACKS_MAX 10000 /* callbacks waiting at once */

struct al_callbacks;

/* Start the thread for `queue` of `partitions` (queue.h). `allow` and
 * `url` are copied; `m` (may be NULL) must outlive al_callbacks_stop().
 * 0 or -errno. */
int al_callbacks_start(const struct alq_url *url, const char *queue,
		       unsigned partitions, uint32_t timeout_ms,
		       const struct al_config_names *allow, uint32_t attempts,
		       struct al_metrics *m, struct al_callbacks **ret);
/* Is `url` an allowed target? 0, or -EPERM / -EINVAL with err saying why;
 * ret_pin (may be NULL) gets "HOST:PORT:ADDR" for CURLOPT_RESOLVE, or ""
 * when the target matched by name. */
int al_callback_target(const struct al_config_names *allow, const char *url,
		       char *ret_pin, size_t pin_len, char *err, size_t errlen);
/* Queue a callback for job `id`. 0, -ENOSPC (list full), -ENOMEM. */
int al_callbacks_add(struct al_callbacks *cb, const char *id, const char *url);
/* A callback in another protocol's shape (tools/api/doors/): Judge0
 * PUTs the submission, not our result. */
struct al_result;
struct al_callback_shape {
	const char *method; /* "PUT" */
	/* the body for job id's result: malloc'd JSON, NULL = try later */
	char *(*render)(const struct al_result *r, const char *id);
};
/* al_callbacks_add() with a shape (static storage; NULL = ours). */
int al_callbacks_add_shaped(struct al_callbacks *cb, const char *id,
			    const char *url,
			    const struct al_callback_shape *shape);
/* Stop the thread (an in-flight POST ends at its timeout) and free. */
void al_callbacks_stop(struct al_callbacks *cb);

#endif
