/* zipfiles.h: a zip archive of untrusted bytes (Judge0's additional_files)
 * into a job's `files`, through libzip, with every count and size capped
 * before anything is allocated for it.
 */
#ifndef AL_DOOR_ZIPFILES_H
#define AL_DOOR_ZIPFILES_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define AL_ZIP_ENTRIES_MAX 64 /* entries (directories too) */
#define AL_ZIP_BYTES_MAX                                                       \
	(10u << 20)	    /* uncompressed, all entries:                      \
			       Judge0's MAX_EXTRACT_SIZE */
#define AL_ZIP_NAME_MAX 255 /* bytes of an entry's name */

/* The zip data[0..len) as {path: content} (content a string when UTF-8,
 * else {"base64"}: al_door_blob_json) into *ret. Refused (-EINVAL, why
 * in err): not a zip, zip64, over the caps, an encrypted entry, a name
 * that is absolute, has a `..`, `.` or empty part, a backslash or NUL,
 * a symlink, a duplicate, an entry whose data does not match its size or
 * CRC. Directory entries are skipped (their paths are checked). */
int al_door_unzip(const uint8_t *data, size_t len, json_t **ret, char *err,
		  size_t errlen);

#endif
