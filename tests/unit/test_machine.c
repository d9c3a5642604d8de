/* test_machine.c: the QEMU command line, pinned (sandbox/machine.c).
 *
 * The argv is what a template snapshot and its clones must agree on, and
 * the template key hashes it: a change here rebuilds every template and
 * may break restores, so it must be a decision, made by editing these
 * lists. sb__machine_argv() is pure (no I/O, no QEMU needed): fixed options,
 * image and spec in, the exact argv out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "machine.h"

#define QEMU "/usr/bin/qemu-system-x86_64"

/* One argument a line, as QEMU gets them. */
/* clang-format off */

/* Cold boot under TCG: anonymous RAM, virtio-serial carrier. */
static const char *const cold_tcg[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"tcg",
	"-cpu",
	"max",
	"-m",
	"512",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-nic",
	"none",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};

/* Cold boot under KVM: the host CPU, and a virtio-rng (TCG's `max` CPU
 * has RDRAND instead). */
static const char *const cold_kvm[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"kvm",
	"-cpu",
	"host",
	"-m",
	"512",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-nic",
	"none",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-device",
	"virtio-rng-pci,disable-legacy=on",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};

/* A clone under TCG: the template's RAM file mapped private, waiting
 * for its state in -incoming defer. */
static const char *const clone_tcg[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"tcg",
	"-cpu",
	"max",
	"-m",
	"512",
	"-object",
	"memory-backend-file,id=mem,size=512M,"
	"mem-path=/proc/self/fd/5,share=off",
	"-machine",
	"memory-backend=mem",
	"-incoming",
	"defer",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-nic",
	"none",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};

/* A clone under KVM. */
static const char *const clone_kvm[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"kvm",
	"-cpu",
	"host",
	"-m",
	"512",
	"-object",
	"memory-backend-file,id=mem,size=512M,"
	"mem-path=/proc/self/fd/5,share=off",
	"-machine",
	"memory-backend=mem",
	"-incoming",
	"defer",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-nic",
	"none",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-device",
	"virtio-rng-pci,disable-legacy=on",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};

/* The template being built: its RAM file shared, no -incoming. */
static const char *const template_tcg[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"tcg",
	"-cpu",
	"max",
	"-m",
	"512",
	"-object",
	"memory-backend-file,id=mem,size=512M,"
	"mem-path=/proc/self/fd/5,share=on",
	"-machine",
	"memory-backend=mem",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-nic",
	"none",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};

/* A clone of a networked template: no `-nic none`; the address on the
 * kernel command line; the NIC on the tap (fd 9) after the agent's port. */
static const char *const clone_tcg_net[] = {
	"/usr/bin/qemu-system-x86_64",
	"-M",
	"pc,hpet=off,vmport=off",
	"-accel",
	"tcg",
	"-cpu",
	"max",
	"-m",
	"512",
	"-object",
	"memory-backend-file,id=mem,size=512M,"
	"mem-path=/proc/self/fd/5,share=off",
	"-machine",
	"memory-backend=mem",
	"-incoming",
	"defer",
	"-smp",
	"2",
	"-nodefaults",
	"-no-user-config",
	"-display",
	"none",
	"-sandbox",
	"on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	"resourcecontrol=deny",
	"-chardev",
	"ringbuf,id=con,size=64K",
	"-serial",
	"chardev:con",
	"-kernel",
	"/img/python-0123/vmlinuz",
	"-initrd",
	"/img/python-0123/initramfs.cpio.gz",
	"-append",
	"console=ttyS0 quiet airlock.template=python "
	"airlock.net=10.200.0.2/30,10.200.0.1",
	"-drive",
	"if=none,id=root,file=/img/python-0123/rootfs.ext4,"
	"format=raw,readonly=on",
	"-device",
	"virtio-blk-pci,drive=root,disable-legacy=on",
	"-device",
	"virtio-serial-pci,disable-legacy=on",
	"-chardev",
	"socket,id=agent,fd=4",
	"-device",
	"virtserialport,chardev=agent,name=org.airlock.agent",
	"-netdev",
	"tap,id=net0,fd=9",
	"-device",
	"virtio-net-pci,netdev=net0,mac=52:54:00:a1:0c:02,"
	"disable-legacy=on,romfile=",
	"-chardev",
	"socket,id=qmp,fd=3",
	"-mon",
	"chardev=qmp,mode=control",
	"-no-reboot",
	NULL,
};
/* clang-format on */

static void options(struct sb_options *o, struct sb_image *img)
{
	memset(o, 0, sizeof(*o));
	o->memory_mb = 512;
	o->vcpus = 2;
	memset(img, 0, sizeof(*img));
	snprintf(img->dir, sizeof(img->dir), "/img/python-0123");
	snprintf(img->name, sizeof(img->name), "python");
	snprintf(img->initrd, sizeof(img->initrd), "initramfs.cpio.gz");
	snprintf(img->cmdline, sizeof(img->cmdline), "console=ttyS0 quiet");
}

static void check(const struct machine_spec *m, const char *const *want)
{
	struct sb_options o;
	struct sb_image img;
	struct vmm_argv a = {0};
	size_t n = 0;

	options(&o, &img);
	sb__machine_argv(&a, &o, &img, m);
	assert_int_equal(a.err, 0);
	while (want[n])
		n++;
	for (size_t i = 0; i < a.n && i < n; i++)
		if (strcmp(a.v[i], want[i]) != 0)
			fail_msg("argv[%zu] is \"%s\", want \"%s\"", i, a.v[i],
				 want[i]);
	assert_int_equal(a.n, n);
	assert_null(a.v[a.n]);
	sb__vmm_argv_release(&a);
}

static void test_cold_tcg(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = -1},
	};

	(void)state;
	check(&m, cold_tcg);
}

static void test_cold_kvm(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_KVM,
		.mem = {.fd = -1},
	};

	(void)state;
	check(&m, cold_kvm);
}

static void test_clone_tcg(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = 9, .incoming = true},
	};

	(void)state;
	check(&m, clone_tcg);
}

static void test_clone_kvm(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_KVM,
		.mem = {.fd = 9, .incoming = true},
	};

	(void)state;
	check(&m, clone_kvm);
}

static void test_clone_tcg_net(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = 9, .incoming = true},
		.net = true,
	};

	(void)state;
	check(&m, clone_tcg_net);
}

/* A clone's stub kernel: `-kernel` names VMM_FD_KERNEL and `-initrd`
 * goes; every other argument is the plain clone's, in its order. */
static void test_clone_kernel_stub(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = 9, .incoming = true},
		.kernel_stub = true,
	};
	struct sb_options o;
	struct sb_image img;
	struct vmm_argv a = {0};
	size_t i = 0, j = 0;

	(void)state;
	options(&o, &img);
	sb__machine_argv(&a, &o, &img, &m);
	assert_int_equal(a.err, 0);
	while (clone_tcg[j]) {
		if (!strcmp(clone_tcg[j], "-initrd")) {
			j += 2;
			continue;
		}
		assert_non_null(a.v[i]);
		if (i > 0 && !strcmp(a.v[i - 1], "-kernel"))
			assert_string_equal(a.v[i], "/proc/self/fd/11");
		else
			assert_string_equal(a.v[i], clone_tcg[j]);
		i++, j++;
	}
	assert_int_equal(a.n, i);
	sb__vmm_argv_release(&a);
}

static void test_template_tcg(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = 9, .share = true},
	};

	(void)state;
	check(&m, template_tcg);
}

/* The vsock carrier adds exactly one device, after the agent's port, and
 * the fw_cfg file of its token (the memfd QEMU inherits as fd 3). */
static void test_vsock_adds_one_device(void **state)
{
	struct machine_spec m = {
		.qemu = QEMU,
		.accel = AL_ACCEL_TCG,
		.mem = {.fd = -1},
		.cid = 7,
	};
	struct sb_options o;
	struct sb_image img;
	struct vmm_argv a = {0};
	size_t n = 0, at;

	(void)state;
	options(&o, &img);
	sb__machine_argv(&a, &o, &img, &m);
	while (cold_tcg[n])
		n++;
	assert_int_equal(a.n, n + 4);
	at = n - 5; /* before -chardev qmp, -mon, -no-reboot */
	assert_string_equal(a.v[at], "-device");
	assert_string_equal(a.v[at + 1], "vhost-vsock-pci,guest-cid=7,vhostfd=7");
	assert_string_equal(a.v[at + 2], "-fw_cfg");
	assert_string_equal(a.v[at + 3],
			    "name=opt/airlock/token,file=/proc/self/fd/8");
	for (size_t i = 0; i < n; i++)
		assert_string_equal(a.v[i < at ? i : i + 4], cold_tcg[i]);
	sb__vmm_argv_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_tcg),
		cmocka_unit_test(test_cold_kvm),
		cmocka_unit_test(test_clone_tcg),
		cmocka_unit_test(test_clone_kvm),
		cmocka_unit_test(test_clone_kernel_stub),
		cmocka_unit_test(test_template_tcg),
		cmocka_unit_test(test_clone_tcg_net),
		cmocka_unit_test(test_vsock_adds_one_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
