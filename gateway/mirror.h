/* mirror.h: the local mirror, the only place the gateway serves files
 * from. The host fills it (`airlock packages add`); the gateway opens it
 * read-only, by a directory fd taken before it drops privileges.
 *
 * Layout, one directory per ecosystem, flat:
 *
 *   MIRROR/python/FILE            a wheel or sdist, as added
 *   MIRROR/python/FILE.metadata   its METADATA / PKG-INFO (PEP 658)
 *   MIRROR/npm/FILE               an npm tarball, as added
 *   MIRROR/npm/FILE.json          its package.json
 *
 * FILE is always a name that passed gw_file_name_valid(), never a path a
 * client sent; every open is O_NOFOLLOW relative to the ecosystem's
 * directory fd, and only regular files under GW_PKG_FILE_MAX are read.
 */
#ifndef AL_GW_MIRROR_H
#define AL_GW_MIRROR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pkgfile.h"

/* Read a whole file at DIRFD/NAME (O_NOFOLLOW, regular, at most max
 * bytes) into a malloc'd buffer; *ret_mtime its mtime. 0, -ENOENT,
 * -EFBIG, -EINVAL (not a regular file), -errno. */
int gw_mirror_read(int dirfd, const char *name, size_t max, uint8_t **ret,
		   size_t *ret_len, int64_t *ret_mtime);

/* Add the package file at PATH to the mirror MIRROR (created, with its
 * ecosystem directory, mode 0755: packages are public and the gateway's
 * own uid must read them). The file is parsed first (gw_pkg_parse) and
 * written with its metadata under temporary names, then renamed. ret is
 * the parsed package. 0, or -errno (-EBADMSG: not a package; -EEXIST: a
 * different file of that name is already there). */
int gw_mirror_add(const char *mirror, const char *path, struct gw_pkg *ret,
		  char *err, size_t errlen);

/* The metadata side file's name for FILE in ECO into out. */
int gw_mirror_meta_name(enum gw_eco eco, const char *file, char *out, size_t size);

#endif
