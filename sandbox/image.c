/* image.c: finding a built guest image and reading its manifest.
 *
 * Images are built by sandbox/image/build-image.sh into
 * STATE/images/NAME-HASH/ with STATE/images/NAME pointing at the newest.
 * The manifest is ours (written by the builder) but is read with caps all
 * the same: it is a file on disk that anything with write access to the
 * state dir could change.
 *
 * A user other than root has a state dir of their own but usually no
 * images in it: root built them (tools/quickstart.sh) under the system
 * dir. Images are read-only to a VM (the rootfs is attached read-only,
 * the kernel and initramfs are only read), so such a user's VMs use the
 * system dir's images as they are; templates (snapshots) and the accel
 * verdicts are written to the user's own state dir.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "sandbox.h"

_Static_assert(sizeof(((struct sb_image *)0)->zygote) ==
		       AL_ZYGOTE_MODULES_MAX + 1, "zygote holds the field");

#define MANIFEST_MAX (1u << 20)

static int copy_str(char *dst, size_t size, json_t *v)
{
	const char *s = json_string_value(v);

	if (!s || strlen(s) >= size)
		return -EBADMSG;
	strcpy(dst, s);
	return 0;
}

/* Names that go into paths: no slashes, no dots at the start. */
static bool safe_name(const char *s)
{
	if (!s[0] || s[0] == '.' || strlen(s) > AL_NAME_MAX)
		return false;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

/* STATE/images/NAME resolved into dir (PATH_MAX): 0, -ENOENT, -errno. */
static int find_image(const char *state, const char *name, char *dir)
{
	char link[PATH_MAX];

	if (snprintf(link, sizeof(link), "%s/images/%s", state, name) >=
	    (int)sizeof(link))
		return -ENAMETOOLONG;
	if (!realpath(link, dir))
		return -errno;
	return 0;
}

bool sb_image_built(const struct sb_options *o, const char *template_)
{
	char dir[PATH_MAX];

	if (!safe_name(template_))
		return false;
	return find_image(o->state_dir, template_, dir) == 0 ||
	       (o->system_dir[0] && strcmp(o->system_dir, o->state_dir) &&
		find_image(o->system_dir, template_, dir) == 0);
}

int sb_image_open(const struct sb_options *o, const char *template_,
		  struct sb_image *ret)
{
	char path[PATH_MAX + 16];
	struct sb_image img = {0};
	json_error_t err;
	json_t *m = NULL;
	struct stat st;
	int r;

	if (!safe_name(template_))
		return -EINVAL;
	r = find_image(o->state_dir, template_, img.dir);
	if (r == -ENOENT && o->system_dir[0] &&
	    strcmp(o->system_dir, o->state_dir) != 0)
		r = find_image(o->system_dir, template_, img.dir);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/manifest.json", img.dir);
	if (stat(path, &st) < 0)
		return -errno;
	if (st.st_size > MANIFEST_MAX)
		return -EBADMSG;
	m = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!m)
		return -EBADMSG;
	r = copy_str(img.hash, sizeof(img.hash), json_object_get(m, "hash"));
	if (r == 0)
		r = copy_str(img.cmdline, sizeof(img.cmdline),
			     json_object_get(m, "kernel_cmdline"));
	if (r == 0)
		r = copy_str(img.initrd, sizeof(img.initrd),
			     json_object_get(json_object_get(m, "initramfs"),
					     "file"));
	if (r == 0 && json_string_value(json_object_get(m, "warmup")))
		r = copy_str(img.warmup, sizeof(img.warmup),
			     json_object_get(m, "warmup"));
	/* images built before clone_warmup existed warm clones up with the
	 * template's own command */
	if (r == 0 && json_string_value(json_object_get(m, "clone_warmup")))
		r = copy_str(img.clone_warmup, sizeof(img.clone_warmup),
			     json_object_get(m, "clone_warmup"));
	else if (r == 0)
		strcpy(img.clone_warmup, img.warmup);
	if (r == 0 && json_string_value(json_object_get(m, "zygote")))
		r = copy_str(img.zygote, sizeof(img.zygote),
			     json_object_get(m, "zygote"));
	json_decref(m);
	if (r < 0 || !safe_name(img.initrd))
		return -EBADMSG;
	snprintf(img.name, sizeof(img.name), "%s", template_);
	*ret = img;
	return 0;
}
