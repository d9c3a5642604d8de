/* upstream.h: what an upstream registry's documents say about the files
 * of one version, for `airlock packages fetch` (tools/cli/pkgfetch.c):
 * a PEP 691 JSON or PEP 503 HTML project page (pip), an npm package
 * document. Pure: no I/O; the caller downloads the document (capped at
 * GW_UP_DOC_MAX) and then each file, and checks each file's bytes against
 * the hash found here.
 *
 * The documents are untrusted bytes (a registry, or whoever sits between
 * it and us): every string is length-checked before it is copied, file
 * names must pass gw_file_name_valid() (they become mirror names, never
 * paths), at most GW_UP_FILES_MAX files are taken, and a file without a
 * hash the index vouches for (sha256 for pip, sha512 integrity for npm)
 * is left out with a reason, never fetched unchecked. Fuzzed
 * (tests/fuzz/fuzz_gw.c, selector 5).
 *
 *  1. gw_up_pypi_files(DOC, LEN, JSON?, KEY, VERSION, out, ...) or
 *     gw_up_npm_file(DOC, LEN, NAME, VERSION, out, ...).
 *  2. Resolve each out[i].url against the document's URL, download,
 *     compare hashes, `packages add` the bytes.
 */
#ifndef AL_GW_UPSTREAM_H
#define AL_GW_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkgfile.h"

#define GW_UP_DOC_MAX	(64u << 20) /* a project page or package document */
#define GW_UP_URL_MAX	2048	    /* a file's URL in a document */
#define GW_UP_FILES_MAX 64	    /* files of one version */

/* One file of the asked version, as the document describes it. */
struct gw_up_file {
	char file[GW_FILE_MAX + 1];	/* base name, gw_file_name_valid() */
	char url[GW_UP_URL_MAX + 1];	/* as given: may be relative */
	char sha256[GW_SHA256_HEX + 1]; /* pip: lowercase hex, else "" */
	char sha512[GW_SHA512_B64 + 1]; /* npm: integrity's base64, else "" */
	int64_t time_s;			/* upload time, 0 = not given */
	uint64_t size;			/* bytes the document says, 0 = not */
};

/* The files of KEY (PEP 503 normalised) at VERSION (compared as written)
 * on a project page: PEP 691 JSON when json, else PEP 503 HTML. Wheels
 * and .tar.gz sdists only (the kinds the mirror holds). Up to max into
 * out; the count (0: no file of that version), or -EBADMSG (not such a
 * document; err says why), -EFBIG (over GW_UP_DOC_MAX). A file of the
 * version without a sha256 fails the whole call (-EBADMSG): fetch never
 * takes a file the index gives no hash for. */
int gw_up_pypi_files(const char *doc, size_t len, bool json, const char *key,
		     const char *version, struct gw_up_file *out, size_t max,
		     char *err, size_t errlen);

/* The tarball of npm NAME at VERSION in a full package document
 * (versions[VERSION].dist, time[VERSION]). 1 into out, 0 when the
 * document has no such version, -EBADMSG (not a package document, or
 * no sha512 integrity; err says why), -EFBIG. */
int gw_up_npm_file(const char *doc, size_t len, const char *name,
		   const char *version, struct gw_up_file *out, char *err,
		   size_t errlen);

/* An RFC 3339 time (2024-01-01T00:00:00[.frac](Z|+HH:MM|-HH:MM)) as
 * seconds since the epoch. 0 or -EINVAL. */
int gw_up_time_parse(const char *s, int64_t *ret);

#endif
