/* save.c: a live session saved as a snapshot (docs/sessions.md
 * "Snapshot"). The session process (run.c) calls sess__snapshot() for a
 * {"op": "snapshot"} request, between execs (requests run in order), so
 * no exec runs while the guest is paused for the save.
 *
 * The VM must have been created saveable ("saveable": true at create:
 * its RAM a private shared copy, sandbox/live.c); the snapshot goes to
 * this host's state dir with the snapshot machinery's layout and is
 * listed with origin "session:ID". A name that exists is refused, never
 * replaced: a session must not be able to swap the state an operator's
 * snapshot holds. Jobs and sessions name it like any snapshot, so it must
 * be in [snapshots] allowed (the operator's choice, as for any snapshot).
 *
 * Also the client side, al_sess_snapshot(): the request goes on the
 * session's own list like an exec, and the reply is awaited.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sess_internal.h"
#include "log.h"
#include "sessions.h"

#include "session.h" /* worker/: the VM side */

/* --- the session's own saved states (fork-*, hib-*) ---------------------
 *
 * A fork snapshot and a hibernated state belong to one live session
 * process, which holds a shared flock on the name's lock file
 * (STATE/snapshots/.NAME.lock, the one builds take) for as long as it
 * needs them; whatever no process holds is a dead session's, and the
 * session host removes it at its start (sess__sweep_saved). */
static int own_lock(const struct al_sess_opts *o, const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/snapshots/.%s.lock",
		     o->sb->state_dir, name) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && flock(fd, LOCK_SH) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The state `name` is done with: removed, its lock file too. */
static void own_drop(const struct al_sess_opts *o, const char *name, int *fd)
{
	char path[PATH_MAX];

	sb_snapshot_remove(o->sb, name);
	if (snprintf(path, sizeof(path), "%s/snapshots/.%s.lock",
		     o->sb->state_dir, name) < (int)sizeof(path))
		unlink(path);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void sess__sweep_saved(const struct al_sess_opts *o)
{
	char root[PATH_MAX], name[AL_NAME_MAX + 1];
	struct dirent *e;
	struct stat st;
	unsigned n = 0;
	DIR *d;
	int rfd, fd;

	if (snprintf(root, sizeof(root), "%s/snapshots", o->sb->state_dir) >=
	    (int)sizeof(root))
		return;
	d = opendir(root);
	if (!d)
		return;
	rfd = dirfd(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if ((strncmp(e->d_name, ".fork-", 6) &&
		     strncmp(e->d_name, ".hib-", 5)) ||
		    len < 6 || strcmp(e->d_name + len - 5, ".lock") ||
		    len - 6 > AL_NAME_MAX)
			continue;
		fd = openat(rfd, e->d_name,
			    O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue;
		/* nobody's, and not one just saved whose process is about to
		 * take it (the save's build lock goes first) */
		if (fstat(fd, &st) == 0 && st.st_mtime + 60 < time(NULL) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0) {
			snprintf(name, sizeof(name), "%.*s", (int)(len - 6),
				 e->d_name + 1);
			sb_snapshot_remove(o->sb, name);
			unlinkat(rfd, e->d_name, 0);
			n++;
		}
		close(fd);
	}
	closedir(d);
	if (n)
		al_info("sessions: removed %u fork or hibernation states of "
			"sessions gone", n);
}

/* The principal's cap on session snapshots on this host (issue 34):
 * 0 under it, -EDQUOT with err filled at it. */
static int owner_cap(const struct al_sess_opts *o, const char *owner,
		     const char *name, char *err, size_t len)
{
	int n;

	if (!o->snapshots_per_principal || !owner[0])
		return 0;
	n = sb_snapshot_count_owned(o->sb, owner);
	if (n < 0) {
		snprintf(err, len, "snapshot %s: counting %s's snapshots: %s",
			 name, owner, strerror(-n));
		return n;
	}
	if ((uint32_t)n < o->snapshots_per_principal)
		return 0;
	snprintf(err, len,
		 "snapshot %s refused: %s keeps %d session snapshots on this "
		 "host, the cap (sessions.snapshots_per_principal = %u); an "
		 "operator removes one with `airlock snapshot rm NAME`",
		 name, owner, n, o->snapshots_per_principal);
	return -EDQUOT;
}

json_t *sess__snapshot(const struct al_sess_opts *o, struct al_wsess *ws,
		      const char *id, const char *owner, json_t *body,
		      char *err, size_t len)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	struct sb_snapshot_info info;
	char origin[AL_SESS_ORIGIN_MAX + 1];
	int r;

	if (!name) {
		snprintf(err, len, "snapshot: a \"name\" is needed");
		return NULL;
	}
	/* sessions' own namespace: a session cannot take a name an
	 * operator's snapshot will be built under (issue 34, finding 5) */
	if (strncmp(name, SB_SNAP_SESSION_PREFIX,
		    strlen(SB_SNAP_SESSION_PREFIX))) {
		snprintf(err, len,
			 "snapshot %.64s: a session's snapshot name starts "
			 "with \"" SB_SNAP_SESSION_PREFIX "\" (sessions' own "
			 "namespace; an operator's snapshots never do)",
			 name);
		return NULL;
	}
	if (owner_cap(o, owner, name, err, len) < 0)
		return NULL;
	snprintf(origin, sizeof(origin), "session:%s", id);
	memset(&info, 0, sizeof(info));
	/* nothing of the session's own code may run in the clones: its
	 * background processes end before the save (a clone's agent kills
	 * any left too); the session runs on without them */
	r = ws->vm ? al_wsess_end_background(ws) : -ENODEV;
	if (r == 0)
		r = sb_snapshot_save_live(o->sb, ws->vm, name, origin, owner,
					  &info);
	switch (r) {
	case 0:
		al_info("session=%s snapshot=%s mem=%llu save_ms=%llu", id,
			name, (unsigned long long)info.mem_bytes,
			(unsigned long long)info.save_ms);
		return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "snapshot", name,
				 "base", info.base, "origin", origin,
				 "mem_bytes", (json_int_t)info.mem_bytes,
				 "disk_bytes", (json_int_t)info.disk_bytes,
				 "save_ms", (json_int_t)info.save_ms);
	case -EOPNOTSUPP:
		snprintf(err, len, "snapshot: this session was not created "
			 "saveable (create it with \"saveable\": true)");
		break;
	case -EEXIST:
		snprintf(err, len, "snapshot %s: a snapshot or image template "
			 "of that name exists (a session never replaces one: "
			 "`airlock snapshot rm %s` first)", name, name);
		break;
	case -EINVAL:
		snprintf(err, len, "snapshot %s: not a valid name "
			 "([a-z0-9][a-z0-9_.-]*, at most %d)", name,
			 AL_NAME_MAX);
		break;
	case -ESTALE:
		snprintf(err, len, "snapshot %s: the session's base template "
			 "was rebuilt since it started", name);
		break;
	default:
		snprintf(err, len, "snapshot %s: %s%s%s", name, strerror(-r),
			 ws->vm && sb_vm_error(ws->vm)[0] ? ": " : "",
			 ws->vm ? sb_vm_error(ws->vm) : "");
	}
	return NULL;
}

/* Send op (with body, may be NULL: stolen) to session id; its reply. */
static int to_session(struct alq_client *c, const char *id, const char *op,
		      json_t *body, json_t **rep)
{
	char rid[32], k[SESS_KEY_MAX];
	const char *e;
	json_t *req;
	int x;

	if (sess__new_id(rid, sizeof(rid), 'r') < 0) {
		json_decref(body);
		return -EIO;
	}
	req = json_pack("{s:s,s:s,s:o}", "op", op, "rid", rid, "body",
			body ? body : json_object());
	sess__key(k, sizeof(k), c->queue, "%s:req", id);
	x = sess__push(c, k, req);
	if (x == 0) /* after the execs before it, like an exec */
		x = sess__await(c, rid, id, UINT32_MAX, rep);
	if (x < 0)
		return x;
	e = json_string_value(json_object_get(*rep, "error"));
	if (e && e[0]) {
		x = sess__fail(c, -EINVAL, "%s", e);
		json_decref(*rep);
	}
	return x;
}

int al_sess_snapshot(struct alq_client *c, const char *id, const char *name,
		     char **ret)
{
	json_t *rec, *rep;
	int x = sess__live_record(c, id, &rec);

	if (x < 0)
		return x;
	json_decref(rec);
	x = to_session(c, id, "snapshot", json_pack("{s:s}", "name", name),
		       &rep);
	if (x < 0)
		return x;
	al_sess_expiry(c, id, rep);
	*ret = json_dumps(rep, JSON_COMPACT);
	json_decref(rep);
	return *ret ? 0 : -ENOMEM;
}

/* --- fork ------------------------------------------------------------------
 *
 * A fork is a snapshot the forks are restored from: "fork-" and 24 random
 * hex digits, origin "fork:PARENT", on the parent's host. The client then
 * queues N creates naming it on that host's own create list
 * (P:host:HOST:create), each with "fork_of": PARENT; the fork's session
 * process opens it only after checking that the snapshot's origin names
 * that parent (the name is not in [snapshots] allowed: no job can name
 * it). Each fork is a full session (its own process, TTL and idle clocks,
 * uid lease, cgroup, network slot) and its clone is reseeded like every
 * clone: forks differ in the kernel's randomness. Once the forks are up,
 * the client sends "fork_done" and the parent removes the snapshot (the
 * forks hold its RAM, a sealed memfd, and their QEMUs their state);
 * whatever a lost client leaves the parent removes when it ends.
 */
#define FORKS_KEPT 8

static char forks[FORKS_KEPT][AL_NAME_MAX + 1]; /* this process's */
static int fork_locks[FORKS_KEPT]; /* fd + 1: 0 = none */

json_t *sess__fork(const struct al_sess_opts *o, struct al_wsess *ws,
		  const char *id, json_t *create_body, char *err, size_t len)
{
	static const char *const keep[] = {"limits", "network", "env",
					   "metadata"};
	char name[AL_NAME_MAX + 1], origin[AL_SESS_ORIGIN_MAX + 1];
	struct sb_snapshot_info info;
	uint8_t rnd[12];
	json_t *body, *ret;
	size_t slot = FORKS_KEPT;
	int r;

	for (size_t i = 0; i < FORKS_KEPT; i++)
		if (!forks[i][0])
			slot = i;
	if (slot == FORKS_KEPT) {
		snprintf(err, len, "fork: %d forks of this session are still "
			 "starting", FORKS_KEPT);
		return NULL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		snprintf(err, len, "fork: no randomness");
		return NULL;
	}
	strcpy(name, "fork-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(name + 5 + 2 * i, 3, "%02x", rnd[i]);
	snprintf(origin, sizeof(origin), "fork:%s", id);
	memset(&info, 0, sizeof(info));
	r = ws->vm ? sb_snapshot_save_live(o->sb, ws->vm, name, origin, NULL, &info)
		   : -ENODEV;
	if (r == -EOPNOTSUPP) {
		snprintf(err, len, "fork: this session was not created "
			 "saveable (create it with \"saveable\": true)");
		return NULL;
	}
	if (r < 0) {
		snprintf(err, len, "fork: %s%s%s", strerror(-r),
			 ws->vm && sb_vm_error(ws->vm)[0] ? ": " : "",
			 ws->vm ? sb_vm_error(ws->vm) : "");
		return NULL;
	}
	snprintf(forks[slot], sizeof(forks[slot]), "%s", name);
	fork_locks[slot] = own_lock(o, name) + 1;
	body = json_object();
	for (size_t i = 0; body && i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_get(create_body, keep[i]))
			json_object_set(body, keep[i],
					json_object_get(create_body, keep[i]));
	json_object_set_new(body, "template", json_string(name));
	json_object_set_new(body, "fork_of", json_string(id));
	al_info("session=%s fork snapshot=%s mem=%llu save_ms=%llu", id, name,
		(unsigned long long)info.mem_bytes,
		(unsigned long long)info.save_ms);
	ret = json_pack("{s:s,s:o,s:I,s:I}", "snapshot", name, "body", body,
			"mem_bytes", (json_int_t)info.mem_bytes, "save_ms",
			(json_int_t)info.save_ms);
	return ret;
}

void sess__fork_done(const struct al_sess_opts *o, const char *name)
{
	int fd;

	for (size_t i = 0; i < FORKS_KEPT; i++) {
		if (!forks[i][0] || (name && strcmp(forks[i], name)))
			continue;
		fd = fork_locks[i] - 1;
		own_drop(o, forks[i], &fd);
		fork_locks[i] = 0;
		forks[i][0] = 0;
	}
}

/* Let this session process open snapshot `tmpl` (not in snapshots.allowed)
 * when its origin is `want`: a copy of the policy that lists it. */
static int lineage_policy(const struct al_sess_opts *o, struct al_wsess *ws,
			  const char *tmpl, const char *want)
{
	static struct al_policy pol;
	static const char *names[64];
	static char name[AL_NAME_MAX + 1];
	struct sb_snapshot_info *all;
	size_t n = 0;
	bool ok = false;
	int k;

	all = calloc(256, sizeof(*all));
	k = all ? sb_snapshot_list(o->sb, all, 256) : 0;
	for (int i = 0; i < k && !ok; i++)
		ok = !strcmp(all[i].name, tmpl) && !strcmp(all[i].origin, want);
	free(all);
	if (!ok)
		return -EINVAL;
	snprintf(name, sizeof(name), "%s", tmpl);
	pol = *o->policy;
	for (const char *const *p = o->policy->snapshots; p && *p && n < 62;
	     p++)
		names[n++] = *p;
	names[n++] = name;
	names[n] = NULL;
	pol.snapshots = names;
	ws->w.policy = &pol;
	return 0;
}

int sess__fork_policy(const struct al_sess_opts *o, struct al_wsess *ws,
		     json_t *body, char *err, size_t len)
{
	const char *parent = json_string_value(json_object_get(body, "fork_of"));
	const char *tmpl = json_string_value(json_object_get(body, "template"));
	char want[AL_SESS_ORIGIN_MAX + 1];

	if (!parent)
		return 0; /* not a fork */
	snprintf(want, sizeof(want), "fork:%s", parent);
	if (!tmpl || strncmp(tmpl, "fork-", 5) ||
	    lineage_policy(o, ws, tmpl, want) < 0) {
		snprintf(err, len, "fork_of %s: template %s is not a fork of "
			 "that session on this host", parent, tmpl ? tmpl : "");
		return -EINVAL;
	}
	return 0;
}

/* --- hibernation -------------------------------------------------------------
 *
 * An idle saveable session's VM is saved as snapshot hib-HEX (HEX: its
 * id's digits; origin hibernate:ID) and its VMM ends: no QEMU, no uid
 * lease, no VMM cgroup while it sleeps. The session process stays (its
 * clocks, its request list) but gives back what it opened: the worker's
 * templates and pools and the template and snapshot RAM memfds, so that
 * a hibernated session holds no guest memory. The next request restores
 * the VM from hib-HEX (the template reloaded, reseeded, the clock set,
 * the limits sent again; its files and RAM as they were), then the
 * snapshot and the process's cached copy of it go.
 */
static int hib_lock = -1; /* held while hibernated */

static void hib_name(const char *id, char *name, size_t len, char *origin,
		     size_t olen)
{
	snprintf(name, len, "hib-%.40s", id + 2);
	snprintf(origin, olen, "hibernate:%s", id);
}

int sess__hibernate(const struct al_sess_opts *o, struct al_wsess *ws,
		   const char *id, char *err, size_t len)
{
	char name[AL_NAME_MAX + 1], origin[AL_SESS_ORIGIN_MAX + 1];
	struct sb_snapshot_info info;
	uint64_t t0 = al_now_ms();
	int r;

	hib_name(id, name, sizeof(name), origin, sizeof(origin));
	sb_snapshot_remove(o->sb, name); /* a resume that failed half way */
	memset(&info, 0, sizeof(info));
	r = ws->vm ? sb_snapshot_save_live(o->sb, ws->vm, name, origin, NULL, &info)
		   : -ENODEV;
	if (r < 0) {
		snprintf(err, len, "hibernate: %s%s%s", strerror(-r),
			 ws->vm && sb_vm_error(ws->vm)[0] ? ": " : "",
			 ws->vm ? sb_vm_error(ws->vm) : "");
		return r;
	}
	if (hib_lock < 0)
		hib_lock = own_lock(o, name);
	sb_vm_destroy(ws->vm); /* the VMM ends: QEMU reaped, uid free */
	ws->vm = NULL;
	/* and the template RAM this process opened (152 MiB for python):
	 * a hibernated session holds no guest memory; resume reopens */
	al_worker_release(&ws->w);
	sb_template_release_all();
	sb_snapshot_release_all();
	al_info("session=%s hibernated mem=%llu save_ms=%llu total_ms=%llu",
		id, (unsigned long long)info.mem_bytes,
		(unsigned long long)info.save_ms,
		(unsigned long long)(al_now_ms() - t0));
	return 0;
}

int sess__resume(const struct al_sess_opts *o, struct al_wsess *ws,
		const char *id, json_t *create_body, uint64_t ttl_ms,
		uint64_t *ret_ms, char *err, size_t len)
{
	char name[AL_NAME_MAX + 1], origin[AL_SESS_ORIGIN_MAX + 1], *text;
	uint64_t t0 = al_now_ms();
	struct al_job j = {0};
	struct al_diags d;
	json_t *job;
	int r;

	hib_name(id, name, sizeof(name), origin, sizeof(origin));
	if (lineage_policy(o, ws, name, origin) < 0) {
		snprintf(err, len, "resume: the hibernated state %s is gone",
			 name);
		return -ENOENT;
	}
	job = json_pack("{s:s,s:[{s:s}]}", "template", name, "steps", "sh",
			"true");
	if (job && json_object_get(create_body, "limits"))
		json_object_set(job, "limits",
				json_object_get(create_body, "limits"));
	text = job ? json_dumps(job, JSON_COMPACT) : NULL;
	json_decref(job);
	al_diags_init(&d);
	r = text ? al_job_from_json(text, strlen(text), &j, &d) : -ENOMEM;
	free(text);
	if (r < 0) {
		al_diags_format(&d, err, len);
		return r;
	}
	ws->w.saveable = true;
	r = al_wsess_open(ws, &j, ttl_ms, err, len);
	al_job_release(&j);
	/* the VM holds its own RAM copy and QEMU its state: the files go */
	own_drop(o, name, &hib_lock);
	sb_snapshot_release(name);
	*ret_ms = al_now_ms() - t0;
	if (r == 0)
		al_info("session=%s resumed in %llu ms", id,
			(unsigned long long)*ret_ms);
	return r;
}

int al_sess_fork(struct alq_client *c, const char *id, unsigned n,
		 bool saveable, uint32_t timeout_ms, char **ret)
{
	char ids[AL_SESS_FORK_MAX][32], rids[AL_SESS_FORK_MAX][32];
	char list[SESS_KEY_MAX], *rec_text;
	json_t *rec, *rep = NULL, *body, *out, *arr, *errs;
	uint64_t t0 = al_now_ms(), w0 = al_wall_ms();
	unsigned made = 0, ok = 0;
	const char *host;
	int x;

	if (n < 1 || n > AL_SESS_FORK_MAX)
		return sess__fail(c, -EINVAL, "fork: n must be 1..%d",
				 AL_SESS_FORK_MAX);
	x = sess__live_record(c, id, &rec);
	if (x < 0)
		return x;
	host = json_string_value(json_object_get(rec, "host"));
	if (!host || snprintf(list, sizeof(list), "host:%s:create", host) >=
			     (int)sizeof(list)) {
		json_decref(rec);
		return sess__fail(c, -EAGAIN, "%s: not on a host yet", id);
	}
	x = to_session(c, id, "fork", NULL, &rep);
	if (x < 0) {
		json_decref(rec);
		return x;
	}
	body = json_object_get(rep, "body");
	if (!json_is_object(body)) {
		json_decref(rec);
		json_decref(rep);
		return sess__fail(c, -EBADMSG, "fork: bad reply");
	}
	/* the parent's clocks, each fork's own from its start */
	json_object_set(body, "ttl_s", json_object_get(rec, "ttl_s"));
	json_object_set(body, "idle_s", json_object_get(rec, "idle_s"));
	if (saveable) /* forks of forks: each pays its own RAM copy */
		json_object_set_new(body, "saveable", json_true());
	json_decref(rec);
	for (; made < n; made++)
		if (sess__create_on(c, body, timeout_ms, list, ids[made],
				   rids[made]) < 0)
			break;
	out = json_pack("{s:s,s:O,s:O,s:O,s:[],s:[]}", "parent", id,
			"snapshot", json_object_get(rep, "snapshot"), "save_ms",
			json_object_get(rep, "save_ms"), "mem_bytes",
			json_object_get(rep, "mem_bytes"), "forks", "errors");
	arr = json_object_get(out, "forks");
	errs = json_object_get(out, "errors");
	if (made < n)
		json_array_append_new(errs, json_string(c->err));
	for (unsigned i = 0; i < made; i++) {
		json_t *f;

		rec_text = NULL;
		if (sess__create_wait(c, ids[i], rids[i], t0, timeout_ms,
				     &rec_text) < 0) {
			json_array_append_new(errs, json_string(c->err));
			continue;
		}
		f = json_loads(rec_text, 0, NULL);
		free(rec_text);
		if (!f)
			continue;
		/* the fork's time: the request's start to its VM ready */
		if (json_is_integer(json_object_get(f, "alive_at_ms")))
			json_object_set_new(
			    f, "fork_ms",
			    json_integer(json_integer_value(json_object_get(
					     f, "alive_at_ms")) -
					 (json_int_t)w0));
		json_array_append_new(arr, f);
		ok++;
	}
	/* the forks hold what they need: the parent drops the snapshot */
	json_decref(rep);
	rep = NULL;
	if (to_session(c, id, "fork_done",
		       json_pack("{s:O}", "name", json_object_get(out,
								  "snapshot")),
		       &rep) == 0)
		json_decref(rep);
	al_sess_expiry(c, id, out); /* the parent's */
	*ret = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	if (!ok)
		return sess__fail(c, -EIO, "fork: no fork started");
	return *ret ? 0 : -ENOMEM;
}

void sess__hib_done(const struct al_sess_opts *o, const char *id)
{
	char name[AL_NAME_MAX + 1], origin[AL_SESS_ORIGIN_MAX + 1];

	hib_name(id, name, sizeof(name), origin, sizeof(origin));
	own_drop(o, name, &hib_lock);
}
