/* queue.c: keys, Lua scripts, reply parsing and the blocking client of the
 * Redis queue (queue.h says what lives where).
 *
 * Why scripts: the queue's guarantees are pairs of writes that must not be
 * separated by a crash. Submitting is "SET NX the payload, then XADD": a
 * crash between them would leave an id that can never be submitted again.
 * Completing is "store the result if absent, signal, XACK": acknowledging
 * first could lose the job, storing twice could give two answers. A script
 * runs atomically on the server, so either all of it happened or none.
 *
 * Why FETCH is a script too: hiredis 0.14 allocates whatever a bulk reply
 * announces. The payload is the one large, submitter-controlled value we
 * read, so the server checks its length against AL_JOB_MAX_BYTES first and
 * only then returns it. Results are read by clients with STRLEN before GET
 * (a result is written once, so the length cannot change in between).
 *
 * RECLAIM reads an entry's `w` (its wall_ms) strictly: up to 19 decimal
 * digits. Lua's tonumber() takes "nan", "inf", "0x1p4" and "1e9", and a
 * NaN compares false with everything, so such an entry would never be
 * reclaimed; anything but digits counts as 0 (reclaimable once idle past
 * the slack), a missing `w` as the default.
 *
 * Trimming: Redis 7.0's XTRIM drops entries whether or not they are
 * pending, so TRIM computes MINID as the oldest pending entry, else the
 * group's last-delivered id: nothing pending or undelivered is ever older
 * than that.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "cluster.h"
#include "queue.h"
#include "sentinel.h"

/* --- keys ------------------------------------------------------------------
 */

int alq_key(char *buf, size_t len, const char *q, enum alq_key_kind kind,
	    const char *id)
{
	static const char *const kinds[] = {
	    [ALQ_KEY_JOBS] = "jobs",	   [ALQ_KEY_JOB] = "job:",
	    [ALQ_KEY_RESULT] = "result:",  [ALQ_KEY_DONE] = "done:",
	    [ALQ_KEY_DEAD] = "dead",	   [ALQ_KEY_SERVES] = "serves",
	    [ALQ_KEY_TPUT] = "tput:",	   [ALQ_KEY_SID] = "sid:",
	    [ALQ_KEY_CANCEL] = "cancel",   [ALQ_KEY_DIGEST] = "digest:",
	    [ALQ_KEY_CANCELS] = "cancels", [ALQ_KEY_SNAPDEFS] = "snapdefs",
	    [ALQ_KEY_SNAPDEF] = "snapdef:", [ALQ_KEY_SNAPHOSTS] = "snaphosts:",
	};
	bool with_id = kind == ALQ_KEY_JOB || kind == ALQ_KEY_RESULT ||
		       kind == ALQ_KEY_DONE || kind == ALQ_KEY_TPUT ||
		       kind == ALQ_KEY_SID || kind == ALQ_KEY_DIGEST ||
		       kind == ALQ_KEY_SNAPDEF || kind == ALQ_KEY_SNAPHOSTS;
	int n = snprintf(buf, len, "airlock:{%s}:%s%s", q, kinds[kind],
			 with_id && id ? id : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* --- partitions --------------------------------------------------------- */

int alq_partition_name(char *buf, size_t len, const char *q, unsigned i)
{
	int n = i ? snprintf(buf, len, "%s~p%u", q, i)
		  : snprintf(buf, len, "%s", q);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

unsigned alq_partition_of(const char *id, unsigned n)
{
	uint32_t h = 2166136261u; /* FNV-1a 32 */

	if (n <= 1)
		return 0;
	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h % n;
}

/* The queue (partition) that holds job `id` for client c. */
static const char *qof(const struct alq_client *c, const char *id,
		       char buf[ALQ_PART_NAME_MAX])
{
	if (c->partitions <= 1 || !id ||
	    alq_partition_name(buf, ALQ_PART_NAME_MAX, c->queue,
			       alq_partition_of(id, c->partitions)) < 0)
		return c->queue;
	return buf;
}

/* --- URLs ------------------------------------------------------------------
 */

/* Copy s[0..n) percent-decoded into dst; -EINVAL on a bad escape/overflow. */
static int decode(char *dst, size_t size, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n || al_hex_digit(s[i + 1]) < 0 ||
			    al_hex_digit(s[i + 2]) < 0)
				return -EINVAL;
			c = al_hex_digit(s[i + 1]) * 16 +
			    al_hex_digit(s[i + 2]);
			i += 2;
		}
		if (c == 0 || o + 1 >= size)
			return -EINVAL;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
}

/* "[USER]:PASSWORD@" at the start of s (up to `end`), if any. */
static int parse_userinfo(const char **s, const char *end, struct alq_url *u)
{
	const char *at = memchr(*s, '@', (size_t)(end - *s));
	const char *colon;

	if (!at)
		return 0;
	colon = memchr(*s, ':', (size_t)(at - *s));
	if (!colon)
		return -EINVAL; /* "user@" without a password means nothing */
	if (decode(u->user, sizeof(u->user), *s, (size_t)(colon - *s)) < 0 ||
	    decode(u->pass, sizeof(u->pass), colon + 1,
		   (size_t)(at - colon - 1)) < 0)
		return -EINVAL;
	*s = at + 1;
	return 0;
}

static int parse_uint(const char *s, size_t n, unsigned long max,
		      unsigned long *ret)
{
	unsigned long v = 0;

	if (n == 0 || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_tcp(const char *s, struct alq_url *u)
{
	const char *end = s + strlen(s);
	const char *slash, *hend, *port = NULL;
	unsigned long v;

	slash = strchr(s, '/');
	if (slash)
		end = slash;
	if (parse_userinfo(&s, end, u) < 0)
		return -EINVAL;
	if (*s == '[') { /* [v6]:port */
		hend = memchr(s, ']', (size_t)(end - s));
		if (!hend)
			return -EINVAL;
		s++;
		if (hend + 1 < end) {
			if (hend[1] != ':')
				return -EINVAL;
			port = hend + 2;
		}
	} else {
		hend = memchr(s, ':', (size_t)(end - s));
		if (hend)
			port = hend + 1;
		else
			hend = end;
	}
	if (hend == s || (size_t)(hend - s) >= sizeof(u->host))
		return -EINVAL;
	memcpy(u->host, s, (size_t)(hend - s));
	u->host[hend - s] = '\0';
	u->port = 6379;
	if (port) {
		if (parse_uint(port, (size_t)(end - port), 65535, &v) < 0 ||
		    v == 0)
			return -EINVAL;
		u->port = (int)v;
	}
	if (slash && slash[1]) {
		if (parse_uint(slash + 1, strlen(slash + 1), 1u << 20, &v) < 0)
			return -EINVAL;
		u->db = (unsigned)v;
	}
	return 0;
}

static int parse_unix(const char *s, struct alq_url *u)
{
	const char *end = s + strlen(s);
	const char *q = strchr(s, '?');
	unsigned long v;

	if (q)
		end = q;
	if (parse_userinfo(&s, end, u) < 0 || *s != '/' ||
	    (size_t)(end - s) >= sizeof(u->path))
		return -EINVAL;
	memcpy(u->path, s, (size_t)(end - s));
	u->path[end - s] = '\0';
	if (q) {
		if (strncmp(q, "?db=", 4) ||
		    parse_uint(q + 4, strlen(q + 4), 1u << 20, &v) < 0)
			return -EINVAL;
		u->db = (unsigned)v;
	}
	u->unix_ = true;
	return 0;
}

static int parse_sentinel(const char *s, struct alq_url *u)
{
	const char *slash = strchr(s, '/');

	if (parse_userinfo(&s, slash ? slash : s + strlen(s), u) < 0)
		return -EINVAL;
	return alq_sentinel_parse(s, u);
}

int alq_url_parse(const char *url, struct alq_url *ret)
{
	struct alq_url u;
	int r;

	memset(&u, 0, sizeof(u));
	if (!strncmp(url, "redis://", 8))
		r = parse_tcp(url + 8, &u);
	else if (!strncmp(url, "unix://", 7))
		r = parse_unix(url + 7, &u);
	else if (!strncmp(url, "redis+sentinel://", 17))
		r = parse_sentinel(url + 17, &u);
	else
		r = -EINVAL;
	if (r == 0)
		*ret = u;
	return r;
}

void alq_url_display(const struct alq_url *u, char *buf, size_t len)
{
	if (u->unix_)
		snprintf(buf, len, "unix:%s", u->path);
	else if (u->sentinel_)
		snprintf(buf, len, "sentinel %s via %s:%d%s", u->master,
			 u->sentinel[0].host, u->sentinel[0].port,
			 u->n_sentinels > 1 ? " (and more)" : "");
	else
		snprintf(buf, len, "%s:%d", u->host, u->port);
}

/* --- scripts ----------------------------------------------------------------
 */

static const char *const scripts[ALQ_N_SCRIPTS] = {
    /* The id is taken: the same payload is a duplicate (nil), another
     * one a conflict ({'conflict', its digest}). The digest key is only
     * a shortcut with its own TTL: without it the bytes are compared. */
    [ALQ_SUBMIT] =
	"if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n"
	"  local d = redis.call('GET', KEYS[4])\n"
	"  if d then\n"
	"    if d == ARGV[5] then return false end\n"
	"    return {'conflict', d}\n"
	"  end\n"
	"  if redis.call('GET', KEYS[1]) == ARGV[1] then return false end\n"
	"  return {'conflict', ''}\n"
	"end\n"
	"redis.call('SET', KEYS[4], ARGV[5], 'EX', 604800)\n"
	"local sid = redis.call('XADD', KEYS[2], '*', 'id', ARGV[2],\n"
	"                       't', ARGV[3], 'w', ARGV[4])\n"
	"redis.call('SET', KEYS[3], sid)\n"
	"return sid\n",

    [ALQ_FETCH] =
	"if redis.call('EXISTS', KEYS[2]) == 1 then return {'done'} end\n"
	"local t = redis.call('TYPE', KEYS[1])['ok']\n"
	"if t == 'none' then return {'missing'} end\n"
	"if t ~= 'string' then return {'type'} end\n"
	"local n = redis.call('STRLEN', KEYS[1])\n"
	"if n > tonumber(ARGV[1]) then return {'big', n} end\n"
	"return {'ok', redis.call('GET', KEYS[1])}\n",

    [ALQ_COMPLETE] =
	"local stored = 0\n"
	"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then\n"
	"  redis.call('RPUSH', KEYS[2], '1')\n"
	"  redis.call('EXPIRE', KEYS[2], ARGV[2])\n"
	"  redis.call('INCR', KEYS[5])\n"
	"  redis.call('EXPIRE', KEYS[5], 3600)\n"
	"  stored = 1\n"
	"end\n"
	"redis.call('EXPIRE', KEYS[4], ARGV[2])\n"
	"if KEYS[7] then redis.call('EXPIRE', KEYS[7], ARGV[2]) end\n"
	"if ARGV[4] ~= '' then\n"
	"  redis.call('XADD', KEYS[6], 'MAXLEN', '~', " ALQ_DEAD_MAXLEN
	", '*',\n"
	"             'id', ARGV[5], 'entry', ARGV[3], 'reason', ARGV[4],\n"
	"             'deliveries', ARGV[6])\n"
	"end\n"
	"if ARGV[3] ~= '' then\n"
	"  redis.call('XACK', KEYS[3], 'workers', ARGV[3])\n"
	"end\n"
	"return stored\n",

    [ALQ_HEARTBEAT] =
	"local lost = {}\n"
	"for i = 2, #ARGV do\n"
	"  local p = redis.call('XPENDING', KEYS[1], 'workers', ARGV[i],\n"
	"                       ARGV[i], 1, ARGV[1])\n"
	"  if #p == 1 then\n"
	"    redis.call('XCLAIM', KEYS[1], 'workers', ARGV[1], 0, ARGV[i],\n"
	"               'JUSTID')\n"
	"  else\n"
	"    lost[#lost + 1] = ARGV[i]\n"
	"  end\n"
	"end\n"
	"return lost\n",

    [ALQ_RECLAIM] =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return {} end\n"
	"local slack = tonumber(ARGV[2])\n"
	"local want = tonumber(ARGV[3])\n"
	"local dflt = tonumber(ARGV[4])\n"
	"local maxw = tonumber(ARGV[5])\n"
	"local out = {}\n"
	"local p = redis.call('XPENDING', KEYS[1], 'workers', 'IDLE', slack,\n"
	"                     '-', '+', 256)\n"
	"for _, e in ipairs(p) do\n"
	"  if #out >= want then break end\n"
	"  local sid, idle, n = e[1], tonumber(e[3]), tonumber(e[4])\n"
	"  local w = dflt\n"
	"  local r = redis.call('XRANGE', KEYS[1], sid, sid)\n"
	"  if #r == 1 and type(r[1][2]) == 'table' then\n"
	"    local f = r[1][2]\n"
	"    for i = 1, #f - 1, 2 do\n"
	"      if f[i] == 'w' then\n"
	"        local v = f[i + 1]\n"
	"        if type(v) == 'string' and #v <= 19 and v:match('^%d+$')\n"
	"        then w = tonumber(v) else w = 0 end\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  if w < 0 or w > maxw then w = maxw end\n"
	"  w = math.floor(w)\n"
	"  if idle >= w + slack then\n"
	"    local c = redis.call('XCLAIM', KEYS[1], 'workers', ARGV[1],\n"
	"                         w + slack, sid)\n"
	"    if #c == 1 and c[1] then\n"
	"      out[#out + 1] = {c[1][1], c[1][2] or false, n + 1}\n"
	"    end\n"
	"  end\n"
	"end\n"
	"return out\n",

    [ALQ_TRIM] =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
	"local last\n"
	"for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do\n"
	"  local name, ld\n"
	"  for i = 1, #g - 1, 2 do\n"
	"    if g[i] == 'name' then name = g[i + 1]\n"
	"    elseif g[i] == 'last-delivered-id' then ld = g[i + 1] end\n"
	"  end\n"
	"  if name == 'workers' then last = ld end\n"
	"end\n"
	"if not last then return 0 end\n"
	"local minid = last\n"
	"local p = redis.call('XPENDING', KEYS[1], 'workers', '-', '+', 1)\n"
	"if #p == 1 then minid = p[1][1] end\n"
	"local n = redis.call('XTRIM', KEYS[1], 'MINID', minid)\n"
	"local idle = tonumber(ARGV[1])\n"
	"for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1],\n"
	"                              'workers')) do\n"
	"  local name, pend, cidle\n"
	"  for i = 1, #c - 1, 2 do\n"
	"    if c[i] == 'name' then name = c[i + 1]\n"
	"    elseif c[i] == 'pending' then pend = c[i + 1]\n"
	"    elseif c[i] == 'idle' then cidle = c[i + 1] end\n"
	"  end\n"
	"  if pend == 0 and cidle and cidle > idle then\n"
	"    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], 'workers', name)\n"
	"  end\n"
	"end\n"
	"if KEYS[2] then\n" /* cancellations nobody holds any more */
	"  for _, sid in ipairs(redis.call('HKEYS', KEYS[2])) do\n"
	"    local p = redis.call('XPENDING', KEYS[1], 'workers', sid, sid, 1)\n"
	"    if #p == 0 then redis.call('HDEL', KEYS[2], sid) end\n"
	"  end\n"
	"end\n"
	"return n\n",

    /* A job's state: done, unknown, running (its entry pending: claimed
     * by a dispatcher) or queued. */
    [ALQ_JOB_STATUS] =
	"if redis.call('EXISTS', KEYS[2]) == 1 then return {'done'} end\n"
	"if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end\n"
	"local sid = redis.call('GET', KEYS[3])\n"
	"if not sid then return {'queued', ''} end\n"
	"local p = redis.pcall('XPENDING', KEYS[4], 'workers', sid, sid, 1)\n"
	"if type(p) == 'table' and #p == 1 then\n"
	"  return {'running', sid, p[1][2], p[1][4]}\n"
	"end\n"
	"return {'queued', sid}\n",

    /* Store the CX result (first result wins, as in COMPLETE) and signal
     * it; a pending entry is also put in the cancel hash, so the
     * dispatcher holding it learns it (CANCELLED) and kills its VM. Every
     * cancel, from whichever front door, counts in KEYS[7]
     * (airlock_cancels_total). */
    [ALQ_CANCEL] =
	"if redis.call('EXISTS', KEYS[2]) == 1 then return {'done'} end\n"
	"if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end\n"
	"local sid = redis.call('GET', KEYS[4])\n"
	"local st = 'queued'\n"
	"if sid then\n"
	"  local p = redis.pcall('XPENDING', KEYS[5], 'workers', sid, sid, 1)\n"
	"  if type(p) == 'table' and #p == 1 then st = 'running' end\n"
	"  redis.call('EXPIRE', KEYS[4], ARGV[3])\n"
	"end\n"
	"local res = ARGV[1]\n"
	"if st == 'running' then\n"
	"  res = ARGV[2]\n"
	"  redis.call('HSET', KEYS[6], sid, ARGV[4])\n"
	"end\n"
	"redis.call('SET', KEYS[2], res, 'EX', ARGV[3])\n"
	"redis.call('RPUSH', KEYS[3], '1')\n"
	"redis.call('EXPIRE', KEYS[3], ARGV[3])\n"
	"redis.call('EXPIRE', KEYS[1], ARGV[3])\n"
	"redis.call('INCR', KEYS[7])\n"
	"return {st}\n",

    /* Which of the entries ARGV (held by the caller) were cancelled; each
     * is reported once. */
    [ALQ_CANCEL_POLL] =
	"local out = {}\n"
	"for i = 1, #ARGV do\n"
	"  if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then\n"
	"    out[#out + 1] = ARGV[i]\n"
	"  end\n"
	"end\n"
	"return out\n",

    /* Run a dead job again: drop its dead letters ARGV[3..] (those that
     * name it), its result and signal; keep its payload; a new entry
     * with the old entry's wall time when that is still in the stream. */
    [ALQ_REQUEUE] =
	"local del, w = {}, nil\n"
	"for i = 3, #ARGV do\n"
	"  local e = redis.call('XRANGE', KEYS[6], ARGV[i], ARGV[i])\n"
	"  if #e == 1 and type(e[1][2]) == 'table' then\n"
	"    local f, id, entry = e[1][2], nil, nil\n"
	"    for j = 1, #f - 1, 2 do\n"
	"      if f[j] == 'id' then id = f[j + 1] end\n"
	"      if f[j] == 'entry' then entry = f[j + 1] end\n"
	"    end\n"
	"    if id == ARGV[1] then\n"
	"      del[#del + 1] = ARGV[i]\n"
	"      if entry and entry ~= '' and not w then\n"
	"        local o = redis.pcall('XRANGE', KEYS[5], entry, entry)\n"
	"        if type(o) == 'table' and #o == 1 and\n"
	"           type(o[1][2]) == 'table' then\n"
	"          local g = o[1][2]\n"
	"          for j = 1, #g - 1, 2 do\n"
	"            if g[j] == 'w' then w = g[j + 1] end\n"
	"          end\n"
	"        end\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if #del == 0 then return {'none'} end\n"
	"if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end\n"
	"if redis.call('EXISTS', KEYS[2]) == 0 then\n" /* requeued already */
	"  redis.call('XDEL', KEYS[6], unpack(del))\n"
	"  return {'dup'}\n"
	"end\n"
	"redis.call('XDEL', KEYS[6], unpack(del))\n"
	"redis.call('DEL', KEYS[2], KEYS[3])\n"
	"redis.call('PERSIST', KEYS[1])\n"
	"local sid\n"
	"if w then\n"
	"  sid = redis.call('XADD', KEYS[5], '*', 'id', ARGV[1], 't', ARGV[2],\n"
	"                   'w', w)\n"
	"else\n"
	"  sid = redis.call('XADD', KEYS[5], '*', 'id', ARGV[1], 't', ARGV[2])\n"
	"end\n"
	"redis.call('SET', KEYS[4], sid)\n"
	"return {'ok', sid}\n",
};

const char *alq_script_text(enum alq_script s)
{
	return s < ALQ_N_SCRIPTS ? scripts[s] : NULL;
}

/* --- replies
 * ------------------------------------------------------------------ */

static bool is_str(const redisReply *r)
{
	return r &&
	       (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static bool str_eq(const redisReply *r, const char *s)
{
	return is_str(r) && r->len == strlen(s) && !memcmp(r->str, s, r->len);
}

/* An unsigned decimal of at most 19 digits from a string reply. */
static bool reply_u64(const redisReply *r, uint64_t *ret)
{
	uint64_t v = 0;

	if (r && r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
		*ret = (uint64_t)r->integer;
		return true;
	}
	if (!is_str(r) || r->len == 0 || r->len > 19)
		return false;
	for (size_t i = 0; i < r->len; i++) {
		if (r->str[i] < '0' || r->str[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(r->str[i] - '0');
	}
	*ret = v;
	return true;
}

int alq_entry_parse(const redisReply *r, struct alq_entry *ret)
{
	struct alq_entry e;
	const redisReply *sid, *f;
	uint64_t v;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
		return -EPROTO;
	sid = r->element[0];
	if (!is_str(sid) || sid->len == 0 || sid->len >= sizeof(e.sid))
		return -EPROTO;
	memset(&e, 0, sizeof(e));
	memcpy(e.sid, sid->str, sid->len);
	e.deliveries = 1;
	f = r->element[1];
	if (f && f->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i + 1 < f->elements; i += 2) {
			const redisReply *k = f->element[i];
			const redisReply *val = f->element[i + 1];

			if (str_eq(k, "id")) {
				if (is_str(val) &&
				    al_id_valid(val->str, val->len)) {
					memcpy(e.id, val->str, val->len);
					e.id[val->len] = '\0';
					e.id_bad = false;
				} else {
					e.id[0] = '\0';
					e.id_bad = true;
				}
			} else if (str_eq(k, "t") && reply_u64(val, &v)) {
				e.submit_ms = v;
			} else if (str_eq(k, "w") && reply_u64(val, &v)) {
				e.wall_ms = v > AL_WALL_MS_MAX ? AL_WALL_MS_MAX
							       : (uint32_t)v;
			}
		}
	}
	*ret = e;
	return 0;
}

int alq_fetch_parse(const redisReply *r, enum alq_fetch *ret_kind,
		    const char **ret_payload, size_t *ret_len)
{
	const redisReply *k;
	uint64_t n;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
		return -EPROTO;
	k = r->element[0];
	*ret_payload = NULL;
	*ret_len = 0;
	if (str_eq(k, "done")) {
		*ret_kind = ALQ_FETCH_DONE;
	} else if (str_eq(k, "missing")) {
		*ret_kind = ALQ_FETCH_MISSING;
	} else if (str_eq(k, "type")) {
		*ret_kind = ALQ_FETCH_TYPE;
	} else if (str_eq(k, "big") && r->elements == 2 &&
		   reply_u64(r->element[1], &n)) {
		*ret_kind = ALQ_FETCH_BIG;
		*ret_len = (size_t)n;
	} else if (str_eq(k, "ok") && r->elements == 2 &&
		   r->element[1]->type == REDIS_REPLY_STRING &&
		   r->element[1]->len <= AL_JOB_MAX_BYTES) {
		*ret_kind = ALQ_FETCH_OK;
		*ret_payload = r->element[1]->str;
		*ret_len = r->element[1]->len;
	} else {
		return -EPROTO;
	}
	return 0;
}

void alq_new_id(char buf[AL_ID_MAX + 1])
{
	uint8_t rnd[10];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (uint8_t)(ts.tv_nsec >> (i % 4 * 8)) ^
				 (uint8_t)(i * 151u);
	}
	strcpy(buf, "j-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 + 2 * i, 3, "%02x", rnd[i]);
}

int alq_prepare(struct al_job *job, const struct al_policy *policy,
		const char *id_if_none, struct alq_prepared *ret)
{
	struct al_limits lim;

	memset(ret, 0, sizeof(*ret));
	if (!job->id) {
		if (id_if_none)
			snprintf(ret->id, sizeof(ret->id), "%s", id_if_none);
		else
			alq_new_id(ret->id);
		job->id = strdup(ret->id);
		if (!job->id)
			return -ENOMEM;
	} else {
		snprintf(ret->id, sizeof(ret->id), "%s", job->id);
	}
	al_job_limits(job, policy, &lim);
	ret->wall_ms = lim.wall_ms;
	return al_job_to_msgpack(job, &ret->payload, &ret->len);
}

/* --- the blocking client ----------------------------------------------------
 */

static struct timeval tv_ms(uint32_t ms)
{
	struct timeval tv = {.tv_sec = ms / 1000,
			     .tv_usec = (suseconds_t)(ms % 1000) * 1000};
	return tv;
}

/* Turn a failed call into -errno and remember why. */
static int client_fail(struct alq_client *c, const redisReply *r)
{
	if (r && r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof(c->err), "redis: %.200s", r->str);
		return -EPROTO;
	}
	if (c->rc && c->rc->err) {
		snprintf(c->err, sizeof(c->err), "redis: %s", c->rc->errstr);
		if (c->rc->err == REDIS_ERR_IO && c->rc->errstr[0] &&
		    strstr(c->rc->errstr, "temporarily unavailable"))
			return -ETIMEDOUT;
		return c->rc->err == REDIS_ERR_EOF ? -ECONNRESET : -EIO;
	}
	snprintf(c->err, sizeof(c->err), "redis: unexpected reply");
	return -EPROTO;
}

/* Connect c->rc to host:port (or the URL's unix socket when host is
 * NULL), AUTH and SELECT as the URL says. On failure c->rc is NULL and
 * c->err says why. */
static int client_connect(struct alq_client *c, const char *host, int port)
{
	const struct alq_url *u = &c->url;
	struct timeval tv = tv_ms(c->timeout_ms);
	redisReply *r = NULL;
	int ret = 0;

	c->rc = !host ? redisConnectUnixWithTimeout(u->path, tv)
		      : redisConnectWithTimeout(host, port, tv);
	if (!c->rc) {
		snprintf(c->err, sizeof(c->err), "redis: out of memory");
		return -ENOMEM;
	}
	if (c->rc->err) {
		snprintf(c->err, sizeof(c->err), "redis: %s", c->rc->errstr);
		ret = c->rc->err == REDIS_ERR_IO ? -ECONNREFUSED : -EIO;
		goto out;
	}
	redisSetTimeout(c->rc, tv_ms(c->timeout_ms + c->extra_ms));
	if (u->pass[0]) {
		r = u->user[0]
			? redisCommand(c->rc, "AUTH %s %s", u->user, u->pass)
			: redisCommand(c->rc, "AUTH %s", u->pass);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			ret = client_fail(c, r);
			goto out;
		}
		freeReplyObject(r);
		r = NULL;
	}
	if (u->db) {
		r = redisCommand(c->rc, "SELECT %u", u->db);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			ret = client_fail(c, r);
			goto out;
		}
	}
out:
	freeReplyObject(r);
	if (ret < 0) {
		redisFree(c->rc);
		c->rc = NULL;
	}
	return ret;
}

/* Is r a cluster redirection? (*rd filled) */
static bool redirected(const redisReply *r, struct alq_redirect *rd)
{
	if (!r || r->type != REDIS_REPLY_ERROR) {
		rd->kind = ALQ_REDIRECT_NONE;
		return false;
	}
	alq_redirect_parse(r->str, r->len, rd);
	return rd->kind != ALQ_REDIRECT_NONE;
}

/* Pause before sending again after TRYAGAIN / CLUSTERDOWN / ASK: 10 ms
 * doubling to 320 ms, so a few seconds of migration or failover pass. */
static void redirect_pause(unsigned tries)
{
	struct timespec ts = {0, 0};
	unsigned ms = 10u << (tries < 5 ? tries : 5);

	ts.tv_nsec = (long)ms * 1000000L;
	nanosleep(&ts, NULL);
}

/* MOVED: the slot's master is rd's host:port; connect there instead. On
 * failure the old connection stays (the caller reports the MOVED). */
static int follow_moved(struct alq_client *c, const struct alq_redirect *rd)
{
	redisContext *old = c->rc;
	char host[ALQ_HOST_MAX + 1];

	snprintf(host, sizeof(host), "%s", rd->host[0] ? rd->host : c->host);
	c->rc = NULL;
	if (client_connect(c, host, rd->port) < 0) {
		c->rc = old;
		return -EIO;
	}
	redisFree(old);
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = rd->port;
	c->submit_sha[0] = '\0'; /* this node has not loaded it */
	c->redirects++;
	return 0;
}

/* ASK: ASKING then the command on the migration's target, once, on a
 * connection of its own. NULL when that node cannot be reached. */
static redisReply *ask(struct alq_client *c, const struct alq_redirect *rd,
		       int argc, const char **argv, const size_t *lens)
{
	struct alq_client t = *c;
	redisReply *r = NULL, *a;

	t.rc = NULL;
	if (client_connect(&t, rd->host[0] ? rd->host : c->host, rd->port) < 0)
		return NULL;
	a = redisCommand(t.rc, "ASKING");
	if (a && a->type == REDIS_REPLY_STATUS)
		r = redisCommandArgv(t.rc, argc, argv, lens);
	freeReplyObject(a);
	redisFree(t.rc);
	c->redirects++;
	return r;
}

/* redis+sentinel: the connection broke or answers READONLY (a failover
 * demoted its master): ask the sentinels again and connect to the master
 * they name. On failure the old connection stays. */
static int follow_sentinel(struct alq_client *c)
{
	redisContext *old = c->rc;
	char host[sizeof(c->host)], err[400];
	int port;

	if (alq_sentinel_master(&c->url, c->timeout_ms, host, sizeof(host),
				&port, err, sizeof(err)) < 0)
		return -EHOSTUNREACH;
	c->rc = NULL;
	if (client_connect(c, host, port) < 0) {
		c->rc = old;
		return -EIO;
	}
	redisFree(old);
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->submit_sha[0] = '\0';
	return 0;
}

static bool failed_over(const struct alq_client *c, const redisReply *r)
{
	return c->url.sentinel_ && (!r || (r->type == REDIS_REPLY_ERROR &&
					   !strncmp(r->str, "READONLY", 8)));
}

/* One command, following cluster redirections: a MOVED reconnects to the
 * slot's new master, an ASK goes to the migration's target once, a
 * TRYAGAIN or CLUSTERDOWN waits and sends it again; up to
 * ALQ_REDIRECT_TRIES times (a few seconds), then the last reply is the
 * caller's to report. None of them ran the command, so resending is safe
 * (cluster.h). */
#define ALQ_REDIRECT_TRIES 16
static redisReply *cmd_argv(struct alq_client *c, int argc, const char **argv,
			    const size_t *lens)
{
	struct alq_redirect rd;
	redisReply *r = NULL;

	for (unsigned tries = 0;; tries++) {
		r = redisCommandArgv(c->rc, argc, argv, lens);
		if (failed_over(c, r) && tries + 1 < ALQ_REDIRECT_TRIES) {
			/* every script here may run twice (ids, SET NX) */
			freeReplyObject(r);
			redirect_pause(tries);
			follow_sentinel(c);
			continue;
		}
		if (!redirected(r, &rd) || tries + 1 >= ALQ_REDIRECT_TRIES)
			return r;
		if (rd.kind == ALQ_REDIRECT_MOVED) {
			if (follow_moved(c, &rd) < 0)
				return r;
		} else if (rd.kind == ALQ_REDIRECT_ASK) {
			redisReply *a = ask(c, &rd, argc, argv, lens);
			struct alq_redirect again;

			if (a && !redirected(a, &again)) {
				freeReplyObject(r);
				return a;
			}
			freeReplyObject(a);
			redirect_pause(tries);
		} else {
			redirect_pause(tries);
		}
		freeReplyObject(r);
	}
}

redisReply *alq_client_command(struct alq_client *c, int argc,
				const char **argv, const size_t *lens)
{
	redisReply *r = c->rc ? cmd_argv(c, argc, argv, lens) : NULL;

	if (!r)
		snprintf(c->err, sizeof(c->err), "redis: %s",
			 c->rc && c->rc->errstr[0] ? c->rc->errstr
						   : "not connected");
	return r;
}

/* After a pipeline saw redirection rd: act on it (reconnect, or wait)
 * before the caller sends its commands again one by one or anew. */
static int follow(struct alq_client *c, const struct alq_redirect *rd,
		  unsigned tries)
{
	if (tries + 1 >= ALQ_REDIRECT_TRIES) {
		snprintf(c->err, sizeof(c->err),
			 "redis: cluster redirections "
			 "did not settle");
		return -EAGAIN;
	}
	if (rd->kind == ALQ_REDIRECT_MOVED)
		return follow_moved(c, rd) < 0 ? -EIO : 0;
	redirect_pause(tries);
	return 0;
}

int alq_client_open(struct alq_client *c, const struct alq_url *u,
		    const char *queue, uint32_t timeout_ms)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->queue, sizeof(c->queue), "%s", queue);
	c->timeout_ms = timeout_ms;
	c->url = *u;
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	c->port = u->port;
	if (u->sentinel_ &&
	    alq_sentinel_master(u, timeout_ms, c->host, sizeof(c->host),
				&c->port, c->err, sizeof(c->err)) < 0)
		return -EHOSTUNREACH;
	return client_connect(c, u->unix_ ? NULL : c->host, c->port);
}

void alq_client_close(struct alq_client *c)
{
	if (c->rc)
		redisFree(c->rc);
	c->rc = NULL;
	explicit_bzero(&c->url, sizeof(c->url));
}

static int load_submit(struct alq_client *c)
{
	const char *argv[] = {"SCRIPT", "LOAD", scripts[ALQ_SUBMIT]};
	redisReply *r;
	int ret = 0;

	r = cmd_argv(c, 3, argv, NULL);
	if (r && r->type == REDIS_REPLY_STRING && r->len == 40)
		memcpy(c->submit_sha, r->str, 41);
	else
		ret = client_fail(c, r);
	freeReplyObject(r);
	return ret;
}

/* One SUBMIT's command line: EVALSHA (sha) or EVAL, its keys and args. */
struct submit_cmd {
	char kjob[ALQ_KEY_MAX], kjobs[ALQ_KEY_MAX], ksid[ALQ_KEY_MAX];
	char kdig[ALQ_KEY_MAX], t[24], w[16];
	const char *argv[12];
	size_t lens[12];
};

static int submit_cmd(struct alq_client *c, const struct alq_submit *s,
		      bool sha, struct submit_cmd *m)
{
	char pq[ALQ_PART_NAME_MAX];
	const char *q = qof(c, s->id, pq);

	if (alq_key(m->kjob, sizeof(m->kjob), q, ALQ_KEY_JOB, s->id) < 0 ||
	    alq_key(m->kjobs, sizeof(m->kjobs), q, ALQ_KEY_JOBS, NULL) < 0 ||
	    alq_key(m->ksid, sizeof(m->ksid), q, ALQ_KEY_SID, s->id) < 0 ||
	    alq_key(m->kdig, sizeof(m->kdig), q, ALQ_KEY_DIGEST, s->id) < 0)
		return -ENAMETOOLONG;
	snprintf(m->t, sizeof(m->t), "%llu", (unsigned long long)al_wall_ms());
	snprintf(m->w, sizeof(m->w), "%u", s->wall_ms);
	m->argv[0] = sha ? "EVALSHA" : "EVAL";
	m->argv[1] = sha ? c->submit_sha : scripts[ALQ_SUBMIT];
	m->argv[2] = "4";
	m->argv[3] = m->kjob;
	m->argv[4] = m->kjobs;
	m->argv[5] = m->ksid;
	m->argv[6] = m->kdig;
	m->argv[7] = s->payload;
	m->argv[8] = s->id;
	m->argv[9] = m->t;
	m->argv[10] = m->w;
	m->argv[11] = s->digest;
	for (int i = 0; i < 12; i++)
		m->lens[i] = i == 7 ? s->len : strlen(m->argv[i]);
	return 0;
}

static bool noscript(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR &&
	       !strncmp(r->str, "NOSCRIPT", 8);
}

/* SUBMIT's {'conflict', digest} reply: -EEXIST, the stored digest in
 * s->stored_digest ("" when the queue had none: an older submit); any
 * other reply is the client's failure. */
static int submit_conflict(struct alq_client *c, const redisReply *r,
			   struct alq_submit *s)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(r->element[0]->str, "conflict") != 0 ||
	    r->element[1]->type != REDIS_REPLY_STRING)
		return client_fail(c, r);
	if (r->element[1]->len == AL_DIGEST_HEX)
		memcpy(s->stored_digest, r->element[1]->str, AL_DIGEST_HEX + 1);
	snprintf(c->err, sizeof(c->err),
		 "id %.128s: submitted before with another payload", s->id);
	return -EEXIST;
}

static void submit_reply(struct alq_client *c, const redisReply *rep,
			 struct alq_submit *s)
{
	s->dup = rep->type == REDIS_REPLY_NIL;
	s->err = rep->type == REDIS_REPLY_STRING || s->dup
		     ? 0
		     : submit_conflict(c, rep, s);
}

/* WAIT for c->wait_replicas replicas to have the window's writes: when
 * fewer acknowledge within wait_ms, each job enqueued now (not a
 * duplicate, no error) gets -EAGAIN: it is on the master, and a failover
 * may lose it; submitting it again by its id is safe. */
static int submit_wait(struct alq_client *c, struct alq_submit *w, size_t m)
{
	char n[16], ms[16];
	redisReply *r;
	long long got;

	snprintf(n, sizeof(n), "%u", c->wait_replicas);
	snprintf(ms, sizeof(ms), "%u", c->wait_ms ? c->wait_ms : 1000);
	r = cmd_argv(c, 3, (const char *[]){"WAIT", n, ms}, NULL);
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		int e = client_fail(c, r);

		freeReplyObject(r);
		return e;
	}
	got = r->integer;
	freeReplyObject(r);
	if (got >= (long long)c->wait_replicas)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (!w[i].err && !w[i].dup)
			w[i].err = -EAGAIN;
	snprintf(c->err, sizeof(c->err),
		 "acknowledged by %lld of %u "
		 "replicas within %s ms: submit again by id",
		 got, c->wait_replicas, ms);
	return 0;
}

/* A window of up to 64 SUBMITs as one pipeline (EVALSHA). A reply that
 * is NOSCRIPT (the script cache was flushed, or a MOVED took us to a node
 * that never loaded it) or a cluster redirection is sent again on its
 * own, as EVAL, after every reply of the window is read: the pipeline's
 * replies stay in order. */
static int submit_window(struct alq_client *c, struct alq_submit *w, size_t m)
{
	redisReply *rep[64] = {0};
	struct submit_cmd cmd;
	int r = 0;

	for (size_t i = 0; i < m; i++) {
		if ((r = submit_cmd(c, &w[i], c->submit_sha[0], &cmd)) < 0)
			return r;
		if (redisAppendCommandArgv(c->rc, 12, cmd.argv, cmd.lens) !=
		    REDIS_OK)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		if (redisGetReply(c->rc, (void **)&rep[i]) != REDIS_OK) {
			r = client_fail(c, NULL);
			goto out;
		}
	}
	for (size_t i = 0; i < m; i++) {
		struct alq_redirect rd;

		if (noscript(rep[i]) || redirected(rep[i], &rd)) {
			freeReplyObject(rep[i]);
			if ((r = submit_cmd(c, &w[i], false, &cmd)) < 0)
				goto out;
			rep[i] = cmd_argv(c, 12, cmd.argv, cmd.lens);
			if (!rep[i]) {
				r = client_fail(c, NULL);
				goto out;
			}
		}
		submit_reply(c, rep[i], &w[i]);
	}
	if (c->wait_replicas)
		r = submit_wait(c, w, m);
out:
	for (size_t i = 0; i < m; i++)
		freeReplyObject(rep[i]);
	return r;
}

static int submit_run(struct alq_client *c, struct alq_submit *jobs, size_t n);

/* With partitions, the jobs of one partition go together (one slot, one
 * node: a pipeline is not broken up by redirections), partition by
 * partition, their outcomes copied back. */
int alq_client_submit_many(struct alq_client *c, struct alq_submit *jobs,
			   size_t n)
{
	struct alq_submit *part;
	size_t *where;
	int r = 0;

	if (c->partitions <= 1 || n <= 1)
		return submit_run(c, jobs, n);
	part = calloc(n, sizeof(*part));
	where = calloc(n, sizeof(*where));
	if (!part || !where) {
		free(part);
		free(where);
		return -ENOMEM;
	}
	for (unsigned p = 0; p < c->partitions && r == 0; p++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (alq_partition_of(jobs[i].id, c->partitions) == p) {
				where[m] = i;
				part[m++] = jobs[i];
			}
		if (m && (r = submit_run(c, part, m)) == 0)
			for (size_t i = 0; i < m; i++)
				jobs[where[i]] = part[i];
	}
	free(part);
	free(where);
	return r;
}

static int submit_run(struct alq_client *c, struct alq_submit *jobs, size_t n)
{
	const size_t window = 64;
	int r;

	for (size_t base = 0; base < n; base += window) {
		size_t m = n - base < window ? n - base : window;

		if (!c->submit_sha[0] && (r = load_submit(c)) < 0)
			return r;
		for (size_t i = 0; i < m; i++) {
			al_digest_hex(jobs[base + i].payload,
				      jobs[base + i].len,
				      jobs[base + i].digest);
			jobs[base + i].stored_digest[0] = '\0';
		}
		if ((r = submit_window(c, jobs + base, m)) < 0)
			return r;
	}
	return 0;
}

int alq_client_submit(struct alq_client *c, const char *id, const char *payload,
		      size_t len, uint32_t wall_ms, bool *ret_dup)
{
	struct alq_submit s = {
	    .id = id, .payload = payload, .len = len, .wall_ms = wall_ms};
	int r = alq_client_submit_many(c, &s, 1);

	if (r == 0 && s.err == 0)
		*ret_dup = s.dup;
	if (r == 0 && s.err == -EEXIST)
		snprintf(c->err, sizeof(c->err), "id %.128s: submitted before "
			 "with another payload (digest %.12s, ours %.12s)", id,
			 s.stored_digest[0] ? s.stored_digest : "unknown",
			 s.digest);
	return r < 0 ? r : s.err;
}

static int have_results(struct alq_client *c, const char *const *ids, size_t n,
			bool *done);

/* With partitions, one pipeline per partition (one node each). */
int alq_client_have_results(struct alq_client *c, const char *const *ids,
			    size_t n, bool *done)
{
	const char **sub;
	bool *got;
	size_t *where;
	int e = 0;

	if (c->partitions <= 1 || n <= 1)
		return have_results(c, ids, n, done);
	sub = calloc(n, sizeof(*sub));
	got = calloc(n, sizeof(*got));
	where = calloc(n, sizeof(*where));
	for (unsigned p = 0; sub && got && where && p < c->partitions && !e;
	     p++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (alq_partition_of(ids[i], c->partitions) == p) {
				where[m] = i;
				sub[m++] = ids[i];
			}
		if (m && (e = have_results(c, sub, m, got)) == 0)
			for (size_t i = 0; i < m; i++)
				done[where[i]] = got[i];
	}
	if (!sub || !got || !where)
		e = -ENOMEM;
	free(sub);
	free(got);
	free(where);
	return e;
}

static int have_results(struct alq_client *c, const char *const *ids, size_t n,
			bool *done)
{
	char key[ALQ_KEY_MAX], pq[ALQ_PART_NAME_MAX];
	bool again = false;
	int e = 0;

	for (size_t i = 0; i < n; i++) {
		if (alq_key(key, sizeof(key), qof(c, ids[i], pq),
			    ALQ_KEY_RESULT, ids[i]) < 0)
			return -ENAMETOOLONG;
		if (redisAppendCommand(c->rc, "EXISTS %s", key) != REDIS_OK)
			return -ENOMEM;
	}
	/* read every reply (the pipeline stays in order); a redirection is
	 * asked again on its own below */
	for (size_t i = 0; i < n; i++) {
		struct alq_redirect rd;
		redisReply *r = NULL;

		if (redisGetReply(c->rc, (void **)&r) != REDIS_OK)
			return client_fail(c, NULL);
		if (redirected(r, &rd)) {
			again = true;
			done[i] = false;
		} else if (r->type != REDIS_REPLY_INTEGER) {
			if (!e)
				e = client_fail(c, r);
		} else {
			done[i] = r->integer == 1;
		}
		freeReplyObject(r);
	}
	for (size_t i = 0; again && !e && i < n; i++) {
		redisReply *r;

		alq_key(key, sizeof(key), qof(c, ids[i], pq), ALQ_KEY_RESULT,
			ids[i]);
		r = cmd_argv(c, 2, (const char *[]){"EXISTS", key}, NULL);
		if (!r || r->type != REDIS_REPLY_INTEGER)
			e = client_fail(c, r);
		else
			done[i] = r->integer == 1;
		freeReplyObject(r);
	}
	return e;
}

/* BLPOP on the done keys of ids[0..n) for up to `ms`; *ret_index = which
 * one fired, -ETIMEDOUT when none did. */
static int blpop(struct alq_client *c, const char *const *ids, size_t n,
		 uint32_t ms, size_t *ret_index)
{
	/* argv (BLPOP key... timeout), then the n keys, in one block; n is
	 * at most ALQ_WAIT_MANY (alq_client_wait_any) */
	const char **argv =
	    calloc(1, (n + 2) * sizeof(*argv) + n * ALQ_KEY_MAX);
	char(*keys)[ALQ_KEY_MAX] = argv ? (void *)(argv + n + 2) : NULL;
	char secs[32], pq[ALQ_PART_NAME_MAX];
	redisReply *r = NULL;
	int ret = -ENOMEM;

	if (!argv)
		goto out;
	argv[0] = "BLPOP";
	for (size_t i = 0; i < n; i++) {
		if (alq_key(keys[i], sizeof(keys[i]), qof(c, ids[i], pq),
			    ALQ_KEY_DONE, ids[i]) < 0) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		argv[i + 1] = keys[i];
	}
	snprintf(secs, sizeof(secs), "%u.%03u", ms / 1000, ms % 1000);
	argv[n + 1] = secs;
	c->extra_ms = ms; /* a reconnect after MOVED keeps it */
	redisSetTimeout(c->rc, tv_ms(ms + c->timeout_ms));
	r = cmd_argv(c, (int)n + 2, argv, NULL);
	c->extra_ms = 0;
	redisSetTimeout(c->rc, tv_ms(c->timeout_ms));
	if (r && r->type == REDIS_REPLY_NIL) {
		ret = -ETIMEDOUT;
	} else if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		   is_str(r->element[0])) {
		ret = -EPROTO;
		for (size_t i = 0; i < n; i++) {
			if (str_eq(r->element[0], keys[i])) {
				*ret_index = i;
				ret = 0;
				break;
			}
		}
	} else {
		ret = client_fail(c, r);
	}
out:
	freeReplyObject(r);
	free(argv);
	return ret;
}

/* Are ids[0..n) all in one partition (one BLPOP waits for them all)? */
static bool one_partition(const struct alq_client *c, const char *const *ids,
			  size_t n)
{
	unsigned p = alq_partition_of(ids[0], c->partitions);

	for (size_t i = 1; i < n; i++)
		if (alq_partition_of(ids[i], c->partitions) != p)
			return false;
	return true;
}

/* A BLPOP's keys must share a slot, so with partitions the ids of one
 * partition are waited for at a time, 100 ms each in turn, until one is
 * done or timeout_ms passed (a result in another partition is seen
 * within a round). */
static int blpop_parts(struct alq_client *c, const char *const *ids, size_t n,
		       uint32_t timeout_ms, size_t *ret_index)
{
	const char *sub[ALQ_WAIT_MANY];
	size_t map[ALQ_WAIT_MANY];
	uint64_t end = al_now_ms() + timeout_ms;
	unsigned p = 0;

	for (;;) {
		uint64_t now = al_now_ms();
		uint32_t slice = 100;
		size_t m = 0, idx;
		int r;

		if (now >= end)
			return -ETIMEDOUT;
		if (end - now < slice)
			slice = (uint32_t)(end - now);
		for (unsigned tries = 0; m == 0 && tries < c->partitions;
		     tries++, p = (p + 1) % c->partitions)
			for (size_t i = 0; i < n; i++)
				if (alq_partition_of(ids[i], c->partitions) ==
				    p) {
					map[m] = i;
					sub[m++] = ids[i];
				}
		r = blpop(c, sub, m, slice, &idx);
		if (r == 0) {
			*ret_index = map[idx];
			return 0;
		}
		if (r != -ETIMEDOUT)
			return r;
	}
}

int alq_client_wait_any(struct alq_client *c, const char *const *ids, size_t n,
			uint32_t timeout_ms, size_t *ret_index)
{
	bool done[ALQ_WAIT_MANY] = { false };
	int r;

	if (n == 0 || n > ALQ_WAIT_MANY)
		return -EINVAL;
	r = alq_client_have_results(c, ids, n, done);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (done[i]) {
			*ret_index = i;
			return 0;
		}
	}
	if (timeout_ms == 0)
		return -ETIMEDOUT;
	if (c->partitions <= 1 || one_partition(c, ids, n))
		return blpop(c, ids, n, timeout_ms, ret_index);
	return blpop_parts(c, ids, n, timeout_ms, ret_index);
}

int alq_client_wait(struct alq_client *c, const char *id, uint32_t timeout_ms)
{
	uint64_t end = al_now_ms() + timeout_ms;
	size_t idx;

	for (;;) {
		uint64_t now = al_now_ms();
		uint32_t slice = 5000;
		int r;

		if (timeout_ms) {
			if (now >= end)
				slice = 0;
			else if (end - now < slice)
				slice = (uint32_t)(end - now);
		}
		r = alq_client_wait_any(c, &id, 1, slice, &idx);
		if (r != -ETIMEDOUT || (timeout_ms && al_now_ms() >= end))
			return r;
	}
}

int alq_client_result(struct alq_client *c, const char *id, char **ret,
		      size_t *ret_len)
{
	char key[ALQ_KEY_MAX], pq[ALQ_PART_NAME_MAX];
	redisReply *r;
	int e;

	if (alq_key(key, sizeof(key), qof(c, id, pq), ALQ_KEY_RESULT, id) < 0)
		return -ENAMETOOLONG;
	r = cmd_argv(c, 2, (const char *[]){"STRLEN", key}, NULL);
	if (!r || r->type != REDIS_REPLY_INTEGER) {
		e = client_fail(c, r);
		freeReplyObject(r);
		return e;
	}
	e = r->integer == 0				  ? -ENOENT
	    : r->integer > (long long)AL_RESULT_MAX_BYTES ? -E2BIG
							  : 0;
	freeReplyObject(r);
	if (e < 0)
		return e;
	r = cmd_argv(c, 2, (const char *[]){"GET", key}, NULL);
	if (r && r->type == REDIS_REPLY_NIL) {
		e = -ENOENT;
	} else if (!r || r->type != REDIS_REPLY_STRING ||
		   r->len > AL_RESULT_MAX_BYTES) {
		e = client_fail(c, r);
	} else if (!(*ret = malloc(r->len + 1))) {
		e = -ENOMEM;
	} else {
		memcpy(*ret, r->str, r->len);
		(*ret)[r->len] = '\0';
		*ret_len = r->len;
	}
	freeReplyObject(r);
	return e;
}

/* Field `name` of a flat [k, v, k, v...] reply. */
static const redisReply *field(const redisReply *r, const char *name)
{
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (str_eq(r->element[i], name))
			return r->element[i + 1];
	return NULL;
}

static int64_t int_or(const redisReply *r, int64_t dflt)
{
	return r && r->type == REDIS_REPLY_INTEGER ? r->integer : dflt;
}

static void status_serves(const redisReply *r, struct alq_status *st)
{
	uint64_t now = al_wall_ms(); /* heartbeats store wall time */

	if (!r || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];
		unsigned workers, busy;
		unsigned long long at;
		char val[64];

		if (!is_str(k) || !is_str(v) || v->len >= sizeof(val) ||
		    st->n_serves == ALQ_STATUS_SERVES)
			continue;
		memcpy(val, v->str, v->len);
		val[v->len] = '\0';
		if (sscanf(val, "%u %u %llu", &workers, &busy, &at) != 3)
			continue;
		snprintf(st->serves[st->n_serves].name,
			 sizeof(st->serves[0].name), "%.*s",
			 (int)(k->len > AL_NAME_MAX ? AL_NAME_MAX : k->len),
			 k->str);
		st->serves[st->n_serves].workers = workers;
		st->serves[st->n_serves].busy = busy;
		st->serves[st->n_serves].age_ms = now > at ? now - at : 0;
		st->n_serves++;
	}
}

/* The status of one partition, queue q. */
static int status_part(struct alq_client *c, const char *q,
		       struct alq_status *ret)
{
	char kjobs[ALQ_KEY_MAX], kdead[ALQ_KEY_MAX], kserves[ALQ_KEY_MAX];
	char ktput[5][ALQ_KEY_MAX], kcancels[ALQ_KEY_MAX], min[24];
	redisReply *rep[9] = {0};
	struct alq_status st;
	uint64_t minute = al_wall_ms() / 60000u;
	int e = 0;

	memset(&st, 0, sizeof(st));
	st.depth = -1;
	alq_key(kjobs, sizeof(kjobs), q, ALQ_KEY_JOBS, NULL);
	alq_key(kdead, sizeof(kdead), q, ALQ_KEY_DEAD, NULL);
	alq_key(kserves, sizeof(kserves), q, ALQ_KEY_SERVES, NULL);
	alq_key(kcancels, sizeof(kcancels), q, ALQ_KEY_CANCELS, NULL);
	for (int i = 0; i < 5; i++) {
		snprintf(min, sizeof(min), "%llu",
			 (unsigned long long)(minute - (uint64_t)i));
		alq_key(ktput[i], sizeof(ktput[i]), q, ALQ_KEY_TPUT, min);
	}
	for (unsigned tries = 0;; tries++) {
		struct alq_redirect rd = {0};

		redisAppendCommand(c->rc, "XLEN %s", kjobs);
		redisAppendCommand(c->rc, "XINFO GROUPS %s", kjobs);
		redisAppendCommand(c->rc, "XPENDING %s %s", kjobs, ALQ_GROUP);
		redisAppendCommand(c->rc, "XLEN %s", kdead);
		redisAppendCommand(c->rc, "HGETALL %s", kserves);
		redisAppendCommand(c->rc, "MGET %s %s %s %s %s", ktput[0],
				   ktput[1], ktput[2], ktput[3], ktput[4]);
		redisAppendCommand(c->rc, "GET %s", kcancels);
		for (int i = 0; i < 7; i++) {
			if (redisGetReply(c->rc, (void **)&rep[i]) !=
			    REDIS_OK) {
				e = client_fail(c, NULL);
				goto out;
			}
		}
		for (int i = 0; i < 7 && rd.kind == ALQ_REDIRECT_NONE; i++)
			redirected(rep[i], &rd);
		if (rd.kind == ALQ_REDIRECT_NONE)
			break;
		/* the slot moved or migrates: every reply is read; again */
		for (int i = 0; i < 7; i++) {
			freeReplyObject(rep[i]);
			rep[i] = NULL;
		}
		if ((e = follow(c, &rd, tries)) < 0)
			goto out;
	}
	st.length = int_or(rep[0], 0);
	/* no stream yet: XINFO/XPENDING answer errors, all counts are 0 */
	st.depth = st.length; /* no group yet: nothing was delivered */
	if (rep[1]->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < rep[1]->elements; i++) {
			const redisReply *g = rep[1]->element[i];

			if (!str_eq(field(g, "name"), ALQ_GROUP))
				continue;
			st.consumers = int_or(field(g, "consumers"), 0);
			/* lag is unknown (nil) after some deletions */
			st.depth = int_or(field(g, "lag"), -1);
		}
	}
	if (rep[2]->type == REDIS_REPLY_ARRAY && rep[2]->elements >= 1)
		st.pending = int_or(rep[2]->element[0], 0);
	st.dead = int_or(rep[3], 0);
	status_serves(rep[4], &st);
	if (rep[5]->type == REDIS_REPLY_ARRAY && rep[5]->elements == 5)
		for (int i = 0; i < 5; i++)
			if (!reply_u64(rep[5]->element[i], &st.tput[i]))
				st.tput[i] = 0;
	if (!reply_u64(rep[6], &st.cancels))
		st.cancels = 0;
	*ret = st;
out:
	for (int i = 0; i < 9; i++)
		freeReplyObject(rep[i]);
	return e;
}

int alq_client_status(struct alq_client *c, struct alq_status *ret)
{
	char pq[ALQ_PART_NAME_MAX];
	struct alq_status *one;
	int e;

	if ((e = status_part(c, c->queue, ret)) < 0 || c->partitions <= 1)
		return e;
	one = malloc(sizeof(*one)); /* a few KiB: not on the stack */
	if (!one)
		return -ENOMEM;
	for (unsigned p = 1; p < c->partitions && p < ALQ_PARTITIONS_MAX; p++) {
		if ((e = alq_partition_name(pq, sizeof(pq), c->queue, p)) < 0 ||
		    (e = status_part(c, pq, one)) < 0)
			break;
		ret->length += one->length;
		ret->depth = ret->depth < 0 || one->depth < 0
				 ? -1
				 : ret->depth + one->depth;
		ret->pending += one->pending;
		if (one->consumers > ret->consumers)
			ret->consumers = one->consumers;
		ret->dead += one->dead;
		for (int i = 0; i < 5; i++)
			ret->tput[i] += one->tput[i];
		ret->cancels += one->cancels;
	}
	free(one);
	return e;
}

/* --- one job: status, cancel, dead letters ----------------------------------
 */

static const char *const state_names[] = {
    [ALQ_UNKNOWN] = "unknown", [ALQ_QUEUED] = "queued",
    [ALQ_RUNNING] = "running", [ALQ_DONE] = "done",
    [ALQ_DEAD] = "dead",       [ALQ_CANCELLED] = "cancelled",
};

const char *al_queue_state_name(enum al_queue_state s)
{
	return (unsigned)s <= ALQ_CANCELLED ? state_names[s] : "??";
}

/* The state a script's reply names, "unknown" to "done" (the states the
 * scripts tell apart), or -1. */
static int reply_state(const redisReply *r)
{
	for (int s = ALQ_UNKNOWN; s <= ALQ_DONE; s++)
		if (str_eq(r, state_names[s]))
			return s;
	return -1;
}

/* EVAL script `s` with the keys of `kinds` for `id`, then args; the
 * reply, or NULL with c->err set (*ret_err = -errno). */
static redisReply *eval_job(struct alq_client *c, enum alq_script s,
			    const enum alq_key_kind *kinds, int nkeys,
			    const char *id, int nargs, const char **args,
			    const size_t *arglens, int *ret_err)
{
	char keys[8][ALQ_KEY_MAX], nk[12], pq[ALQ_PART_NAME_MAX];
	const char *q = qof(c, id, pq);
	const char *argv[3 + 8 + 512];
	size_t lens[3 + 8 + 512];
	redisReply *r;
	int n = 0;

	if (nkeys > 8 || nargs > 512) {
		*ret_err = -EINVAL;
		return NULL;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	argv[n] = "EVAL", lens[n++] = 4;
	argv[n] = scripts[s], lens[n++] = strlen(scripts[s]);
	argv[n] = nk, lens[n++] = strlen(nk);
	for (int i = 0; i < nkeys; i++) {
		if (alq_key(keys[i], sizeof(keys[i]), q, kinds[i], id) < 0) {
			*ret_err = -ENAMETOOLONG;
			return NULL;
		}
		argv[n] = keys[i], lens[n++] = strlen(keys[i]);
	}
	for (int i = 0; i < nargs; i++)
		argv[n] = args[i],
		lens[n++] = arglens ? arglens[i] : strlen(args[i]);
	r = cmd_argv(c, n, argv, lens);
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    !is_str(r->element[0])) {
		*ret_err = client_fail(c, r);
		freeReplyObject(r);
		return NULL;
	}
	*ret_err = 0;
	return r;
}

static void copy_str(char *dst, size_t size, const redisReply *r)
{
	size_t n = 0;

	if (is_str(r)) {
		n = r->len < size - 1 ? r->len : size - 1;
		memcpy(dst, r->str, n);
	}
	dst[n] = '\0';
}

/* A stored result's facts: DONE, DEAD (XX) or CANCELLED (CX). */
static int status_done(struct alq_client *c, const char *id,
		       struct al_queue_job *j)
{
	struct al_result res = {0};
	struct al_diags d;
	size_t len;
	char *mp;
	int r;

	r = alq_client_result(c, id, &mp, &len);
	if (r == -ENOENT) { /* expired in between */
		j->state = ALQ_UNKNOWN;
		return 0;
	}
	if (r < 0)
		return r;
	al_diags_init(&d);
	r = al_result_from_msgpack(mp, len, &res, &d);
	free(mp);
	if (r < 0) {
		snprintf(c->err, sizeof(c->err), "%s: stored result does not "
			 "decode", id);
		return -EPROTO;
	}
	j->status = res.status;
	j->attempt = res.attempt;
	j->state = res.status == AL_XX	 ? ALQ_DEAD
		   : res.status == AL_CX ? ALQ_CANCELLED
					 : ALQ_DONE;
	snprintf(j->worker, sizeof(j->worker), "%s",
		 res.worker ? res.worker : "");
	snprintf(j->error, sizeof(j->error), "%s", res.error ? res.error : "");
	al_result_release(&res);
	return 0;
}

int al_queue_status(struct alq_client *c, const char *id,
		    struct al_queue_job *ret)
{
	static const enum alq_key_kind k[] = {ALQ_KEY_JOB, ALQ_KEY_RESULT,
					      ALQ_KEY_SID, ALQ_KEY_JOBS};
	struct al_queue_job j;
	redisReply *r;
	uint64_t n;
	int e;

	memset(&j, 0, sizeof(j));
	r = eval_job(c, ALQ_JOB_STATUS, k, 4, id, 0, NULL, NULL, &e);
	if (!r)
		return e;
	if (str_eq(r->element[0], "done")) {
		e = status_done(c, id, &j);
	} else if (str_eq(r->element[0], "unknown")) {
		j.state = ALQ_UNKNOWN;
	} else if (str_eq(r->element[0], "queued") && r->elements == 2) {
		j.state = ALQ_QUEUED;
		copy_str(j.sid, sizeof(j.sid), r->element[1]);
	} else if (str_eq(r->element[0], "running") && r->elements == 4 &&
		   reply_u64(r->element[3], &n)) {
		j.state = ALQ_RUNNING;
		copy_str(j.sid, sizeof(j.sid), r->element[1]);
		copy_str(j.consumer, sizeof(j.consumer), r->element[2]);
		j.attempt = (uint32_t)n;
	} else {
		e = client_fail(c, NULL);
	}
	freeReplyObject(r);
	if (e == 0)
		*ret = j;
	return e;
}

/* The CX result of `id`, msgpack (malloc'd). */
static int cx_result(const char *id, const char *why, char **ret,
		     size_t *ret_len)
{
	struct al_result res = {0};

	res.id = (char *)id;
	res.status = AL_CX;
	res.error = (char *)why;
	res.attempt = 1;
	return al_result_to_msgpack(&res, ret, ret_len);
}

int al_queue_cancel(struct alq_client *c, const char *id, uint32_t ttl_s,
		    enum al_queue_state *ret_was)
{
	static const enum alq_key_kind k[] = {
	    ALQ_KEY_JOB,  ALQ_KEY_RESULT, ALQ_KEY_DONE,	  ALQ_KEY_SID,
	    ALQ_KEY_JOBS, ALQ_KEY_CANCEL, ALQ_KEY_CANCELS};
	char *q = NULL, *run = NULL, ttl[16];
	const char *args[4];
	size_t lens[4];
	redisReply *r = NULL;
	int e, was;

	if ((e = cx_result(id, "cancelled before it ran (airlock cancel)", &q,
			   &lens[0])) < 0 ||
	    (e = cx_result(id, "cancelled while running (airlock cancel): "
			       "its VM was killed",
			   &run, &lens[1])) < 0)
		goto out;
	snprintf(ttl, sizeof(ttl), "%u", ttl_s ? ttl_s : 1);
	args[0] = q, args[1] = run, args[2] = ttl, args[3] = id;
	lens[2] = strlen(ttl), lens[3] = strlen(id);
	r = eval_job(c, ALQ_CANCEL, k, 7, id, 4, args, lens, &e);
	if (!r)
		goto out;
	was = reply_state(r->element[0]);
	if (was >= 0)
		*ret_was = (enum al_queue_state)was;
	else
		e = client_fail(c, NULL);
out:
	freeReplyObject(r);
	free(q);
	free(run);
	return e;
}

/* One dead letter [sid, [k, v...]] into *d; false when unusable. */
static bool dead_parse(const redisReply *r, struct al_queue_dead *d)
{
	const redisReply *f;
	uint64_t n;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    !is_str(r->element[0]))
		return false;
	memset(d, 0, sizeof(*d));
	copy_str(d->sid, sizeof(d->sid), r->element[0]);
	f = r->element[1];
	if (!f || f->type != REDIS_REPLY_ARRAY)
		return true;
	for (size_t i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];

		if (str_eq(k, "id"))
			copy_str(d->id, sizeof(d->id), v);
		else if (str_eq(k, "entry"))
			copy_str(d->entry, sizeof(d->entry), v);
		else if (str_eq(k, "reason"))
			copy_str(d->reason, sizeof(d->reason), v);
		else if (str_eq(k, "deliveries") && reply_u64(v, &n))
			d->deliveries = n > UINT32_MAX ? UINT32_MAX
						       : (uint32_t)n;
	}
	return true;
}

static int dead_list_part(struct alq_client *c, const char *q,
			  const char *after, struct al_queue_dead *ret,
			  size_t max, size_t *ret_n)
{
	char key[ALQ_KEY_MAX], start[ALQ_SID_MAX + 1], count[24];
	const char *argv[6];
	redisReply *r;
	size_t n = 0;

	if (alq_key(key, sizeof(key), q, ALQ_KEY_DEAD, NULL) < 0)
		return -ENAMETOOLONG;
	snprintf(start, sizeof(start), "%s%s", after && *after ? "(" : "",
		 after && *after ? after : "-");
	snprintf(count, sizeof(count), "%zu", max);
	argv[0] = "XRANGE", argv[1] = key, argv[2] = start, argv[3] = "+";
	argv[4] = "COUNT", argv[5] = count;
	r = cmd_argv(c, 6, argv, NULL);
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		int e = client_fail(c, r);

		freeReplyObject(r);
		return e;
	}
	for (size_t i = 0; i < r->elements && n < max; i++)
		if (dead_parse(r->element[i], &ret[n]))
			n++;
	freeReplyObject(r);
	*ret_n = n;
	return 0;
}

/* Stream ids "MS-SEQ" in order; a malformed one sorts first. */
static int sid_cmp(const char *a, const char *b)
{
	unsigned long long am = 0, as = 0, bm = 0, bs = 0;

	sscanf(a, "%llu-%llu", &am, &as);
	sscanf(b, "%llu-%llu", &bm, &bs);
	return am != bm	  ? (am < bm ? -1 : 1)
	       : as != bs ? (as < bs ? -1 : 1)
			  : 0;
}

static int dead_cmp(const void *a, const void *b)
{
	return sid_cmp(((const struct al_queue_dead *)a)->sid,
		       ((const struct al_queue_dead *)b)->sid);
}

/* With partitions: the first `max` letters after `after` of every
 * partition, merged by entry id, the first `max` kept. (Two partitions'
 * letters of the same millisecond and sequence page as one.) */
int al_queue_dead_list(struct alq_client *c, const char *after,
		       struct al_queue_dead *ret, size_t max, size_t *ret_n)
{
	struct al_queue_dead *all;
	char pq[ALQ_PART_NAME_MAX];
	size_t n = 0, got;
	unsigned np = c->partitions > ALQ_PARTITIONS_MAX ? ALQ_PARTITIONS_MAX
							 : c->partitions;
	int e = 0;

	if (np <= 1)
		return dead_list_part(c, c->queue, after, ret, max, ret_n);
	if (max > SIZE_MAX / sizeof(*all) / np)
		return -E2BIG;
	all = calloc(max * np + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (unsigned p = 0; p < np && e == 0; p++) {
		if ((e = alq_partition_name(pq, sizeof(pq), c->queue, p)) < 0)
			break;
		e = dead_list_part(c, pq, after, all + n, max, &got);
		if (e == 0)
			n += got;
	}
	if (e == 0) {
		qsort(all, n, sizeof(*all), dead_cmp);
		*ret_n = n < max ? n : max;
		memcpy(ret, all, *ret_n * sizeof(*all));
	}
	free(all);
	return e;
}

#define DEAD_PAGE 256

/* REQUEUE `id` with the dead letters sids[0..n). */
static int requeue(struct alq_client *c, const char *id, const char **sids,
		   size_t n)
{
	static const enum alq_key_kind k[] = {
	    ALQ_KEY_JOB,  ALQ_KEY_RESULT, ALQ_KEY_DONE,
	    ALQ_KEY_SID,  ALQ_KEY_JOBS,	  ALQ_KEY_DEAD};
	const char *args[2 + DEAD_PAGE];
	char t[24];
	redisReply *r;
	int e;

	snprintf(t, sizeof(t), "%llu", (unsigned long long)al_wall_ms());
	args[0] = id, args[1] = t;
	for (size_t i = 0; i < n; i++)
		args[2 + i] = sids[i];
	r = eval_job(c, ALQ_REQUEUE, k, 6, id, 2 + (int)n, args, NULL, &e);
	if (!r)
		return e;
	e = str_eq(r->element[0], "ok")	    ? 0
	    : str_eq(r->element[0], "gone") ? -ESTALE
	    : str_eq(r->element[0], "dup")  ? -EALREADY
					    : -ENOENT;
	freeReplyObject(r);
	return e;
}

/* Requeue the dead jobs whose id is `id` (NULL: every one), page by page
 * through the dead letter stream. */
static int requeue_scan(struct alq_client *c, const char *id, size_t *ret_n,
			size_t *ret_failed)
{
	struct al_queue_dead *page = calloc(DEAD_PAGE, sizeof(*page));
	char after[ALQ_SID_MAX] = "";
	const char *sids[1];
	size_t got;
	int e;

	if (!page)
		return -ENOMEM;
	*ret_n = *ret_failed = 0;
	do {
		e = al_queue_dead_list(c, after, page, DEAD_PAGE, &got);
		for (size_t i = 0; e == 0 && i < got; i++) {
			int r;

			if (id && strcmp(page[i].id, id))
				continue;
			sids[0] = page[i].sid;
			r = requeue(c, page[i].id, sids, 1);
			if (r == 0)
				++*ret_n;
			else if (r == -EALREADY)
				continue; /* an older letter of a requeued job */
			else if (r == -ESTALE || r == -ENOENT)
				++*ret_failed;
			else
				e = r;
		}
		if (got)
			snprintf(after, sizeof(after), "%s",
				 page[got - 1].sid);
	} while (e == 0 && got == DEAD_PAGE);
	free(page);
	return e;
}

int al_queue_dead_requeue(struct alq_client *c, const char *id)
{
	size_t n, failed;
	int e = requeue_scan(c, id, &n, &failed);

	if (e < 0)
		return e;
	if (n == 0 && failed) {
		snprintf(c->err, sizeof(c->err),
			 "%s: its payload expired; submit it again", id);
		return -ESTALE;
	}
	if (n == 0) {
		snprintf(c->err, sizeof(c->err), "%s: no dead letter", id);
		return -ENOENT;
	}
	return 0;
}

int al_queue_dead_requeue_all(struct alq_client *c, size_t *ret_n,
			      size_t *ret_failed)
{
	return requeue_scan(c, NULL, ret_n, ret_failed);
}
