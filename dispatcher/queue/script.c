/* script.c: the queue's Lua scripts and the parsers of their replies
 * (queue.h says what lives where).
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

#include <hiredis/hiredis.h>

#include "internal.h"
#include "queue.h"

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
	"    local p = redis.call('XPENDING', KEYS[1], 'workers', sid, sid, "
	"1)\n"
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
    [ALQ_CANCEL_POLL] = "local out = {}\n"
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
	"  sid = redis.call('XADD', KEYS[5], '*', 'id', ARGV[1], 't', "
	"ARGV[2],\n"
	"                   'w', w)\n"
	"else\n"
	"  sid = redis.call('XADD', KEYS[5], '*', 'id', ARGV[1], 't', "
	"ARGV[2])\n"
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

bool alq__is_str(const redisReply *r)
{
	return r &&
	       (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

bool alq__str_eq(const redisReply *r, const char *s)
{
	return alq__is_str(r) && r->len == strlen(s) &&
	       !memcmp(r->str, s, r->len);
}

/* An unsigned decimal of at most 19 digits from a string reply. */
bool alq__reply_u64(const redisReply *r, uint64_t *ret)
{
	if (r && r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
		*ret = (uint64_t)r->integer;
		return true;
	}
	return alq__is_str(r) && r->len <= 19 &&
	       al_decimal_parse(r->str, r->len, UINT64_MAX, ret) == 0;
}

int alq_entry_parse(const redisReply *r, struct alq_entry *ret)
{
	struct alq_entry e;
	const redisReply *sid, *f;
	uint64_t v;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2)
		return -EPROTO;
	sid = r->element[0];
	if (!alq__is_str(sid) || sid->len == 0 || sid->len >= sizeof(e.sid))
		return -EPROTO;
	memset(&e, 0, sizeof(e));
	memcpy(e.sid, sid->str, sid->len);
	e.deliveries = 1;
	f = r->element[1];
	if (f && f->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i + 1 < f->elements; i += 2) {
			const redisReply *k = f->element[i];
			const redisReply *val = f->element[i + 1];

			if (alq__str_eq(k, "id")) {
				if (alq__is_str(val) &&
				    al_id_valid(val->str, val->len)) {
					memcpy(e.id, val->str, val->len);
					e.id[val->len] = '\0';
					e.id_bad = false;
				} else {
					e.id[0] = '\0';
					e.id_bad = true;
				}
			} else if (alq__str_eq(k, "t") &&
				   alq__reply_u64(val, &v)) {
				e.submit_ms = v;
			} else if (alq__str_eq(k, "w") &&
				   alq__reply_u64(val, &v)) {
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
	if (alq__str_eq(k, "done")) {
		*ret_kind = ALQ_FETCH_DONE;
	} else if (alq__str_eq(k, "missing")) {
		*ret_kind = ALQ_FETCH_MISSING;
	} else if (alq__str_eq(k, "type")) {
		*ret_kind = ALQ_FETCH_TYPE;
	} else if (alq__str_eq(k, "big") && r->elements == 2 &&
		   alq__reply_u64(r->element[1], &n)) {
		*ret_kind = ALQ_FETCH_BIG;
		*ret_len = (size_t)n;
	} else if (alq__str_eq(k, "ok") && r->elements == 2 &&
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
