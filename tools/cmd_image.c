/* cmd_image.c: `airlock image build|list`: guest images per template.
 *
 * build runs sandbox/image/build-image.sh (content-addressed: building
 * again with the same inputs does nothing) with the static guest agent
 * built alongside this binary; list shows what the state dir holds.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

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

static int cmd_image(const struct al_cmd *cmd, int argc, char **argv)
{
	static const struct option lo[] = {
		{"config", 1, 0, 'c'}, {"force", 0, 0, 'f'},
		{"help", 0, 0, 'h'},   {0, 0, 0, 0},
	};
	const char *cfg_path = NULL;
	char state[PATH_MAX], tdir[PATH_MAX], err[512];
	struct al_config cfg;
	bool force = false;
	int c, rc = 0;

	optind = 0; /* airlock.c parsed its own options first */
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'f': force = true; break;
		case 'h': al_cli_usage(cmd, stdout); return 0;
		default: al_cli_usage(cmd, stderr); return 2;
		}
	}
	if (optind >= argc || (strcmp(argv[optind], "build") &&
			       strcmp(argv[optind], "list"))) {
		al_cli_usage(cmd, stderr);
		return 2;
	}
	al_config_init(&cfg);
	if (al_config_load_default(&cfg, cfg_path, err, sizeof(err)) < 0 ||
	    al_config_state_dir(&cfg, state, sizeof(state)) < 0 ||
	    al_config_templates_dir(&cfg, tdir, sizeof(tdir)) < 0) {
		fprintf(stderr, "airlock: %s\n", err);
		return 2;
	}
	if (!strcmp(argv[optind], "list")) {
		list_images(state);
		return 0;
	}
	if (optind + 1 >= argc) {
		fprintf(stderr, "airlock: image build: name a template\n");
		return 2;
	}
	for (int i = optind + 1; i < argc; i++) {
		if (build_one(state, tdir, argv[i], force) < 0) {
			fprintf(stderr, "airlock: image build %s failed\n",
				argv[i]);
			rc = 1;
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
		 "does nothing unless --force. Needs root.\n",
	.run = cmd_image,
};
