/* live.c: VMs that can be saved while they run (a session's snapshot).
 *
 * A job's clone maps its template's sealed memfd share=off: the pages it
 * writes are private to its QEMU (MAP_PRIVATE), and QEMU 7.2 can then
 * save them only by putting the whole RAM in the migration stream
 * (x-ignore-shared skips shared RAM blocks only). A saveable VM instead
 * gets a private copy of the template's memfd (its data extents; holes
 * stay holes) mapped share=on: its RAM is then readable from the host,
 * and snapshot.c saves it as a snapshot build does (device state with
 * x-ignore-shared, then only the pages that differ from the image base).
 * docs/sessions.md "Snapshot" has the measurements behind the choice.
 *
 * The copy's base is the image template the RAM derives from: `t` itself,
 * or, when `t` is a snapshot, the base its `inputs` name. Its key is kept
 * so that a save after the image was rebuilt is refused (-ESTALE) rather
 * than diffed against other RAM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"

/* The image template t's RAM derives from, and its key. */
static int live_base(const struct sb_options *o, const struct sb_template *t,
		     char *base, size_t blen, char *key, size_t klen)
{
	char buf[1024];
	struct sb_template b;
	int r;

	if (!t->snapshot) {
		snprintf(base, blen, "%s", t->img.name);
		snprintf(key, klen, "%s", t->key);
		return 0;
	}
	r = sb__template_dir_inputs(t->dir, buf, sizeof(buf));
	if (r < 0)
		return r;
	sb__template_input_field(buf, "base", base, blen);
	r = base[0] ? sb_template_open(o, base, &b) : -ESTALE;
	if (r == 0)
		snprintf(key, klen, "%s", b.key);
	return r;
}

int sb_vm_restore_saveable(const struct sb_options *o,
			   const struct sb_template *t, struct sb_net *net,
			   struct sb_vm **ret)
{
	struct sb_template c = *t;
	char base[AL_NAME_MAX + 1], key[17];
	struct stat st;
	int fd, r;

	*ret = NULL;
	r = live_base(o, t, base, sizeof(base), key, sizeof(key));
	if (r == 0)
		r = fstat(t->mem_fd, &st) < 0 ? -errno : 0;
	fd = r == 0 ? sb__template_memfd(st.st_size) : r;
	if (fd < 0) {
		sb_net_close(net);
		return fd;
	}
	r = sb__template_copy_extents(t->mem_fd, fd);
	/* QEMU writes it (share=on) but may not resize it under the host's
	 * reads at a save, nor seal it otherwise */
	if (r == 0 && fcntl(fd, F_ADD_SEALS,
			    F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		sb_net_close(net);
		return r;
	}
	c.mem_fd = fd;
	c.share_mem = true;
	r = sb_vm_restore_net(o, &c, net, ret);
	if (*ret) {
		(*ret)->save_fd = fd; /* closed with the VM */
		snprintf((*ret)->base, sizeof((*ret)->base), "%s", base);
		snprintf((*ret)->base_key, sizeof((*ret)->base_key), "%s", key);
	} else {
		close(fd);
	}
	return r;
}

bool sb_vm_saveable(const struct sb_vm *vm)
{
	return vm && vm->save_fd >= 0;
}
