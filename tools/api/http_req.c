/* http_req.c: routes, query and JSON bodies of the HTTP API (http_req.h).
 * Everything here reads bytes a client sent: every length is capped
 * before use, and nothing is trusted to be NUL-terminated or UTF-8.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "http_req.h"

static const struct {
	const char *method, *path; /* path "*" = /jobs/{id} */
	enum al_route route;
} routes[] = {
    {"POST", "/jobs", AL_ROUTE_SUBMIT},
    {"POST", "/jobs/batch", AL_ROUTE_BATCH},
    {"GET", "*", AL_ROUTE_JOB},
    {"DELETE", "*", AL_ROUTE_CANCEL},
    {"GET", "/templates", AL_ROUTE_TEMPLATES},
    {"GET", "/health", AL_ROUTE_HEALTH},
    {"GET", "/metrics", AL_ROUTE_METRICS},
};

#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

/* "/jobs/ID": ID is the whole rest of the path, slashes included, since
 * ids may have them (every `airlock eval` id is TASK/sN-HASH); so nothing
 * may ever be routed below /jobs/{id}. "/jobs/batch" is this too: the
 * literal POST route is matched first, and GET or DELETE of it is the job
 * "batch". -ENOENT no such path, -EINVAL a bad id. */
static int job_path(const char *path, char id[AL_ID_MAX + 1])
{
	const char *p;
	size_t n;

	if (strncmp(path, "/jobs/", 6) != 0)
		return -ENOENT;
	p = path + 6;
	n = strlen(p);
	if (!n)
		return -ENOENT;
	if (!al_id_valid(p, n))
		return -EINVAL;
	memcpy(id, p, n + 1);
	return 0;
}

int al_http_route(const char *method, const char *path, enum al_route *ret,
		  char ret_id[AL_ID_MAX + 1])
{
	char id[AL_ID_MAX + 1];
	bool known = false;
	int jp;

	if (!method || !path)
		return -ENOENT;
	if (!strncmp(path, "/sessions", 9))
		return al_http_session_route(method, path, ret, ret_id);
	jp = job_path(path, id);
	for (size_t i = 0; i < N_ROUTES; i++) {
		bool star = !strcmp(routes[i].path, "*");

		if (star ? jp == -ENOENT : strcmp(routes[i].path, path) != 0)
			continue;
		known = true;
		if (strcmp(routes[i].method, method) != 0)
			continue;
		if (star && jp < 0)
			return jp;
		if (star)
			memcpy(ret_id, id, strlen(id) + 1);
		*ret = routes[i].route;
		return 0;
	}
	return known ? -EPERM : -ENOENT;
}

size_t al_http_unescape(char *s)
{
	char *w = s;
	const char *r = s;

	while (*r) {
		int hi = r[0] == '%' ? al_hex_digit(r[1]) : -1;
		int lo = hi >= 0 ? al_hex_digit(r[2]) : -1;

		if (lo >= 0 && (hi || lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

bool al_http_route_has_body(enum al_route r)
{
	return r == AL_ROUTE_SUBMIT || r == AL_ROUTE_BATCH ||
	       r == AL_ROUTE_SESS_CREATE || r == AL_ROUTE_SESS_EXTEND ||
	       r == AL_ROUTE_SESS_EXEC || r == AL_ROUTE_SESS_PUT_TAR ||
	       r == AL_ROUTE_SESS_SIGNAL || r == AL_ROUTE_SESS_FORK ||
	       r == AL_ROUTE_SESS_SNAPSHOT;
}

int al_http_parse_wait(const char *s, uint32_t max, uint32_t *ret)
{
	uint64_t v;

	if (!s) {
		*ret = 0;
		return 0;
	}
	if (strlen(s) > 10 || al_decimal_parse(s, strlen(s), max, &v) < 0)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* Take "callback_url" out of object o into *ret (malloc'd). */
static int take_callback(json_t *o, const char *path, char **ret,
			 struct al_diags *d)
{
	json_t *v = json_object_get(o, "callback_url");
	const char *s;
	size_t n;

	*ret = NULL;
	if (!v)
		return 0;
	s = json_string_value(v);
	n = s ? json_string_length(v) : 0;
	if (!s || !n || n > AL_HTTP_URL_MAX || strlen(s) != n) {
		al_diags_add(d, path,
			     "callback_url: must be a URL of 1..%d "
			     "bytes",
			     AL_HTTP_URL_MAX);
		return -EINVAL;
	}
	*ret = strdup(s);
	if (!*ret)
		return -ENOMEM;
	json_object_del(o, "callback_url");
	return 0;
}

/* Append the diags of one batch entry to `d`, paths prefixed "[i]". */
static void merge(struct al_diags *d, const struct al_diags *one, size_t i,
		  bool batch)
{
	for (size_t k = 0; k < one->n; k++) {
		if (!batch)
			al_diags_add(d, one->items[k].path, "%s",
				     one->items[k].reason);
		else
			al_diags_add(d, "", "[%zu]%s%.100s: %s", i,
				     one->items[k].path[0] ? "." : "",
				     one->items[k].path, one->items[k].reason);
	}
}

/* One object of the body into *out. */
static int one_job(json_t *o, size_t i, bool batch, struct al_http_job *out,
		   struct al_diags *d)
{
	struct al_diags one;
	char path[32] = "";
	char *text = NULL;
	size_t len;
	int r;

	if (batch)
		snprintf(path, sizeof(path), "[%zu]", i);
	if (!json_is_object(o)) {
		al_diags_add(d, path, "must be a job object");
		return -EINVAL;
	}
	r = take_callback(o, path, &out->callback, d);
	if (r < 0)
		return r;
	text = json_dumps(o, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	al_diags_init(&one);
	r = al_job_from_json(text, len, &out->job, &one);
	free(text);
	if (r < 0)
		merge(d, &one, i, batch);
	return r;
}

int al_http_parse_jobs(const char *body, size_t len, bool batch,
		       struct al_http_job **ret, size_t *ret_n,
		       struct al_diags *d)
{
	struct al_http_job *jobs = NULL;
	json_error_t jerr;
	json_t *root;
	size_t n = 1;
	int r = 0, bad = 0;

	if (len > (batch ? (size_t)AL_JOB_MAX_BYTES * 16 : AL_JOB_MAX_BYTES)) {
		al_diags_add(d, "", "over the size cap");
		return -E2BIG;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			  &jerr);
	if (!root) {
		al_diags_add(d, "", "not JSON: %.100s (offset %d)", jerr.text,
			     jerr.position);
		return -EINVAL;
	}
	if (batch) {
		n = json_is_array(root) ? json_array_size(root) : 0;
		if (!json_is_array(root) || !n || n > AL_HTTP_BATCH_MAX) {
			al_diags_add(d, "", "must be an array of 1..%d jobs",
				     AL_HTTP_BATCH_MAX);
			r = -EINVAL;
			goto out;
		}
	}
	jobs = calloc(n, sizeof(*jobs));
	if (!jobs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = batch ? json_array_get(root, i) : root;
		int e = one_job(o, i, batch, &jobs[i], d);

		if (e == -ENOMEM) {
			r = e;
			goto out;
		}
		bad |= e < 0;
	}
	if (bad) {
		r = -EINVAL;
		goto out;
	}
	*ret = jobs;
	*ret_n = n;
	jobs = NULL;
out:
	if (jobs)
		al_http_jobs_free(jobs, n);
	json_decref(root);
	return r;
}

void al_http_jobs_free(struct al_http_job *jobs, size_t n)
{
	if (!jobs)
		return;
	for (size_t i = 0; i < n; i++) {
		al_job_release(&jobs[i].job);
		free(jobs[i].callback);
	}
	free(jobs);
}

/* --- the no-token listener's checks ------------------------------------- */

/* Split "NAME[:PORT]" or "[V6][:PORT]" into its host part (brackets
 * dropped); false when it is neither or the port is not digits. */
static bool host_part(const char *s, char *ret, size_t len)
{
	const char *end, *port;
	size_t n;

	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end)
			return false;
		s++;
		port = end + 1;
	} else {
		end = strchr(s, ':');
		if (!end)
			end = s + strlen(s);
		port = end;
	}
	if (*port == ':')
		port++;
	else if (*port)
		return false;
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
		return false;
	n = (size_t)(end - s);
	if (!n || n >= len)
		return false;
	memcpy(ret, s, n);
	ret[n] = '\0';
	return true;
}

bool al_http_host_allowed(const char *host, const char *listen)
{
	char h[256], l[256];
	unsigned char a[16];

	if (!host || !host_part(host, h, sizeof(h)))
		return false;
	if (!strcasecmp(h, "localhost") || !strcasecmp(h, "localhost."))
		return true;
	if (inet_pton(AF_INET, h, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, h, a) == 1 && host[0] == '[') {
		static const unsigned char one[16] = {[15] = 1};

		if (!memcmp(a, one, sizeof(one)))
			return true;
	}
	if (listen) { /* the listen address's host, as the operator wrote it */
		const char *colon = strrchr(listen, ':');
		size_t n = colon ? (size_t)(colon - listen) : strlen(listen);

		if (listen[0] == '[' && n >= 2 && listen[n - 1] == ']')
			listen++, n -= 2;
		if (n && n < sizeof(l)) {
			memcpy(l, listen, n);
			l[n] = '\0';
			return !strcasecmp(h, l);
		}
	}
	return false;
}

bool al_http_json_type(const char *type)
{
	static const char want[] = "application/json";
	const char *p;

	if (!type || strncasecmp(type, want, sizeof(want) - 1))
		return false;
	p = type + sizeof(want) - 1;
	p += strspn(p, " \t");
	return !*p || *p == ';';
}
