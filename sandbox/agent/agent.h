/* agent.h: internals of the guest agent shared by its files (not public).
 *
 * main.c parses the command line into a struct al_agent_config; init.c turns
 * the initramfs into the running guest (PID 1 only); serve.c speaks the
 * protocol on its channels; exec.c runs one step; zygote.c keeps a
 * template's pre-started python3 for a job's first python3 step; files.c
 * writes and reads work-dir files; agent.c holds what they all use (log,
 * SIGCHLD, reaping).
 */
#ifndef AL_AGENT_H
#define AL_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "clock.h"
#include "proto.h"

#define AL_AGENT_UID	      1000 /* user `job` in the guest image */
#define AL_AGENT_GID	      1000
#define AL_AGENT_TIMEOUT_MS   10000u	 /* step timeout when none given */
#define AL_AGENT_OUTPUT_BYTES (1u << 20) /* output cap when none given */

struct al_agent_config {
	bool init;		 /* PID 1: set up the guest, then serve */
	const char *cgroup_root; /* cgroup2 dir for step cgroups; NULL: none */
	const char *work_dir;	 /* where steps run and files go */
	const char *scratch_dir; /* tmpfs behind /work and /tmp (init only) */
	bool drop_ids;		 /* run steps as uid/gid, not as ourselves */
	uid_t uid;		 /* step user */
	gid_t gid;		 /* step group */
	int serve_fd;		 /* --serve-fd: serve this fd, -1 otherwise */
	const char *socket_path; /* --socket: accept one connection here */
};

struct al_agent {
	const struct al_agent_config *cfg; /* how we were started */
	struct al_limits limits;	   /* from `setup`, 0 = unset */
	unsigned step_no;		   /* steps run so far */
	unsigned cg_ready;		   /* step cgroup made ahead, 0 none */
	uint32_t scratch_mb;		   /* scratch size last set, 0 boot's */
	int sig_fd;			   /* signalfd for SIGCHLD */
	int work_fd;			   /* O_PATH of cfg->work_dir */
	int random_fd;			   /* /dev/urandom (PID 1 only) */
	pid_t zygote_pid;		   /* zygote.c: waiting, 0 = none */
	int zygote_fd;			   /* our end of its socket, -1 */
	bool tainted; /* a step's processes outlived its kill: no more steps */
};

/* Log one line to stderr (the console in the guest). Never pass job bytes. */
void al_agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Make the next step's cgroup ahead of it (no limits yet; al_exec_step
 * sets them). Called on `setup`, so a template's snapshot holds it and a
 * clone's first step makes none. Best effort: the step makes its own. */
void al_exec_prepare(struct al_agent *a);

/* Block SIGCHLD into a signalfd, ignore SIGPIPE; fills a->sig_fd. */
int al_agent_signals(struct al_agent *a);

/* Drain the signalfd and reap every exited child. When `want` exited, its
 * status and rusage go to *ret_status / *ret_ru and it returns true. */
bool al_agent_reap(struct al_agent *a, pid_t want, int *ret_status,
		   struct rusage *ret_ru);

/* A step's environment: a fixed base (PATH, LANG, TMPDIR, HOME) under
 * the step's own variables (s NULL: none; the zygote's). NULL when out of
 * memory. Used by exec.c and zygote.c. */
char **al_agent_env(const struct al_agent *a, const struct al_step *s);
void al_agent_env_free(char **env);

/* PID 1 only: mounts, modules, switch root, cgroups. Logs and carries on
 * past whatever it can; returns -errno only when nothing can work. */
int al_agent_init_system(const struct al_agent_config *cfg);

/* PID 1 only, after the scratch mounts: a networked template's eth0,
 * default route and resolv.conf (agent/net.c); nothing without
 * airlock.net= on the kernel command line. */
int al_agent_net_up(void);

/* Apply `setup` limits to the guest (scratch tmpfs size). */
int al_agent_apply_limits(struct al_agent *a, const struct al_limits *l,
			  char *err, size_t err_size);

/* One connection the agent serves. */
struct al_chan {
	int fd;			   /* -1 when closed */
	bool vport;		   /* virtio-serial: keep the fd across hangups */
	bool hup;		   /* vport with no host connected */
	struct al_frame_reader rd; /* the request being read */
};

/* The vsock side (serve.c): connections from a listening socket, served
 * only once they proved the host (proto.h, "Authentication"), and one host
 * at a time. Any stream socket works: tests use AF_UNIX. */
#define AL_GATE_PENDING 8 /* connections waiting to authenticate */

/* A connection that has its challenge and not yet answered it. */
struct al_gate_wait {
	struct al_chan ch;	       /* fd -1: the slot is free */
	uint8_t expect[AL_SHA256_LEN]; /* the mac it must send */
	struct al_deadline by;	       /* when it is dropped */
	uint64_t seq;		       /* accept order: the oldest goes first */
};

struct al_gate {
	int lfd;		/* listening socket, -1: none */
	const char *token_path; /* read anew at each accept */
	struct al_chan host;	/* authenticated host, fd -1: none */
	struct al_gate_wait wait[AL_GATE_PENDING]; /* not yet authenticated */
	uint64_t accepted; /* connections accepted, for seq */
};

/* pollfds al_gate_pollfds fills: listener, host, the waiting ones */
#define AL_GATE_NPOLL (2 + AL_GATE_PENDING)

/* Start with no connection on `lfd` (owned by the gate from now on). */
void al_gate_init(struct al_gate *g, int lfd, const char *token_path);
/* Close every fd of the gate. */
void al_gate_release(struct al_gate *g);
/* Fill p[0..AL_GATE_NPOLL) for poll(); returns the poll timeout it needs
 * (-1: none). */
int al_gate_pollfds(const struct al_gate *g, struct pollfd *p);
/* Act on what poll() reported in p: accept, authenticate, serve. */
void al_gate_act(struct al_agent *a, struct al_gate *g,
		 const struct pollfd *p);

/* Serve requests: on `fd` until EOF when fd >= 0, else on the guest's
 * virtio-serial port and vsock forever. */
int al_agent_serve(struct al_agent *a, int fd);

/* Called for each kept chunk of output while a step runs; returns 0 or
 * -errno (streaming then stops; the step goes on). */
typedef int (*al_exec_out_fn)(void *opaque, int fd, const void *data,
			      size_t len);

/* A step's control channel (proto v4 `signal`): while the step runs, `fd`
 * is polled with its pipes; when it is readable, read() takes what is
 * there and returns 1 with a signal to send in *sig / *grace_ms, 0 when
 * nothing is complete yet, or -errno when the channel is gone (it is then
 * polled no more during this step). */
struct al_exec_ctl {
	int fd; /* polled for POLLIN, -1 = none */
	int (*read)(void *opaque, uint32_t *sig, uint32_t *grace_ms);
	void *opaque; /* for read */
	bool background; /* v5: a session exec: what the step leaves
			  * running moves to job/bg (exec.c) */
};

/* Run one step to completion. Always fills *ret (XX with a message in
 * stderr_ for our own failures) and returns 0, or -ENOMEM. */
int al_exec_step(struct al_agent *a, const struct al_step *step,
		 const struct al_limits *lim, al_exec_out_fn out, void *opaque,
		 struct al_step_result *ret);
/* The same, with a control channel (ctl may be NULL): a `signal` read on
 * it goes to every process of the step (al_exec_signal in exec.c). */
int al_exec_step_ctl(struct al_agent *a, const struct al_step *step,
		     const struct al_limits *lim, al_exec_out_fn out,
		     void *opaque, const struct al_exec_ctl *ctl,
		     struct al_step_result *ret);
/* The same for a warm clone's warm-up (the template's own command): it
 * neither runs in the zygote nor ends it. */
int al_exec_warmup(struct al_agent *a, const struct al_step *step,
		   const struct al_limits *lim, struct al_step_result *ret);


/* --- zygote.c: the template's pre-initialized python3 (docs/zygote.md) */

/* Spawn it like a step, importing `modules` (space-separated), and wait
 * until it is ready. 0, or -errno with the reason in err. */
int al_zygote_start(struct al_agent *a, const char *modules,
		    uint32_t timeout_ms, char *err, size_t err_size);
/* A warm clone's warm-up: the waiting zygote runs a job's paths in forks
 * of itself (zygote.py, _warm) and is ready again. 0; or -errno with the
 * reason in err, and the zygote is ended (the clone's jobs run without
 * it). -ENOENT: no zygote waits. */
int al_zygote_warm(struct al_agent *a, uint32_t timeout_ms, char *err,
		   size_t err_size);
/* Would step `s` run in the waiting zygote? */
bool al_zygote_fits(const struct al_agent *a, const struct al_step *s);
/* Make it step `s`'s main child: into the step's cgroup (procs_fd),
 * the step's file-size limit, then its stdio `fds`, its cwd and argv.
 * On success *ret_pid is the step's and the zygote is gone; on failure
 * the caller ends it (al_zygote_end) and runs the step as usual. */
int al_zygote_take(struct al_agent *a, const struct al_step *s,
		   const struct al_limits *lim, int procs_fd, const int fds[3],
		   int cwd_fd, pid_t *ret_pid);
/* Kill and reap a waiting zygote, if any: before any step that does not
 * run in it, so that no job code ever runs beside it. */
void al_zygote_end(struct al_agent *a);

/* Write `files` under the work dir (owned by the step user). */
/* Checkers' files (worker/job.c, run_checker): a path whose first part
 * starts AL_CHECKER_PREFIX goes to AL_CHECKER_AREA, a tmpfs of its own
 * (reserved space), root's: no directory the job user can write is on a
 * checker's path or above it. Every step's end empties the area. */
#define AL_CHECKER_AREA "/run/airlock-checkers"
#define AL_CHECKER_PREFIX ".airlock-check-"
void al_files_wipe_checkers(void);

int al_files_put(struct al_agent *a, const struct al_msg_files *f, char *err,
		 size_t err_size);

/* Read `paths` from the work dir into *ret (files + missing), at most
 * max_bytes of content in all. */
int al_files_get(struct al_agent *a, const struct al_msg_get_files *g,
		 struct al_msg_files *ret);

#endif
