/* pkglist.h: what a job installed through the package gateway
 * (docs/packages.md): the audit records with its id that served it a
 * file, read back from STATE/packages/audit.jsonl into its result's
 * `network.packages`.
 */
#ifndef AL_WORKER_PKGLIST_H
#define AL_WORKER_PKGLIST_H

#include <stddef.h>
#include <sys/types.h>

#include "results.h"

/* Bytes of the audit file read for one job, at most: the records of the
 * jobs that ran beside it are in there too. */
#define AL_PKGLIST_READ_MAX (8u << 20)

/* The audit file's size now: where the records of a job that starts now
 * begin. 0 when there is none. */
off_t al_pkglist_mark(const char *state_dir);

/* Add to n->packages "ECOSYSTEM:NAME==VERSION" of each record in buf
 * (JSON lines, gateway/audit.h) that names `job` and served it a file
 * (a wheel, sdist or tarball: routes `file` and `tarball`, allowed):
 * distinct, sorted, at most AL_NET_PACKAGES_MAX. Lines that are not
 * records are skipped. */
void al_pkglist_scan(const char *buf, size_t len, const char *job,
		     struct al_net_info *n);

/* al_pkglist_scan() over the audit file from `from` to its end (at most
 * AL_PKGLIST_READ_MAX bytes). 0, or -errno. */
int al_pkglist_read(const char *state_dir, off_t from, const char *job,
		    struct al_net_info *n);

/* The network policy that reaches the package gateway and nothing else
 * (tools/cli/gwrun.h, AL_GW_POLICY). */
#define AL_PKGLIST_POLICY "packages"

/* A job (or session) under AL_PKGLIST_POLICY whose slot dropped
 * connections: one deny record each (ecosystem "net", route "net", the
 * destination as `file`, the job and its slot's address) appended to the
 * gateway's audit file, whence the gateway's keeper relays them to the
 * Redis stream with the gateway's own (tools/cli/gwrelay.h), so that a
 * refused connection is in the audit beside the refused installs. 0, or
 * -errno (no audit file: no gateway here). */
int al_pkglist_dropped(const char *state_dir, const char *job, const char *peer,
		       const struct al_net_info *n);

#endif
