/* http.c: the HTTP API of `airlock serve` over libmicrohttpd (http.h has
 * the theory of operation).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "doorway.h"
#include "http.h"
#include "http_req.h"
#include "log.h"
#include "proto.h"
#include "readfile.h"
#include "respond.h"
#include "session_api.h"
#include "sessions.h"

#define HEADER_MEM  (32u << 10) /* per connection: headers and buffers */
#define METRICS_BUF (64u << 10)
#define WAIT_SLICE  1000u /* ms: ?wait= checks for shutdown this often */

struct al_http {
	struct MHD_Daemon *d;	      /* the listener */
	const struct al_http_opts *o; /* options */
	atomic_bool stopping;	      /* al_http_stop() began */
};

/* One request, kept across libmicrohttpd's calls for its body. */
struct req {
	enum al_route route;	/* what it asks */
	char id[AL_ID_MAX + 1]; /* for /jobs/{id} */
	const struct al_principal *who; /* whom it acts for (auth) */
	char *body;		/* bytes so far */
	size_t len, cap;	/* used, allocated */
	bool too_big;		/* over max_body_bytes: 413 at the end */
	int door;		/* a front door's request (doorway.h), 0 = ours */
	bool has_body;		/* its route takes a body */
	bool own;		/* a door with its own auth answers it (E2B) */
};

/* --- responses ---------------------------------------------------------- */

/* Answer buf (consumed); retry_s > 0 adds Retry-After. */
static enum MHD_Result send_buf_retry(struct MHD_Connection *c, unsigned status,
				      const char *type, char *buf, size_t len,
				      unsigned retry_s)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	char num[16];

	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (retry_s) {
		snprintf(num, sizeof(num), "%u", retry_s);
		MHD_add_response_header(r, "Retry-After", num);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status,
				const char *type, char *buf, size_t len)
{
	return send_buf_retry(c, status, type, buf, len, 0);
}

/* respond.h */
enum MHD_Result al_http_send_json_retry(struct MHD_Connection *c,
					unsigned status, json_t *j,
					unsigned retry_s)
{
	/* 15 digits: 0.347, not 0.34699999999999998 */
	char *s =
	    j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
	size_t n;

	json_decref(j);
	if (!s) { /* out of memory, or a bug in a pack format */
		s = strdup("{\"error\":\"internal error\"}");
		status = 500;
	}
	if (!s)
		return MHD_NO;
	n = strlen(s);
	s[n] = '\n'; /* the NUL becomes a newline: the buffer is n + 1 */
	return send_buf_retry(c, status, "application/json", s, n + 1, retry_s);
}

/* respond.h */
enum MHD_Result al_http_send_json(struct MHD_Connection *c, unsigned status,
				  json_t *j)
{
	return al_http_send_json_retry(c, status, j, 0);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
				  const char *msg)
{
	return al_http_send_json(c, status, json_pack("{ss}", "error", msg));
}

/* 422 with every problem of `d`. */
static enum MHD_Result send_diags(struct MHD_Connection *c,
				  const struct al_diags *d)
{
	json_t *p = json_array();

	for (size_t i = 0; i < d->n; i++)
		json_array_append_new(p, json_pack("{ssss}", "path",
						   d->items[i].path, "reason",
						   d->items[i].reason));
	return al_http_send_json(
	    c, 422, json_pack("{ssso}", "error", "invalid job", "problems", p));
}

/* --- authentication ------------------------------------------------------ */

/* Is sa a loopback address (127.0.0.0/8, ::1, ::ffff:127.x)? */
static bool loopback_sa(const struct sockaddr *sa)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)
				  ->sin_addr.s_addr) >>
			24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
		    &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (!memcmp(a->s6_addr, mapped, 12) &&
			a->s6_addr[12] == 127);
	}
	return false;
}

static bool loopback(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	return ci && loopback_sa(ci->client_addr);
}

/* 0 when allowed (*ret_who the principal it acts as), else the status
 * to answer (401 or 403). The Judge0 door's clients send the token as
 * X-Auth-Token (Judge0's AUTHN_HEADER). */
static unsigned auth(const struct al_http *h, struct MHD_Connection *c,
		     int door, const struct al_principal **ret_who)
{
	const char *hdr = NULL;

	if (!h->o->principals.n) {
		*ret_who = al_principal_operator();
		return loopback(c) ? 0 : 403;
	}
	if (door && h->o->doors->token_header &&
	    h->o->doors->token_header(door))
		hdr = MHD_lookup_connection_value(
		    c, MHD_HEADER_KIND, h->o->doors->token_header(door));
	if (!hdr) {
		hdr = MHD_lookup_connection_value(
		    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		if (!hdr || strncmp(hdr, "Bearer ", 7) != 0)
			return 401;
		hdr += 7;
	}
	*ret_who = al_principals_find(&h->o->principals, hdr);
	return *ret_who ? 0 : 401;
}

/* --- handlers ------------------------------------------------------------- */

/* Redis did not answer: close cl and say 503, the one way every handler
 * that needs the queue reports it. */
static enum MHD_Result unavailable(struct MHD_Connection *c,
				   struct alq_client *cl)
{
	alq_client_close(cl);
	return send_error(c, 503, "the queue is unavailable");
}

static int open_redis(const struct al_http *h, struct alq_client *cl)
{
	const struct al_config *cfg = h->o->cfg;
	int r = alq_client_open(cl, &h->o->url, cfg->queue.name,
				cfg->redis.command_timeout_ms);

	cl->wait_replicas = cfg->redis.wait_replicas;
	cl->wait_ms = cfg->redis.wait_ms;
	cl->partitions = cfg->queue.partitions;
	return r;
}

/* The stored result of id, decoded into *ret. 0 or -errno (-ENOENT: none). */
static int result_get(struct alq_client *cl, const char *id,
		      struct al_result *ret)
{
	struct al_diags d;
	char *mp = NULL;
	size_t len;
	int r;

	r = alq_client_result(cl, id, &mp, &len);
	if (r < 0)
		return r;
	al_diags_init(&d);
	r = al_result_from_msgpack(mp, len, ret, &d) == 0 ? 0 : -EPROTO;
	free(mp);
	return r;
}

/* The stored result of id as a JSON object, or NULL (*ret_err why). */
static json_t *result_obj(struct alq_client *cl, const char *id, int *ret_err)
{
	struct al_result res = {0};
	char *text = NULL;
	json_t *j = NULL;

	*ret_err = result_get(cl, id, &res);
	if (*ret_err < 0)
		return NULL;
	*ret_err = -EPROTO;
	if (al_result_to_json(&res, &text) == 0)
		j = json_loads(text, JSON_ALLOW_NUL, NULL);
	if (j)
		*ret_err = 0;
	al_result_release(&res);
	free(text);
	return j;
}

/* Policy and callback target of each job; false with d filled. */
static bool check_jobs(const struct al_http *h, struct al_http_job *jobs,
		       size_t n, bool batch, struct al_diags *d)
{
	for (size_t i = 0; i < n; i++) {
		struct al_diags one;
		char err[160], path[32] = "";

		if (batch)
			snprintf(path, sizeof(path), "[%zu]", i);
		al_diags_init(&one);
		if (al_job_expand_language(&jobs[i].job, h->o->policy, &one) <
			    0 ||
		    al_job_check_policy(&jobs[i].job, h->o->policy, &one) < 0)
			for (size_t k = 0; k < one.n; k++)
				al_diags_add(d, path, "%.100s%s%s",
					     one.items[k].path,
					     one.items[k].path[0] ? ": " : "",
					     one.items[k].reason);
		if (jobs[i].callback &&
		    (!h->o->callbacks ||
		     al_callback_target(&h->o->cfg->http.callback_allow,
					jobs[i].callback, NULL, 0, err,
					sizeof(err)) < 0))
			al_diags_add(d, path, "%s",
				     h->o->callbacks
					 ? err
					 : "callback_url: callbacks "
					   "are off (empty "
					   "http.callback_allow)");
	}
	return d->n == 0;
}

/* Wait up to wait_s for id's result, in slices so stop is noticed. */
static int wait_result(const struct al_http *h, struct alq_client *cl,
		       const char *id, uint32_t wait_s)
{
	uint64_t end = al_now_ms() + 1000ull * wait_s;

	for (;;) {
		uint64_t now = al_now_ms();
		uint32_t slice =
		    end - now < WAIT_SLICE ? (uint32_t)(end - now) : WAIT_SLICE;
		int r;

		if (now >= end || atomic_load(&h->stopping))
			return -ETIMEDOUT;
		r = alq_client_wait(cl, id, slice ? slice : 1);
		if (r != -ETIMEDOUT)
			return r;
	}
}

/* Is the queue at http.queue_cap (n more would pass it)? */
static bool at_cap(const struct al_http *h, struct alq_client *cl, size_t n)
{
	uint32_t cap = h->o->cfg->http.queue_cap;
	struct alq_status st;

	if (!cap || alq_client_status(cl, &st) < 0)
		return false; /* a status that fails: the submit will say */
	return st.depth >= 0 && (uint64_t)st.depth + n > cap;
}

/* Submit the prepared jobs; per-job outcomes into subs. -EBUSY at the
 * queue cap (nothing enqueued). */
static int submit(const struct al_http *h, struct alq_client *cl,
		  struct al_http_job *jobs, struct alq_submit *subs,
		  struct alq_prepared *prep, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (alq_prepare(&jobs[i].job, h->o->policy, NULL, &prep[i]) <
		    0)
			return -ENOMEM;
		subs[i] = (struct alq_submit){.id = prep[i].id,
					      .payload = prep[i].payload,
					      .len = prep[i].len,
					      .wall_ms = prep[i].wall_ms};
	}
	if (open_redis(h, cl) < 0)
		return -EIO;
	if (at_cap(h, cl, n))
		return -EBUSY;
	return alq_client_submit_many(cl, subs, n);
}

/* Answer a submit once its jobs are in: ids, or the result with ?wait=. */
static enum MHD_Result submitted(const struct al_http *h,
				 struct MHD_Connection *c,
				 struct alq_client *cl, struct alq_submit *subs,
				 size_t n, bool batch, uint32_t wait_s)
{
	json_t *arr;
	int e;

	if (!batch && wait_s && wait_result(h, cl, subs[0].id, wait_s) == 0) {
		json_t *j = result_obj(cl, subs[0].id, &e);

		if (j)
			return al_http_send_json(c, 200, j);
	}
	if (!batch)
		return al_http_send_json(c, wait_s ? 202 : 201,
				 json_pack("{sssbss}", "id", subs[0].id,
					   "duplicate", subs[0].dup, "state",
					   "queued"));
	arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{sssb}", "id", subs[i].id,
						     "duplicate", subs[i].dup));
	return al_http_send_json(c, 201, json_pack("{so}", "jobs", arr));
}

static size_t conflicts(const struct alq_submit *subs, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += subs[i].err == -EEXIST;
	return k;
}

/* 409: some id was submitted before with another payload (docs/http.md).
 * The other jobs of a batch are in (their callbacks too); the refused
 * ones are not, and get no callback. */
static enum MHD_Result send_conflict(const struct al_http *h,
				     struct MHD_Connection *c,
				     const struct al_http_job *jobs,
				     const struct alq_submit *subs, size_t n)
{
	json_t *ids = json_array(), *j;

	for (size_t i = 0; i < n; i++) {
		if (subs[i].err == -EEXIST) {
			al_info("http: job=%s: id taken by another payload "
				"(digest %.12s, ours %.12s): refused",
				subs[i].id, subs[i].stored_digest,
				subs[i].digest);
			json_array_append_new(ids, json_string(subs[i].id));
		} else if (jobs[i].callback &&
			   al_callbacks_add(h->o->callbacks, subs[i].id,
					    jobs[i].callback) < 0) {
			al_warn("job=%s: callback not queued", subs[i].id);
		}
	}
	j = json_pack("{ssso}", "error",
		      "id conflict: submitted before with another payload "
		      "(choose another id)",
		      "conflicts", ids);
	return al_http_send_json(c, 409, j);
}

/* The path of every submission, POST /jobs and the doors alike
 * (doors/door.h): language expanded, policy and callback target checked,
 * prepared, the queue cap, submitted, callbacks queued. 0; -EINVAL with d
 * filled (nothing enqueued); -EEXIST an id taken by another payload (subs
 * say which: the others are in, their callbacks not yet queued); -EBUSY at
 * http.queue_cap (nothing enqueued); -ENOMEM; -EIO the queue failed. */
static int enqueue(struct al_http *h, struct alq_client *cl,
		   struct al_http_job *jobs, size_t n, bool batch,
		   struct alq_submit *subs, struct alq_prepared *prep,
		   struct al_diags *d)
{
	int r;

	if (!check_jobs(h, jobs, n, batch, d))
		return -EINVAL;
	r = submit(h, cl, jobs, subs, prep, n);
	for (size_t i = 0; r == 0 && i < n; i++)
		if (subs[i].err < 0 && subs[i].err != -EEXIST)
			r = subs[i].err;
	if (r == 0 && conflicts(subs, n))
		return -EEXIST;
	if (r < 0 && r != -EBUSY && r != -ENOMEM) {
		al_warn("http: submit: %s",
			cl->err[0] ? cl->err : strerror(-r));
		return -EIO;
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		if (jobs[i].callback &&
		    al_callbacks_add_shaped(h->o->callbacks, subs[i].id,
					    jobs[i].callback,
					    jobs[i].shape) < 0)
			al_warn("job=%s: callback not queued (too many "
				"waiting)",
				subs[i].id);
	return r;
}

/* 503 at the queue cap: Retry-After, as Judge0 and HTTP say. */
static enum MHD_Result send_full(struct MHD_Connection *c)
{
	return al_http_send_json_retry(c, 503,
				 json_pack("{ss}", "error", "queue is full"),
				 AL_HTTP_RETRY_AFTER);
}

static enum MHD_Result do_submit(struct al_http *h, struct MHD_Connection *c,
				 struct req *q)
{
	bool batch = q->route == AL_ROUTE_BATCH;
	struct al_http_job *jobs = NULL;
	struct alq_submit *subs = NULL;
	struct alq_prepared *prep = NULL;
	struct alq_client cl = {0};
	struct al_diags d;
	enum MHD_Result ret;
	uint32_t wait_s = 0;
	size_t n = 0;
	int r;

	if (al_http_parse_wait(
		MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait"),
		h->o->cfg->http.max_wait_s, &wait_s) < 0)
		return send_error(c, 400,
				  "wait: must be 0..http.max_wait_s "
				  "seconds");
	al_diags_init(&d);
	r = al_http_parse_jobs(q->body ? q->body : "", q->len, batch, &jobs, &n,
			       &d);
	if (r == -ENOMEM)
		return send_error(c, 503, "out of memory");
	if (r < 0) {
		ret = send_diags(c, &d);
		goto out;
	}
	subs = calloc(n, sizeof(*subs));
	prep = calloc(n, sizeof(*prep));
	r = subs && prep ? enqueue(h, &cl, jobs, n, batch, subs, prep, &d)
			 : -ENOMEM;
	if (r == -EINVAL)
		ret = send_diags(c, &d);
	else if (r == -EEXIST)
		ret = send_conflict(h, c, jobs, subs, n);
	else if (r == -EBUSY)
		ret = send_full(c);
	else if (r < 0)
		ret = send_error(c, 503,
				 r == -ENOMEM ? "out of memory"
					      : "the queue is unavailable");
	else
		ret = submitted(h, c, &cl, subs, n, batch, wait_s);
out:
	for (size_t i = 0; prep && i < n; i++)
		free(prep[i].payload);
	free(prep);
	free(subs);
	alq_client_close(&cl);
	al_http_jobs_free(jobs, n);
	return ret;
}

/* --- for the doors (doors/door.h) ----------------------------------- */

int al_http_enqueue(struct al_http *h, struct al_http_job *jobs, size_t n,
		    char (*ret_ids)[AL_ID_MAX + 1], struct al_diags *d)
{
	struct alq_submit *subs = calloc(n ? n : 1, sizeof(*subs));
	struct alq_prepared *prep = calloc(n ? n : 1, sizeof(*prep));
	struct alq_client cl = {0};
	int r = subs && prep ? enqueue(h, &cl, jobs, n, true, subs, prep, d)
			     : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n; i++)
		memcpy(ret_ids[i], subs[i].id, strlen(subs[i].id) + 1);
	for (size_t i = 0; prep && i < n; i++)
		free(prep[i].payload);
	free(prep);
	free(subs);
	alq_client_close(&cl);
	return r == -EEXIST ? -EIO : r;
}

int al_http_job_result(struct al_http *h, const char *id, uint32_t wait_s,
		       enum alq_state *ret_state, struct al_result *ret)
{
	struct alq_client cl = {0};
	struct alq_job st;
	int r = atomic_load(&h->stopping) ? -ECANCELED : open_redis(h, &cl);

	if (r == 0 && wait_s)
		(void)wait_result(h, &cl, id, wait_s);
	if (r == 0)
		r = alq_job_status(&cl, id, &st);
	if (r == 0 && st.state != ALQ_UNKNOWN && st.state != ALQ_QUEUED &&
	    st.state != ALQ_RUNNING) {
		r = result_get(&cl, id, ret);
		if (r == -ENOENT)
			st.state = ALQ_UNKNOWN;
		r = r == -ENOENT ? 0 : r;
	}
	alq_client_close(&cl);
	if (r < 0)
		return r == -ENOMEM ? r : -EIO;
	*ret_state = st.state;
	return 0;
}

int al_http_queue_status(struct al_http *h, struct alq_status *ret)
{
	struct alq_client cl = {0};
	int r = open_redis(h, &cl);

	if (r == 0)
		r = alq_client_status(&cl, ret);
	alq_client_close(&cl);
	return r < 0 ? -EIO : 0;
}

const struct al_http_opts *al_http_options(const struct al_http *h)
{
	return h->o;
}

static enum MHD_Result do_job(struct al_http *h, struct MHD_Connection *c,
			      struct req *q)
{
	struct alq_client cl = {0};
	struct alq_job st;
	enum MHD_Result ret;
	json_t *j = NULL;
	int e = 0;

	if (open_redis(h, &cl) < 0 || alq_job_status(&cl, q->id, &st) < 0)
		return unavailable(c, &cl);
	if (st.state == ALQ_QUEUED || st.state == ALQ_RUNNING)
		ret = al_http_send_json(c, 202,
				json_pack("{sssssi}", "id", q->id, "state",
					  alq_state_name(st.state),
					  "attempt", (int)st.attempt));
	else if (st.state != ALQ_UNKNOWN && (j = result_obj(&cl, q->id, &e)))
		ret = al_http_send_json(c, 200, j);
	else if (st.state == ALQ_UNKNOWN || e == -ENOENT)
		ret = send_error(c, 404, "no such job (or its result expired)");
	else
		return unavailable(c, &cl);
	alq_client_close(&cl);
	return ret;
}

static enum MHD_Result do_cancel(struct al_http *h, struct MHD_Connection *c,
				 struct req *q)
{
	struct alq_client cl = {0};
	enum alq_state was;
	int r;

	r = open_redis(h, &cl);
	if (r == 0)
		r = alq_job_cancel(&cl, q->id, h->o->cfg->queue.result_ttl_s,
				    &was);
	if (r < 0)
		return unavailable(c, &cl);
	alq_client_close(&cl);
	if (was == ALQ_UNKNOWN)
		return send_error(c, 404, "no such job");
	if (was != ALQ_QUEUED && was != ALQ_RUNNING)
		return send_error(c, 409, "the job has a result already");
	al_info("job=%s was=%s: cancelled over http", q->id,
		alq_state_name(was));
	return al_http_send_json(c, 202,
			 json_pack("{ssssss}", "id", q->id, "state", "cancelled",
				   "was", alq_state_name(was)));
}

/* Is name in the allowed list (empty list = any)? */
static bool allowed(const struct al_config_names *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->name[i], name))
			return true;
	return l->n == 0;
}

static enum MHD_Result do_templates(struct al_http *h, struct MHD_Connection *c,
				    struct req *q)
{
	struct al_config *cfg = h->o->cfg;
	char tdir[4096], sdir[4096], img[8400], name[AL_NAME_MAX + 1];
	json_t *list = json_array();
	struct stat st;
	DIR *d;

	(void)q;
	if (al_config_templates_dir(cfg, tdir, sizeof(tdir)) < 0 ||
	    al_config_state_dir(cfg, sdir, sizeof(sdir)) < 0 ||
	    !(d = opendir(tdir))) {
		json_decref(list);
		return send_error(c, 500, "templates dir unreadable");
	}
	while (al_config_template_next(d, name)) {
		snprintf(img, sizeof(img), "%s/images/%s", sdir, name);
		json_array_append_new(
		    list, json_pack("{sssbsb}", "name", name, "allowed",
				    allowed(&cfg->templates.allowed, name),
				    "image", stat(img, &st) == 0));
	}
	closedir(d);
	return al_http_send_json(c, 200,
			 json_pack("{ssso}", "default", cfg->templates.default_,
				   "templates", list));
}

static enum MHD_Result do_health(struct al_http *h, struct MHD_Connection *c,
				 struct req *q)
{
	struct alq_client cl = {0};
	bool up = open_redis(h, &cl) == 0;

	(void)q;
	alq_client_close(&cl);
	return al_http_send_json(
	    c, up ? 200 : 503,
	    json_pack("{sssb}", "status", up ? "ok" : "degraded", "redis", up));
}

static enum MHD_Result do_metrics(struct al_http *h, struct MHD_Connection *c,
				  struct req *q)
{
	struct alq_client cl = {0};
	struct alq_status st;
	bool up;
	char *buf = malloc(METRICS_BUF);
	int n;

	(void)q;
	if (!buf)
		return send_error(c, 503, "out of memory");
	up = open_redis(h, &cl) == 0 && alq_client_status(&cl, &st) == 0;
	n = al_metrics_render(h->o->metrics, up ? &st : NULL, buf, METRICS_BUF);
	if (up && n >= 0) { /* sessions: dispatcher/session/client.c */
		int m = al_sess_metrics(&cl, buf + n, METRICS_BUF - (size_t)n);

		n = m < 0 ? n : n + m;
	}
	alq_client_close(&cl);
	if (n < 0) {
		free(buf);
		return send_error(c, 500, "metrics over their buffer");
	}
	return send_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", buf,
			(size_t)n);
}

typedef enum MHD_Result handler_fn(struct al_http *h, struct MHD_Connection *c,
				   struct req *q);

/* /sessions: session_api.c */
static enum MHD_Result do_session(struct al_http *h, struct MHD_Connection *c,
				  struct req *q)
{
	return al_http_session(h->o, c, q->who, q->route, q->id, q->body,
			       q->len);
}

static handler_fn *const handlers[] = {
    [AL_ROUTE_SUBMIT] = do_submit,
    [AL_ROUTE_BATCH] = do_submit,
    [AL_ROUTE_JOB] = do_job,
    [AL_ROUTE_CANCEL] = do_cancel,
    [AL_ROUTE_TEMPLATES] = do_templates,
    [AL_ROUTE_HEALTH] = do_health,
    [AL_ROUTE_METRICS] = do_metrics,
    [AL_ROUTE_SESS_CREATE] = do_session,
    [AL_ROUTE_SESS_LIST] = do_session,
    [AL_ROUTE_SESS_GET] = do_session,
    [AL_ROUTE_SESS_DELETE] = do_session,
    [AL_ROUTE_SESS_EXTEND] = do_session,
    [AL_ROUTE_SESS_EXEC] = do_session,
    [AL_ROUTE_SESS_OUTPUT] = do_session,
    [AL_ROUTE_SESS_SIGNAL] = do_session,
    [AL_ROUTE_SESS_PUT_TAR] = do_session,
    [AL_ROUTE_SESS_GET_TAR] = do_session,
    [AL_ROUTE_SESS_FORK] = do_session,
    [AL_ROUTE_SESS_SNAPSHOT] = do_session,
};

/* --- the daemon ------------------------------------------------------------
 */

/* Append body bytes, up to the cap (then only remember it was over). */
static void take_body(struct req *q, const char *data, size_t n, size_t max)
{
	if (q->too_big || q->len + n > max) {
		q->too_big = true;
		return;
	}
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 16384;
		char *nb;

		while (cap < q->len + n)
			cap *= 2;
		if (cap > max)
			cap = max;
		nb = realloc(q->body, cap);
		if (!nb) {
			q->too_big = true;
			return;
		}
		q->body = nb;
		q->cap = cap;
	}
	memcpy(q->body + q->len, data, n);
	q->len += n;
}

/* A door whose client cannot set its body's type (the npm piston-client
 * posts JSON as text/plain) may take text/plain. A browser's cross-site
 * POST may be text/plain too, but always carries Origin: such a body is
 * taken only without one. */
static bool door_plain_ok(const struct al_http *h, const struct req *q,
			  struct MHD_Connection *c)
{
	return q->door && h->o->doors->text_plain &&
	       h->o->doors->text_plain(q->door) &&
	       !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
}

/* An error for the request in its own shape (a door's, or ours). */
static enum MHD_Result refuse(const struct al_http *h, const struct req *q,
			      struct MHD_Connection *c, unsigned status,
			      const char *msg)
{
	return q->door ? h->o->doors->error(q->door, c, status, msg)
		       : send_error(c, status, msg);
}

/* The first call for a request: route, authenticate, check the declared
 * length. NULL with *ret set when it is answered already. */
static struct req *begin(struct al_http *h, struct MHD_Connection *c,
			 const char *method, const char *url,
			 enum MHD_Result *ret)
{
	const char *cl = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	struct req *q = calloc(1, sizeof(*q));
	unsigned a;
	int r;

	if (!q) {
		*ret = MHD_NO;
		return NULL;
	}
	if (!h->o->metrics_only && h->o->doors && h->o->doors->own_claims &&
	    h->o->doors->own_claims(c, url)) {
		/* the door authenticates by its own keys and tokens */
		q->own = true;
		if (!h->o->principals.n &&
		    !al_http_host_allowed(
			MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_HOST),
			h->o->listen))
			*ret = send_error(c, 403, "Host not allowed");
		else if (cl &&
			 strtoull(cl, NULL, 10) > h->o->doors->own_max_body)
			*ret = send_error(c, 413, "body over the door's cap");
		else
			return q;
		free(q);
		return NULL;
	}
	r = h->o->metrics_only || !h->o->doors
		? -ENOENT
		: h->o->doors->route(method, url, &q->door);
	if (r == -ENOENT)
		r = al_http_route(method, url, &q->route, q->id);
	q->has_body = q->door ? h->o->doors->has_body(q->door, method)
			      : al_http_route_has_body(q->route);
	if (r == 0 && h->o->metrics_only && q->route != AL_ROUTE_METRICS &&
	    q->route != AL_ROUTE_HEALTH)
		r = -ENOENT;
	if (r < 0) {
		/* a session id we never make names no session: 404 as for
		 * one that is gone or another principal's */
		bool sess = !strncmp(url, "/sessions/", 10);

		*ret = r == -EPERM ? refuse(h, q, c, 405, "method not allowed")
		       : r == -EINVAL && sess
			   ? refuse(h, q, c, 404, "unknown session")
		       : r == -EINVAL ? refuse(h, q, c, 400, "bad job id")
				      : refuse(h, q, c, 404, "no such path");
	} else if (!h->o->metrics_only && !h->o->principals.n &&
		   !al_http_host_allowed(
		       MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						   MHD_HTTP_HEADER_HOST),
		       h->o->listen)) {
		/* no token: a DNS-rebound name in a browser is not us */
		*ret = refuse(h, q, c, 403,
			      "Host not allowed (no http.token_file: "
			      "loopback names only)");
	} else if (!h->o->metrics_only && q->route != AL_ROUTE_HEALTH &&
		   (a = auth(h, c, q->door, &q->who)) != 0) {
		*ret = refuse(h, q, c, a,
			      a == 401 ? "a valid bearer token is "
					 "required"
				       : "only loopback clients "
					 "(no http.token set)");
	} else if (q->route == AL_ROUTE_SESS_PUT_TAR &&
		   strcmp(MHD_lookup_connection_value(
			      c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)
			      ?: "",
			  "application/x-tar")) {
		/* not a type a browser posts cross-site unasked either */
		*ret = send_error(c, 415, "Content-Type must be application/x-tar");
	} else if ((q->door || q->route != AL_ROUTE_SESS_PUT_TAR) &&
		   q->has_body &&
		   !al_http_json_type(MHD_lookup_connection_value(
		       c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)) &&
		   !door_plain_ok(h, q, c)) {
		/* a browser posts text/plain cross-site without asking */
		*ret =
		    refuse(h, q, c, 415, "Content-Type must be application/json");
	} else if (cl &&
		   strtoull(cl, NULL, 10) > h->o->cfg->http.max_body_bytes) {
		*ret = refuse(h, q, c, 413, "body over http.max_body_bytes");
	} else {
		return q;
	}
	free(q);
	return NULL;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c,
				 const char *url, const char *method,
				 const char *version, const char *data,
				 size_t *data_size, void **con_cls)
{
	struct al_http *h = cls;
	struct req *q = *con_cls;
	enum MHD_Result ret;

	(void)version;
	if (!q) {
		q = begin(h, c, method, url, &ret);
		if (!q)
			return ret;
		*con_cls = q;
		return MHD_YES;
	}
	if (q->own) {
		size_t max = h->o->doors->own_max_body;

		if (*data_size) {
			take_body(q, data, *data_size, max);
			*data_size = 0;
			return MHD_YES;
		}
		if (q->too_big)
			return send_error(c, 413, "body over the door's cap");
		take_body(q, "", 1, max + 1); /* a NUL after it */
		q->len--;
		return h->o->doors->own_handle(h->o, c, method, url, q->body,
					       q->len);
	}
	if (*data_size) {
		if (q->has_body)
			take_body(q, data, *data_size,
				  h->o->cfg->http.max_body_bytes);
		*data_size = 0;
		return MHD_YES;
	}
	if (q->too_big)
		return refuse(h, q, c, 413, "body over http.max_body_bytes");
	if (q->door)
		return h->o->doors->handle(&(struct al_door_req){.h = h,
							    .c = c,
							    .door = q->door,
							    .method = method,
							    .path = url,
							    .body = q->body,
							    .len = q->len});
	return handlers[q->route](h, c, q);
}

/* Percent-decoding of the path and query: ours, which keeps %00 (see
 * al_http_unescape), instead of libmicrohttpd's, which would cut the path
 * at it. */
static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls, (void)c;
	return al_http_unescape(s);
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *q = *con_cls;

	(void)cls, (void)c, (void)toe;
	if (q) {
		free(q->body);
		free(q);
		*con_cls = NULL;
	}
}

/* HOST:PORT (or [V6]:PORT) to a socket address. */
static int resolve_listen(const char *listen, struct sockaddr_storage *ret,
			  char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE},
			*res = NULL;
	const char *colon = strrchr(listen, ':');
	char host[256];
	size_t n;
	int r;

	if (!colon || colon == listen) {
		snprintf(err, errlen, "%s: not HOST:PORT", listen);
		return -EINVAL;
	}
	n = (size_t)(colon - listen);
	if (listen[0] == '[' && n >= 2 && listen[n - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)n - 2, listen + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)n, listen);
	r = getaddrinfo(host, colon + 1, &hints, &res);
	if (r != 0 || !res) {
		snprintf(err, errlen, "%s: %s", listen, gai_strerror(r));
		return -EINVAL;
	}
	memcpy(ret, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

int al_http_start(const struct al_http_opts *o, struct al_http **ret, char *err,
		  size_t errlen)
{
	const struct al_config *cfg = o->cfg;
	struct sockaddr_storage sa;
	struct al_http *h;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int r = resolve_listen(o->listen, &sa, err, errlen);

	if (r < 0)
		return r;
	if (!o->metrics_only && !o->principals.n &&
	    !loopback_sa((const struct sockaddr *)&sa)) {
		/* no token, the peer address is all the authentication
		 * there is: only a listener no other host can reach */
		snprintf(err, errlen,
			 "%s: not a loopback address, and no http.token_file "
			 "is set: set one, or listen on 127.0.0.1",
			 o->listen);
		return -EPERM;
	}
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->o = o;
	h->d = MHD_start_daemon(
	    flags, 0, NULL, NULL, access_cb, h, MHD_OPTION_SOCK_ADDR, &sa,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http.max_connections,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http.timeout_s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_MEM,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL,
	    MHD_OPTION_NOTIFY_COMPLETED, completed_cb, h, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen,
			 "%s: cannot listen (in use, or not an "
			 "address of this host)",
			 o->listen);
		free(h);
		return -EADDRINUSE;
	}
	*ret = h;
	return 0;
}

void al_http_stop(struct al_http *h)
{
	if (!h)
		return;
	atomic_store(&h->stopping, true);
	MHD_stop_daemon(h->d);
	free(h);
}
