/* bench_vm.c: how fast a VM is ready, and what an idle clone costs.
 *
 *   airlock-bench-vm [--template NAME] [--clones N] [--cold N] [--alive N]
 *                    [--prestart N] [--json FILE] [--state-dir DIR]
 *
 * Measures, in one run on this machine:
 *   cold boot      QEMU start -> agent answered hello and was reseeded
 *   restore        request -> agent ready, for N clones one after another,
 *                  with pre-started VMMs (the worker's path: prepared
 *                  between clones) and without
 *   per clone      of the pre-started restores: state load (migrate-
 *                  incoming -> RESUME event), the guest's first exchange
 *                  (RESUME -> reseed answered), TCG blocks translated
 *                  (HMP info jit) and QEMU's host page faults
 *   first output   request -> a `print(6*7)` step's result, both ways
 *   steps          a `true` step, first and second in a clone (10 clones)
 *   memory         PSS and RSS of each QEMU with `alive` idle clones up
 *                  at once (smaps_rollup; PSS shares the template pages)
 *   hand-off       for `true` and `python3 -c 'print(6*7)'`, today's path
 *                  (pre-started VMM, restored for the job) beside a warm
 *                  clone (restored and warmed before the job) taken with
 *                  two round trips (reseed, then setup) and with one
 *                  (setup carrying the reseed, the worker's path): job
 *                  received -> first step sent, the first step's time
 *                  and the second's in that clone
 *   idle warm      a warm clone waiting 10 s: its PSS and CPU use
 * Prints a table and writes the figures as JSON. Needs built images.
 *
 * What it asks of a clone's insides (TCG blocks, the RESUME event, one
 * agent round trip by kind) goes through sandbox.h's probes (probe.c),
 * everything else through the sb_vm_* accessors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opts.h"
#include "sandbox.h"

struct series {
	double *v; /* samples, ms */
	size_t n;  /* samples taken */
};

/* A clock in fractional milliseconds: the figures are printed to 0.1 ms,
 * finer than al_now_ms()'s whole milliseconds. CLOCK_MONOTONIC times the
 * phases; CLOCK_REALTIME is set against QEMU's QMP event timestamps. */
static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile. */
static double pct(struct series *s, double p)
{
	size_t k;

	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(double), cmp_double);
	k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
	return s->v[(k ? k : 1) - 1];
}

static void add(struct series *s, double v)
{
	s->v[s->n++] = v;
}

/* Run argv as a step; it must end OK with `out_len` bytes of stdout. */
static int run_cmd(struct sb_vm *vm, char **argv, size_t out_len)
{
	struct al_step step = {.argv = argv};
	struct al_limits lim;
	struct al_step_result r = {0};
	int rc;

	while (argv[step.argc])
		step.argc++;
	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	rc = sb_vm_run_step(vm, &step, &lim, 30000, &r);
	if (rc == 0 && (r.status != AL_OK || r.stdout_.len != out_len))
		rc = -EPROTO;
	al_step_result_release(&r);
	return rc;
}

/* The first output: python3's print(6*7), or with --hello-sh (a
 * template without python: c, node) the shell's echo. */
static char *hello_py[] = {"python3", "-c", "print(6*7)", NULL};
static char *hello_sh[] = {"sh", "-c", "echo 42", NULL};

static int hello_step(struct sb_vm *vm, bool sh)
{
	return run_cmd(vm, sh ? hello_sh : hello_py, 3);
}

/* smaps_rollup of a process: Pss and Rss in KiB. */
static int mem_of(pid_t pid, long *pss, long *rss)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	*pss = *rss = 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Pss: %ld kB", pss);
		sscanf(line, "Rss: %ld kB", rss);
	}
	fclose(f);
	return 0;
}

/* Where an idle QEMU's memory is (kB, from /proc/PID/smaps): the guest
 * RAM mapping (the template's memfd, MAP_PRIVATE) split into the pages
 * this clone wrote (its own copies: `Anonymous`) and the template's pages
 * it only mapped (memfd pages resident whether or not a clone maps them;
 * smaps calls them Private_Dirty while one clone is their only mapper,
 * and PSS splits them across clones), the TCG code buffer (the one rwx
 * anonymous mapping), other anonymous memory (heap: softmmu TLBs, TB
 * hash, device state) and file mappings (QEMU and its libraries). */
enum part { M_RAM, M_TMPL, M_TCG, M_ANON, M_FILE, M_PARTS };
static const char *const part_name[M_PARTS] = {
	"guest RAM written", "template pages", "TCG code", "heap/anon",
	"files"};
struct mem_parts {
	long pss[M_PARTS];   /* proportional set size */
	long dirty[M_PARTS]; /* Private_Dirty */
};

/* The part a smaps header line's mapping belongs to. */
static enum part part_of(const char *hdr)
{
	char perms[8] = "", name[256] = "";

	sscanf(hdr, "%*s %7s %*s %*s %*s %255[^\n]", perms, name);
	if (strstr(name, "memfd:airlock-template"))
		return M_RAM;
	if (!name[0] && !strcmp(perms, "rwxp"))
		return M_TCG;
	return name[0] == '/' ? M_FILE : M_ANON;
}

static int mem_parts_of(pid_t pid, struct mem_parts *m)
{
	char path[64], line[512];
	enum part cur = M_ANON;
	long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(m, 0, sizeof(*m));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) /* a mapping */
			cur = part_of(line);
		/* the RAM mapping: its own copies are `Anonymous` (one
		 * mapper: PSS = size), the rest are template pages */
		if (cur == M_RAM && sscanf(line, "Anonymous: %ld kB", &v) == 1) {
			m->pss[M_TMPL] -= v;
			m->dirty[M_TMPL] -= v;
			m->pss[M_RAM] += v;
			m->dirty[M_RAM] += v;
		}
		if (sscanf(line, "Pss: %ld kB", &v) == 1)
			m->pss[cur == M_RAM ? M_TMPL : cur] += v;
		if (sscanf(line, "Private_Dirty: %ld kB", &v) == 1)
			m->dirty[cur == M_RAM ? M_TMPL : cur] += v;
	}
	fclose(f);
	return 0;
}

struct opts {
	const char *tmpl, *json;
	int clones, cold, alive, handoffs;
	bool handoff_only; /* skip the cold/restore/memory sections */
	bool idle_only;	   /* only the idle warm clone's memory and CPU */
	bool hello_sh;	   /* first output from sh, not python3 */
};

static int bench_cold(const struct sb_options *o, const struct opts *b,
		      struct series *ready, struct series *first)
{
	struct sb_image img;
	int r = sb_image_open(o, b->tmpl, &img);

	if (r < 0)
		return r;
	for (int i = 0; i < b->cold; i++) {
		struct sb_vm *vm = NULL;
		double t0 = now_ms();

		r = sb_vm_boot(o, &img, &vm);
		if (r == 0) {
			add(ready, now_ms() - t0);
			r = hello_step(vm, b->hello_sh);
			add(first, now_ms() - t0);
		}
		if (r < 0)
			fprintf(stderr, "cold boot: %s\n", sb_vm_error(vm));
		sb_vm_destroy(vm);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Where a pre-started restore's time goes, per clone. */
struct phases {
	struct series load;   /* migrate-incoming -> guest running (RESUME) */
	struct series guest;  /* guest running -> reseed answered */
	struct series blocks; /* TCG blocks translated by then (0 on KVM) */
	struct series faults; /* host page faults QEMU took in the restore */
};

/* /proc/PID/stat from the field after the command name (which may hold
 * anything, spaces and parentheses too), NUL-terminated; NULL if gone. */
static const char *proc_stat(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p ? p + 2 : NULL;
}

/* Minor page faults of a process so far (field 10 of /proc/PID/stat). */
static long minor_faults(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	long v = -1;

	if (p && sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %ld", &v) != 1)
		v = -1;
	return v;
}

static void record_phases(struct sb_vm *vm, double ready_rt, long faults0,
			  struct phases *ph)
{
	double resume;

	add(&ph->faults, faults0 < 0 ? 0 : (double)(minor_faults(sb_vm_pid(vm)) -
						     faults0));
	add(&ph->blocks, (double)sb_vm_tcg_blocks(vm));
	if (sb_vm_resume_rt_ms(vm, 1000, &resume) < 0) {
		add(&ph->load, 0);
		add(&ph->guest, 0);
		return;
	}
	add(&ph->load, resume - (double)sb_vm_load_rt_us(vm) / 1e3);
	add(&ph->guest, ready_rt - resume);
}

/* A pause for the pool's refill to start up, then get it ready to load:
 * what a worker's pool does while a real job runs. */
static void pause_prepare(struct sb_pool *pool)
{
	struct timespec pause = {0, 300 * 1000000};

	nanosleep(&pause, NULL);
	sb_pool_prepare(pool);
}

/* Run argv in vm, its time into s. */
static int timed_cmd(struct sb_vm *vm, char **argv, struct series *s)
{
	double t0 = now_ms();
	int r = run_cmd(vm, argv, 0);

	add(s, now_ms() - t0);
	return r;
}

/* Done with one clone: say why it failed (r < 0), destroy it. */
static void vm_done(struct sb_vm *vm, int r, const char *what)
{
	if (r < 0)
		fprintf(stderr, "%s: %s\n", what, sb_vm_error(vm));
	sb_vm_destroy(vm);
}

/* One line of the report per row, "what  p50  p99", up to a NULL what. */
struct row {
	const char *what;
	struct series *s;
};

static void print_rows(const struct row *rows)
{
	for (const struct row *r = rows; r->what; r++)
		printf("%-34s %10.1f %10.1f\n", r->what, pct(r->s, 50),
		       pct(r->s, 99));
}

static int bench_restore(const struct sb_options *o, const struct opts *b,
			 const struct sb_template *t, struct phases *ph,
			 struct series *ready, struct series *first)
{
	bool pooled = ph != NULL;
	struct sb_pool pool;
	int r = 0;

	sb_pool_init(&pool, o, t, pooled ? o->prestart : 0);
	sb_pool_fill(&pool);
	for (int i = 0; i < b->clones && r == 0; i++) {
		struct sb_vm *vm = NULL;
		long faults0;
		double t0;

		/* let the refill start up and be prepared, as the worker does
		 * while a real job runs */
		if (pooled)
			pause_prepare(&pool);
		faults0 = pool.n ? minor_faults(sb_vm_pid(pool.spare[0])) : -1;
		t0 = now_ms();
		r = sb_pool_restore(&pool, &vm);
		if (r == 0) {
			double rt = clock_ms(CLOCK_REALTIME);

			add(ready, now_ms() - t0);
			if (ph)
				record_phases(vm, rt, faults0, ph);
			r = hello_step(vm, b->hello_sh);
			add(first, now_ms() - t0);
		}
		vm_done(vm, r, "restore");
	}
	sb_pool_release(&pool);
	return r;
}

/* A step's cost in a fresh clone: `true` run twice in each of up to 10
 * clones. The first pays for TCG translating fork, exec, the dynamic
 * loader and libc in this new QEMU; the second shows the rest. */
static int bench_steps(const struct sb_options *o, const struct opts *b,
		       const struct sb_template *t, struct series *first,
		       struct series *second)
{
	char *argv[] = {"true", NULL};
	struct sb_pool pool;
	int r = 0;

	sb_pool_init(&pool, o, t, o->prestart);
	sb_pool_fill(&pool);
	for (int i = 0; i < b->clones && i < 10 && r == 0; i++) {
		struct sb_vm *vm = NULL;

		pause_prepare(&pool);
		r = sb_pool_restore(&pool, &vm);
		if (r == 0)
			r = timed_cmd(vm, argv, first);
		if (r == 0)
			r = timed_cmd(vm, argv, second);
		vm_done(vm, r, "steps");
	}
	sb_pool_release(&pool);
	return r;
}

static int bench_memory(const struct sb_options *o, const struct opts *b,
			const struct sb_template *t, double *pss_avg,
			double *rss_avg)
{
	struct sb_vm **vm = calloc((size_t)b->alive, sizeof(*vm));
	long pss_sum = 0, rss_sum = 0;
	int r = 0, n = 0;

	for (; n < b->alive && r == 0; n++)
		r = sb_vm_restore(o, t, &vm[n]);
	for (int i = 0; i < n && r == 0; i++) {
		long pss, rss;

		r = mem_of(sb_vm_pid(vm[i]), &pss, &rss);
		pss_sum += pss;
		rss_sum += rss;
	}
	for (int i = 0; i < n; i++)
		sb_vm_destroy(vm[i]);
	free(vm);
	*pss_avg = n ? (double)pss_sum / n / 1024.0 : 0;
	*rss_avg = n ? (double)rss_sum / n / 1024.0 : 0;
	return r;
}

/* Hand-off figures of one path for one command. */
struct handoff {
	struct series handoff; /* job received -> first step sent */
	struct series first;   /* the first step */
	struct series second;  /* the same step again in that clone */
};

/* The hand-off paths side by side: today's restore, a warm clone with
 * its reseed and the job's setup as two round trips (as before proto v2),
 * and a warm clone whose setup carries the reseed (one round trip). */
enum path { P_TODAY, P_WARM2, P_WARM, P_COUNT };

/* A VM for a job as a worker gets it: a warm clone (sb_pool_take after
 * sb_pool_warm, the warm-up off the clock) or today's restore through a
 * prepared pre-started VMM; then the job's setup (sent by sb_pool_take
 * itself on P_WARM: sb_vm_setup then sends nothing). */
static int handoff_vm(struct sb_pool *pool, enum path w, struct sb_vm **vm,
		      double *ms)
{
	struct al_limits lim;
	double t0;
	int r;

	if (w != P_TODAY && sb_pool_warm(pool, NULL, NULL) < 0)
		return -EIO;
	/* the next spare VMM has started up (the worker's next idle pass
	 * prepares it too): a job then meets an idle worker, as it does
	 * after a gap */
	sb_pool_prepare(pool);
	nanosleep(&(struct timespec){0, 200 * 1000000}, NULL);
	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	t0 = now_ms();
	r = w == P_TODAY ? sb_pool_restore(pool, vm)
			 : sb_pool_take(pool, w == P_WARM ? &lim : NULL, vm);
	if (r == 0)
		r = sb_vm_setup(*vm, &lim);
	*ms = now_ms() - t0;
	return r;
}

/* One job on path w: hand-off, then the command twice in that VM. */
static int handoff_one(struct sb_pool *pool, enum path w, char **argv,
		       size_t out_len, struct handoff *h)
{
	struct sb_vm *vm = NULL;
	double t0, ms = 0;
	int r = handoff_vm(pool, w, &vm, &ms);

	if (r == 0) {
		add(&h->handoff, ms);
		t0 = now_ms();
		r = run_cmd(vm, argv, out_len);
		add(&h->first, now_ms() - t0);
	}
	if (r == 0) {
		t0 = now_ms();
		r = run_cmd(vm, argv, out_len);
		add(&h->second, now_ms() - t0);
	}
	if (r < 0)
		fprintf(stderr, "hand-off: %s\n", sb_vm_error(vm));
	sb_vm_destroy(vm);
	return r;
}

/* The paths take turns, job by job, so that a change in the machine's
 * load over the run touches them alike: their ratios hold. */
static int bench_handoff(const struct sb_options *o, const struct opts *b,
			 const struct sb_template *t, char **argv,
			 size_t out_len, struct handoff h[P_COUNT])
{
	struct sb_pool pool[P_COUNT];
	int r = 0;

	for (int w = 0; w < P_COUNT; w++) {
		sb_pool_init(&pool[w], o, t, o->prestart);
		sb_pool_set_warm(&pool[w], w != P_TODAY, 0);
		sb_pool_fill(&pool[w]);
	}
	for (int i = 0; i < b->handoffs && r == 0; i++)
		for (int w = 0; w < P_COUNT && r == 0; w++)
			r = handoff_one(&pool[w], w, argv, out_len, &h[w]);
	for (int w = 0; w < P_COUNT; w++)
		sb_pool_release(&pool[w]);
	return r;
}

/* What one agent round trip costs on a warm clone, by request: ping (the
 * channel and the agent's loop alone), reseed, setup, and setup carrying
 * the reseed (the hand-off), and a ping after the guest idled 200 ms (as
 * a hand-off finds it); TRIPS of each, in turns. */
#define TRIPS 10
enum trip { T_PING, T_RESEED, T_SETUP, T_BOTH, T_IDLE, T_COUNT };
static const char *const trip_name[T_COUNT] = {
	"ping", "reseed", "setup", "setup+reseed", "ping after 200 ms idle"};

static int trip_one(struct sb_vm *vm, const struct sb_options *o,
		    const struct al_limits *lim, enum trip k)
{
	static const enum sb_trip kind[T_COUNT] = {
	    [T_PING] = SB_TRIP_PING,
	    [T_RESEED] = SB_TRIP_RESEED,
	    [T_SETUP] = SB_TRIP_SETUP,
	    [T_BOTH] = SB_TRIP_SETUP_RESEED,
	    [T_IDLE] = SB_TRIP_PING,
	};

	return sb_vm_trip(vm, o, lim, kind[k], 2000);
}

static int bench_trips(const struct sb_options *o, const struct sb_template *t,
		       struct series s[T_COUNT])
{
	struct sb_pool pool;
	struct sb_vm *vm = NULL;
	struct al_limits lim;
	int r;

	al_job_limits(&(struct al_job){0}, al_policy_default(), &lim);
	sb_pool_init(&pool, o, t, 0);
	sb_pool_set_warm(&pool, 1, 0);
	r = sb_pool_warm(&pool, NULL, NULL);
	if (r == 1)
		r = sb_pool_take(&pool, &lim, &vm);
	for (int i = 0; i < TRIPS && r == 0; i++)
		for (int k = 0; k < T_COUNT && r == 0; k++) {
			double t0;

			if (k == T_IDLE) /* as the hand-off meets it */
				nanosleep(&(struct timespec){0, 200000000},
					  NULL);
			t0 = now_ms();
			r = trip_one(vm, o, &lim, (enum trip)k);
			add(&s[k], now_ms() - t0);
		}
	sb_vm_destroy(vm);
	sb_pool_release(&pool);
	return r < 0 ? r : 0;
}

/* utime + stime of a process, clock ticks. */
static long cpu_ticks(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat(pid, buf, sizeof(buf));
	unsigned long ut = 0, st = 0;

	if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

/* sb_pool_warm's `stop`: let the restore happen, stop the warm-up. */
static bool stop_after_restore(void *arg)
{
	return (*(int *)arg)++ > 0;
}

/* One warm clone (or, !warm, a clone restored the same way and not
 * warmed up) left idle for 10 s: PSS (MiB), CPU (% of a core), parts. */
static int bench_idle(const struct sb_options *o, const struct sb_template *t,
		      bool warm, double *pss_mib, double *cpu_pct,
		      struct mem_parts *mp)
{
	struct sb_pool pool;
	long pss = 0, rss = 0, c0, c1;
	int asked = 0;
	double t0;
	pid_t pid;
	int r;

	sb_pool_init(&pool, o, t, 0);
	sb_pool_set_warm(&pool, 1, 0);
	r = sb_pool_warm(&pool, warm ? NULL : stop_after_restore, &asked);
	if (r < 1) {
		sb_pool_release(&pool);
		return r < 0 ? r : -EIO;
	}
	pid = sb_vm_pid(pool.warm[0]);
	sleep(2); /* what the warm-up left pending settles */
	t0 = now_ms();
	c0 = cpu_ticks(pid);
	sleep(10);
	c1 = cpu_ticks(pid);
	*cpu_pct = (double)(c1 - c0) * 1000.0 / sysconf(_SC_CLK_TCK) /
		   (now_ms() - t0) * 100.0;
	r = mem_of(pid, &pss, &rss);
	if (r == 0)
		r = mem_parts_of(pid, mp);
	*pss_mib = (double)pss / 1024.0;
	sb_pool_release(&pool);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: airlock-bench-vm [--template NAME] [--clones N] "
		   "[--cold N] [--alive N]\n"
		   "                        [--prestart N] [--json FILE] "
		   "[--state-dir DIR] [--accel auto|kvm|tcg]\n"
		   "                        [--handoffs N] [--handoff-only] "
		   "[--idle-only] [--hello-sh]\n");
}

static int parse(int argc, char **argv, struct sb_options *o, struct opts *b)
{
	static const struct al_opt lo[] = {
	    {"template", 't', AL_OPT_ARG},
	    {"clones", 'n', AL_OPT_ARG},
	    {"cold", 'c', AL_OPT_ARG},
	    {"alive", 'a', AL_OPT_ARG},
	    {"prestart", 'p', AL_OPT_ARG},
	    {"json", 'j', AL_OPT_ARG},
	    {"state-dir", 's', AL_OPT_ARG},
	    {"accel", 'x', AL_OPT_ARG},
	    {"handoffs", 'o', AL_OPT_ARG},
	    {"handoff-only", 'O', 0},
	    {"idle-only", 'I', 0},
	    {"hello-sh", 'S', 0},
	    {"help", 'h', AL_OPT_SHORT},
	    {NULL, 0, 0},
	};
	int c;

	while ((c = al_opts_next(argc, argv, lo)) != -1) {
		switch (c) {
		case 't': b->tmpl = optarg; break;
		case 'n': b->clones = atoi(optarg); break;
		case 'c': b->cold = atoi(optarg); break;
		case 'a': b->alive = atoi(optarg); break;
		case 'p': o->prestart = (uint32_t)atoi(optarg); break;
		case 'j': b->json = optarg; break;
		case 'o': b->handoffs = atoi(optarg); break;
		case 'O': b->handoff_only = true; break;
		case 'I': b->idle_only = b->handoff_only = true; break;
		case 'S': b->hello_sh = true; break;
		case 's': snprintf(o->state_dir, sizeof(o->state_dir), "%s", optarg); break;
		case 'x':
			o->accel = !strcmp(optarg, "kvm")   ? SB_ACCEL_KVM
				   : !strcmp(optarg, "tcg") ? SB_ACCEL_TCG
							    : SB_ACCEL_AUTO;
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (b->clones < 1 || b->cold < 1 || b->alive < 1 || b->clones > 100000 ||
	    b->cold > 1000 || b->alive > 1000 || o->prestart < 1 ||
	    b->handoffs < 1 || b->handoffs > 1000) {
		fprintf(stderr, "airlock-bench-vm: counts must be positive\n");
		return -1;
	}
	return 0;
}

static const char *const cmd_name[2] = {"true", "print"};
static const char *const path_name[P_COUNT] = {"today", "warm2rt", "warm"};

/* Everything the hand-off section measures. */
struct handoff_figs {
	struct handoff h[2][P_COUNT]; /* [command][path] */
	struct series trips[T_COUNT]; /* single round trips */
	struct mem_parts mp;	      /* idle warm clone, by part */
	double pss, cpu;	      /* idle warm clone: MiB, % of a core */
};

static void print_parts(const char *what, double pss, double cpu,
			const struct mem_parts *mp)
{
	printf("%s: PSS %.1f MiB, CPU %.2f%% of a core\n", what, pss, cpu);
	for (int k = 0; k < M_PARTS; k++)
		printf("  %-17s PSS %7.1f MiB, private dirty %7.1f MiB\n",
		       part_name[k], mp->pss[k] / 1024.0, mp->dirty[k] / 1024.0);
}

static void print_handoff(const struct opts *b, struct handoff_figs *x)
{
	static const char *const what[] = {"job received -> step",
					   "first step", "second step"};

	printf("\nhand-off, %d jobs each (ms, p50)   today  warm,2 RT  "
	       "warm,1 RT\n", b->handoffs);
	for (int c = 0; c < 2; c++)
		for (int k = 0; k < 3; k++) {
			printf("  %-5s %-22s", cmd_name[c], what[k]);
			for (int w = 0; w < P_COUNT; w++) {
				struct handoff *h = &x->h[c][w];
				struct series *sr[] = {&h->handoff, &h->first,
						       &h->second};

				printf(" %10.1f", pct(sr[k], 50));
			}
			printf("\n");
		}
	printf("one round trip to a warm clone (ms, p50 of %d):", TRIPS);
	for (int k = 0; k < T_COUNT; k++)
		printf(" %s %.1f%s", trip_name[k], pct(&x->trips[k], 50),
		       k + 1 < T_COUNT ? "," : "\n");
	printf("print(6*7) first/second step: %.2fx today, %.2fx warm\n",
	       pct(&x->h[1][P_TODAY].first, 50) /
		   pct(&x->h[1][P_TODAY].second, 50),
	       pct(&x->h[1][P_WARM].first, 50) /
		   pct(&x->h[1][P_WARM].second, 50));
}

static void json_handoff(FILE *f, const struct opts *b,
			 struct handoff_figs *x)
{
	fprintf(f, "\"handoff\":{\"jobs\":%d,", b->idle_only ? 0 : b->handoffs);
	for (int c = 0; c < 2 && !b->idle_only; c++)
		for (int w = 0; w < P_COUNT; w++) {
			struct handoff *h = &x->h[c][w];

			fprintf(f,
				"\"%s_%s\":{\"handoff_ms\":{\"p50\":%.1f,"
				"\"p99\":%.1f},\"first_step_ms\":{\"p50\":%.1f,"
				"\"p99\":%.1f},\"second_step_ms\":{\"p50\":"
				"%.1f,\"p99\":%.1f}},",
				cmd_name[c], path_name[w], pct(&h->handoff, 50),
				pct(&h->handoff, 99), pct(&h->first, 50),
				pct(&h->first, 99), pct(&h->second, 50),
				pct(&h->second, 99));
		}
	for (int k = 0; k < T_COUNT && !b->idle_only; k++)
		fprintf(f, "\"trip_%s_ms\":%.1f,", k == T_BOTH ? "setup_reseed"
			: k == T_IDLE ? "ping_idle" : trip_name[k],
			pct(&x->trips[k], 50));
	fprintf(f, "\"idle_warm_pss_mib\":%.1f,\"idle_warm_cpu_pct\":%.2f,"
		"\"idle_warm_parts\":{", x->pss, x->cpu);
	for (int k = 0; k < M_PARTS; k++)
		fprintf(f, "%s\"%s\":{\"pss_mib\":%.1f,\"private_dirty_mib\":"
			"%.1f}", k ? "," : "", part_name[k],
			x->mp.pss[k] / 1024.0, x->mp.dirty[k] / 1024.0);
	fprintf(f, "}}");
}

/* --idle-only: a restored clone and a warm one, idle, side by side. */
static int idle_report(const struct sb_options *o, const struct sb_template *t,
		       struct handoff_figs *x)
{
	struct mem_parts rp = {0};
	double rpss = 0, rcpu = 0;
	int r = bench_idle(o, t, false, &rpss, &rcpu, &rp);

	if (r == 0)
		r = bench_idle(o, t, true, &x->pss, &x->cpu, &x->mp);
	if (r == 0)
		print_parts("idle restored clone (no warm-up)", rpss, rcpu, &rp);
	return r;
}

/* The hand-off section: the three paths for `true` and print(6*7), the
 * single round trips, the idle warm clone; a table on stdout and a JSON
 * object on `f`. */
static int handoff_report(const struct sb_options *o, const struct opts *b,
			  const struct sb_template *t, FILE *f)
{
	char *tr[] = {"true", NULL};
	char **py = b->hello_sh ? hello_sh : hello_py;
	struct handoff_figs *x = calloc(1, sizeof(*x));
	size_t n = (size_t)b->handoffs;
	int r = x ? 0 : -ENOMEM;

	for (int c = 0; c < 2 && r == 0; c++)
		for (int w = 0; w < P_COUNT; w++) {
			x->h[c][w].handoff.v = calloc(n, sizeof(double));
			x->h[c][w].first.v = calloc(n, sizeof(double));
			x->h[c][w].second.v = calloc(n, sizeof(double));
		}
	for (int k = 0; k < T_COUNT && r == 0; k++)
		x->trips[k].v = calloc(TRIPS, sizeof(double));
	if (r == 0 && b->idle_only)
		r = idle_report(o, t, x);
	if (r == 0 && !b->idle_only) {
		r = bench_handoff(o, b, t, tr, 0, x->h[0]);
		if (r == 0)
			r = bench_handoff(o, b, t, py, 3, x->h[1]);
		if (r == 0)
			r = bench_trips(o, t, x->trips);
		if (r == 0)
			r = bench_idle(o, t, true, &x->pss, &x->cpu, &x->mp);
		if (r == 0)
			print_handoff(b, x);
	}
	if (r == 0) {
		print_parts("idle warm clone", x->pss, x->cpu, &x->mp);
		json_handoff(f, b, x);
	}
	free(x); /* the series' arrays live until exit, as main's do */
	return r;
}

int main(int argc, char **argv)
{
	struct opts b = {"python", "bench-vm.json", 50, 5, 20, 10, false, false,
			 false};
	struct series cold = {0}, coldf = {0}, pool = {0}, poolf = {0};
	struct series bare = {0}, baref = {0};
	struct phases ph = {0};
	struct series true1 = {0}, true2 = {0};
	double pss = 0, rss = 0;
	struct sb_template t;
	struct sb_options o;
	FILE *f;
	int r;

	sb_options_init(&o);
	if (parse(argc, argv, &o, &b) < 0)
		return 2;
	cold.v = calloc((size_t)b.cold, sizeof(double));
	coldf.v = calloc((size_t)b.cold, sizeof(double));
	pool.v = calloc((size_t)b.clones, sizeof(double));
	poolf.v = calloc((size_t)b.clones, sizeof(double));
	bare.v = calloc((size_t)b.clones, sizeof(double));
	baref.v = calloc((size_t)b.clones, sizeof(double));
	ph.load.v = calloc((size_t)b.clones, sizeof(double));
	ph.guest.v = calloc((size_t)b.clones, sizeof(double));
	ph.blocks.v = calloc((size_t)b.clones, sizeof(double));
	ph.faults.v = calloc((size_t)b.clones, sizeof(double));
	true1.v = calloc(10, sizeof(double));
	true2.v = calloc(10, sizeof(double));
	r = sb_template_open(&o, b.tmpl, &t);
	if (r < 0) {
		fprintf(stderr, "airlock-bench-vm: template %s: %s\n", b.tmpl,
			strerror(-r));
		return 1;
	}
	if (b.handoff_only) {
		f = fopen(b.json, "we");
		if (!f) {
			perror(b.json);
			return 1;
		}
		fprintf(f, "{\"template\":\"%s\",\"accel\":\"%s\",", b.tmpl,
			al_accel_name(t.accel));
		r = handoff_report(&o, &b, &t, f);
		fprintf(f, "}\n");
		fclose(f);
		printf("json: %s\n", b.json);
		return r < 0 ? 1 : 0;
	}
	if (bench_cold(&o, &b, &cold, &coldf) < 0 ||
	    bench_restore(&o, &b, &t, &ph, &pool, &poolf) < 0 ||
	    bench_restore(&o, &b, &t, NULL, &bare, &baref) < 0 ||
	    bench_steps(&o, &b, &t, &true1, &true2) < 0 ||
	    bench_memory(&o, &b, &t, &pss, &rss) < 0)
		return 1;

	printf("airlock-bench-vm: template %s, accel %s, %u MiB guest, "
	       "%d clones, %d cold boots, %d alive\n\n",
	       b.tmpl, al_accel_name(t.accel), o.memory_mb, b.clones, b.cold,
	       b.alive);
	printf("%-34s %10s %10s\n", "measure (ms)", "p50", "p99");
	print_rows((const struct row[]){
	    {"cold boot -> agent ready", &cold},
	    {"cold boot -> first output", &coldf},
	    {"restore (pre-started) -> ready", &pool},
	    {"restore (pre-started) -> output", &poolf},
	    {"restore (fresh QEMU) -> ready", &bare},
	    {"restore (fresh QEMU) -> output", &baref},
	    {"step `true`, first in a clone", &true1},
	    {"step `true`, second in a clone", &true2},
	    {NULL, NULL},
	});
	printf("\npre-started restore, per clone        p50        p99\n");
	printf("%-34s %10.1f %10.1f\n", "  state load (ms)", pct(&ph.load, 50),
	       pct(&ph.load, 99));
	printf("%-34s %10.1f %10.1f\n", "  guest's first exchange (ms)",
	       pct(&ph.guest, 50), pct(&ph.guest, 99));
	printf("%-34s %10.0f %10.0f\n", "  TCG blocks translated",
	       pct(&ph.blocks, 50), pct(&ph.blocks, 99));
	printf("%-34s %10.0f %10.0f\n", "  host page faults (QEMU)",
	       pct(&ph.faults, 50), pct(&ph.faults, 99));
	printf("\ncold/restore ratio (p50, ready): %.1fx pre-started, %.1fx "
	       "fresh QEMU\n",
	       pct(&cold, 50) / pct(&pool, 50), pct(&cold, 50) / pct(&bare, 50));
	printf("idle clone memory (%d alive): PSS %.1f MiB, RSS %.1f MiB\n",
	       b.alive, pss, rss);

	f = fopen(b.json, "we");
	if (!f) {
		perror(b.json);
		return 1;
	}
	fprintf(f,
		"{\"template\":\"%s\",\"accel\":\"%s\",\"memory_mb\":%u,"
		"\"clones\":%d,\"cold_boots\":%d,\"alive\":%d,"
		"\"cold_ready_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"cold_first_output_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"restore_prestarted_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"restore_prestarted_first_output_ms\":{\"p50\":%.1f,"
		"\"p99\":%.1f},"
		"\"restore_fresh_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"restore_fresh_first_output_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"restore_load_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"restore_guest_first_exchange_ms\":{\"p50\":%.1f,"
		"\"p99\":%.1f},"
		"\"restore_tcg_blocks\":{\"p50\":%.0f,\"p99\":%.0f},"
		"\"restore_host_page_faults\":{\"p50\":%.0f,\"p99\":%.0f},"
		"\"step_true_first_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"step_true_second_ms\":{\"p50\":%.1f,\"p99\":%.1f},"
		"\"ratio_cold_over_restore\":%.2f,"
		"\"idle_pss_mib\":%.1f,\"idle_rss_mib\":%.1f,",
		b.tmpl, al_accel_name(t.accel), o.memory_mb, b.clones, b.cold,
		b.alive, pct(&cold, 50), pct(&cold, 99), pct(&coldf, 50),
		pct(&coldf, 99), pct(&pool, 50), pct(&pool, 99),
		pct(&poolf, 50), pct(&poolf, 99), pct(&bare, 50),
		pct(&bare, 99), pct(&baref, 50), pct(&baref, 99),
		pct(&ph.load, 50), pct(&ph.load, 99), pct(&ph.guest, 50),
		pct(&ph.guest, 99), pct(&ph.blocks, 50), pct(&ph.blocks, 99),
		pct(&ph.faults, 50), pct(&ph.faults, 99), pct(&true1, 50),
		pct(&true1, 99), pct(&true2, 50), pct(&true2, 99),
		pct(&cold, 50) / pct(&pool, 50), pss, rss);
	r = handoff_report(&o, &b, &t, f);
	fprintf(f, "}\n");
	fclose(f);
	if (r < 0)
		return 1;
	printf("json: %s\n", b.json);
	return 0;
}
