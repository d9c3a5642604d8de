/* vm.c: one VM for one job: create, launch, cold boot, agent calls,
 * destroy, and the accessors of the opaque struct sb_vm.
 *
 * Theory of operation. A VM is a QEMU process with a per-VM run dir
 * holding its QMP socket, the agent's virtio-serial socket (QEMU is the
 * server; we connect) and QEMU's own log. The command line comes from
 * machine.c, one builder for templates and clones; vmm.c launches it
 * (struct vmm_spec: cgroup, user, and later the per-VM netns and tap). No
 * network device exists at all yet. After the agent answers hello it gets
 * fresh entropy and the wall clock before any job code runs. Every agent
 * call has a deadline, capped by the VM's hard TTL; a QEMU that dies
 * closes the agent socket, so a call in flight fails at once rather than
 * at its deadline.
 *
 * Layout of sandbox/, each arrow a call; none goes back up, so no two
 * files call each other:
 *
 *   clone.c     restores a template clone; the pre-started VMM pool
 *   template.c  the template cache: key, lock, build (cold boot + save);
 *               also image.c (the manifest) and machine.c (argv in the key)
 *        |      both through vm_internal.h, neither calls the other
 *        v
 *   vm.c        this file: a VM's steps and the public sb_vm_* calls
 *        +--> accel.c    KVM or TCG; the probe boot is vm.c's callback
 *        +--> machine.c  the QEMU command line, pure --> vmm.c (argv)
 *        +--> vmm.c      launch (struct vmm_spec), kill, reap --> cgroup.c
 *        +--> qmp.c, agent_client.c --> util.c (the deadline read)
 *        +--> cgroup.c   the VMM's host cgroup
 *
 * Callers: workers (through sandbox.h), tests/vm, tools/bench_vm.c.
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
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "sandbox.h"
#include "util.h"
#include "vm_internal.h"
#include "vmm.h"

#define QMP_TIMEOUT_MS 5000 /* connect, and each QMP command */
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
	return vm;
}

static int vm_make_dir(const struct sb_options *o, struct sb_vm *vm)
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

/* A call's timeout: `want`, cut to what is left of the VM's TTL. */
static int vm_call_timeout(const struct sb_vm *vm, uint64_t want)
{
	int left = al_deadline_poll_ms(vm->deadline); /* -1: no TTL */

	if (left >= 0 && (uint64_t)left < want)
		return left;
	return want > INT32_MAX ? INT32_MAX : (int)want;
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


/* A fresh vsock token in *token and a sealed memfd holding it, for QEMU's
 * fw_cfg (machine.c): per VM, so a clone's differs from its template's
 * and its siblings'. Only QEMU gets the fd; the agent reads the file
 * through fw_cfg and asks us to prove we know it (agent/serve.c). */
static int vm_token_fd(uint8_t token[AL_AUTH_TOKEN_LEN])
{
	int fd, r = 0;

	if (getrandom(token, AL_AUTH_TOKEN_LEN, 0) != AL_AUTH_TOKEN_LEN)
		return -EIO;
	fd = memfd_create("airlock-token", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (write(fd, token, AL_AUTH_TOKEN_LEN) != AL_AUTH_TOKEN_LEN ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
				       F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		r = errno ? -errno : -EIO;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Start QEMU from argv in its cgroup; returns at once. */
static int vm_spawn(struct sb_vm *vm, const struct sb_options *o,
		    const struct vmm_argv *a)
{
	char path[PATH_MAX + 16], name[64];
	struct vmm_spec spec = {
		.argv = a,
		.log = path,
		.creds = {o->vmm_uid, o->vmm_gid, o->kvm_gid},
		.cg = &vm->cg,
	};
	int r, token_fd = -1;

	/* cgroup names say which process owns the VM: PID-vm-XXXXXX */
	snprintf(name, sizeof(name), "%d-%s", (int)getpid(),
		 strrchr(vm->dir, '/') + 1);
	vm->start_ms = al_now_ms();
	r = cg_create(&vm->cg, name,
		      ((uint64_t)o->memory_mb + o->vmm_overhead_mb) << 20,
		      o->vmm_cpu_percent * o->vcpus, o->vmm_pids);
	if (r < 0) {
		vm_fail(vm, r, "host cgroup");
		return r;
	}
	snprintf(path, sizeof(path), "%s/qemu.log", vm->dir);
	if (vm->cid) {
		token_fd = vm_token_fd(vm->token);
		if (token_fd < 0) {
			vm_fail(vm, token_fd, "vsock token");
			return token_fd;
		}
		spec.token_fd = token_fd;
	}
	r = vmm_spawn(&spec, &vm->pid, &vm->pidfd);
	if (token_fd >= 0)
		close(token_fd);
	if (r < 0)
		vm_fail(vm, r, "start qemu");
	return r;
}

/* Wait for QEMU to create its QMP socket, or to die trying (then at once,
 * not after the whole timeout). */
static int wait_socket(struct sb_vm *vm, const char *path,
		       struct al_deadline d)
{
	while (access(path, F_OK) < 0) {
		if (!sb_vm_alive(vm))
			return -ECHILD;
		if (al_deadline_passed(d))
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
		vm->deadline = al_deadline_in(o->ttl_ms);
	snprintf(path, sizeof(path), "%s/qmp.sock", vm->dir);
	r = wait_socket(vm, path, al_deadline_in(QMP_TIMEOUT_MS));
	if (r == 0)
		r = qmp_connect(&vm->qmp, path, QMP_TIMEOUT_MS);
	if (r < 0) {
		vm_fail(vm, r, "connect qmp");
		return r;
	}
	if (vm->cid)
		return 0; /* vsock: connected once the guest runs */
	snprintf(path, sizeof(path), "%s/agent.sock", vm->dir);
	r = sb_connect_unix(path, al_deadline_in(QMP_TIMEOUT_MS));
	if (r < 0) {
		vm_fail(vm, r, "connect agent socket");
		return r;
	}
	vm->agent_fd = r;
	al_agent_client_init(&vm->agent, vm->agent_fd);
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
			al_agent_client_init(&vm->agent, fd);
			e = al_deadline_poll_ms(d);
			e = -al_agent_client_auth(&vm->agent, vm->token,
						  e == 0 ? 1 : e);
			if (e == 0) {
				vm->agent_fd = fd;
				return 0;
			}
			/* refused: the template's dead connection may still
			 * look alive to the agent right after a restore */
			al_agent_client_release(&vm->agent);
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
		vm->ready_ms = al_now_ms() - vm->start_ms;
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

int vm_create(const struct sb_options *o, const char *name,
	      enum al_accel accel, struct sb_vm **ret)
{
	struct sb_vm *vm = vm_new();
	int r;

	*ret = vm;
	if (!vm)
		return -ENOMEM;
	vm->accel = accel;
	snprintf(vm->template_, sizeof(vm->template_), "%s", name);
	r = vm_make_dir(o, vm);
	if (r < 0) {
		snprintf(vm->error, sizeof(vm->error), "run dir in %.128s: %s",
			 o->run_dir, strerror(-r));
		return r;
	}
	if (sb_carrier_resolve(o) == SB_CARRIER_VSOCK)
		vm->cid = vm_new_cid();
	return 0;
}

int vm_launch(struct sb_vm *vm, const struct sb_options *o,
	      const struct sb_image *img, const struct machine_mem *mem)
{
	struct machine_spec m = {
		.accel = vm->accel, .dir = vm->dir, .mem = *mem, .cid = vm->cid,
	};
	struct vmm_argv a = {0};
	char qemu[PATH_MAX];
	int r = sb_find_binary(o->qemu, qemu, sizeof(qemu));

	if (r < 0) {
		snprintf(vm->error, sizeof(vm->error),
			 "qemu binary '%.128s': %s", o->qemu, strerror(-r));
		return r;
	}
	m.qemu = qemu;
	machine_argv(&a, o, img, &m);
	r = vm_spawn(vm, o, &a);
	vmm_argv_release(&a);
	return r;
}

/* Cold boot under `accel`: *ret is set even on failure (read its error,
 * destroy it). */
static int vm_boot(const struct sb_options *o, const struct sb_image *img,
		   enum al_accel accel, uint32_t timeout_ms,
		   struct sb_vm **ret)
{
	int r = vm_create(o, img->name, accel, ret);

	if (r == 0)
		r = vm_launch(*ret, o, img, &(struct machine_mem){0});
	if (r == 0)
		r = vm_connect(*ret, o);
	if (r == 0)
		r = vm_handshake(*ret, o, timeout_ms);
	return r;
}

/* accel.c's probe: does the image boot under KVM in time? */
static bool kvm_probe(const struct sb_options *o, const struct sb_image *img,
		      uint32_t timeout_ms)
{
	struct sb_vm *vm = NULL;
	bool ok = vm_boot(o, img, AL_ACCEL_KVM, timeout_ms, &vm) == 0;

	sb_vm_destroy(vm);
	return ok;
}

enum al_accel sb_accel_resolve(const struct sb_options *o,
			       const struct sb_image *img)
{
	return accel_decide(o, img, kvm_probe);
}

int sb_vm_boot(const struct sb_options *o, const struct sb_image *img,
	       struct sb_vm **ret)
{
	return vm_boot(o, img, sb_accel_resolve(o, img), o->boot_timeout_ms,
		       ret);
}

int vm_qmp(struct sb_vm *vm, const char *cmd, json_t *args, json_t **ret)
{
	return qmp_execute(&vm->qmp, cmd, args, QMP_TIMEOUT_MS, ret,
			   vm->error, sizeof(vm->error));
}

int vm_qmp_ignore_shared(struct sb_vm *vm)
{
	return vm_qmp(vm, "migrate-set-capabilities",
		      json_pack("{s:[{s:s,s:b}]}", "capabilities",
				"capability", "x-ignore-shared", "state", 1),
		      NULL);
}

int vm_qmp_pass_state(struct sb_vm *vm, int fd)
{
	return qmp_execute_fd(&vm->qmp, "getfd",
			      json_pack("{s:s}", "fdname", "state"), fd,
			      QMP_TIMEOUT_MS, vm->error, sizeof(vm->error));
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

void sb_files_release(struct al_msg_files *f)
{
	al_agent_client_files_release(f);
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

void sb_vm_set_deadline(struct sb_vm *vm, struct al_deadline d)
{
	vm->deadline = d;
}
