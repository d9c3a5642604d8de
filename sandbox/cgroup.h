/* cgroup.h: a host cgroup per VMM process (v2, or v1's memory, cpu and
 * pids hierarchies), so a compromised or runaway QEMU is capped in memory,
 * CPU time and processes. Internal to sandbox/. */
#ifndef AL_SB_CGROUP_H
#define AL_SB_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define CG_MAX_DIRS 3

struct cg {
	char dirs[CG_MAX_DIRS][PATH_MAX]; /* one per hierarchy used */
	char procs[CG_MAX_DIRS][PATH_MAX + 16]; /* their cgroup.procs files */
	int n;                             /* hierarchies used, 0 = none */
};

/* Create `name` under each hierarchy with the caps; 0 with n = 0 when the
 * host has no cgroup we may create (reported by `airlock doctor`). */
int sb__cg_create(struct cg *cg, const char *name, uint64_t memory_bytes,
		  uint32_t cpu_percent, uint32_t pids);
/* In the child after fork: join every hierarchy (no allocation). */
int sb__cg_join_self(const struct cg *cg);
/* oom_kill from memory.events (v2) or memory.oom_control (v1): how many
 * processes the cgroup's memory cap killed; 0 when unknown. */
uint64_t sb__cg_oom_kills(const struct cg *cg);
/* Remove the cgroups (the processes must be gone). */
void sb__cg_destroy(struct cg *cg);
/* Create airlock/workers/<our pid> in the memory hierarchy, capped at
 * memory_bytes (no swap), and move this process into it; *ret_dir gets
 * its path. -EOPNOTSUPP without cgroups, else -errno. */
int sb_cg_worker_join(uint64_t memory_bytes, char *ret_dir, size_t len);
/* Remove every VMM cgroup (under each hierarchy's `airlock` parent) for
 * which stale(name, arg) holds: SIGKILL what still runs in it, wait up to
 * two seconds for it to empty, rmdir. Returns how many cgroup dirs it
 * removed (v1: one per hierarchy) and adds the processes it killed to
 * *ret_killed; a cgroup that will not empty stays for the next sweep. */
int sb__cg_sweep(bool (*stale)(const char *name, void *arg), void *arg,
		 unsigned *ret_killed);
/* "v2", "v1" or "none": what sb__cg_create would use on this host. */
const char *sb_cg_version(void);

#endif
