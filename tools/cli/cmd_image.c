/* cmd_image.c: `airlock image build|list`: guest images per template.
 *
 * build runs sandbox/image/build-image.sh (content-addressed: building
 * again with the same inputs does nothing) with the static guest agent
 * built alongside this binary; list shows what the state dir holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "sandbox.h"

/* $env, else the installed copy (al_install_path), else the build's. */
static const char *shipped(const char *env, const char *rel,
			   const char *builtin, char *buf)
{
	const char *v = getenv(env);

	if (v && *v)
		return v;
	if (al_install_path(rel, builtin, buf, PATH_MAX) < 0)
		return builtin;
	return buf;
}

static int build_one(const char *state, const char *tdir, const char *name,
		     bool force)
{
	char sbuf[PATH_MAX], abuf[PATH_MAX];
	const char *script = shipped("AIRLOCK_IMAGE_SCRIPT", AL_REL_SCRIPT,
				     AL_IMAGE_SCRIPT, sbuf);
	const char *agent = shipped("AIRLOCK_AGENT", AL_REL_AGENT,
				    AL_AGENT_BIN, abuf);
	char *argv[] = {"bash",	      (char *)script, "--template",
			(char *)name, "--agent",      (char *)agent,
			"--state-dir", (char *)state, "--templates-dir",
			(char *)tdir, force ? "--force" : NULL, NULL};
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp("bash", argv);
		fprintf(stderr, "airlock: exec bash: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Bytes on disk of the files in dir (what `du` counts); -1 if unreadable. */
static long long dir_bytes(const char *dir)
{
	long long sum = 0;
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	int fd;

	if (!d)
		return -1;
	fd = dirfd(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (long long)st.st_blocks * 512;
	closedir(d);
	return sum;
}

/* One image of `dir` (STATE/images), the link `name`: a row, or a JSON
 * object appended to arr. */
static void list_one(const char *dir, const char *name, json_t *arr)
{
	char link[PATH_MAX * 2 + 64], target[PATH_MAX], full[PATH_MAX * 2 + 64];
	char mf[PATH_MAX * 3];
	long long bytes;
	const char *hash;
	json_t *m;
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%s", dir, name);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return;
	target[n] = 0;
	snprintf(full, sizeof(full), "%s/%s", dir, target);
	snprintf(mf, sizeof(mf), "%s/manifest.json", full);
	m = json_load_file(mf, 0, NULL);
	hash = json_string_value(json_object_get(m, "hash")) ?: "?";
	bytes = dir_bytes(full);
	if (arr)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:s}",
						     "template", name, "hash",
						     hash, "bytes",
						     (json_int_t)bytes, "dir",
						     full));
	else if (bytes < 0)
		printf("%-10s %-18s %10s %s\n", name, hash, "?", full);
	else
		printf("%-10s %-18s %6lld MiB %s\n", name, hash,
		       (bytes + (1 << 19)) >> 20, full);
	json_decref(m);
}

/* The images of one state dir, rows or into arr; false if it has none. */
static bool list_dir(const char *state, json_t *arr, bool *header)
{
	char dir[PATH_MAX + 16];
	struct dirent *e;
	bool any = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/images", state);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_type != DT_LNK)
			continue;
		if (!arr && !*header)
			printf("%-10s %-18s %10s %s\n", "template", "hash",
			       "size", "dir");
		*header = any = true;
		list_one(dir, e->d_name, arr);
	}
	if (d)
		closedir(d);
	return any;
}

/* The images of the state dir, then (another user's view) of the system
 * dir, whose images this user's VMs use read-only; json: one object. */
static void list_images(const char *state, bool json)
{
	json_t *arr = json ? json_array() : NULL;
	bool header = false, any;

	any = list_dir(state, arr, &header);
	if (geteuid() != 0 && strcmp(state, SB_SYSTEM_DIR) != 0)
		any |= list_dir(SB_SYSTEM_DIR, arr, &header);
	if (!any && !arr)
		printf("no images in %s/images\n", state);
	if (arr) {
		json_t *j = json_pack("{s:o}", "images", arr);

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
	}
}

static const struct al_opt opts[] = {
    {"force", 'f', 0}, /* build again, same inputs */
    {"json", 'j', 0},  /* list as JSON */
    {NULL, 0, 0},
};

/* The state and templates dirs of the config; 0 or an exit code. */
static int image_dirs(struct al_cli *cli, char *state, char *tdir)
{
	int r;

	r = al_config_state_dir(&cli->cfg, state, PATH_MAX);
	if (r < 0) {
		al_cli_error(cli, "state dir: %s", strerror(-r));
		return AL_EXIT_USAGE;
	}
	r = al_config_templates_dir(&cli->cfg, tdir, PATH_MAX);
	if (r < 0) {
		al_cli_error(cli, "templates dir: %s", strerror(-r));
		return AL_EXIT_USAGE;
	}
	return 0;
}

static int cmd_image(struct al_cli *cli, int argc, char **argv)
{
	char state[PATH_MAX], tdir[PATH_MAX];
	bool list;
	int rc;

	if (strcmp(argv[0], "build") && strcmp(argv[0], "list"))
		return al_cli_usage_error(cli, "build or list?");
	list = !strcmp(argv[0], "list");
	if (list && argc > 1)
		return al_cli_usage_error(cli, "list takes no arguments");
	if (!list && argc == 1)
		return al_cli_usage_error(cli, "build: name a template");
	rc = image_dirs(cli, state, tdir);
	if (rc)
		return rc;
	if (list) {
		list_images(state, cli->flag['j']);
		return AL_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
		if (!al_name_valid(argv[i])) {
			al_cli_error(cli, "build %s: template names are "
				     "[a-z0-9][a-z0-9_.-]*, at most %d bytes",
				     argv[i], AL_NAME_MAX);
			rc = AL_EXIT_FAIL;
			continue;
		}
		if (build_one(state, tdir, argv[i], cli->flag['f']) < 0) {
			al_cli_error(cli, "build %s failed", argv[i]);
			rc = AL_EXIT_FAIL;
		}
	}
	return rc;
}

const struct al_cmd al_cmd_image = {
	.name = "image",
	.summary = "build or list guest images (one per template)",
	.usage = "usage: airlock image build TEMPLATE... [--force] "
		 "[--config PATH]\n"
		 "       airlock image list [--json] [--config PATH]\n\n"
		 "build makes the guest image of each template (kernel, "
		 "initramfs with the\nagent, read-only root filesystem) from "
		 "Debian packages through this\nmachine's apt sources, into "
		 "the state dir. Same inputs, same image:\nbuilding again "
		 "does nothing unless --force. Needs root. Template names\n"
		 "follow the jobs' rule: [a-z0-9][a-z0-9_.-]*, at most 64 "
		 "bytes.\n"
		 "\n"
		 "list shows the images of the state dir with their size on "
		 "disk and, for\na user other than root, those of the system "
		 "dir (" SB_SYSTEM_DIR "),\nwhich that user's VMs use "
		 "read-only.\n"
		 "\n"
		 "options:\n"
		 "      --force        build even when the image exists\n"
		 "      --json         list: one JSON object, {\"images\": "
		 "[...]}\n",
	.flags = AL_CMD_CONFIG,
	.options = opts,
	.args_min = 1,
	.args_max = -1,
	.args_error = "build or list?",
	.run = cmd_image,
};
