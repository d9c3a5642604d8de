/* pkgfile.c: a package file's kind, name, version, hashes and metadata,
 * read from its bytes: a wheel is a zip (read through its central
 * directory), an sdist and an npm package are gzipped tars (inflated as a
 * stream, one 512-byte header at a time, never more than GW_UNPACK_MAX).
 * Every offset and length in the file is checked against the bytes there
 * are, every length capped before allocation. Pure: no I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "pkgfile.h"

enum gw_eco gw_kind_eco(enum gw_kind kind)
{
	return kind == GW_NPM ? GW_NPMJS : GW_PYTHON;
}

const char *gw_kind_name(enum gw_kind kind)
{
	static const char *const names[] = {"wheel", "sdist", "npm"};
	return names[kind];
}

const char *gw_eco_name(enum gw_eco eco)
{
	return eco == GW_NPMJS ? "npm" : eco == GW_NET ? "net" : "python";
}

int gw_eco_parse(const char *s, enum gw_eco *ret)
{
	if (!strcmp(s, "python"))
		*ret = GW_PYTHON;
	else if (!strcmp(s, "npm"))
		*ret = GW_NPMJS;
	else
		return -EINVAL;
	return 0;
}

void gw_sha256_hex(const uint8_t *data, size_t len, char out[GW_SHA256_HEX + 1])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[GW_SHA256_HEX] = '\0';
}

void gw_sha512_b64(const uint8_t *data, size_t len, char out[GW_SHA512_B64 + 1])
{
	unsigned char md[64];
	unsigned int n = 0;

	EVP_Digest(data, len, md, &n, EVP_sha512(), NULL);
	EVP_EncodeBlock((unsigned char *)out, md, 64);
	out[GW_SHA512_B64] = '\0';
}

static bool in_set(char c, const char *extra)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr(extra, c));
}

int gw_pep503_normalize(const char *name, char *out)
{
	size_t n = 0, len = strlen(name);
	bool sep = false;

	if (len == 0 || len > GW_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!in_set(c, "-_."))
			return -EINVAL;
		if (c == '-' || c == '_' || c == '.') {
			sep = true;
			continue;
		}
		if (sep && n > 0)
			out[n++] = '-';
		sep = false;
		out[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	if (n == 0)
		return -EINVAL;
	out[n] = '\0';
	return 0;
}

bool gw_version_valid(const char *v)
{
	size_t len = strlen(v);

	if (len == 0 || len > GW_VERSION_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!in_set(v[i], ".+!_-"))
			return false;
	return true;
}

bool gw_file_name_valid(const char *f)
{
	size_t len = strlen(f);

	if (len == 0 || len > GW_FILE_MAX || f[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!in_set(f[i], ".+!_-"))
			return false;
	return true;
}

bool gw_npm_name_valid(const char *n)
{
	size_t len = strlen(n);
	const char *p = n, *slash;

	if (len == 0 || len > GW_NAME_MAX)
		return false;
	if (n[0] == '@') {
		slash = strchr(n, '/');
		if (!slash || slash == n + 1 || strchr(slash + 1, '/'))
			return false;
		for (p = n + 1; p < slash; p++)
			if (!((*p >= 'a' && *p <= 'z') ||
			      (*p >= '0' && *p <= '9') || strchr("._~-", *p)))
				return false;
		p = slash + 1;
	}
	if (*p == '\0' || *p == '.' || *p == '_')
		return false;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      strchr("._~-", *p)))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* ---- zip (wheels) ---- */

static uint32_t le16(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8;
}
static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Inflate or copy one member's bytes into a new NUL-ended buffer. */
static int zip_member(const uint8_t *data, size_t len, uint32_t method,
		      uint64_t off, uint64_t csize, uint64_t usize, char **ret,
		      size_t *ret_len)
{
	z_stream z = {0};
	char *out;
	int rc;

	if (usize > GW_META_MAX)
		return -EFBIG;
	if (off > len || csize > len - off)
		return -EBADMSG;
	out = malloc(usize + 1);
	if (!out)
		return -ENOMEM;
	if (method == 0) {
		if (csize != usize) {
			free(out);
			return -EBADMSG;
		}
		memcpy(out, data + off, usize);
	} else if (method == 8) {
		if (inflateInit2(&z, -15) != Z_OK) {
			free(out);
			return -ENOMEM;
		}
		z.next_in = (uint8_t *)(data + off);
		z.avail_in = (uInt)csize;
		z.next_out = (uint8_t *)out;
		z.avail_out = (uInt)usize;
		rc = inflate(&z, Z_FINISH);
		inflateEnd(&z);
		if (rc != Z_STREAM_END || z.total_out != usize) {
			free(out);
			return -EBADMSG;
		}
	} else {
		free(out);
		return -EBADMSG;
	}
	out[usize] = '\0';
	*ret = out;
	*ret_len = usize;
	return 0;
}

/* The wheel's top-level NAME.dist-info/METADATA. */
static int zip_find_metadata(const uint8_t *data, size_t len, char **ret,
			     size_t *ret_len)
{
	const size_t eocd_min = 22;
	size_t i, pos, cd_off, cd_size, entries;
	const uint8_t *e = NULL;

	if (len < eocd_min || len > UINT32_MAX)
		return -EBADMSG;
	/* the end record is within the last 64 KiB + 22 bytes */
	for (i = len - eocd_min;; i--) {
		if (le32(data + i) == 0x06054b50) {
			e = data + i;
			break;
		}
		if (i == 0 || len - i > 65557)
			break;
	}
	if (!e)
		return -EBADMSG;
	entries = le16(e + 10);
	cd_size = le32(e + 12);
	cd_off = le32(e + 16);
	if (cd_off > len || cd_size > len - cd_off)
		return -EBADMSG;
	pos = cd_off;
	for (size_t n = 0; n < entries; n++) {
		const uint8_t *c = data + pos;
		size_t nlen, elen, clen, loff, lnlen, lelen;
		const char *name, *slash;

		if (pos + 46 > cd_off + cd_size || le32(c) != 0x02014b50)
			return -EBADMSG;
		nlen = le16(c + 28);
		elen = le16(c + 30);
		clen = le16(c + 32);
		if (46 + nlen + elen + clen > cd_off + cd_size - pos)
			return -EBADMSG;
		name = (const char *)c + 46;
		slash = memchr(name, '/', nlen);
		if (slash && nlen > 20 &&
		    !memcmp(name + nlen - 19, ".dist-info/METADATA", 19) &&
		    slash == name + nlen - 9 && !memchr(name, '\0', nlen)) {
			loff = le32(c + 42);
			if (loff > len || len - loff < 30 ||
			    le32(data + loff) != 0x04034b50)
				return -EBADMSG;
			lnlen = le16(data + loff + 26);
			lelen = le16(data + loff + 28);
			return zip_member(data, len, le16(c + 10),
					  (uint64_t)loff + 30 + lnlen + lelen,
					  le32(c + 20), le32(c + 24), ret,
					  ret_len);
		}
		pos += 46 + nlen + elen + clen;
	}
	return -EBADMSG;
}

/* ---- gzipped tar (sdists, npm) ----
 *
 * An npm package is read the way npm reads it, or refused where the two
 * readings could differ (docs/packages.md, "npm tarballs"). npm unpacks
 * with node-tar, stripping the first path element: it skips one zero
 * block and reads on (two end the archive), skips a header whose
 * checksum fails and reads the next block as a header, applies pax and
 * GNU long-name headers to the entry after them, joins the ustar prefix
 * only under the magic "ustar\0" "00", gives a directory no body whatever
 * its size says, inflates gzip members one after another, and lets a
 * later entry overwrite an earlier one of the same path. So a tarball
 * with a bad checksum, a lone zero block, anything but zeros after the
 * end, a second gzip member, a pax or GNU long-name header, a path with
 * an empty, "." or ".." element, two entries of one path (after the
 * strip), or a package.json that is not a regular file, is refused: the
 * package.json we judge is then the one npm runs. An sdist is read
 * leniently (its build runs code anyway).
 */

#define TAR_PATHS_MAX 200000 /* entries of one npm tarball */

struct tgz {
	z_stream z;	/* the inflater over the whole file */
	uint64_t total; /* bytes inflated so far, capped by GW_UNPACK_MAX */
	bool end;	/* the gzip stream ended */
};

/* One walk over a tarball for the file TOP/want (and TOP/also). */
struct tar_walk {
	struct tgz t;
	bool strict;	  /* npm: node-tar's reading, or a refusal */
	const char *want; /* the file wanted, one element below TOP */
	const char *also; /* one more whose presence is noted, or NULL */
	char *found;	  /* the wanted file's bytes, NUL-ended */
	size_t found_len; /* its length */
	bool also_seen;	  /* TOP/also exists */
	char **paths;	  /* strict: every entry's path, first element off */
	size_t n_paths;	  /* used */
	size_t cap;	  /* allocated */
};

/* Exactly n bytes into out (NULL: skip them). 0, -EBADMSG (short or
 * corrupt), -EFBIG (past GW_UNPACK_MAX). */
static int tgz_read(struct tgz *t, uint8_t *out, size_t n)
{
	uint8_t scratch[4096];

	while (n > 0) {
		size_t want =
		    out ? n : (n < sizeof(scratch) ? n : sizeof(scratch));
		int rc;

		if (t->end)
			return -EBADMSG;
		if (t->total + want > GW_UNPACK_MAX)
			return -EFBIG;
		t->z.next_out = out ? out : scratch;
		t->z.avail_out = (uInt)want;
		rc = inflate(&t->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			t->end = true;
		else if (rc != Z_OK)
			return -EBADMSG;
		size_t got = want - t->z.avail_out;
		if (got == 0 && !t->end)
			return -EBADMSG; /* input ran out */
		t->total += got;
		n -= got;
		if (out)
			out += got;
	}
	return 0;
}

static int octal(const uint8_t *p, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (v > (UINT64_MAX >> 3))
			return -EBADMSG;
		v = v << 3 | (uint64_t)(p[i] - '0');
	}
	if (i < n && p[i] != '\0' && p[i] != ' ')
		return -EBADMSG;
	*ret = v;
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The header's checksum holds (the sum of its bytes, the checksum field
 * counted as spaces). */
static bool tar_cksum_ok(const uint8_t *h)
{
	uint64_t want, sum = 8 * ' ';

	if (octal(h + 148, 8, &want) < 0)
		return false;
	for (size_t i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? 0 : h[i];
	return sum == want;
}

/* The entry's path into name (257 bytes): name, joined to the ustar
 * prefix as node-tar joins it (strict) or whenever a prefix is there. */
static void tar_name(const uint8_t *h, bool strict, char *name)
{
	size_t nlen = strnlen((const char *)h, 100), plen;
	bool ustar = strict ? !memcmp(h + 257,
				      "ustar\0"
				      "00",
				      8)
			    : !memcmp(h + 257, "ustar", 5);

	plen = !ustar		   ? 0
	       : strict && !h[475] ? strnlen((const char *)h + 345, 130)
				   : strnlen((const char *)h + 345, 155);
	if (plen) {
		memcpy(name, h + 345, plen);
		name[plen++] = '/';
	}
	memcpy(name + plen, h, nlen);
	name[plen + nlen] = '\0';
}

/* A path npm and we read alike: elements neither empty, "." nor "..";
 * one trailing '/' (a directory) removed. */
static bool tar_path_ok(char *name)
{
	size_t len = strlen(name);

	if (len && name[len - 1] == '/')
		name[--len] = '\0';
	if (!len)
		return false;
	for (const char *p = name;;) {
		size_t el = strcspn(p, "/");

		if (!el || (el == 1 && p[0] == '.') ||
		    (el == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!p[el])
			return true;
		p += el + 1;
	}
}

/* Strict: note PATH (first element off); duplicates are found at the end. */
static int tar_note(struct tar_walk *w, const char *path)
{
	if (w->n_paths == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char **p;

		if (cap > TAR_PATHS_MAX)
			return -EFBIG;
		p = realloc(w->paths, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		w->paths = p;
		w->cap = cap;
	}
	w->paths[w->n_paths] = strdup(path);
	return w->paths[w->n_paths++] ? 0 : -ENOMEM;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int tar_no_duplicates(struct tar_walk *w)
{
	if (w->n_paths < 2)
		return 0;
	qsort(w->paths, w->n_paths, sizeof(*w->paths), cmp_str);
	for (size_t i = 1; i < w->n_paths; i++)
		if (!strcmp(w->paths[i - 1], w->paths[i]))
			return -EBADMSG;
	return 0;
}

/* Read the wanted file's body (size bytes; the caller skips the rest). */
static int tar_take(struct tar_walk *w, uint64_t size)
{
	if (w->found)
		return -EBADMSG; /* a second one (lenient: TOP/ and ./TOP/) */
	if (size > GW_META_MAX)
		return -EFBIG;
	w->found = malloc(size + 1);
	if (!w->found)
		return -ENOMEM;
	w->found[size] = '\0';
	w->found_len = size;
	return tgz_read(&w->t, (uint8_t *)w->found, size);
}

/* The type flags an npm package may hold: files, directories, links
 * (pacote skips links). Pax, GNU long names, devices and the rest: no. */
static bool tar_type_ok(uint8_t type)
{
	return type && strchr("01257", type);
}

/* One header (not a zero block): its body read or skipped. */
static int tar_entry(struct tar_walk *w, const uint8_t *h)
{
	char name[257];
	const char *slash, *base;
	uint64_t size, padded;
	uint8_t type = h[156] ? h[156] : '0';
	bool reg, dir;
	int rc;

	if (w->strict && (!tar_cksum_ok(h) || !tar_type_ok(type)))
		return -EBADMSG;
	rc = octal(h + 124, 12, &size);
	if (rc < 0)
		return rc;
	tar_name(h, w->strict, name);
	dir = type == '5' ||
	      (type == '0' && name[0] && name[strlen(name) - 1] == '/');
	if (w->strict && !tar_path_ok(name))
		return -EBADMSG;
	if (w->strict && dir)
		size = 0; /* node-tar gives a directory no body */
	reg = !dir && (type == '0' || type == '7');
	slash = strchr(name, '/');
	base = slash && slash != name ? slash + 1 : NULL;
	padded = (size + 511) / 512 * 512;
	if (w->strict && base && (rc = tar_note(w, base)) < 0)
		return rc;
	if (base && !strcmp(base, w->want)) {
		if (!reg && w->strict)
			return -EBADMSG; /* a link or directory */
		if (reg && (rc = tar_take(w, size)) < 0)
			return rc;
		padded -= reg ? size : 0;
	} else if (base && w->also && !strcmp(base, w->also)) {
		w->also_seen = true; /* npm runs node-gyp for any */
	}
	return tgz_read(&w->t, NULL, padded);
}

/* After the first zero block. Strict: a second must follow, then only
 * zeros to the end of the one gzip member, and nothing after it. */
static int tar_end(struct tar_walk *w)
{
	uint8_t h[512];
	int rc;

	if (!w->strict)
		return 0;
	rc = tgz_read(&w->t, h, sizeof(h));
	if (rc < 0 || !all_zero(h, sizeof(h)))
		return rc < 0 ? rc : -EBADMSG;
	while (!w->t.end) {
		w->t.z.next_out = h;
		w->t.z.avail_out = sizeof(h);
		rc = inflate(&w->t.z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			w->t.end = true;
		else if (rc != Z_OK || w->t.z.avail_out == sizeof(h))
			return -EBADMSG;
		w->t.total += sizeof(h) - w->t.z.avail_out;
		if (w->t.total > GW_UNPACK_MAX)
			return -EFBIG;
		if (!all_zero(h, sizeof(h) - w->t.z.avail_out))
			return -EBADMSG;
	}
	return w->t.z.avail_in ? -EBADMSG : tar_no_duplicates(w);
}

static int tar_walk(struct tar_walk *w)
{
	uint8_t h[512];
	int rc;

	for (;;) {
		rc = tgz_read(&w->t, h, sizeof(h));
		if (rc < 0)
			return rc;
		if (all_zero(h, sizeof(h)) || (!w->strict && h[0] == '\0'))
			return tar_end(w); /* the end blocks */
		rc = tar_entry(w, h);
		if (rc < 0)
			return rc;
		if (!w->strict && w->found && (!w->also || w->also_seen))
			return 0;
	}
}

/* Walk the tar; TOP/WANT (TOP one path element) is returned in ret;
 * *also_seen is set when TOP/ALSO exists (ALSO may be NULL). STRICT:
 * npm's reading, every refusal above. */
static int tgz_find(const uint8_t *data, size_t len, bool strict,
		    const char *want, const char *also, char **ret,
		    size_t *ret_len, bool *also_seen)
{
	struct tar_walk w = {.strict = strict, .want = want, .also = also};
	int rc;

	if (len > UINT32_MAX)
		return -EFBIG;
	if (inflateInit2(&w.t.z, 16 + 15) != Z_OK)
		return -ENOMEM;
	w.t.z.next_in = (uint8_t *)data;
	w.t.z.avail_in = (uInt)len;
	rc = tar_walk(&w);
	if (rc == 0 && !w.found)
		rc = -EBADMSG;
	inflateEnd(&w.t.z);
	for (size_t i = 0; i < w.n_paths; i++)
		free(w.paths[i]);
	free(w.paths);
	if (rc < 0) {
		free(w.found);
		return rc;
	}
	*ret = w.found;
	*ret_len = w.found_len;
	if (also_seen)
		*also_seen = w.also_seen;
	return 0;
}

/* ---- metadata ---- */

/* The value of the RFC 822 header KEY in a METADATA/PKG-INFO (the
 * headers end at the first empty line), into out; "" if absent. */
void gw_meta_header(const char *meta, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key);
	const char *p = meta;

	out[0] = '\0';
	while (*p && *p != '\n' && !(p[0] == '\r' && p[1] == '\n')) {
		const char *eol = strchr(p, '\n');
		size_t llen = eol ? (size_t)(eol - p) : strlen(p);

		if (llen > klen && !strncasecmp(p, key, klen) &&
		    p[klen] == ':') {
			const char *v = p + klen + 1;
			size_t vlen = llen - klen - 1;

			while (vlen && (*v == ' ' || *v == '\t'))
				v++, vlen--;
			while (vlen &&
			       (v[vlen - 1] == '\r' || v[vlen - 1] == ' '))
				vlen--;
			if (vlen >= size)
				vlen = size - 1;
			memcpy(out, v, vlen);
			out[vlen] = '\0';
			return;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
}

/* The file name's NAME-VERSION for Python: the wheel's first two
 * dash-separated fields (PEP 427), the sdist's split at its last dash. */
static int python_file_nv(const char *file, enum gw_kind kind, char *name,
			  char *version)
{
	char stem[GW_FILE_MAX + 1];
	char *dash;
	size_t len = strlen(file);

	if (kind == GW_WHEEL) {
		const char *a = strchr(file, '-'), *b;

		if (!a || (size_t)(a - file) > GW_NAME_MAX)
			return -EBADMSG;
		b = strchr(a + 1, '-');
		if (!b || (size_t)(b - a - 1) > GW_VERSION_MAX)
			return -EBADMSG;
		memcpy(name, file, (size_t)(a - file));
		name[a - file] = '\0';
		memcpy(version, a + 1, (size_t)(b - a - 1));
		version[b - a - 1] = '\0';
		return 0;
	}
	memcpy(stem, file, len - 7); /* ".tar.gz" */
	stem[len - 7] = '\0';
	dash = strrchr(stem, '-');
	if (!dash || (size_t)(dash - stem) > GW_NAME_MAX ||
	    strlen(dash + 1) > GW_VERSION_MAX)
		return -EBADMSG;
	*dash = '\0';
	strcpy(name, stem);
	strcpy(version, dash + 1);
	return 0;
}

static int read_python(const char *file, const uint8_t *data, size_t len,
		       struct gw_pkg *p)
{
	char fname[GW_NAME_MAX + 1], fver[GW_VERSION_MAX + 1];
	char n1[GW_NAME_MAX + 1], n2[GW_NAME_MAX + 1];
	int rc;

	rc = python_file_nv(file, p->kind, fname, fver);
	if (rc < 0)
		return rc;
	if (p->kind == GW_WHEEL)
		rc = zip_find_metadata(data, len, &p->meta, &p->meta_len);
	else
		rc = tgz_find(data, len, false, "PKG-INFO", NULL, &p->meta,
			      &p->meta_len, NULL);
	if (rc < 0)
		return rc;
	if (strlen(p->meta) != p->meta_len)
		return -EBADMSG; /* a NUL inside */
	gw_meta_header(p->meta, "Name", p->name, sizeof(p->name));
	gw_meta_header(p->meta, "Version", p->version, sizeof(p->version));
	gw_meta_header(p->meta, "Requires-Python", p->requires_python,
		       sizeof(p->requires_python));
	if (gw_pep503_normalize(p->name, n1) < 0 ||
	    gw_pep503_normalize(fname, n2) < 0 || strcmp(n1, n2) ||
	    !gw_version_valid(p->version) || strcmp(p->version, fver))
		return -EBADMSG;
	for (const char *c = p->requires_python; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			return -EBADMSG;
	return 0;
}

static int read_npm(const uint8_t *data, size_t len, struct gw_pkg *p)
{
	static const char *const hooks[] = {"preinstall", "install",
					    "postinstall"};
	json_t *doc, *scripts;
	const char *name, *version;
	bool gyp = false;
	int rc;

	rc = tgz_find(data, len, true, "package.json", "binding.gyp", &p->meta,
		      &p->meta_len, &gyp);
	if (rc < 0)
		return rc;
	doc = json_loadb(p->meta, p->meta_len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return -EBADMSG;
	}
	name = json_string_value(json_object_get(doc, "name"));
	version = json_string_value(json_object_get(doc, "version"));
	rc = -EBADMSG;
	if (!name || !version || !gw_npm_name_valid(name) ||
	    !gw_version_valid(version))
		goto out;
	strcpy(p->name, name);
	strcpy(p->version, version);
	/* npm runs these hooks, and node-gyp for a binding.gyp, at install */
	p->install_script = gyp;
	scripts = json_object_get(doc, "scripts");
	for (size_t i = 0; i < 3; i++)
		if (json_is_string(json_object_get(scripts, hooks[i])))
			p->install_script = true;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

int gw_pkg_parse(const char *filename, const uint8_t *data, size_t len,
		 struct gw_pkg *ret)
{
	struct gw_pkg p = {0};
	int rc;

	if (!gw_file_name_valid(filename))
		return -EINVAL;
	if (len > GW_PKG_FILE_MAX)
		return -EFBIG;
	if (ends_with(filename, ".whl"))
		p.kind = GW_WHEEL;
	else if (ends_with(filename, ".tar.gz") && strlen(filename) > 7)
		p.kind = GW_SDIST;
	else if (ends_with(filename, ".tgz"))
		p.kind = GW_NPM;
	else
		return -EINVAL;
	rc = p.kind == GW_NPM ? read_npm(data, len, &p)
			      : read_python(filename, data, len, &p);
	if (rc < 0) {
		gw_pkg_release(&p);
		return rc;
	}
	gw_sha256_hex(data, len, p.sha256);
	gw_sha512_b64(data, len, p.sha512);
	p.size = len;
	*ret = p;
	return 0;
}

void gw_pkg_release(struct gw_pkg *pkg)
{
	free(pkg->meta);
	pkg->meta = NULL;
	pkg->meta_len = 0;
}
