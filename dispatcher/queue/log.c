/* log.c: the dispatcher's log lines (log.h), as text or JSON.
 *
 * A JSON line is the text line taken apart: the leading `key=value` words
 * of the message (up to the first ": ") become fields, `job` and `worker`
 * at the top level, the rest of the message is the event:
 *
 *   job=j-1 status=OK attempt=1: result stored
 *   {"time":"...","level":"info","pid":7,"job":"j-1","event":"result
 *    stored","fields":{"status":"OK","attempt":"1"}}
 *
 * so callers keep writing one printf-style line per event.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum al_log_level al_log_level = AL_LOG_INFO;
enum al_log_format al_log_format = AL_LOG_TEXT;

#define LINE_MAX_ 1024 /* bytes of a message; a JSON line escapes up to 6x */
#define PAIRS_MAX 8

/* Append s (n bytes) JSON-escaped, as a string, to out at *used. */
static void put_str(char *out, size_t len, size_t *used, const char *s,
		    size_t n)
{
	size_t u = *used;

	if (u + 2 >= len)
		return;
	out[u++] = '"';
	for (size_t i = 0; i < n && u + 8 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			out[u++] = '\\';
			out[u++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			u += (size_t)snprintf(out + u, len - u, "\\u%04x", c);
		} else {
			out[u++] = (char)c;
		}
	}
	out[u++] = '"';
	out[u] = '\0';
	*used = u;
}

static void put_raw(char *out, size_t len, size_t *used, const char *s)
{
	int n = snprintf(out + *used, len - *used, "%s", s);

	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

size_t al_log_split(const char *msg, struct al_log_pair *pairs, size_t max,
		    const char **ret_event)
{
	const char *p = msg, *colon = strstr(msg, ": ");
	size_t n = 0;

	*ret_event = msg;
	if (!colon)
		return 0;
	while (p < colon && n < max) {
		const char *eq = p, *end;

		while (eq < colon && (*eq == '_' || (*eq >= 'a' && *eq <= 'z')))
			eq++;
		if (eq == p || eq >= colon || *eq != '=')
			return 0; /* not all words are pairs: plain text */
		end = memchr(eq, ' ', (size_t)(colon - eq));
		if (!end)
			end = colon;
		pairs[n].key = p;
		pairs[n].key_len = (size_t)(eq - p);
		pairs[n].val = eq + 1;
		pairs[n].val_len = (size_t)(end - eq - 1);
		n++;
		p = end < colon ? end + 1 : colon;
	}
	if (p != colon)
		return 0;
	*ret_event = colon + 2;
	return n;
}

static bool is_key(const struct al_log_pair *p, const char *k)
{
	return p->key_len == strlen(k) && !memcmp(p->key, k, p->key_len);
}

static void json_line(char *out, size_t len, const char *stamp,
		      const char *level, const char *msg)
{
	struct al_log_pair pairs[PAIRS_MAX];
	const char *event;
	size_t n = al_log_split(msg, pairs, PAIRS_MAX, &event), u = 0;
	bool fields = false;
	char pid[48];

	put_raw(out, len, &u, "{\"time\":");
	put_str(out, len, &u, stamp, strlen(stamp));
	put_raw(out, len, &u, ",\"level\":");
	put_str(out, len, &u, level, strlen(level));
	snprintf(pid, sizeof(pid), ",\"pid\":%d", (int)getpid());
	put_raw(out, len, &u, pid);
	for (size_t i = 0; i < n; i++)
		if (is_key(&pairs[i], "job") || is_key(&pairs[i], "worker")) {
			put_raw(out, len, &u, ",");
			put_str(out, len, &u, pairs[i].key, pairs[i].key_len);
			put_raw(out, len, &u, ":");
			put_str(out, len, &u, pairs[i].val, pairs[i].val_len);
		}
	put_raw(out, len, &u, ",\"event\":");
	put_str(out, len, &u, event, strlen(event));
	for (size_t i = 0; i < n; i++) {
		if (is_key(&pairs[i], "job") || is_key(&pairs[i], "worker"))
			continue;
		put_raw(out, len, &u, fields ? "," : ",\"fields\":{");
		fields = true;
		put_str(out, len, &u, pairs[i].key, pairs[i].key_len);
		put_raw(out, len, &u, ":");
		put_str(out, len, &u, pairs[i].val, pairs[i].val_len);
	}
	put_raw(out, len, &u, fields ? "}}" : "}");
}

void al_log(enum al_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char msg[LINE_MAX_], line[8 * LINE_MAX_], stamp[64], ts[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;

	if (level > al_log_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp, sizeof(stamp), "%s.%03dZ", ts,
		 (int)(tv.tv_usec / 1000) % 1000);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (al_log_format == AL_LOG_JSON)
		json_line(line, sizeof(line), stamp, names[level], msg);
	else
		snprintf(line, sizeof(line), "%s %s airlock[%d]: %s", stamp,
			 names[level], (int)getpid(), msg);
	/* one write per line so concurrent processes do not interleave */
	fprintf(stderr, "%s\n", line);
}
