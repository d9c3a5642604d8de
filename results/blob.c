/* blob.c: byte strings: ownership helpers, UTF-8 validation, hex digits,
 * port numbers, base64. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int al__blob_set(struct al_blob *b, const void *data, size_t len)
{
	uint8_t *p = malloc(len + 1);

	if (!p)
		return -ENOMEM;
	if (len)
		memcpy(p, data, len);
	p[len] = 0;
	free(b->data);
	b->data = p;
	b->len = len;
	return 0;
}

void al__blob_release(struct al_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

char *al__str_dup_n(const char *s, size_t len)
{
	char *p = malloc(len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

int al_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int al_decimal_parse(const char *s, size_t n, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int al_port_parse(const char *s, size_t n, uint16_t *ret)
{
	uint64_t v;

	if (n > 5 || al_decimal_parse(s, n, 65535, &v) < 0 || v < 1)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF. */
bool al_utf8_valid(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint8_t c = s[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t al_base64_encoded_len(size_t len)
{
	return (len + 2) / 3 * 4;
}

void al_base64_encode(const uint8_t *in, size_t len, char *out)
{
	size_t i = 0;

	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | in[i + 1] << 8 | in[i + 2];

		*out++ = b64[v >> 18];
		*out++ = b64[v >> 12 & 63];
		*out++ = b64[v >> 6 & 63];
		*out++ = b64[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < len)
			v |= in[i + 1] << 8;
		*out++ = b64[v >> 18];
		*out++ = b64[v >> 12 & 63];
		*out++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
		*out++ = '=';
	}
	*out = 0;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard alphabet; padding optional (LAX: line breaks skipped); the
 * unused low bits of the last symbol zero unless LAX, so that every byte
 * string has exactly one accepted encoding. */
int al_base64_decode(const char *in, size_t len, unsigned flags,
		     struct al_blob *ret)
{
	bool lax = flags & AL_BASE64_LAX;
	uint8_t *out, *o;
	uint32_t acc = 0;
	size_t bits = 0, pad = 0;

	out = malloc(len / 4 * 3 + 4);
	if (!out)
		return -ENOMEM;
	o = out;
	for (size_t i = 0; i < len; i++) {
		int v = b64_value(in[i]);

		if (lax && (in[i] == '\n' || in[i] == '\r'))
			continue;
		if (in[i] == '=' && ++pad <= 2)
			continue;
		if (v < 0 || pad)
			goto bad;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (uint8_t)(acc >> bits);
		}
	}
	/* a lone symbol, or set bits no byte holds */
	if (bits >= 6 || (!lax && (acc & ((1u << bits) - 1))))
		goto bad;
	*o = 0;
	free(ret->data);
	ret->data = out;
	ret->len = (size_t)(o - out);
	return 0;
bad:
	free(out);
	return -EINVAL;
}
