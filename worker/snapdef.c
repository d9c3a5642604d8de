/* snapdef.c: a snapshot built on this host from its published definition
 * (worker.h, docs/snapshots.md "On every host").
 *
 * `airlock snapshot create` on one host publishes the snapshot's setup job
 * and base through Redis; the dispatcher hands that definition to the
 * worker with each job naming the snapshot (proc.c). Before such a job
 * gets its VM, al_worker_snapshot_ensure() makes this host's build the
 * published one or refuses the job:
 *
 *  1. The definition is untrusted data: its fields are checked, its key
 *     recomputed, its setup decoded as any job is (caps, schema) and
 *     hashed again: the setup it carries must be the one its key names.
 *  2. The base must be an image template here whose image hash is the
 *     one the snapshot was defined on: another image is another base,
 *     and the job never runs on another base. The QEMU binary, the
 *     accelerator and the machine config may differ between hosts: each
 *     host's build uses its own template of that image (its own key, as
 *     for any template).
 *  3. With snapshots.build_on_demand off (o->snapshot_no_build), a build
 *     of exactly this base and setup must already be here. Otherwise
 *     the caller (job.c's al_worker_snapshot_ensure) has
 *     al_worker_snapshot() run the setup as a job (this host's policy:
 *     `RJ` if it breaks it) and save it, or find it built (a cache
 *     hit). sb_snapshot_begin() takes the name's build lock, so one
 *     build of a name runs per host at a time and the other workers'
 *     jobs of that name wait on the lock, then find it built.
 *
 * Calls go one way: job.c calls here (al_snapdef_check, the setup hash),
 * never the other way.
 *
 * Any refusal is -ESTALE with a message naming the snapshot: the caller
 * makes it the job's `RJ`. Nothing here reads a path or runs a command
 * from the definition: the setup runs only inside a clone, as a job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "worker.h"

#define SNAPDEF_REV 1 /* bump when the key's meaning changes */

static bool hex_n(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

void al_snapdef_key(const struct al_snapdef *d, char out[33])
{
	uint8_t h[AL_SHA256_LEN];
	char in[AL_NAME_MAX * 2 + 200];

	snprintf(in, sizeof(in), "rev=%d snapshot=%s base=%s image=%s "
		 "setup=%s", SNAPDEF_REV, d->name, d->base, d->image,
		 d->setup_sha);
	al_sha256(in, strlen(in), h);
	for (size_t i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

bool al_snapdef_valid(const struct al_snapdef *d)
{
	char key[33];

	size_t il = strlen(d->image);

	if (!al_name_valid(d->name) || !al_name_valid(d->base) || !il ||
	    !hex_n(d->image, il) || !hex_n(d->setup_sha, 64) ||
	    !hex_n(d->key, 32) || !d->setup || !d->setup_len ||
	    d->setup_len > AL_JOB_MAX_BYTES)
		return false;
	al_snapdef_key(d, key);
	return !strcmp(key, d->key);
}

int al_worker_setup_hash(const struct al_job *job, char out[65])
{
	struct al_job j = *job;
	uint8_t h[AL_SHA256_LEN];
	char *mp = NULL;
	size_t len = 0;
	int r;

	j.id = NULL; /* they name the request, not what it does */
	j.meta.data = NULL;
	j.meta.len = 0;
	r = al_job_to_msgpack(&j, &mp, &len);
	if (r < 0)
		return r;
	al_sha256(mp, len, h);
	free(mp);
	for (size_t i = 0; i < AL_SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	return 0;
}

/* The definition's setup, decoded and checked against its hash. */
static int setup_of(const struct al_snapdef *d, const struct al_policy *pol,
		    struct al_job *job, char *err, size_t errlen)
{
	struct al_diags diags;
	char sha[65];
	const char *base;

	al_diags_init(&diags);
	if (al_job_from_msgpack(d->setup, d->setup_len, job, &diags) < 0) {
		snprintf(err, errlen, "snapshot %s: its published setup job "
			 "does not decode", d->name);
		return -ESTALE;
	}
	base = job->template_ ? job->template_ : pol->template_;
	if (strcmp(base, d->base) != 0) {
		snprintf(err, errlen, "snapshot %s: its published setup names "
			 "template %s, not its base %s", d->name, base, d->base);
		return -ESTALE;
	}
	if (al_worker_setup_hash(job, sha) < 0)
		return -ENOMEM;
	if (strcmp(sha, d->setup_sha) != 0) {
		snprintf(err, errlen, "snapshot %s: its published setup does "
			 "not match its hash", d->name);
		return -ESTALE;
	}
	return 0;
}

int al_snapdef_check(const struct al_worker *w, const struct al_snapdef *d,
		     struct al_job *ret_setup, char *err, size_t errlen)
{
	struct sb_image img;
	int r;

	if (!al_snapdef_valid(d)) {
		snprintf(err, errlen, "snapshot %s: its published definition "
			 "is malformed", d->name);
		return -ESTALE;
	}
	r = setup_of(d, w->policy, ret_setup, err, errlen);
	if (r == 0 && sb_image_open(w->sb, d->base, &img) < 0) {
		snprintf(err, errlen, "snapshot %s: its base %s has no image "
			 "on worker %s", d->name, d->base, w->name);
		r = -ESTALE;
	} else if (r == 0 && strcmp(img.hash, d->image) != 0) {
		snprintf(err, errlen, "snapshot %s: worker %s's image of %s "
			 "(%.12s) is not the one it was defined on (%.12s)",
			 d->name, w->name, d->base, img.hash, d->image);
		r = -ESTALE;
	}
	if (r < 0 || !w->sb->snapshot_no_build)
		return r < 0 ? r : 1;
	if (!sb_snapshot_built(w->sb, d->name, d->base, d->setup_sha)) {
		snprintf(err, errlen, "snapshot %s: worker %s has no build of "
			 "its published definition %.12s and "
			 "snapshots.build_on_demand is off", d->name, w->name,
			 d->key);
		return -ESTALE;
	}
	return 0;
}
