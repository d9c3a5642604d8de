/* pack.c: canonical msgpack output helpers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void al__pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void al__pack_key(msgpack_packer *pk, const char *s)
{
	al__pack_str(pk, s);
}

/* UTF-8 text as str, anything else as bin: both decoders accept both. */
void al__pack_blob(msgpack_packer *pk, const struct al_blob *b)
{
	if (al_utf8_valid(b->data, b->len)) {
		msgpack_pack_str(pk, b->len);
		msgpack_pack_str_body(pk, b->data, b->len);
	} else {
		msgpack_pack_bin(pk, b->len);
		msgpack_pack_bin_body(pk, b->data, b->len);
	}
}

/* Append an already encoded msgpack value (meta) as it is. */
void al__pack_raw(msgpack_packer *pk, const struct al_blob *b)
{
	pk->callback(pk->data, (const char *)b->data, b->len);
}

void al__pack_files(msgpack_packer *pk, const struct al_file *f, size_t n)
{
	msgpack_pack_map(pk, n);
	for (size_t i = 0; i < n; i++) {
		al__pack_str(pk, f[i].path);
		al__pack_blob(pk, &f[i].content);
	}
}

/* msgpack's packer ignores a failed write and carries on; this sink
 * remembers the failure so that the encoder can report -ENOMEM once. */
static int pack_write(void *data, const char *buf, size_t len)
{
	struct al__pack_buf *pb = data;

	if (pb->failed || msgpack_sbuffer_write(&pb->sb, buf, len) < 0) {
		pb->failed = true;
		return -1;
	}
	return 0;
}

void al__pack_init(struct al__pack_buf *pb, msgpack_packer *pk)
{
	msgpack_sbuffer_init(&pb->sb);
	pb->failed = false;
	msgpack_packer_init(pk, pb, pack_write);
}

int al__pack_finish(struct al__pack_buf *pb, char **ret, size_t *ret_len)
{
	if (pb->failed || !pb->sb.data) {
		msgpack_sbuffer_destroy(&pb->sb);
		return -ENOMEM;
	}
	*ret_len = pb->sb.size;
	*ret = msgpack_sbuffer_release(&pb->sb);
	return 0;
}

int al__encode(al__pack_fn fn, const void *obj, char **ret, size_t *ret_len)
{
	struct al__pack_buf pb;
	msgpack_packer pk;

	al__pack_init(&pb, &pk);
	fn(&pk, obj);
	return al__pack_finish(&pb, ret, ret_len);
}

void al__files_release(struct al_file *f, size_t n)
{
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		free(f[i].path);
		al__blob_release(&f[i].content);
	}
	free(f);
}
