/* cmd_packages.c: `airlock packages`, the package gateway's mirror,
 * allowlist and audit (docs/packages.md).
 *
 * The packages dir (--dir, else $AIRLOCK_PACKAGES_DIR, else
 * STATE/packages) holds mirror/ (mirror.h), packages.allow (the pins,
 * configs/packages.allow documents the format) and the audit log. The
 * subcommands are rows of a table; each reads or writes those files only,
 * never a registry.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <time.h>

#include <curl/curl.h>

#include "allow.h"
#include "audit.h"
#include "cli.h"
#include "mirror.h"
#include "pkgfetch.h"
#include "upstream.h"

struct packages_opts {
	const char *dir;    /* --dir */
	bool pin;	    /* --pin: add also pins */
	const char *job;    /* log --job ID */
	bool denied;	    /* log --denied */
	bool json;	    /* log/pending --json */
	bool npm;	    /* approve/deny/fetch: the npm name, not python's */
	bool allow_scripts; /* approve: npm, its install script allowed */
	const char *upstream; /* fetch --upstream URL */
	size_t max_bytes;     /* fetch --max-bytes: a file's cap */
};

static const struct al_opt opts[] = {
    {"dir", 'd', AL_OPT_ARG | AL_OPT_SHORT},
    {"pin", 'p', AL_OPT_SHORT},
    {"job", 'J', AL_OPT_ARG},
    {"denied", 'D', 0},
    {"json", 'j', AL_OPT_SHORT},
    {"npm", 'n', AL_OPT_SHORT},
    {"allow-scripts", 'S', 0},
    {"upstream", 'U', AL_OPT_ARG},
    {"max-bytes", 'M', AL_OPT_ARG},
    {NULL, 0, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct packages_opts *o = cli->opts;

	switch (c) {
	case 'd':
		o->dir = arg;
		break;
	case 'p':
		o->pin = true;
		break;
	case 'J':
		o->job = arg;
		break;
	case 'D':
		o->denied = true;
		break;
	case 'j':
		o->json = true;
		break;
	case 'n':
		o->npm = true;
		break;
	case 'S':
		o->allow_scripts = o->npm = true;
		break;
	case 'U':
		o->upstream = arg;
		break;
	case 'M': {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(arg, &end, 10);
		if (errno || *end || v == 0 || v > GW_PKG_FILE_MAX)
			return al_cli_usage_error(cli, "--max-bytes: 1..%u",
						  GW_PKG_FILE_MAX);
		o->max_bytes = (size_t)v;
		break;
	}
	}
	return 0;
}

/* The packages dir into out, created (0755: the gateway's uid reads the
 * mirror). */
static int packages_dir(struct al_cli *cli, char *out, size_t size)
{
	const struct packages_opts *o = cli->opts;
	const char *env = getenv("AIRLOCK_PACKAGES_DIR");
	char state[PATH_MAX];
	int r;

	if (o->dir)
		r = snprintf(out, size, "%s", o->dir);
	else if (env && *env)
		r = snprintf(out, size, "%s", env);
	else {
		r = al_cli_load(cli);
		if (r < 0)
			return r;
		r = al_config_state_dir(&cli->cfg, state, sizeof(state));
		if (r < 0) {
			al_cli_error(cli, "no state dir: %s", strerror(-r));
			return r;
		}
		r = snprintf(out, size, "%s/packages", state);
	}
	if (r < 0 || (size_t)r >= size)
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		al_cli_error(cli, "%s: %s", out, strerror(-r));
		return r;
	}
	return 0;
}

/* A new allowlist starts safe: wheels only, no npm install scripts. */
static const char allow_header[] =
    "# packages.allow: the package gateway's pins (format and options:\n"
    "# configs/packages.allow, docs/packages.md). Written by `airlock\n"
    "# packages add --pin` and `approve`; people may edit it.\n"
    "option python.wheels-only\n"
    "option npm.no-install-scripts\n";

/* Append one pin line to the allowlist (O_APPEND: one write a line). */
static int append_pin(const char *allow, const struct gw_pin *p)
{
	char line[GW_ALLOW_LINE_MAX + 2];
	int fd, n, rc = 0;

	n = gw_allow_format(p, line, sizeof(line));
	if (n < 0)
		return n;
	fd = open(allow,
		  O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC |
		      O_NOFOLLOW,
		  0644);
	if (fd >= 0 && write(fd, allow_header, sizeof(allow_header) - 1) !=
			   (ssize_t)sizeof(allow_header) - 1)
		rc = -EIO;
	if (fd < 0 && errno == EEXIST)
		fd = open(allow, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (rc == 0 && write(fd, line, (size_t)n) != n)
		rc = -EIO;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* Add the package file at PATH to the mirror and, with pin, pin it
 * unless it is already. When time_s > 0 the mirror file's mtime becomes
 * it (the upstream's upload time: what `upload-time`, npm's `time` and
 * min-age-days read). AL_EXIT_OK, or an exit code with the error said. */
static int add_path(struct al_cli *cli, const char *mirror, const char *allow,
		    const struct gw_allow *a, const char *path, bool pin_it,
		    int64_t time_s)
{
	struct gw_pkg pkg;
	struct gw_pin pin = {0};
	const struct gw_pin *old;
	const char *base = strrchr(path, '/');
	char err[512], file[PATH_MAX];
	int rc = AL_EXIT_OK;

	base = base ? base + 1 : path;
	if (gw_mirror_add(mirror, path, &pkg, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_FAIL;
	}
	if (time_s > 0) {
		struct timespec ts[2] = {{.tv_sec = time_s},
					 {.tv_sec = time_s}};

		snprintf(file, sizeof(file), "%s/%s/%s", mirror,
			 gw_eco_name(gw_kind_eco(pkg.kind)), base);
		if (utimensat(AT_FDCWD, file, ts, AT_SYMLINK_NOFOLLOW) < 0)
			al_cli_error(cli, "%s: cannot set its time: %s", file,
				     strerror(errno));
	}
	printf("%s %s %s %s sha256=%s%s\n", gw_kind_name(pkg.kind), pkg.name,
	       pkg.version, base, pkg.sha256,
	       pkg.install_script ? " install-script" : "");
	pin.eco = gw_kind_eco(pkg.kind);
	old = gw_allow_file(a, pin.eco, base);
	if (pin_it && old && strcmp(old->sha256, pkg.sha256)) {
		al_cli_error(cli,
			     "%s: pinned with another sha256 (%s); not changed",
			     base, old->sha256);
		rc = AL_EXIT_FAIL;
	} else if (pin_it && !old) {
		strcpy(pin.name, pkg.name);
		strcpy(pin.version, pkg.version);
		strcpy(pin.file, base);
		strcpy(pin.sha256, pkg.sha256);
		if (append_pin(allow, &pin) < 0) {
			al_cli_error(cli, "%s: cannot append", allow);
			rc = AL_EXIT_USAGE;
		}
	}
	gw_pkg_release(&pkg);
	return rc;
}

static int cmd_add(struct al_cli *cli, const char *dir, int argc, char **argv)
{
	const struct packages_opts *o = cli->opts;
	char mirror[PATH_MAX], allow[PATH_MAX], err[512];
	struct gw_allow a = {0};
	int rc = AL_EXIT_OK;

	if (argc < 1) {
		al_cli_error(cli, "add: name one or more package files");
		return AL_EXIT_USAGE;
	}
	snprintf(mirror, sizeof(mirror), "%s/mirror", dir);
	snprintf(allow, sizeof(allow), "%s/packages.allow", dir);
	if (o->pin && gw_allow_load(allow, true, &a, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		int r = add_path(cli, mirror, allow, &a, argv[i], o->pin, 0);

		if (r > rc)
			rc = r;
	}
	gw_allow_release(&a);
	return rc;
}

/* ---- the audit log, pending, approve, deny ---- */

#define PENDING_MAX 4096

/* Call fn on every record of DIR/audit.jsonl, oldest first; lines over
 * GW_AUDIT_LINE_MAX or not records are skipped. */
static int each_record(const char *dir,
		       void (*fn)(const struct gw_audit *r, const char *line,
				  void *arg),
		       void *arg)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct gw_audit r;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (gw_audit_parse(line, (size_t)n, &r) == 0)
			fn(&r, line, arg);
	}
	free(line);
	fclose(f);
	return 0;
}

/* A record field as text for a terminal: printable ASCII and UTF-8 a
 * terminal shows as it is (al_cli_utf8_printable) pass; controls, tabs
 * (the column separator), bidirectional controls, invalid UTF-8 and '\\'
 * are escaped as \\xNN. The records are written by the gateway, whose
 * uid is assumed compromised, from what clients sent. */
static void put_field(const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s), u;

	if (!n)
		fputc('-', stdout);
	for (size_t i = 0; i < n; i++) {
		if (p[i] > 0x20 && p[i] < 0x7f && p[i] != '\\') {
			fputc(p[i], stdout);
		} else if (p[i] == ' ') {
			fputc(' ', stdout);
		} else if (p[i] >= 0x80 &&
			   (u = al_cli_utf8_printable(p + i, n - i))) {
			fwrite(p + i, 1, u, stdout);
			i += u - 1;
		} else {
			printf("\\x%02x", p[i]);
		}
	}
}

/* Fields separated by tabs, a newline after the last. */
static void put_fields(const char *const *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		put_field(f[i]);
		fputc(i + 1 < n ? '\t' : '\n', stdout);
	}
}

/* The record as one JSON line, every non-ASCII character escaped. */
static void put_json(const struct gw_audit *r)
{
	struct gw_buf b = {0};

	if (gw_audit_format(r, &b) == 0)
		fwrite(b.data, 1, b.len, stdout);
	gw_buf_release(&b);
}

struct log_ctx {
	const struct packages_opts *o;
	size_t shown;
};

static void log_one(const struct gw_audit *r, const char *line, void *arg)
{
	struct log_ctx *c = arg;
	char when[40];
	time_t t = (time_t)(r->time_ms / 1000);
	struct tm tm;

	if ((c->o->job && strcmp(c->o->job, r->job)) ||
	    (c->o->denied && r->allowed))
		return;
	(void)line;
	c->shown++;
	if (c->o->json) {
		put_json(r);
		return;
	}
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	put_fields((const char *const[]){when, r->job,
					 r->allowed ? "allow" : "deny",
					 gw_eco_name(r->eco), r->name,
					 r->version, r->file, r->reason},
		   8);
}

static int cmd_log(struct al_cli *cli, const char *dir, int argc, char **argv)
{
	struct log_ctx c = {.o = cli->opts};
	int r;

	(void)argv;
	if (argc) {
		al_cli_error(cli, "log takes no operands");
		return AL_EXIT_USAGE;
	}
	r = each_record(dir, log_one, &c);
	if (r < 0) {
		al_cli_error(cli, "%s/audit.jsonl: %s", dir, strerror(-r));
		return AL_EXIT_USAGE;
	}
	return AL_EXIT_OK;
}

/* One pending name and version. */
struct pending {
	enum gw_eco eco;
	char name[GW_NAME_MAX + 1];
	char version[GW_VERSION_MAX + 1];
	char job[GW_JOB_MAX + 1];	 /* the first job that asked */
	char lookalike[GW_NAME_MAX + 1]; /* near name, or "" */
	char reason[GW_REASON_MAX + 1];	 /* the first refusal's */
	int64_t first_ms;
	unsigned asks; /* requests refused */
};

struct pending_ctx {
	struct pending *p;
	size_t n;
	bool full;
};

static void pending_one(const struct gw_audit *r, const char *line, void *arg)
{
	struct pending_ctx *c = arg;
	struct pending *p;

	(void)line;
	if (!r->pending || !r->name[0])
		return;
	for (size_t i = 0; i < c->n; i++)
		if (c->p[i].eco == r->eco && !strcmp(c->p[i].name, r->name) &&
		    !strcmp(c->p[i].version, r->version)) {
			c->p[i].asks++;
			return;
		}
	if (c->n == PENDING_MAX) {
		c->full = true;
		return;
	}
	p = &c->p[c->n++];
	*p = (struct pending){.eco = r->eco, .first_ms = r->time_ms, .asks = 1};
	snprintf(p->name, sizeof(p->name), "%s", r->name);
	snprintf(p->version, sizeof(p->version), "%s",
		 r->version[0] ? r->version : "*");
	snprintf(p->job, sizeof(p->job), "%s", r->job);
	snprintf(p->lookalike, sizeof(p->lookalike), "%s", r->lookalike);
	snprintf(p->reason, sizeof(p->reason), "%s", r->reason);
}

/* Is ECO NAME VERSION in DIR/denied (VERSION "*" there denies all)? */
static bool is_denied(const char *dir, enum gw_eco eco, const char *name,
		      const char *version)
{
	char path[PATH_MAX], line[GW_ALLOW_LINE_MAX + 2];
	char e[16], n[GW_NAME_MAX + 1], v[GW_VERSION_MAX + 1];
	bool hit = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/denied", dir);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!hit && fgets(line, sizeof(line), f))
		hit = sscanf(line, "%15s %214s %64s", e, n, v) == 3 &&
		      !strcmp(e, gw_eco_name(eco)) && !strcmp(n, name) &&
		      (!strcmp(v, "*") || !strcmp(v, version));
	fclose(f);
	return hit;
}

static int cmd_pending(struct al_cli *cli, const char *dir, int argc,
		       char **argv)
{
	const struct packages_opts *o = cli->opts;
	struct pending_ctx c = {0};
	struct gw_allow a;
	char allow[PATH_MAX], err[512];
	int rc = AL_EXIT_OK;

	(void)argv;
	if (argc) {
		al_cli_error(cli, "pending takes no operands");
		return AL_EXIT_USAGE;
	}
	snprintf(allow, sizeof(allow), "%s/packages.allow", dir);
	if (gw_allow_load(allow, true, &a, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	c.p = calloc(PENDING_MAX, sizeof(*c.p));
	if (!c.p || each_record(dir, pending_one, &c) < 0) {
		al_cli_error(cli, "cannot read %s/audit.jsonl", dir);
		rc = AL_EXIT_USAGE;
		goto out;
	}
	for (size_t i = 0; i < c.n; i++) {
		const struct pending *p = &c.p[i];
		bool any = !strcmp(p->version, "*");

		if ((any ? gw_allow_project(&a, p->eco, p->name)
			 : gw_allow_has(&a, p->eco, p->name, p->version)) ||
		    is_denied(dir, p->eco, p->name, p->version))
			continue;
		if (o->json) {
			json_t *j = json_pack(
			    "{s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:s?}", "ecosystem",
			    gw_eco_name(p->eco), "name", p->name, "version",
			    p->version, "job", p->job, "first_ms",
			    (json_int_t)p->first_ms, "asks",
			    (json_int_t)p->asks, "reason", p->reason,
			    "lookalike", p->lookalike[0] ? p->lookalike : NULL);
			char *t =
			    j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII)
			      : NULL;
			if (t)
				printf("%s\n", t);
			free(t);
			json_decref(j);
			continue;
		}
		printf("%s\t", gw_eco_name(p->eco));
		put_field(p->name);
		fputs("==", stdout);
		put_field(p->version);
		fputs("\tjob=", stdout);
		put_field(p->job);
		printf("\tasks=%u", p->asks);
		if (p->lookalike[0]) {
			fputs("\tSUSPECTED LOOK-ALIKE of ", stdout);
			put_field(p->lookalike);
		}
		fputc('\n', stdout);
	}
	if (c.full)
		al_cli_error(cli, "more than %u pending; showing the first",
			     PENDING_MAX);
out:
	free(c.p);
	gw_allow_release(&a);
	return rc;
}

/* NAME==VERSION (VERSION may be "*" for deny) into key and version. */
static int parse_spec(const char *spec, enum gw_eco eco, bool star_ok,
		      char key[GW_NAME_MAX + 1],
		      char version[GW_VERSION_MAX + 1])
{
	const char *eq = strstr(spec, "==");
	char name[GW_NAME_MAX + 1];

	if (!eq || (size_t)(eq - spec) > GW_NAME_MAX)
		return -EINVAL;
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = '\0';
	if (gw_allow_key(eco, name, key) < 0)
		return -EINVAL;
	if (strlen(eq + 2) > GW_VERSION_MAX ||
	    !(gw_version_valid(eq + 2) || (star_ok && !strcmp(eq + 2, "*"))))
		return -EINVAL;
	strcpy(version, eq + 2);
	return 0;
}

/* The dependencies a package declares that the allowlist lacks. */
static void print_missing_deps(const struct gw_allow *a, enum gw_eco eco,
			       const char *meta)
{
	char key[GW_NAME_MAX + 1];

	if (eco == GW_NPMJS) {
		json_t *doc = json_loads(meta, 0, NULL), *v;
		const char *k;

		json_object_foreach(json_object_get(doc, "dependencies"), k,
				    v) if (!gw_allow_project(a, eco, k))
		    printf("  depends on %s %s: not allowed yet\n", k,
			   json_string_value(v) ? json_string_value(v) : "");
		json_decref(doc);
		return;
	}
	for (const char *p = meta; p && *p && *p != '\n';
	     p = strchr(p, '\n'), p = p ? p + 1 : p) {
		char name[GW_NAME_MAX + 1];
		size_t n = 0;
		const char *q = p + 14, *eol = strchr(p, '\n');

		if (strncmp(p, "Requires-Dist:", 14))
			continue;
		while (*q == ' ')
			q++;
		while (n < GW_NAME_MAX && q[n] &&
		       strchr("abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
			      q[n]))
			n++;
		memcpy(name, q, n);
		name[n] = '\0';
		if (eol && memmem(q, (size_t)(eol - q), "extra ==", 8))
			continue;
		if (gw_pep503_normalize(name, key) == 0 &&
		    !gw_allow_project(a, eco, key))
			printf("  depends on %.*s: not allowed yet\n",
			       (int)(eol ? eol - q : (long)strlen(q)), q);
	}
}

/* Append `allow-scripts KEY VERSION` to the allowlist (approve
 * --allow-scripts): that npm version is served with its install script
 * under npm.no-install-scripts. */
static int append_scripts_ok(const char *allow, const char *key,
			     const char *version)
{
	int fd, rc = 0;

	fd = open(allow, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (dprintf(fd, "allow-scripts %s %s\n", key, version) < 0)
		rc = -EIO;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* --allow-scripts takes npm's NAME@VERSION too: as NAME==VERSION. */
static const char *npm_at_spec(const char *spec, char *buf, size_t size)
{
	const char *at = strrchr(spec, '@');

	if (strstr(spec, "==") || !at || at == spec ||
	    (size_t)snprintf(buf, size, "%.*s==%s", (int)(at - spec), spec,
			     at + 1) >= size)
		return spec;
	return buf;
}

static int cmd_approve(struct al_cli *cli, const char *dir, int argc,
		       char **argv)
{
	const struct packages_opts *o = cli->opts;
	enum gw_eco eco = o->npm ? GW_NPMJS : GW_PYTHON;
	char key[GW_NAME_MAX + 1], version[GW_VERSION_MAX + 1];
	char mirror[PATH_MAX], allow[PATH_MAX], err[512];
	char spec[GW_NAME_MAX + GW_VERSION_MAX + 4];
	struct gw_found found[GW_FOUND_MAX];
	struct gw_allow a;
	int n, rc = AL_EXIT_OK;

	if (argc != 1 ||
	    parse_spec(o->allow_scripts
			   ? npm_at_spec(argv[0], spec, sizeof(spec))
			   : argv[0],
		       eco, false, key, version) < 0) {
		al_cli_error(cli, "approve takes one NAME==VERSION%s",
			     o->allow_scripts ? " or NAME@VERSION" : "");
		return AL_EXIT_USAGE;
	}
	snprintf(mirror, sizeof(mirror), "%s/mirror", dir);
	snprintf(allow, sizeof(allow), "%s/packages.allow", dir);
	if (gw_allow_load(allow, true, &a, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	n = gw_mirror_find(mirror, eco, key, version, found);
	if (n <= 0) {
		al_cli_error(cli,
			     "%s %s==%s is not in the mirror: add its files "
			     "first (airlock packages add FILE...)",
			     gw_eco_name(eco), key, version);
		gw_allow_release(&a);
		return AL_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		struct gw_pin pin = {.eco = eco};
		const struct gw_pin *old =
		    gw_allow_file(&a, eco, found[i].file);

		if (found[i].malformed) {
			al_cli_error(cli,
				     "%s: not a well-formed package (an npm "
				     "tarball npm would read otherwise: "
				     "docs/packages.md, \"npm tarballs\"); not "
				     "pinned",
				     found[i].file);
			rc = AL_EXIT_FAIL;
		} else if (old && strcmp(old->sha256, found[i].sha256)) {
			al_cli_error(cli,
				     "%s: pinned with another sha256 (%s); not "
				     "changed",
				     found[i].file, old->sha256);
			rc = AL_EXIT_FAIL;
		} else if (!old) {
			memcpy(pin.name, found[i].name, sizeof(pin.name));
			memcpy(pin.version, version, sizeof(pin.version));
			memcpy(pin.file, found[i].file, sizeof(pin.file));
			memcpy(pin.sha256, found[i].sha256, sizeof(pin.sha256));
			if (append_pin(allow, &pin) < 0) {
				al_cli_error(cli, "%s: cannot append", allow);
				rc = AL_EXIT_USAGE;
			} else {
				printf("pinned %s %s sha256=%s\n",
				       gw_eco_name(eco), found[i].file,
				       found[i].sha256);
			}
		}
		if (i == 0)
			print_missing_deps(&a, eco, found[i].meta);
		free(found[i].meta);
	}
	if (o->allow_scripts && rc == AL_EXIT_OK &&
	    !gw_allow_scripts(&a, key, version)) {
		if (append_scripts_ok(allow, key, version) < 0) {
			al_cli_error(cli, "%s: cannot append", allow);
			rc = AL_EXIT_USAGE;
		}
	}
	if (o->allow_scripts && rc == AL_EXIT_OK)
		printf("install scripts allowed: npm %s@%s\n", key, version);
	gw_allow_release(&a);
	return rc;
}

static int cmd_deny(struct al_cli *cli, const char *dir, int argc, char **argv)
{
	const struct packages_opts *o = cli->opts;
	enum gw_eco eco = o->npm ? GW_NPMJS : GW_PYTHON;
	char key[GW_NAME_MAX + 1], version[GW_VERSION_MAX + 1], path[PATH_MAX];
	FILE *f;

	if (argc != 1 || parse_spec(argv[0], eco, true, key, version) < 0) {
		al_cli_error(
		    cli, "deny takes one NAME==VERSION (VERSION * for all)");
		return AL_EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "%s/denied", dir);
	f = fopen(path, "ae");
	if (!f ||
	    fprintf(f, "%s %s %s\n", gw_eco_name(eco), key, version) < 0 ||
	    fclose(f) != 0) {
		al_cli_error(cli, "%s: cannot append", path);
		return AL_EXIT_USAGE;
	}
	printf("denied %s %s==%s\n", gw_eco_name(eco), key, version);
	return AL_EXIT_OK;
}

/* ---- lockfile import ---- */

struct import_ctx {
	struct al_cli *cli;
	const char *mirror, *allow;
	struct gw_allow a; /* as loaded before the import */
	unsigned pinned, already, missing;
};

/* Pin the mirror file of ECO KEY==VERSION whose sha256 (or, for npm,
 * sha512 base64) is WANT. */
static int import_one(struct import_ctx *c, enum gw_eco eco, const char *key,
		      const char *version, const char *want, bool sha512)
{
	struct gw_found found[GW_FOUND_MAX];
	int n = gw_mirror_find(c->mirror, eco, key, version, found), hit = -1;
	char dirpath[PATH_MAX];

	snprintf(dirpath, sizeof(dirpath), "%s/%s", c->mirror,
		 gw_eco_name(eco));
	for (int i = 0; i < n; i++) {
		if (hit < 0 && !sha512 && !strcmp(found[i].sha256, want))
			hit = i;
		if (hit < 0 && sha512) {
			char b64[GW_SHA512_B64 + 1];
			uint8_t *data = NULL;
			size_t len;
			int dfd =
			    open(dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (dfd >= 0 &&
			    gw_mirror_read(dfd, found[i].file, GW_PKG_FILE_MAX,
					   &data, &len, NULL) == 0) {
				gw_sha512_b64(data, len, b64);
				if (!strcmp(b64, want))
					hit = i;
			}
			free(data);
			if (dfd >= 0)
				close(dfd);
		}
	}
	if (hit < 0) {
		al_cli_error(c->cli,
			     "%s %s==%s: no mirror file with %s %s (add it "
			     "first: airlock packages add FILE)",
			     gw_eco_name(eco), key, version,
			     sha512 ? "sha512" : "sha256", want);
		c->missing++;
	} else if (found[hit].malformed) {
		al_cli_error(c->cli,
			     "%s: not a well-formed package (docs/packages.md, "
			     "\"npm tarballs\"); not pinned",
			     found[hit].file);
		c->missing++;
	} else if (gw_allow_file(&c->a, eco, found[hit].file)) {
		c->already++;
	} else {
		struct gw_pin pin = {.eco = eco};

		memcpy(pin.name, found[hit].name, sizeof(pin.name));
		snprintf(pin.version, sizeof(pin.version), "%s", version);
		memcpy(pin.file, found[hit].file, sizeof(pin.file));
		memcpy(pin.sha256, found[hit].sha256, sizeof(pin.sha256));
		if (append_pin(c->allow, &pin) < 0) {
			c->missing++;
		} else {
			printf("pinned %s %s sha256=%s\n", gw_eco_name(eco),
			       pin.file, pin.sha256);
			c->pinned++;
		}
	}
	for (int i = 0; i < n; i++)
		free(found[i].meta);
	return hit < 0 ? -ENOENT : 0;
}

/* One requirement line of pip-compile's output: NAME[extras]==VERSION
 * [; markers] --hash=sha256:HEX ... */
static void import_requirement(struct import_ctx *c, char *line,
			       unsigned long no)
{
	char name[GW_NAME_MAX + 1], key[GW_NAME_MAX + 1],
	    version[GW_VERSION_MAX + 1];
	size_t n = strcspn(line, "[=<>!~; \t");
	const char *eq = strstr(line, "==");
	unsigned hashes = 0;
	char *save = NULL;

	if (n == 0 || n > GW_NAME_MAX || !eq || (size_t)(eq - line) < n) {
		al_cli_error(c->cli,
			     "line %lu: not NAME==VERSION (only exact pins "
			     "can be imported)",
			     no);
		c->missing++;
		return;
	}
	memcpy(name, line, n);
	name[n] = '\0';
	n = strcspn(eq + 2, " \t;\\");
	if (n == 0 || n > GW_VERSION_MAX ||
	    gw_pep503_normalize(name, key) < 0) {
		al_cli_error(c->cli, "line %lu: bad name or version", no);
		c->missing++;
		return;
	}
	memcpy(version, eq + 2, n);
	version[n] = '\0';
	for (char *t = strtok_r(line, " \t\\", &save); t;
	     t = strtok_r(NULL, " \t\\", &save)) {
		if (strncmp(t, "--hash=sha256:", 14))
			continue;
		hashes++;
		import_one(c, GW_PYTHON, key, version, t + 14, false);
	}
	if (!hashes) {
		al_cli_error(c->cli,
			     "line %lu: %s==%s has no --hash=sha256: only "
			     "hash-pinned requirements are imported",
			     no, key, version);
		c->missing++;
	}
}

static int import_requirements(struct import_ctx *c, const char *text)
{
	char *copy = strdup(text), *p, *logical = NULL;
	unsigned long no = 0, start = 0;
	size_t len = 0;

	if (!copy)
		return -ENOMEM;
	/* join backslash-continued lines, drop comments */
	for (p = copy; p && *p;) {
		char *eol = strchr(p, '\n'), *hash;
		size_t l;

		if (eol)
			*eol = '\0';
		no++;
		if ((hash = strstr(p, " #")) || (p[0] == '#' && (hash = p)))
			*hash = '\0';
		l = strlen(p);
		if (!logical)
			start = no;
		char *grown = realloc(logical, len + l + 2);
		if (!grown)
			break;
		logical = grown;
		memcpy(logical + len, p, l);
		len += l;
		logical[len] = '\0';
		if (l && p[l - 1] == '\\') {
			logical[len - 1] = ' ';
		} else {
			char *q = logical;

			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '-')
				al_cli_error(c->cli,
					     "line %lu: option ignored: %.40s",
					     start, q);
			else if (*q)
				import_requirement(c, q, start);
			free(logical);
			logical = NULL;
			len = 0;
		}
		p = eol ? eol + 1 : NULL;
	}
	free(logical);
	free(copy);
	return 0;
}

/* package-lock.json (v2, v3): every node_modules/ entry's name, version
 * and sha512 integrity. */
static int import_package_lock(struct import_ctx *c, const char *text,
			       size_t len)
{
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *v;
	const char *path;

	if (!json_is_object(json_object_get(doc, "packages"))) {
		json_decref(doc);
		al_cli_error(c->cli,
			     "package-lock.json without \"packages\" (lockfile "
			     "v1 is not supported: npm 7+ writes v2/v3)");
		return -EBADMSG;
	}
	json_object_foreach(json_object_get(doc, "packages"), path, v)
	{
		const char *nm = strstr(path, "node_modules/"), *last = nm;
		const char *version =
		    json_string_value(json_object_get(v, "version"));
		const char *integrity =
		    json_string_value(json_object_get(v, "integrity"));
		const char *name =
		    json_string_value(json_object_get(v, "name"));

		if (!nm || json_is_true(json_object_get(v, "link")))
			continue; /* the root project, or a workspace link */
		while ((nm = strstr(last + 13, "node_modules/")))
			last = nm;
		if (!name)
			name = last + 13;
		if (!version || !gw_npm_name_valid(name) ||
		    !gw_version_valid(version) || !integrity ||
		    strncmp(integrity, "sha512-", 7) ||
		    strlen(integrity + 7) != GW_SHA512_B64) {
			al_cli_error(c->cli,
				     "%s: no name, version or sha512 integrity",
				     path);
			c->missing++;
			continue;
		}
		import_one(c, GW_NPMJS, name, version, integrity + 7, true);
	}
	json_decref(doc);
	return 0;
}

static int cmd_import(struct al_cli *cli, const char *dir, int argc,
		      char **argv)
{
	char mirror[PATH_MAX], allow[PATH_MAX], err[512];
	struct import_ctx c = {.cli = cli, .mirror = mirror, .allow = allow};
	size_t len;
	char *text;
	int rc = 0;

	if (argc < 1) {
		al_cli_error(
		    cli,
		    "import: name requirements.txt or package-lock.json files");
		return AL_EXIT_USAGE;
	}
	snprintf(mirror, sizeof(mirror), "%s/mirror", dir);
	snprintf(allow, sizeof(allow), "%s/packages.allow", dir);
	for (int i = 0; i < argc && rc == 0; i++) {
		if (gw_allow_load(allow, true, &c.a, err, sizeof(err)) < 0) {
			al_cli_error(cli, "%s", err);
			return AL_EXIT_USAGE;
		}
		if (al_read_file(argv[i], GW_ALLOW_BYTES_MAX, &text, &len) <
		    0) {
			al_cli_error(cli, "%s: cannot read", argv[i]);
			rc = -EIO;
		} else {
			const char *base = strrchr(argv[i], '/');

			base = base ? base + 1 : argv[i];
			rc = strstr(base, ".json")
				 ? import_package_lock(&c, text, len)
				 : import_requirements(&c, text);
			free(text);
		}
		gw_allow_release(&c.a);
	}
	printf("%u pinned, %u already pinned, %u not imported\n", c.pinned,
	       c.already, c.missing);
	return rc < 0 ? AL_EXIT_USAGE : c.missing ? AL_EXIT_FAIL : AL_EXIT_OK;
}

/* ---- fetch from an upstream registry ---- */

#define PYPI_ACCEPT "application/vnd.pypi.simple.v1+json, text/html;q=0.1"

struct fetch_ctx {
	struct al_cli *cli;
	const char *mirror, *allow, *tmp; /* tmp: a private dir in DIR */
	struct gw_allow a;		  /* as loaded before the fetch */
	size_t max;			  /* a file's cap */
};

/* NAME==VERSION (python; npm with --npm), npm:NAME@VERSION, or with
 * --npm NAME@VERSION, into *eco, name, version. */
static int fetch_spec(const char *spec, bool npm, enum gw_eco *eco,
		      char name[GW_NAME_MAX + 1],
		      char version[GW_VERSION_MAX + 1])
{
	const char *sep, *v;
	size_t n;

	if (!strncmp(spec, "npm:", 4)) {
		spec += 4;
		npm = true;
	}
	*eco = npm ? GW_NPMJS : GW_PYTHON;
	sep = strstr(spec, "==");
	v = sep ? sep + 2 : NULL;
	if (!sep && npm && (sep = strrchr(spec, '@')) && sep > spec)
		v = sep + 1;
	if (!sep || !v)
		return -EINVAL;
	n = (size_t)(sep - spec);
	if (n == 0 || n > GW_NAME_MAX || strlen(v) > GW_VERSION_MAX ||
	    !gw_version_valid(v))
		return -EINVAL;
	if (npm) {
		memcpy(name, spec, n);
		name[n] = '\0';
		if (!gw_npm_name_valid(name))
			return -EINVAL;
	} else {
		char raw[GW_NAME_MAX + 1];

		memcpy(raw, spec, n);
		raw[n] = '\0';
		if (gw_pep503_normalize(raw, name) < 0)
			return -EINVAL;
	}
	strcpy(version, v);
	return 0;
}

/* Download one file the document named, check it against the document's
 * hash and size, and add it like `packages add` would. */
static int fetch_file(struct fetch_ctx *c, enum gw_eco eco, bool pin,
		      const struct gw_up_file *f, const char *doc_url)
{
	char url[2048 + 1], err[1024], path[PATH_MAX], got[GW_SHA512_B64 + 1];
	struct al_fetch_body b;
	size_t max = c->max;
	int fd, r, rc = AL_EXIT_FAIL;

	if (al_fetch_resolve(doc_url, f->url, url, sizeof(url)) < 0) {
		al_cli_error(c->cli, "%s: not an http(s) URL: %.200s", f->file,
			     f->url);
		return AL_EXIT_FAIL;
	}
	if (f->size > max) {
		al_cli_error(c->cli,
			     "%s: the index says %llu bytes, over the cap of "
			     "%zu (--max-bytes): refused",
			     f->file, (unsigned long long)f->size, max);
		return AL_EXIT_FAIL;
	}
	r = al_fetch_get(url, NULL, max, &b, err, sizeof(err));
	if (r < 0) {
		al_cli_error(c->cli, "%s: %s", f->file, err);
		return AL_EXIT_FAIL;
	}
	if (f->size && b.len != f->size) {
		al_cli_error(c->cli,
			     "%s: %zu bytes, the index says %llu: refused",
			     f->file, b.len, (unsigned long long)f->size);
		goto out;
	}
	if (eco == GW_PYTHON)
		gw_sha256_hex((const uint8_t *)b.data, b.len, got);
	else
		gw_sha512_b64((const uint8_t *)b.data, b.len, got);
	if (strcmp(got, eco == GW_PYTHON ? f->sha256 : f->sha512)) {
		al_cli_error(c->cli,
			     "%s: HASH MISMATCH: the index says %s %s, the "
			     "downloaded bytes have %s: refused, nothing added",
			     f->file, eco == GW_PYTHON ? "sha256" : "sha512",
			     eco == GW_PYTHON ? f->sha256 : f->sha512, got);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", c->tmp, f->file);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
		al_cli_error(c->cli, "%s: cannot write", path);
		if (fd >= 0)
			close(fd);
		unlink(path);
		goto out;
	}
	close(fd);
	rc = add_path(c->cli, c->mirror, c->allow, &c->a, path, pin, f->time_s);
	unlink(path);
out:
	al_fetch_body_release(&b);
	return rc;
}

/* The files of one NAME==VERSION from UPSTREAM. */
static int fetch_one(struct fetch_ctx *c, enum gw_eco eco, const char *name,
		     const char *version, const char *upstream, bool pin)
{
	struct gw_up_file *files = NULL;
	struct al_fetch_body doc;
	char url[2048], err[1024], esc[3 * GW_NAME_MAX + 1];
	size_t e = 0;
	int n, rc = AL_EXIT_OK;

	for (const char *p = name; *p; p++) /* npm scopes: @s/n -> @s%2fn */
		e += (size_t)(*p == '/'
				  ? snprintf(esc + e, sizeof(esc) - e, "%%2f")
				  : snprintf(esc + e, sizeof(esc) - e, "%c",
					     *p));
	if ((size_t)snprintf(url, sizeof(url), "%s%s%s%s", upstream,
			     upstream[strlen(upstream) - 1] == '/' ? "" : "/",
			     esc, eco == GW_PYTHON ? "/" : "") >= sizeof(url)) {
		al_cli_error(c->cli, "upstream URL too long");
		return AL_EXIT_USAGE;
	}
	if (al_fetch_get(url,
			 eco == GW_PYTHON ? PYPI_ACCEPT : "application/json",
			 GW_UP_DOC_MAX, &doc, err, sizeof(err)) < 0) {
		al_cli_error(c->cli, "%s %s==%s: %s", gw_eco_name(eco), name,
			     version, err);
		return AL_EXIT_FAIL;
	}
	files = calloc(GW_UP_FILES_MAX, sizeof(*files));
	if (!files) {
		al_fetch_body_release(&doc);
		return AL_EXIT_FAIL;
	}
	if (eco == GW_PYTHON)
		n = gw_up_pypi_files(
		    doc.data, doc.len,
		    !strncmp(doc.ctype, "application/vnd.pypi.simple.v1+json",
			     35),
		    name, version, files, GW_UP_FILES_MAX, err, sizeof(err));
	else
		n = gw_up_npm_file(doc.data, doc.len, name, version, files, err,
				   sizeof(err));
	if (n < 0) {
		al_cli_error(c->cli, "%s %s==%s: %s: %s", gw_eco_name(eco),
			     name, version, doc.url,
			     n == -EBADMSG ? err : strerror(-n));
		rc = AL_EXIT_FAIL;
	} else if (n == 0) {
		al_cli_error(c->cli,
			     "%s %s==%s: the upstream has no such version "
			     "(%s)",
			     gw_eco_name(eco), name, version, doc.url);
		rc = AL_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		int r = fetch_file(c, eco, pin, &files[i], doc.url);

		if (r > rc)
			rc = r;
	}
	free(files);
	al_fetch_body_release(&doc);
	return rc;
}

static int cmd_fetch(struct al_cli *cli, const char *dir, int argc, char **argv)
{
	const struct packages_opts *o = cli->opts;
	char mirror[PATH_MAX], allow[PATH_MAX], tmp[PATH_MAX], err[512];
	struct fetch_ctx c = {.cli = cli,
			      .mirror = mirror,
			      .allow = allow,
			      .tmp = tmp,
			      .max = o->max_bytes ? o->max_bytes
						  : GW_PKG_FILE_MAX};
	int rc = AL_EXIT_OK;

	if (argc < 1) {
		al_cli_error(cli, "fetch: name NAME==VERSION or "
				  "npm:NAME@VERSION operands");
		return AL_EXIT_USAGE;
	}
	if (!o->upstream && al_cli_load(cli) < 0)
		return AL_EXIT_USAGE;
	snprintf(mirror, sizeof(mirror), "%s/mirror", dir);
	snprintf(allow, sizeof(allow), "%s/packages.allow", dir);
	snprintf(tmp, sizeof(tmp), "%s/.fetch.XXXXXX", dir);
	if (gw_allow_load(allow, true, &c.a, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	if (!mkdtemp(tmp)) {
		al_cli_error(cli, "%s: %s", tmp, strerror(errno));
		gw_allow_release(&c.a);
		return AL_EXIT_USAGE;
	}
	chmod(tmp, 0700);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; i < argc; i++) {
		char name[GW_NAME_MAX + 1], version[GW_VERSION_MAX + 1];
		const char *up;
		enum gw_eco eco;
		int r;

		if (fetch_spec(argv[i], o->npm, &eco, name, version) < 0) {
			al_cli_error(cli,
				     "%s: not NAME==VERSION (pip) or "
				     "npm:NAME@VERSION",
				     argv[i]);
			rc = AL_EXIT_USAGE;
			continue;
		}
		up = o->upstream	? o->upstream
		     : eco == GW_PYTHON ? cli->cfg.packages.pypi_upstream
					: cli->cfg.packages.npm_upstream;
		if (!up[0]) {
			al_cli_error(cli,
				     "%s: no upstream configured for %s: set "
				     "[packages] %s in the config, or "
				     "--upstream URL",
				     argv[i], gw_eco_name(eco),
				     eco == GW_PYTHON ? "pypi_upstream"
						      : "npm_upstream");
			rc = AL_EXIT_USAGE;
			continue;
		}
		r = fetch_one(&c, eco, name, version, up, o->pin);
		if (r > rc)
			rc = r;
	}
	curl_global_cleanup();
	rmdir(tmp);
	gw_allow_release(&c.a);
	return rc;
}

static const struct {
	const char *name;
	int (*run)(struct al_cli *cli, const char *dir, int argc, char **argv);
} subs[] = {
    {"add", cmd_add},	      {"log", cmd_log},	  {"pending", cmd_pending},
    {"approve", cmd_approve}, {"deny", cmd_deny}, {"import", cmd_import},
    {"fetch", cmd_fetch},
};

static int run(struct al_cli *cli, int argc, char **argv)
{
	char dir[PATH_MAX - 64];

	/* the gateway's own uid reads the mirror and the allowlist */
	umask(022);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(argv[0], subs[i].name))
			continue;
		if (packages_dir(cli, dir, sizeof(dir)) < 0)
			return AL_EXIT_USAGE;
		return subs[i].run(cli, dir, argc - 1, argv + 1);
	}
	al_cli_error(cli, "unknown subcommand '%s'", argv[0]);
	return AL_EXIT_USAGE;
}

const struct al_cmd al_cmd_packages = {
    .name = "packages",
    .summary = "the package gateway's mirror, pins and audit",
    .usage =
	"usage: airlock packages add [--pin] [--dir DIR] FILE...\n"
	"       airlock packages log [--job ID] [--denied] [--json]\n"
	"       airlock packages pending [--json]\n"
	"       airlock packages approve [--npm] NAME==VERSION\n"
	"       airlock packages approve --allow-scripts NAME@VERSION\n"
	"       airlock packages deny [--npm] NAME==VERSION|NAME==*\n"
	"       airlock packages import requirements.txt|package-lock.json...\n"
	"       airlock packages fetch [--pin] [--upstream URL] [--max-bytes "
	"N]\n"
	"                              NAME==VERSION|npm:NAME@VERSION...\n"
	"\n"
	"The package gateway (docs/packages.md) serves pip and npm in\n"
	"jobs from a local mirror, only the files the allowlist pins.\n"
	"DIR (--dir, $AIRLOCK_PACKAGES_DIR, else STATE/packages) holds\n"
	"mirror/, packages.allow (format: configs/packages.allow) and\n"
	"the audit log.\n"
	"\n"
	"`add` copies wheels (.whl), sdists (.tar.gz) and npm tarballs\n"
	"(.tgz) into the mirror, reading kind, name, version and sha256\n"
	"from each file's bytes (its metadata must agree with its name),\n"
	"and prints one line per file: KIND NAME VERSION FILE sha256=HEX\n"
	"[install-script]. With --pin it also appends the pin to\n"
	"packages.allow. Exit 0 all added, 1 some file refused, 2 usage.\n"
	"\n"
	"`log` prints the gateway's audit records (one per request):\n"
	"time, job, allow|deny, ecosystem, name, version, file, reason\n"
	"(tab-separated), or the JSON lines with --json. `pending` lists\n"
	"each refused name and version once (VERSION * when a client\n"
	"asked for the name), with the first job that asked and a\n"
	"suspected look-alike's near name, until it is approved or\n"
	"denied. `approve` pins every mirror file of NAME==VERSION (the\n"
	"sha256 of the file as it is now) and names the dependencies it\n"
	"declares that are not allowed yet; the gateway rereads the\n"
	"allowlist within a second. `deny` drops it from pending.\n"
	"`approve --allow-scripts` (npm) also lets that version's\n"
	"install script through option npm.no-install-scripts (an\n"
	"allow-scripts line): the script runs in the job's VM.\n"
	"\n"
	"`import` pins what a lockfile pins: a requirements.txt with\n"
	"--hash=sha256: lines (pip-compile --generate-hashes) or a\n"
	"package-lock.json (v2/v3, sha512 integrity), each file matched\n"
	"in the mirror by its hash (add the files first). Exit 1 when\n"
	"some requirement had no hash or no matching mirror file.\n"
	"\n"
	"`fetch` downloads the files of each NAME==VERSION (pip; with\n"
	"--npm or as npm:NAME@VERSION, npm) from the upstream the config\n"
	"names ([packages] pypi_upstream, npm_upstream; --upstream URL\n"
	"overrides; none by default: fetch then refuses), checks each\n"
	"file against the hash the index gives (sha256; npm's sha512\n"
	"integrity) and its size, then adds it exactly as `add` does\n"
	"(--pin pins too), its mtime set to the upstream's upload time.\n"
	"A redirect to another origin, a missing version, a file over\n"
	"--max-bytes (default 256 MiB) or a hash mismatch is refused.\n"
	"\n"
	"options:\n"
	"  -d, --dir DIR      the packages dir\n"
	"  -p, --pin          add: pin what was added\n"
	"      --job ID       log: only this job's or session's records\n"
	"      --denied       log: only refusals\n"
	"  -j, --json         log, pending: JSON lines\n"
	"  -n, --npm          approve, deny, fetch: an npm name (default\n"
	"                     python)\n"
	"      --allow-scripts approve: npm, and its install script allowed\n"
	"      --upstream URL fetch: the index or registry to fetch from\n"
	"      --max-bytes N  fetch: largest file taken (default 268435456)\n",
    .options = opts,
    .opts_size = sizeof(struct packages_opts),
    .args_min = 1,
    .args_max = -1,
    .args_error =
	"a subcommand: add, log, pending, approve, deny, import, fetch",
    .opt = opt,
    .run = run,
};
