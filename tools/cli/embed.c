/* client.c: the CLI's shared queue plumbing and the embedded mode
 * (client.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "log.h"

void al_cli_serve_opts(const struct al_config *cfg, const struct alq_url *url,
		       const struct al_policy *policy,
		       const struct sb_options *sb, struct al_serve_opts *ret)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	al_serve_opts_init(ret);
	ret->url = *url;
	snprintf(ret->queue, sizeof(ret->queue), "%s", cfg->queue.name);
	ret->connect_timeout_ms = cfg->redis.connect_timeout_ms;
	ret->command_timeout_ms = cfg->redis.command_timeout_ms;
	ret->workers = cfg->workers.count ? cfg->workers.count
					  : (uint32_t)(cpus > 0 ? cpus : 1);
	ret->max_deliveries = cfg->queue.max_deliveries;
	ret->result_ttl_s = cfg->queue.result_ttl_s;
	ret->visibility_slack_ms = cfg->queue.visibility_slack_ms;
	ret->heartbeat_ms = cfg->queue.heartbeat_ms;
	ret->trim_interval_ms = cfg->queue.trim_interval_ms;
	ret->dead_letter = cfg->queue.dead_letter;
	ret->shutdown_grace_ms = cfg->workers.shutdown_grace_ms;
	ret->policy = policy;
	ret->sb = sb;
}

void al_cli_redis_error(const struct al_config *cfg, const struct alq_url *u,
			const char *why, char *err, size_t errlen)
{
	char where[300];

	alq_url_display(u, where, sizeof(where));
	if (strncmp(why, "redis: ", 7) == 0)
		why += 7;
	snprintf(err, errlen, "redis %s (%s): %s", where,
		 cfg->redis_from_cli   ? "--redis"
		 : cfg->redis_from_env ? "$AIRLOCK_REDIS"
				       : "redis.url",
		 why);
}

int al_cli_connect(const struct al_config *cfg, struct alq_client *c, char *err,
		   size_t errlen)
{
	struct alq_url u;
	int r;

	if (alq_url_parse(cfg->redis.url, &u) < 0) {
		snprintf(err, errlen,
			 "no Redis configured (--redis URL, "
			 "$AIRLOCK_REDIS or redis.url)");
		return -EINVAL;
	}
	r = alq_client_open(c, &u, cfg->queue.name,
			    cfg->redis.command_timeout_ms);
	if (r < 0)
		al_cli_redis_error(cfg, &u, c->err, err, errlen);
	return r;
}

int al_cli_prepare(struct al_job *job, const struct al_policy *policy,
		   const char *id_if_none, struct al_prepared *ret)
{
	struct al_limits lim;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!job->id) {
		if (id_if_none)
			snprintf(ret->id, sizeof(ret->id), "%s", id_if_none);
		else
			alq_new_id(ret->id);
		job->id = strdup(ret->id);
		if (!job->id)
			return -ENOMEM;
	} else {
		snprintf(ret->id, sizeof(ret->id), "%s", job->id);
	}
	al_job_limits(job, policy, &lim);
	ret->wall_ms = lim.wall_ms;
	r = al_job_to_msgpack(job, &ret->payload, &ret->len);
	return r;
}

int al_cli_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rbe") : stdin;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *nb;

			cap = cap ? cap * 2 : 65536;
			if (cap > max + 65536)
				cap = max + 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (len > max) {
			r = -E2BIG;
			break;
		}
		if (n == 0) {
			if (ferror(f))
				r = -EIO;
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Print bytes with control and non-ASCII bytes escaped. */
static void print_escaped(FILE *f, const struct al_blob *b, size_t max)
{
	size_t n = b->len < max ? b->len : max;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = b->data[i];

		if (ch == '\n')
			fputs("\n      ", f);
		else if (ch == '\t' || (ch >= 0x20 && ch < 0x7f))
			fputc(ch, f);
		else
			fprintf(f, "\\x%02x", ch);
	}
	if (n < b->len)
		fprintf(f, "... (%zu more bytes)", b->len - n);
}

void al_cli_print_result(const struct al_result *r, FILE *f, size_t max_out)
{
	fprintf(f, "job %s: %s", r->id ? r->id : "-",
		al_status_name(r->status));
	if (r->verdict != AL_VERDICT_NONE)
		fprintf(f, " (%s)", al_verdict_name(r->verdict));
	fprintf(f, ", attempt %u", r->attempt);
	if (r->worker)
		fprintf(f, ", worker %s", r->worker);
	fputc('\n', f);
	if (r->vm.template_)
		fprintf(f, "  vm: %s, %s, %s in %llu ms\n", r->vm.template_,
			al_accel_name(r->vm.accel),
			r->vm.restored ? "restored" : "cold boot",
			(unsigned long long)r->vm.restore_ms);
	fprintf(f, "  time: queued %llu ms, run %llu ms\n",
		(unsigned long long)r->timing.queued_ms,
		(unsigned long long)r->timing.run_ms);
	if (r->error)
		fprintf(f, "  error: %s\n", r->error);
	for (size_t i = 0; i < r->n_steps; i++) {
		const struct al_step_result *s = &r->steps[i];

		fprintf(f, "  step %zu%s%s%s: %s", i, s->name ? " (" : "",
			s->name ? s->name : "", s->name ? ")" : "",
			al_status_name(s->status));
		if (s->has_exit_code)
			fprintf(f, ", exit %d", s->exit_code);
		if (s->signal)
			fprintf(f, ", signal %d", s->signal);
		if (s->expect_ok != AL_UNSET)
			fprintf(f, ", expect %s",
				s->expect_ok == AL_TRUE ? "ok" : "failed");
		fprintf(f, ", %llu ms wall, %llu ms cpu\n",
			(unsigned long long)s->wall_ms,
			(unsigned long long)s->cpu_ms);
		if (s->stdout_.len) {
			fputs("    stdout: ", f);
			print_escaped(f, &s->stdout_, max_out);
			fputc('\n', f);
		}
		if (s->stderr_.len) {
			fputs("    stderr: ", f);
			print_escaped(f, &s->stderr_, max_out);
			fputc('\n', f);
		}
	}
}

int al_cli_exit_code(const struct al_result *r)
{
	const struct al_step_result *s = NULL;

	if (r->status == AL_RJ || r->status == AL_XX)
		return 125;
	for (size_t i = r->n_steps; i-- > 0;) {
		if (r->steps[i].status != AL_SK) {
			s = &r->steps[i];
			break;
		}
	}
	if (!s)
		return 125;
	switch (s->status) {
	case AL_TO:
		return 124;
	case AL_TL:
		return 128 + SIGXCPU; /* as a shell reports RLIMIT_CPU */
	case AL_ML:
		return 137;
	case AL_SG:
		return 128 + (s->signal > 0 && s->signal < 128 ? s->signal : 0);
	case AL_XX:
	case AL_RJ:
		return 125;
	default:
		if (s->has_exit_code)
			return s->exit_code & 0xff;
		return s->signal ? 128 + s->signal : 125;
	}
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	if (interrupted)
		_exit(130);
	interrupted = 1;
}

void al_cli_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_interrupt};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool al_cli_interrupted(void)
{
	return interrupted != 0;
}

/* --- embedded mode
 * ------------------------------------------------------------ */

void al_embed_init(struct al_embed *e)
{
	memset(e, 0, sizeof(*e));
	e->redis = -1;
	e->serve = -1;
	e->stop_w = -1;
	e->lock_fd = -1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static bool answers(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char buf[8] = "";
	bool ok = false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, 5) == 5)
		ok = !memcmp(buf, "+PONG", 5);
	close(fd);
	return ok;
}

static void reap(pid_t *pid, unsigned wait_ms)
{
	int st;

	if (*pid <= 0)
		return;
	for (unsigned i = 0; i < wait_ms / 10; i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = -1;
			return;
		}
		sleep_ms(10);
	}
	kill(*pid, SIGKILL);
	while (waitpid(*pid, &st, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
}

/* Remove the append-only files of an earlier run (a fresh start). */
static void aof_clear(const char *aofdir)
{
	DIR *d = opendir(aofdir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

/* With e->persist: lock and prepare STATE/embedded-redis/ (its path in
 * dir[]); "" when not persisting (or another command holds it). */
static void persist_dir(struct al_embed *e, const char *state_dir,
			char *dir, size_t len)
{
	char lock[4200], aof[4200];

	dir[0] = '\0';
	if (!e->persist)
		return;
	snprintf(lock, sizeof(lock), "%s/embedded-redis.lock", state_dir);
	e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "airlock: %s is held by another command: this "
				"one keeps no append-only file\n",
			lock);
		if (e->lock_fd >= 0)
			close(e->lock_fd);
		e->lock_fd = -1;
		return;
	}
	snprintf(dir, len, "%s/embedded-redis", state_dir);
	snprintf(aof, sizeof(aof), "%s/aof", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		dir[0] = '\0';
		return;
	}
	if (!e->keep)
		aof_clear(aof);
}

int al_embed_redis(struct al_embed *e, const char *state_dir, char *err,
		   size_t errlen)
{
	pid_t parent = getpid();
	char pdir[4200];
	int n;

	n = sb_mkdirs(state_dir, 0700); /* ~/.local/state may not exist */
	if (n < 0) {
		snprintf(err, errlen, "state dir %s: %s", state_dir,
			 strerror(-n));
		return n;
	}
	n = snprintf(e->sock, sizeof(e->sock), "%s/redis-%d.sock", state_dir,
		     (int)parent);
	if (n < 0 || (size_t)n >= sizeof(e->sock)) {
		snprintf(err, errlen, "state dir %s: too long for a socket",
			 state_dir);
		return -ENAMETOOLONG;
	}
	snprintf(e->log, sizeof(e->log), "%s/redis-%d.log", state_dir,
		 (int)parent);
	snprintf(e->url, sizeof(e->url), "unix://%s", e->sock);
	unlink(e->sock);
	persist_dir(e, state_dir, pdir, sizeof(pdir));
	fflush(NULL);
	e->redis = fork();
	if (e->redis < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (e->redis == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		setpgid(0, 0); /* Ctrl-C is ours to handle, not its */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		execlp("redis-server", "redis-server", "--port", "0",
		       "--unixsocket", e->sock, "--unixsocketperm", "700",
		       "--dir", pdir[0] ? pdir : state_dir, "--save", "",
		       "--appendonly", pdir[0] ? "yes" : "no",
		       "--appenddirname", "aof", "--appendfsync", "always",
		       "--daemonize", "no", "--logfile", e->log, "--loglevel",
		       "warning", (char *)NULL);
		fprintf(stderr, "airlock: redis-server: %s\n", strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) { /* 10 s */
		int st;

		if (answers(e->sock))
			return 0;
		if (waitpid(e->redis, &st, WNOHANG) == e->redis) {
			e->redis = -1;
			snprintf(err, errlen,
				 "embedded redis-server exited at start (is "
				 "it installed? log: %s)",
				 e->log);
			return -ECHILD;
		}
		sleep_ms(10);
	}
	snprintf(err, errlen, "embedded redis-server did not answer in 10 s");
	reap(&e->redis, 0);
	return -ETIMEDOUT;
}

int al_embed_start(struct al_embed *e, struct al_config *cfg,
		   const struct al_policy *policy, const struct sb_options *sb,
		   struct al_serve_opts *so, char *err, size_t errlen)
{
	char state[AL_CONFIG_STATE_DIR_MAX + 1];
	struct alq_url url;
	int r;

	r = al_config_state_dir(cfg, state, sizeof(state));
	if (r < 0) {
		snprintf(err, errlen, "state dir: %s", strerror(-r));
		return r;
	}
	r = al_embed_redis(e, state, err, errlen);
	if (r < 0)
		return r;
	snprintf(cfg->redis.url, sizeof(cfg->redis.url), "%s", e->url);
	if (alq_url_parse(e->url, &url) < 0) {
		snprintf(err, errlen, "embedded redis: bad socket path");
		return -EINVAL;
	}
	al_cli_serve_opts(cfg, &url, policy, sb, so);
	r = al_embed_serve(e, so);
	if (r < 0)
		snprintf(err, errlen, "starting the dispatcher: %s",
			 strerror(-r));
	return r;
}

int al_embed_serve(struct al_embed *e, struct al_serve_opts *o)
{
	pid_t parent = getpid();
	int p[2], r;

	if (alq_url_parse(e->url, &o->url) < 0)
		return -EINVAL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	e->serve = fork();
	if (e->serve < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (e->serve == 0) {
		close(p[1]);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		setpgid(0, 0); /* Ctrl-C reaches us; we stop it */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* the command's own output is what the user reads */
		if (al_log_level > AL_LOG_WARN)
			al_log_level = AL_LOG_WARN;
		o->stop_fd = p[0];
		r = al_serve_run(o);
		_exit(r < 0 ? 1 : 0);
	}
	close(p[0]);
	e->stop_w = p[1];
	return 0;
}

bool al_embed_serve_gone(struct al_embed *e, int *ret_status)
{
	int st;

	if (e->serve <= 0)
		return true;
	if (waitpid(e->serve, &st, WNOHANG) != e->serve)
		return false;
	e->serve = -1;
	if (ret_status)
		*ret_status = st;
	return true;
}

void al_embed_stop(struct al_embed *e, uint32_t grace_ms)
{
	if (e->stop_w >= 0) {
		close(e->stop_w); /* the dispatcher drains on EOF */
		e->stop_w = -1;
	}
	reap(&e->serve, grace_ms + 5000);
	if (e->redis > 0) {
		kill(e->redis, SIGTERM);
		reap(&e->redis, 5000);
	}
	if (e->sock[0])
		unlink(e->sock);
	if (e->log[0])
		unlink(e->log);
	if (e->lock_fd >= 0) {
		close(e->lock_fd); /* after Redis is gone: the file is ours */
		e->lock_fd = -1;
	}
}
