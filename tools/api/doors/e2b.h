/* e2b.h: E2B's door (docs/compat-e2b.md): the SDKs' control plane
 * (/sandboxes, /v2/sandboxes) and in-VM plane (envd's Connect services
 * and /files, routed by the E2b-Sandbox-Id header) on serve's HTTP
 * address. A sandbox is a session: every call is one operation of
 * dispatcher/session/sessions.h on the session backing it.
 *
 * Who asks. The control plane's X-API-KEY ("e2b_" and hex) names the
 * principal: with http.tokens_file, the principal whose token it is;
 * without (serve is then loopback only), a principal of its own,
 * "e2b-" and the first 32 hex digits of the key's SHA-256. The in-VM
 * plane carries no API key: its X-Access-Token must be the sandbox's
 * envdAccessToken, made at create and returned to its owner only.
 */
#ifndef AL_E2B_H
#define AL_E2B_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "e2b_connect.h"
#include "http.h"
#include "queue.h"

#define AL_E2B_ENVD_VERSION "0.5.7"	/* the SDK feature gates we meet */
#define AL_E2B_ENVD_PORT    49983	/* E2b-Sandbox-Port of envd */
#define AL_E2B_FILE_MAX	    (64u << 20) /* bytes of one /files body */
#define AL_E2B_META_TOKEN   "_e2b_envd" /* metadata key of the token */

/* Is this request E2B's (its path, or an E2b-Sandbox-Id header)? */
bool al_e2b_claims(struct MHD_Connection *c, const char *url);
/* Answer it once its body is in (body may be NULL). */
enum MHD_Result al_e2b_handle(const struct al_http_opts *o,
			      struct MHD_Connection *c, const char *method,
			      const char *url, const char *body, size_t len);

/* --- e2b_envd.c --------------------------------------------------------- */

/* The in-VM plane for session `id` (token already checked), on a client
 * acting as the operator: `cl` is the handler's, closed by the caller. */
enum MHD_Result al_e2b_envd(const struct al_http_opts *o,
			    struct MHD_Connection *c, struct alq_client *cl,
			    const char *id, const char *method, const char *url,
			    const char *body, size_t len);
/* Answer with exec n of session `id` as it runs: Connect envelopes of
 * process events, or (raw) its stdout as it is; timeout_ms > 0 ends the
 * stream with deadline_exceeded a little after it. */
enum MHD_Result al_e2b_stream(const struct al_http_opts *o,
			      struct MHD_Connection *c, const char *id,
			      uint64_t n, bool raw, uint64_t timeout_ms);

/* --- e2b_jupyter.c ------------------------------------------------------ */

#define AL_E2B_JUPYTER_PORT 49999 /* @e2b/code-interpreter's port */

/* The code interpreter's routes (POST /execute, /contexts) for session
 * `id`, token checked, `cl` as for al_e2b_envd; /contexts (which the SDK
 * sends without a token) with cl NULL: they touch no session. */
enum MHD_Result al_e2b_jupyter(const struct al_http_opts *o,
			       struct MHD_Connection *c, struct alq_client *cl,
			       const char *id, const char *method,
			       const char *url, const char *body, size_t len);

/* base64 of p[0..n) as a JSON string (NULL: out of memory). */
json_t *al_e2b_b64(const uint8_t *p, size_t n);

#endif
