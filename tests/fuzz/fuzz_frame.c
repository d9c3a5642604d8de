/* fuzz_frame.c: libFuzzer target for the agent frame decoder.
 *
 * The input is a byte stream from a hostile guest: it goes through the
 * incremental frame reader in uneven pieces (the cap is checked on the
 * length prefix) and every complete frame through al_msg_decode(); the
 * whole input is also tried as one frame with al_frame_decode(). Decoded
 * messages are re-encoded, which must succeed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *body, size_t len)
{
	struct al_msg m;
	char *buf;
	size_t n;
	int r;

	if (al_msg_decode(body, len, &m, NULL) < 0)
		return;
	r = al_msg_encode(&m, &buf, &n);
	if (r == 0)
		free(buf);
	else if (r == -EINVAL)
		abort(); /* what we accept we must be able to send back */
	al_msg_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_frame_reader r;
	struct al_msg m;
	size_t off = 0, step = 1;
	uint8_t *body;
	size_t len;
	long used;

	if (al_frame_decode(data, size, &m, NULL) == 0)
		al_msg_release(&m);
	al_frame_reader_init(&r, 1u << 20);
	while (off < size) {
		size_t n = size - off < step ? size - off : step;

		used = al_frame_reader_feed(&r, data + off, n);
		if (used < 0)
			break;
		off += (size_t)used;
		step = step * 3 % 257 + 1;
		if (al_frame_reader_take(&r, &body, &len) == 0) {
			check(body, len);
			free(body);
		}
	}
	al_frame_reader_release(&r);
	return 0;
}
