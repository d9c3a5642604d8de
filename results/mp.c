/* mp.c: a bounded front door for msgpack-c.
 *
 * msgpack-c's unpacker allocates an array of N objects as soon as it reads
 * a container header announcing N, before it knows whether N objects follow.
 * Five hostile bytes can thus ask for gigabytes. al_mp_check() walks the
 * encoding first, allocating nothing: every container must fit in the bytes
 * that remain (each object takes at least one byte), nesting stays within
 * AL_DEPTH_MAX (msgpack-c's own fixed stack is 32), and the total object
 * count within the caller's cap. Only then does al_mp_unpack() hand the
 * bytes to msgpack-c, whose zone then needs at most ~48 bytes per object.
 * Strings in the result point into the caller's buffer.
 *
 * Callers: every decoder of jobs, results and agent frames.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

struct mp_scan {
	const uint8_t *p;   /* next byte */
	const uint8_t *end; /* one past the last byte */
	size_t nodes;       /* objects seen so far */
	size_t max_nodes;   /* cap on nodes */
};

static int scan_be(struct mp_scan *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if ((size_t)(s->end - s->p) < n)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | s->p[i];
	s->p += n;
	*ret = v;
	return 0;
}

static int scan_skip(struct mp_scan *s, uint64_t n)
{
	if ((uint64_t)(s->end - s->p) < n)
		return -EBADMSG;
	s->p += n;
	return 0;
}

/* Width of the length field of str/bin/ext/array/map headers, by tag. */
static int scan_header(uint8_t c, size_t *ret_width, int *ret_kind)
{
	/* kind: 0 = bytes (str/bin), 1 = ext (extra type byte), 2 = array,
	 * 3 = map */
	static const struct {
		uint8_t tag;
		uint8_t width;
		uint8_t kind;
	} tab[] = {
		{0xc4, 1, 0}, {0xc5, 2, 0}, {0xc6, 4, 0}, {0xc7, 1, 1},
		{0xc8, 2, 1}, {0xc9, 4, 1}, {0xd9, 1, 0}, {0xda, 2, 0},
		{0xdb, 4, 0}, {0xdc, 2, 2}, {0xdd, 4, 2}, {0xde, 2, 3},
		{0xdf, 4, 3},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (tab[i].tag == c) {
			*ret_width = tab[i].width;
			*ret_kind = tab[i].kind;
			return 0;
		}
	}
	return -ENOENT;
}

static int scan_obj(struct mp_scan *s, int depth);

static int scan_container(struct mp_scan *s, uint64_t count, int per,
			  int depth)
{
	if (depth >= AL_DEPTH_MAX)
		return -E2BIG;
	/* each object takes at least one byte */
	if (count > (uint64_t)(s->end - s->p) / (uint64_t)per)
		return -EBADMSG;
	for (uint64_t i = 0; i < count * (uint64_t)per; i++) {
		int r = scan_obj(s, depth + 1);

		if (r < 0)
			return r;
	}
	return 0;
}

static int scan_obj(struct mp_scan *s, int depth)
{
	size_t width;
	uint64_t n;
	int kind, r;
	uint8_t c;

	if (s->p >= s->end)
		return -EBADMSG;
	if (++s->nodes > s->max_nodes)
		return -E2BIG;
	c = *s->p++;
	if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
		return 0;
	if (c >= 0x80 && c <= 0x8f)
		return scan_container(s, c & 0x0f, 2, depth);
	if (c >= 0x90 && c <= 0x9f)
		return scan_container(s, c & 0x0f, 1, depth);
	if (c >= 0xa0 && c <= 0xbf)
		return scan_skip(s, c & 0x1f);
	switch (c) {
	case 0xca: return scan_skip(s, 4);
	case 0xcb: return scan_skip(s, 8);
	case 0xcc: case 0xd0: return scan_skip(s, 1);
	case 0xcd: case 0xd1: return scan_skip(s, 2);
	case 0xce: case 0xd2: return scan_skip(s, 4);
	case 0xcf: case 0xd3: return scan_skip(s, 8);
	case 0xd4: return scan_skip(s, 2);
	case 0xd5: return scan_skip(s, 3);
	case 0xd6: return scan_skip(s, 5);
	case 0xd7: return scan_skip(s, 9);
	case 0xd8: return scan_skip(s, 17);
	}
	if (scan_header(c, &width, &kind) < 0)
		return -EBADMSG; /* 0xc1, never used */
	r = scan_be(s, width, &n);
	if (r < 0)
		return r;
	if (kind == 0)
		return scan_skip(s, n);
	if (kind == 1)
		return scan_skip(s, n + 1);
	return scan_container(s, n, kind == 3 ? 2 : 1, depth);
}

long al_mp_check(const void *buf, size_t len, size_t max_nodes)
{
	struct mp_scan s = {
		.p = buf, .end = (const uint8_t *)buf + len,
		.max_nodes = max_nodes,
	};
	int r = scan_obj(&s, 0);

	if (r < 0)
		return r;
	if (s.p != s.end)
		return -EBADMSG; /* trailing bytes */
	return (long)s.nodes;
}

int al_mp_unpack(const void *buf, size_t len, size_t max_nodes,
		 msgpack_zone *zone, msgpack_object *ret)
{
	size_t off = 0;
	long n = al_mp_check(buf, len, max_nodes);

	if (n < 0)
		return (int)n;
	switch (msgpack_unpack(buf, len, &off, zone, ret)) {
	case MSGPACK_UNPACK_SUCCESS:
		return 0;
	case MSGPACK_UNPACK_NOMEM_ERROR:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}
