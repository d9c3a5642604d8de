/* respond.h: the API's one JSON responder (http.c), for every route
 * file of tools/api and its doors: a JSON body, or a 500 when the body
 * cannot be made. */
#ifndef AL_RESPOND_H
#define AL_RESPOND_H

#include <jansson.h>
#include <microhttpd.h>

/* Send j (consumed) as compact JSON and a newline with `status`,
 * Content-Type application/json and Cache-Control no-store. When j is
 * NULL or cannot be dumped (out of memory, a bug in a pack format) the
 * answer is 500 {"error":"internal error"}, never the intended status. */
enum MHD_Result al_http_send_json(struct MHD_Connection *c, unsigned status,
				  json_t *j);

#endif
