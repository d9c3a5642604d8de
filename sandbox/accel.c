/* accel.c: choosing KVM or TCG.
 *
 * /dev/kvm existing is not enough: nested and paravirtualised hosts expose
 * a /dev/kvm that creates VMs but cannot boot a stock kernel (the
 * development machines are such hosts). So `auto` boots the image once
 * under KVM and uses KVM only if the agent answers within PROBE_MS; the
 * verdict is cached per image and QEMU binary in the state dir, so the
 * probe costs one boot per image, not one per VM.
 *
 * This file decides and caches only: the probe boot is the caller's
 * callback (vm.c), so the dependency runs one way, vm.c -> accel.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel.h"
#include "util.h"

#define PROBE_MS 20000

static bool kvm_openable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void cache_path(const struct sb_options *o, const struct sb_image *img,
		       char *out, size_t size)
{
	if (snprintf(out, size, "%s/images/.accel-%s", o->state_dir,
		     img->hash) >= (int)size)
		out[0] = 0; /* too long: no cache, probe every time */
}

static int cache_read(const char *path)
{
	char buf[8] = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (!strcmp(buf, "kvm\n"))
		return AL_ACCEL_KVM;
	if (!strcmp(buf, "tcg\n"))
		return AL_ACCEL_TCG;
	return -1;
}

static void cache_write(const char *path, enum al_accel a)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	if (!path[0])
		return;
	/* a user's own state dir may not exist yet (images from the
	 * system dir): the verdict goes there all the same */
	snprintf(tmp, sizeof(tmp), "%s", path);
	*strrchr(tmp, '/') = 0;
	if (sb_mkdirs(tmp, 0755) < 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return;
	fputs(a == AL_ACCEL_KVM ? "kvm\n" : "tcg\n", f);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

enum al_accel sb__accel_decide(const struct sb_options *o,
			       const struct sb_image *img, accel_probe_fn probe)
{
	int known = sb_accel_known(o, img);
	char path[PATH_MAX];
	enum al_accel a;

	if (known >= 0)
		return (enum al_accel)known;
	cache_path(o, img, path, sizeof(path));
	a = probe(o, img, PROBE_MS) ? AL_ACCEL_KVM : AL_ACCEL_TCG;
	cache_write(path, a);
	return a;
}

int sb_accel_known(const struct sb_options *o, const struct sb_image *img)
{
	char path[PATH_MAX];
	int cached;

	if (o->accel == SB_ACCEL_KVM)
		return AL_ACCEL_KVM;
	if (o->accel == SB_ACCEL_TCG || !kvm_openable())
		return AL_ACCEL_TCG;
	cache_path(o, img, path, sizeof(path));
	cached = cache_read(path);
	return cached >= 0 ? cached : -ENOENT;
}
