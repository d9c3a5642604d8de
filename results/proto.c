/* proto.c: encode, decode and frame the guest agent protocol (see proto.h).
 *
 * Every message is described by a table of fields (key, kind, where it
 * lives in struct al_msg, bounds, required or not); one generic decoder and
 * one generic encoder walk the tables. Guest bytes reach the host decoder,
 * so it never trusts a length: the frame reader caps the prefix before it
 * allocates, al_mp_unpack bounds the document, and each field is checked
 * against its own cap before it is copied out of the zone.
 */
#include <errno.h>
#include <signal.h>
#include <strings.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto.h"

enum field_kind {
	F_U32,	  /* unsigned integer, min..max */
	F_U64,	  /* unsigned integer, min..max */
	F_BOOL,	  /* true/false */
	F_STR,	  /* string without NUL, at most max bytes */
	F_BIN,	  /* al_blob min..max bytes, encoded as bin */
	F_LIMITS, /* struct al_limits as a map */
	F_STEP,	  /* struct al_step via al_step_pack/unpack */
	F_RESULT, /* struct al_step_result via al_step_result_pack/unpack */
	F_FILES,  /* map path -> str|bin; off2 holds the count */
	F_PATHS,  /* array of paths; off2 holds the count */
};

struct field {
	const char *key;      /* map key */
	enum field_kind kind; /* value type */
	size_t off;	      /* offset in struct al_msg */
	size_t off2;	      /* offset of the count for F_FILES/F_PATHS */
	uint64_t min, max;    /* bounds (value or length) */
	bool req;	      /* must be present; always encoded */
};

struct msg_desc {
	const char *name;	    /* value of `t` */
	const struct field *fields; /* its fields */
	size_t n;		    /* entries in fields */
};

#define OFF(m)	  offsetof(struct al_msg, u.m)
#define FIELDS(a) a, AL__WALK_COUNT(a) /* dec_fields keeps a 32-bit seen */

static const struct field hello_fields[] = {
    {"v", F_U32, OFF(hello.v), 0, 0, UINT32_MAX, false},
    {"agent", F_STR, OFF(hello.agent), 0, 0, AL_PROTO_STR_MAX, false},
    {"kernel", F_STR, OFF(hello.kernel), 0, 0, AL_PROTO_STR_MAX, false},
    {"template", F_STR, OFF(hello.template_), 0, 0, AL_NAME_MAX, false},
};
static const struct field reseed_fields[] = {
    {"entropy", F_BIN, OFF(reseed.entropy), 0, AL_ENTROPY_MIN, AL_ENTROPY_MAX,
     true},
    {"time_ns", F_U64, OFF(reseed.time_ns), 0, 0, UINT64_MAX, true},
};
static const struct field setup_fields[] = {
    {"limits", F_LIMITS, OFF(setup.limits), 0, 0, 0, true},
    {"entropy", F_BIN, OFF(setup.entropy), 0, AL_ENTROPY_MIN, AL_ENTROPY_MAX,
     false},
    {"time_ns", F_U64, OFF(setup.time_ns), 0, 0, UINT64_MAX, false},
};
static const struct field ok_fields[] = {
    {"reseeded", F_BOOL, OFF(ok.reseeded), 0, 0, 1, false},
};
static const struct field put_files_fields[] = {
    {"files", F_FILES, OFF(files.files), OFF(files.n_files), 0, AL_FILES_MAX,
     true},
};
static const struct field run_step_fields[] = {
    {"step", F_STEP, OFF(run_step.step), 0, 0, 0, true},
    {"limits", F_LIMITS, OFF(run_step.limits), 0, 0, 0, false},
    {"stream", F_BOOL, OFF(run_step.stream), 0, 0, 1, false},
    {"warmup", F_BOOL, OFF(run_step.warmup), 0, 0, 1, false},
    {"background", F_BOOL, OFF(run_step.background), 0, 0, 1, false},
};
static const struct field get_files_fields[] = {
    {"paths", F_PATHS, OFF(get_files.paths), OFF(get_files.n_paths), 0,
     AL_FILES_MAX, true},
    {"max_bytes", F_U64, OFF(get_files.max_bytes), 0, 0, AL_FRAME_MAX, false},
};
static const struct field error_fields[] = {
    {"msg", F_STR, OFF(error.msg), 0, 0, AL_ERROR_MAX, true},
};
static const struct field out_fields[] = {
    {"fd", F_U32, OFF(out.fd), 0, 1, 2, true},
    {"data", F_BIN, OFF(out.data), 0, 1, AL_PROTO_OUT_MAX, true},
};
static const struct field exit_fields[] = {
    {"result", F_RESULT, OFF(exit.result), 0, 0, 0, true},
};
static const struct field files_fields[] = {
    {"files", F_FILES, OFF(files.files), OFF(files.n_files), 0, AL_FILES_MAX,
     true},
    {"missing", F_PATHS, OFF(files.missing), OFF(files.n_missing), 0,
     AL_FILES_MAX, false},
};
static const struct field challenge_fields[] = {
    {"nonce", F_BIN, OFF(challenge.nonce), 0, AL_AUTH_NONCE_LEN,
     AL_AUTH_NONCE_LEN, true},
};
static const struct field auth_fields[] = {
    {"mac", F_BIN, OFF(auth.mac), 0, AL_SHA256_LEN, AL_SHA256_LEN, true},
};

static const struct field zygote_fields[] = {
    {"modules", F_STR, OFF(zygote.modules), 0, 0, AL_ZYGOTE_MODULES_MAX, false},
    {"warm", F_BOOL, OFF(zygote.warm), 0, 0, 1, false},
};

static const struct field signal_fields[] = {
    {"sig", F_U32, OFF(signal.sig), 0, 1, 64, true},
    {"grace_ms", F_U32, OFF(signal.grace_ms), 0, 0, AL_SIGNAL_GRACE_MAX,
     false},
};

static const struct msg_desc msgs[AL_MSG_TYPE_COUNT] = {
    [AL_MSG_HELLO] = {"hello", FIELDS(hello_fields)},
    [AL_MSG_RESEED] = {"reseed", FIELDS(reseed_fields)},
    [AL_MSG_SETUP] = {"setup", FIELDS(setup_fields)},
    [AL_MSG_PUT_FILES] = {"put_files", FIELDS(put_files_fields)},
    [AL_MSG_RUN_STEP] = {"run_step", FIELDS(run_step_fields)},
    [AL_MSG_GET_FILES] = {"get_files", FIELDS(get_files_fields)},
    [AL_MSG_PING] = {"ping", NULL, 0},
    [AL_MSG_OK] = {"ok", FIELDS(ok_fields)},
    [AL_MSG_ERROR] = {"error", FIELDS(error_fields)},
    [AL_MSG_OUT] = {"out", FIELDS(out_fields)},
    [AL_MSG_EXIT] = {"exit", FIELDS(exit_fields)},
    [AL_MSG_FILES] = {"files", FIELDS(files_fields)},
    [AL_MSG_PONG] = {"pong", NULL, 0},
    [AL_MSG_CHALLENGE] = {"challenge", FIELDS(challenge_fields)},
    [AL_MSG_AUTH] = {"auth", FIELDS(auth_fields)},
    [AL_MSG_ZYGOTE] = {"zygote", FIELDS(zygote_fields)},
    [AL_MSG_SIGNAL] = {"signal", FIELDS(signal_fields)},
};

static const struct {
	const char *name;
	int sig;
} signals[] = {
    {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},   {"HUP", SIGHUP},
    {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
};

int al_step_signal_number(const char *name)
{
	if (!name)
		return 0;
	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (!strcasecmp(name, signals[i].name))
			return signals[i].sig;
	return 0;
}

const char *al_step_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (sig == signals[i].sig)
			return signals[i].name;
	return NULL;
}

bool al_step_signal_ok(int sig)
{
	return al_step_signal_name(sig) != NULL;
}


const char *al_msg_type_name(enum al_msg_type t)
{
	if ((unsigned)t >= AL_MSG_TYPE_COUNT)
		return NULL;
	return msgs[t].name;
}

static void *at(const struct al_msg *m, size_t off)
{
	return (char *)m + off;
}


/* --- release -------------------------------------------------------------- */

static void paths_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

static void field_release(struct al_msg *m, const struct field *f)
{
	void *p = at(m, f->off);

	switch (f->kind) {
	case F_STR:
		free(*(char **)p);
		break;
	case F_BIN:
		al__blob_release(p);
		break;
	case F_STEP:
		al_step_release(p);
		break;
	case F_RESULT:
		al_step_result_release(p);
		break;
	case F_FILES:
		al__files_release(*(struct al_file **)p,
				  *(size_t *)at(m, f->off2));
		break;
	case F_PATHS:
		paths_free(*(char ***)p, *(size_t *)at(m, f->off2));
		break;
	default:
		break;
	}
}

void al_msg_release(struct al_msg *m)
{
	const struct msg_desc *md;

	if ((unsigned)m->type < AL_MSG_TYPE_COUNT) {
		md = &msgs[m->type];
		for (size_t i = 0; i < md->n; i++)
			field_release(m, &md->fields[i]);
	}
	memset(m, 0, sizeof(*m));
}

/* --- decode --------------------------------------------------------------- */

static void diag(struct al_diags *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void diag(struct al_diags *d, const char *path, const char *fmt, ...)
{
	char reason[sizeof(d->items[0].reason)];
	va_list ap;

	if (!d)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	al_diags_add(d, path, "%s", reason);
}

/* A str or bin object's bytes. */
static bool raw_bytes(const msgpack_object *o, const char **ret,
		      size_t *ret_len)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		*ret = o->via.str.ptr;
		*ret_len = o->via.str.size;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		*ret = o->via.bin.ptr;
		*ret_len = o->via.bin.size;
		return true;
	}
	return false;
}

static int dec_uint(const msgpack_object *o, const struct field *f,
		    uint64_t *ret, struct al_diags *d)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
		diag(d, f->key, "must be an unsigned integer");
		return -EBADMSG;
	}
	if (o->via.u64 < f->min || o->via.u64 > f->max) {
		diag(d, f->key, "must be %llu..%llu",
		     (unsigned long long)f->min, (unsigned long long)f->max);
		return -EBADMSG;
	}
	*ret = o->via.u64;
	return 0;
}

static int dec_str(const msgpack_object *o, const struct field *f, char **ret,
		   struct al_diags *d)
{
	if (o->type != MSGPACK_OBJECT_STR) {
		diag(d, f->key, "must be a string");
		return -EBADMSG;
	}
	if (o->via.str.size > f->max) {
		diag(d, f->key, "longer than %llu bytes",
		     (unsigned long long)f->max);
		return -E2BIG;
	}
	if (memchr(o->via.str.ptr, '\0', o->via.str.size)) {
		diag(d, f->key, "contains NUL");
		return -EBADMSG;
	}
	*ret = al__str_dup_n(o->via.str.ptr, o->via.str.size);
	return *ret ? 0 : -ENOMEM;
}

static int dec_blob(const msgpack_object *o, const char *path, uint64_t min,
		    uint64_t max, struct al_blob *ret, struct al_diags *d)
{
	const char *p;
	size_t n;

	if (!raw_bytes(o, &p, &n)) {
		diag(d, path, "must be bytes (str or bin)");
		return -EBADMSG;
	}
	if (n < min || n > max) {
		diag(d, path, "must be %llu..%llu bytes",
		     (unsigned long long)min, (unsigned long long)max);
		return n > max ? -E2BIG : -EBADMSG;
	}
	ret->data = (uint8_t *)al__str_dup_n(p, n);
	if (!ret->data)
		return -ENOMEM;
	ret->len = n;
	return 0;
}

static int dec_limits(const msgpack_object *o, struct al_limits *ret,
		      struct al_diags *d)
{
	int r = al_limits_unpack(o, "limits", ret, d);

	return r == -EINVAL ? -EBADMSG : r;
}

/* A path string object into a fresh C string. */
static int dec_path(const msgpack_object *o, const char *key, char **ret,
		    struct al_diags *d)
{
	if (o->type != MSGPACK_OBJECT_STR ||
	    !al_relpath_valid(o->via.str.ptr, o->via.str.size)) {
		diag(d, key, "not a valid relative path");
		return -EBADMSG;
	}
	*ret = al__str_dup_n(o->via.str.ptr, o->via.str.size);
	return *ret ? 0 : -ENOMEM;
}

/* A map or array of at most f->max entries: its size, or -errno. */
static long dec_count(const msgpack_object *o, const struct field *f,
		      struct al_diags *d)
{
	bool map = f->kind == F_FILES;
	uint32_t n;

	if (o->type != (map ? MSGPACK_OBJECT_MAP : MSGPACK_OBJECT_ARRAY)) {
		diag(d, f->key, "must be %s", map ? "a map" : "an array");
		return -EBADMSG;
	}
	n = map ? o->via.map.size : o->via.array.size;
	if (n > f->max) {
		diag(d, f->key, "more than %llu entries",
		     (unsigned long long)f->max);
		return -E2BIG;
	}
	return n;
}

static int dec_files(const msgpack_object *o, const struct field *f,
		     struct al_file **ret, size_t *ret_n, struct al_diags *d)
{
	long n = dec_count(o, f, d);
	struct al_file *files;
	int r = 0;

	if (n < 0)
		return (int)n;
	files = calloc(n ? n : 1, sizeof(*files));
	if (!files)
		return -ENOMEM;
	for (long i = 0; i < n && r == 0; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];

		r = dec_path(&kv->key, f->key, &files[i].path, d);
		if (r == 0)
			r = dec_blob(&kv->val, f->key, 0, AL_FRAME_MAX,
				     &files[i].content, d);
	}
	if (r < 0) {
		al__files_release(files, n);
		return r;
	}
	*ret = files;
	*ret_n = n;
	return 0;
}

static int dec_paths(const msgpack_object *o, const struct field *f,
		     char ***ret, size_t *ret_n, struct al_diags *d)
{
	long n = dec_count(o, f, d);
	char **paths;
	int r = 0;

	if (n < 0)
		return (int)n;
	paths = calloc(n ? n : 1, sizeof(*paths));
	if (!paths)
		return -ENOMEM;
	for (long i = 0; i < n && r == 0; i++)
		r = dec_path(&o->via.array.ptr[i], f->key, &paths[i], d);
	if (r < 0) {
		paths_free(paths, n);
		return r;
	}
	*ret = paths;
	*ret_n = n;
	return 0;
}

static int dec_field(const msgpack_object *o, const struct field *f,
		     struct al_msg *m, struct al_diags *d)
{
	void *p = at(m, f->off);
	uint64_t u;
	int r;

	switch (f->kind) {
	case F_U32:
		r = dec_uint(o, f, &u, d);
		if (r == 0)
			*(uint32_t *)p = (uint32_t)u;
		return r;
	case F_U64:
		return dec_uint(o, f, p, d);
	case F_BOOL:
		if (o->type != MSGPACK_OBJECT_BOOLEAN) {
			diag(d, f->key, "must be a boolean");
			return -EBADMSG;
		}
		*(bool *)p = o->via.boolean;
		return 0;
	case F_STR:
		return dec_str(o, f, p, d);
	case F_BIN:
		return dec_blob(o, f->key, f->min, f->max, p, d);
	case F_LIMITS:
		return dec_limits(o, p, d);
	case F_STEP:
		r = al_step_unpack(o, f->key, p, d);
		return r == -EINVAL ? -EBADMSG : r;
	case F_RESULT:
		r = al_step_result_unpack(o, f->key, p, d);
		return r == -EINVAL ? -EBADMSG : r;
	case F_FILES:
		return dec_files(o, f, p, at(m, f->off2), d);
	case F_PATHS:
		return dec_paths(o, f, p, at(m, f->off2), d);
	}
	return -EBADMSG;
}

/* The message type named by the map's `t`. */
static int dec_type(const msgpack_object *map, struct al_diags *d)
{
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];

		if (!al__walk_is_str(&kv->key, "t"))
			continue;
		for (int t = 1; t < AL_MSG_TYPE_COUNT; t++)
			if (al__walk_is_str(&kv->val, msgs[t].name))
				return t;
		diag(d, "t", "unknown message type");
		return -EBADMSG;
	}
	diag(d, "", "missing `t`");
	return -EBADMSG;
}

/* Decode the fields of md from map into m; m->type is already set so that
 * al_msg_release() frees whatever was decoded before a failure. */
static int dec_fields(const msgpack_object *map, const struct msg_desc *md,
		      struct al_msg *m, struct al_diags *d)
{
	uint32_t seen = 0;
	int r;

	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];

		if (al__walk_is_str(&kv->key, "t"))
			continue;
		for (size_t k = 0; k < md->n; k++) {
			if (!al__walk_is_str(&kv->key, md->fields[k].key))
				continue;
			if (seen & (1u << k)) {
				diag(d, md->fields[k].key, "duplicate key");
				return -EBADMSG;
			}
			seen |= 1u << k;
			r = dec_field(&kv->val, &md->fields[k], m, d);
			if (r < 0)
				return r;
		}
	}
	for (size_t k = 0; k < md->n; k++) {
		if (md->fields[k].req && !(seen & (1u << k))) {
			diag(d, md->fields[k].key, "missing");
			return -EBADMSG;
		}
	}
	return 0;
}

int al_msg_decode(const void *body, size_t len, struct al_msg *ret,
		  struct al_diags *d)
{
	msgpack_zone zone;
	msgpack_object root;
	struct al_msg m = {0};
	struct al_diags local;
	int r, t;

	memset(ret, 0, sizeof(*ret));
	d = al__diags_or(d, &local); /* the schema decoders write to it */
	if (len == 0 || len > AL_FRAME_MAX) {
		diag(d, "", "frame of %zu bytes out of range", len);
		return -EMSGSIZE;
	}
	if (!msgpack_zone_init(&zone, 4096))
		return -ENOMEM;
	r = al_mp_unpack(body, len, AL_NODES_MAX, &zone, &root);
	if (r < 0) {
		diag(d, "", "malformed or oversized msgpack");
		goto out;
	}
	if (root.type != MSGPACK_OBJECT_MAP) {
		diag(d, "", "frame is not a map");
		r = -EBADMSG;
		goto out;
	}
	r = t = dec_type(&root, d);
	if (r < 0)
		goto out;
	m.type = t;
	r = dec_fields(&root, &msgs[t], &m, d);
	if (r < 0) {
		al_msg_release(&m);
		goto out;
	}
	*ret = m;
	r = 0;
out:
	msgpack_zone_destroy(&zone);
	return r;
}

uint32_t al_frame_len(const uint8_t p[AL_FRAME_HDR])
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int al_frame_decode(const void *frame, size_t len, struct al_msg *ret,
		    struct al_diags *d)
{
	uint32_t n;

	memset(ret, 0, sizeof(*ret));
	if (len < AL_FRAME_HDR) {
		diag(d, "", "truncated length prefix");
		return -EBADMSG;
	}
	n = al_frame_len(frame);
	if (n == 0 || n > AL_FRAME_MAX) {
		diag(d, "", "frame length %u out of range", n);
		return -EMSGSIZE;
	}
	if (len - AL_FRAME_HDR != n) {
		diag(d, "", "frame length %u but %zu bytes", n,
		     len - AL_FRAME_HDR);
		return -EBADMSG;
	}
	return al_msg_decode((const uint8_t *)frame + AL_FRAME_HDR, n, ret, d);
}

/* --- encode --------------------------------------------------------------- */

static bool limits_empty(const struct al_limits *l)
{
	static const struct al_limits zero;

	return memcmp(l, &zero, sizeof(zero)) == 0;
}

/* Is the field worth encoding? Required ones always are. */
static bool field_present(const struct al_msg *m, const struct field *f)
{
	const void *p = at(m, f->off);

	if (f->req)
		return true;
	switch (f->kind) {
	case F_U32:
		return *(const uint32_t *)p != 0;
	case F_U64:
		return *(const uint64_t *)p != 0;
	case F_BOOL:
		return *(const bool *)p;
	case F_STR:
		return *(char *const *)p != NULL;
	case F_BIN:
		return ((const struct al_blob *)p)->data != NULL;
	case F_LIMITS:
		return !limits_empty(p);
	case F_FILES:
	case F_PATHS:
		return *(const size_t *)at(m, f->off2) != 0;
	default:
		return true;
	}
}

static int pack_str(msgpack_packer *pk, const char *s, size_t n)
{
	return msgpack_pack_str_with_body(pk, s, n);
}

static int pack_blob(msgpack_packer *pk, const struct al_blob *b, bool bin)
{
	if (bin || !al_utf8_valid(b->data, b->len))
		return msgpack_pack_bin_with_body(pk, b->data, b->len);
	return pack_str(pk, (const char *)b->data, b->len);
}


static int pack_files(msgpack_packer *pk, const struct al_file *files, size_t n)
{
	int r = msgpack_pack_map(pk, n);

	for (size_t i = 0; i < n && r == 0; i++) {
		r = pack_str(pk, files[i].path, strlen(files[i].path));
		if (r == 0)
			r = pack_blob(pk, &files[i].content, false);
	}
	return r;
}

static int pack_paths(msgpack_packer *pk, char *const *paths, size_t n)
{
	int r = msgpack_pack_array(pk, n);

	for (size_t i = 0; i < n && r == 0; i++)
		r = pack_str(pk, paths[i], strlen(paths[i]));
	return r;
}

static int pack_field(msgpack_packer *pk, const struct al_msg *m,
		      const struct field *f)
{
	const void *p = at(m, f->off);
	const char *s;

	switch (f->kind) {
	case F_U32:
		return msgpack_pack_uint32(pk, *(const uint32_t *)p);
	case F_U64:
		return msgpack_pack_uint64(pk, *(const uint64_t *)p);
	case F_BOOL:
		return *(const bool *)p ? msgpack_pack_true(pk)
					: msgpack_pack_false(pk);
	case F_STR:
		s = *(char *const *)p;
		return s ? pack_str(pk, s, strlen(s)) : msgpack_pack_nil(pk);
	case F_BIN:
		return pack_blob(pk, p, true);
	case F_LIMITS:
		return al_limits_pack(pk, p);
	case F_STEP:
		return al_step_pack(pk, p) < 0 ? -1 : 0;
	case F_RESULT:
		return al_step_result_pack(pk, p) < 0 ? -1 : 0;
	case F_FILES:
		return pack_files(pk, *(struct al_file *const *)p,
				  *(const size_t *)at(m, f->off2));
	case F_PATHS:
		return pack_paths(pk, *(char **const *)p,
				  *(const size_t *)at(m, f->off2));
	}
	return -1;
}

/* Check what the encoder cannot express: required strings present. */
static int enc_check(const struct al_msg *m, const struct msg_desc *md)
{
	for (size_t k = 0; k < md->n; k++) {
		const struct field *f = &md->fields[k];

		if (f->kind == F_STR && f->req && !*(char **)at(m, f->off))
			return -EINVAL;
	}
	return 0;
}

int al_msg_encode(const struct al_msg *m, char **ret, size_t *ret_len)
{
	const struct msg_desc *md;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t n = 1, body;
	int r;

	if ((unsigned)m->type >= AL_MSG_TYPE_COUNT || m->type == AL_MSG_NONE)
		return -EINVAL;
	md = &msgs[m->type];
	r = enc_check(m, md);
	if (r < 0)
		return r;
	for (size_t k = 0; k < md->n; k++)
		n += field_present(m, &md->fields[k]);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	r = msgpack_sbuffer_write(&sb, "\0\0\0\0", AL_FRAME_HDR);
	r = r ? r : msgpack_pack_map(&pk, n);
	r = r ? r : pack_str(&pk, "t", 1);
	r = r ? r : pack_str(&pk, md->name, strlen(md->name));
	for (size_t k = 0; k < md->n && r == 0; k++) {
		if (!field_present(m, &md->fields[k]))
			continue;
		r = pack_str(&pk, md->fields[k].key, strlen(md->fields[k].key));
		r = r ? r : pack_field(&pk, m, &md->fields[k]);
	}
	if (r) {
		msgpack_sbuffer_destroy(&sb);
		return -ENOMEM;
	}
	body = sb.size - AL_FRAME_HDR;
	if (body > AL_FRAME_MAX) {
		msgpack_sbuffer_destroy(&sb);
		return -EMSGSIZE;
	}
	sb.data[0] = (char)(body >> 24);
	sb.data[1] = (char)(body >> 16);
	sb.data[2] = (char)(body >> 8);
	sb.data[3] = (char)body;
	*ret_len = sb.size;
	*ret = msgpack_sbuffer_release(&sb);
	return 0;
}

/* --- frame reader --------------------------------------------------------- */

#define READER_MIN_CAP (64u << 10)

void al_frame_reader_init(struct al_frame_reader *r, uint32_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max ? max : AL_FRAME_MAX; /* results frames pass 40 MiB */
}

void al_frame_reader_reset(struct al_frame_reader *r)
{
	r->hdr_got = 0;
	r->need = 0;
	r->got = 0;
}

void al_frame_reader_release(struct al_frame_reader *r)
{
	free(r->body);
	r->body = NULL;
	r->cap = 0;
	al_frame_reader_reset(r);
}

bool al_frame_reader_ready(const struct al_frame_reader *r)
{
	return r->hdr_got == AL_FRAME_HDR && r->need && r->got == r->need;
}

size_t al_frame_reader_want(const struct al_frame_reader *r)
{
	if (r->hdr_got < AL_FRAME_HDR)
		return AL_FRAME_HDR - r->hdr_got;
	if (r->got < r->need)
		return r->need - r->got;
	return 1;
}

/* Room for `more` body bytes, growing geometrically but never past need:
 * a peer must send bytes to make us allocate them. */
static int reader_grow(struct al_frame_reader *r, size_t more)
{
	size_t cap = r->cap;
	uint8_t *p;

	if (r->got + more <= r->cap)
		return 0;
	while (cap < r->got + more)
		cap = cap ? cap * 2 : READER_MIN_CAP;
	if (cap > r->need)
		cap = r->need;
	p = realloc(r->body, cap);
	if (!p)
		return -ENOMEM;
	r->body = p;
	r->cap = cap;
	return 0;
}

long al_frame_reader_feed(struct al_frame_reader *r, const void *buf,
			  size_t len)
{
	const uint8_t *in = buf;
	size_t used = 0, n;

	if (al_frame_reader_ready(r))
		return 0;
	if (r->hdr_got < AL_FRAME_HDR) {
		n = AL_FRAME_HDR - r->hdr_got;
		n = n < len ? n : len;
		memcpy(r->hdr + r->hdr_got, in, n);
		r->hdr_got += n;
		used = n;
		if (r->hdr_got < AL_FRAME_HDR)
			return (long)used;
		r->need = al_frame_len(r->hdr);
		if (r->need == 0 || r->need > r->max)
			return -EMSGSIZE;
	}
	n = r->need - r->got;
	n = n < len - used ? n : len - used;
	if (n == 0)
		return (long)used;
	if (reader_grow(r, n) < 0)
		return -ENOMEM;
	memcpy(r->body + r->got, in + used, n);
	r->got += n;
	return (long)(used + n);
}

int al_frame_reader_take(struct al_frame_reader *r, uint8_t **ret_body,
			 size_t *ret_len)
{
	if (!al_frame_reader_ready(r))
		return -EAGAIN;
	*ret_body = r->body;
	*ret_len = r->got;
	r->body = NULL;
	r->cap = 0;
	al_frame_reader_reset(r);
	return 0;
}
