/* e2b_connect.h: Connect-RPC (JSON codec) as E2B's in-VM API speaks it,
 * on untrusted bytes: the RPC a path names, a request body (unary JSON or
 * one server-streaming envelope) decoded and capped, and the envelopes
 * and errors of an answer. No I/O: tests/fuzz/fuzz_e2b.c feeds it bytes.
 *
 * The protocol (connectrpc.com/docs/protocol), the part E2B's SDKs use:
 *   unary:     POST /pkg.Service/Method, Content-Type application/json,
 *              the body one JSON message; an error is an HTTP status and
 *              {"code": "not_found", "message": "..."}.
 *   streaming: Content-Type application/connect+json; the body and the
 *              answer are envelopes: 1 flag byte, 4 bytes big-endian
 *              length, that many bytes of JSON. Flag 0x02 marks the
 *              answer's last envelope, {"error": {...}} or {}: a stream's
 *              error travels there with HTTP 200.
 * A compressed envelope (flag 0x01) is refused: we announce no encoding.
 */
#ifndef AL_E2B_CONNECT_H
#define AL_E2B_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define AL_CONNECT_MSG_MAX   (1u << 20) /* bytes of one request message */
#define AL_CONNECT_DEPTH_MAX 16		/* JSON nesting of a request */

/* Connect's error codes (the protocol's names, in its order). */
enum al_connect_code {
	AL_CONNECT_OK = 0,
	AL_CONNECT_CANCELED,
	AL_CONNECT_UNKNOWN,
	AL_CONNECT_INVALID_ARGUMENT,
	AL_CONNECT_DEADLINE_EXCEEDED,
	AL_CONNECT_NOT_FOUND,
	AL_CONNECT_ALREADY_EXISTS,
	AL_CONNECT_PERMISSION_DENIED,
	AL_CONNECT_RESOURCE_EXHAUSTED,
	AL_CONNECT_FAILED_PRECONDITION,
	AL_CONNECT_ABORTED,
	AL_CONNECT_OUT_OF_RANGE,
	AL_CONNECT_UNIMPLEMENTED,
	AL_CONNECT_INTERNAL,
	AL_CONNECT_UNAVAILABLE,
	AL_CONNECT_DATA_LOSS,
	AL_CONNECT_UNAUTHENTICATED,
};

/* The RPCs of envd's process and filesystem services. */
enum al_e2b_rpc {
	AL_E2B_RPC_NONE = 0,
	AL_E2B_PROC_START,   /* server-streaming */
	AL_E2B_PROC_CONNECT, /* server-streaming */
	AL_E2B_PROC_LIST,
	AL_E2B_PROC_SEND_INPUT,
	AL_E2B_PROC_CLOSE_STDIN,
	AL_E2B_PROC_SEND_SIGNAL,
	AL_E2B_FS_STAT,
	AL_E2B_FS_MAKE_DIR,
	AL_E2B_FS_MOVE,
	AL_E2B_FS_LIST_DIR,
	AL_E2B_FS_REMOVE,
	AL_E2B_RPC_UNIMPLEMENTED, /* a method of those services we lack */
};

/* "not_found" ... for a code; "unknown" for anything out of range. */
const char *al_connect_code_name(enum al_connect_code c);
/* The HTTP status a unary error carries (Connect's table). */
unsigned al_connect_http_status(enum al_connect_code c);

/* The RPC of `path` ("/process.Process/Start"): 0 with *ret; -ENOENT when
 * it is no path of envd's Connect services (a plain 404). A method of a
 * service we know but do not serve is AL_E2B_RPC_UNIMPLEMENTED. */
int al_e2b_rpc_route(const char *path, enum al_e2b_rpc *ret);
bool al_e2b_rpc_streaming(enum al_e2b_rpc r);

/* Decode a request of rpc `r`: `ctype` its Content-Type (may be NULL),
 * `version` its Connect-Protocol-Version header (NULL: absent, allowed),
 * body[0..len). 0 and the message (a JSON object) in *ret; else the
 * Connect code of the refusal (and *ret_http 415 for a content type that
 * is not the RPC's, else the code's status) with msg saying why. */
enum al_connect_code al_connect_decode(enum al_e2b_rpc r, const char *ctype,
				       const char *version, const uint8_t *body,
				       size_t len, json_t **ret,
				       unsigned *ret_http, char *msg,
				       size_t msglen);

/* One envelope of `j` (consumed; flags 0 or 0x02) appended to a malloc'd
 * buffer *buf of *len bytes. 0 or -ENOMEM. */
int al_connect_envelope(uint8_t flags, json_t *j, uint8_t **buf, size_t *len);
/* {"code": NAME, "message": msg}: a unary error body, and the "error" of
 * a stream's last envelope. */
json_t *al_connect_error(enum al_connect_code c, const char *msg);

/* Is `key` an E2B API key ("e2b_" then 1..128 hex digits)? */
bool al_e2b_key_valid(const char *key);

#endif
