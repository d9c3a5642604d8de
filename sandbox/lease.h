/* lease.h: a uid of its own for each live VMM. Internal to sandbox/.
 *
 * A lease is an flock()ed file RUN_DIR/uids/UID: whoever holds the lock
 * owns uid UID (== gid) until the fd closes, and the kernel closes it
 * when the holder dies, so no uid is ever shared by two live VMMs and no
 * lease outlives its owner. The VMM inherits the fd too, so a lease also
 * lasts until its QEMU is gone.
 */
#ifndef AL_SB_LEASE_H
#define AL_SB_LEASE_H

#include <stdint.h>
#include <sys/types.h>

/* Take a free uid of [base, base + count) under `dir` (made root-owned
 * 0700 if missing; refused if anyone else may write it). *ret_fd holds
 * the lease (CLOEXEC; close it to release). -EINVAL for a range that
 * includes uid 0 or overflows, -EAGAIN when every uid is taken. */
int sb__lease_uid(const char *dir, uint32_t base, uint32_t count,
		  uid_t *ret_uid, int *ret_fd);

#endif
