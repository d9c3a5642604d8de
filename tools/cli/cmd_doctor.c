/* cmd_doctor.c: `airlock doctor`: is this host ready to run jobs for this
 * user, and if not, what to do. One line per check: ok, warn (works, but
 * slower or less isolated) or FAIL (jobs cannot run), each with the fix;
 * --json prints the same lines as one JSON object. Exit 1 on any FAIL.
 *
 * Honesty rules: a line says what jobs will really get (the accelerator
 * of each image from its cached verdict, not from /dev/kvm opening), and
 * a check that cannot tell says so rather than "ok".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nftables/libnftables.h>

#include "cli.h"
#include "sandbox.h"
#include "sbconfig.h"

struct report {
	int fails;	   /* FAIL lines printed */
	int warns;	   /* warn lines printed */
	json_t *json;	   /* --json: the lines collected, else NULL */
	int images;	   /* images usable by this user */
	int kvm_images;	   /* of those, with a KVM verdict */
	int tcg_images;	   /* of those, with a TCG verdict */
	bool kvm_opens;	   /* /dev/kvm opened and has our API */
	int unused;	   /* templates not allowed and not built */
};

static void line(struct report *rp, const char *level, const char *what,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void line(struct report *rp, const char *level, const char *what,
		 const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	rp->fails += !strcmp(level, "FAIL");
	rp->warns += !strcmp(level, "warn");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rp->json)
		json_array_append_new(rp->json,
				      json_pack("{s:s, s:s, s:s}", "level",
						level, "check", what,
						"message", msg));
	else
		printf("%-4s  %-10s %s\n", level, what, msg);
}

static void check_kvm(struct report *rp, const struct sb_options *o)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int v;

	if (fd < 0) {
		line(rp, "warn", "kvm",
		     "/dev/kvm: %s: VMs run under TCG (20-30x slower guest "
		     "code); fix: enable virtualisation, load kvm_intel or "
		     "kvm_amd, add the VMM user to group kvm",
		     strerror(errno));
		return;
	}
	v = ioctl(fd, KVM_GET_API_VERSION, 0);
	close(fd);
	if (v != KVM_API_VERSION) {
		line(rp, "warn", "kvm", "API version %d, want %d: TCG", v,
		     KVM_API_VERSION);
		return;
	}
	rp->kvm_opens = true;
	line(rp, "ok", "kvm",
	     "/dev/kvm opens (accel=%s; under auto each image is booted once "
	     "under KVM and falls back to TCG if it cannot: see its image line)",
	     o->accel == SB_ACCEL_AUTO ? "auto"
	     : o->accel == SB_ACCEL_KVM ? "kvm"
					: "tcg");
}

static void check_vsock(struct report *rp)
{
	int fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		line(rp, "ok", "channel",
		     "virtio-serial (no /dev/vhost-vsock: %s; vsock needs "
		     "`modprobe vhost_vsock`)",
		     strerror(errno));
		return;
	}
	close(fd);
	line(rp, "ok", "channel", "/dev/vhost-vsock usable; virtio-serial "
				  "is used for snapshot clones");
}

static void check_cgroup(struct report *rp, const struct sb_options *o)
{
	const char *v = sb_cg_version();

	if (!strcmp(v, "none") && o->jail)
		line(rp, "FAIL", "cgroup",
		     "no writable cgroup hierarchy: a jailed VMM needs one "
		     "(memory/CPU/pids caps); fix: mount cgroup2");
	else if (!strcmp(v, "none"))
		line(rp, "warn", "cgroup",
		     "no writable cgroup hierarchy: VMMs run without host "
		     "memory/CPU caps; fix: run as root or delegate a cgroup");
	else
		line(rp, "ok", "cgroup", "%s: each VMM gets memory, CPU and "
					 "pids caps",
		     v);
}

/* The VMM jail (sandbox/jail.c): root, the namespaces it makes, and a
 * uid range no real user has. */
static void check_jail(struct report *rp, const struct sb_options *o)
{
	const int ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
		       CLONE_NEWUTS | CLONE_NEWNET;
	int status = -1;
	pid_t pid;

	if (!o->jail) {
		line(rp, "warn", "jail", "not root: each VMM runs unjailed as "
		     "this user (no own uid, namespaces or pivot_root); fix: "
		     "run the workers as root");
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(unshare(ns) < 0 ? 1 : 0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (status != 0) {
		line(rp, "FAIL", "jail", "cannot create mount/pid/ipc/uts/net "
		     "namespaces: VMMs cannot start; fix: a kernel with "
		     "namespaces, no seccomp or LSM denying unshare");
		return;
	}
	for (uint32_t i = 0; i < o->vmm_uid_count; i++) {
		const struct passwd *pw = getpwuid(o->vmm_uid_base + i);

		if (pw) {
			line(rp, "FAIL", "jail", "uid %u is user '%s': a VMM "
			     "would run as it; fix: set sandbox.vmm_uid_base "
			     "to a range no user has", pw->pw_uid,
			     pw->pw_name);
			return;
		}
	}
	line(rp, "ok", "jail", "each VMM in its own namespaces and uid "
	     "(%u..%u, no user has one)", o->vmm_uid_base,
	     o->vmm_uid_base + o->vmm_uid_count - 1);
}

/* Networked jobs (docs/network.md): in a child, a fresh network
 * namespace (gone with the child, so nothing is left behind), an nf_tables
 * table in it through libnftables, and a tap device from /dev/net/tun.
 * FAIL when the config defines policies, else warn: `none` jobs need none
 * of it. */
static void probe_network(int err[3])
{
	struct nft_ctx *nft;
	struct ifreq ifr = {0};
	int fd;

	if (unshare(CLONE_NEWNET) < 0) {
		err[0] = errno;
		return;
	}
	nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!nft || nft_ctx_buffer_error(nft) != 0 ||
	    nft_run_cmd_from_buffer(nft, "add table inet airlock_doctor"))
		err[1] = nft ? EPROTONOSUPPORT : ENOMEM;
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "altap0");
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0)
		err[2] = errno;
}

static void check_network(struct report *rp, const struct al_config *cfg)
{
	static const char *const what[3] = {
	    "cannot create a network namespace",
	    "nf_tables unusable",
	    "/dev/net/tun: no tap device",
	};
	static const char *const fix[3] = {
	    "run the workers as root, raise user.max_net_namespaces, "
	    "allow unshare",
	    "a kernel with CONFIG_NF_TABLES and CONFIG_NF_TABLES_INET, or "
	    "`modprobe nf_tables`",
	    "`modprobe tun`, or mknod /dev/net/tun c 10 200",
	};
	const char *level = cfg->network.n ? "FAIL" : "warn";
	int err[3] = {0}, p[2], bad = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		probe_network(err);
		_exit(write(p[1], err, sizeof(err)) == sizeof(err) ? 0 : 1);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], err, sizeof(err)) != sizeof(err))
		err[0] = pid < 0 ? errno : EIO;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	for (int i = 0; i < 3; i++) {
		if (!err[i])
			continue;
		line(rp, level, "network", "%s (%s): networked jobs get RJ; "
		     "fix: %s", what[i], strerror(err[i]), fix[i]);
		bad++;
	}
	if (!bad)
		line(rp, "ok", "network", "netns, nf_tables, tap: networked "
		     "jobs can run (%zu policies defined)", cfg->network.n);
	else if (!cfg->network.n)
		line(rp, "ok", "network", "no policies defined: every job runs "
		     "with no network device (none)");
}

/* What VMs of dead workers left (sandbox/sweep.c): host links of network
 * slots, VM cgroups, run dirs, processes naming those. serve sweeps them
 * at start and whenever a worker dies, so any here means a worker died
 * with nobody sweeping after it; --fix sweeps now. */
static void check_leftovers(struct report *rp, const struct sb_options *o,
			    bool fix)
{
	struct sb_sweep_stats st;
	char example[128];
	int r;

	sb_sweep_scan(o, &st, example, sizeof(example));
	if (!st.links && !st.cgroups && !st.dirs && !st.killed) {
		line(rp, "ok", "leftovers", "none: no network link, VM cgroup "
		     "or run dir of a dead worker");
		return;
	}
	if (!fix) {
		line(rp, "warn", "leftovers", "of dead workers: %u network "
		     "links, %u VM cgroups, %u run dirs, %u processes (e.g. "
		     "%s); `airlock serve` sweeps them when it starts and when "
		     "a worker dies; fix now: airlock doctor --fix",
		     st.links, st.cgroups, st.dirs, st.killed, example);
		return;
	}
	r = sb_sweep(o, &st);
	line(rp, r < 0 ? "warn" : "ok", "leftovers", "swept: removed %u "
	     "network links, %u VM cgroups, %u run dirs, killed %u processes"
	     "%s%s", st.links, st.cgroups, st.dirs, st.killed,
	     r < 0 ? "; run dir: " : "", r < 0 ? strerror(-r) : "");
}

/* sandbox.qemu: a path that is wrong is the config's fault, a name not
 * on $PATH the host's. */
static bool qemu_missing(struct report *rp, const struct sb_options *o)
{
	if (!strchr(o->qemu, '/')) {
		for (const char *p = getenv("PATH") ?: "/usr/bin:/bin"; *p;) {
			size_t n = strcspn(p, ":");
			char f[PATH_MAX];
			int w = snprintf(f, sizeof(f), "%.*s/%s", (int)n, p,
					 o->qemu);

			if (w > 0 && (size_t)w < sizeof(f) &&
			    access(f, X_OK) == 0)
				return false;
			p += n + (p[n] == ':');
		}
		line(rp, "FAIL", "qemu", "%s: not found on $PATH; fix: "
		     "apt-get install qemu-system-x86, or set sandbox.qemu to "
		     "its path", o->qemu);
		return true;
	}
	if (access(o->qemu, X_OK) < 0) {
		line(rp, "FAIL", "qemu", "sandbox.qemu = %s: %s; fix: set "
		     "sandbox.qemu to the QEMU binary's path (or its name, to "
		     "search $PATH)", o->qemu, strerror(errno));
		return true;
	}
	return false;
}

/* First line of `prog --version`. */
static void check_qemu(struct report *rp, const struct sb_options *o)
{
	char buf[256] = "";
	int p[2], status = -1;
	ssize_t n;
	pid_t pid;

	if (qemu_missing(rp, o) || pipe2(p, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execlp(o->qemu, o->qemu, "--version", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		line(rp, "FAIL", "qemu", "sandbox.qemu = %s: `--version` "
		     "failed (%s); fix: point sandbox.qemu at a working "
		     "qemu-system-x86_64", o->qemu, buf[0] ? buf : "no output");
	else
		line(rp, "ok", "qemu", "%s", buf);
}

/* redis.url empty: `run` and `batch` start a private redis-server, which
 * must exist; set: it must answer (connect, AUTH, SELECT). */
static void check_redis(struct report *rp, const struct al_config *cfg)
{
	char err[512], path[PATH_MAX] = "";
	struct alq_client c;
	FILE *f;

	if (cfg->redis.url[0]) {
		if (al_cli_connect(cfg, &c, err, sizeof(err)) < 0) {
			line(rp, "FAIL", "redis", "%s; fix: start it, or fix "
			     "the URL", err);
			return;
		}
		alq_client_close(&c);
		line(rp, "ok", "redis", "%s answers", cfg->redis.url[0] == 'u'
		     ? "the unix socket" : "the server");
		return;
	}
	f = popen("command -v redis-server", "re");
	if (f && !fgets(path, sizeof(path), f))
		path[0] = 0;
	if (f)
		pclose(f);
	path[strcspn(path, "\n")] = 0;
	if (!path[0])
		line(rp, "FAIL", "redis", "no redis.url and no redis-server on "
		     "$PATH: run and batch start a private one; fix: apt-get "
		     "install redis-server, or set redis.url");
	else
		line(rp, "ok", "redis", "no redis.url: run and batch start a "
		     "private %s", path);
}

/* Who runs the jobs, and what that user gets (docs/operations.md). */
static void check_user(struct report *rp, const struct sb_options *o)
{
	if (geteuid() == 0) {
		line(rp, "ok", "user", "root: images, templates and state in "
		     "%s; image build works", o->state_dir);
		return;
	}
	line(rp, "warn", "user", "uid %u, not root: own state in %s, images "
	     "read-only from %s when not built here; VMMs run unjailed as "
	     "this user; `airlock image build` needs root",
	     (unsigned)geteuid(), o->state_dir,
	     o->system_dir[0] ? o->system_dir : "(none)");
}

static void check_space(struct report *rp, const char *what, const char *dir,
			unsigned long want_mb)
{
	struct statvfs s;
	unsigned long mb;

	if (statvfs(dir, &s) < 0) {
		line(rp, "warn", what, "%s: %s (created on first use)", dir,
		     strerror(errno));
		return;
	}
	mb = (unsigned long)(s.f_bavail * s.f_frsize >> 20);
	line(rp, mb < want_mb ? "warn" : "ok", what, "%s: %lu MiB free%s", dir,
	     mb, mb < want_mb ? " (low)" : "");
}

static const char *accel_name(int a)
{
	return a == AL_ACCEL_KVM ? "kvm" : "tcg";
}

/* One template's image: where it is, and the accelerator it gets. An
 * allowed template (jobs may name it) with no image is a problem: its
 * jobs are refused (issue 37); one no config allows is no concern and
 * only counted (rp->unused). */
static void check_image(struct report *rp, const struct al_config *cfg,
			const struct sb_options *o, const char *name,
			bool allowed)
{
	bool dflt = !strcmp(name, cfg->templates.default_);
	struct sb_image img;
	int r = sb_image_open(o, name, &img), a;
	char acc[160];

	if ((r == -ENOENT || r == -EACCES) && !allowed && !dflt) {
		rp->unused++;
		return;
	}
	if (r < 0) {
		line(rp, "FAIL", "image",
		     "%s: %s, and %s: its jobs are refused; fix: airlock "
		     "image build %s (as root), or take it out of "
		     "templates.allowed in %s",
		     name, r == -ENOENT ? "not built" : strerror(-r),
		     dflt ? "it is templates.default"
			  : "templates.allowed "
			    "names it",
		     name, cfg->source[0] ? cfg->source : "the config");
		return;
	}
	rp->images++;
	a = sb_accel_known(o, &img);
	if (a < 0)
		snprintf(acc, sizeof(acc), "accel not probed yet (the first "
			 "VM boots it once under KVM)");
	else
		snprintf(acc, sizeof(acc), "accel %s%s", accel_name(a),
			 a == AL_ACCEL_TCG ? " (20-30x slower guest code)"
					   : "");
	rp->kvm_images += a == AL_ACCEL_KVM;
	rp->tcg_images += a == AL_ACCEL_TCG;
	/* TCG is said once, by check_kvm or check_templates, not per image */
	line(rp, "ok", "image", "%s: %s, %s%s", name, img.dir, acc,
	     allowed ? "" : " (not in templates.allowed)");
}

/* Does templates.allowed name `name`? An empty list lets jobs name any
 * template, but then no template's missing image is a promise broken:
 * only the ones the operator listed (and the default) must be built. */
static bool allowed(const struct al_config *cfg, const char *name)
{
	const struct al_config_names *a = &cfg->templates.allowed;

	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->name[i], name))
			return true;
	return false;
}

static void check_templates(struct report *rp, const struct al_config *cfg,
			    const struct sb_options *o, const char *tdir)
{
	char name[AL_NAME_MAX + 1];
	DIR *d = opendir(tdir);

	if (!d) {
		line(rp, "FAIL", "templates", "%s: %s", tdir, strerror(errno));
		return;
	}
	while (al_config_template_next(d, name))
		check_image(rp, cfg, o, name, allowed(cfg, name));
	closedir(d);
	if (rp->unused)
		line(rp, "ok", "templates",
		     "%d more defined in %s, not built, not in "
		     "templates.allowed: none needed",
		     rp->unused, tdir);
	if (rp->images == 0)
		line(rp, "FAIL", "image", "no image usable by this user: no "
		     "job can run; fix: airlock image build %s (as root)",
		     cfg->templates.default_);
	if (rp->kvm_opens && rp->tcg_images && !rp->kvm_images &&
	    o->accel == SB_ACCEL_AUTO)
		line(rp, "warn", "kvm",
		     "/dev/kvm opens but every cached "
		     "verdict says TCG: KVM cannot boot the guest here "
		     "(nested virtualisation?), guest code runs 20-30x "
		     "slower; fix: enable nested virtualisation, or set "
		     "sandbox.accel = tcg to accept TCG and skip the probe");
}

/* The state dir must be writable, or creatable if missing (the nearest
 * existing parent writable): templates and sockets go there. Nothing is
 * created: doctor only looks. */
static void check_state(struct report *rp, const struct sb_options *o)
{
	char dir[PATH_MAX];
	char *slash;
	int r = 0;

	snprintf(dir, sizeof(dir), "%s", o->state_dir);
	while (access(dir, F_OK) < 0 && (slash = strrchr(dir, '/')) &&
	       slash != dir)
		*slash = 0;
	if (access(dir, W_OK) < 0)
		r = -errno;
	if (r < 0) {
		line(rp, "FAIL", "state", "%s: %s: %s: templates cannot be "
		     "saved; fix: set sandbox.state_dir to a dir this user "
		     "may write", o->state_dir, dir, strerror(-r));
		return;
	}
	check_space(rp, "state", o->state_dir, 2048);
}

static void finish(struct report *rp)
{
	json_t *j;

	if (!rp->json) {
		printf("\n%d problem(s), %d warning(s)\n", rp->fails,
		       rp->warns);
		return;
	}
	j = json_pack("{s:O, s:i, s:i, s:b}", "checks", rp->json, "problems",
		      rp->fails, "warnings", rp->warns, "ok", rp->fails == 0);
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(j);
}

static int cmd_doctor(struct al_cli *cli, int argc, char **argv)
{
	struct report rp = {0};
	char err[512], tdir[PATH_MAX];
	struct sb_options o;
	int r;

	(void)argc, (void)argv;
	if (al_sandbox_options(&cli->cfg, &o, err, sizeof(err)) < 0) {
		al_cli_error(cli, "%s", err);
		return AL_EXIT_USAGE;
	}
	r = al_config_templates_dir(&cli->cfg, tdir, sizeof(tdir));
	if (r < 0) {
		al_cli_error(cli, "templates dir: %s", strerror(-r));
		return AL_EXIT_USAGE;
	}
	if (cli->flag['j'] && !(rp.json = json_array())) {
		al_cli_error(cli, "out of memory");
		return AL_EXIT_USAGE;
	}
	check_user(&rp, &o);
	check_kvm(&rp, &o);
	check_vsock(&rp);
	check_cgroup(&rp, &o);
	check_jail(&rp, &o);
	check_network(&rp, &cli->cfg);
	check_leftovers(&rp, &o, cli->flag['f']);
	check_qemu(&rp, &o);
	check_redis(&rp, &cli->cfg);
	check_state(&rp, &o);
	check_space(&rp, "run", o.run_dir, 64);
	check_templates(&rp, &cli->cfg, &o, tdir);
	finish(&rp);
	json_decref(rp.json);
	return rp.fails ? AL_EXIT_FAIL : AL_EXIT_OK;
}

static const struct al_opt doctor_opts[] = {
    {"json", 'j', 0},
    {"fix", 'f', 0},
    {NULL, 0, 0},
};

const struct al_cmd al_cmd_doctor = {
	.name = "doctor",
	.summary = "check this host for this user: KVM, QEMU, Redis, jail, "
		   "network, space, images",
	.usage = "usage: airlock doctor [--json] [--fix] [--redis URL] "
		 "[--config PATH]\n\n"
		 "Checks what Airlock needs on this host, for the user running "
		 "it, and says\nwhat to do about anything missing. Each image "
		 "line shows the accelerator\nits jobs will use. Exit 1 when "
		 "jobs cannot run for this user. Leftovers of\ndead workers "
		 "(network links, VM cgroups, run dirs) are reported; --fix\n"
		 "removes them, as serve's sweep does.\n"
		 "\n"
		 "options:\n"
		 "      --json         one JSON object: checks, problems, "
		 "warnings, ok\n"
		 "      --fix          remove leftovers of dead workers\n",
	.flags = AL_CMD_CONFIG | AL_CMD_QUEUE,
	.options = doctor_opts,
	.run = cmd_doctor,
};
