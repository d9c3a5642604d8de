/* callback.c: result callbacks over libcurl, from their own thread
 * (callback.h has the theory of operation).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "callback.h"
#include "clock.h"
#include "log.h"
#include "sbconfig.h" /* al_config_addr_denied */

#define POLL_MS	      250u
#define BACKOFF_MAX_S 60u
#define POST_TIMEOUT  10000L /* ms, the whole POST */
#define PIN_MAX	      (256 + 8 + INET6_ADDRSTRLEN + 4)

struct entry {
	char id[AL_ID_MAX + 1]; /* the job */
	char *url;		/* where to POST */
	uint32_t attempts;	/* POSTs made */
	uint64_t next_ms;	/* wall ms of the next attempt, 0 = now */
};

struct al_callbacks {
	pthread_t thread;	      /* the poster */
	pthread_mutex_t lock;	      /* guards e, n, stop */
	pthread_cond_t wake;	      /* stop, or a new entry */
	struct entry *e;	      /* waiting callbacks */
	size_t n, cap;		      /* used, allocated */
	bool stop;		      /* the thread must end */
	struct alq_url url;	      /* Redis */
	char queue[AL_NAME_MAX + 1];  /* queue name */
	unsigned partitions;	      /* its partitions (queue.h) */
	uint32_t timeout_ms;	      /* per Redis command */
	struct al_config_names allow; /* targets allowed */
	uint32_t attempts;	      /* POSTs before giving up */
	struct al_metrics *m;	      /* counters, or NULL */
	struct alq_client cl;	      /* the thread's Redis client */
};

/* --- targets ------------------------------------------------------------ */

/* Is address `a` (family af) inside block "ADDR/BITS"? */
static bool in_block(int af, const unsigned char *a, const char *block)
{
	unsigned char net[16];
	char addr[64];
	const char *slash = strchr(block, '/');
	int bits, bytes = af == AF_INET ? 4 : 16;

	if (!slash || (size_t)(slash - block) >= sizeof(addr))
		return false;
	memcpy(addr, block, (size_t)(slash - block));
	addr[slash - block] = '\0';
	bits = atoi(slash + 1);
	if (inet_pton(af, addr, net) != 1 || bits < 0 || bits > bytes * 8)
		return false;
	for (int i = 0; i < bytes && bits > 0; i++, bits -= 8) {
		unsigned char mask =
		    bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));

		if ((a[i] & mask) != (net[i] & mask))
			return false;
	}
	return true;
}

/* An address of getaddrinfo as (family, bytes), an IPv4-mapped IPv6
 * address (::ffff:a.b.c.d) as the IPv4 address it is: what the kernel
 * connects to, so what the checks below must see. */
static const unsigned char *ai_addr(const struct addrinfo *ai, int *ret_af)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};
	const unsigned char *a;

	if (ai->ai_family == AF_INET) {
		*ret_af = AF_INET;
		return (const unsigned char *)&(
			   (struct sockaddr_in *)ai->ai_addr)
		    ->sin_addr;
	}
	a = (const unsigned char *)&((struct sockaddr_in6 *)ai->ai_addr)
		->sin6_addr;
	if (!memcmp(a, mapped, sizeof(mapped))) {
		*ret_af = AF_INET;
		return a + 12;
	}
	*ret_af = AF_INET6;
	return a;
}

/* Resolve host and check every address: none may be always denied
 * (al_config_addr_denied: the list the VMs' rules use), and unless the
 * operator allowed the name (`named`), each must lie in a block of
 * allow. 0 with the first address in ret_addr, -EACCES (always denied),
 * -EPERM (outside allow) or -ENOENT (does not resolve). */
static int resolve_in(const struct al_config_names *allow, bool named,
		      const char *host, const char *port, char *ret_addr,
		      size_t len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int r = -EPERM;

	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return -ENOENT;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int af = 0;
		const unsigned char *a;
		bool ok = named;

		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		a = ai_addr(ai, &af);
		if (al_config_addr_denied(af, a)) {
			r = -EACCES;
			break;
		}
		for (size_t i = 0; i < allow->n && !ok; i++)
			ok = strchr(allow->name[i], '/') &&
			     in_block(af, a, allow->name[i]);
		if (!ok) {
			r = -EPERM;
			break;
		}
		if (r == -EPERM)
			inet_ntop(af, a, ret_addr, (socklen_t)len);
		r = 0;
	}
	freeaddrinfo(res);
	return r;
}

/* Does an entry HOST:PORT name this host and port? */
static bool by_name(const struct al_config_names *allow, const char *host,
		    const char *port)
{
	char want[300];

	snprintf(want, sizeof(want), strchr(host, ':') ? "[%s]:%s" : "%s:%s",
		 host, port);
	for (size_t i = 0; i < allow->n; i++)
		if (!strchr(allow->name[i], '/') &&
		    !strcasecmp(allow->name[i], want))
			return true;
	return false;
}

/* Split url into scheme, host (no brackets) and port (default filled). */
static int split_url(const char *url, char *host, size_t hlen, char *port,
		     size_t plen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *h = NULL, *p = NULL;
	int r = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) !=
		CURLUE_OK)
		goto out;
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
		goto out;
	if (h[0] == '[') { /* [v6] */
		size_t n = strlen(h);

		memmove(h, h + 1, n);
		if (n >= 2)
			h[n - 2] = '\0';
	}
	if (strlen(h) >= hlen || strlen(p) >= plen || !h[0])
		goto out;
	strcpy(host, h);
	strcpy(port, p);
	r = 0;
out:
	curl_free(scheme);
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return r;
}

int al_callback_target(const struct al_config_names *allow, const char *url,
		       char *ret_pin, size_t pin_len, char *err, size_t errlen)
{
	char host[256], port[8], addr[INET6_ADDRSTRLEN] = "";
	bool named;
	int r;

	if (split_url(url, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "callback_url: not an http(s) URL");
		return -EINVAL;
	}
	if (ret_pin && pin_len)
		ret_pin[0] = '\0';
	named = by_name(allow, host, port);
	r = resolve_in(allow, named, host, port, addr, sizeof(addr));
	if (r == -ENOENT && named)
		return 0; /* the operator's name; post() needs it resolved */
	if (r == -ENOENT) {
		snprintf(err, errlen, "callback_url: host does not resolve");
		return -EINVAL;
	}
	if (r == -EACCES) {
		snprintf(err, errlen,
			 "callback_url: target address always denied "
			 "(loopback, link-local, metadata..)");
		return -EPERM;
	}
	if (r < 0) {
		snprintf(err, errlen,
			 "callback_url: target not allowed "
			 "(http.callback_allow)");
		return -EPERM;
	}
	if (ret_pin)
		snprintf(ret_pin, pin_len,
			 strchr(addr, ':') ? "%s:%s:[%s]" : "%s:%s:%s", host,
			 port, addr);
	return 0;
}

/* --- posting ------------------------------------------------------------ */

static size_t discard(char *p, size_t size, size_t n, void *priv)
{
	(void)p, (void)priv;
	return size * n;
}

/* POST body to url (re-checked and pinned); the HTTP status, or -errno. */
static long post(struct al_callbacks *cb, const struct entry *e,
		 const char *body)
{
	struct curl_slist *hdr = NULL, *pin = NULL;
	char pinned[PIN_MAX], err[160], jobh[AL_ID_MAX + 32];
	long code = -EIO;
	CURL *c;

	if (al_callback_target(&cb->allow, e->url, pinned, sizeof(pinned), err,
			       sizeof(err)) < 0) {
		al_warn("job=%s: callback: %s", e->id, err);
		return -EPERM;
	}
	if (!pinned[0])
		return -EHOSTUNREACH; /* a name that did not resolve: retry */
	c = curl_easy_init();
	if (!c)
		return -ENOMEM;
	snprintf(jobh, sizeof(jobh), "X-Airlock-Job: %s", e->id);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, jobh);
	if (pinned[0])
		pin = curl_slist_append(NULL, pinned);
	curl_easy_setopt(c, CURLOPT_URL, e->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* never a proxy from http_proxy & co: it would connect for us, to
	 * whatever the name means to it, past the address checked above */
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, POST_TIMEOUT);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (pin)
		curl_easy_setopt(c, CURLOPT_RESOLVE, pin);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	curl_slist_free_all(pin);
	return code;
}

/* The result of e as JSON (malloc'd), or NULL. */
static char *result_json(struct al_callbacks *cb, const char *id)
{
	struct al_result res = {0};
	struct al_diags d;
	char *mp = NULL, *json = NULL;
	size_t len;

	if (alq_client_result(&cb->cl, id, &mp, &len) < 0)
		return NULL;
	al_diags_init(&d);
	if (al_result_from_msgpack(mp, len, &res, &d) == 0)
		al_result_to_json(&res, &json);
	al_result_release(&res);
	free(mp);
	return json;
}

/* One attempt for entry e (a copy, the lock not held): true = finished
 * (delivered or given up). */
static bool attempt(struct al_callbacks *cb, struct entry *e)
{
	char *body = result_json(cb, e->id);
	long code;

	if (!body)
		return false; /* Redis trouble: try again next round */
	code = post(cb, e, body);
	free(body);
	e->attempts++;
	if (code >= 200 && code < 300) {
		al_info("job=%s attempt=%u: callback delivered", e->id,
			e->attempts);
		if (cb->m)
			atomic_fetch_add(&cb->m->callbacks_ok, 1);
		return true;
	}
	if (e->attempts >= cb->attempts || code == -EPERM) {
		al_warn("job=%s attempt=%u status=%ld: callback given up",
			e->id, e->attempts, code);
		if (cb->m)
			atomic_fetch_add(&cb->m->callbacks_failed, 1);
		return true;
	}
	e->next_ms = al_wall_ms() + 1000ull * (e->attempts > 6
						   ? BACKOFF_MAX_S
						   : 1u << (e->attempts - 1));
	al_info("job=%s attempt=%u status=%ld: callback failed; retrying",
		e->id, e->attempts, code);
	return false;
}

/* --- the thread ------------------------------------------------------------
 */

static struct entry *find(struct al_callbacks *cb, const char *id)
{
	for (size_t i = 0; i < cb->n; i++)
		if (!strcmp(cb->e[i].id, id))
			return &cb->e[i];
	return NULL;
}

/* Record the outcome of an attempt on the copy `c`. */
static void settle(struct al_callbacks *cb, const struct entry *c, bool done)
{
	struct entry *e;

	pthread_mutex_lock(&cb->lock);
	e = find(cb, c->id);
	if (e && done) {
		free(e->url);
		*e = cb->e[--cb->n];
	} else if (e) {
		e->attempts = c->attempts;
		e->next_ms = c->next_ms;
	}
	pthread_mutex_unlock(&cb->lock);
}

/* Ids of due entries into ids[0..max); their count. */
static size_t due(struct al_callbacks *cb, char (*ids)[AL_ID_MAX + 1],
		  size_t max)
{
	uint64_t now = al_wall_ms();
	size_t k = 0;

	for (size_t i = 0; i < cb->n && k < max; i++)
		if (cb->e[i].next_ms <= now)
			memcpy(ids[k++], cb->e[i].id, AL_ID_MAX + 1);
	return k;
}

/* One round: which due jobs are done, then one attempt each. */
static void round_(struct al_callbacks *cb, char (*ids)[AL_ID_MAX + 1])
{
	const char *ptr[ALQ_WAIT_MANY];
	bool done[ALQ_WAIT_MANY];
	size_t n;

	pthread_mutex_lock(&cb->lock);
	n = due(cb, ids, ALQ_WAIT_MANY);
	pthread_mutex_unlock(&cb->lock);
	if (!n)
		return;
	if (!cb->cl.rc &&
	    alq_client_open(&cb->cl, &cb->url, cb->queue, cb->timeout_ms) < 0)
		return;
	cb->cl.partitions = cb->partitions;
	for (size_t i = 0; i < n; i++)
		ptr[i] = ids[i];
	if (alq_client_have_results(&cb->cl, ptr, n, done) < 0) {
		alq_client_close(&cb->cl); /* reconnect next round */
		return;
	}
	for (size_t i = 0; i < n && !cb->stop; i++) {
		struct entry c = {0}, *e;

		if (!done[i])
			continue;
		pthread_mutex_lock(&cb->lock);
		e = find(cb, ids[i]);
		if (e)
			c = *e, c.url = strdup(e->url);
		pthread_mutex_unlock(&cb->lock);
		if (!e || !c.url)
			continue;
		settle(cb, &c, attempt(cb, &c));
		free(c.url);
	}
}

static void *loop(void *arg)
{
	struct al_callbacks *cb = arg;
	char(*ids)[AL_ID_MAX + 1] = calloc(ALQ_WAIT_MANY, AL_ID_MAX + 1);

	if (!ids)
		return NULL;
	for (;;) {
		struct timespec ts;

		pthread_mutex_lock(&cb->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += POLL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		if (!cb->stop)
			pthread_cond_timedwait(&cb->wake, &cb->lock, &ts);
		if (cb->stop) {
			pthread_mutex_unlock(&cb->lock);
			break;
		}
		pthread_mutex_unlock(&cb->lock);
		round_(cb, ids);
	}
	free(ids);
	alq_client_close(&cb->cl);
	return NULL;
}

int al_callbacks_start(const struct alq_url *url, const char *queue,
		       unsigned partitions, uint32_t timeout_ms,
		       const struct al_config_names *allow, uint32_t attempts,
		       struct al_metrics *m, struct al_callbacks **ret)
{
	struct al_callbacks *cb = calloc(1, sizeof(*cb));
	int r;

	if (!cb)
		return -ENOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(cb);
		return -EIO;
	}
	cb->url = *url;
	snprintf(cb->queue, sizeof(cb->queue), "%s", queue);
	cb->partitions = partitions;
	cb->timeout_ms = timeout_ms;
	cb->allow = *allow;
	cb->attempts = attempts ? attempts : 1;
	cb->m = m;
	pthread_mutex_init(&cb->lock, NULL);
	pthread_cond_init(&cb->wake, NULL);
	r = -pthread_create(&cb->thread, NULL, loop, cb);
	if (r < 0) {
		pthread_mutex_destroy(&cb->lock);
		pthread_cond_destroy(&cb->wake);
		free(cb);
		return r;
	}
	*ret = cb;
	return 0;
}

int al_callbacks_add(struct al_callbacks *cb, const char *id, const char *url)
{
	int r = 0;

	pthread_mutex_lock(&cb->lock);
	if (cb->n >= AL_CALLBACKS_MAX) {
		r = -ENOSPC;
	} else if (cb->n == cb->cap) {
		size_t cap = cb->cap ? cb->cap * 2 : 64;
		struct entry *ne = realloc(cb->e, cap * sizeof(*ne));

		if (!ne)
			r = -ENOMEM;
		else
			cb->e = ne, cb->cap = cap;
	}
	if (r == 0) {
		struct entry *e = &cb->e[cb->n];

		memset(e, 0, sizeof(*e));
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->url = strdup(url);
		if (!e->url)
			r = -ENOMEM;
		else
			cb->n++;
	}
	pthread_mutex_unlock(&cb->lock);
	return r;
}

void al_callbacks_stop(struct al_callbacks *cb)
{
	if (!cb)
		return;
	pthread_mutex_lock(&cb->lock);
	cb->stop = true;
	pthread_cond_signal(&cb->wake);
	pthread_mutex_unlock(&cb->lock);
	pthread_join(cb->thread, NULL);
	for (size_t i = 0; i < cb->n; i++)
		free(cb->e[i].url);
	free(cb->e);
	pthread_mutex_destroy(&cb->lock);
	pthread_cond_destroy(&cb->wake);
	curl_global_cleanup();
	free(cb);
}
