/* agent.c: the helpers every agent file shares (log, SIGCHLD, reaping,
 * a step's environment).
 *
 * Kept out of main.c so that exec.c, serve.c and files.c link without the
 * entry point: tests/agent/test_exec_inproc runs al_exec_step() in its own
 * process with these and no main().
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

void al_agent_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	dprintf(2, "airlock-agent: %s\n", line);
}

int al_agent_signals(struct al_agent *a)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	a->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return a->sig_fd < 0 ? -errno : 0;
}

/* A reaped child was the waiting zygote (zygote.c): forget it. Here rather
 * than in zygote.c so that reaping needs nothing above this file. */
static void zygote_reaped(struct al_agent *a, pid_t pid)
{
	if (a->zygote_pid <= 0 || pid != a->zygote_pid)
		return;
	al_agent_log("zygote %d exited before its job", (int)pid);
	a->zygote_pid = 0;
	if (a->zygote_fd >= 0)
		close(a->zygote_fd);
	a->zygote_fd = -1;
}

bool al_agent_reap(struct al_agent *a, pid_t want, int *ret_status,
		   struct rusage *ret_ru)
{
	struct signalfd_siginfo si;
	struct rusage ru;
	bool found = false;
	int st;
	pid_t pid;

	while (read(a->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	while ((pid = wait4(-1, &st, WNOHANG, &ru)) > 0) {
		zygote_reaped(a, pid);
		if (pid != want || want <= 0)
			continue;
		found = true;
		if (ret_status)
			*ret_status = st;
		if (ret_ru)
			*ret_ru = ru;
	}
	return found;
}

#define ENV_PATH \
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Environment: a small fixed base, overridden by the step's own. */
char **al_agent_env(const struct al_agent *a, const struct al_step *s)
{
	static const struct al_step none;
	const char *base[] = {ENV_PATH, "LANG=C.UTF-8", "TMPDIR=/tmp", NULL};
	size_t n = 0, i;
	char **env;

	if (!s)
		s = &none;
	env = calloc(s->n_env + 5, sizeof(*env));

	if (!env)
		return NULL;
	for (i = 0; base[i]; i++) {
		size_t k = strchr(base[i], '=') - base[i];
		bool over = false;

		for (size_t j = 0; j < s->n_env; j++)
			over |= strlen(s->env[j].name) == k &&
				!strncmp(s->env[j].name, base[i], k);
		if (!over && !(env[n++] = strdup(base[i])))
			goto fail;
	}
	if (asprintf(&env[n++], "HOME=%s", a->cfg->work_dir) < 0) {
		env[n - 1] = NULL;
		goto fail;
	}
	for (i = 0; i < s->n_env; i++)
		if (asprintf(&env[n++], "%s=%s", s->env[i].name,
			     s->env[i].value) < 0) {
			env[n - 1] = NULL;
			goto fail;
		}
	return env;
fail:
	for (i = 0; env[i]; i++)
		free(env[i]);
	free(env);
	return NULL;
}

void al_agent_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}
