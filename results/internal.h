/* internal.h: helpers shared by the results/ sources; not a public API. */
#ifndef AL_RESULTS_INTERNAL_H
#define AL_RESULTS_INTERNAL_H

#include <jansson.h>

#include "results.h"

/* blob.c */
int blob_set(struct al_blob *b, const void *data, size_t len);
void blob_release(struct al_blob *b);
char *str_dup_n(const char *s, size_t len);
size_t base64_encoded_len(size_t len);
/* Encode into out (base64_encoded_len(len) + 1 bytes, NUL-terminated). */
void base64_encode(const uint8_t *in, size_t len, char *out);
/* Decode; *ret is malloc'd. -EINVAL on bad input, -ENOMEM. */
int base64_decode(const char *in, size_t len, struct al_blob *ret);

/* path.c: field paths for diagnostics */
void path_field(char *out, size_t size, const char *base, const char *name);
void path_index(char *out, size_t size, const char *base, size_t i);
void path_key(char *out, size_t size, const char *base, const char *key,
	      size_t len);

/* walk.c: reading bounded msgpack objects into structs */
struct walk_field {
	const char *name; /* key in the map */
	size_t offset;    /* added to `out` before calling fn */
	/* Decode v into out; report problems to d; -ENOMEM only is fatal. */
	int (*fn)(const msgpack_object *v, const char *path, void *out,
		  struct al_diags *d);
};
/* Walk map `o` through `fields`: unknown and duplicate keys are reported.
 * *ret_seen gets a bit per field found (fields index < 32). */
int walk_map(const msgpack_object *o, const char *path,
	     const struct walk_field *fields, size_t n, void *out,
	     struct al_diags *d, uint32_t *ret_seen);
bool walk_is_str(const msgpack_object *v, const char *s);
int walk_str(const msgpack_object *v, const char *path, size_t max,
	     struct al_diags *d, char **ret);
int walk_u32(const msgpack_object *v, const char *path, uint32_t lo,
	     uint32_t hi, struct al_diags *d, uint32_t *ret);
int walk_u64(const msgpack_object *v, const char *path, struct al_diags *d,
	     uint64_t *ret);
int walk_bool(const msgpack_object *v, const char *path, struct al_diags *d,
	      bool *ret);
int walk_blob(const msgpack_object *v, const char *path, struct al_diags *d,
	      struct al_blob *ret);
int walk_name(const msgpack_object *v, const char *path, struct al_diags *d,
	      char **ret);
int walk_relpath(const msgpack_object *v, const char *path,
		 struct al_diags *d, char **ret);
int walk_files(const msgpack_object *v, const char *path, struct al_diags *d,
	       struct al_file **ret, size_t *ret_n);
int walk_meta(const msgpack_object *v, const char *path, struct al_diags *d,
	      struct al_blob *ret);
/* Report a wrong type: "must be a TYPE". */
void walk_type_error(struct al_diags *d, const char *path, const char *type);
/* Check a relative path; reports to d and returns false when invalid. */
bool relpath_check(const char *p, size_t len, const char *path,
		   struct al_diags *d);

/* pack.c: canonical msgpack output */
void pack_str(msgpack_packer *pk, const char *s);
void pack_key(msgpack_packer *pk, const char *s);
void pack_blob(msgpack_packer *pk, const struct al_blob *b);
void pack_raw(msgpack_packer *pk, const struct al_blob *b);
void pack_files(msgpack_packer *pk, const struct al_file *f, size_t n);
struct pack_buf {
	msgpack_sbuffer sb; /* the bytes */
	bool failed;        /* a write failed: the bytes are incomplete */
};
void pack_init(struct pack_buf *pb, msgpack_packer *pk);
/* Give the bytes to the caller (or free them and return -ENOMEM). */
int pack_finish(struct pack_buf *pb, char **ret, size_t *ret_len);
void files_release(struct al_file *f, size_t n);

/* json.c: JSON <-> msgpack documents */
/* Parse JSON text into a msgpack document (for the msgpack decoders). */
int json_to_msgpack(const char *text, size_t len, size_t max_len,
		    char **ret, size_t *ret_len, struct al_diags *d);
/* Render a msgpack document as JSON text (bin -> {"base64": ...}). */
int msgpack_to_json(const char *buf, size_t len, char **ret);

/* Document-level decoding shared by jobs and results: size cap, bounded
 * unpack, then `fn` on the root object. */
int decode_document(const void *buf, size_t len, size_t max_len,
		    int (*fn)(const msgpack_object *o, void *out,
			      struct al_diags *d),
		    void *out, struct al_diags *d);

#endif
