/* cmd_image.c: `airlock image build|list`: guest images per template.
 *
 * build runs sandbox/image/build-image.sh (content-addressed: building
 * again with the same inputs does nothing) with the static guest agent
 * built alongside this binary; list shows what the state dir holds.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const char *path_or_env(const char *env, const char *builtin)
{
	const char *v = getenv(env);

	return v && *v ? v : builtin;
}

static int build_one(const char *state, const char *tdir, const char *name,
		     bool force)
{
	const char *script = path_or_env("AIRLOCK_IMAGE_SCRIPT",
					 AL_IMAGE_SCRIPT);
	const char *agent = path_or_env("AIRLOCK_AGENT", AL_AGENT_BIN);
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

static void list_images(const char *state)
{
	char dir[PATH_MAX + 16];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/images", state);
	d = opendir(dir);
	if (!d) {
		printf("no images in %s\n", dir);
		return;
	}
	printf("%-10s %-18s %-10s %s\n", "template", "hash", "rootfs", "dir");
	while ((e = readdir(d))) {
		char link[PATH_MAX * 2 + 64], target[PATH_MAX], mf[PATH_MAX * 2 + 64];
		json_t *m;
		ssize_t n;

		if (e->d_type != DT_LNK)
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		snprintf(mf, sizeof(mf), "%s/%s/manifest.json", dir, target);
		m = json_load_file(mf, 0, NULL);
		printf("%-10s %-18s %7lld MiB %s/%s\n", e->d_name,
		       json_string_value(json_object_get(m, "hash"))
			       ?: "?",
		       (long long)json_integer_value(json_object_get(
			       json_object_get(m, "rootfs"), "bytes")) >> 20,
		       dir, target);
		json_decref(m);
	}
	closedir(d);
}

static const struct option opts[] = {
    {"force", no_argument, NULL, 'f'}, /* build again, same inputs */
    {NULL, 0, NULL, 0},
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
		list_images(state);
		return AL_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
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
		 "       airlock image list [--config PATH]\n\n"
		 "build makes the guest image of each template (kernel, "
		 "initramfs with the\nagent, read-only root filesystem) from "
		 "Debian packages through this\nmachine's apt sources, into "
		 "the state dir. Same inputs, same image:\nbuilding again "
		 "does nothing unless --force. Needs root.\n"
		 "\n"
		 "options:\n"
		 "      --force        build even when the image exists\n",
	.flags = AL_CMD_CONFIG,
	.longopts = opts,
	.args_min = 1,
	.args_max = -1,
	.args_error = "build or list?",
	.run = cmd_image,
};
