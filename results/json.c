/* json.c: JSON text <-> msgpack documents.
 *
 * The schema is decoded from msgpack only; JSON is first turned into the
 * equivalent msgpack document, so both formats share one validator and give
 * the same diagnostics. The other way, encoders pack msgpack and render it
 * as JSON: bin (and str that is not UTF-8) becomes {"base64": "..."}.
 * jansson keeps object keys in insertion order, so output is canonical.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void pack_json_value(msgpack_packer *pk, const json_t *j)
{
	const char *key;
	json_t *v;
	size_t i;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		msgpack_pack_map(pk, json_object_size(j));
		json_object_foreach((json_t *)j, key, v) {
			al__pack_str(pk, key);
			pack_json_value(pk, v);
		}
		break;
	case JSON_ARRAY:
		msgpack_pack_array(pk, json_array_size(j));
		json_array_foreach(j, i, v)
			pack_json_value(pk, v);
		break;
	case JSON_STRING:
		msgpack_pack_str(pk, json_string_length(j));
		msgpack_pack_str_body(pk, json_string_value(j),
				      json_string_length(j));
		break;
	case JSON_INTEGER:
		msgpack_pack_int64(pk, json_integer_value(j));
		break;
	case JSON_REAL:
		msgpack_pack_double(pk, json_real_value(j));
		break;
	case JSON_TRUE:
		msgpack_pack_true(pk);
		break;
	case JSON_FALSE:
		msgpack_pack_false(pk);
		break;
	case JSON_NULL:
		msgpack_pack_nil(pk);
		break;
	}
}

/* jansson's messages quote the input near the error: keep them printable. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

static int json_to_msgpack(const char *text, size_t len, size_t max_len,
			   char **ret, size_t *ret_len, struct al_diags *d)
{
	struct al__pack_buf pb;
	msgpack_packer pk;
	json_error_t err;
	json_t *j;

	if (len > max_len) {
		al_diags_add(d, "", "larger than %zu bytes", max_len);
		return -E2BIG;
	}
	j = json_loadb(text, len,
		       JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
			       JSON_DECODE_ANY,
		       &err);
	if (!j) {
		sanitize(err.text);
		al_diags_add(d, "", "invalid JSON at line %d column %d: %s",
			     err.line, err.column, err.text);
		return -EINVAL;
	}
	al__pack_init(&pb, &pk);
	pack_json_value(&pk, j);
	json_decref(j);
	return al__pack_finish(&pb, ret, ret_len);
}

static json_t *base64_object(const void *data, size_t len)
{
	char *s = malloc(al_base64_encoded_len(len) + 1);
	json_t *j;

	if (!s)
		return NULL;
	al_base64_encode(data, len, s);
	j = json_pack("{s:s}", "base64", s);
	free(s);
	return j;
}

static json_t *to_json(const msgpack_object *o);

static json_t *map_to_json(const msgpack_object *o)
{
	json_t *j = json_object();

	for (uint32_t i = 0; j && i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		char *key;
		json_t *v;

		if (kv->key.type != MSGPACK_OBJECT_STR) {
			json_decref(j);
			return NULL;
		}
		key = al__str_dup_n(kv->key.via.str.ptr, kv->key.via.str.size);
		v = to_json(&kv->val);
		if (!key || !v || json_object_set_new(j, key, v) < 0) {
			if (!key)
				json_decref(v);
			json_decref(j);
			j = NULL;
		}
		free(key);
	}
	return j;
}

static json_t *array_to_json(const msgpack_object *o)
{
	json_t *j = json_array();

	for (uint32_t i = 0; j && i < o->via.array.size; i++) {
		if (json_array_append_new(j, to_json(&o->via.array.ptr[i])) <
		    0) {
			json_decref(j);
			j = NULL;
		}
	}
	return j;
}

static json_t *to_json(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return json_null();
	case MSGPACK_OBJECT_BOOLEAN:
		return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		if (o->via.u64 > INT64_MAX)
			return json_real((double)o->via.u64);
		return json_integer((json_int_t)o->via.u64);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return json_integer(o->via.i64);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return json_real(o->via.f64);
	case MSGPACK_OBJECT_STR:
		if (al_utf8_valid((const uint8_t *)o->via.str.ptr,
				  o->via.str.size))
			return json_stringn(o->via.str.ptr, o->via.str.size);
		return base64_object(o->via.str.ptr, o->via.str.size);
	case MSGPACK_OBJECT_BIN:
		return base64_object(o->via.bin.ptr, o->via.bin.size);
	case MSGPACK_OBJECT_ARRAY:
		return array_to_json(o);
	case MSGPACK_OBJECT_MAP:
		return map_to_json(o);
	default:
		return NULL; /* ext: the decoders never accept it */
	}
}

static int msgpack_to_json(const char *buf, size_t len, char **ret)
{
	msgpack_zone zone;
	msgpack_object o;
	json_t *j;
	int r;

	msgpack_zone_init(&zone, 4096);
	r = al_mp_unpack(buf, len, SIZE_MAX, &zone, &o);
	if (r < 0)
		goto out;
	j = to_json(&o);
	if (!j) {
		r = -ENOMEM;
		goto out;
	}
	*ret = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(j);
	r = *ret ? 0 : -ENOMEM;
out:
	msgpack_zone_destroy(&zone);
	return r;
}

int al__encode_json(al__pack_fn fn, const void *obj, char **ret)
{
	char *mp;
	size_t len;
	int r = al__encode(fn, obj, &mp, &len);

	if (r < 0)
		return r;
	r = msgpack_to_json(mp, len, ret);
	free(mp);
	return r;
}

int al__decode_document(const void *buf, size_t len, size_t max_len,
			al__unpack_fn fn, void *out, struct al_diags *d)
{
	struct al_diags local;
	msgpack_zone zone;
	msgpack_object o;
	size_t before;
	int r;

	d = al__diags_or(d, &local);
	before = al__diags_count(d);
	if (len > max_len) {
		al_diags_add(d, "", "larger than %zu bytes", max_len);
		return -E2BIG;
	}
	msgpack_zone_init(&zone, 4096);
	r = al_mp_unpack(buf, len, AL_NODES_MAX, &zone, &o);
	if (r == -EBADMSG)
		al_diags_add(d, "", "not a well-formed msgpack document");
	else if (r == -E2BIG)
		al_diags_add(d, "", "nests deeper than %d or holds more than "
			     "%u values", AL_DEPTH_MAX, AL_NODES_MAX);
	if (r == 0)
		r = fn(&o, out, d);
	if (r == 0 && al__diags_count(d) != before)
		r = -EINVAL;
	if (r == -EBADMSG)
		r = -EINVAL;
	msgpack_zone_destroy(&zone);
	return r;
}

int al__decode_json(const char *text, size_t len, size_t json_max,
		    size_t mp_max, al__unpack_fn fn, void *out,
		    struct al_diags *d)
{
	struct al_diags local;
	char *mp = NULL;
	size_t mp_len = 0;
	int r;

	d = al__diags_or(d, &local);
	r = json_to_msgpack(text, len, json_max, &mp, &mp_len, d);
	if (r == 0)
		r = al__decode_document(mp, mp_len, mp_max, fn, out, d);
	free(mp);
	return r;
}
