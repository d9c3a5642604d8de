/* options.c: the sandbox's defaults (options.h) and the carrier they
 * resolve to on this host; sb_mkdirs() for the dirs they name; sb_log()
 * for the events the sandbox reports.
 *
 * Callers: the config (tools/config/sbconfig.c fills the options over these
 * defaults), the doctor, benchmarks and tests; sb_carrier_resolve() the VM
 * code (vm.c, template.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

/* The default log: stderr, as a program without a logger wants it. */
static void log_stderr(enum sb_log_level level, const char *msg)
{
	(void)level;
	fprintf(stderr, "airlock: %s\n", msg);
}

void sb_log(const struct sb_options *o, enum sb_log_level level,
	    const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	(o->log ? o->log : log_stderr)(level, line);
}

void sb_options_init(struct sb_options *o)
{
	const char *home = getenv("HOME");

	*o = (struct sb_options){
	    .qemu = "qemu-system-x86_64",
	    .accel = SB_ACCEL_AUTO,
	    .memory_mb = 1024,
	    .vcpus = 1,
	    .boot_timeout_ms = 60000,
	    .call_timeout_ms = 30000,
	    .ttl_ms = 0,
	    .vmm_overhead_mb = 256,
	    .tcg_tb_mb = 256,
	    .vmm_cpu_percent = 100,
	    .vmm_pids = 256,
	    .prestart = 1,
	    .warm_last = 1,
	    .net_ready = 1,
	    .warm_max_age_s = 600,
	    .warm_zygote = true,
	    .worker_memory_mb = SB_WORKER_MEMORY_MB,
	    .vmm_uid_base = 1200000,
	    .vmm_uid_count = 1024,
	    .log = log_stderr,
	};
	if (geteuid() == 0 || !home) {
		snprintf(o->state_dir, sizeof(o->state_dir), "%s",
			 SB_SYSTEM_DIR);
		snprintf(o->run_dir, sizeof(o->run_dir), "/run/airlock");
	} else {
		const char *xrd = getenv("XDG_RUNTIME_DIR");

		snprintf(o->state_dir, sizeof(o->state_dir),
			 "%s/.local/state/airlock", home);
		snprintf(o->system_dir, sizeof(o->system_dir), "%s",
			 SB_SYSTEM_DIR);
		if (xrd && xrd[0] == '/' &&
		    strlen(xrd) + 8 < sizeof(o->run_dir))
			snprintf(o->run_dir, sizeof(o->run_dir), "%s/airlock",
				 xrd);
		else
			snprintf(o->run_dir, sizeof(o->run_dir),
				 "/tmp/airlock-%u", (unsigned)geteuid());
	}
	/* QEMU is semi-trusted: as root, jail each one under a uid of its
	 * own (plus the kvm group for /dev/kvm); as anyone else there is no
	 * privilege to drop and no namespace to make (`airlock doctor`) */
	if (geteuid() == 0) {
		const struct group *kvm = getgrnam("kvm");

		o->jail = true;
		o->kvm_gid = kvm ? kvm->gr_gid : 0;
	}
}

enum sb_carrier sb_carrier_resolve(const struct sb_options *o)
{
	int fd;

	if (o->carrier != SB_CARRIER_AUTO)
		return o->carrier;
	fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return SB_CARRIER_SERIAL;
	close(fd);
	return SB_CARRIER_VSOCK;
}

int sb_mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -errno : 0;
}
