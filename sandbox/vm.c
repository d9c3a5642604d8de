/* vm.c: one VM for one job: cold boot, agent calls, destroy.
 *
 * Theory of operation. A VM is a QEMU process with a per-VM run dir
 * holding its QMP socket, the agent's virtio-serial socket (QEMU is the
 * server; we connect) and QEMU's own log. The QEMU command line is built in
 * one place (vm_machine_args) so that a template snapshot and its clones
 * describe the same machine. No network device exists at all. After the
 * agent answers hello it gets fresh entropy and the wall clock before any
 * job code runs. Every agent call has a deadline, capped by the VM's hard
 * TTL; a QEMU that dies closes the agent socket, so a call in flight fails
 * at once rather than at its deadline.
 *
 * Callers: workers (through sandbox.h), tests/vm, tools/bench.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"
#include "vmm.h"

#define QMP_TIMEOUT_MS 5000
#define STEP_MARGIN_MS 5000 /* channel slack over a step's own timeout */

void sb_options_init(struct sb_options *o)
{
	const char *home = getenv("HOME");

	memset(o, 0, sizeof(*o));
	if (geteuid() == 0 || !home) {
		snprintf(o->state_dir, sizeof(o->state_dir), "/var/lib/airlock");
		snprintf(o->run_dir, sizeof(o->run_dir), "/run/airlock");
	} else {
		snprintf(o->state_dir, sizeof(o->state_dir),
			 "%s/.local/state/airlock", home);
		snprintf(o->run_dir, sizeof(o->run_dir), "/tmp/airlock-%u",
			 (unsigned)geteuid());
	}
	snprintf(o->qemu, sizeof(o->qemu), "qemu-system-x86_64");
	o->accel = SB_ACCEL_AUTO;
	o->memory_mb = 1024;
	o->vcpus = 1;
	o->boot_timeout_ms = 60000;
	o->call_timeout_ms = 30000;
	o->ttl_ms = 0;
	o->vmm_overhead_mb = 256;
	o->vmm_cpu_percent = 100;
	o->vmm_pids = 256;
	o->prestart = 1;
	/* QEMU is semi-trusted: as root, run it as nobody (plus the kvm
	 * group for /dev/kvm) unless the config names a user */
	if (geteuid() == 0) {
		const struct passwd *pw = getpwnam("nobody");
		const struct group *kvm = getgrnam("kvm");

		if (pw) {
			o->vmm_uid = pw->pw_uid;
			o->vmm_gid = pw->pw_gid;
		}
		o->kvm_gid = kvm ? kvm->gr_gid : 0;
	}
}

/* The QEMU binary: a path, or a name looked up in PATH. */
int find_binary(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(name, '/')) {
		if (access(name, X_OK) < 0)
			return -errno;
		snprintf(out, size, "%s", name);
		return 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name) <
			    (int)sizeof(buf) &&
		    access(buf, X_OK) == 0) {
			snprintf(out, size, "%s", buf);
			return 0;
		}
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

enum sb_carrier sb_carrier_resolve(const struct sb_options *o)
{
	int fd;

	if (o->carrier != SB_CARRIER_AUTO)
		return o->carrier;
	fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return SB_CARRIER_SERIAL;
	close(fd);
	return SB_CARRIER_VSOCK;
}

/* A guest CID no other live VM of ours has: the pid in the high bits, a
 * counter in the low ones (CIDs 0-2 are reserved). */
uint32_t vm_new_cid(void)
{
	static uint32_t counter;

	return 3u + (((uint32_t)getpid() & 0x3fffffu) << 10 |
		     (counter++ & 0x3ffu));
}

void vm_machine_args(struct vmm_argv *a, const char *qemu,
		     const struct sb_options *o, const struct sb_image *img,
		     enum al_accel accel, const char *dir,
		     const struct vm_mem *mem, uint32_t cid)
{
	vmm_arg(a, "%s", qemu);
	/* no HPET or VMware port: the guest uses neither (TSC clock, LAPIC
	 * timer), and every device or BAR a clone loads costs QEMU 7.2
	 * rebuilds of its memory maps, in host page faults and time */
	vmm_arg(a, "-M");
	vmm_arg(a, "pc,hpet=off,vmport=off");
	vmm_arg(a, "-accel");
	vmm_arg(a, "%s", accel == AL_ACCEL_KVM ? "kvm" : "tcg");
	vmm_arg(a, "-cpu");
	vmm_arg(a, "%s", accel == AL_ACCEL_KVM ? "host" : "max");
	vmm_arg(a, "-m");
	vmm_arg(a, "%u", o->memory_mb);
	if (mem && mem->path) {
		vmm_arg(a, "-object");
		vmm_arg(a, "memory-backend-file,id=mem,size=%uM,mem-path=%s,"
			   "share=%s",
			o->memory_mb, mem->path, mem->share ? "on" : "off");
		vmm_arg(a, "-machine");
		vmm_arg(a, "memory-backend=mem");
	}
	if (mem && mem->incoming) {
		vmm_arg(a, "-incoming");
		vmm_arg(a, "defer");
	}
	vmm_arg(a, "-smp");
	vmm_arg(a, "%u", o->vcpus);
	vmm_arg(a, "-nodefaults");
	vmm_arg(a, "-no-user-config");
	vmm_arg(a, "-nic");
	vmm_arg(a, "none");
	vmm_arg(a, "-display");
	vmm_arg(a, "none");
	vmm_arg(a, "-sandbox");
	vmm_arg(a, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
		   "resourcecontrol=deny");
	vmm_arg(a, "-serial");
	vmm_arg(a, "file:%s/console.log", dir);
	vmm_arg(a, "-kernel");
	vmm_arg(a, "%s/vmlinuz", img->dir);
	vmm_arg(a, "-initrd");
	vmm_arg(a, "%s/%s", img->dir, img->initrd);
	vmm_arg(a, "-append");
	vmm_arg(a, "%s airlock.template=%s", img->cmdline, img->name);
	vmm_arg(a, "-drive");
	vmm_arg(a, "if=none,id=root,file=%s/rootfs.ext4,format=raw,"
		   "readonly=on",
		img->dir);
	vmm_arg(a, "-device");
	/* modern virtio only: no legacy I/O BAR to load per device */
	vmm_arg(a, "virtio-blk-pci,drive=root,disable-legacy=on");
	vmm_arg(a, "-device");
	vmm_arg(a, "virtio-serial-pci,disable-legacy=on");
	vmm_arg(a, "-chardev");
	vmm_arg(a, "socket,id=agent,path=%s/agent.sock,server=on,wait=off",
		dir);
	vmm_arg(a, "-device");
	vmm_arg(a, "virtserialport,chardev=agent,name=%s", AL_AGENT_VPORT);
	/* TCG's `max` CPU always has RDRAND, which seeds the guest's CRNG at
	 * boot (random.trust_cpu); a KVM host's CPU might not, so it gets a
	 * virtio-rng. Under TCG the device would cost every restore 2-5 ms of
	 * loading. Clones get host entropy from the reseed either way. */
	if (accel == AL_ACCEL_KVM) {
		vmm_arg(a, "-device");
		vmm_arg(a, "virtio-rng-pci,disable-legacy=on");
	}
	if (cid) {
		/* QEMU opens /dev/vhost-vsock itself: the VMM user needs it */
		vmm_arg(a, "-device");
		vmm_arg(a, "vhost-vsock-pci,guest-cid=%u", cid);
	}
	vmm_arg(a, "-qmp");
	vmm_arg(a, "unix:%s/qmp.sock,server=on,wait=off", dir);
	vmm_arg(a, "-no-reboot");
}

struct sb_vm *vm_new(void)
{
	struct sb_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return NULL;
	vm->pid = -1;
	vm->pidfd = -1;
	vm->agent_fd = -1;
	vm->qmp.fd = -1;
	return vm;
}

int vm_make_dir(const struct sb_options *o, struct sb_vm *vm)
{
	struct stat st;

	/* 0711: a VMM running as another user reaches its own dir only (an
	 * older run dir of ours may be 0700: widen it) */
	if (mkdir(o->run_dir, 0711) < 0 && errno != EEXIST)
		return -errno;
	if (o->vmm_uid && stat(o->run_dir, &st) == 0 &&
	    st.st_uid == geteuid() && (st.st_mode & 0111) != 0111 &&
	    chmod(o->run_dir, (st.st_mode & 07777) | 0111) < 0)
		return -errno;
	if (snprintf(vm->dir, sizeof(vm->dir), "%s/vm-XXXXXX", o->run_dir) >=
	    (int)sizeof(vm->dir))
		return -ENAMETOOLONG;
	/* sockets live here: sun_path holds 108 bytes */
	if (strlen(vm->dir) + sizeof("/agent.sock") > 108)
		return -ENAMETOOLONG;
	if (!mkdtemp(vm->dir)) {
		vm->dir[0] = 0;
		return -errno;
	}
	if (o->vmm_uid && chown(vm->dir, o->vmm_uid, o->vmm_gid) < 0)
		return -errno;
	return 0;
}

/* The last line QEMU logged, for the error text (QEMU's own words). */
static void qemu_last_words(struct sb_vm *vm, char *out, size_t size)
{
	char path[PATH_MAX + 16], buf[512];
	ssize_t n = 0;
	int fd;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/qemu.log", vm->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	if (end > 0) {
		off_t at = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;

		n = pread(fd, buf, sizeof(buf) - 1, at);
	}
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	char *line = strrchr(buf, '\n');

	line = line ? line + 1 : buf;
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	snprintf(out, size, "%.*s", (int)(size - 1), line);
}

void vm_fail(struct sb_vm *vm, int r, const char *what)
{
	char words[200] = "";
	struct pollfd p = {.fd = vm->pidfd, .events = POLLIN};

	/* a dead QEMU closes our sockets a moment before its pidfd says so:
	 * when the channel broke, give the exit a moment to show */
	if (vm->pidfd >= 0 && (r == -EPIPE || r == -ECONNRESET))
		poll(&p, 1, 200);
	if (vm->pidfd >= 0 && vmm_exited(vm->pidfd)) {
		qemu_last_words(vm, words, sizeof(words));
		snprintf(vm->error, sizeof(vm->error),
			 "%s: qemu exited%s%s", what, words[0] ? ": " : "",
			 words);
		return;
	}
	if (vm->agent.error[0] && r == -EPROTO)
		snprintf(vm->error, sizeof(vm->error), "%s: agent: %s", what,
			 vm->agent.error);
	else
		snprintf(vm->error, sizeof(vm->error), "%s: %s", what,
			 strerror(-r));
}

/* Give the guest fresh entropy and the clock: clones of one snapshot are
 * otherwise identical, CRNG state included. */
int vm_reseed(struct sb_vm *vm, const struct sb_options *o)
{
	uint8_t entropy[64];
	struct timespec ts;

	if (getrandom(entropy, sizeof(entropy), 0) != sizeof(entropy))
		return -EIO;
	clock_gettime(CLOCK_REALTIME, &ts);
	return al_agent_client_reseed(
		&vm->agent, entropy, sizeof(entropy),
		(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
		vm_call_timeout(vm, o->call_timeout_ms));
}

int vm_call_timeout(const struct sb_vm *vm, uint64_t want)
{
	if (vm->deadline_ms) {
		int left = sb_remaining(vm->deadline_ms);

		if ((uint64_t)left < want)
			return left;
	}
	return want > INT32_MAX ? INT32_MAX : (int)want;
}

/* Start QEMU from argv in its cgroup; returns at once (QEMU initialises
 * on its own: a pre-started VMM does so while a job runs elsewhere). */
int vm_spawn(struct sb_vm *vm, const struct sb_options *o,
	     const struct vmm_argv *a)
{
	struct vmm_creds creds = {o->vmm_uid, o->vmm_gid, o->kvm_gid};
	char path[PATH_MAX + 16], name[64];
	int r;

	/* cgroup names say which process owns the VM: PID-vm-XXXXXX */
	snprintf(name, sizeof(name), "%d-%s", (int)getpid(),
		 strrchr(vm->dir, '/') + 1);
	vm->start_ms = sb_now_ms();
	r = cg_create(&vm->cg, name,
		      ((uint64_t)o->memory_mb + o->vmm_overhead_mb) << 20,
		      o->vmm_cpu_percent * o->vcpus, o->vmm_pids);
	if (r < 0) {
		vm_fail(vm, r, "host cgroup");
		return r;
	}
	snprintf(path, sizeof(path), "%s/qemu.log", vm->dir);
	r = vmm_spawn(a, path, &creds, &vm->cg, &vm->pid, &vm->pidfd);
	if (r < 0)
		vm_fail(vm, r, "start qemu");
	return r;
}

/* Connect QMP and the agent's socket (QEMU may still be starting). */
/* Wait for QEMU to create its QMP socket, or to die trying (then at once,
 * not after the whole timeout). */
static int wait_socket(struct sb_vm *vm, const char *path, uint64_t deadline)
{
	while (access(path, F_OK) < 0) {
		if (!sb_vm_alive(vm))
			return -ECHILD;
		if (sb_remaining(deadline) == 0)
			return -ETIMEDOUT;
		usleep(2000);
	}
	return 0;
}

int vm_connect(struct sb_vm *vm, const struct sb_options *o)
{
	char path[PATH_MAX + 16];
	int r;

	if (o->ttl_ms)
		vm->deadline_ms = sb_now_ms() + o->ttl_ms;
	snprintf(path, sizeof(path), "%s/qmp.sock", vm->dir);
	r = wait_socket(vm, path, sb_now_ms() + QMP_TIMEOUT_MS);
	if (r == 0)
		r = qmp_connect(&vm->qmp, path, QMP_TIMEOUT_MS);
	if (r < 0) {
		vm_fail(vm, r, "connect qmp");
		return r;
	}
	if (vm->cid)
		return 0; /* vsock: connected once the guest runs */
	snprintf(path, sizeof(path), "%s/agent.sock", vm->dir);
	r = sb_connect_unix(path, sb_now_ms() + QMP_TIMEOUT_MS);
	if (r < 0) {
		vm_fail(vm, r, "connect agent socket");
		return r;
	}
	vm->agent_fd = r;
	al_agent_client_init(&vm->agent, vm->agent_fd);
	return 0;
}

/* Connect to the agent's vsock listener, retrying until it listens (a
 * cold boot) or the transport reset after a restore has settled. */
static int vsock_connect(struct sb_vm *vm, uint64_t deadline)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = vm->cid,
		.svm_port = AL_AGENT_VSOCK_PORT,
	};

	for (;;) {
		int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int e;

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			vm->agent_fd = fd;
			al_agent_client_init(&vm->agent, fd);
			return 0;
		}
		e = errno;
		close(fd);
		if (e != ECONNRESET && e != ECONNREFUSED && e != ENODEV &&
		    e != ETIMEDOUT && e != EINTR)
			return -e;
		if (sb_remaining(deadline) == 0 || !sb_vm_alive(vm))
			return -ETIMEDOUT;
		usleep(2000);
	}
}

int vm_start(struct sb_vm *vm, const struct sb_options *o,
	     const struct vmm_argv *a)
{
	int r = vm_spawn(vm, o, a);

	return r < 0 ? r : vm_connect(vm, o);
}

/* Connect the vsock carrier if that is ours (once the guest runs). */
static int vm_channel(struct sb_vm *vm, uint32_t timeout_ms)
{
	int r = 0;

	if (vm->cid && vm->agent_fd < 0) {
		r = vsock_connect(vm, sb_now_ms() + timeout_ms);
		if (r < 0)
			vm_fail(vm, r, "connect agent vsock");
	}
	return r;
}

/* Reseed: the agent is ready for a job. */
int vm_ready(struct sb_vm *vm, const struct sb_options *o,
	     uint32_t timeout_ms)
{
	int r = vm_channel(vm, timeout_ms);

	if (r == 0) {
		r = vm_reseed(vm, o);
		if (r < 0)
			vm_fail(vm, r, "agent reseed");
	}
	if (r == 0)
		vm->ready_ms = sb_now_ms() - vm->start_ms;
	return r;
}

/* hello (the agent booted and speaks our protocol), then reseed. */
int vm_handshake(struct sb_vm *vm, const struct sb_options *o,
		 uint32_t timeout_ms)
{
	struct al_msg_hello h = {0};
	int r = vm_channel(vm, timeout_ms);

	if (r < 0)
		return r;
	r = al_agent_client_hello(&vm->agent, vm_call_timeout(vm, timeout_ms),
				  &h);
	if (r < 0) {
		vm_fail(vm, r, "agent hello");
		return r;
	}
	al_agent_client_hello_release(&h);
	return vm_ready(vm, o, timeout_ms);
}

int vm_boot_accel(const struct sb_options *o, const struct sb_image *img,
		  enum al_accel accel, uint32_t timeout_ms, struct sb_vm **ret)
{
	struct vmm_argv a = {0};
	char qemu[PATH_MAX];
	struct sb_vm *vm = vm_new();
	int r;

	if (!vm)
		return -ENOMEM;
	vm->accel = accel;
	snprintf(vm->template_, sizeof(vm->template_), "%s", img->name);
	r = find_binary(o->qemu, qemu, sizeof(qemu));
	if (r < 0) {
		snprintf(vm->error, sizeof(vm->error), "qemu binary '%.128s': %s",
			 o->qemu, strerror(-r));
		goto fail;
	}
	r = vm_make_dir(o, vm);
	if (r < 0) {
		snprintf(vm->error, sizeof(vm->error), "run dir in %.128s: %s",
			 o->run_dir, strerror(-r));
		goto fail;
	}
	if (sb_carrier_resolve(o) == SB_CARRIER_VSOCK)
		vm->cid = vm_new_cid();
	vm_machine_args(&a, qemu, o, img, accel, vm->dir, NULL, vm->cid);
	r = vm_start(vm, o, &a);
	if (r == 0)
		r = vm_handshake(vm, o, timeout_ms);
fail:
	vmm_argv_release(&a);
	*ret = vm; /* even on failure: the caller reads vm->error, destroys */
	return r;
}

int sb_vm_boot(const struct sb_options *o, const struct sb_image *img,
	       struct sb_vm **ret)
{
	return vm_boot_accel(o, img, sb_accel_resolve(o, img),
			     o->boot_timeout_ms, ret);
}

int sb_vm_setup(struct sb_vm *vm, const struct al_limits *limits)
{
	int r = al_agent_client_setup(&vm->agent, limits,
				      vm_call_timeout(vm, 30000));

	if (r < 0)
		vm_fail(vm, r, "agent setup");
	return r;
}

int sb_vm_put_files(struct sb_vm *vm, const struct al_file *files, size_t n)
{
	int r = al_agent_client_put_files(&vm->agent, files, n,
					  vm_call_timeout(vm, 60000));

	if (r < 0)
		vm_fail(vm, r, "put files");
	return r;
}

int sb_vm_run_step(struct sb_vm *vm, const struct al_step *step,
		   const struct al_limits *limits, uint32_t timeout_ms,
		   struct al_step_result *ret)
{
	struct al_step s = *step; /* shallow: only the timeout differs */
	int r;

	/* the guest enforces the timeout the step carries: the caller's (cut
	 * to the job's wall time left), not the one the job gave the step */
	if (timeout_ms)
		s.timeout_ms = timeout_ms;
	r = al_agent_client_run_step(
		&vm->agent, &s, limits, NULL, NULL,
		vm_call_timeout(vm, (uint64_t)s.timeout_ms + STEP_MARGIN_MS),
		ret);
	if (r < 0)
		vm_fail(vm, r, "run step");
	return r;
}

int sb_vm_get_files(struct sb_vm *vm, char *const *paths, size_t n,
		    uint64_t max_bytes, struct al_msg_files *ret)
{
	int r = al_agent_client_get_files(&vm->agent, paths, n, max_bytes,
					  vm_call_timeout(vm, 60000), ret);

	if (r < 0)
		vm_fail(vm, r, "get files");
	return r;
}

bool sb_vm_alive(struct sb_vm *vm)
{
	return vm->pidfd >= 0 && !vmm_exited(vm->pidfd);
}

/* Remove the run dir: only the files we know QEMU makes there. */
static void remove_dir(const char *dir)
{
	static const char *const names[] = {"qmp.sock", "agent.sock",
					    "console.log", "qemu.log",
					    "state"};
	char path[PATH_MAX + 16];

	if (!dir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

void sb_vm_destroy(struct sb_vm *vm)
{
	if (!vm)
		return;
	vmm_kill(&vm->pid, &vm->pidfd);
	cg_destroy(&vm->cg);
	al_agent_client_release(&vm->agent);
	if (vm->agent_fd >= 0)
		close(vm->agent_fd);
	qmp_close(&vm->qmp);
	remove_dir(vm->dir);
	free(vm);
}
