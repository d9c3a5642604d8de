/* agent.c: the helpers every agent file shares (log, SIGCHLD, reaping).
 *
 * Kept out of main.c so that exec.c, serve.c and files.c link without the
 * entry point: tests/agent/test_exec_inproc runs al_exec_step() in its own
 * process with these and no main().
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
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
		al_zygote_reaped(a, pid);
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
