/* util.h: small helpers shared inside sandbox/: the one deadline-bound
 * read, unix-socket connect, the binary lookup, and the safe file calls
 * for directories a VMM can write (the template dir, the per-VM run dir).
 * Time is results/clock.h's (al_now_ms, struct al_deadline). Internal to
 * sandbox/. */
#ifndef AL_SB_UTIL_H
#define AL_SB_UTIL_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#include "clock.h"

/* Wait until `fd` is readable or `d` passes, then read once into buf.
 * Returns the bytes read (> 0), 0 at end of stream, -ETIMEDOUT when the
 * deadline came first, or -errno; EINTR and EAGAIN are retried. The one
 * read loop of QMP replies and agent frames. */
ssize_t sb__read_deadline(int fd, void *buf, size_t len, struct al_deadline d);
/* Connect a stream to a unix socket, retrying while it does not exist yet
 * or refuses, until `d`. Returns the fd (CLOEXEC) or -errno (-ETIMEDOUT
 * when it never appeared). */
int sb__connect_unix(const char *path, struct al_deadline d);
/* A binary: a path (checked executable), or a name looked up in PATH.
 * -ENOENT when not found. */
int sb__find_binary(const char *name, char *out, size_t size);

/* Open `name` in `dirfd` where a VMM may have planted something: never
 * follows a symlink (-ELOOP), never blocks on a FIFO, and the result must
 * be a regular file (-EINVAL) owned by `owner` (-EPERM; (uid_t)-1 = any
 * owner). With O_CREAT the file must not exist yet (O_EXCL: -EEXIST) and
 * gets `mode`. `name` is one component (-EINVAL with a '/'). The fd is
 * CLOEXEC and stays O_NONBLOCK (no effect on regular files). */
int sb__open_in(int dirfd, const char *name, int flags, mode_t mode,
		uid_t owner);
/* Write `len` bytes as new file `name` in `dirfd` (sb__open_in with
 * O_CREAT: it must not exist), owned by us with `mode`, and fsync it.
 * 0, or -errno (-EIO on a short write). */
int sb__write_file(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode);
/* Open a directory without following a symlink in its last component
 * (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); fd or -errno. */
int sb__open_dir(const char *path);
/* Make sure `path` is a directory only we may write: create it with
 * `mode` if absent; refuse (-EPERM) one that is a symlink, not ours, or
 * writable by group or others (another user could have planted files in
 * it); else give group and others `mode`'s bits (0700, or 0711 when a
 * VMM running as another user must reach its own dir). The run dir's
 * check. */
int sb__private_dir(const char *path, mode_t mode);
/* Make template or snapshot dir `path` (ours) 0700 and its regular files
 * 0400: guest RAM and device state are root's alone. Builds create them
 * so; this tightens dirs an older version made 0755 with 0444 files.
 * 0 or -errno. */
int sb__private_files(const char *path);
/* Remove `name` in `dirfd` and, if a directory, all it holds, at most
 * `depth` levels down, without following symlinks and without crossing
 * into another filesystem (a mount point stays, and so its parents).
 * 0 or the first -errno. */
int sb__remove_at(int dirfd, const char *name, unsigned depth);

/* A memfd `name` holding `len` bytes of `data`, sealed (no write, grow,
 * shrink or further seal), CLOEXEC; `exec` asks for MFD_EXEC where the
 * kernel has it (Linux 6.3, for memfd_noexec). The fd or -errno. */
int sb__sealed_memfd(const char *name, const void *data, size_t len, bool exec);

#endif
