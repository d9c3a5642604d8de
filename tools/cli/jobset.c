/* jobset.c: a set of jobs through the queue, results in input order,
 * surviving interruption (jobset.h has the theory of operation).
 *
 * Waiting: up to ALQ_WAIT_MANY outstanding ids at a time (EXISTS on the
 * window, else BLPOP on their done lists for a second, then the next
 * window). The client survives a Redis restart: it reconnects with
 * backoff for up to RECONNECT_S and carries on. Progress goes to stderr:
 * a bar redrawn in place on a terminal, a plain line every PLAIN_EVERY_S
 * otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobset.h"
#include "proto.h"
#include "sbconfig.h"

#define RECONNECT_S    120
#define PLAIN_EVERY_S  10
#define STORE_LINE_MAX ((size_t)AL_RESULT_MAX_BYTES * 2) /* JSON of one */

static double now_s(void)
{
	return (double)al_now_ms() / 1e3;
}

void al_jobset_init(struct al_jobset *s)
{
	memset(s, 0, sizeof(*s));
	s->store_fd = -1;
}

void al_jobset_release(struct al_jobset *s)
{
	alq_client_close(&s->cl);
	for (size_t i = 0; i < s->n; i++) {
		free(s->jobs[i].payload);
		free(s->jobs[i].local);
	}
	free(s->jobs);
	if (s->store_fd >= 0)
		close(s->store_fd);
	al_jobset_init(s);
}

static struct al_jobset_job *grow(struct al_jobset *s, const char *id)
{
	struct al_jobset_job *j = realloc(s->jobs, (s->n + 1) * sizeof(*j));

	if (!j)
		return NULL;
	s->jobs = j;
	j = &s->jobs[s->n++];
	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->dup_of = SIZE_MAX;
	j->status = -1;
	j->verdict = AL_VERDICT_NONE;
	j->passed = -1;
	return j;
}

int al_jobset_add(struct al_jobset *s, const struct alq_prepared *p)
{
	struct al_jobset_job *j = grow(s, p->id);

	if (!j) {
		free(p->payload);
		return -ENOMEM;
	}
	j->payload = p->payload;
	j->len = p->len;
	j->wall_ms = p->wall_ms;
	al_digest_hex(p->payload, p->len, j->digest);
	return 0;
}

int al_jobset_add_local(struct al_jobset *s, const char *id, const char *json)
{
	char *copy = strdup(json);
	struct al_jobset_job *j = copy ? grow(s, id) : NULL;

	if (!j) {
		free(copy);
		return -ENOMEM;
	}
	j->local = copy;
	j->status = AL_RJ;
	return 0;
}

void al_jobset_derive_id(const void *msgpack, size_t len, unsigned nth,
			 char ret[AL_ID_MAX + 1])
{
	uint8_t h[AL_SHA256_LEN];
	size_t o = 2;

	al_sha256(msgpack, len, h);
	memcpy(ret, "h-", 2);
	for (size_t i = 0; i < 12; i++, o += 2)
		snprintf(ret + o, 3, "%02x", h[i]);
	if (nth >= 2)
		snprintf(ret + o, AL_ID_MAX + 1 - o, "-%u", nth);
}

/* --- duplicates and lookup by id --------------------------------------- */

static const struct al_jobset *sort_set; /* qsort has no context argument */

static int cmp_idx(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sort_set->jobs[x].id, sort_set->jobs[y].id);

	return c ? c : (x > y) - (x < y);
}

/* Job indices sorted by id (ties in input order), malloc'd. */
static size_t *by_id(const struct al_jobset *s)
{
	size_t *idx = malloc((s->n ? s->n : 1) * sizeof(*idx));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		idx[i] = i;
	sort_set = s;
	qsort(idx, s->n, sizeof(*idx), cmp_idx);
	sort_set = NULL;
	return idx;
}

/* The first job with `id`, or SIZE_MAX. */
static size_t find(const struct al_jobset *s, const size_t *idx, const char *id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(s->jobs[idx[mid]].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && !strcmp(s->jobs[idx[lo]].id, id) ? idx[lo]
							     : SIZE_MAX;
}

/* Step 1: a repeated id is an error, or (allowed) shares the first's. */
static int check_duplicates(struct al_jobset *s, const size_t *idx)
{
	size_t dups = 0, differ = 0;

	for (size_t k = 1; k < s->n; k++) {
		struct al_jobset_job *first = &s->jobs[idx[k - 1]];
		struct al_jobset_job *j = &s->jobs[idx[k]];

		if (strcmp(first->id, j->id))
			continue;
		j->dup_of =
		    first->dup_of == SIZE_MAX ? idx[k - 1] : first->dup_of;
		/* one id, two jobs: no flag makes them share a result */
		if (strcmp(s->jobs[j->dup_of].digest, j->digest) &&
		    differ++ < 5)
			al_cli_error(s->cli,
				     "id \"%s\" names different jobs (entries "
				     "%zu and %zu): an id is one job",
				     j->id, j->dup_of + 1, idx[k] + 1);
		if (dups++ < 5)
			al_cli_error(s->cli,
				     "id \"%s\" repeats (entries "
				     "%zu and %zu)%s",
				     j->id, j->dup_of + 1, idx[k] + 1,
				     s->o.allow_duplicates
					 ? "; they share one result"
					 : "");
	}
	if (differ)
		return -EEXIST;
	if (dups && !s->o.allow_duplicates) {
		al_cli_error(s->cli,
			     "%zu repeated ids: an id is the idempotency key, "
			     "so they would share one result; give distinct "
			     "ids or pass --allow-duplicates",
			     dups);
		return -EEXIST;
	}
	return 0;
}

/* --- the store ---------------------------------------------------------- */

/* Append one line; the job is done when it is in. */
static int store_put(struct al_jobset *s, size_t i, const char *line,
		     size_t len)
{
	struct al_jobset_job *j = &s->jobs[i];
	struct part {
		const char *b;
		size_t n;
	} parts[2] = {{line, len}, {"\n", 1}};

	for (int k = 0; k < 2; k++) {
		size_t o = 0;

		while (o < parts[k].n) {
			ssize_t w =
			    write(s->store_fd, parts[k].b + o, parts[k].n - o);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -errno;
			o += (size_t)w;
		}
	}
	j->off = s->store_end;
	j->line_len = len;
	s->store_end += (off_t)len + 1;
	return 0;
}

static void mark_done(struct al_jobset *s, size_t i)
{
	struct al_jobset_job *j = &s->jobs[i];

	j->done = true;
	s->done++;
	if (j->status >= 0)
		s->counts[j->status]++;
	if (j->passed >= 0)
		s->judged[j->passed > 0]++;
	else if (j->verdict > 0 && j->verdict < AL_VERDICT_COUNT)
		s->verdicts[j->verdict]++;
	else if (j->status >= 0)
		s->plain[j->status]++;
	if (j->verdict == AL_VERDICT_RUNTIME_ERROR && j->signal >= 0)
		s->rte_signal[j->signal]++;
}

/* Take a result's status, verdict, outcome and run time into j. */
static void take(const struct al_jobset *s, struct al_jobset_job *j,
		 const struct al_result *res)
{
	j->status = (int8_t)res->status;
	j->verdict = (int8_t)res->verdict;
	j->signal = (int8_t)al_result_verdict_signal(res);
	j->run_ms = res->timing.run_ms;
	j->passed = s->o.judge ? (int8_t)(s->o.judge(res) > 0) : -1;
}

/* Note what a result line says (status, verdict, run time). */
static void note(const struct al_jobset *s, struct al_jobset_job *j,
		 const char *line, size_t len)
{
	struct al_result res = {0};
	struct al_diags d;

	al_diags_init(&d);
	if (al_result_from_json(line, len, &res, &d) == 0)
		take(s, j, &res);
	al_result_release(&res);
}

/* The id of a result line, or NULL (jansson; *ret_doc to free). */
static const char *line_id(const char *line, size_t len, json_t **ret_doc)
{
	json_t *doc = json_loadb(line, len, 0, NULL);
	const char *id = json_string_value(json_object_get(doc, "id"));

	*ret_doc = doc;
	return id;
}

/* Resume from one file: `copy` appends its lines to the store (a previous
 * output), else they are the store's own (offsets kept). A torn last
 * line of the store is cut off. */
static int resume_from(struct al_jobset *s, const size_t *idx, FILE *f,
		       bool copy)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	off_t off = 0;
	int r = 0;

	while (r == 0 && (len = getline(&line, &cap, f)) > 0) {
		bool whole = line[len - 1] == '\n';
		json_t *doc = NULL;
		const char *id;
		size_t i;

		if (!whole && !copy) {
			r = ftruncate(s->store_fd, off) < 0 ? -errno : 0;
			break;
		}
		line[len - whole] = '\0';
		id = line_id(line, (size_t)len - whole, &doc);
		i = id ? find(s, idx, id) : SIZE_MAX;
		if (i != SIZE_MAX && !s->jobs[i].done) {
			if (copy) {
				r = store_put(s, i, line, (size_t)len - whole);
			} else {
				s->jobs[i].off = off;
				s->jobs[i].line_len = (size_t)len - 1;
			}
			note(s, &s->jobs[i], line, (size_t)len - whole);
			mark_done(s, i);
			s->resumed++;
		}
		json_decref(doc);
		off += len;
	}
	free(line);
	if (!copy)
		s->store_end = off;
	return r;
}

/* Step 2: open the store; with resume, take what is already done. */
static int open_store(struct al_jobset *s, const size_t *idx)
{
	const char *path = s->o.store;
	int flags = O_RDWR | O_CREAT | O_CLOEXEC | (s->o.resume ? 0 : O_TRUNC);
	FILE *f;
	int r = 0;

	if (path) {
		s->store_fd = open(path, flags, 0644);
	} else { /* stdout: nothing to resume, a nameless file will do */
		char tmp[] = "/tmp/airlock-batch-XXXXXX";

		s->store_fd = mkostemp(tmp, O_CLOEXEC);
		if (s->store_fd >= 0)
			unlink(tmp);
	}
	if (s->store_fd < 0)
		return -errno;
	if (path && s->o.resume) {
		int fd = dup(s->store_fd);

		f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (!f) {
			if (fd >= 0)
				close(fd);
			return -ENOMEM;
		}
		r = resume_from(s, idx, f, false);
		fclose(f);
	}
	if (r == 0 && lseek(s->store_fd, s->store_end, SEEK_SET) < 0)
		r = -errno;
	if (r == 0 && s->o.resume && s->o.previous &&
	    (f = fopen(s->o.previous, "re"))) {
		r = resume_from(s, idx, f, true);
		fclose(f);
	}
	return r;
}

/* Local results and repeats of done jobs go in before anything runs. */
static int store_locals(struct al_jobset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct al_jobset_job *j = &s->jobs[i];
		int r;

		if (j->done || !j->local || j->dup_of != SIZE_MAX)
			continue;
		r = store_put(s, i, j->local, strlen(j->local));
		if (r < 0)
			return r;
		mark_done(s, i);
	}
	return 0;
}

/* A progress line's word: " accepted 3". */
struct word_ctx {
	char *buf;
	size_t len;
	size_t *o;
};

static void progress_word(void *ctx, const char *what, size_t n)
{
	struct word_ctx *c = ctx;
	int w;

	if (*c->o >= c->len)
		return;
	w = snprintf(c->buf + *c->o, c->len - *c->o, " %s %zu", what, n);
	*c->o += w > 0 ? (size_t)w : 0;
}

static void each_outcome(const struct al_jobset *s,
			 void (*fn)(void *ctx, const char *what, size_t n),
			 void *ctx);

/* --- progress ----------------------------------------------------------- */

static void fmt_dur(char *buf, size_t len, double s)
{
	long v = (long)(s + 0.5);

	if (!isfinite(s) || s < 0)
		snprintf(buf, len, "--:--");
	else if (v >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60,
			 v % 60);
	else
		snprintf(buf, len, "%ld:%02ld", v / 60, v % 60);
}

static void progress(struct al_jobset *s, bool force)
{
	double t = now_s(), el = t - s->t0;
	size_t ran = s->done - s->resumed;
	double rate = el > 0 ? (double)ran / el : 0;
	char eta[32], counts[256] = "", bar[32];
	size_t o = 0;

	if (s->o.quiet ||
	    (!force && t - s->last_draw < (s->tty ? 0.2 : PLAIN_EVERY_S)))
		return;
	s->last_draw = t;
	each_outcome(
	    s, progress_word,
	    &(struct word_ctx){.buf = counts, .len = sizeof(counts), .o = &o});
	fmt_dur(eta, sizeof(eta),
		rate > 0 ? (double)(s->n - s->done) / rate : NAN);
	if (s->tty) {
		size_t fill = s->n ? s->done * 20 / s->n : 20;

		for (size_t i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = '\0';
		fprintf(stderr, "\r\033[K[%s] %zu/%zu%s  %.2f jobs/s  ETA %s",
			bar, s->done, s->n, counts, rate, eta);
	} else {
		fprintf(stderr, "%s: %zu/%zu done%s, %.2f jobs/s, ETA %s\n",
			s->o.name, s->done, s->n, counts, rate, eta);
	}
	fflush(stderr);
}

/* --- the queue ---------------------------------------------------------- */

/* Reconnect after a lost connection (Redis restarting). */
static int reconnect(struct al_jobset *s)
{
	double until = now_s() + RECONNECT_S;
	unsigned delay = 100;
	char err[512];

	fprintf(stderr, "%s%s: lost Redis (%s); reconnecting\n",
		s->tty ? "\n" : "", s->o.name, s->cl.err);
	alq_client_close(&s->cl);
	while (now_s() < until && !al_cli_interrupted()) {
		struct timespec ts = {delay / 1000,
				      (long)(delay % 1000) * 1000000L};

		if (al_cli_connect(&s->cli->cfg, &s->cl, err, sizeof(err)) == 0)
			return 0;
		nanosleep(&ts, NULL);
		delay = delay * 2 > 5000 ? 5000 : delay * 2;
	}
	fprintf(stderr, "%s: Redis did not come back in %d s\n", s->o.name,
		RECONNECT_S);
	return -EIO;
}

/* A Redis call's failure as the loop must see it: an I/O error on the
 * connection (a reset while Redis restarts) is a connection to remake,
 * never -EIO, which drive() keeps for what reconnecting cannot fix (a
 * results file that cannot be written). */
static int redis_err(int r)
{
	return r == -EIO ? -ECONNRESET : r;
}

/* Job i's id belongs to another payload: an RJ line of our own, the
 * input line named on stderr. `why` says how we know. */
static int conflict(struct al_jobset *s, size_t i, const char *why)
{
	struct al_jobset_job *j = &s->jobs[i];
	struct al_result res = {.status = AL_RJ, .attempt = 1};
	char *json = NULL;
	int r = -ENOMEM;

	fprintf(stderr, "%s%s: %s %zu: id \"%s\": %s; not run, choose "
		"another id (docs/queue.md, \"Job ids\")\n",
		s->tty ? "\n" : "", s->o.name, j->line ? "line" : "entry",
		j->line ? j->line : i + 1, j->id, why);
	res.id = strdup(j->id);
	res.digest = strdup(j->digest);
	if (asprintf(&res.error, "id conflict: %s", why) < 0)
		res.error = NULL;
	if (res.id && res.digest && res.error &&
	    al_result_to_json(&res, &json) == 0)
		r = store_put(s, i, json, strlen(json));
	al_result_release(&res);
	free(json);
	j->status = AL_RJ;
	s->conflicts++;
	if (r == 0)
		mark_done(s, i);
	return r;
}

/* May job j use stored result `res`? Only a result of its own payload
 * (the digest the worker computed from the bytes it ran); a CX result
 * (`airlock cancel` stores it without one) shows nothing of a payload. */
static bool result_is_ours(const struct al_jobset_job *j,
			   const struct al_result *res)
{
	return al_result_digest_is(res, j->digest) ||
	       (!res->digest && res->status == AL_CX);
}

/* Fetch job i's result into the store. A result gone (expired) or
 * unreadable gets an XX line naming the problem. */
static int collect(struct al_jobset *s, size_t i)
{
	struct al_jobset_job *j = &s->jobs[i];
	struct al_result res = {0};
	struct al_diags d;
	char *buf = NULL, *json = NULL, lost[AL_ID_MAX + 96];
	size_t len = 0;
	int r;

	r = alq_client_result(&s->cl, j->id, &buf, &len);
	if (r < 0 && r != -ENOENT && r != -E2BIG)
		return redis_err(r);
	al_diags_init(&d);
	if (r < 0 || al_result_from_msgpack(buf, len, &res, &d) < 0 ||
	    al_result_to_json(&res, &json) < 0) {
		fprintf(stderr, "%s: %s: result %s\n", s->o.name, j->id,
			r == -ENOENT ? "expired" : "unreadable");
		snprintf(lost, sizeof(lost),
			 "{\"id\":\"%s\",\"status\":\"XX\","
			 "\"error\":\"result lost\"}",
			 j->id);
		j->status = AL_XX;
		r = store_put(s, i, lost, strlen(lost));
	} else if (!result_is_ours(j, &res)) {
		r = conflict(s, i, "its stored result is of another payload");
		free(json);
		free(buf);
		al_result_release(&res);
		return r < 0 ? -EIO : 0;
	} else {
		take(s, j, &res);
		r = store_put(s, i, json, strlen(json));
	}
	free(json);
	free(buf);
	al_result_release(&res);
	if (r == 0)
		mark_done(s, i);
	return r < 0 ? -EIO : 0; /* a store write error is not Redis's */
}

/* One round over a window of outstanding jobs. */
static int wait_round(struct al_jobset *s, size_t *cursor, struct al_embed *e)
{
	const char *ids[ALQ_WAIT_MANY];
	size_t idx[ALQ_WAIT_MANY], n = 0, k;
	bool done[ALQ_WAIT_MANY];
	size_t i = *cursor;
	int r, st;

	for (size_t seen = 0; seen < s->n && n < ALQ_WAIT_MANY; seen++) {
		if (!s->jobs[i].done && s->jobs[i].dup_of == SIZE_MAX) {
			ids[n] = s->jobs[i].id;
			idx[n++] = i;
		}
		i = (i + 1) % s->n;
	}
	*cursor = i;
	if (!n)
		return 0;
	if (e && al_embed_serve_gone(e, &st)) {
		fprintf(stderr, "\n%s: the embedded dispatcher stopped\n",
			s->o.name);
		return -ECHILD;
	}
	r = redis_err(alq_client_have_results(&s->cl, ids, n, done));
	for (size_t m = 0; r == 0 && m < n; m++)
		if (done[m])
			r = collect(s, idx[m]);
	if (r == 0) {
		for (size_t m = 0; m < n; m++)
			if (done[m])
				return 0;
		r = redis_err(alq_client_wait_any(&s->cl, ids, n, 1000, &k));
		if (r == 0)
			r = collect(s, idx[k]);
		if (r == -ETIMEDOUT)
			r = 0;
	}
	return r;
}

/* Submit every job not done, pipelined. */
static int submit(struct al_jobset *s)
{
	struct alq_submit *subs = calloc(s->n ? s->n : 1, sizeof(*subs));
	size_t *at = calloc(s->n ? s->n : 1, sizeof(*at)); /* subs -> jobs */
	size_t n = 0;
	int r = 0;

	if (!subs || !at) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct al_jobset_job *j = &s->jobs[i];

		if (j->done || !j->payload || j->dup_of != SIZE_MAX)
			continue;
		at[n] = i;
		subs[n].id = j->id;
		subs[n].payload = j->payload;
		subs[n].len = j->len;
		subs[n++].wall_ms = j->wall_ms;
	}
	while (n && alq_client_submit_many(&s->cl, subs, n) < 0)
		if ((r = reconnect(s)) < 0)
			goto out;
	for (size_t i = 0; i < n; i++) {
		if (subs[i].err == -EEXIST) {
			r = conflict(s, at[i], "submitted before with another "
					       "payload");
			if (r < 0)
				goto out;
			continue;
		}
		if (subs[i].err < 0) {
			al_cli_error(s->cli, "%s: submit failed", subs[i].id);
			r = subs[i].err;
			goto out;
		}
		s->submitted += !subs[i].dup;
	}
out:
	free(subs);
	free(at);
	return r;
}

/* Repeats (allowed duplicates) take their first's line and counts. */
static void settle_repeats(struct al_jobset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct al_jobset_job *j = &s->jobs[i];
		const struct al_jobset_job *f;

		if (j->dup_of == SIZE_MAX || j->done)
			continue;
		f = &s->jobs[j->dup_of];
		if (!f->done)
			continue;
		j->off = f->off;
		j->line_len = f->line_len;
		j->status = f->status;
		j->verdict = f->verdict;
		j->signal = f->signal;
		j->passed = f->passed;
		j->run_ms = f->run_ms;
		mark_done(s, i);
	}
}

static int start_embedded(struct al_jobset *s, struct al_embed *e,
			  struct al_policy *policy)
{
	struct al_config *cfg = &s->cli->cfg;
	char err[2048];

	if (cfg->redis.url[0]) {
		if (s->o.workers)
			al_cli_error(s->cli,
				     "--workers applies to the embedded "
				     "pool only; ignored with a Redis "
				     "URL");
		return 0;
	}
	if (s->o.workers)
		cfg->workers.count = s->o.workers;
	e->persist = true;
	e->keep = s->o.resume;
	if (al_embed_start(e, cfg, policy, err, sizeof(err)) < 0) {
		al_cli_error(s->cli, "%s", err);
		return -EIO;
	}
	return 0;
}

/* Step 3: submit and wait; the embedded pool, if any, is `e`. */
static int drive(struct al_jobset *s, struct al_embed *e)
{
	size_t cursor = 0;
	int r;

	if (s->done < s->n) {
		if (al_cli_open(s->cli, &s->cl) < 0)
			return -EIO;
		if (!s->o.quiet &&
		    al_cli_say_backend(s->cli, &s->cl, e->serve > 0) < 0)
			return -EIO;
		r = submit(s);
		if (r < 0)
			return r;
	}
	progress(s, true);
	settle_repeats(s);
	while (s->done < s->n && !al_cli_interrupted()) {
		r = wait_round(s, &cursor, e->serve > 0 ? e : NULL);
		if (r == -ECHILD || r == -EIO)
			return r;
		if (al_cli_interrupted())
			break; /* the signal broke the blocking read */
		if (r < 0 && reconnect(s) < 0)
			return -EIO;
		settle_repeats(s);
		progress(s, false);
	}
	progress(s, true);
	if (s->tty && !s->o.quiet)
		fputc('\n', stderr);
	return al_cli_interrupted() ? -EINTR : 0;
}

int al_jobset_run(struct al_jobset *s, struct al_cli *cli,
		  const struct al_jobset_opts *o)
{
	struct al_policy policy;
	struct al_embed e;
	size_t *idx = NULL;
	int r;

	s->o = *o;
	s->cli = cli;
	s->tty = isatty(STDERR_FILENO);
	al_embed_init(&e);
	idx = by_id(s);
	r = idx ? check_duplicates(s, idx) : -ENOMEM;
	if (r == 0 && (r = open_store(s, idx)) < 0)
		al_cli_error(cli, "%s: %s", o->store ? o->store : "temp file",
			     strerror(-r));
	if (r == 0 && (r = store_locals(s)) < 0)
		al_cli_error(cli, "store: %s", strerror(-r));
	free(idx);
	if (r < 0)
		return r;
	if (s->resumed && !o->quiet)
		fprintf(stderr, "%s: resuming: %zu of %zu already done\n",
			o->name, s->resumed, s->n);
	al_cli_catch_signals();
	s->t0 = now_s();
	al_config_policy(&cli->cfg, &policy);
	if (s->done < s->n)
		r = start_embedded(s, &e, &policy);
	if (r == 0)
		r = drive(s, &e);
	if (r == -EINTR)
		al_cli_error(cli, "interrupted with %zu of %zu done%s", s->done,
			     s->n,
			     o->store ? "; rerun with --resume to go on" : "");
	alq_client_close(&s->cl);
	al_embed_stop(&e, cli->cfg.workers.shutdown_grace_ms);
	return r;
}

int al_jobset_line(struct al_jobset *s, size_t i, char **ret)
{
	const struct al_jobset_job *j = &s->jobs[i];
	char *buf;
	size_t o = 0;

	if (!j->done)
		return -ENOENT;
	if (j->line_len > STORE_LINE_MAX)
		return -E2BIG;
	buf = malloc(j->line_len + 1);
	if (!buf)
		return -ENOMEM;
	while (o < j->line_len) {
		ssize_t n = pread(s->store_fd, buf + o, j->line_len - o,
				  j->off + (off_t)o);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? -errno : -EIO;
		}
		o += (size_t)n;
	}
	buf[o] = '\0';
	*ret = buf;
	return 0;
}

int al_jobset_write(struct al_jobset *s, const char *path)
{
	bool to_stdout = !path || !strcmp(path, "-");
	char tmp[4096];
	FILE *out = stdout;
	int r = 0;

	if (!to_stdout) {
		if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >=
		    (int)sizeof(tmp))
			return -ENAMETOOLONG;
		out = fopen(tmp, "we");
		if (!out)
			return -errno;
	}
	for (size_t i = 0; r == 0 && i < s->n; i++) {
		char *line = NULL;

		r = al_jobset_line(s, i, &line);
		if (r == 0 && fprintf(out, "%s\n", line) < 0)
			r = -EIO;
		free(line);
	}
	if (fflush(out) != 0 || ferror(out))
		r = r ? r : -EIO;
	if (!to_stdout) {
		if (r == 0 && fsync(fileno(out)) < 0)
			r = -errno;
		fclose(out);
		if (r == 0 && rename(tmp, path) < 0)
			r = -errno;
		if (r < 0)
			unlink(tmp);
	}
	return r;
}

void al_jobset_drop_store(struct al_jobset *s)
{
	if (s->o.store)
		unlink(s->o.store);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One vocabulary for progress and summary (issue 37): each job counted
 * once, by its outcome: the judge's passed/failed (eval), else its verdict
 * (runtime errors by signal), else its status (ungraded jobs: OK, RJ,
 * XX...). fn gets each outcome seen, its words and its count. */
static void each_outcome(const struct al_jobset *s,
			 void (*fn)(void *ctx, const char *what, size_t n),
			 void *ctx)
{
	char text[64];

	if (s->judged[1])
		fn(ctx, "passed", s->judged[1]);
	if (s->judged[0])
		fn(ctx, "failed", s->judged[0]);
	for (int v = 1; v < AL_VERDICT_COUNT; v++) {
		if (!s->verdicts[v])
			continue;
		if (v != AL_VERDICT_RUNTIME_ERROR) {
			al_verdict_text(v, 0, text, sizeof(text));
			fn(ctx, text, s->verdicts[v]);
			continue;
		}
		for (int g = 0; g < 128; g++)
			if (s->rte_signal[g]) {
				al_verdict_text(v, g, text, sizeof(text));
				fn(ctx, text, s->rte_signal[g]);
			}
	}
	for (int k = 0; k < AL_STATUS_COUNT; k++)
		if (s->plain[k])
			fn(ctx, al_status_name(k), s->plain[k]);
}

/* A summary table row. */
struct row_ctx {
	FILE *f;
	size_t n;
};

static void table_row(void *ctx, const char *what, size_t n)
{
	struct row_ctx *c = ctx;

	fprintf(c->f, "%-26s %8zu %6.1f%%\n", what, n,
		100.0 * (double)n / (double)(c->n ? c->n : 1));
}

/* "verdicts: 3 accepted, 2 wrong answer, 1 runtime error (SIGSEGV)":
 * every verdict seen, runtime errors by signal: the table's graded rows
 * on one line, for scripts that read it. */
static void print_verdicts(const struct al_jobset *s, FILE *f)
{
	const char *sep = "verdicts: ";
	char text[64];

	for (int v = 1; v < AL_VERDICT_COUNT; v++) {
		if (!s->verdicts[v])
			continue;
		if (v != AL_VERDICT_RUNTIME_ERROR) {
			al_verdict_text(v, 0, text, sizeof(text));
			fprintf(f, "%s%zu %s", sep, s->verdicts[v], text);
			sep = ", ";
			continue;
		}
		for (int g = 0; g < 128; g++) {
			if (!s->rte_signal[g])
				continue;
			al_verdict_text(v, g, text, sizeof(text));
			fprintf(f, "%s%zu %s", sep, s->rte_signal[g], text);
			sep = ", ";
		}
	}
	if (sep[0] == ',')
		fputc('\n', f);
}

void al_jobset_summary(struct al_jobset *s, FILE *f, const char *out_name)
{
	double el = now_s() - s->t0;
	uint64_t *runs = calloc(s->n ? s->n : 1, sizeof(*runs));
	size_t nr = 0;
	char dur[32];

	fmt_dur(dur, sizeof(dur), el);
	fprintf(f, "\n%-26s %8s %7s\n", "result", "jobs", "share");
	each_outcome(s, table_row, &(struct row_ctx){.f = f, .n = s->n});
	fprintf(f, "%-26s %8zu\n", "total", s->n);
	print_verdicts(s, f);
	for (size_t i = 0; runs && i < s->n; i++)
		if (s->jobs[i].status >= 0 && !s->jobs[i].local)
			runs[nr++] = s->jobs[i].run_ms;
	if (nr) {
		qsort(runs, nr, sizeof(*runs), cmp_u64);
		fprintf(
		    f,
		    "run time per job: p50 %llu ms, p95 %llu ms, max "
		    "%llu ms\n",
		    (unsigned long long)runs[nr / 2],
		    (unsigned long long)
			runs[(nr * 95) / 100 < nr ? (nr * 95) / 100 : nr - 1],
		    (unsigned long long)runs[nr - 1]);
	}
	if (s->resumed)
		fprintf(f, "%zu resumed from an earlier run; %zu enqueued anew\n",
			s->resumed, s->submitted);
	fprintf(f, "%zu jobs in %s (%.1f s), %.2f jobs/s; results: %s\n", s->n,
		dur, el, el > 0 ? (double)(s->n - s->resumed) / el : 0.0,
		out_name);
	free(runs);
}
