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
int gw_mirror_meta_name(enum gw_eco eco, const char *file, char *out,
			size_t size);

/* One mirror file of a name and version (gw_mirror_find). */
struct gw_found {
	char file[GW_FILE_MAX + 1];	/* base name */
	char name[GW_NAME_MAX + 1];	/* as its metadata spells it */
	char sha256[GW_SHA256_HEX + 1]; /* of its bytes, now */
	char *meta;			/* its metadata side file, malloc'd */
	bool malformed; /* its bytes do not parse now (gw_pkg_parse) */
};
#define GW_FOUND_MAX 64

/* The files in MIRROR/ECO whose metadata says KEY (normalised for python)
 * at VERSION: up to GW_FOUND_MAX into out. The count, or -errno. The
 * caller frees each out[i].meta. */
int gw_mirror_find(const char *mirror, enum gw_eco eco, const char *key,
		   const char *version, struct gw_found *out);

/* The versions of KEY (normalised for python) that files in the mirror
 * directory DIRFD (the ecosystem's) have and the allowlist does not pin:
 * what a listing withholds as not pinned, for its audit record (a client
 * never says which version it wanted). Each once, space-separated into
 * out (those that do not fit are counted, not written); the count. At
 * most GW_UNPINNED_SCAN_MAX directory entries are looked at. */
#define GW_UNPINNED_SCAN_MAX 100000
struct gw_allow;
size_t gw_mirror_unpinned(const struct gw_allow *al, int dirfd, enum gw_eco eco,
			  const char *key, char *out, size_t size);

#endif
