/* vm_internal.h: struct sb_vm and the steps of vm.c that template.c and
 * clone.c build on. Internal to sandbox/: sandbox.h keeps the VM opaque.
 * tests/vm and tools/bench/bench_vm.c include this only to reach a VM's QMP
 * connection (white-box checks and figures no accessor should carry).
 *
 * A VM's life in these steps: sb__vm_create() (struct, CID) -> sb__vm_launch()
 * (command line, QEMU started in its cgroup and jail, returns at once)
 * -> sb__vm_connect() (QMP and the agent channel) -> sb__vm_handshake() (cold:
 * hello then reseed) or sb__vm_ready() (clone: reseed only) -> sb_vm_* calls ->
 * sb_vm_destroy(). A step that fails fills vm->error (sb__vm_fail).
 */
#ifndef AL_VM_INTERNAL_H
#define AL_VM_INTERNAL_H

#include <jansson.h>

#include "agent_client.h"
#include "cgroup.h"
#include "machine.h"
#include "qmp.h"
#include "sandbox.h"

struct sb_vm {
	pid_t pid;                    /* QEMU, -1 once reaped */
	int pidfd;                    /* pidfd of QEMU, -1 if none */
	int agent_fd;                 /* stream to the agent */
	struct sb__agent_client agent; /* protocol state on agent_fd */
	struct qmp qmp;               /* QMP connection (fd -1 if none) */
	char name[32];                /* vm-N, unique in this process */
	int qmp_end;		      /* our QMP socketpair end until
				       * sb__vm_connect takes it, else -1 */
	int serial_end;		      /* our end of the agent's virtio-serial
				       * port until sb__vm_connect takes it */
	int log_fd;                   /* QEMU's stdout+stderr (pipe, read
				       * non-blocking), -1 if none */
	char log_tail[512];           /* the last bytes read from log_fd */
	size_t log_len;               /* bytes used in log_tail */
	uid_t uid;                    /* jailed VMM's leased uid, 0 = none */
	int lease_fd;                 /* holds the uid lease, -1 if none */
	char template_[AL_NAME_MAX + 1]; /* template it runs */
	enum al_accel accel;          /* accelerator that ran */
	bool restored;                /* restored from a snapshot */
	bool prepared;                /* clone VMM connected, state fd in */
	bool warm;                    /* warmed up before its job */
	bool set_up;                  /* `limits` sent with the hand-off */
	struct al_limits limits;      /* what set_up sent */
	uint64_t start_ms;            /* al_now_ms() at start */
	uint64_t ready_ms;            /* start -> agent ready */
	int64_t load_rt_us;           /* restore: CLOCK_REALTIME (us) when the
				       * load was asked for, to set against
				       * QMP event times (benchmarks) */
	struct al_deadline deadline;  /* hard TTL, AL_NO_DEADLINE = none */
	char error[256];              /* what went wrong, for XX */
	struct cg cg;                 /* host cgroup of QEMU */
	uint32_t cid;                 /* vsock guest CID, 0 = virtio-serial */
	uint8_t token[AL_AUTH_TOKEN_LEN]; /* vsock: what the agent checks */
	struct sb_net *net;           /* its network slot (owned), NULL = no
				       * NIC (net.c) */
	int save_fd;                  /* live.c: its RAM, a shared memfd the
				       * host reads at a save; -1 = none */
	char base[AL_NAME_MAX + 1];   /* live.c: the image template its RAM
				       * derives from ... */
	char base_key[17];            /* ... and that template's key */
};

/* A VM of template `name` under `accel`, not yet started: on the vsock
 * carrier, a CID of its own. *ret is set whenever
 * the struct exists, failure included (the caller reads the error and
 * destroys it); -ENOMEM leaves it NULL. */
int sb__vm_create(const struct sb_options *o, const char *name,
		  enum al_accel accel, struct sb_vm **ret);
/* Build the command line of `img` with RAM backed as `mem` and start QEMU
 * in its cgroup; returns at once (QEMU initialises on its own: a
 * pre-started VMM does so while a job runs elsewhere). */
int sb__vm_launch(struct sb_vm *vm, const struct sb_options *o,
		  const struct sb_image *img, const struct machine_mem *mem);
/* The launch of sb__vm_launch with another command line (tests/vm's jail
 * probe): the same fds (mem->fd included; kernel_fd, -1 for none, as
 * VMM_FD_KERNEL), cgroup, uid lease and jail,
 * with argv[0] bound into the jail when it is not under /usr. */
int sb__vm_launch_argv(struct sb_vm *vm, const struct sb_options *o,
		       const struct sb_image *img,
		       const struct machine_mem *mem, int kernel_fd,
		       const struct vmm_argv *a);
/* What QEMU wrote to stdout and stderr so far (bounded tail, drained
 * non-blocking): tests/vm's probe reports this way. */
const char *sb__vm_log_tail(struct sb_vm *vm);
/* Connect QMP and the agent's socket (QEMU may still be starting); starts
 * the TTL when o->ttl_ms is set. */
int sb__vm_connect(struct sb_vm *vm, const struct sb_options *o);
/* The job's setup with a fresh reseed in the same message (a warm
 * clone's hand-off: one round trip; a v1 agent gets a reseed after);
 * sb_vm_setup with the same limits then sends nothing. */
int sb__vm_setup_reseed(struct sb_vm *vm, const struct al_limits *limits,
			uint32_t timeout_ms);
/* hello (the agent booted and speaks our protocol), then sb__vm_ready. */
int sb__vm_handshake(struct sb_vm *vm, const struct sb_options *o,
		     uint32_t timeout_ms);
/* Reseed only (a clone: its template's agent already said hello); sets
 * ready_ms. */
int sb__vm_ready(struct sb_vm *vm, const struct sb_options *o,
		 uint32_t timeout_ms);
/* Fresh entropy and the clock, without touching ready_ms. */
int sb__vm_reseed(struct sb_vm *vm, const struct sb_options *o);
/* A warm clone's warm-up step (the template's own command, timeout_ms
 * its limit): run beside the template's zygote, which it leaves be. */
int sb__vm_run_warmup(struct sb_vm *vm, const struct al_step *step,
		      const struct al_limits *limits, uint32_t timeout_ms,
		      struct al_step_result *ret);
/* A warm clone's: warm the template's zygote up (docs/zygote.md). 0;
 * -EPROTO when the agent could not (the clone serves, without it or
 * cold); another -errno fails the VM. */
int sb__vm_zygote_warm(struct sb_vm *vm, uint32_t timeout_ms);
/* Fill vm->error from r and `what`, with QEMU's last words if it died. */
void sb__vm_fail(struct sb_vm *vm, int r, const char *what);

/* QMP with the VM's error buffer and the usual timeout; `args` (may be
 * NULL) is stolen, *ret (may be NULL) gets the "return" value. */
int sb__vm_qmp(struct sb_vm *vm, const char *cmd, json_t *args, json_t **ret);
/* Turn on x-ignore-shared: guest RAM (a shared file) stays out of the
 * migration stream, both when a template is saved and when it loads. */
int sb__vm_qmp_ignore_shared(struct sb_vm *vm);
/* Hand `fd` to QEMU as the migration fd "state" (getfd). */
int sb__vm_qmp_pass_state(struct sb_vm *vm, int fd);

/* template.c's pieces snapshot.c shares. Save the device state to `state`
 * in `dfd` with the guest running (x-ignore-shared: RAM stays out);
 * -EFBIG past `max` bytes (0 = no cap). */
int sb__template_save_state(struct sb_vm *vm, int dfd, off_t max);
/* Copy the data extents of `in` to `out` (holes stay holes). */
int sb__template_copy_extents(int in, int out);
/* A memfd of `size` bytes that can be sealed, for guest RAM. */
int sb__template_memfd(off_t size);
/* The `inputs` file of the dir `dfd` (a template's or a snapshot's) into
 * buf, read as its owner; false if absent, empty or not ours. */
bool sb__template_read_inputs(int dfd, char *buf, size_t size);
/* The same of the dir at `dir`: 0, -ENOENT, or the open's error. */
int sb__template_dir_inputs(const char *dir, char *buf, size_t size);
/* The value of `key=` (at the start or after a space) in an inputs text
 * into out, "" when absent. */
void sb__template_input_field(const char *inputs, const char *key, char *out,
			      size_t size);

#endif
