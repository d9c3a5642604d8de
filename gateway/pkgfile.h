/* pkgfile.h: what a package file says about itself: a Python wheel, a
 * Python sdist or an npm tarball, read from its bytes (never from a
 * registry): kind, name, version, sha256, sha512 and the metadata file
 * inside it (a wheel's METADATA, an sdist's PKG-INFO, an npm package's
 * package.json).
 *
 * Package files come from anywhere (a download, a colleague, a mirror
 * that was tampered with): every length inside them is capped before it
 * is allocated, every offset checked against the file, and a file that is
 * not well formed is refused with -EBADMSG, never half read. The caller
 * passes the whole file in memory (its size capped by GW_PKG_FILE_MAX).
 *
 * Using it:
 *
 *  1. gw_pkg_parse(FILENAME, DATA, LEN, &pkg): the file's base name says
 *     its kind (.whl, .tar.gz, .tgz) and, for Python, name and version
 *     (PEP 427, PEP 625); the metadata inside must agree with it.
 *  2. Read pkg's fields; pkg.meta is the metadata file's bytes.
 *  3. gw_pkg_release(&pkg).
 */
#ifndef AL_GW_PKGFILE_H
#define AL_GW_PKGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_NAME_MAX	214	     /* npm's own cap; PyPI's is lower */
#define GW_VERSION_MAX	64	     /* a version string */
#define GW_FILE_MAX	255	     /* a file's base name */
#define GW_META_MAX	(1u << 20)   /* a metadata file inside a package */
#define GW_PKG_FILE_MAX (256u << 20) /* a package file */
#define GW_UNPACK_MAX	(1u << 30)   /* bytes inflated looking in a tarball */
#define GW_SHA256_HEX	64
#define GW_SHA512_B64	88

enum gw_kind {
	GW_WHEEL, /* Python .whl: a zip, no code runs at install */
	GW_SDIST, /* Python .tar.gz: a PEP 517 build runs at install */
	GW_NPM,	  /* npm .tgz */
};

enum gw_eco {
	GW_PYTHON,
	GW_NPMJS,
	GW_NET, /* audit records only: a connection the packages policy
		 * dropped (worker/pkglist.h); never in an allowlist */
};

/* One package file, as read from its bytes. */
struct gw_pkg {
	enum gw_kind kind;		  /* from the file name */
	char name[GW_NAME_MAX + 1];	  /* as the metadata spells it */
	char version[GW_VERSION_MAX + 1]; /* as the metadata spells it */
	char sha256[GW_SHA256_HEX + 1];	  /* lowercase hex of the file */
	char sha512[GW_SHA512_B64 + 1];	  /* base64 of the file (npm) */
	uint64_t size;			  /* bytes of the file */
	bool install_script;		  /* npm: runs code at install */
	char requires_python[GW_VERSION_MAX * 2 +
			     1]; /* Requires-Python, or "" */
	char *meta;		 /* metadata file, NUL-ended */
	size_t meta_len;	 /* its bytes, without the NUL */
};

/* The ecosystem a kind belongs to. */
enum gw_eco gw_kind_eco(enum gw_kind kind);
/* "wheel", "sdist", "npm". */
const char *gw_kind_name(enum gw_kind kind);
/* "python", "npm"; and back (-EINVAL for another word). */
const char *gw_eco_name(enum gw_eco eco);
int gw_eco_parse(const char *s, enum gw_eco *ret);

/* Read DATA (LEN bytes, the file called FILENAME) into ret. 0, -EINVAL
 * (a file name of no known kind), -EBADMSG (not a well-formed package, or
 * name and version inside disagree with the file name), -EFBIG (a cap),
 * -ENOMEM. ret is set only on success. */
int gw_pkg_parse(const char *filename, const uint8_t *data, size_t len,
		 struct gw_pkg *ret);
void gw_pkg_release(struct gw_pkg *pkg);

/* The value of header KEY in a METADATA / PKG-INFO text (the headers
 * end at the first empty line) into out (size bytes, truncated); "" if
 * absent. */
void gw_meta_header(const char *meta, const char *key, char *out, size_t size);

/* sha256 of DATA as lowercase hex into out (65 bytes). */
void gw_sha256_hex(const uint8_t *data, size_t len,
		   char out[GW_SHA256_HEX + 1]);
/* sha512 of DATA as base64 (npm's integrity) into out. */
void gw_sha512_b64(const uint8_t *data, size_t len,
		   char out[GW_SHA512_B64 + 1]);

/* PEP 503 normalisation: lowercase, runs of -_. become one -. out holds
 * GW_NAME_MAX + 1 bytes. -EINVAL for a name that is empty, too long or
 * not made of [A-Za-z0-9._-] (PEP 508 names, stricter than npm's). */
int gw_pep503_normalize(const char *name, char *out);

/* A version: 1..GW_VERSION_MAX bytes of [A-Za-z0-9.+!_-]. */
bool gw_version_valid(const char *v);
/* A file base name: 1..GW_FILE_MAX bytes of [A-Za-z0-9.+!_-], no leading
 * dot. The mirror opens only names that pass. */
bool gw_file_name_valid(const char *f);
/* An npm name: lowercase [a-z0-9._~-], optionally @scope/, not starting
 * with . or _, at most GW_NAME_MAX bytes. */
bool gw_npm_name_valid(const char *n);

#endif
