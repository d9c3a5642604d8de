/* log.c: the dispatcher's log lines (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum al_log_level al_log_level = AL_LOG_INFO;

void al_log(enum al_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[1024], stamp[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int n;

	if (level > al_log_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ %s airlock[%d]: ", stamp,
		     (long)tv.tv_usec / 1000, names[level], (int)getpid());
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one write per line so concurrent processes do not interleave */
	fprintf(stderr, "%s\n", line);
}
