/* allow.h: the allowlist and its pins (configs/packages.allow documents
 * the format): per ecosystem, the names allowed, each at pinned versions,
 * each allowed file with the sha256 it must have. Nothing else is served.
 *
 * The file is written by people and by `airlock packages add/approve`; it
 * is parsed strictly (an unknown word, a bad name, version, file name or
 * hash, a line over GW_ALLOW_LINE_MAX, the same file pinned twice: the
 * whole file is refused with FILE:LINE: REASON), so a typo never widens
 * what is allowed.
 *
 *  1. gw_allow_load(PATH, &a, err, errlen), or gw_allow_parse() on text.
 *  2. gw_allow_file() / gw_allow_project() / gw_allow_has() to decide.
 *  3. gw_allow_release(&a).
 */
#ifndef AL_GW_ALLOW_H
#define AL_GW_ALLOW_H

#include <stdbool.h>
#include <stddef.h>

#include "pkgfile.h"

#define GW_ALLOW_LINE_MAX  1024	  /* bytes of one line */
#define GW_ALLOW_PINS_MAX  100000 /* pins in one file */
#define GW_ALLOW_BYTES_MAX (64u << 20)

/* One allowed file. */
struct gw_pin {
	enum gw_eco eco;		  /* python or npm */
	char name[GW_NAME_MAX + 1];	  /* as written */
	char key[GW_NAME_MAX + 1];	  /* PEP 503 normalised; npm: as is */
	char version[GW_VERSION_MAX + 1]; /* pinned version */
	char file[GW_FILE_MAX + 1];	  /* base name in the mirror */
	char sha256[GW_SHA256_HEX + 1];	  /* lowercase hex */
};

/* An `allow-scripts NAME VERSION` line: that npm version may have an
 * install script under npm.no-install-scripts (a person approved it). */
struct gw_scripts_ok {
	char key[GW_NAME_MAX + 1];
	char version[GW_VERSION_MAX + 1];
};

/* The whole file. */
struct gw_allow {
	struct gw_pin *pins;	 /* in file order, malloc'd */
	size_t n;		 /* entries in pins */
	struct gw_scripts_ok *scripts_ok; /* malloc'd */
	size_t n_scripts_ok;		  /* entries in scripts_ok */
	bool wheels_only;	 /* option python.wheels-only: no sdist */
	bool npm_scripts_denied; /* option npm.no-install-scripts */
	unsigned min_age_days;	 /* option min-age-days=N, 0 = none */
};

/* Parse TEXT (LEN bytes, called NAME in messages). 0, or -EINVAL with
 * "NAME:LINE: reason" in err; -ENOMEM, -EFBIG. ret set on success. */
int gw_allow_parse(const char *name, const char *text, size_t len,
		   struct gw_allow *ret, char *err, size_t errlen);
/* Read and parse PATH (capped at GW_ALLOW_BYTES_MAX). An absent file is
 * an empty allowlist when missing_ok. */
int gw_allow_load(const char *path, bool missing_ok, struct gw_allow *ret,
		  char *err, size_t errlen);
void gw_allow_release(struct gw_allow *a);

/* The key a name is looked up by: PEP 503 for python, itself for npm.
 * -EINVAL for a name not valid in the ecosystem. */
int gw_allow_key(enum gw_eco eco, const char *name, char out[GW_NAME_MAX + 1]);

/* The pin of FILE in ECO, or NULL. */
const struct gw_pin *gw_allow_file(const struct gw_allow *a, enum gw_eco eco,
				   const char *file);
/* Any pin for KEY (normalised) in ECO. */
bool gw_allow_project(const struct gw_allow *a, enum gw_eco eco,
		      const char *key);
/* Any pin for KEY at VERSION. */
bool gw_allow_has(const struct gw_allow *a, enum gw_eco eco, const char *key,
		  const char *version);

/* Does an allow-scripts line name npm KEY at VERSION? */
bool gw_allow_scripts(const struct gw_allow *a, const char *key,
		      const char *version);

/* One pin line, as the file holds it, into out (ends with '\n'). */
int gw_allow_format(const struct gw_pin *p, char *out, size_t size);

#endif
