/* bench_net.c: what networking costs a VM.
 *
 *   airlock-bench-net [--template NAME] [--clones N] [--slots N]
 *                     [--state-dir DIR]
 *
 * Measures, on this machine (root: namespaces and nftables), in one run:
 *   slot open     a network slot from scratch: namespace, tap, veth,
 *                 addresses, NAT and the rules of a policy with one name
 *                 and one CIDR, its resolver started (sb_net_open)
 *   slot base     the policy-free part alone (sb_net_base): what a worker
 *                 makes between jobs for its pool ([pool] net_ready)
 *   slot take     a ready base given the policy (sb_net_apply: its sets,
 *                 ports, resolver): all a job waits for with a ready slot
 *   slot close    the resolver killed, the host link deleted, all closed
 *                 (after the job's result is sent, in the worker)
 *   restore       request -> agent ready of N clones of the plain template
 *                 and 2N of its networked variant, in turn, none
 *                 pre-started (a networked clone never is), the slot made
 *                 beforehand
 *   job path      what a job waits for before its VM answers: the plain
 *                 restore; slot open + networked restore; slot take +
 *                 networked restore (a ready slot)
 * Prints p50 / p90 / max of each, in milliseconds (a private clock with
 * sub-ms resolution: results/clock.h counts whole ms).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opts.h"
#include "sandbox.h"

#define SAMPLES_MAX 1000

struct series {
	const char *name;
	double v[SAMPLES_MAX];
	size_t n;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void add(struct series *s, double v)
{
	if (s->n < SAMPLES_MAX)
		s->v[s->n++] = v;
}

static void print(struct series *s)
{
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(double), cmp_double);
	printf("%-22s n=%-4zu p50 %8.1f  p90 %8.1f  max %8.1f ms\n", s->name,
	       s->n, s->v[s->n / 2], s->v[s->n * 9 / 10], s->v[s->n - 1]);
}

static void bench_policy(struct sb_net_policy *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "bench");
	p->n_names = 1;
	snprintf(p->names[0].name, sizeof(p->names[0].name), "example.org");
	p->n_cidrs = 1;
	p->cidrs[0].family = AF_INET;
	inet_pton(AF_INET, "192.0.2.0", p->cidrs[0].addr);
	p->cidrs[0].prefix = 24;
	p->n_ports = 1;
	p->ports[0] = (struct sb_net_port){IPPROTO_TCP, 443, 443};
}

/* Everything this run measures. */
struct figures {
	struct series open_, base, take, close_;
	struct series plain, net, path_plain, path_open, path_take;
};

/* A slot from scratch (ready = false) or a base then its policy (ready =
 * true: only the policy's part is timed as the job's); its time in *ms. */
static int slot(const struct sb_options *o, const struct sb_net_policy *p,
		bool ready, struct figures *f, struct sb_net **ret, double *ms)
{
	char err[256];
	double t0 = now_ms();
	int r;

	if (!ready) {
		r = sb_net_open(o, p, ret, err, sizeof(err));
		*ms = now_ms() - t0;
		if (r == 0)
			add(&f->open_, *ms);
	} else {
		r = sb_net_base(o, ret, err, sizeof(err));
		add(&f->base, now_ms() - t0);
		t0 = now_ms();
		if (r == 0 && (r = sb_net_apply(*ret, p, err, sizeof(err))) < 0)
			sb_net_close(*ret);
		*ms = now_ms() - t0;
		if (r == 0)
			add(&f->take, *ms);
	}
	if (r < 0)
		fprintf(stderr, "slot: %s\n", err);
	return r;
}

static int bench_slots(const struct sb_options *o,
		       const struct sb_net_policy *p, int n, struct figures *f)
{
	for (int i = 0; i < 2 * n; i++) {
		struct sb_net *s = NULL;
		double ms, t0;
		int r = slot(o, p, i % 2, f, &s, &ms);

		if (r < 0)
			return r;
		t0 = now_ms();
		sb_net_close(s);
		add(&f->close_, now_ms() - t0);
	}
	return 0;
}

/* One networked clone in a slot opened (ready = false) or taken. */
static int restore_net(const struct sb_options *o,
		       const struct sb_net_policy *p,
		       const struct sb_template *tn, bool ready,
		       struct figures *f)
{
	struct sb_vm *vm = NULL;
	struct sb_net *s = NULL;
	double ms;
	int r = slot(o, p, ready, f, &s, &ms);

	if (r == 0)
		r = sb_vm_restore_net(o, tn, s, &vm);
	if (r == 0) {
		add(&f->net, (double)sb_vm_ready_ms(vm));
		add(ready ? &f->path_take : &f->path_open,
		    ms + (double)sb_vm_ready_ms(vm));
	} else {
		fprintf(stderr, "restore: %s\n", sb_vm_error(vm));
	}
	sb_vm_destroy(vm);
	return r;
}

static int bench_restore(const struct sb_options *o,
			 const struct sb_net_policy *p, const char *tmpl, int n,
			 struct figures *f)
{
	struct sb_template tp, tn;
	int r = sb_template_open(o, tmpl, &tp);

	if (r == 0)
		r = sb_template_open_net(o, tmpl, true, &tn);
	for (int i = 0; r == 0 && i < n; i++) {
		struct sb_vm *vm = NULL;

		r = sb_vm_restore(o, &tp, &vm);
		if (r == 0) {
			add(&f->plain, (double)sb_vm_ready_ms(vm));
			add(&f->path_plain, (double)sb_vm_ready_ms(vm));
		}
		sb_vm_destroy(vm);
		if (r == 0)
			r = restore_net(o, p, &tn, i % 2, f);
		if (r == 0)
			r = restore_net(o, p, &tn, !(i % 2), f);
	}
	return r;
}

int main(int argc, char **argv)
{
	static const struct al_opt lo[] = {
	    {"template", 't', AL_OPT_ARG},
	    {"clones", 'n', AL_OPT_ARG},
	    {"slots", 'l', AL_OPT_ARG},
	    {"state-dir", 's', AL_OPT_ARG},
	    {"help", 'h', AL_OPT_SHORT},
	    {NULL, 0, 0},
	};
	static struct figures f = {
	    .open_ = {.name = "slot open"},
	    .base = {.name = "slot base (pool)"},
	    .take = {.name = "slot take (ready)"},
	    .close_ = {.name = "slot close"},
	    .plain = {.name = "restore plain"},
	    .net = {.name = "restore networked"},
	    .path_plain = {.name = "path plain"},
	    .path_open = {.name = "path net, slot open"},
	    .path_take = {.name = "path net, slot take"},
	};
	struct series *all[] = {&f.open_,      &f.base,	     &f.take,
				&f.close_,     &f.plain,     &f.net,
				&f.path_plain, &f.path_open, &f.path_take};
	const char *tmpl = "c";
	struct sb_net_policy p;
	struct sb_options o;
	int clones = 10, slots = 50, c, r;

	sb_options_init(&o);
	snprintf(o.net_dns, sizeof(o.net_dns), "127.0.0.1");
	while ((c = al_opts_next(argc, argv, lo)) != -1) {
		switch (c) {
		case 't':
			tmpl = optarg;
			break;
		case 'n':
			clones = atoi(optarg);
			break;
		case 'l':
			slots = atoi(optarg);
			break;
		case 's':
			snprintf(o.state_dir, sizeof(o.state_dir), "%s",
				 optarg);
			break;
		default:
			printf("usage: airlock-bench-net [--template NAME] "
			       "[--clones N] [--slots N] [--state-dir DIR]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	bench_policy(&p);
	r = bench_slots(&o, &p, slots, &f);
	if (r == 0 && clones > 0)
		r = bench_restore(&o, &p, tmpl, clones, &f);
	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
		print(all[i]);
	if (r < 0)
		fprintf(stderr, "airlock-bench-net: %s\n", strerror(-r));
	return r < 0;
}
