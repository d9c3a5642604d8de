/* internal.h: helpers shared by the results/ sources; not a public API. */
#ifndef AL_RESULTS_INTERNAL_H
#define AL_RESULTS_INTERNAL_H

#include <jansson.h>

#include "results.h"

/* blob.c */
int al__blob_set(struct al_blob *b, const void *data, size_t len);
void al__blob_release(struct al_blob *b);
char *al__str_dup_n(const char *s, size_t len);

/* path.c: field paths for diagnostics */
void al__path_field(char *out, size_t size, const char *base, const char *name);
void al__path_index(char *out, size_t size, const char *base, size_t i);
void al__path_key(char *out, size_t size, const char *base, const char *key,
		  size_t len);

/* Elements in array `a`; passing a pointer does not compile. */
#define AL__ARRAY_SIZE(a)                                                      \
	(sizeof(a) / sizeof((a)[0]) +                                          \
	 0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(                 \
				     __typeof__(a), __typeof__(&(a)[0]))]))

/* diags.c: `d`, or `local` emptied when d is NULL, so that a decoder
 * always has somewhere to write. */
struct al_diags *al__diags_or(struct al_diags *d, struct al_diags *local);
/* Problems recorded so far, kept or dropped. */
size_t al__diags_count(const struct al_diags *d);

/* walk.c: reading bounded msgpack objects into structs */
/* Decode v into out; report problems to d; -ENOMEM only is fatal. */
typedef int (*al__walk_fn)(const msgpack_object *v, const char *path,
			   void *out, struct al_diags *d);
struct al__walk_field {
	const char *name; /* key in the map */
	size_t offset;    /* added to `out` before calling fn */
	al__walk_fn fn;   /* decodes the value */
	bool required;    /* reported as "required" when absent */
};
/* An object's fields; the walker's bit mask of seen fields holds 32. */
struct al__walk_table {
	const struct al__walk_field *fields; /* the keys it may have */
	size_t n;			     /* entries in fields */
	/* Rules across fields, run after a map was walked (NULL: none). */
	void (*check)(uint32_t seen, const char *path, struct al_diags *d);
};
/* Entries in array `a`, which must fit the walker's 32-bit `seen`. */
#define AL__WALK_COUNT(a)                                                      \
	(AL__ARRAY_SIZE(a) + 0 * sizeof(char[AL__ARRAY_SIZE(a) <= 32 ? 1 : -1]))
/* A table over array `a` (its length counted by the compiler). */
#define AL__WALK_TABLE(a, check)                                               \
	{                                                                      \
		(a), AL__WALK_COUNT(a), (check)                                \
	}
/* Is field i (an index into the table) in `seen`? */
#define AL__SEEN(seen, i) (((seen) >> (i)) & 1u)
/* Walk map `o` through `t`: unknown and duplicate keys are reported, then
 * absent required fields, then t->check. *ret_seen (may be NULL) gets a bit
 * per field found. */
int al__walk_map(const msgpack_object *o, const char *path,
		 const struct al__walk_table *t, void *out, struct al_diags *d,
		 uint32_t *ret_seen);
/* al__walk_map for a public al_*_unpack(): `d` may be NULL, and -EINVAL
 * when the walk reported anything. */
int al__walk_object(const msgpack_object *o, const char *path,
		    const struct al__walk_table *t, void *out,
		    struct al_diags *d);
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
/* Is v of `type` (MSGPACK_OBJECT_ARRAY or _MAP) with lo..hi entries? If
 * not, reports to d and returns false; else *ret_n gets the count. */
bool al__walk_len(const msgpack_object *v, const char *path,
		  msgpack_object_type type, uint32_t lo, uint32_t hi,
		  struct al_diags *d, uint32_t *ret_n);
/* An array of lo..hi elements, each `size` bytes, decoded by fn into a
 * calloc'd array. *ret and *ret_n are set once it is allocated (even if
 * an element then fails), so the owner's release frees what was read. */
int al__walk_array(const msgpack_object *v, const char *path, uint32_t lo,
		   uint32_t hi, size_t size, al__walk_fn fn, void **ret,
		   size_t *ret_n, struct al_diags *d);
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
/* Packs one schema object (a job, a result) as a msgpack map. */
typedef void (*al__pack_fn)(msgpack_packer *pk, const void *obj);
/* The public al_*_to_msgpack(): obj packed by fn into *ret. */
int al__encode(al__pack_fn fn, const void *obj, char **ret, size_t *ret_len);
void al__files_release(struct al_file *f, size_t n);

/* testcase.c: a step's test records and counts (docs/schema.md) */
int al__walk_tests(const msgpack_object *v, const char *path,
		   struct al_diags *d, struct al_test_case **ret,
		   size_t *ret_n);
int al__walk_test_counts(const msgpack_object *v, const char *path,
			 struct al_diags *d, struct al_test_counts *ret);
/* "test_counts": {...} (key and value) */
void al__pack_test_counts(msgpack_packer *pk, const struct al_test_counts *c);
/* "tests": [...] (key and value) */
void al__pack_tests(msgpack_packer *pk, const struct al_test_case *t, size_t n);

/* json.c: JSON <-> msgpack documents, and the decoders' and encoders'
 * public entry points */
/* The public al_*_to_json(): obj packed by fn, rendered as JSON. */
int al__encode_json(al__pack_fn fn, const void *obj, char **ret);

/* Decodes the root object of a document into out; reports to d. */
typedef int (*al__unpack_fn)(const msgpack_object *o, void *out,
			     struct al_diags *d);
/* The public al_*_from_msgpack(): size cap, bounded unpack, then `fn` on
 * the root object. `d` may be NULL. */
int al__decode_document(const void *buf, size_t len, size_t max_len,
			al__unpack_fn fn, void *out, struct al_diags *d);
/* The public al_*_from_json(): text of at most json_max bytes becomes a
 * msgpack document, decoded as above with mp_max. `d` may be NULL. */
int al__decode_json(const char *text, size_t len, size_t json_max,
		    size_t mp_max, al__unpack_fn fn, void *out,
		    struct al_diags *d);

#endif
