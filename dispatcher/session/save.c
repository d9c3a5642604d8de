/* save.c: a live session saved as a snapshot (docs/sessions.md
 * "Snapshot"). The session process (run.c) calls sess_snapshot() for a
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
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sess_internal.h"
#include "log.h"
#include "sessions.h"

#include "session.h" /* worker/: the VM side */

json_t *sess_snapshot(const struct al_sess_opts *o, struct al_wsess *ws,
		      const char *id, json_t *body, char *err, size_t len)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	struct sb_snapshot_info info;
	char origin[AL_SESS_ORIGIN_MAX + 1];
	int r;

	if (!name) {
		snprintf(err, len, "snapshot: a \"name\" is needed");
		return NULL;
	}
	snprintf(origin, sizeof(origin), "session:%s", id);
	memset(&info, 0, sizeof(info));
	r = ws->vm ? sb_snapshot_save_live(o->sb, ws->vm, name, origin, &info)
		   : -ENODEV;
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

int al_sess_snapshot(struct alq_client *c, const char *id, const char *name,
		     char **ret)
{
	json_t *req, *rep, *rec;
	const char *e;
	char rid[32], k[SESS_KEY_MAX];
	int x = sess_live_record(c, id, &rec);

	if (x < 0)
		return x;
	json_decref(rec);
	if (sess_new_id(rid, sizeof(rid), 'r') < 0)
		return -EIO;
	req = json_pack("{s:s,s:s,s:{s:s}}", "op", "snapshot", "rid", rid,
			"body", "name", name);
	sess_key(k, sizeof(k), c->queue, "%s:req", id);
	x = sess_push(c, k, req);
	if (x == 0) /* after the execs before it, like an exec */
		x = sess_await(c, rid, id, UINT32_MAX, &rep);
	if (x < 0)
		return x;
	e = json_string_value(json_object_get(rep, "error"));
	if (e && e[0]) {
		x = sess_fail(c, -EINVAL, "%s", e);
		json_decref(rep);
		return x;
	}
	*ret = json_dumps(rep, JSON_COMPACT);
	json_decref(rep);
	return *ret ? 0 : -ENOMEM;
}
