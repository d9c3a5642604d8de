/* machine.c: the QEMU command line of a VM (see machine.h).
 *
 * The machine is minimal on purpose: no network device, no display, no
 * default devices, QEMU's own seccomp sandbox on; a read-only root disk,
 * the agent's channel (virtio-serial, or vhost-vsock when the carrier is
 * vsock) and QMP. Every device a clone loads costs restore time, so each
 * one here earns its place (the comments say why).
 *
 * QEMU creates no file and no socket: QMP and the agent's channel are
 * socketpair ends it inherits (VMM_FD_*), the console is a ring in its
 * memory, guest RAM a memfd it inherits. A networked VM (the networked
 * variant of a template and its clones, docs/network.md) has one NIC, a
 * virtio-net on the tap QEMU inherits (VMM_FD_TAP, made by net.c in the
 * VM's own namespace), with the same MAC in every clone, and the kernel
 * command line tells the agent the address to configure: every clone has
 * the same one, each in a namespace of its own.
 */
#include "machine.h"
#include "net.h"
#include "proto.h"

static void machine_ram(struct vmm_argv *a, const struct sb_options *o,
			const struct machine_mem *mem)
{
	sb__vmm_arg(a, "-m");
	sb__vmm_arg(a, "%u", o->memory_mb);
	if (mem->fd >= 0) {
		sb__vmm_arg(a, "-object");
		sb__vmm_arg(a,
			    "memory-backend-file,id=mem,size=%uM,"
			    "mem-path=/proc/self/fd/%d,share=%s",
			    o->memory_mb, VMM_FD_MEM,
			    mem->share ? "on" : "off");
		sb__vmm_arg(a, "-machine");
		sb__vmm_arg(a, "memory-backend=mem");
	}
	if (mem->incoming) {
		sb__vmm_arg(a, "-incoming");
		sb__vmm_arg(a, "defer");
	}
}

#define AL_STR_(x) #x
#define AL_STR(x) AL_STR_(x)

static void machine_boot(struct vmm_argv *a, const struct sb_image *img,
			 const struct machine_spec *m)
{
	/* the console in a bounded ring QEMU keeps (QMP ringbuf-read reads
	 * it when debugging): no file the VMM writes */
	sb__vmm_arg(a, "-chardev");
	sb__vmm_arg(a, "ringbuf,id=con,size=64K");
	sb__vmm_arg(a, "-serial");
	sb__vmm_arg(a, "chardev:con");
	/* A clone never boots (-no-reboot: a guest reboot ends QEMU), yet
	 * QEMU reads -kernel and -initrd whole into its heap for fw_cfg: 16
	 * MiB read and kept per clone. It gets a stub instead, the kernel's
	 * setup header (vm.c), which QEMU parses the same way: the option
	 * ROM and every RAM block stay the template's; fw_cfg's contents
	 * are not migrated. */
	sb__vmm_arg(a, "-kernel");
	if (m->kernel_stub) {
		sb__vmm_arg(a, "/proc/self/fd/%d", VMM_FD_KERNEL);
	} else {
		sb__vmm_arg(a, "%s/vmlinuz", img->dir);
		sb__vmm_arg(a, "-initrd");
		sb__vmm_arg(a, "%s/%s", img->dir, img->initrd);
	}
	sb__vmm_arg(a, "-append");
	sb__vmm_arg(a, "%s airlock.template=%s%s", img->cmdline, img->name,
		    m->net ? " airlock.net=" SB_NET_GUEST_IP
			     "/" AL_STR(SB_NET_PREFIX) "," SB_NET_GATEWAY_IP
			   : "");
	sb__vmm_arg(a, "-drive");
	sb__vmm_arg(a,
		    "if=none,id=root,file=%s/rootfs.ext4,format=raw,"
		    "readonly=on",
		    img->dir);
	sb__vmm_arg(a, "-device");
	/* modern virtio only: no legacy I/O BAR to load per device */
	sb__vmm_arg(a, "virtio-blk-pci,drive=root,disable-legacy=on");
}

static void machine_devices(struct vmm_argv *a, const struct machine_spec *m)
{
	sb__vmm_arg(a, "-device");
	sb__vmm_arg(a, "virtio-serial-pci,disable-legacy=on");
	sb__vmm_arg(a, "-chardev");
	/* a socketpair end we made: no socket file for anyone to reach */
	sb__vmm_arg(a, "socket,id=agent,fd=%d", VMM_FD_AGENT);
	sb__vmm_arg(a, "-device");
	sb__vmm_arg(a, "virtserialport,chardev=agent,name=%s", AL_AGENT_VPORT);
	/* TCG's `max` CPU always has RDRAND, which seeds the guest's CRNG at
	 * boot (random.trust_cpu); a KVM host's CPU might not, so it gets a
	 * virtio-rng. Under TCG the device would cost every restore 2-5 ms of
	 * loading. Clones get host entropy from the reseed either way. */
	if (m->net) {
		/* the tap net.c made in the VM's namespace; no option ROM
		 * (the kernel is loaded directly: nothing would run it) */
		sb__vmm_arg(a, "-netdev");
		sb__vmm_arg(a, "tap,id=net0,fd=%d", VMM_FD_TAP);
		sb__vmm_arg(a, "-device");
		sb__vmm_arg(a,
			    "virtio-net-pci,netdev=net0,mac=%s,"
			    "disable-legacy=on,romfile=",
			    SB_NET_GUEST_MAC);
	}
	if (m->accel == AL_ACCEL_KVM) {
		sb__vmm_arg(a, "-device");
		sb__vmm_arg(a, "virtio-rng-pci,disable-legacy=on");
	}
	if (m->cid) {
		/* /dev/vhost-vsock is root's: we open it, QEMU gets the fd */
		sb__vmm_arg(a, "-device");
		sb__vmm_arg(a, "vhost-vsock-pci,guest-cid=%u,vhostfd=%d",
			    m->cid, VMM_FD_VSOCK);
		/* the token the agent asks the host to prove (vm_token_fd):
		 * fw_cfg is built from this command line, not migrated, so a
		 * clone's file is its own although its RAM is the template's;
		 * a memfd, so the secret is on no command line and no disk */
		sb__vmm_arg(a, "-fw_cfg");
		sb__vmm_arg(a, "name=%s,file=/proc/self/fd/%d", AL_AUTH_FW_CFG,
			    VMM_FD_TOKEN);
	}
}

void sb__machine_argv(struct vmm_argv *a, const struct sb_options *o,
		      const struct sb_image *img, const struct machine_spec *m)
{
	bool kvm = m->accel == AL_ACCEL_KVM;

	sb__vmm_arg(a, "%s", m->qemu);
	/* no HPET or VMware port: the guest uses neither (TSC clock, LAPIC
	 * timer), and every device or BAR a clone loads costs QEMU 7.2
	 * rebuilds of its memory maps, in host page faults and time */
	sb__vmm_arg(a, "-M");
	sb__vmm_arg(a, "pc,hpet=off,vmport=off");
	sb__vmm_arg(a, "-accel");
	/* TCG's translation buffer is QEMU memory a guest fills by running
	 * new code (a configure runs thousands of programs): QEMU 7.2's
	 * default is 1 GiB, so it is capped and counted in the VMM cgroup */
	if (kvm || !m->tb_mb)
		sb__vmm_arg(a, "%s", kvm ? "kvm" : "tcg");
	else
		sb__vmm_arg(a, "tcg,tb-size=%u", m->tb_mb);
	sb__vmm_arg(a, "-cpu");
	sb__vmm_arg(a, "%s", kvm ? "host" : "max");
	machine_ram(a, o, &m->mem);
	sb__vmm_arg(a, "-smp");
	sb__vmm_arg(a, "%u", o->vcpus);
	sb__vmm_arg(a, "-nodefaults");
	sb__vmm_arg(a, "-no-user-config");
	if (!m->net) {
		sb__vmm_arg(a, "-nic");
		sb__vmm_arg(a, "none");
	}
	sb__vmm_arg(a, "-display");
	sb__vmm_arg(a, "none");
	sb__vmm_arg(a, "-sandbox");
	sb__vmm_arg(a, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
		       "resourcecontrol=deny");
	machine_boot(a, img, m);
	machine_devices(a, m);
	sb__vmm_arg(a, "-chardev");
	sb__vmm_arg(a, "socket,id=qmp,fd=%d", VMM_FD_QMP);
	sb__vmm_arg(a, "-mon");
	sb__vmm_arg(a, "chardev=qmp,mode=control");
	sb__vmm_arg(a, "-no-reboot");
}
