/* tar.c: a ustar decoder and header encoder for session file transfer.
 *
 * The decoder reads untrusted bytes (a client's upload, a guest's
 * download) from memory and hands back one checked entry at a time: every
 * length is capped, the checksum verified, and an entry is refused unless
 * it is a regular file, a directory, a symlink pointing down from its own
 * directory (relative, no `..`) or a hard link whose target follows the
 * path rule (extractors resolve it under the same root, following nothing).
 * Paths follow the `files` rule (al_relpath_valid: relative, no empty, . or ..
 * part, at most AL_PATH_MAX bytes); a leading
 * "./" and a directory's trailing "/" are accepted and dropped. pax and
 * GNU extension headers are refused: their meaning would differ between
 * this check and the tar that extracts. No I/O here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "results.h"

#define BLK 512

static int fail(struct al_tar *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct al_tar *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	t->failed = true;
	return -EINVAL;
}

void al_tar_init(struct al_tar *t, const void *buf, size_t len,
		 uint64_t max_bytes, uint32_t max_files)
{
	memset(t, 0, sizeof(*t));
	t->buf = buf;
	t->len = len;
	t->max_bytes = max_bytes;
	t->max_files = max_files;
}

/* An octal field: digits, then NUL or spaces; leading spaces allowed. */
static bool octal(const uint8_t *f, size_t n, uint64_t *ret)
{
	size_t i = 0;
	uint64_t v = 0;
	bool any = false;

	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v * 8 + (uint64_t)(f[i] - '0');
		any = true;
	}
	for (; i < n; i++)
		if (f[i] != 0 && f[i] != ' ')
			return false;
	*ret = v;
	return any;
}

/* A NUL-padded field's length (no NUL inside is required). */
static size_t fieldlen(const uint8_t *f, size_t n)
{
	const uint8_t *z = memchr(f, 0, n);

	return z ? (size_t)(z - f) : n;
}

/* Printable path bytes for messages: up to 60, others as '?'. */
static const char *shown(const char *p, char *out, size_t size)
{
	size_t i;

	for (i = 0; p[i] && i + 1 < size && i < 60; i++)
		out[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	out[i] = 0;
	return out;
}

/* Drop leading "./" (any number) and, for directories, one trailing "/". */
static size_t tidy(char *p, size_t n, bool dir)
{
	size_t s = 0;

	while (n - s >= 2 && p[s] == '.' && p[s + 1] == '/')
		s += 2;
	memmove(p, p + s, n - s);
	n -= s;
	if (dir && n > 0 && p[n - 1] == '/')
		n--;
	if (n == 1 && p[0] == '.' && dir)
		n = 0;
	p[n] = 0;
	return n;
}

/* A symlink target that points down from its directory: relative, no
 * empty, . or .. part. Anything else could lead out, directly or through
 * another link. */
static bool link_down(const char *p, size_t n)
{
	return al_relpath_valid(p, n);
}

/* The next header block at t->off, skipping zero blocks: 1 with *ret_h,
 * 0 at the end of the archive (two zero blocks, or one then EOF; the rest
 * must be zeros: tar pads to a record), or the failure. */
static int next_header(struct al_tar *t, const uint8_t **ret_h)
{
	for (;;) {
		const uint8_t *h = t->buf + t->off;
		bool zero = true;

		if (t->len - t->off < BLK) {
			if (t->off == t->len && t->off > 0 && t->zeros)
				break; /* one zero block then EOF: accept */
			return fail(t, "truncated archive at byte %zu", t->off);
		}
		for (size_t i = 0; i < BLK && zero; i++)
			zero = !h[i];
		if (!zero && !t->zeros) {
			*ret_h = h;
			return 1;
		}
		if (!zero)
			break;
		t->off += BLK;
		if (++t->zeros == 2)
			break;
	}
	for (size_t i = t->off; i < t->len; i++)
		if (t->buf[i])
			return fail(t,
				    "data after the end of the archive at "
				    "byte %zu",
				    i);
	t->done = true;
	return 0;
}

/* The header's checksum and magic, its size and mode. */
static int header_fields(struct al_tar *t, const uint8_t *h, uint64_t *ret_size,
			 uint64_t *ret_mode)
{
	uint64_t sum, want = 0;

	if (!octal(h + 148, 8, &sum))
		return fail(t, "bad header checksum field at byte %zu", t->off);
	for (size_t i = 0; i < BLK; i++)
		want += (i >= 148 && i < 156) ? ' ' : h[i];
	if (sum != want)
		return fail(t, "header checksum mismatch at byte %zu", t->off);
	if (memcmp(h + 257, "ustar", 5) != 0)
		return fail(t,
			    "not a ustar header at byte %zu (use "
			    "ustar format: tar --format=ustar)",
			    t->off);
	if (!octal(h + 124, 12, ret_size))
		return fail(t, "bad size field at byte %zu", t->off);
	if (!octal(h + 100, 8, ret_mode))
		*ret_mode = 0644;
	return 0;
}

/* The entry's path (prefix/name) into e->path, tidied: its length, or
 * the failure. */
static int entry_path(struct al_tar *t, const uint8_t *h, char typ,
		      struct al_tar_entry *e)
{
	size_t nl = fieldlen(h, 100), pl = fieldlen(h + 345, 155);

	if (pl + 1 + nl > AL_PATH_MAX || nl == 0)
		return fail(t,
			    "an entry's name is empty or longer than %d "
			    "bytes at byte %zu",
			    AL_PATH_MAX, t->off);
	if (pl) {
		memcpy(e->path, h + 345, pl);
		e->path[pl] = '/';
		memcpy(e->path + pl + 1, h, nl);
		nl += pl + 1;
	} else {
		memcpy(e->path, h, nl);
	}
	e->path[nl] = 0;
	return (int)tidy(e->path, nl, typ == '5');
}

/* A link entry's target into e->link: a symlink must point down, a hard
 * link name a file of the archive; neither has a size. */
static int entry_link(struct al_tar *t, const uint8_t *h, char typ,
		      uint64_t size, struct al_tar_entry *e)
{
	size_t pl = fieldlen(h + 157, 100);
	char sp[64];

	e->type = typ == '2' ? AL_TAR_SYMLINK : AL_TAR_HARDLINK;
	memcpy(e->link, h + 157, pl);
	e->link[pl] = 0;
	if (typ == '2' && !link_down(e->link, pl))
		return fail(t,
			    "%s: refused: a symlink must point down "
			    "from its directory (relative, no "
			    "..)",
			    shown(e->path, sp, sizeof(sp)));
	if (typ == '1') {
		pl = tidy(e->link, pl, false);
		if (!al_relpath_valid(e->link, pl))
			return fail(t,
				    "%s: refused: a hard link "
				    "must name a file inside the "
				    "archive",
				    shown(e->path, sp, sizeof(sp)));
	}
	if (size)
		return fail(t, "%s: a link with a size",
			    shown(e->path, sp, sizeof(sp)));
	return 0;
}

/* The entry's type: files, directories and links; everything else
 * (devices, fifos, pax and GNU extension headers) refused. */
static int entry_type(struct al_tar *t, const uint8_t *h, char typ,
		      uint64_t size, struct al_tar_entry *e)
{
	char sp[64];

	switch (typ) {
	case '0':
	case '\0':
	case '7':
		e->type = AL_TAR_FILE;
		return 0;
	case '5':
		e->type = AL_TAR_DIR;
		if (size)
			return fail(t, "%s: a directory with a size",
				    shown(e->path, sp, sizeof(sp)));
		return 0;
	case '2':
	case '1':
		return entry_link(t, h, typ, size, e);
	case '3':
	case '4':
	case '6':
		return fail(t,
			    "%s: refused: device nodes and fifos are "
			    "not allowed",
			    shown(e->path, sp, sizeof(sp)));
	default:
		return fail(t,
			    "%s: refused: entry type '%c' (pax or GNU "
			    "extension headers, sparse files) is not "
			    "allowed",
			    shown(e->path, sp, sizeof(sp)),
			    typ >= 0x20 && typ < 0x7f ? typ : '?');
	}
}

/* The entry's contents within the caps: e->data and e->size, t->off past
 * them. */
static int entry_data(struct al_tar *t, uint64_t size, struct al_tar_entry *e)
{
	char sp[64];

	if (++t->files > t->max_files)
		return fail(t, "over the cap of %u entries", t->max_files);
	if (size > t->max_bytes || t->bytes + size > t->max_bytes)
		return fail(t, "over the cap of %llu bytes of file contents",
			    (unsigned long long)t->max_bytes);
	t->bytes += size;
	t->off += BLK;
	if (size > t->len - t->off)
		return fail(t, "%s: truncated contents",
			    shown(e->path, sp, sizeof(sp)));
	e->size = size;
	e->data = t->buf + t->off;
	size = (size + BLK - 1) / BLK * BLK; /* padded to a block */
	t->off += size > t->len - t->off ? t->len - t->off : size;
	return 1;
}

int al_tar_next(struct al_tar *t, struct al_tar_entry *e)
{
	const uint8_t *h = NULL;
	uint64_t size = 0, mode = 0;
	char typ, sp[64];
	int r;

	if (t->failed)
		return -EINVAL;
	if (t->done)
		return 0;
	for (;;) {
		memset(e, 0, sizeof(*e));
		r = next_header(t, &h);
		if (r <= 0)
			return r;
		r = header_fields(t, h, &size, &mode);
		if (r < 0)
			return r;
		typ = (char)h[156];
		r = entry_path(t, h, typ, e);
		if (r < 0)
			return r;
		if (typ != '5' || r != 0)
			break;
		/* the archive's root "./": nothing to make */
		t->off += BLK;
		if (size)
			return fail(t, "a directory with a size");
	}
	if (!al_relpath_valid(e->path, (size_t)r))
		return fail(t,
			    "%s: refused: a path must be relative, with no "
			    "empty, . or .. part",
			    shown(e->path, sp, sizeof(sp)));
	e->mode = (uint32_t)(mode & 0777);
	r = entry_type(t, h, typ, size, e);
	return r < 0 ? r : entry_data(t, size, e);
}

int al_tar_check(const void *buf, size_t len, uint64_t max_bytes,
		 uint32_t max_files, char *err, size_t errlen)
{
	struct al_tar t;
	struct al_tar_entry e;
	int r;

	al_tar_init(&t, buf, len, max_bytes, max_files);
	while ((r = al_tar_next(&t, &e)) > 0)
		;
	if (r < 0 && err)
		snprintf(err, errlen, "%s", t.err);
	return r;
}

/* --- encoder ------------------------------------------------------------- */

int al_tar_header(uint8_t out[512], const char *path, enum al_tar_type type,
		  uint32_t mode, uint64_t size, const char *link)
{
	size_t n = strlen(path), split = 0;
	unsigned sum = 0;

	memset(out, 0, BLK);
	if (n <= 100) {
		memcpy(out, path, n);
	} else {
		/* prefix (<= 155) '/' name (<= 100) */
		for (size_t i = n; i-- > 0;)
			if (path[i] == '/' && n - i - 1 <= 100 && i <= 155) {
				split = i;
				break;
			}
		if (!split)
			return -ENAMETOOLONG;
		memcpy(out + 345, path, split);
		memcpy(out, path + split + 1, n - split - 1);
	}
	if (link && strlen(link) > 100)
		return -ENAMETOOLONG;
	if (size >= (1ull << 33))
		return -EFBIG;
	snprintf((char *)out + 100, 8, "%07o", mode & 0777);
	snprintf((char *)out + 108, 8, "%07o", 0);
	snprintf((char *)out + 116, 8, "%07o", 0);
	snprintf((char *)out + 124, 12, "%011llo", (unsigned long long)size);
	snprintf((char *)out + 136, 12, "%011o", 0);
	out[156] = type == AL_TAR_DIR	     ? '5'
		   : type == AL_TAR_SYMLINK  ? '2'
		   : type == AL_TAR_HARDLINK ? '1'
					     : '0';
	if (link)
		memcpy(out + 157, link, strlen(link));
	memcpy(out + 257, "ustar", 6);
	memcpy(out + 263, "00", 2);
	memset(out + 148, ' ', 8);
	for (size_t i = 0; i < BLK; i++)
		sum += out[i];
	snprintf((char *)out + 148, 8, "%06o", sum);
	return 0;
}
