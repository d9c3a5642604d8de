/* serve.c: the gateway's request handling (serve.h).
 *
 * Theory of operation. libmicrohttpd runs a small thread pool over epoll;
 * every request is answered in the access handler's second call, once the
 * request is complete (a body is refused with 413), so no per-connection
 * state exists beyond libmicrohttpd's; connections are kept alive.
 * The URL reaches us raw (our unescape callback leaves it alone) and
 * route.c decodes it once with its own rules.
 *
 * Decisions, per route:
 *
 *  - project / package document: the name must have a pin; the page lists
 *    only pinned files that are in the mirror and not excluded by an
 *    option, and its audit record names the versions the mirror has that
 *    are withheld as not pinned (the client never says which version it
 *    wants). A name with no pin is refused (pending, look-alike checked).
 *  - file / metadata / tarball: the file itself must be pinned and not
 *    excluded, whatever any page said (clients fetch lockfile URLs
 *    directly); the bytes are read from the mirror and hashed again, and
 *    a mismatch with the pin is refused as an integrity incident (502 and
 *    an INCIDENT log line): a mirror file that changed is never served.
 *
 * pip prints nothing of a 404 on a project page at its default verbosity,
 * but it does print the Content-Type of a page it cannot use: a refused
 * project page answers pip (and only pip, by its User-Agent; presentation
 * only, the decision is the same for every client) with 200 and a
 * Content-Type carrying the reason, and pip shows "Skipping page ...
 * Content-Type: text/x-airlock-refused; reason=...". Others get 404 (npm:
 * with {"error": reason}, which npm prints). Files are 403 for everyone.
 *
 * The allowlist is reread when its file's inode, size or mtime changed
 * (checked at most once a second) into a new reference-counted version;
 * new jobs get the newest. A job (an id from the slots dir) keeps the
 * version its first request got for as long as it asks (JOB_IDLE_MS idle
 * at most), so an approval never changes a running job; the host and
 * unknown clients always get the newest. A request holds a reference to
 * its version while it decides and renders, without a lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "allow.h"
#include "audit.h"
#include "lookalike.h"
#include "mirror.h"
#include "pages.h"
#include "route.h"
#include "serve.h"

#define HOST_MAX 255

#define JOBS_MAX    4096	      /* jobs holding an allowlist */
#define JOB_IDLE_MS (6 * 3600 * 1000) /* a job's hold ends after this idle */

/* One version of the allowlist, shared by the requests and jobs using it. */
struct snap {
	struct gw_allow allow;
	unsigned refs; /* holders: the server (while current), jobs, requests */
};

/* A job and the allowlist it started with: approval never changes a
 * running job (its later requests are decided as its first was). */
struct job_hold {
	char job[GW_JOB_MAX + 1];
	struct snap *snap; /* one reference */
	int64_t last_ms;   /* its last request */
};

#define RATE_SLOTS 1024 /* addresses rate-limited at once (a hash table) */

/* One address's token bucket, and the refusals not yet audited. */
struct rate {
	char peer[48];	    /* the address, "" = free */
	double tokens;	    /* requests it may make now */
	int64_t last_ms;    /* when tokens was computed */
	uint64_t refused;   /* 429s since the last summary record */
	int64_t summary_ms; /* when the last summary was written */
};

struct gw_server {
	struct gw_serve_options o;
	pthread_mutex_t rate_lock; /* guards rates */
	struct rate *rates;	   /* RATE_SLOTS entries */
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;  /* guards current, the refs, jobs */
	struct snap *current;  /* the allowlist new jobs get */
	struct job_hold *jobs; /* JOBS_MAX entries, n_jobs used */
	size_t n_jobs;
	struct stat allow_st;  /* of the file current came from */
	time_t checked;	       /* when allow_st was last compared */
	pthread_mutex_t check; /* one reload at a time */
};

/* What one request gets back. */
struct reply {
	unsigned status;
	const char *type;   /* Content-Type */
	struct gw_buf body; /* or file bytes in data */
	uint8_t *data;	    /* a file's bytes, malloc'd */
	size_t len;
	bool vary; /* Vary: Accept */
};

static void gw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void gw_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "airlock-gateway: %s\n", line);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drop one reference (s->lock held). */
static void snap_unref(struct snap *n)
{
	if (n && --n->refs == 0) {
		gw_allow_release(&n->allow);
		free(n);
	}
}

/* The allowlist a request of JOB is decided by, with a reference: the
 * one the job's first request got, while the job is held; the current one
 * for the host and unknown clients (no job to hold). */
static struct snap *snap_take(struct gw_server *s, const char *job, int64_t now)
{
	struct job_hold *h = NULL, *oldest = NULL;
	struct snap *n;

	pthread_mutex_lock(&s->lock);
	n = s->current;
	if (strcmp(job, GW_HOST_JOB) && strncmp(job, "unknown", 7)) {
		for (size_t i = 0; i < s->n_jobs && !h; i++) {
			if (!strcmp(s->jobs[i].job, job))
				h = &s->jobs[i];
			else if (!oldest ||
				 s->jobs[i].last_ms < oldest->last_ms)
				oldest = &s->jobs[i];
		}
		if (!h && s->n_jobs < JOBS_MAX) {
			h = &s->jobs[s->n_jobs++];
		} else if (!h && now - oldest->last_ms > JOB_IDLE_MS / 6) {
			h = oldest; /* full: the longest idle gives way */
			snap_unref(h->snap);
		}
		if (h && strcmp(h->job, job)) {
			snprintf(h->job, sizeof(h->job), "%s", job);
			h->snap = s->current;
			h->snap->refs++;
		}
		if (h) {
			h->last_ms = now;
			n = h->snap;
		}
	}
	n->refs++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void snap_give(struct gw_server *s, struct snap *n)
{
	pthread_mutex_lock(&s->lock);
	snap_unref(n);
	pthread_mutex_unlock(&s->lock);
}

/* Jobs idle for JOB_IDLE_MS let go of their allowlist (s->lock held). */
static void jobs_expire(struct gw_server *s, int64_t now)
{
	for (size_t i = 0; i < s->n_jobs;) {
		if (now - s->jobs[i].last_ms > JOB_IDLE_MS) {
			snap_unref(s->jobs[i].snap);
			s->jobs[i] = s->jobs[--s->n_jobs];
		} else {
			i++;
		}
	}
}

/* Reread the allowlist when its file changed. */
static void maybe_reload(struct gw_server *s)
{
	struct stat st;
	struct gw_allow fresh;
	char err[512];
	time_t now = time(NULL);

	pthread_mutex_lock(&s->check);
	if (now == s->checked) {
		pthread_mutex_unlock(&s->check);
		return;
	}
	s->checked = now;
	pthread_mutex_lock(&s->lock);
	jobs_expire(s, now_ms());
	pthread_mutex_unlock(&s->lock);
	if (stat(s->o.allow_path, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (st.st_ino == s->allow_st.st_ino &&
	    st.st_size == s->allow_st.st_size &&
	    st.st_mtim.tv_sec == s->allow_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == s->allow_st.st_mtim.tv_nsec) {
		pthread_mutex_unlock(&s->check);
		return;
	}
	if (gw_allow_load(s->o.allow_path, true, &fresh, err, sizeof(err)) <
	    0) {
		gw_log("allowlist not reloaded, the old one stays: %s", err);
	} else {
		struct snap *n = calloc(1, sizeof(*n));

		if (!n) {
			gw_allow_release(&fresh);
			pthread_mutex_unlock(&s->check);
			return;
		}
		n->allow = fresh;
		n->refs = 1;
		pthread_mutex_lock(&s->lock);
		snap_unref(s->current);
		s->current = n;
		pthread_mutex_unlock(&s->lock);
		gw_log("allowlist reloaded: %zu pins", fresh.n);
	}
	s->allow_st = st;
	pthread_mutex_unlock(&s->check);
}

/* May PEER make a request now? Token bucket: o.rate a second, bursts of
 * twice that. On false, *summary is set (once a second) with how many
 * were refused since the last summary, for one audit record. */
static bool rate_ok(struct gw_server *s, const char *peer, int64_t now,
		    uint64_t *summary)
{
	uint32_t h = 2166136261u;
	struct rate *r;
	bool ok;

	*summary = 0;
	if (!s->o.rate)
		return true;
	for (const char *p = peer; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	pthread_mutex_lock(&s->rate_lock);
	r = &s->rates[h % RATE_SLOTS];
	if (strcmp(r->peer, peer)) {
		/* a collision takes the slot over: at worst an address gets a
		 * fresh burst, never less than its rate */
		*r = (struct rate){.tokens = 2.0 * s->o.rate, .last_ms = now};
		snprintf(r->peer, sizeof(r->peer), "%s", peer);
	}
	r->tokens += (double)(now - r->last_ms) * s->o.rate / 1000.0;
	if (r->tokens > 2.0 * s->o.rate)
		r->tokens = 2.0 * s->o.rate;
	r->last_ms = now;
	ok = r->tokens >= 1.0;
	if (ok) {
		r->tokens -= 1.0;
	} else {
		r->refused++;
		if (now - r->summary_ms >= 1000) {
			*summary = r->refused;
			r->refused = 0;
			r->summary_ms = now;
		}
	}
	pthread_mutex_unlock(&s->rate_lock);
	return ok;
}

/* The job or session behind a client address (serve.h). */
static void identify(struct gw_server *s, const struct sockaddr *sa,
		     struct gw_audit *a)
{
	char buf[GW_JOB_MAX + 2];
	ssize_t n;
	int fd;

	snprintf(a->job, sizeof(a->job), "unknown");
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a->peer, sizeof(a->peer));
		if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) {
			snprintf(a->job, sizeof(a->job), GW_HOST_JOB);
			return;
		}
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a->peer, sizeof(a->peer));
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
			snprintf(a->job, sizeof(a->job), GW_HOST_JOB);
			return;
		}
	} else {
		return;
	}
	snprintf(a->job, sizeof(a->job), "unknown %s", a->peer);
	if (s->o.slots_fd < 0)
		return;
	fd = openat(s->o.slots_fd, a->peer, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *p = buf; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:/-", *p)))
			return;
	n = (ssize_t)strlen(buf);
	if (n > 0 && (size_t)n <= GW_JOB_MAX && (size_t)n < sizeof(a->job))
		memcpy(a->job, buf, (size_t)n + 1);
}

static void refuse(struct reply *r, struct gw_audit *a, unsigned status,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void refuse(struct reply *r, struct gw_audit *a, unsigned status,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
	va_end(ap);
	a->allowed = false;
	r->status = status;
}

/* The pending flag and the look-alike check of a refused name. */
static void refused_name(const struct gw_allow *al, struct gw_audit *a)
{
	char near[GW_NAME_MAX + 1], why[GW_LOOKALIKE_WHY_MAX];
	size_t len;

	a->pending = true;
	if (!gw_lookalike(al, a->eco, a->name, near, why))
		return;
	snprintf(a->lookalike, sizeof(a->lookalike), "%s", near);
	len = strlen(a->reason);
	snprintf(a->reason + len, sizeof(a->reason) - len,
		 "; suspected look-alike of %s (%s)", near, why);
}

static int subdir(struct gw_server *s, enum gw_eco eco)
{
	return openat(s->o.mirror_fd, gw_eco_name(eco),
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The first pinned file of ECO KEY that option min-age-days withholds,
 * as "too_new: ... (FILE)" into why; false when none is. */
static bool withheld(const struct gw_allow *al, int dir, enum gw_eco eco,
		     const char *key, char *why, size_t size)
{
	char buf[128];
	struct stat st;

	for (size_t i = 0; al->min_age_days && i < al->n; i++) {
		const struct gw_pin *p = &al->pins[i];

		if (p->eco != eco || strcmp(p->key, key) ||
		    fstatat(dir, p->file, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !gw_too_new(al, (int64_t)st.st_mtim.tv_sec, now_ms() / 1000,
				buf, sizeof(buf)))
			continue;
		snprintf(why, size, "%s (%s)", buf, p->file);
		return true;
	}
	return false;
}

/* A listing's record names the versions in the mirror it withheld as not
 * pinned: pip and npm never say which version they want of a listing, so
 * a refused `pip install NAME==VER` shows in the audit only here. */
static void not_pinned(const struct gw_allow *al, int dir, enum gw_eco eco,
		       const char *key, struct gw_audit *a)
{
	char v[120];
	size_t len = strlen(a->reason), shown = 0;
	size_t n = gw_mirror_unpinned(al, dir, eco, key, v, sizeof(v));

	for (const char *p = v; *p; p++)
		shown += p == v || *p == ' ';
	if (n && shown == n)
		snprintf(a->reason + len, sizeof(a->reason) - len,
			 "; not pinned, withheld: %s", v);
	else if (n)
		snprintf(a->reason + len, sizeof(a->reason) - len,
			 "; not pinned, withheld: %s and %zu more", v,
			 n - shown);
}

static void py_project(struct gw_server *s, const struct gw_allow *al,
		       const struct gw_route *rt, enum gw_format fmt,
		       struct reply *r, struct gw_audit *a)
{
	size_t n = 0;
	int dir;

	snprintf(a->name, sizeof(a->name), "%s", rt->key);
	if (!gw_allow_project(al, GW_PYTHON, rt->key)) {
		refuse(r, a, 404,
		       "%s is not on the allowlist (pending approval)",
		       rt->key);
		snprintf(a->version, sizeof(a->version), "*");
		refused_name(al, a);
		return;
	}
	dir = subdir(s, GW_PYTHON);
	if (dir < 0 ||
	    gw_page_py_project(al, dir, rt->key, fmt, &r->body, &n) < 0) {
		refuse(r, a, 500, "cannot read the mirror");
	} else if (n == 0) {
		const char *why = NULL;

		for (size_t i = 0; i < al->n && !why; i++)
			if (al->pins[i].eco == GW_PYTHON &&
			    !strcmp(al->pins[i].key, rt->key))
				why = gw_pin_excluded(al, &al->pins[i], false);
		char young[GW_FILE_MAX + 160];

		if (!why &&
		    withheld(al, dir, GW_PYTHON, rt->key, young, sizeof(young)))
			refuse(r, a, 404, "%s", young);
		else
			refuse(r, a, 404, "no file of %s can be served: %s",
			       rt->key,
			       why ? why
				   : "its pinned files are not in the mirror");
	} else {
		char young[GW_FILE_MAX + 160];
		bool w =
		    withheld(al, dir, GW_PYTHON, rt->key, young, sizeof(young));

		a->allowed = true;
		snprintf(a->reason, sizeof(a->reason),
			 "listed %zu files%s%.160s", n, w ? "; withheld " : "",
			 w ? young : "");
		not_pinned(al, dir, GW_PYTHON, rt->key, a);
		r->status = 200;
		r->vary = true;
		r->type = fmt == GW_FMT_JSON
			      ? "application/vnd.pypi.simple.v1+json"
			      : "application/vnd.pypi.simple.v1+html";
	}
	if (dir >= 0)
		close(dir);
}

/* NAME and VERSION from a file name no pin knows (for the record). */
static void names_from_file(const char *file, enum gw_eco eco,
			    struct gw_audit *a)
{
	char buf[GW_FILE_MAX + 1], *dash;
	size_t len;

	snprintf(buf, sizeof(buf), "%s", file);
	len = strlen(buf);
	if (eco == GW_PYTHON && len > 4 && !strcmp(buf + len - 4, ".whl")) {
		char *a1 = strchr(buf, '-'),
		     *b1 = a1 ? strchr(a1 + 1, '-') : NULL;
		if (!b1)
			return;
		*a1 = *b1 = '\0';
		gw_pep503_normalize(buf, a->name);
		snprintf(a->version, sizeof(a->version), "%s", a1 + 1);
		return;
	}
	if (len > 7 && !strcmp(buf + len - 7, ".tar.gz"))
		buf[len - 7] = '\0';
	else if (len > 4 && !strcmp(buf + len - 4, ".tgz"))
		buf[len - 4] = '\0';
	else
		return; /* no package file: nothing to approve */
	dash = strrchr(buf, '-');
	if (!dash)
		return;
	*dash = '\0';
	if (eco == GW_PYTHON)
		gw_pep503_normalize(buf, a->name);
	snprintf(a->version, sizeof(a->version), "%s", dash + 1);
}

/* A file route: the pin, the option checks, the bytes, their hash. */
static void serve_file(struct gw_server *s, const struct gw_allow *al,
		       enum gw_eco eco, const char *file, bool metadata,
		       const char *npm_name, struct reply *r,
		       struct gw_audit *a)
{
	const struct gw_pin *pin = gw_allow_file(al, eco, file);
	char side[GW_FILE_MAX + 16], young[128];
	int64_t mtime = 0;
	struct gw_pkg pkg;
	const char *why;
	int dir = -1, rc;

	snprintf(a->file, sizeof(a->file), "%s", file);
	if (!pin || (npm_name && strcmp(pin->key, npm_name))) {
		if (npm_name)
			snprintf(a->name, sizeof(a->name), "%s", npm_name);
		names_from_file(file, eco, a);
		refuse(r, a, 403, "%s is not on the allowlist", file);
		if (a->name[0])
			refused_name(al, a);
		return;
	}
	snprintf(a->name, sizeof(a->name), "%s", pin->key);
	snprintf(a->version, sizeof(a->version), "%s", pin->version);
	if ((why = gw_pin_excluded(al, pin, false))) {
		refuse(r, a, 403, "%s is %s", file, why);
		return;
	}
	dir = subdir(s, eco);
	rc = dir < 0 ? -errno
		     : gw_mirror_read(dir, file, GW_PKG_FILE_MAX, &r->data,
				      &r->len, &mtime);
	if (rc < 0) {
		refuse(r, a, rc == -ENOENT ? 404 : 500, "%s is pinned but %s",
		       file,
		       rc == -ENOENT ? "not in the mirror"
				     : "unreadable in the mirror");
		goto out;
	}
	gw_sha256_hex(r->data, r->len, a->sha256);
	if (strcmp(a->sha256, pin->sha256)) {
		gw_log(
		    "INCIDENT job=%s mirror file %s/%s has sha256 %s, its pin "
		    "says %s: refused",
		    a->job, gw_eco_name(eco), file, a->sha256, pin->sha256);
		refuse(r, a, 502,
		       "integrity: %s in the mirror does not match its "
		       "pinned sha256 (the file changed; refused)",
		       file);
		goto out;
	}
	if (gw_too_new(al, mtime, now_ms() / 1000, young, sizeof(young))) {
		refuse(r, a, 403, "%s", young);
		goto out;
	}
	if (eco == GW_NPMJS && al->npm_scripts_denied) {
		if (gw_pkg_parse(file, r->data, r->len, &pkg) < 0) {
			refuse(r, a, 502, "%s is not a readable npm tarball",
			       file);
			goto out;
		}
		why = gw_pin_excluded(al, pin, pkg.install_script);
		gw_pkg_release(&pkg);
		if (why) {
			refuse(r, a, 403, "%s is %s", file, why);
			goto out;
		}
	}
	if (metadata) {
		free(r->data);
		r->data = NULL;
		gw_mirror_meta_name(eco, file, side, sizeof(side));
		rc = gw_mirror_read(dir, side, GW_META_MAX, &r->data, &r->len,
				    NULL);
		if (rc < 0) {
			refuse(r, a, 404, "no metadata for %s in the mirror",
			       file);
			goto out;
		}
	}
	a->allowed = true;
	snprintf(a->reason, sizeof(a->reason), "pinned, sha256 verified");
	r->status = 200;
	r->type = metadata	    ? "text/plain; charset=utf-8"
		  : eco == GW_NPMJS ? "application/octet-stream"
				    : "application/octet-stream";
out:
	if (dir >= 0)
		close(dir);
}

static bool host_valid(const char *h)
{
	size_t n = h ? strlen(h) : 0;

	if (n == 0 || n > HOST_MAX)
		return false;
	for (; *h; h++)
		if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') ||
		      (*h >= '0' && *h <= '9') || strchr(".:-[]", *h)))
			return false;
	return true;
}

static void npm_doc(struct gw_server *s, const struct gw_allow *al,
		    const struct gw_route *rt, struct MHD_Connection *c,
		    struct reply *r, struct gw_audit *a)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_HOST);
	const char *accept = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	bool abbreviated = gw_accept_npm_abbreviated(accept);
	size_t n = 0;
	int dir;

	snprintf(a->name, sizeof(a->name), "%s", rt->key);
	if (!gw_allow_project(al, GW_NPMJS, rt->key)) {
		snprintf(a->version, sizeof(a->version), "*");
		refuse(r, a, 404,
		       "%s is not on the allowlist (pending approval)",
		       rt->key);
		refused_name(al, a);
		return;
	}
	if (!host_valid(host)) {
		refuse(r, a, 400, "no usable Host header");
		return;
	}
	dir = subdir(s, GW_NPMJS);
	if (dir < 0 ||
	    gw_page_npm(al, dir, rt->key, host, abbreviated, &r->body, &n) < 0)
		refuse(r, a, 500, "cannot read the mirror");
	else if (n == 0) {
		char young[GW_FILE_MAX + 160];

		if (withheld(al, dir, GW_NPMJS, rt->key, young, sizeof(young)))
			refuse(r, a, 404, "%s", young);
		else
			refuse(r, a, 404,
			       "no version of %s can be served (excluded by "
			       "an option, or not in the mirror, or its bytes "
			       "changed)",
			       rt->key);
	} else {
		a->allowed = true;
		snprintf(a->reason, sizeof(a->reason), "listed %zu versions%s",
			 n, abbreviated ? " (abbreviated)" : "");
		not_pinned(al, dir, GW_NPMJS, rt->key, a);
		r->status = 200;
		r->vary = true;
		r->type = abbreviated ? "application/vnd.npm.install-v1+json"
				      : "application/json";
	}
	if (dir >= 0)
		close(dir);
}

/* Decide and render one request into r and a. */
static void decide(struct gw_server *s, const struct gw_allow *al,
		   struct MHD_Connection *c, const char *url,
		   const char *method, struct reply *r, struct gw_audit *a)
{
	const char *accept = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	struct gw_route rt;
	enum gw_format fmt;
	int rc = gw_route_parse(method, url, &rt);

	snprintf(a->route, sizeof(a->route), "bad");
	if (rc < 0) {
		refuse(r, a,
		       rc == -EOPNOTSUPP ? 405
		       : rc == -EMSGSIZE ? 414
		       : rc == -ENOENT	 ? 404
					 : 400,
		       "%s",
		       rc == -EOPNOTSUPP ? "only GET and HEAD"
		       : rc == -EMSGSIZE ? "path too long"
		       : rc == -ENOENT	 ? "no such route"
					 : "malformed path");
		return;
	}
	a->eco = rt.kind >= GW_R_NPM_DOC ? GW_NPMJS : GW_PYTHON;
	switch (rt.kind) {
	case GW_R_PY_INDEX:
	case GW_R_PY_PROJECT:
		snprintf(a->route, sizeof(a->route),
			 rt.kind == GW_R_PY_INDEX ? "index" : "project");
		fmt = gw_accept(accept);
		if (fmt == GW_FMT_NONE) {
			refuse(r, a, 406, "no acceptable simple API format");
			return;
		}
		if (rt.kind == GW_R_PY_PROJECT) {
			py_project(s, al, &rt, fmt, r, a);
			return;
		}
		if (gw_page_py_index(al, fmt, &r->body) < 0) {
			refuse(r, a, 500, "cannot render");
			return;
		}
		a->allowed = true;
		snprintf(a->reason, sizeof(a->reason), "index");
		r->status = 200;
		r->vary = true;
		r->type = fmt == GW_FMT_JSON
			      ? "application/vnd.pypi.simple.v1+json"
			      : "application/vnd.pypi.simple.v1+html";
		return;
	case GW_R_PY_FILE:
	case GW_R_PY_META:
		snprintf(a->route, sizeof(a->route),
			 rt.kind == GW_R_PY_FILE ? "file" : "metadata");
		serve_file(s, al, GW_PYTHON, rt.file, rt.kind == GW_R_PY_META,
			   NULL, r, a);
		return;
	case GW_R_NPM_DOC:
		snprintf(a->route, sizeof(a->route), "doc");
		npm_doc(s, al, &rt, c, r, a);
		return;
	case GW_R_NPM_TARBALL:
		snprintf(a->route, sizeof(a->route), "tarball");
		serve_file(s, al, GW_NPMJS, rt.file, false, rt.key, r, a);
		return;
	}
}

/* The refusal in the form the client shows a person (theory above). */
static void present_refusal(struct MHD_Connection *c, struct reply *r,
			    const struct gw_audit *a, char *ctype, size_t size)
{
	const char *ua = MHD_lookup_connection_value(
	    c, MHD_HEADER_KIND, MHD_HTTP_HEADER_USER_AGENT);

	free(r->data);
	r->data = NULL;
	gw_buf_release(&r->body);
	r->vary = false;
	r->type = "text/plain; charset=utf-8";
	gw_buf_printf(&r->body, "airlock package gateway: refused: %s\n",
		      a->reason);

	if (!strcmp(a->route, "project") && ua && !strncmp(ua, "pip/", 4)) {
		char clean[GW_REASON_MAX + 1];
		size_t i;

		for (i = 0; a->reason[i] && i < GW_REASON_MAX; i++)
			clean[i] = a->reason[i] == '"' ? '\'' : a->reason[i];
		clean[i] = '\0';
		snprintf(ctype, size, "text/x-airlock-refused; reason=\"%s\"",
			 clean);
		r->type = ctype;
		r->status = 200;
		gw_buf_release(&r->body);
	} else if (a->eco == GW_NPMJS &&
		   (!strcmp(a->route, "doc") || !strcmp(a->route, "tarball"))) {
		gw_buf_release(&r->body);
		gw_buf_printf(&r->body, "{\"error\":\"airlock package gateway "
					"refused: ");
		for (const char *p = a->reason; *p; p++)
			gw_buf_printf(&r->body,
				      *p == '"' || *p == '\\' ? "\\%c" : "%c",
				      *p);
		gw_buf_printf(&r->body, "\"}\n");
		r->type = "application/json";
	}
}

/* The address *con_cls holds when a request came with a body. */
static char had_body;

static void reply_release(struct reply *r)
{
	free(r->data);
	gw_buf_release(&r->body);
	*r = (struct reply){0};
}

/* A job decides by the allowlist its first request got, so an approval
 * never widens a running job; but what the current allowlist refuses (a
 * pin removed, a name no longer allowed) is refused at once, to running
 * jobs too: an allowed answer from an older version is decided again by
 * the current one, whose refusal wins. */
static void narrow(struct gw_server *s, const struct snap *held,
		   struct MHD_Connection *c, const char *url,
		   const char *method, struct reply *r, struct gw_audit *a)
{
	struct reply r2 = {0};
	struct gw_audit *a2;
	struct snap *now;

	if (!a->allowed)
		return;
	now = snap_take(s, GW_HOST_JOB, a->time_ms); /* the current one */
	a2 = now == held ? NULL : calloc(1, sizeof(*a2));
	if (a2) {
		a2->time_ms = a->time_ms;
		memcpy(a2->job, a->job, sizeof(a2->job));
		memcpy(a2->peer, a->peer, sizeof(a2->peer));
		decide(s, &now->allow, c, url, method, &r2, a2);
		if (!a2->allowed) {
			reply_release(r);
			*r = r2;
			*a = *a2;
		} else {
			reply_release(&r2);
		}
		free(a2);
	} else if (now != held) {
		reply_release(r); /* cannot tell: refused */
		refuse(r, a, 503, "out of memory");
	}
	snap_give(s, now);
}

/* A fixed answer (a persistent body) with one extra header. */
static enum MHD_Result answer_fixed(struct MHD_Connection *c, unsigned status,
				    const char *body, const char *header,
				    const char *value)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(strlen(body), (void *)body,
					       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, header, value);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A request that came with a body: audited, answered 413. */
static enum MHD_Result answer_body(struct gw_server *s,
				   struct MHD_Connection *c, const char *method,
				   struct gw_audit *a)
{
	snprintf(a->route, sizeof(a->route), "bad");
	snprintf(a->reason, sizeof(a->reason), "a request body (%s)",
		 !strcmp(method, "POST") ? "POST" : "other method");
	gw_audit_write(s->o.audit_fd, a);
	return answer_fixed(c, MHD_HTTP_CONTENT_TOO_LARGE,
			    "airlock package gateway: no request bodies\n",
			    MHD_HTTP_HEADER_CONNECTION, "close");
}

/* Over the rate: 429, and one summary record a second (limited: how
 * many were refused since the last one, 0 when not yet time). */
static enum MHD_Result answer_limited(struct gw_server *s,
				      struct MHD_Connection *c,
				      struct gw_audit *a, uint64_t limited)
{
	if (limited) {
		snprintf(a->route, sizeof(a->route), "bad");
		snprintf(a->reason, sizeof(a->reason),
			 "rate limited: %llu requests refused (over %u a "
			 "second)",
			 (unsigned long long)limited, s->o.rate);
		gw_audit_write(s->o.audit_fd, a);
		gw_log("job=%s %s", a->job, a->reason);
	}
	return answer_fixed(c, MHD_HTTP_TOO_MANY_REQUESTS,
			    "airlock package gateway: too many requests\n",
			    "Retry-After", "1");
}

/* The decided reply sent (its bytes handed to libmicrohttpd). */
static enum MHD_Result answer(struct MHD_Connection *c, struct reply *r,
			      const struct gw_audit *a)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (r->data) {
		resp = MHD_create_response_from_buffer(r->len, r->data,
						       MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(r->data);
	} else {
		resp = MHD_create_response_from_buffer(
		    r->body.len, r->body.data ? r->body.data : (char *)"",
		    r->body.data ? MHD_RESPMEM_MUST_FREE
				 : MHD_RESPMEM_PERSISTENT);
		if (!resp)
			gw_buf_release(&r->body);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
	if (r->vary)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (!a->allowed)
		MHD_add_response_header(resp, "X-Airlock-Refused",
					r->status == 200 ? "see Content-Type"
							 : "see body");
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct gw_server *s = cls;
	const union MHD_ConnectionInfo *ci;
	struct reply r = {.status = 500};
	struct gw_audit a = {0};
	char ctype[GW_REASON_MAX + 64];
	struct snap *snap;
	uint64_t limited;

	(void)version;
	(void)upload_data;
	/* the first call has the headers only: answering now would make
	 * libmicrohttpd close the connection (it cannot know there is no
	 * body); body bytes, which no route takes, are dropped as they come
	 * (marked in *con_cls) and the request answered 413 when complete */
	if (!*con_cls) {
		*con_cls = s;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		*con_cls = &had_body;
		return MHD_YES;
	}
	a.time_ms = now_ms();
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	identify(s, ci ? ci->client_addr : NULL, &a);
	if (*con_cls == &had_body)
		return answer_body(s, c, method, &a);
	if (!rate_ok(s, a.peer, a.time_ms, &limited))
		return answer_limited(s, c, &a, limited);
	maybe_reload(s);
	snap = snap_take(s, a.job, a.time_ms);
	decide(s, &snap->allow, c, url, method, &r, &a);
	narrow(s, snap, c, url, method, &r, &a);
	snap_give(s, snap);
	if (!a.allowed)
		present_refusal(c, &r, &a, ctype, sizeof(ctype));
	if (gw_audit_write(s->o.audit_fd, &a) < 0)
		gw_log("job=%s audit record not written", a.job);
	if (!s->o.quiet || !a.allowed)
		gw_log(
		    "job=%s %s %s %s %s %s%s%s: %s", a.job,
		    a.allowed ? "allow" : "deny", gw_eco_name(a.eco), a.route,
		    a.name[0] ? a.name : "-", a.file[0] ? a.file : "-",
		    a.lookalike[0] ? " lookalike=" : "", a.lookalike, a.reason);
	return answer(c, &r, &a);
}

/* Leave the URL as the client sent it: route.c decodes it once. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

int gw_server_start(const struct gw_serve_options *o, struct gw_server **ret)
{
	struct gw_server *s = calloc(1, sizeof(*s));
	char err[512];
	int rc;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->rate_lock, NULL);
	s->rates = calloc(RATE_SLOTS, sizeof(*s->rates));
	if (!s->rates) {
		rc = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&s->check, NULL);
	s->current = calloc(1, sizeof(*s->current));
	s->jobs = calloc(JOBS_MAX, sizeof(*s->jobs));
	if (!s->current || !s->jobs) {
		rc = -ENOMEM;
		goto fail;
	}
	s->current->refs = 1;
	rc = gw_allow_load(o->allow_path, true, &s->current->allow, err,
			   sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "airlock-gateway: %s\n", err);
		goto fail;
	}
	if (stat(o->allow_path, &s->allow_st) < 0)
		memset(&s->allow_st, 0, sizeof(s->allow_st));
	s->mhd = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, o->listen_fd,
	    MHD_OPTION_THREAD_POOL_SIZE, o->threads ? o->threads : 2,
	    MHD_OPTION_CONNECTION_LIMIT, o->conn_max ? o->conn_max : 1024,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    o->per_ip_max ? o->per_ip_max : 64, MHD_OPTION_CONNECTION_TIMEOUT,
	    o->timeout_s ? o->timeout_s : 10,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 << 10),
	    MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL, MHD_OPTION_END);
	if (!s->mhd) {
		fprintf(stderr,
			"airlock-gateway: cannot start the HTTP server\n");
		rc = -EIO;
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	if (s->current)
		gw_allow_release(&s->current->allow);
	free(s->current);
	free(s->jobs);
	free(s->rates);
	free(s);
	return rc;
}

void gw_server_stop(struct gw_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd);
	close(s->o.listen_fd);
	close(s->o.mirror_fd);
	if (s->o.slots_fd >= 0)
		close(s->o.slots_fd);
	if (s->o.audit_fd >= 0)
		close(s->o.audit_fd);
	for (size_t i = 0; i < s->n_jobs; i++)
		snap_unref(s->jobs[i].snap);
	snap_unref(s->current);
	free(s->jobs);
	free(s->rates);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->rate_lock);
	pthread_mutex_destroy(&s->check);
	free(s);
}
