/* readfile.h: read a whole file, capped (readfile.c). */
#ifndef AL_READFILE_H
#define AL_READFILE_H

#include <stddef.h>

/* Read a whole file (or stdin for "-"), at most `max` bytes, NUL-terminated
 * (*ret_len excludes the NUL). 0, -E2BIG over `max`, -ENOMEM, -EIO or the
 * open's -errno. */
int al_read_file(const char *path, size_t max, char **ret, size_t *ret_len);

#endif
