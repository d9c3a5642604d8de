/* cluster.c: Redis Cluster redirections and hash slots (cluster.h). Pure:
 * no I/O; the clients in queue.c and conn.c act on what it says. */
#include <arpa/inet.h>
#include <strings.h>
#include <string.h>

#include "cluster.h"

/* Does s[0..len) start with the word w followed by a space (or end)? */
static size_t word(const char *s, size_t len, const char *w)
{
	size_t n = strlen(w);

	if (len < n || memcmp(s, w, n) != 0)
		return 0;
	if (len > n && s[n] != ' ')
		return 0;
	return n;
}

/* A decimal of 1..5 digits at s[*i..len), at most max. */
static bool number(const char *s, size_t len, size_t *i, unsigned max,
		   unsigned *ret)
{
	unsigned v = 0;
	size_t start = *i;

	while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - start < 5)
		v = v * 10 + (unsigned)(s[(*i)++] - '0');
	if (*i == start || v > max)
		return false;
	*ret = v;
	return true;
}

/* "SLOT HOST:PORT" (HOST may be empty, or an IPv6 address: the last ':'
 * splits). */
static bool target(const char *s, size_t len, struct alq_redirect *r)
{
	size_t i = 0, colon = 0, hl;
	unsigned port;

	if (!number(s, len, &i, ALQ_SLOTS - 1, &r->slot) || i >= len ||
	    s[i++] != ' ')
		return false;
	for (size_t j = i; j < len; j++) {
		if (s[j] == ':')
			colon = j;
		else if (s[j] == ' ' || s[j] < 0x21 || s[j] > 0x7e)
			return false;
	}
	if (!colon)
		return false;
	hl = colon - i;
	if (hl > ALQ_HOST_MAX)
		return false;
	memcpy(r->host, s + i, hl);
	r->host[hl] = '\0';
	i = colon + 1;
	if (!number(s, len, &i, 65535, &port) || i != len || port == 0)
		return false;
	r->port = (int)port;
	return true;
}

void alq_redirect_parse(const char *s, size_t len, struct alq_redirect *ret)
{
	size_t n;

	memset(ret, 0, sizeof(*ret));
	if (!s)
		return;
	if ((n = word(s, len, "MOVED")) || (n = word(s, len, "ASK"))) {
		bool moved = s[0] == 'M';

		if (len > n + 1 && target(s + n + 1, len - n - 1, ret))
			ret->kind =
			    moved ? ALQ_REDIRECT_MOVED : ALQ_REDIRECT_ASK;
		else
			memset(ret, 0, sizeof(*ret));
	} else if (word(s, len, "TRYAGAIN")) {
		ret->kind = ALQ_REDIRECT_TRYAGAIN;
	} else if (word(s, len, "CLUSTERDOWN")) {
		ret->kind = ALQ_REDIRECT_DOWN;
	}
}

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, as the cluster
 * specification's keyHashSlot uses it. */
static uint16_t crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021)
					   : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned alq_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);

	if (open) {
		size_t from = (size_t)(open - key) + 1;
		const char *close = memchr(key + from, '}', len - from);

		if (close && close > key + from)
			return crc16(key + from, (size_t)(close - key) - from) %
			       ALQ_SLOTS;
	}
	return crc16(key, len) % ALQ_SLOTS;
}

/* 0 plain, 1 loopback, -1 always denied; a name is plain. */
static int addr_class(const char *host)
{
	unsigned char a[16];

	if (!strcasecmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, a) == 1) {
		if (a[0] == 127)
			return 1;
		if (a[0] == 0 || (a[0] == 169 && a[1] == 254) || a[0] >= 224)
			return -1; /* this net, link-local/metadata, mcast */
		if (a[0] == 100 && a[1] == 100 && a[2] == 100 && a[3] == 200)
			return -1; /* Alibaba's metadata */
		return 0;
	}
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char lo[16] = {[15] = 1}, any[16] = {0};
		static const unsigned char ec2[16] = {
		    0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};

		if (!memcmp(a, lo, 16))
			return 1;
		if (!memcmp(a, any, 16) || a[0] == 0xff ||
		    (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) ||
		    !memcmp(a, ec2, 16))
			return -1;
		if (!memcmp(a, any, 10) && a[10] == 0xff && a[11] == 0xff) {
			char v4[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, a + 12, v4, sizeof(v4));
			return addr_class(v4);
		}
		return 0;
	}
	return 0;
}

bool alq_node_allowed(const char *host, const char *seed)
{
	int k = addr_class(host);

	if (k < 0)
		return false;
	return k == 0 || (seed && addr_class(seed) == 1);
}
