/* mirror.c: the mirror directory (mirror.h): read a file from it the
 * careful way, add a package file to it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "allow.h"
#include "mirror.h"

int gw_mirror_read(int dirfd, const char *name, size_t max, uint8_t **ret,
		   size_t *ret_len, int64_t *ret_mtime)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t len = 0;
	int fd, rc = 0;

	fd =
	    openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		rc = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO; /* shrank under us */
			goto out;
		}
		len += (size_t)r;
	}
	buf[len] = '\0';
	*ret = buf;
	buf = NULL;
	*ret_len = len;
	if (ret_mtime)
		*ret_mtime = st.st_mtim.tv_sec;
out:
	free(buf);
	close(fd);
	return rc;
}

int gw_mirror_meta_name(enum gw_eco eco, const char *file, char *out,
			size_t size)
{
	int n = snprintf(out, size, "%s%s", file,
			 eco == GW_PYTHON ? ".metadata" : ".json");

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Write LEN bytes to DIRFD/NAME through a temporary name, mode 0644. */
static int write_file(int dirfd, const char *name, const void *data, size_t len)
{
	char tmp[GW_FILE_MAX + 32];
	size_t off = 0;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), ".tmp-%d-%s", (int)getpid(), name);
	fd =
	    openat(dirfd, tmp,
		   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (rc == 0 && fchmod(fd, 0644) < 0)
		rc = -errno;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

static int open_dir(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int gw_mirror_add(const char *mirror, const char *path, struct gw_pkg *ret,
		  char *err, size_t errlen)
{
	struct gw_pkg pkg = {0};
	uint8_t *data = NULL, *old = NULL;
	size_t len = 0, old_len = 0;
	char *copy = NULL, meta[GW_FILE_MAX + 16];
	const char *base;
	int root = -1, eco = -1, rc;

	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	base = basename(copy);
	rc = gw_mirror_read(AT_FDCWD, path, GW_PKG_FILE_MAX, &data, &len, NULL);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	rc = gw_pkg_parse(base, data, len, &pkg);
	if (rc < 0) {
		snprintf(
		    err, errlen, "%s: %s", path,
		    rc == -EINVAL ? "not a package file name (NAME-VER-*.whl, "
				    "NAME-VER.tar.gz, *.tgz)"
		    : rc == -EBADMSG ? "not a well-formed package, or its "
				       "metadata disagrees with its file name"
				     : strerror(-rc));
		goto out;
	}
	rc = root = open_dir(AT_FDCWD, mirror);
	if (rc >= 0)
		rc = eco = open_dir(root, gw_eco_name(gw_kind_eco(pkg.kind)));
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", mirror, strerror(-rc));
		goto out;
	}
	/* the same bytes again is fine; different bytes under a pinned name
	 * would silently change what a pin means */
	if (gw_mirror_read(eco, base, GW_PKG_FILE_MAX, &old, &old_len, NULL) ==
		0 &&
	    (old_len != len || memcmp(old, data, len))) {
		snprintf(err, errlen,
			 "%s: the mirror has a different file of "
			 "that name",
			 base);
		rc = -EEXIST;
		goto out;
	}
	gw_mirror_meta_name(gw_kind_eco(pkg.kind), base, meta, sizeof(meta));
	rc = write_file(eco, meta, pkg.meta, pkg.meta_len);
	if (rc == 0)
		rc = write_file(eco, base, data, len);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", mirror, strerror(-rc));
		goto out;
	}
	*ret = pkg;
	pkg = (struct gw_pkg){0};
out:
	gw_pkg_release(&pkg);
	if (eco >= 0)
		close(eco);
	if (root >= 0)
		close(root);
	free(old);
	free(data);
	free(copy);
	return rc;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a > b && !strcmp(s + a - b, suffix);
}

/* Name and version from a side file's bytes. */
static int side_nv(enum gw_eco eco, const char *meta, size_t len, char *name,
		   char *version)
{
	if (eco == GW_PYTHON) {
		gw_meta_header(meta, "Name", name, GW_NAME_MAX + 1);
		gw_meta_header(meta, "Version", version, GW_VERSION_MAX + 1);
	} else {
		json_t *doc = json_loadb(meta, len, 0, NULL);
		const char *n = json_string_value(json_object_get(doc, "name"));
		const char *v =
		    json_string_value(json_object_get(doc, "version"));

		snprintf(name, GW_NAME_MAX + 1, "%s", n ? n : "");
		snprintf(version, GW_VERSION_MAX + 1, "%s", v ? v : "");
		json_decref(doc);
	}
	return name[0] && version[0] ? 0 : -EBADMSG;
}

int gw_mirror_find(const char *mirror, enum gw_eco eco, const char *key,
		   const char *version, struct gw_found *out)
{
	char path[4096], name[GW_NAME_MAX + 1], ver[GW_VERSION_MAX + 1];
	char nkey[GW_NAME_MAX + 1], side[GW_FILE_MAX + 16];
	struct dirent *de;
	DIR *d;
	int dfd, n = 0;

	snprintf(path, sizeof(path), "%s/%s", mirror, gw_eco_name(eco));
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	dfd = dirfd(d);
	while ((de = readdir(d)) && n < GW_FOUND_MAX) {
		uint8_t *meta = NULL, *data = NULL;
		size_t mlen, dlen;
		struct gw_pkg pkg;

		if (!gw_file_name_valid(de->d_name) ||
		    has_suffix(de->d_name, ".metadata") ||
		    has_suffix(de->d_name, ".json"))
			continue;
		gw_mirror_meta_name(eco, de->d_name, side, sizeof(side));
		if (gw_mirror_read(dfd, side, GW_META_MAX, &meta, &mlen, NULL) <
		    0)
			continue;
		if (side_nv(eco, (char *)meta, mlen, name, ver) < 0 ||
		    (eco == GW_PYTHON ? gw_pep503_normalize(name, nkey) : 0) <
			0 ||
		    strcmp(eco == GW_PYTHON ? nkey : name, key) ||
		    strcmp(ver, version) ||
		    gw_mirror_read(dfd, de->d_name, GW_PKG_FILE_MAX, &data,
				   &dlen, NULL) < 0) {
			free(meta);
			continue;
		}
		snprintf(out[n].file, sizeof(out[n].file), "%s", de->d_name);
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		gw_sha256_hex(data, dlen, out[n].sha256);
		/* read again by today's rules: a file added before them
		 * (an npm tarball npm reads otherwise) is not approved */
		out[n].malformed =
		    gw_pkg_parse(de->d_name, data, dlen, &pkg) < 0;
		if (!out[n].malformed)
			gw_pkg_release(&pkg);
		out[n].meta = (char *)meta;
		free(data);
		n++;
	}
	closedir(d);
	return n;
}

/* Could FILE be one of KEY's (a cheap test before its side file is read):
 * python's file names start with the name, PEP 503 normalised, and a
 * dash; npm's with the name (unscoped) and a dash. */
static bool maybe_of(enum gw_eco eco, const char *file, const char *key)
{
	size_t k = strlen(key), i = 0;
	bool sep = false;

	if (eco == GW_NPMJS)
		return strchr(key, '/') ||
		       (!strncmp(file, key, k) && file[k] == '-');
	for (const char *p = file; *p && i <= k; p++) {
		char c = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);

		if (c == '-' || c == '_' || c == '.') {
			sep = true;
			continue;
		}
		if (sep) {
			if (i == k)
				return true; /* KEY then a separator */
			if (key[i++] != '-')
				return false;
			sep = false;
		}
		if (i == k || key[i++] != c)
			return false;
	}
	return false;
}

size_t gw_mirror_unpinned(const struct gw_allow *al, int dirfd, enum gw_eco eco,
			  const char *key, char *out, size_t size)
{
	char name[GW_NAME_MAX + 1], ver[GW_VERSION_MAX + 1];
	char nkey[GW_NAME_MAX + 1], side[GW_FILE_MAX + 16];
	size_t n = 0, len = 0, seen = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	out[0] = '\0';
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) && seen++ < GW_UNPINNED_SCAN_MAX) {
		uint8_t *meta = NULL;
		size_t mlen;
		int w;

		if (!gw_file_name_valid(de->d_name) ||
		    has_suffix(de->d_name, ".metadata") ||
		    has_suffix(de->d_name, ".json") ||
		    !maybe_of(eco, de->d_name, key))
			continue;
		gw_mirror_meta_name(eco, de->d_name, side, sizeof(side));
		if (gw_mirror_read(dirfd, side, GW_META_MAX, &meta, &mlen,
				   NULL) < 0)
			continue;
		w = side_nv(eco, (char *)meta, mlen, name, ver);
		free(meta);
		if (w < 0 ||
		    (eco == GW_PYTHON
			 ? gw_pep503_normalize(name, nkey)
			 : snprintf(nkey, sizeof(nkey), "%s", name)) < 0 ||
		    strcmp(nkey, key) || gw_allow_has(al, eco, key, ver))
			continue;
		/* each version once; what does not fit is counted only */
		{
			char *hit = strstr(out, ver);
			size_t vl = strlen(ver);

			while (hit && !((hit == out || hit[-1] == ' ') &&
					(hit[vl] == '\0' || hit[vl] == ' ')))
				hit = strstr(hit + 1, ver);
			if (hit)
				continue;
		}
		n++;
		w = snprintf(out + len, size - len, "%s%s", len ? " " : "",
			     ver);
		if (w < 0 || (size_t)w >= size - len)
			out[len] = '\0';
		else
			len += (size_t)w;
	}
	closedir(d);
	return n;
}
