/* e2b_connect.c: Connect-RPC framing and routing for E2B's in-VM API, on
 * untrusted bytes (e2b_connect.h says the protocol). Every length is
 * checked against the bytes there are and against AL_CONNECT_MSG_MAX
 * before jansson sees anything; JSON deeper than AL_CONNECT_DEPTH_MAX is
 * refused before it is parsed, so no request recurses the parser deep.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b_connect.h"

static const struct {
	const char *name;
	unsigned http;
} codes[] = {
    [AL_CONNECT_OK] = {"ok", 200},
    [AL_CONNECT_CANCELED] = {"canceled", 499},
    [AL_CONNECT_UNKNOWN] = {"unknown", 500},
    [AL_CONNECT_INVALID_ARGUMENT] = {"invalid_argument", 400},
    [AL_CONNECT_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
    [AL_CONNECT_NOT_FOUND] = {"not_found", 404},
    [AL_CONNECT_ALREADY_EXISTS] = {"already_exists", 409},
    [AL_CONNECT_PERMISSION_DENIED] = {"permission_denied", 403},
    [AL_CONNECT_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
    [AL_CONNECT_FAILED_PRECONDITION] = {"failed_precondition", 400},
    [AL_CONNECT_ABORTED] = {"aborted", 409},
    [AL_CONNECT_OUT_OF_RANGE] = {"out_of_range", 400},
    [AL_CONNECT_UNIMPLEMENTED] = {"unimplemented", 501},
    [AL_CONNECT_INTERNAL] = {"internal", 500},
    [AL_CONNECT_UNAVAILABLE] = {"unavailable", 503},
    [AL_CONNECT_DATA_LOSS] = {"data_loss", 500},
    [AL_CONNECT_UNAUTHENTICATED] = {"unauthenticated", 401},
};

#define N_CODES (sizeof(codes) / sizeof(codes[0]))

const char *al_connect_code_name(enum al_connect_code c)
{
	return (unsigned)c < N_CODES ? codes[c].name : "unknown";
}

unsigned al_connect_http_status(enum al_connect_code c)
{
	return (unsigned)c < N_CODES ? codes[c].http : 500;
}

static const struct {
	const char *path;
	enum al_e2b_rpc rpc;
} rpcs[] = {
    {"/process.Process/Start", AL_E2B_PROC_START},
    {"/process.Process/Connect", AL_E2B_PROC_CONNECT},
    {"/process.Process/List", AL_E2B_PROC_LIST},
    {"/process.Process/SendInput", AL_E2B_PROC_SEND_INPUT},
    {"/process.Process/CloseStdin", AL_E2B_PROC_CLOSE_STDIN},
    {"/process.Process/SendSignal", AL_E2B_PROC_SEND_SIGNAL},
    {"/filesystem.Filesystem/Stat", AL_E2B_FS_STAT},
    {"/filesystem.Filesystem/MakeDir", AL_E2B_FS_MAKE_DIR},
    {"/filesystem.Filesystem/Move", AL_E2B_FS_MOVE},
    {"/filesystem.Filesystem/ListDir", AL_E2B_FS_LIST_DIR},
    {"/filesystem.Filesystem/Remove", AL_E2B_FS_REMOVE},
};

int al_e2b_rpc_route(const char *path, enum al_e2b_rpc *ret)
{
	static const char *const services[] = {"/process.Process/",
					       "/filesystem.Filesystem/"};

	for (size_t i = 0; i < sizeof(rpcs) / sizeof(rpcs[0]); i++)
		if (!strcmp(path, rpcs[i].path)) {
			*ret = rpcs[i].rpc;
			return 0;
		}
	for (size_t i = 0; i < 2; i++)
		if (!strncmp(path, services[i], strlen(services[i])) &&
		    path[strlen(services[i])] &&
		    !strchr(path + strlen(services[i]), '/')) {
			*ret = AL_E2B_RPC_UNIMPLEMENTED;
			return 0;
		}
	return -ENOENT;
}

bool al_e2b_rpc_streaming(enum al_e2b_rpc r)
{
	return r == AL_E2B_PROC_START || r == AL_E2B_PROC_CONNECT;
}

/* Is the media type of ctype (parameters dropped) `want`? */
static bool ctype_is(const char *ctype, const char *want)
{
	size_t n = strlen(want);

	if (!ctype || strncasecmp(ctype, want, n))
		return false;
	return ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ';
}

/* Does JSON text p[0..n) nest deeper than max? (strings skipped, so a
 * bracket inside one does not count) */
static bool too_deep(const uint8_t *p, size_t n, unsigned max)
{
	unsigned depth = 0;
	bool str = false;

	for (size_t i = 0; i < n; i++) {
		if (str) {
			if (p[i] == '\\')
				i++;
			else if (p[i] == '"')
				str = false;
		} else if (p[i] == '"') {
			str = true;
		} else if (p[i] == '{' || p[i] == '[') {
			if (++depth > max)
				return true;
		} else if ((p[i] == '}' || p[i] == ']') && depth) {
			depth--;
		}
	}
	return false;
}

static enum al_connect_code refuse(enum al_connect_code c, unsigned http,
				   unsigned *ret_http, char *msg, size_t msglen,
				   const char *why)
{
	*ret_http = http ? http : al_connect_http_status(c);
	snprintf(msg, msglen, "%s", why);
	return c;
}

/* The message of a streaming request: exactly one uncompressed envelope. */
static int unwrap(const uint8_t **body, size_t *len, const char **why)
{
	uint32_t n;

	if (*len < 5) {
		*why = "protocol error: incomplete envelope";
		return -EBADMSG;
	}
	if ((*body)[0] & 0x01) {
		*why = "protocol error: compressed message, no encoding";
		return -EBADMSG;
	}
	if ((*body)[0] != 0) {
		*why = "protocol error: unexpected envelope flags";
		return -EBADMSG;
	}
	n = (uint32_t)(*body)[1] << 24 | (uint32_t)(*body)[2] << 16 |
	    (uint32_t)(*body)[3] << 8 | (*body)[4];
	if (n > AL_CONNECT_MSG_MAX) {
		*why = "message larger than the server accepts";
		return -E2BIG;
	}
	if (n != *len - 5) {
		*why =
		    "protocol error: envelope length does not match the body";
		return -EBADMSG;
	}
	*body += 5;
	*len = n;
	return 0;
}

enum al_connect_code al_connect_decode(enum al_e2b_rpc r, const char *ctype,
				       const char *version, const uint8_t *body,
				       size_t len, json_t **ret,
				       unsigned *ret_http, char *msg,
				       size_t msglen)
{
	bool stream = al_e2b_rpc_streaming(r);
	const char *why = NULL;
	json_error_t e;
	json_t *j;
	int x;

	*ret = NULL;
	if (r == AL_E2B_RPC_UNIMPLEMENTED || r == AL_E2B_RPC_NONE)
		return refuse(AL_CONNECT_UNIMPLEMENTED, 0, ret_http, msg,
			      msglen, "method not implemented");
	if (!ctype_is(ctype,
		      stream ? "application/connect+json" : "application/json"))
		return refuse(AL_CONNECT_UNKNOWN, 415, ret_http, msg, msglen,
			      stream ? "content type must be "
				       "application/connect+json"
				     : "content type must be application/json");
	if (version && strcmp(version, "1"))
		return refuse(AL_CONNECT_INVALID_ARGUMENT, 0, ret_http, msg,
			      msglen, "connect-protocol-version must be 1");
	if (stream && (x = unwrap(&body, &len, &why)) < 0)
		return refuse(x == -E2BIG ? AL_CONNECT_RESOURCE_EXHAUSTED
					  : AL_CONNECT_INVALID_ARGUMENT,
			      0, ret_http, msg, msglen, why);
	if (len > AL_CONNECT_MSG_MAX)
		return refuse(AL_CONNECT_RESOURCE_EXHAUSTED, 0, ret_http, msg,
			      msglen, "message larger than the server accepts");
	if (too_deep(body, len, AL_CONNECT_DEPTH_MAX))
		return refuse(AL_CONNECT_INVALID_ARGUMENT, 0, ret_http, msg,
			      msglen, "message nested too deep");
	j = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &e);
	if (!json_is_object(j)) {
		json_decref(j);
		return refuse(AL_CONNECT_INVALID_ARGUMENT, 0, ret_http, msg,
			      msglen, "message is not a JSON object");
	}
	*ret = j;
	*ret_http = 200;
	return AL_CONNECT_OK;
}

int al_connect_envelope(uint8_t flags, json_t *j, uint8_t **buf, size_t *len)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	size_t n = s ? strlen(s) : 0;
	uint8_t *b;

	json_decref(j);
	if (!s)
		return -ENOMEM;
	b = realloc(*buf, *len + 5 + n);
	if (!b) {
		free(s);
		return -ENOMEM;
	}
	b[*len] = flags;
	b[*len + 1] = (uint8_t)(n >> 24);
	b[*len + 2] = (uint8_t)(n >> 16);
	b[*len + 3] = (uint8_t)(n >> 8);
	b[*len + 4] = (uint8_t)n;
	memcpy(b + *len + 5, s, n);
	free(s);
	*buf = b;
	*len += 5 + n;
	return 0;
}

json_t *al_connect_error(enum al_connect_code c, const char *msg)
{
	return json_pack("{ssss}", "code", al_connect_code_name(c), "message",
			 msg ? msg : "");
}

bool al_e2b_key_valid(const char *key)
{
	size_t n;

	if (!key || strncmp(key, "e2b_", 4))
		return false;
	n = strspn(key + 4, "0123456789abcdefABCDEF");
	return n >= 1 && n <= 128 && key[4 + n] == '\0';
}
