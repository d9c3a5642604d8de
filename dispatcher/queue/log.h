/* log.h: one line per event on stderr, for the dispatcher and its workers.
 *
 * Text lines are `TIME LEVEL airlock[PID]: message`; messages name their
 * subject as leading `job=ID` / `worker=N` pairs before a ": ". JSON lines
 * (log.format = json) are one object each: time, level, pid, job, worker,
 * event and the other pairs as fields (log.c shows one). The level and
 * format are the globals the house style allows; main() sets them from the
 * config (log.level, log.format).
 */
#ifndef AL_LOG_H
#define AL_LOG_H

enum al_log_level {
	AL_LOG_ERROR = 0,
	AL_LOG_WARN,
	AL_LOG_INFO,
	AL_LOG_DEBUG,
};

enum al_log_format {
	AL_LOG_TEXT = 0, /* one human line */
	AL_LOG_JSON,	 /* one JSON object a line */
};

extern enum al_log_level al_log_level;
extern enum al_log_format al_log_format;

/* A `key=value` word of a message. */
struct al_log_pair {
	const char *key, *val; /* into the message, not terminated */
	size_t key_len, val_len;
};
/* Split msg's leading pairs (all words before the first ": ", each a
 * [a-z_]+=VALUE) into pairs[0..max); *ret_event gets the rest. A message
 * without such a prefix has no pairs and is all event. Returns the count. */
size_t al_log_split(const char *msg, struct al_log_pair *pairs, size_t max,
		    const char **ret_event);

void al_log(enum al_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define al_err(...)   al_log(AL_LOG_ERROR, __VA_ARGS__)
#define al_warn(...)  al_log(AL_LOG_WARN, __VA_ARGS__)
#define al_info(...)  al_log(AL_LOG_INFO, __VA_ARGS__)
#define al_debug(...) al_log(AL_LOG_DEBUG, __VA_ARGS__)

#endif
