/* test_defaults.c: the built-in defaults agree wherever they are written.
 *
 * A default lives in up to four places: the config key table
 * (tools/config/config.c, what `airlock config` prints and the CLI uses),
 * the dispatcher's al_serve_opts_init() (dispatcher/serve/serve.c, what a caller
 * without a config gets), the sandbox's sb_options_init()
 * (sandbox/options.c) or the session host's al_sess_opts_init()
 * (dispatcher/session/host.c), and the shipped configs/airlock.conf. The
 * mappers between them (al_config_serve_opts, al_sandbox_options,
 * al_config_sess_opts) copy one into the other. This test fails when any
 * one of the four is changed alone:
 *
 *  - the config table's defaults mapped to serve options must equal
 *    al_serve_opts_init(), field by field;
 *  - mapped to sandbox options, they must equal sb_options_init();
 *  - mapped to session host options, they must equal al_sess_opts_init()
 *    (whose Redis, queue and timeouts are the dispatcher's);
 *  - configs/airlock.conf loaded over the defaults must change nothing;
 *  - the job policy's defaults are pinned by test_config (test_defaults).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "config.h"
#include "sbconfig.h"

#define SAME_U32(a, b, f)                                                      \
	do {                                                                   \
		if ((a)->f != (b)->f)                                          \
			fail_msg("%s: config default %lu, built-in %lu", #f,   \
				 (unsigned long)(a)->f,                        \
				 (unsigned long)(b)->f);                       \
	} while (0)
#define SAME_STR(a, b, f)                                                      \
	do {                                                                   \
		if (strcmp((a)->f, (b)->f))                                    \
			fail_msg("%s: config default \"%s\", built-in \"%s\"", \
				 #f, (a)->f, (b)->f);                          \
	} while (0)

/* The dispatcher's defaults: al_serve_opts_init() against the table. */
static void test_serve(void **state)
{
	struct al_serve_opts got, want;
	struct al_config cfg;

	(void)state;
	al_config_init(&cfg);
	al_serve_opts_init(&want);
	al_config_serve_opts(&cfg, &want.url, want.policy, want.sb, &got);
	SAME_STR(&got, &want, queue);
	SAME_U32(&got, &want, connect_timeout_ms);
	SAME_U32(&got, &want, command_timeout_ms);
	SAME_U32(&got, &want, max_deliveries);
	SAME_U32(&got, &want, result_ttl_s);
	SAME_U32(&got, &want, visibility_slack_ms);
	SAME_U32(&got, &want, heartbeat_ms);
	SAME_U32(&got, &want, trim_interval_ms);
	SAME_U32(&got, &want, dead_letter);
	SAME_U32(&got, &want, shutdown_grace_ms);
	/* queue.partitions 1 is one partition; serve reads 0 as 1 too */
	assert_int_equal(got.partitions, 1);
	assert_int_equal(want.partitions, 0);
	got.partitions = want.partitions;
	/* workers.count 0 means one per CPU; the dispatcher alone, one */
	assert_int_equal(cfg.workers.count, 0);
	got.workers = want.workers;
	/* and nothing else differs (both start from al_serve_opts_init) */
	assert_memory_equal(&got, &want, sizeof(got));
}

/* The sandbox's defaults: sb_options_init() against the table. */
static void test_sandbox(void **state)
{
	struct sb_options got, want;
	struct al_config cfg;
	char err[256];

	(void)state;
	al_config_init(&cfg);
	sb_options_init(&want);
	if (al_sandbox_options(&cfg, &got, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	SAME_STR(&got, &want, state_dir);
	SAME_STR(&got, &want, qemu);
	SAME_U32(&got, &want, accel);
	SAME_U32(&got, &want, memory_mb);
	SAME_U32(&got, &want, vcpus);
	SAME_U32(&got, &want, prestart);
	SAME_STR(&got, &want, warm);
	SAME_U32(&got, &want, warm_last);
	SAME_U32(&got, &want, warm_max_age_s);
	SAME_U32(&got, &want, warm_zygote);
	SAME_U32(&got, &want, net_ready);
	SAME_U32(&got, &want, worker_memory_mb);
	SAME_U32(&got, &want, snapshot_max_mb);
	SAME_U32(&got, &want, vmm_overhead_mb);
	SAME_U32(&got, &want, tcg_tb_mb);
	SAME_U32(&got, &want, vmm_cpu_percent);
	SAME_U32(&got, &want, vmm_uid_base);
	SAME_U32(&got, &want, vmm_uid_count);
	SAME_STR(&got, &want, net_dns);
	assert_int_equal(got.n_net_policies, 0);
	got.net_policies = want.net_policies; /* the config's empty array */
	assert_non_null(got.log);		/* the CLI's logger */
	got.log = want.log;
	assert_memory_equal(&got, &want, sizeof(got));
}

/* The session host's defaults: al_sess_opts_init() against the table. */
static void test_sessions(void **state)
{
	struct al_sess_opts got, want;
	struct al_serve_opts so;
	struct al_config cfg;

	(void)state;
	al_config_init(&cfg);
	al_serve_opts_init(&so);
	al_sess_opts_init(&want, &so);
	al_config_sess_opts(&cfg, &so, &got);
	SAME_U32(&got, &want, max_sessions);
	SAME_U32(&got, &want, ttl_default_s);
	SAME_U32(&got, &want, ttl_max_s);
	SAME_U32(&got, &want, idle_default_s);
	SAME_U32(&got, &want, hibernate_default_s);
	SAME_U32(&got, &want, keep_s);
	SAME_U32(&got, &want, output_max);
	SAME_U32(&got, &want, output_budget);
	SAME_U32(&got, &want, snapshots_per_principal);
	SAME_U32(&got, &want, spare);
	/* the dispatcher's, as test_serve pins them */
	SAME_STR(&got, &so, queue);
	SAME_U32(&got, &so, connect_timeout_ms);
	SAME_U32(&got, &so, command_timeout_ms);
	SAME_U32(&got, &so, heartbeat_ms);
	assert_memory_equal(&got, &want, sizeof(got));
}

/* The shipped file: every value in it is the table's default. (That it
 * names every key is test_config's test_shipped_conf.) */
static void test_shipped_conf(void **state)
{
	const struct al_config_key *k;
	struct al_config dflt, cfg;
	char err[4096], a[4096], b[4096];
	size_t n;

	(void)state;
	al_config_init(&dflt);
	al_config_init(&cfg);
	if (al_config_load(&cfg, AL_SOURCE_DIR "/configs/airlock.conf", err,
			   sizeof(err)) != 0)
		fail_msg("%s", err);
	k = al_config_keys(&n);
	for (size_t i = 0; i < n; i++) {
		al_config_format(&cfg, &k[i], a, sizeof(a));
		al_config_format(&dflt, &k[i], b, sizeof(b));
		if (strcmp(a, b))
			fail_msg("configs/airlock.conf: %s.%s = \"%s\", "
				 "the default is \"%s\"",
				 k[i].section, k[i].key, a, b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_serve),
	    cmocka_unit_test(test_sandbox),
	    cmocka_unit_test(test_sessions),
	    cmocka_unit_test(test_shipped_conf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
