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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allow.h"
#include "cli.h"
#include "mirror.h"

struct packages_opts {
	const char *dir; /* --dir */
	bool pin;	 /* --pin: add also pins */
};

static const struct option opts[] = {
    {"dir", required_argument, NULL, 'd'},
    {"pin", no_argument, NULL, 'p'},
    {NULL, 0, NULL, 0},
};

static int opt(struct al_cli *cli, int c, const char *arg)
{
	struct packages_opts *o = cli->opts;

	if (c == 'd')
		o->dir = arg;
	else if (c == 'p')
		o->pin = true;
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
	fd = open(allow, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC |
		  O_NOFOLLOW, 0644);
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
		struct gw_pkg pkg;
		struct gw_pin pin = {0};
		const struct gw_pin *old;
		const char *base = strrchr(argv[i], '/');

		base = base ? base + 1 : argv[i];
		if (gw_mirror_add(mirror, argv[i], &pkg, err, sizeof(err)) < 0) {
			al_cli_error(cli, "%s", err);
			rc = AL_EXIT_FAIL;
			continue;
		}
		printf("%s %s %s %s sha256=%s%s\n", gw_kind_name(pkg.kind),
		       pkg.name, pkg.version, base, pkg.sha256,
		       pkg.install_script ? " install-script" : "");
		pin.eco = gw_kind_eco(pkg.kind);
		old = gw_allow_file(&a, pin.eco, base);
		if (o->pin && old && strcmp(old->sha256, pkg.sha256)) {
			al_cli_error(cli, "%s: pinned with another sha256 (%s); "
				     "not changed", base, old->sha256);
			rc = AL_EXIT_FAIL;
		} else if (o->pin && !old) {
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
	}
	gw_allow_release(&a);
	return rc;
}

static const struct {
	const char *name;
	int (*run)(struct al_cli *cli, const char *dir, int argc, char **argv);
} subs[] = {
    {"add", cmd_add},
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
    .usage = "usage: airlock packages add [--pin] [--dir DIR] FILE...\n"
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
	     "options:\n"
	     "  -d, --dir DIR      the packages dir\n"
	     "  -p, --pin          add: pin what was added\n",
    .shortopts = "d:p",
    .longopts = opts,
    .opts_size = sizeof(struct packages_opts),
    .args_min = 1,
    .args_max = -1,
    .args_error = "a subcommand: add",
    .opt = opt,
    .run = run,
};
