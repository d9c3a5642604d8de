/* internal.h: helpers shared by the results/ sources; not a public API. */
#ifndef AL_RESULTS_INTERNAL_H
#define AL_RESULTS_INTERNAL_H

#include <jansson.h>

#include "results.h"

/* blob.c */
int al__blob_set(struct al_blob *b, const void *data, size_t len);
void al__blob_release(struct al_blob *b);
char *al__str_dup_n(const char *s, size_t len);
size_t al__base64_encoded_len(size_t len);
/* Encode into out (al__base64_encoded_len(len) + 1 bytes, NUL-terminated). */
void al__base64_encode(const uint8_t *in, size_t len, char *out);
/* Decode; *ret is malloc'd. -EINVAL on bad input, -ENOMEM. */
int al__base64_decode(const char *in, size_t len, struct al_blob *ret);

/* path.c: field paths for diagnostics */
void al__path_field(char *out, size_t size, const char *base, const char *name);
void al__path_index(char *out, size_t size, const char *base, size_t i);
void al__path_key(char *out, size_t size, const char *base, const char *key,
		  size_t len);

/* walk.c: reading bounded msgpack objects into structs */
struct al__walk_field {
	const char *name; /* key in the map */
	size_t offset;    /* added to `out` before calling fn */
	/* Decode v into out; report problems to d; -ENOMEM only is fatal. */
	int (*fn)(const msgpack_object *v, const char *path, void *out,
		  struct al_diags *d);
};
/* Walk map `o` through `fields`: unknown and duplicate keys are reported.
 * *ret_seen gets a bit per field found (fields index < 32). */
int al__walk_map(const msgpack_object *o, const char *path,
		 const struct al__walk_field *fields, size_t n, void *out,
		 struct al_diags *d, uint32_t *ret_seen);
bool al__walk_is_str(const msgpack_object *v, const char *s);
int al__walk_str(const msgpack_object *v, const char *path, size_t max,
		 struct al_diags *d, char **ret);
int al__walk_u32(const msgpack_object *v, const char *path, uint32_t lo,
		 uint32_t hi, struct al_diags *d, uint32_t *ret);
int al__walk_u64(const msgpack_object *v, const char *path, struct al_diags *d,
		 uint64_t *ret);
int al__walk_bool(const msgpack_object *v, const char *path, struct al_diags *d,
		  bool *ret);
int al__walk_blob(const msgpack_object *v, const char *path, struct al_diags *d,
		  struct al_blob *ret);
int al__walk_name(const msgpack_object *v, const char *path, struct al_diags *d,
		  char **ret);
int al__walk_relpath(const msgpack_object *v, const char *path,
		     struct al_diags *d, char **ret);
int al__walk_files(const msgpack_object *v, const char *path,
		   struct al_diags *d, struct al_file **ret, size_t *ret_n);
int al__walk_meta(const msgpack_object *v, const char *path, struct al_diags *d,
		  struct al_blob *ret);
/* Report a wrong type: "must be a TYPE". */
void al__walk_type_error(struct al_diags *d, const char *path,
			 const char *type);
/* Check a relative path; reports to d and returns false when invalid. */
bool al__relpath_check(const char *p, size_t len, const char *path,
		       struct al_diags *d);

/* pack.c: canonical msgpack output */
void al__pack_str(msgpack_packer *pk, const char *s);
void al__pack_key(msgpack_packer *pk, const char *s);
void al__pack_blob(msgpack_packer *pk, const struct al_blob *b);
void al__pack_raw(msgpack_packer *pk, const struct al_blob *b);
void al__pack_files(msgpack_packer *pk, const struct al_file *f, size_t n);
struct al__pack_buf {
	msgpack_sbuffer sb; /* the bytes */
	bool failed;        /* a write failed: the bytes are incomplete */
};
void al__pack_init(struct al__pack_buf *pb, msgpack_packer *pk);
/* Give the bytes to the caller (or free them and return -ENOMEM). */
int al__pack_finish(struct al__pack_buf *pb, char **ret, size_t *ret_len);
void al__files_release(struct al_file *f, size_t n);

/* json.c: JSON <-> msgpack documents */
/* Parse JSON text into a msgpack document (for the msgpack decoders). */
int al__json_to_msgpack(const char *text, size_t len, size_t max_len,
			char **ret, size_t *ret_len, struct al_diags *d);
/* Render a msgpack document as JSON text (bin -> {"base64": ...}). */
int al__msgpack_to_json(const char *buf, size_t len, char **ret);

/* Document-level decoding shared by jobs and results: size cap, bounded
 * unpack, then `fn` on the root object. */
int al__decode_document(const void *buf, size_t len, size_t max_len,
			int (*fn)(const msgpack_object *o, void *out,
				  struct al_diags *d),
			void *out, struct al_diags *d);

#endif
