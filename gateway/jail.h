/* jail.h: the gateway's own jail (docs/packages.md, "The gateway as a
 * second wall"), entered by main.c after it has bound its socket and
 * opened its files, before it drops to its uid and reads a client byte.
 *
 *  1. gw_jail_enter(DIR, &step) (root only): a mount namespace of its
 *     own whose root is an empty read-only tmpfs holding DIR (the
 *     packages dir: the allowlist, which is reread by path, the mirror
 *     and slots) bound read-only at GW_JAIL_DIR, and /dev/null; no /usr,
 *     /etc, /proc or /tmp, nothing else of the host. Files opened before
 *     (the audit log, O_APPEND) keep working through their fds; a
 *     directory opened before would lead out by "..": the caller opens
 *     its directories again from GW_JAIL_DIR and gw_jail_fds_inside()
 *     checks that none leads out.
 *  2. Drop the uid, set no_new_privs (main.c).
 *  3. gw_seccomp_install(): an allowlist of the system calls serving
 *     needs; any other kills the process (SIGSYS). No socket(),
 *     connect(), execve(), ptrace(), kill(), mount(); openat() only
 *     read-only; clone() only for threads.
 *
 * Why a copy and not sandbox/jail.c: the gateway may include nothing of
 * sandbox/ (gateway/README.md), and the VMM jail's tree (/usr, /proc,
 * /dev/kvm, image files) is not this one.
 */
#ifndef AL_GW_JAIL_H
#define AL_GW_JAIL_H

#define GW_JAIL_DIR "/packages" /* the packages dir, inside the jail */

/* Enter the jail (step 1). 0, or -errno with *ret_step naming the step
 * that failed. On failure the process is half-jailed: exit. */
int gw_jail_enter(const char *dir, const char **ret_step);

/* After step 1: every directory fd this process holds (below its fd
 * limit, at most GW_JAIL_FDS_MAX) leads by ".." to the jail's root and
 * no further; 0, or -EXDEV when one leads out (a directory opened
 * before the jail: open it again from inside). */
#define GW_JAIL_FDS_MAX 65536
int gw_jail_fds_inside(void);

/* Install the seccomp filter (step 3) on every thread (TSYNC). Needs
 * no_new_privs or CAP_SYS_ADMIN. 0 or -errno. */
int gw_seccomp_install(void);

#endif
