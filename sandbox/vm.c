/* vm.c: one VM for one job: create, launch, cold boot, agent calls,
 * destroy, and the accessors of the opaque struct sb_vm.
 *
 * Theory of operation. A VM is a QEMU process that owns no file: QMP and
 * the agent's virtio-serial port are socketpairs we made (QEMU gets one
 * end of each), its stdout and stderr a pipe we read non-blocking into a
 * bounded tail (the "qemu exited: LAST LINE" error text), its console a
 * ring in its own memory. The command line comes from machine.c, one
 * builder for templates and clones; vmm.c launches it (struct vmm_spec:
 * fds, cgroup, jail, uid, and the per-VM netns and tap). As root, each
 * VMM is jailed (jail.c) under a uid leased for its life (lease.c); the
 * run dir holds only those leases and the jail's mount point, both root's
 * alone. A VM has no network device unless its job's policy allows
 * egress: then its one NIC is the tap of a network slot (net/net.h) that
 * the VMM enters as its network namespace. After the agent answers hello
 * it gets fresh entropy and the wall clock before any job code runs. Every agent
 * call has a deadline, capped by the VM's hard TTL; a QEMU that dies
 * closes the agent socket, so a call in flight fails at once rather than
 * at its deadline.
 *
 * Layout of sandbox/, each arrow a call; none goes back up, so no two
 * files call each other:
 *
 *   snapshot.c  a clone saved after a setup job; opens its base
 *        |      through template.c, loads like clone.c (vm.c's steps)
 *        v
 *   clone.c     restores a template clone; the pre-started VMM pool
 *   template.c  the template cache: key, lock, build (cold boot + save);
 *               also image.c (the manifest) and machine.c (argv in the key)
 *        |      both through vm_internal.h, neither calls the other
 *        v
 *   vm.c        this file: a VM's steps and the public sb_vm_* calls
 *        +--> accel.c    KVM or TCG; the probe boot is vm.c's callback
 *        +--> machine.c  the QEMU command line, pure --> vmm.c (argv)
 *        +--> vmm.c      launch (struct vmm_spec), kill, reap --> cgroup.c,
 *        |               jail.c (namespaces, pivot_root, the drop)
 *        +--> lease.c    the VMM's uid
 *        +--> qmp.c, agent_client.c --> util.c (the deadline read)
 *        +--> cgroup.c   the VMM's host cgroup
 *        +--> net/       a networked VM's slot, through net.h only
 *   options.c   struct sb_options and its defaults, below all of these
 *
 * Callers: workers (through sandbox.h), tests/vm, tools/bench/bench_vm.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "lease.h"
#include "net.h"
#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"
#include "vmm.h"

#define QMP_TIMEOUT_MS 5000 /* connect, and each QMP command */
#define STEP_MARGIN_MS 5000 /* channel slack over a step's own timeout */
#define JAIL_PATH (PATH_MAX + 80) /* a path in a dir of PATH_MAX */

/* A guest CID no other live VM of ours has: the pid in the high bits, a
 * counter in the low ones (CIDs 0-2 are reserved). */
static uint32_t vm_new_cid(void)
{
	static uint32_t counter;

	return 3u + (((uint32_t)getpid() & 0x3fffffu) << 10 |
		     (counter++ & 0x3ffu));
}

static struct sb_vm *vm_new(void)
{
	struct sb_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return NULL;
	vm->pid = -1;
	vm->pidfd = -1;
	vm->agent_fd = -1;
	vm->qmp.fd = -1;
	vm->qmp_end = -1;
	vm->serial_end = -1;
	vm->log_fd = -1;
	vm->lease_fd = -1;
	vm->save_fd = -1;
	return vm;
}

/* Read what QEMU wrote since last time (non-blocking, at most 64 KiB a
 * call: it cannot keep us here), keeping the last bytes. */
static void drain_log(struct sb_vm *vm)
{
	char buf[4096];
	const size_t cap = sizeof(vm->log_tail) - 1;

	for (int i = 0; vm->log_fd >= 0 && i < 16; i++) {
		ssize_t n = read(vm->log_fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		if ((size_t)n >= cap) {
			memcpy(vm->log_tail, buf + n - cap, cap);
			vm->log_len = cap;
		} else {
			size_t keep = vm->log_len + (size_t)n > cap
					      ? cap - (size_t)n
					      : vm->log_len;

			memmove(vm->log_tail, vm->log_tail + vm->log_len - keep,
				keep);
			memcpy(vm->log_tail + keep, buf, (size_t)n);
			vm->log_len = keep + (size_t)n;
		}
	}
	vm->log_tail[vm->log_len] = 0;
}

const char *sb__vm_log_tail(struct sb_vm *vm)
{
	drain_log(vm);
	return vm->log_tail;
}

/* The last line QEMU logged, for the error text (QEMU's own words). */
static void qemu_last_words(struct sb_vm *vm, char *out, size_t size)
{
	char buf[sizeof(vm->log_tail)];
	size_t n;
	char *line;

	snprintf(buf, sizeof(buf), "%s", sb__vm_log_tail(vm));
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	snprintf(out, size, "%.*s", (int)(size - 1), line);
}

void sb__vm_fail(struct sb_vm *vm, int r, const char *what)
{
	char words[200] = "";
	struct pollfd p = {.fd = vm->pidfd, .events = POLLIN};

	/* a dead QEMU closes our sockets a moment before its pidfd says so:
	 * when the channel broke, give the exit a moment to show */
	if (vm->pidfd >= 0 && (r == -EPIPE || r == -ECONNRESET))
		poll(&p, 1, 200);
	if (vm->pidfd >= 0 && sb__vmm_exited(vm->pidfd)) {
		uint64_t kills = sb__cg_oom_kills(&vm->cg);

		if (kills) { /* ours: the cap did not cover the VM */
			snprintf(vm->error, sizeof(vm->error),
				 "%s: qemu killed by its host cgroup's memory "
				 "cap (oom_kill %llu): raise "
				 "vmm_memory_overhead_mb",
				 what, (unsigned long long)kills);
			return;
		}
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

/* A call's timeout: `want`, cut to what is left of the VM's TTL. */
static int vm_call_timeout(const struct sb_vm *vm, uint64_t want)
{
	int left = al_deadline_poll_ms(vm->deadline); /* -1: no TTL */

	if (left >= 0 && (uint64_t)left < want)
		return left;
	return want > INT32_MAX ? INT32_MAX : (int)want;
}

/* Fresh entropy and the host's wall clock (ns) for a reseed. */
static int reseed_fill(uint8_t entropy[64], uint64_t *time_ns)
{
	struct timespec ts;

	if (getrandom(entropy, 64, 0) != 64)
		return -EIO;
	clock_gettime(CLOCK_REALTIME, &ts);
	*time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

/* Give the guest fresh entropy and the clock: clones of one snapshot are
 * otherwise identical, CRNG state included. */
int sb__vm_reseed(struct sb_vm *vm, const struct sb_options *o)
{
	uint8_t entropy[64];
	uint64_t ns;
	int r = reseed_fill(entropy, &ns);

	if (r == 0)
		r = sb__agent_client_reseed(
		    &vm->agent, entropy, sizeof(entropy), ns,
		    vm_call_timeout(vm, o->call_timeout_ms));
	explicit_bzero(entropy, sizeof(entropy));
	return r;
}

int sb__vm_setup_reseed(struct sb_vm *vm, const struct al_limits *limits,
			uint32_t timeout_ms)
{
	uint8_t entropy[64];
	bool done = false;
	uint64_t ns;
	int r = reseed_fill(entropy, &ns);

	if (r == 0)
		r = sb__agent_client_setup_reseed(
		    &vm->agent, limits, entropy, sizeof(entropy), ns,
		    vm_call_timeout(vm, timeout_ms), &done);
	/* a v1 agent took the limits only: reseed on its own, still before
	 * any step */
	if (r == 0 && !done && reseed_fill(entropy, &ns) == 0)
		r = sb__agent_client_reseed(&vm->agent, entropy,
					    sizeof(entropy), ns,
					    vm_call_timeout(vm, timeout_ms));
	explicit_bzero(entropy, sizeof(entropy));
	if (r == 0) {
		vm->set_up = true;
		vm->limits = *limits;
	}
	return r;
}

/* A fresh vsock token in *token and a sealed memfd holding it, for QEMU's
 * fw_cfg (machine.c): per VM, so a clone's differs from its template's
 * and its siblings'. Only QEMU gets the fd; the agent reads the file
 * through fw_cfg and asks us to prove we know it (agent/serve.c). */
static int vm_token_fd(uint8_t token[AL_AUTH_TOKEN_LEN])
{
	if (getrandom(token, AL_AUTH_TOKEN_LEN, 0) != AL_AUTH_TOKEN_LEN)
		return -EIO;
	return sb__sealed_memfd("airlock-token", token, AL_AUTH_TOKEN_LEN,
				false);
}

/* The jail's side of a launch: the run dir (root's alone), its mount
 * point, a uid lease, the files to bind in. */
static int vm_jail(struct sb_vm *vm, const struct sb_options *o,
		   const struct sb_image *img, const struct vmm_argv *a,
		   struct vmm_spec *spec, char (*paths)[JAIL_PATH])
{
	struct vmm_jail *j = &spec->jail;
	int r;

	/* ours alone: sb__private_dir refuses one others may write */
	r = sb__private_dir(o->run_dir, 0700);
	if (r < 0)
		return r;
	if (snprintf(paths[0], JAIL_PATH, "%s/uids", o->run_dir) >= JAIL_PATH ||
	    snprintf(paths[1], JAIL_PATH, "%s/vmlinuz", img->dir) >= JAIL_PATH ||
	    snprintf(paths[2], JAIL_PATH, "%s/%s", img->dir, img->initrd) >=
		    JAIL_PATH ||
	    snprintf(paths[3], JAIL_PATH, "%s/rootfs.ext4", img->dir) >=
		    JAIL_PATH)
		return -ENAMETOOLONG;
	r = sb__lease_uid(paths[0], o->vmm_uid_base, o->vmm_uid_count, &vm->uid,
			  &vm->lease_fd);
	if (r < 0)
		return r;
	snprintf(paths[0], JAIL_PATH, "%s/jail", o->run_dir);
	if (mkdir(paths[0], 0700) < 0 && errno != EEXIST)
		return -errno;
	j->root = paths[0];
	for (j->n_files = 0; j->n_files < 3; j->n_files++)
		j->files[j->n_files] = paths[j->n_files + 1];
	if (strncmp(a->v[0], "/usr/", 5) != 0)
		j->files[j->n_files++] = a->v[0];
	j->kvm = vm->accel == AL_ACCEL_KVM;
	spec->creds = (struct vmm_creds){vm->uid, vm->uid,
					 j->kvm ? o->kvm_gid : 0};
	spec->fds[VMM_FD_LEASE - 3] = vm->lease_fd;
	return 0;
}

/* Our ends of QMP and the agent port, QEMU's in spec (with the
 * vhost-vsock fd and the vsock token on that carrier), and the log pipe
 * (its write end non-blocking too: a chatty QEMU loses words, it never
 * stalls). */
static int vm_channels(struct sb_vm *vm, struct vmm_spec *spec, int *theirs)
{
	int qmp[2], ser[2], log[2], vsock;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0)
		return -errno;
	vm->qmp_end = qmp[0];
	theirs[0] = qmp[1];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ser) < 0)
		return -errno;
	vm->serial_end = ser[0];
	theirs[1] = ser[1];
	if (pipe2(log, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	vm->log_fd = log[0];
	theirs[2] = log[1];
	if (vm->cid) {
		vsock = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
		if (vsock < 0)
			return -errno;
		theirs[3] = vsock;
		spec->fds[VMM_FD_VSOCK - 3] = vsock;
		theirs[4] = vm_token_fd(vm->token);
		if (theirs[4] < 0)
			return theirs[4];
		spec->fds[VMM_FD_TOKEN - 3] = theirs[4];
	}
	spec->fds[VMM_FD_QMP - 3] = qmp[1];
	spec->fds[VMM_FD_AGENT - 3] = ser[1];
	spec->log_fd = log[1];
	return 0;
}

/* The VMM cgroup's memory cap, bytes: all a guest can make QEMU use.
 * Guest RAM (a clone's written pages are its own, copy-on-write), the TCG
 * translation buffer (filled by a guest that runs much new code), and
 * QEMU's own (heap, softmmu TLBs, device state). A guest that fills all
 * of it meets its own OOM killer (ML), never this cap (docs/ci.md). */
uint64_t sb_vmm_memory_cap(const struct sb_options *o, enum al_accel accel)
{
	uint64_t mb = (uint64_t)o->memory_mb + o->vmm_overhead_mb;

	if (accel != AL_ACCEL_KVM)
		mb += o->tcg_tb_mb ? o->tcg_tb_mb : 1024; /* QEMU's default */
	return mb << 20;
}

/* The host cgroup; a jail without one is refused. */
static int vm_cgroup(struct sb_vm *vm, const struct sb_options *o)
{
	char name[64];
	int r;

	/* cgroup names say which process owns the VM: PID-vm-N */
	snprintf(name, sizeof(name), "%d-%s", (int)getpid(), vm->name);
	r = sb__cg_create(&vm->cg, name, sb_vmm_memory_cap(o, vm->accel),
			  o->vmm_cpu_percent * o->vcpus, o->vmm_pids);
	if (r == 0 && o->jail && vm->cg.n == 0) { /* fail closed */
		snprintf(vm->error, sizeof(vm->error),
			 "host cgroup: none can be made, and a jailed VMM "
			 "needs one");
		return -ENOTSUP;
	}
	if (r < 0)
		sb__vm_fail(vm, r, "host cgroup");
	return r;
}

int sb__vm_launch_argv(struct sb_vm *vm, const struct sb_options *o,
		       const struct sb_image *img,
		       const struct machine_mem *mem, int kernel_fd,
		       const struct vmm_argv *a)
{
	char paths[4][JAIL_PATH];
	struct vmm_spec spec = {
		.argv = a,
		.fds = {-1, -1, mem->fd, -1, -1, -1, -1, -1, kernel_fd},
		.net_ns = vm->net ? sb_net_ns(vm->net) : -1,
		.cg = &vm->cg,
		/* a template build's QEMU writes its state to a file */
		.jail.fsize = mem->share ? ((uint64_t)o->memory_mb + 256) << 20
					 : 1u << 20,
	};
	int theirs[5] = {-1, -1, -1, -1, -1};
	int r;

	vm->start_ms = al_now_ms();
	if (a->err)
		return a->err;
	if (vm->net)
		spec.fds[VMM_FD_TAP - 3] = sb_net_tap(vm->net);
	r = vm_cgroup(vm, o);
	if (r < 0)
		return r;
	r = vm_channels(vm, &spec, theirs);
	if (r == 0 && o->jail) {
		r = vm_jail(vm, o, img, a, &spec, paths);
		if (r < 0)
			sb__vm_fail(vm, r, "vmm jail");
	}
	if (r == 0) {
		r = sb__vmm_spawn(&spec, &vm->pid, &vm->pidfd);
		if (r < 0)
			sb__vm_fail(vm, r, "start qemu");
	} else if (!vm->error[0]) {
		sb__vm_fail(vm, r, "vmm channels");
	}
	for (int i = 0; i < 5; i++)
		if (theirs[i] >= 0)
			close(theirs[i]);
	return r;
}

int sb__vm_connect(struct sb_vm *vm, const struct sb_options *o)
{
	int r;

	if (o->ttl_ms)
		vm->deadline = al_deadline_in(o->ttl_ms);
	/* QEMU greets once it has initialised (a pre-started VMM: long
	 * ago); a QEMU that died first closes the pair: EOF at once */
	r = sb__qmp_open_fd(&vm->qmp, vm->qmp_end, QMP_TIMEOUT_MS);
	vm->qmp_end = -1;
	if (r < 0) {
		sb__vm_fail(vm, r == 0 ? -EPIPE : r, "connect qmp");
		return r;
	}
	if (vm->cid)
		return 0; /* vsock: connected once the guest runs */
	vm->agent_fd = vm->serial_end;
	vm->serial_end = -1;
	sb__agent_client_init(&vm->agent, vm->agent_fd);
	return 0;
}

/* Connect to the agent's vsock listener and prove we are its host (the
 * token), retrying until it listens (a cold boot) or the transport reset
 * after a restore has settled. */
static int vsock_connect(struct sb_vm *vm, struct al_deadline d)
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
			sb__agent_client_init(&vm->agent, fd);
			e = al_deadline_poll_ms(d);
			e = -sb__agent_client_auth(&vm->agent, vm->token,
						   e == 0 ? 1 : e);
			if (e == 0) {
				vm->agent_fd = fd;
				return 0;
			}
			/* refused: the template's dead connection may still
			 * look alive to the agent right after a restore */
			sb__agent_client_release(&vm->agent);
			e = e == EPIPE ? ECONNRESET : e;
		} else {
			e = errno;
		}
		close(fd);
		if (e != ECONNRESET && e != ECONNREFUSED && e != ENODEV &&
		    e != ETIMEDOUT && e != EINTR)
			return -e;
		if (al_deadline_passed(d) || !sb_vm_alive(vm))
			return -ETIMEDOUT;
		usleep(2000);
	}
}

/* Connect the vsock carrier if that is ours (once the guest runs). */
static int vm_channel(struct sb_vm *vm, uint32_t timeout_ms)
{
	int r = 0;

	if (vm->cid && vm->agent_fd < 0) {
		r = vsock_connect(vm, al_deadline_in(timeout_ms));
		if (r < 0)
			sb__vm_fail(vm, r, "connect agent vsock");
	}
	return r;
}

/* Reseed: the agent is ready for a job. */
int sb__vm_ready(struct sb_vm *vm, const struct sb_options *o,
		 uint32_t timeout_ms)
{
	int r = vm_channel(vm, timeout_ms);

	if (r == 0) {
		r = sb__vm_reseed(vm, o);
		if (r < 0)
			sb__vm_fail(vm, r, "agent reseed");
	}
	if (r == 0)
		vm->ready_ms = al_now_ms() - vm->start_ms;
	return r;
}

/* hello (the agent booted and speaks our protocol), then reseed. */
int sb__vm_handshake(struct sb_vm *vm, const struct sb_options *o,
		     uint32_t timeout_ms)
{
	struct al_msg_hello h = {0};
	int r = vm_channel(vm, timeout_ms);

	if (r < 0)
		return r;
	r = sb__agent_client_hello(&vm->agent, vm_call_timeout(vm, timeout_ms),
				   &h);
	if (r < 0) {
		sb__vm_fail(vm, r, "agent hello");
		return r;
	}
	sb__agent_client_hello_release(&h);
	return sb__vm_ready(vm, o, timeout_ms);
}

int sb__vm_create(const struct sb_options *o, const char *name,
		  enum al_accel accel, struct sb_vm **ret)
{
	static unsigned vm_serial;
	struct sb_vm *vm = vm_new();

	*ret = vm;
	if (!vm)
		return -ENOMEM;
	vm->accel = accel;
	snprintf(vm->template_, sizeof(vm->template_), "%s", name);
	snprintf(vm->name, sizeof(vm->name), "vm-%06x", vm_serial++ & 0xffffffu);
	if (sb_carrier_resolve(o) == SB_CARRIER_VSOCK)
		vm->cid = vm_new_cid();
	return 0;
}

/* A clone's stub kernel (machine.c says why): the setup header of the
 * image's bzImage and one sector after it, which QEMU's loader takes as
 * a kernel, in a sealed memfd. -1 when vmlinuz is no bzImage or the stub
 * cannot be made: the clone then gets the real kernel, as before. */
static int kernel_stub(const struct sb_image *img)
{
	const size_t max = 257 * 512; /* 255 setup sectors, boot, one more */
	char path[PATH_MAX];
	size_t setup, keep;
	uint8_t *buf;
	ssize_t n;
	int fd, mfd = -1;

	if (snprintf(path, sizeof(path), "%s/vmlinuz", img->dir) >=
		(int)sizeof(path) ||
	    !(buf = malloc(max)))
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, buf, max, 0);
	if (fd >= 0)
		close(fd);
	/* "HdrS" at 0x202; setup sectors at 0x1f1 (0 means 4) */
	if (n < 0x230 || memcmp(buf + 0x202, "HdrS", 4) != 0)
		goto out;
	setup = ((size_t)(buf[0x1f1] ? buf[0x1f1] : 4) + 1) * 512;
	keep = setup + 512;
	if (keep > (size_t)n)
		goto out;
	mfd = sb__sealed_memfd("airlock-kernel-stub", buf, keep, false);
	if (mfd < 0)
		mfd = -1;
out:
	free(buf);
	return mfd;
}

int sb__vm_launch(struct sb_vm *vm, const struct sb_options *o,
		  const struct sb_image *img, const struct machine_mem *mem)
{
	struct machine_spec m = {
		.accel = vm->accel, .mem = *mem, .cid = vm->cid,
		.net = vm->net != NULL, .tb_mb = o->tcg_tb_mb,
	};
	struct vmm_argv a = {0};
	char qemu[PATH_MAX];
	int kfd = -1, r = sb__find_binary(o->qemu, qemu, sizeof(qemu));

	if (r < 0) {
		snprintf(vm->error, sizeof(vm->error),
			 "qemu binary '%.128s': %s", o->qemu, strerror(-r));
		return r;
	}
	m.qemu = qemu;
	if (mem->incoming) /* a clone: it never boots */
		kfd = kernel_stub(img);
	m.kernel_stub = kfd >= 0;
	sb__machine_argv(&a, o, img, &m);
	r = sb__vm_launch_argv(vm, o, img, mem, kfd, &a);
	sb__vmm_argv_release(&a);
	if (kfd >= 0)
		close(kfd);
	return r;
}

/* Cold boot under `accel`: *ret is set even on failure (read its error,
 * destroy it). */
static int vm_boot(const struct sb_options *o, const struct sb_image *img,
		   enum al_accel accel, uint32_t timeout_ms, struct sb_net *net,
		   struct sb_vm **ret)
{
	int r = sb__vm_create(o, img->name, accel, ret);

	if (r < 0)
		sb_net_close(net);
	else
		(*ret)->net = net;
	if (r == 0)
		r = sb__vm_launch(*ret, o, img,
				  &(struct machine_mem){.fd = -1});
	if (r == 0)
		r = sb__vm_connect(*ret, o);
	if (r == 0)
		r = sb__vm_handshake(*ret, o, timeout_ms);
	return r;
}

/* accel.c's probe: does the image boot under KVM in time? */
static bool kvm_probe(const struct sb_options *o, const struct sb_image *img,
		      uint32_t timeout_ms)
{
	struct sb_vm *vm = NULL;
	bool ok = vm_boot(o, img, AL_ACCEL_KVM, timeout_ms, NULL, &vm) == 0;

	sb_vm_destroy(vm);
	return ok;
}

enum al_accel sb_accel_resolve(const struct sb_options *o,
			       const struct sb_image *img)
{
	return sb__accel_decide(o, img, kvm_probe);
}

int sb_vm_boot(const struct sb_options *o, const struct sb_image *img,
	       struct sb_vm **ret)
{
	return vm_boot(o, img, sb_accel_resolve(o, img), o->boot_timeout_ms,
		       NULL, ret);
}

int sb_vm_boot_net(const struct sb_options *o, const struct sb_image *img,
		   struct sb_net *net, struct sb_vm **ret)
{
	return vm_boot(o, img, sb_accel_resolve(o, img), o->boot_timeout_ms,
		       net, ret);
}

int sb__vm_qmp(struct sb_vm *vm, const char *cmd, json_t *args, json_t **ret)
{
	return sb__qmp_execute(&vm->qmp, cmd, args, QMP_TIMEOUT_MS, ret,
			       vm->error, sizeof(vm->error));
}

int sb__vm_qmp_ignore_shared(struct sb_vm *vm)
{
	return sb__vm_qmp(vm, "migrate-set-capabilities",
			  json_pack("{s:[{s:s,s:b}]}", "capabilities",
				    "capability", "x-ignore-shared", "state",
				    1),
			  NULL);
}

int sb__vm_qmp_pass_state(struct sb_vm *vm, int fd)
{
	return sb__qmp_execute_fd(&vm->qmp, "getfd",
				  json_pack("{s:s}", "fdname", "state"), fd,
				  QMP_TIMEOUT_MS, vm->error, sizeof(vm->error));
}

int sb_vm_setup(struct sb_vm *vm, const struct al_limits *limits)
{
	int r;

	/* a warm clone's hand-off (sb_pool_take) sent these already; once */
	if (vm->set_up && !memcmp(&vm->limits, limits, sizeof(*limits))) {
		vm->set_up = false;
		return 0;
	}
	vm->set_up = false;
	r = sb__agent_client_setup(&vm->agent, limits,
				   vm_call_timeout(vm, 30000));

	if (r < 0)
		sb__vm_fail(vm, r, "agent setup");
	return r;
}

int sb_vm_put_files(struct sb_vm *vm, const struct al_file *files, size_t n)
{
	int r = sb__agent_client_put_files(&vm->agent, files, n,
					   vm_call_timeout(vm, 60000));

	if (r < 0)
		sb__vm_fail(vm, r, "put files");
	return r;
}

int sb__vm_run_warmup(struct sb_vm *vm, const struct al_step *step,
		      const struct al_limits *limits, uint32_t timeout_ms,
		      struct al_step_result *ret)
{
	struct al_step s = *step;
	int r;

	s.timeout_ms = timeout_ms;
	r = sb__agent_client_run_warmup(
	    &vm->agent, &s, limits,
	    vm_call_timeout(vm, (uint64_t)timeout_ms + STEP_MARGIN_MS), ret);
	if (r < 0)
		sb__vm_fail(vm, r, "run warm-up");
	return r;
}

int sb__vm_zygote_warm(struct sb_vm *vm, uint32_t timeout_ms)
{
	int r = sb__agent_client_zygote_warm(&vm->agent,
					     vm_call_timeout(vm, timeout_ms));

	if (r < 0 && r != -EPROTO)
		sb__vm_fail(vm, r, "zygote warm-up");
	return r;
}

int sb_vm_run_step(struct sb_vm *vm, const struct al_step *step,
		   const struct al_limits *limits, uint32_t timeout_ms,
		   struct al_step_result *ret)
{
	return sb_vm_run_step_out(vm, step, limits, timeout_ms, NULL, NULL,
				  ret);
}

int sb_vm_run_step_out(struct sb_vm *vm, const struct al_step *step,
		       const struct al_limits *limits, uint32_t timeout_ms,
		       sb_out_fn out, void *opaque, struct al_step_result *ret)
{
	return sb_vm_run_step_ctl(vm, step, limits, timeout_ms, out, opaque,
				  NULL, NULL, false, ret);
}

bool sb_vm_can_signal(struct sb_vm *vm)
{
	struct al_msg_hello h = {0};
	int r;

	if (!vm->agent.v) {
		r = sb__agent_client_hello(&vm->agent,
					   vm_call_timeout(vm, 10000), &h);
		if (r < 0) {
			sb__vm_fail(vm, r, "agent hello");
			return false;
		}
		sb__agent_client_hello_release(&h);
	}
	return vm->agent.v >= AL_PROTO_SIGNAL_V;
}

int sb_vm_run_step_ctl(struct sb_vm *vm, const struct al_step *step,
		       const struct al_limits *limits, uint32_t timeout_ms,
		       sb_out_fn out, void *opaque, sb_tick_fn tick,
		       void *tick_opaque, bool background,
		       struct al_step_result *ret)
{
	struct al_step s = *step; /* shallow: only the timeout differs */
	const struct sb__step_ctl ctl = {.out = out,
					 .opaque = opaque,
					 .tick = tick,
					 .tick_opaque = tick_opaque,
					 .background = background};
	int r;

	/* the guest enforces the timeout the step carries: the caller's (cut
	 * to the job's wall time left), not the one the job gave the step */
	if (timeout_ms)
		s.timeout_ms = timeout_ms;
	r = sb__agent_client_run_step_ctl(
	    &vm->agent, &s, limits, &ctl,
	    vm_call_timeout(vm, (uint64_t)s.timeout_ms + STEP_MARGIN_MS), ret);
	if (r < 0)
		sb__vm_fail(vm, r, "run step");
	return r;
}

int sb_vm_get_files(struct sb_vm *vm, char *const *paths, size_t n,
		    uint64_t max_bytes, struct al_msg_files *ret)
{
	int r = sb__agent_client_get_files(&vm->agent, paths, n, max_bytes,
					   vm_call_timeout(vm, 60000), ret);

	if (r < 0)
		sb__vm_fail(vm, r, "get files");
	return r;
}

bool sb_vm_alive(struct sb_vm *vm)
{
	return vm->pidfd >= 0 && !sb__vmm_exited(vm->pidfd);
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

void sb_vm_destroy(struct sb_vm *vm)
{
	if (!vm)
		return;
	sb__vmm_kill(&vm->pid, &vm->pidfd);
	sb__cg_destroy(&vm->cg);
	sb__agent_client_release(&vm->agent);
	if (vm->agent_fd >= 0)
		close(vm->agent_fd);
	sb__qmp_close(&vm->qmp);
	close_fd(vm->qmp_end);
	close_fd(vm->serial_end);
	close_fd(vm->log_fd);
	/* QEMU reaped: its namespace goes with the slot */
	sb_net_close(vm->net);
	/* last, QEMU reaped: the uid may go to the next VMM */
	close_fd(vm->lease_fd);
	close_fd(vm->save_fd);
	free(vm);
}

void sb_files_release(struct al_msg_files *f)
{
	sb__agent_client_files_release(f);
}

const char *sb_vm_error(const struct sb_vm *vm)
{
	return vm ? vm->error : "";
}

enum al_accel sb_vm_accel(const struct sb_vm *vm)
{
	return vm->accel;
}

bool sb_vm_restored(const struct sb_vm *vm)
{
	return vm->restored;
}

bool sb_vm_warm(const struct sb_vm *vm)
{
	return vm && vm->warm;
}

uint64_t sb_vm_ready_ms(const struct sb_vm *vm)
{
	return vm->ready_ms;
}

int64_t sb_vm_load_rt_us(const struct sb_vm *vm)
{
	return vm->load_rt_us;
}

pid_t sb_vm_pid(const struct sb_vm *vm)
{
	return vm->pid;
}

struct sb_net *sb_vm_net(struct sb_vm *vm)
{
	return vm ? vm->net : NULL;
}

struct sb_net *sb_vm_detach_net(struct sb_vm *vm)
{
	struct sb_net *n = vm ? vm->net : NULL;

	if (vm)
		vm->net = NULL;
	return n;
}

void sb_vm_set_deadline(struct sb_vm *vm, struct al_deadline d)
{
	vm->deadline = d;
}
