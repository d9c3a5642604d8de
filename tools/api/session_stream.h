/* session_stream.h: an exec's output as a streaming (NDJSON, chunked)
 * HTTP response (session_stream.c says the format and the thread model).
 * Used by session_api.c. */
#ifndef AL_SESSION_STREAM_H
#define AL_SESSION_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http.h"

/* Did the request ask for a stream (?stream=1, or Accept:
 * application/x-ndjson)? */
bool al_http_session_stream_wanted(struct MHD_Connection *c);
/* Queue the streaming response for exec n of session `id` from the
 * offsets, with `status`; it ends with the exec's record. `principal`
 * is alq_client.principal's ("" = operator). MHD_NO when it could not be
 * made (no memory, no Redis). */
enum MHD_Result al_http_session_stream(const struct al_http_opts *o,
				       struct MHD_Connection *c,
				       const char *principal, const char *id,
				       uint64_t n, uint64_t off1, uint64_t off2,
				       unsigned status);

#endif
