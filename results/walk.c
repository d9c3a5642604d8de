/* walk.c: reading bounded msgpack objects into structs, reporting every
 * problem with its field path instead of stopping at the first.
 *
 * Handlers return 0 after reporting a problem to `d` (so the walk goes on
 * and finds the next one) and a negative errno only when they cannot go on
 * at all (-ENOMEM). Objects come from al_mp_unpack(), so counts are already
 * bounded by the input size.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void al__walk_type_error(struct al_diags *d, const char *path, const char *type)
{
	al_diags_add(d, path, "must be %s", type);
}

bool al__walk_is_str(const msgpack_object *v, const char *s)
{
	size_t n = strlen(s);

	return v->type == MSGPACK_OBJECT_STR && v->via.str.size == n &&
	       memcmp(v->via.str.ptr, s, n) == 0;
}

/* The type name a diagnostic gives an array or a map. */
static const char *container_name(msgpack_object_type type)
{
	return type == MSGPACK_OBJECT_MAP ? "an object" : "an array";
}

/* The one bounds check every list in the schema has: a wrong type or a
 * count outside lo..hi is reported ("must have 1..256 entries", or "at
 * most" when lo is 0) and the handler skips the field. */
bool al__walk_len(const msgpack_object *v, const char *path,
		  msgpack_object_type type, uint32_t lo, uint32_t hi,
		  struct al_diags *d, uint32_t *ret_n)
{
	uint32_t n;

	if (v->type != type) {
		al__walk_type_error(d, path, container_name(type));
		return false;
	}
	n = type == MSGPACK_OBJECT_MAP ? v->via.map.size : v->via.array.size;
	if (n < lo || n > hi) {
		if (lo > 0)
			al_diags_add(d, path, "must have %u..%u entries", lo,
				     hi);
		else
			al_diags_add(d, path, "must have at most %u entries",
				     hi);
		return false;
	}
	*ret_n = n;
	return true;
}

int al__walk_array(const msgpack_object *v, const char *path, uint32_t lo,
		   uint32_t hi, size_t size, al__walk_fn fn, void **ret,
		   size_t *ret_n, struct al_diags *d)
{
	char sub[160], *a;
	uint32_t n;
	int r = 0;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_ARRAY, lo, hi, d, &n))
		return 0;
	a = calloc(n ? n : 1, size);
	if (!a)
		return -ENOMEM;
	*ret = a;
	*ret_n = n;
	for (uint32_t i = 0; i < n && r != -ENOMEM; i++) {
		al__path_index(sub, sizeof(sub), path, i);
		r = fn(&v->via.array.ptr[i], sub, a + i * size, d);
	}
	return r == -ENOMEM ? r : 0;
}

/* `base.key` for plain keys, `base["key"]` (escaped) for any other. */
static void unknown_path(char *out, size_t size, const char *base,
			 const msgpack_object *key)
{
	const char *k = key->via.str.ptr;
	size_t n = key->via.str.size;
	bool plain = n > 0 && n <= 64;
	char buf[65];

	for (size_t i = 0; plain && i < n; i++)
		plain = (k[i] >= 'a' && k[i] <= 'z') ||
			(k[i] >= 'A' && k[i] <= 'Z') ||
			(k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
			k[i] == '-' || k[i] == '.';
	if (!plain) {
		al__path_key(out, size, base, k, n);
		return;
	}
	memcpy(buf, k, n);
	buf[n] = 0;
	al__path_field(out, size, base, buf);
}

/* The field named by key, or NULL. */
static const struct al__walk_field *find_field(const struct al__walk_table *t,
					       const msgpack_object *key)
{
	for (size_t f = 0; f < t->n; f++)
		if (t->fields[f].name &&
		    al__walk_is_str(key, t->fields[f].name))
			return &t->fields[f];
	return NULL;
}

/* After the keys: absent required fields, then the table's own rules. */
static void walk_after(const struct al__walk_table *t, uint32_t seen,
		       const char *path, struct al_diags *d)
{
	char sub[160];

	for (size_t f = 0; f < t->n; f++) {
		if (!t->fields[f].required || AL__SEEN(seen, f))
			continue;
		al__path_field(sub, sizeof(sub), path, t->fields[f].name);
		al_diags_add(d, sub, "required");
	}
	if (t->check)
		t->check(seen, path, d);
}

int al__walk_map(const msgpack_object *o, const char *path,
		 const struct al__walk_table *t, void *out, struct al_diags *d,
		 uint32_t *ret_seen)
{
	const struct al__walk_field *f;
	uint32_t seen = 0, bit;
	char sub[160];
	int r;

	if (ret_seen)
		*ret_seen = 0;
	if (o->type != MSGPACK_OBJECT_MAP) {
		al__walk_type_error(d, path, "an object");
		return 0;
	}
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];

		if (kv->key.type != MSGPACK_OBJECT_STR) {
			al_diags_add(d, path, "keys must be strings");
			continue;
		}
		f = find_field(t, &kv->key);
		if (!f) {
			unknown_path(sub, sizeof(sub), path, &kv->key);
			al_diags_add(d, sub, "unknown field");
			continue;
		}
		al__path_field(sub, sizeof(sub), path, f->name);
		bit = 1u << (f - t->fields);
		if (seen & bit) {
			al_diags_add(d, sub, "duplicate key");
			continue;
		}
		seen |= bit;
		r = f->fn(&kv->val, sub, (char *)out + f->offset, d);
		if (r < 0)
			return r;
	}
	walk_after(t, seen, path, d);
	if (ret_seen)
		*ret_seen = seen;
	return 0;
}

int al__walk_object(const msgpack_object *o, const char *path,
		    const struct al__walk_table *t, void *out,
		    struct al_diags *d)
{
	struct al_diags local;
	size_t before;
	int r;

	d = al__diags_or(d, &local);
	before = al__diags_count(d);
	r = al__walk_map(o, path, t, out, d, NULL);
	if (r == 0 && al__diags_count(d) != before)
		r = -EINVAL;
	return r;
}

int al__walk_str(const msgpack_object *v, const char *path, size_t max,
		 struct al_diags *d, char **ret)
{
	if (v->type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string");
		return 0;
	}
	if (v->via.str.size > max) {
		al_diags_add(d, path, "must be at most %zu bytes", max);
		return 0;
	}
	if (memchr(v->via.str.ptr, 0, v->via.str.size)) {
		al_diags_add(d, path, "must not contain NUL");
		return 0;
	}
	if (!al_utf8_valid((const uint8_t *)v->via.str.ptr, v->via.str.size)) {
		al_diags_add(d, path, "must be valid UTF-8");
		return 0;
	}
	free(*ret);
	*ret = al__str_dup_n(v->via.str.ptr, v->via.str.size);
	return *ret ? 0 : -ENOMEM;
}

int al__walk_u64(const msgpack_object *v, const char *path, struct al_diags *d,
		 uint64_t *ret)
{
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*ret = v->via.u64;
		return 0;
	}
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		al_diags_add(d, path, "must not be negative");
	else
		al__walk_type_error(d, path, "an integer");
	return 0;
}

int al__walk_u32(const msgpack_object *v, const char *path, uint32_t lo,
		 uint32_t hi, struct al_diags *d, uint32_t *ret)
{
	if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    v->type != MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		al__walk_type_error(d, path, "an integer");
		return 0;
	}
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER || v->via.u64 < lo ||
	    v->via.u64 > hi) {
		al_diags_add(d, path, "must be %u..%u", lo, hi);
		return 0;
	}
	*ret = (uint32_t)v->via.u64;
	return 0;
}

int al__walk_bool(const msgpack_object *v, const char *path, struct al_diags *d,
		  bool *ret)
{
	if (v->type != MSGPACK_OBJECT_BOOLEAN) {
		al__walk_type_error(d, path, "a boolean");
		return 0;
	}
	*ret = v->via.boolean;
	return 0;
}

/* A str, a bin, or {"base64": "..."}. */
int al__walk_blob(const msgpack_object *v, const char *path, struct al_diags *d,
		  struct al_blob *ret)
{
	const msgpack_object *b64;
	char sub[160];
	int r;

	if (v->type == MSGPACK_OBJECT_STR)
		return al__blob_set(ret, v->via.str.ptr, v->via.str.size);
	if (v->type == MSGPACK_OBJECT_BIN)
		return al__blob_set(ret, v->via.bin.ptr, v->via.bin.size);
	if (v->type != MSGPACK_OBJECT_MAP || v->via.map.size != 1 ||
	    !al__walk_is_str(&v->via.map.ptr[0].key, "base64") ||
	    v->via.map.ptr[0].val.type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string or {\"base64\": ...}");
		return 0;
	}
	b64 = &v->via.map.ptr[0].val;
	r = al_base64_decode(b64->via.str.ptr, b64->via.str.size, 0, ret);
	if (r == -EINVAL) {
		al__path_field(sub, sizeof(sub), path, "base64");
		al_diags_add(d, sub, "invalid base64");
		return 0;
	}
	return r;
}

bool al_name_valid_n(const char *s, size_t n)
{
	if (n == 0 || n > AL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '_' || c == '.' || c == '-'));
		if (!ok)
			return false;
	}
	return true;
}

bool al_name_valid(const char *s)
{
	return al_name_valid_n(s, strlen(s));
}

/* Template, network and step names. */
int al__walk_name(const msgpack_object *v, const char *path, struct al_diags *d,
		  char **ret)
{
	const char *s;
	size_t n;

	if (v->type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string");
		return 0;
	}
	s = v->via.str.ptr;
	n = v->via.str.size;
	if (!al_name_valid_n(s, n)) {
		al_diags_add(d, path, "must match [a-z0-9][a-z0-9_.-]{0,%d}",
			     AL_NAME_MAX - 1);
		return 0;
	}
	return al__walk_str(v, path, AL_NAME_MAX, d, ret);
}

/* Relative paths inside the work dir: no absolute paths, no . or ..
 * components, no empty components, no NUL, at most AL_PATH_MAX bytes.
 * Rejecting instead of normalising means a path has one spelling, so
 * duplicate detection is a plain comparison. */
static const char *relpath_reason(const char *p, size_t len)
{
	if (len == 0)
		return "must not be empty";
	if (len > AL_PATH_MAX)
		return "must be at most 512 bytes";
	if (memchr(p, 0, len))
		return "must not contain NUL";
	if (p[0] == '/')
		return "must be a relative path";
	if (!al_utf8_valid((const uint8_t *)p, len))
		return "must be valid UTF-8";
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		size_t n = i - start;

		if (n == 0)
			return "must not contain empty components";
		if ((n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			return "must not contain . or .. components";
		start = i + 1;
	}
	return NULL;
}

bool al_relpath_valid(const char *p, size_t len)
{
	return relpath_reason(p, len) == NULL;
}

bool al__relpath_check(const char *p, size_t len, const char *path,
		       struct al_diags *d)
{
	const char *why = relpath_reason(p, len);

	if (why)
		al_diags_add(d, path, "%s", why);
	return !why;
}

int al__walk_relpath(const msgpack_object *v, const char *path,
		     struct al_diags *d, char **ret)
{
	if (v->type != MSGPACK_OBJECT_STR) {
		al__walk_type_error(d, path, "a string");
		return 0;
	}
	if (!al__relpath_check(v->via.str.ptr, v->via.str.size, path, d))
		return 0;
	return al__walk_str(v, path, AL_PATH_MAX, d, ret);
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct al_file *)a)->path,
		      ((const struct al_file *)b)->path);
}

/* After sorting, a path that is a directory of another sorts right before
 * its first child ("a" < "a/b"; '/' sorts before the other path bytes that
 * could follow, except those below 0x2f, so scan forward). */
static void files_conflicts(const struct al_file *f, size_t n,
			    const char *path, struct al_diags *d)
{
	char sub[160], other[160];

	for (size_t i = 0; i < n; i++) {
		size_t li = strlen(f[i].path);

		for (size_t j = i + 1; j < n; j++) {
			if (strncmp(f[i].path, f[j].path, li) != 0)
				break;
			if (f[j].path[li] != '/')
				continue;
			al__path_key(sub, sizeof(sub), path, f[j].path,
				     strlen(f[j].path));
			al__path_key(other, sizeof(other), path, f[i].path, li);
			al_diags_add(d, sub, "conflicts with %s", other);
			break;
		}
	}
}

/* A map of relative path -> blob, sorted by path on return. */
int al__walk_files(const msgpack_object *v, const char *path,
		   struct al_diags *d, struct al_file **ret, size_t *ret_n)
{
	struct al_file *f;
	size_t n = 0;
	char sub[160];
	uint32_t len;
	int r = 0;

	if (!al__walk_len(v, path, MSGPACK_OBJECT_MAP, 0, AL_FILES_MAX, d,
			  &len))
		return 0;
	f = calloc(len ? len : 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (uint32_t i = 0; i < len && r == 0; i++) {
		const msgpack_object_kv *kv = &v->via.map.ptr[i];
		size_t before = d->n + d->dropped;

		if (kv->key.type != MSGPACK_OBJECT_STR) {
			al_diags_add(d, path, "keys must be strings");
			continue;
		}
		al__path_key(sub, sizeof(sub), path, kv->key.via.str.ptr,
			     kv->key.via.str.size);
		if (!al__relpath_check(kv->key.via.str.ptr,
				       kv->key.via.str.size, sub, d))
			continue;
		r = al__walk_blob(&kv->val, sub, d, &f[n].content);
		if (r == 0 && d->n + d->dropped == before) {
			f[n].path = al__str_dup_n(kv->key.via.str.ptr,
						  kv->key.via.str.size);
			r = f[n].path ? 0 : -ENOMEM;
			n++;
		} else {
			al__blob_release(&f[n].content);
		}
	}
	if (r == 0) {
		qsort(f, n, sizeof(*f), file_cmp);
		for (size_t i = 1; i < n; i++) {
			if (strcmp(f[i - 1].path, f[i].path) == 0) {
				al__path_key(sub, sizeof(sub), path, f[i].path,
					     strlen(f[i].path));
				al_diags_add(d, sub, "duplicate key");
			}
		}
		files_conflicts(f, n, path, d);
	}
	al__files_release(*ret, *ret_n);
	*ret = f;
	*ret_n = n;
	return r;
}

static int meta_depth(const msgpack_object *v, int depth, const char *path,
		      struct al_diags *d)
{
	if (v->type == MSGPACK_OBJECT_EXT) {
		al_diags_add(d, path, "must not hold msgpack ext values");
		return -1;
	}
	if ((v->type == MSGPACK_OBJECT_FLOAT32 ||
	     v->type == MSGPACK_OBJECT_FLOAT64) &&
	    !isfinite(v->via.f64)) {
		al_diags_add(d, path, "must not hold NaN or infinity");
		return -1; /* JSON has no form for them */
	}
	if (v->type != MSGPACK_OBJECT_ARRAY && v->type != MSGPACK_OBJECT_MAP)
		return 0;
	if (depth >= AL_META_DEPTH_MAX) {
		al_diags_add(d, path, "nests deeper than %d",
			     AL_META_DEPTH_MAX);
		return -1;
	}
	if (v->type == MSGPACK_OBJECT_ARRAY) {
		for (uint32_t i = 0; i < v->via.array.size; i++)
			if (meta_depth(&v->via.array.ptr[i], depth + 1, path,
				       d) < 0)
				return -1;
		return 0;
	}
	for (uint32_t i = 0; i < v->via.map.size; i++) {
		const msgpack_object *k = &v->via.map.ptr[i].key;

		/* JSON object keys: UTF-8 text without NUL */
		if (k->type != MSGPACK_OBJECT_STR ||
		    memchr(k->via.str.ptr, 0, k->via.str.size) ||
		    !al_utf8_valid((const uint8_t *)k->via.str.ptr,
				   k->via.str.size)) {
			al_diags_add(d, path, "keys must be strings");
			return -1;
		}
		if (meta_depth(&v->via.map.ptr[i].val, depth + 1, path, d) < 0)
			return -1;
	}
	return 0;
}

/* Any value: kept as its own msgpack encoding, checked for size, depth,
 * string keys (so it has a JSON form) and no ext types. */
int al__walk_meta(const msgpack_object *v, const char *path, struct al_diags *d,
		  struct al_blob *ret)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int r = 0;

	if (meta_depth(v, 0, path, d) < 0)
		return 0;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (msgpack_pack_object(&pk, *v) < 0)
		r = -ENOMEM;
	else if (sb.size > AL_META_MAX_BYTES)
		al_diags_add(d, path, "larger than %u bytes",
			     AL_META_MAX_BYTES);
	else
		r = al__blob_set(ret, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return r;
}
