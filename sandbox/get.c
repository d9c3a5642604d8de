/* get.c: the one way a worker gets a VM (sb_vm_get, sandbox.h).
 *
 * On top of the sandbox's calls: it picks among a cold boot (image.c,
 * vm.c), a saveable clone (live.c), a networked clone (clone.c) and a
 * pooled one, warm or restored (clone.c), so that the worker names what
 * it wants and no longer spells out each of them.
 */
#include <errno.h>
#include <stddef.h>

#include "sandbox.h"

static int cold(const struct sb_options *o, const struct sb_vm_want *want,
		struct sb_vm **ret)
{
	struct sb_image img;
	int r = sb_image_open(o, want->image, &img);

	if (r < 0) {
		sb_net_close(want->net);
		return r;
	}
	return sb_vm_boot_net(o, &img, want->net, ret);
}

int sb_vm_get(const struct sb_options *o, const struct sb_vm_want *want,
	      struct sb_vm **ret)
{
	*ret = NULL;
	if (!want->pool && want->image)
		return cold(o, want, ret);
	if (!want->pool) {
		sb_net_close(want->net);
		return -EINVAL;
	}
	if (want->saveable)
		return sb_vm_restore_saveable(o, want->pool->t, want->net, ret);
	if (want->net)
		return sb_vm_restore_net(o, want->pool->t, want->net, ret);
	if (sb_pool_take(want->pool, want->lim, ret) == 0)
		return 0;
	return sb_pool_restore(want->pool, ret);
}
