/* log.h: one line per event on stderr, for the dispatcher and its workers.
 *
 * Lines are `TIME LEVEL airlock[PID]: message`; messages name their subject
 * as `job=ID` / `worker=N` pairs. The level is the one global the house
 * style allows; main() sets it from the config (log.level).
 */
#ifndef AL_LOG_H
#define AL_LOG_H

enum al_log_level {
	AL_LOG_ERROR = 0,
	AL_LOG_WARN,
	AL_LOG_INFO,
	AL_LOG_DEBUG,
};

extern enum al_log_level al_log_level;

void al_log(enum al_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define al_err(...)   al_log(AL_LOG_ERROR, __VA_ARGS__)
#define al_warn(...)  al_log(AL_LOG_WARN, __VA_ARGS__)
#define al_info(...)  al_log(AL_LOG_INFO, __VA_ARGS__)
#define al_debug(...) al_log(AL_LOG_DEBUG, __VA_ARGS__)

#endif
