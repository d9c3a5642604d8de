/* test_jail.c: the VMM jail (sandbox/jail.c, lease.c): two VMMs of one
 * pool run under different uids, and a probe launched through the very
 * same launch path as QEMU (sb__vm_launch_argv: cgroup, uid lease, jail, the
 * sealed template memfd as fd 5) reports that it cannot see or touch the
 * other VMMs, their sockets, the template RAM, or any host network. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vm_internal.h" /* sb__vm_launch_argv, the probe's log pipe */
#include "vmtest.h"

#define PROBE AL_BINARY_DIR "/tests/vm/jail_probe"

static struct sb_options opts;

/* The value of `key=` in the probe's report ("" if absent). */
static const char *field(const char *report, const char *key)
{
	static char out[256];
	char pat[64];
	const char *at;
	size_t n;

	snprintf(pat, sizeof(pat), "\n%s=", key);
	at = strstr(report, pat);
	out[0] = 0;
	if (!at)
		return out;
	at += strlen(pat);
	n = strcspn(at, "\n");
	snprintf(out, sizeof(out), "%.*s", (int)n, at);
	return out;
}

/* The host uid of process `pid` (/proc/PID/status). */
static unsigned host_uid(pid_t pid)
{
	char path[64], line[256];
	unsigned uid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &uid) == 1)
			break;
	fclose(f);
	return uid;
}

/* Run the probe in a jail of its own; its report (stdout) in `out`. */
static unsigned run_probe(const struct sb_template *t, pid_t a, pid_t b,
			  char *out, size_t size)
{
	char mem[PATH_MAX + 8];
	struct machine_mem m = {.fd = t->mem_fd, .share = false};
	struct vmm_argv argv = {0};
	struct sb_vm *vm = NULL;
	struct pollfd p;
	size_t len = 1;
	unsigned uid;

	snprintf(mem, sizeof(mem), "%s/mem", t->dir);
	sb__vmm_arg(&argv, "%s", PROBE);
	sb__vmm_arg(&argv, "%d", (int)a);
	sb__vmm_arg(&argv, "%d", (int)b);
	sb__vmm_arg(&argv, "%s", mem);
	assert_int_equal(sb__vm_create(&opts, "probe", t->accel, &vm), 0);
	if (sb__vm_launch_argv(vm, &opts, &t->img, &m, -1, &argv) != 0)
		fail_msg("probe launch: %s", sb_vm_error(vm));
	sb__vmm_argv_release(&argv);
	uid = vm->uid;
	p = (struct pollfd){.fd = vm->pidfd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 20000), 1); /* it exited */
	out[0] = '\n'; /* field() looks for "\nkey=" */
	for (ssize_t n; len < size - 1 &&
			(n = read(vm->log_fd, out + len, size - 1 - len)) > 0;)
		len += (size_t)n;
	out[len] = 0;
	fprintf(stderr, "probe report:%s", out);
	sb_vm_destroy(vm);
	return uid;
}

static void test_two_vmms_apart(void **state)
{
	struct sb_template t;
	struct sb_pool pool;
	char report[8192];
	unsigned ua, ub, up;
	pid_t a, b;

	(void)state;
	if (!opts.jail)
		skip(); /* not root: no jail to test */
	assert_int_equal(sb_template_open(&opts, "python", &t), 0);
	sb_pool_init(&pool, &opts, &t, 2);
	sb_pool_fill(&pool);
	sb_pool_prepare(&pool); /* both QEMUs up and answering QMP */
	assert_int_equal(pool.n, 2);
	a = sb_vm_pid(pool.spare[0]);
	b = sb_vm_pid(pool.spare[1]);
	ua = host_uid(a);
	ub = host_uid(b);
	up = run_probe(&t, a, b, report, sizeof(report));
	/* a uid each, from the range, never root */
	assert_int_not_equal(ua, ub);
	assert_int_not_equal(up, ua);
	assert_int_not_equal(up, ub);
	for (unsigned u, i = 0; i < 3; i++) {
		u = i == 0 ? ua : i == 1 ? ub : up;
		assert_true(u >= opts.vmm_uid_base &&
			    u < opts.vmm_uid_base + opts.vmm_uid_count);
	}
	assert_string_equal(field(report, "end"), "1");
	assert_int_equal(strtoul(field(report, "uid"), NULL, 10), up);
	assert_int_equal(strtoul(field(report, "gid"), NULL, 10), up);
	/* pid 1 of its own pid namespace, seeing only itself */
	assert_string_equal(field(report, "pid"), "1");
	assert_string_equal(field(report, "procs"), "1,");
	assert_string_equal(field(report, "nnp"), "1");
	assert_string_equal(field(report, "capbset_sys_admin"), "0");
	/* the other VMMs: no such process from in here */
	assert_string_equal(field(report, "kill1"), "ESRCH");
	assert_string_equal(field(report, "kill2"), "ESRCH");
	assert_string_equal(field(report, "ptrace1"), "ESRCH");
	assert_string_equal(field(report, "ptrace2"), "ESRCH");
	/* no socket file anywhere in the jail */
	assert_string_equal(field(report, "sockets"), "0");
	/* template RAM: the file is out of sight, the memfd sealed */
	assert_string_equal(field(report, "mem_open"), "ENOENT");
	assert_string_equal(field(report, "memfd_write"), "EPERM");
	assert_string_equal(field(report, "memfd_pwrite"), "EPERM");
	assert_string_equal(field(report, "memfd_reopen_write"), "EPERM");
	assert_string_equal(field(report, "memfd_mmap_shared"), "EPERM");
	assert_string_equal(field(report, "memfd_truncate"), "EPERM");
	/* no network but its own loopback */
	assert_string_equal(field(report, "ifaces"), "lo,");
	assert_string_equal(field(report, "hostname"), "airlock-vm");
	/* a read-only root with nothing of the host's /etc */
	assert_string_equal(field(report, "root_write"), "EROFS");
	assert_string_equal(field(report, "usr_write"), "EROFS");
	assert_string_equal(field(report, "etc_passwd"), "ENOENT");
	/* both VMMs were untouched: they still restore and run */
	for (int i = 0; i < 2; i++) {
		struct sb_vm *vm = NULL;

		assert_int_equal(sb_pool_restore(&pool, &vm), 0);
		sb_vm_destroy(vm);
	}
	sb_pool_release(&pool);
}

/* Leases: every live VMM holds its own; a released uid is free again. */
static void test_uid_leases(void **state)
{
	struct sb_template t;
	struct sb_vm *vm[3] = {0};
	struct sb_options o = opts;

	(void)state;
	if (!opts.jail)
		skip();
	/* a range of two uids: the third VMM has none */
	o.vmm_uid_count = 2;
	assert_int_equal(sb_template_open(&o, "python", &t), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sb_vm_restore(&o, &t, &vm[i]), 0);
	assert_int_not_equal(vm[0]->uid, vm[1]->uid);
	assert_int_equal(sb_vm_restore(&o, &t, &vm[2]), -EAGAIN);
	assert_non_null(strstr(sb_vm_error(vm[2]), "jail"));
	sb_vm_destroy(vm[2]);
	sb_vm_destroy(vm[0]);
	assert_int_equal(sb_vm_restore(&o, &t, &vm[2]), 0);
	sb_vm_destroy(vm[1]);
	sb_vm_destroy(vm[2]);
	/* a range including uid 0 is refused */
	o.vmm_uid_base = 0;
	assert_int_equal(sb_vm_restore(&o, &t, &vm[0]), -EINVAL);
	sb_vm_destroy(vm[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_vmms_apart),
		cmocka_unit_test(test_uid_leases),
	};

	vmtest_options(&opts);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
