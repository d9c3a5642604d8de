/* pages.c: the simple API pages and npm documents (pages.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "mirror.h"
#include "pages.h"

#define BODY_MAX (64u << 20)

int gw_buf_add(struct gw_buf *b, const char *s, size_t n)
{
	if (n > BODY_MAX - b->len)
		return -EFBIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
{
	char small[1024], *big = NULL;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return gw_buf_add(b, small, (size_t)n);
	big = malloc((size_t)n + 1);
	if (!big)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = gw_buf_add(b, big, (size_t)n);
	free(big);
	return rc;
}

void gw_buf_release(struct gw_buf *b)
{
	free(b->data);
	*b = (struct gw_buf){0};
}

static bool is_sdist(const char *file)
{
	size_t n = strlen(file);
	return n > 7 && !strcmp(file + n - 7, ".tar.gz");
}

const char *gw_pin_excluded(const struct gw_allow *a, const struct gw_pin *p,
			    bool install_script)
{
	if (p->eco == GW_PYTHON && a->wheels_only && is_sdist(p->file))
		return "an sdist, and only wheels are allowed (an sdist runs "
		       "its "
		       "build at install)";
	if (p->eco == GW_NPMJS && a->npm_scripts_denied && install_script &&
	    !gw_allow_scripts(a, p->key, p->version))
		return "an npm package with an install script, and install "
		       "scripts are not allowed";
	return NULL;
}

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

bool gw_too_new(const struct gw_allow *a, int64_t mtime, int64_t now, char *why,
		size_t size)
{
	char when[32];
	time_t t = (time_t)mtime;
	struct tm tm;

	if (!a->min_age_days || now - mtime >= (int64_t)a->min_age_days * 86400)
		return false;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(why, size,
		 "too_new: released %s, younger than %u days (option "
		 "min-age-days=%u)",
		 when, a->min_age_days, a->min_age_days);
	return true;
}

/* HTML-escape s (& < > ") */
static int add_escaped(struct gw_buf *b, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		switch (*s) {
		case '&':
			rc = gw_buf_add(b, "&amp;", 5);
			break;
		case '<':
			rc = gw_buf_add(b, "&lt;", 4);
			break;
		case '>':
			rc = gw_buf_add(b, "&gt;", 4);
			break;
		case '"':
			rc = gw_buf_add(b, "&quot;", 6);
			break;
		default:
			rc = gw_buf_add(b, s, 1);
		}
	}
	return rc;
}

static int dump_json(json_t *doc, struct gw_buf *out)
{
	char *text;
	int rc;

	if (!doc)
		return -ENOMEM;
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	rc = gw_buf_add(out, text, strlen(text));
	free(text);
	return rc;
}

int gw_page_py_index(const struct gw_allow *a, enum gw_format fmt,
		     struct gw_buf *out)
{
	json_t *projects = json_array();
	int rc = 0;

	if (fmt == GW_FMT_HTML)
		rc = gw_buf_printf(
		    out, "<!DOCTYPE html>\n<html><head><meta name=\""
			 "pypi:repository-version\" content=\"1.1\">"
			 "<title>Simple index</title></head><body>\n");
	for (size_t i = 0; i < a->n && rc == 0; i++) {
		const struct gw_pin *p = &a->pins[i];
		bool seen = false;

		if (p->eco != GW_PYTHON)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = a->pins[j].eco == GW_PYTHON &&
			       !strcmp(a->pins[j].key, p->key);
		if (seen)
			continue;
		if (fmt == GW_FMT_HTML)
			rc = gw_buf_printf(out, "<a href=\"%s/\">%s</a><br/>\n",
					   p->key, p->key);
		else
			json_array_append_new(
			    projects, json_pack("{s:s}", "name", p->key));
	}
	if (rc == 0 && fmt == GW_FMT_HTML) {
		json_decref(projects);
		return gw_buf_printf(out, "</body></html>\n");
	}
	if (rc < 0) {
		json_decref(projects);
		return rc;
	}
	return dump_json(json_pack("{s:{s:s},s:o}", "meta", "api-version",
				   "1.1", "projects", projects),
			 out);
}

/* One listed file's facts from the mirror. */
struct py_file {
	const struct gw_pin *pin;
	uint64_t size;
	char upload[32]; /* ISO 8601 of the mirror file's mtime */
	int64_t mtime;	 /* the same, seconds */
	char meta_sha[GW_SHA256_HEX + 1]; /* sha256 of FILE.metadata */
	char requires_python[GW_VERSION_MAX * 2 + 1];
};

static int py_file_facts(int pydir, const struct gw_pin *p, struct py_file *f)
{
	char meta[GW_FILE_MAX + 16];
	uint8_t *m = NULL;
	size_t mlen;
	struct stat st;
	struct tm tm;

	if (fstatat(pydir, p->file, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return -ENOENT;
	gw_mirror_meta_name(GW_PYTHON, p->file, meta, sizeof(meta));
	if (gw_mirror_read(pydir, meta, GW_META_MAX, &m, &mlen, NULL) < 0)
		return -ENOENT;
	f->pin = p;
	f->size = (uint64_t)st.st_size;
	f->mtime = (int64_t)st.st_mtim.tv_sec;
	gmtime_r(&st.st_mtim.tv_sec, &tm);
	strftime(f->upload, sizeof(f->upload), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gw_sha256_hex(m, mlen, f->meta_sha);
	gw_meta_header((char *)m, "Requires-Python", f->requires_python,
		       sizeof(f->requires_python));
	free(m);
	return 0;
}

static int py_html_file(struct gw_buf *out, const struct py_file *f)
{
	int rc = gw_buf_printf(out, "<a href=\"../../files/%s#sha256=%s\"",
			       f->pin->file, f->pin->sha256);

	if (rc == 0 && f->requires_python[0]) {
		rc = gw_buf_printf(out, " data-requires-python=\"");
		if (rc == 0)
			rc = add_escaped(out, f->requires_python);
		if (rc == 0)
			rc = gw_buf_add(out, "\"", 1);
	}
	if (rc == 0)
		rc = gw_buf_printf(
		    out,
		    " data-dist-info-metadata=\"sha256=%s\""
		    " data-core-metadata=\"sha256=%s\">%s</a><br/>\n",
		    f->meta_sha, f->meta_sha, f->pin->file);
	return rc;
}

static json_t *py_json_file(const struct py_file *f)
{
	/* PEP 714's name only: pip 23.0 (Debian 12's) dies on a
	 * dist-info-metadata object in JSON (TypeError: unhashable type:
	 * 'dict'), the bug PEP 714 renamed the key for. The HTML carries
	 * both attribute names: strings, which every pip reads. */
	json_t *o = json_pack("{s:s,s:s,s:{s:s},s:b,s:I,s:s,s:{s:s}}",
			      "filename", f->pin->file, "url", "", "hashes",
			      "sha256", f->pin->sha256, "yanked", 0, "size",
			      (json_int_t)f->size, "upload-time", f->upload,
			      "core-metadata", "sha256", f->meta_sha);
	char url[GW_FILE_MAX + 16];

	if (!o)
		return NULL;
	snprintf(url, sizeof(url), "../../files/%s", f->pin->file);
	json_object_set_new(o, "url", json_string(url));
	if (f->requires_python[0])
		json_object_set_new(o, "requires-python",
				    json_string(f->requires_python));
	return o;
}

int gw_page_py_project(const struct gw_allow *a, int pydir, const char *key,
		       enum gw_format fmt, struct gw_buf *out,
		       size_t *ret_files)
{
	json_t *files = json_array(), *versions = json_array();
	size_t n = 0;
	int rc = 0;

	if (fmt == GW_FMT_HTML)
		rc = gw_buf_printf(out,
				   "<!DOCTYPE html>\n<html><head><meta name=\""
				   "pypi:repository-version\" content=\"1.1\">"
				   "<title>Links for %s</title></head><body>\n"
				   "<h1>Links for %s</h1>\n",
				   key, key);
	for (size_t i = 0; i < a->n && rc == 0; i++) {
		const struct gw_pin *p = &a->pins[i];
		struct py_file f = {0};
		bool seen = false;
		char why[128];

		if (p->eco != GW_PYTHON || strcmp(p->key, key) ||
		    gw_pin_excluded(a, p, false) ||
		    py_file_facts(pydir, p, &f) < 0 ||
		    gw_too_new(a, f.mtime, wall_now(), why, sizeof(why)))
			continue;
		n++;
		if (fmt == GW_FMT_HTML) {
			rc = py_html_file(out, &f);
			continue;
		}
		json_array_append_new(files, py_json_file(&f));
		for (size_t j = 0; j < json_array_size(versions) && !seen; j++)
			seen = !strcmp(
			    json_string_value(json_array_get(versions, j)),
			    p->version);
		if (!seen)
			json_array_append_new(versions,
					      json_string(p->version));
	}
	*ret_files = n;
	if (rc < 0 || fmt == GW_FMT_HTML) {
		json_decref(files);
		json_decref(versions);
		return rc < 0 ? rc : gw_buf_printf(out, "</body></html>\n");
	}
	return dump_json(json_pack("{s:{s:s},s:s,s:o,s:o}", "meta",
				   "api-version", "1.1", "name", key,
				   "versions", versions, "files", files),
			 out);
}

/* ---- npm ---- */

/* Compare dot-separated numeric parts, then a prerelease sorts first. */
int gw_semver_cmp(const char *a, const char *b)
{
	const char *pa = a, *pb = b;

	for (int part = 0; part < 3; part++) {
		unsigned long x = strtoul(pa, (char **)&pa, 10);
		unsigned long y = strtoul(pb, (char **)&pb, 10);

		if (x != y)
			return x < y ? -1 : 1;
		if (*pa == '.')
			pa++;
		if (*pb == '.')
			pb++;
	}
	if (*pa == '-' && *pb != '-')
		return -1;
	if (*pb == '-' && *pa != '-')
		return 1;
	return strcmp(pa, pb);
}

/* The fields of package.json the abbreviated document keeps. */
static const char *const abbreviated_keys[] = {
    "name",
    "version",
    "dependencies",
    "optionalDependencies",
    "devDependencies",
    "bundleDependencies",
    "peerDependencies",
    "peerDependenciesMeta",
    "bin",
    "directories",
    "engines",
    "os",
    "cpu",
    "deprecated",
    "funding",
    "license",
    "_hasShrinkwrap",
    NULL,
};

/* One version's manifest: package.json plus _id and dist; NULL to skip
 * (not in the mirror, bytes not matching the pin, excluded). */
static json_t *npm_version(const struct gw_allow *a, int npmdir,
			   const struct gw_pin *p, const char *host,
			   bool abbreviated, char *time, size_t time_size)
{
	char side[GW_FILE_MAX + 16], sha[GW_SHA256_HEX + 1],
	    sri[GW_SHA512_B64 + 1];
	char url[GW_NAME_MAX + GW_FILE_MAX + 300],
	    id[GW_NAME_MAX + GW_VERSION_MAX + 2];
	uint8_t *tgz = NULL, *pj = NULL;
	size_t tlen, plen;
	int64_t mtime = 0;
	char why[128];
	json_t *doc = NULL, *v = NULL, *scripts;
	bool script = false;
	struct tm tm;
	time_t t;

	gw_mirror_meta_name(GW_NPMJS, p->file, side, sizeof(side));
	if (gw_mirror_read(npmdir, p->file, GW_PKG_FILE_MAX, &tgz, &tlen,
			   &mtime) < 0 ||
	    gw_mirror_read(npmdir, side, GW_META_MAX, &pj, &plen, NULL) < 0)
		goto out;
	gw_sha256_hex(tgz, tlen, sha);
	if (strcmp(sha, p->sha256))
		goto out; /* the tarball route says so, loudly */
	if (gw_too_new(a, mtime, wall_now(), why, sizeof(why)))
		goto out;
	gw_sha512_b64(tgz, tlen, sri);
	doc = json_loadb((char *)pj, plen, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(doc))
		goto out;
	scripts = json_object_get(doc, "scripts");
	script = json_object_get(scripts, "preinstall") ||
		 json_object_get(scripts, "install") ||
		 json_object_get(scripts, "postinstall");
	if (gw_pin_excluded(a, p, script))
		goto out;
	if (abbreviated) {
		v = json_object();
		for (size_t i = 0; abbreviated_keys[i]; i++) {
			json_t *x = json_object_get(doc, abbreviated_keys[i]);
			if (x)
				json_object_set(v, abbreviated_keys[i], x);
		}
		if (script)
			json_object_set_new(v, "hasInstallScript", json_true());
	} else {
		v = json_incref(doc);
	}
	/* the pin decides name and version, whatever package.json says */
	json_object_set_new(v, "name", json_string(p->name));
	json_object_set_new(v, "version", json_string(p->version));
	snprintf(id, sizeof(id), "%s@%s", p->name, p->version);
	json_object_set_new(v, "_id", json_string(id));
	snprintf(url, sizeof(url), "http://%s/%s/-/%s", host, p->name, p->file);
	json_object_set_new(v, "dist",
			    json_pack("{s:s,s:s+}", "tarball", url, "integrity",
				      "sha512-", sri));
	t = (time_t)mtime;
	gmtime_r(&t, &tm);
	strftime(time, time_size, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
out:
	json_decref(doc);
	free(tgz);
	free(pj);
	return v;
}

int gw_page_npm(const struct gw_allow *a, int npmdir, const char *name,
		const char *host, bool abbreviated, struct gw_buf *out,
		size_t *ret_versions)
{
	json_t *versions = json_object(), *times = json_object(), *doc;
	const char *latest = NULL;
	char modified[40] = "";
	size_t n = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct gw_pin *p = &a->pins[i];
		char time[40];
		json_t *v;

		if (p->eco != GW_NPMJS || strcmp(p->key, name) ||
		    json_object_get(versions, p->version))
			continue;
		v = npm_version(a, npmdir, p, host, abbreviated, time,
				sizeof(time));
		if (!v)
			continue;
		json_object_set_new(versions, p->version, v);
		json_object_set_new(times, p->version, json_string(time));
		if (strcmp(time, modified) > 0)
			snprintf(modified, sizeof(modified), "%s", time);
		if (!latest || gw_semver_cmp(p->version, latest) > 0)
			latest = p->version;
		n++;
	}
	*ret_versions = n;
	if (!modified[0])
		snprintf(modified, sizeof(modified),
			 "1970-01-01T00:00:00.000Z");
	json_object_set_new(times, "modified", json_string(modified));
	json_object_set_new(times, "created", json_string(modified));
	doc = json_pack("{s:s,s:s,s:o}", "name", name, "modified", modified,
			"versions", versions);
	if (doc && latest)
		json_object_set_new(doc, "dist-tags",
				    json_pack("{s:s}", "latest", latest));
	else if (doc)
		json_object_set_new(doc, "dist-tags", json_object());
	if (doc && !abbreviated)
		json_object_set_new(doc, "time", times);
	else
		json_decref(times);
	return dump_json(doc, out);
}
