/* auth.c: the vsock channel's proof of the host: HMAC-SHA256 over the
 * agent's nonce, and a constant-time compare (see proto.h, "Authentication").
 *
 * SHA-256 (FIPS 180-4) and HMAC (RFC 2104) are written out here because the
 * guest agent is a static binary with no crypto library; both are checked
 * against the standard test vectors (FIPS 180-2's "abc", RFC 4231's HMAC
 * cases 1 and 2) in tests/agent/test_gate.c. No I/O.
 */
#include <string.h>

#include "proto.h"

#define SHA256_BLOCK 64u

struct sha256 {
	uint32_t h[8];		   /* chaining state */
	uint8_t buf[SHA256_BLOCK]; /* partial block */
	size_t used;		   /* bytes in buf */
	uint64_t total;		   /* bytes hashed so far */
};

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], v[8], t1, t2;
	unsigned i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + w[i - 7] +
		       (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3) +
		       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10);
	memcpy(v, s->h, sizeof(v));
	for (i = 0; i < 64; i++) {
		t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
		     ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
		t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
		     ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		s->h[i] += v[i];
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
				       0xa54ff53a, 0x510e527f, 0x9b05688c,
				       0x1f83d9ab, 0x5be0cd19};

	memset(s, 0, sizeof(*s));
	memcpy(s->h, h0, sizeof(h0));
}

static void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t n;

	s->total += len;
	while (len) {
		n = SHA256_BLOCK - s->used < len ? SHA256_BLOCK - s->used : len;
		memcpy(s->buf + s->used, p, n);
		s->used += n;
		p += n;
		len -= n;
		if (s->used == SHA256_BLOCK) {
			sha256_block(s, s->buf);
			s->used = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, uint8_t out[AL_SHA256_LEN])
{
	uint64_t bits = s->total * 8;
	uint8_t pad = 0x80, len[8];
	unsigned i;

	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, &pad, 1);
	pad = 0;
	while (s->used != SHA256_BLOCK - 8)
		sha256_update(s, &pad, 1);
	sha256_update(s, len, 8);
	for (i = 0; i < 32; i++)
		out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
	explicit_bzero(s, sizeof(*s));
}

void al_sha256(const void *data, size_t len, uint8_t out[AL_SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void al_hmac_sha256(const void *key, size_t key_len, const void *msg,
		    size_t msg_len, uint8_t out[AL_SHA256_LEN])
{
	uint8_t k[SHA256_BLOCK] = {0}, pad[SHA256_BLOCK], inner[AL_SHA256_LEN];
	struct sha256 s;
	unsigned i;

	if (key_len > SHA256_BLOCK)
		al_sha256(key, key_len, k);
	else
		memcpy(k, key, key_len);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, msg, msg_len);
	sha256_final(&s, inner);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, sizeof(pad));
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, out);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	explicit_bzero(inner, sizeof(inner));
}

void al_auth_mac(const uint8_t token[AL_AUTH_TOKEN_LEN],
		 const uint8_t nonce[AL_AUTH_NONCE_LEN],
		 uint8_t ret[AL_SHA256_LEN])
{
	uint8_t msg[sizeof(AL_AUTH_LABEL) - 1 + AL_AUTH_NONCE_LEN];

	memcpy(msg, AL_AUTH_LABEL, sizeof(AL_AUTH_LABEL) - 1);
	memcpy(msg + sizeof(AL_AUTH_LABEL) - 1, nonce, AL_AUTH_NONCE_LEN);
	al_hmac_sha256(token, AL_AUTH_TOKEN_LEN, msg, sizeof(msg), ret);
}

bool al_auth_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t diff = 0;

	/* every byte is read whatever the data: time says nothing of where
	 * the first difference is */
	for (size_t i = 0; i < len; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}
