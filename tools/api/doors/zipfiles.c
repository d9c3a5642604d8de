/* zipfiles.c: Judge0's additional_files, a zip of untrusted bytes, into a
 * job's files (zipfiles.h). libzip (Debian's libzip-dev) reads the archive;
 * this file only decides what it may read: the end record's entry count
 * is checked before libzip builds its directory, every declared size
 * before a byte is inflated, every read against its declared size.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zip.h>

#include "door.h"
#include "results.h"
#include "zipfiles.h"

#define EOCD_LEN     22u    /* the end of central directory record */
#define EOCD_COMMENT 65535u /* its comment, at most */

__attribute__((format(printf, 3, 4))) static int why(char *err, size_t errlen,
						     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* an entry's name, cut or not UTF-8, must not make the message
	 * one JSON cannot carry */
	if (!al_utf8_valid((const uint8_t *)err, strlen(err)))
		for (char *c = err; *c; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
	return -EINVAL;
}

static unsigned le16(const uint8_t *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

/* The entry count of the last end record in data, or -1 when there is
 * none. Read before libzip so that no directory of a larger archive is
 * ever built. */
static long eocd_entries(const uint8_t *data, size_t len)
{
	size_t lo, i;

	if (len < EOCD_LEN)
		return -1;
	lo = len - EOCD_LEN > EOCD_COMMENT ? len - EOCD_LEN - EOCD_COMMENT : 0;
	for (i = len - EOCD_LEN + 1; i-- > lo;)
		if (!memcmp(data + i, "PK\x05\x06", 4))
			return (long)le16(data + i + 10);
	return -1;
}

/* Is an entry's name one a job's file may have? */
static bool name_ok(const char *name, size_t n)
{
	if (!n || n > AL_ZIP_NAME_MAX || strchr(name, '\\'))
		return false;
	if (name[n - 1] == '/') /* a directory */
		n--;
	return n && al_relpath_valid(name, n);
}

/* Entry i's metadata checked: 1 a file (its size in *size), 0 a
 * directory, or -EINVAL. */
static int entry_check(zip_t *za, zip_uint64_t i, const char **ret_name,
		       zip_uint64_t *size, char *err, size_t errlen)
{
	zip_stat_t st;
	zip_uint8_t os;
	zip_uint32_t attr;
	const char *name;

	zip_stat_init(&st);
	if (zip_stat_index(za, i, 0, &st) < 0 || !(st.valid & ZIP_STAT_NAME) ||
	    !(st.valid & ZIP_STAT_SIZE))
		return why(err, errlen, "entry %llu: unreadable",
			   (unsigned long long)i);
	name = st.name;
	if (!name_ok(name, strlen(name)))
		return why(err, errlen,
			   "entry %llu: %.64s: not a relative path (no /, "
			   "no .., at most %d bytes)",
			   (unsigned long long)i, name, AL_ZIP_NAME_MAX);
	if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
	    st.encryption_method != ZIP_EM_NONE)
		return why(err, errlen, "%.64s: encrypted", name);
	if (zip_file_get_external_attributes(za, i, 0, &os, &attr) < 0)
		return why(err, errlen, "%.64s: unreadable", name);
	if (os == ZIP_OPSYS_UNIX && ((attr >> 16) & S_IFMT) == S_IFLNK)
		return why(err, errlen, "%.64s: a symlink", name);
	*ret_name = name;
	*size = st.size;
	return name[strlen(name) - 1] != '/';
}

/* Entry i's content, exactly size bytes (libzip checks its CRC when it
 * is read to the end), into files[name]. */
static int entry_read(zip_t *za, zip_uint64_t i, const char *name,
		      zip_uint64_t size, json_t *files, char *err,
		      size_t errlen)
{
	zip_file_t *f = zip_fopen_index(za, i, 0);
	uint8_t *buf = f ? malloc(size + 1) : NULL;
	zip_int64_t n = buf ? zip_fread(f, buf, size + 1) : -1;
	json_t *v = NULL;
	int r = 0;

	if (!f || !buf || n != (zip_int64_t)size)
		r = why(err, errlen,
			"%.64s: its data does not match its "
			"size or CRC",
			name);
	if (f && zip_fclose(f) != 0 && !r)
		r = why(err, errlen, "%.64s: a bad CRC", name);
	if (!r && (!(v = al_door_blob_json(buf, size)) ||
		   json_object_set_new(files, name, v) < 0))
		r = -ENOMEM;
	free(buf);
	return r;
}

/* Every entry: checked, all sizes summed, then read. */
static int entries(zip_t *za, json_t *files, char *err, size_t errlen)
{
	zip_int64_t n = zip_get_num_entries(za, 0);
	zip_uint64_t total = 0, size;
	const char *name;
	int r;

	if (n < 0 || n > AL_ZIP_ENTRIES_MAX)
		return why(err, errlen, "more than %d entries",
			   AL_ZIP_ENTRIES_MAX);
	for (zip_int64_t i = 0; i < n; i++) {
		if ((r = entry_check(za, (zip_uint64_t)i, &name, &size, err,
				     errlen)) < 0)
			return r;
		if (zip_name_locate(za, name, 0) != i)
			return why(err, errlen, "%.64s: an entry's name twice",
				   name);
		if (size > AL_ZIP_BYTES_MAX ||
		    (total += size) > AL_ZIP_BYTES_MAX)
			return why(err, errlen, "over %u bytes uncompressed",
				   AL_ZIP_BYTES_MAX);
	}
	for (zip_int64_t i = 0; i < n; i++) {
		if ((r = entry_check(za, (zip_uint64_t)i, &name, &size, err,
				     errlen)) <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		if ((r = entry_read(za, (zip_uint64_t)i, name, size, files, err,
				    errlen)) < 0)
			return r;
	}
	return 0;
}

int al_door_unzip(const uint8_t *data, size_t len, json_t **ret, char *err,
		  size_t errlen)
{
	long declared = eocd_entries(data, len);
	zip_error_t ze;
	zip_source_t *src;
	zip_t *za;
	json_t *files;
	int r;

	*ret = NULL;
	if (declared < 0)
		return why(err, errlen, "not a zip archive");
	if (declared == 0xffff)
		return why(err, errlen, "a zip64 archive: not taken");
	if (declared > AL_ZIP_ENTRIES_MAX)
		return why(err, errlen, "more than %d entries",
			   AL_ZIP_ENTRIES_MAX);
	zip_error_init(&ze);
	if (!(src = zip_source_buffer_create(data, len, 0, &ze))) {
		zip_error_fini(&ze);
		return -ENOMEM;
	}
	za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
	if (!za) {
		/* libzip finds a name given twice as it reads the directory */
		r = zip_error_code_zip(&ze) == ZIP_ER_EXISTS
			? why(err, errlen, "an entry's name twice")
			: why(err, errlen,
			      "not a zip archive libzip reads (%s)",
			      zip_error_strerror(&ze));
		zip_error_fini(&ze);
		zip_source_free(src);
		return r;
	}
	zip_error_fini(&ze);
	if (!(files = json_object())) {
		r = -ENOMEM;
		goto out;
	}
	r = entries(za, files, err, errlen);
	if (r < 0)
		json_decref(files);
	else
		*ret = files;
out:
	zip_discard(za); /* frees src */
	return r;
}
