/* test_vmm_memory.c: a guest that uses all its memory and runs much new
 * code meets its own limits (ML), never the VMM's host cgroup cap: the
 * VMM stays alive to the job's end and the job is never XX (issue 38).
 *
 * The cap is guest RAM + TCG translation buffer (tb-size) + QEMU's own
 * (sandbox/vm.c, sb_vmm_memory_cap). Under the old cap (RAM + 256 MiB,
 * QEMU's default 1 GiB buffer uncounted) this job's VMM was OOM-killed
 * by its cgroup and the job ended XX "qemu exited". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "vmtest.h"

static struct sb_options opts;
static struct al_worker worker;

static int group_setup(void **state)
{
	(void)state;
	vmtest_options(&opts); /* a 1 GiB guest */
	al_worker_init(&worker, &opts, al_policy_default(), "test-vmm-mem");
	worker.cold = true;
	return 0;
}

#define STEP(res, i) (&(res)->steps[i])

/* The cap counts the buffer under TCG and not under KVM. */
static void test_cap_formula(void **state)
{
	struct sb_options o;

	(void)state;
	sb_options_init(&o);
	o.memory_mb = 1024;
	assert_int_equal(sb_vmm_memory_cap(&o, AL_ACCEL_TCG) >> 20,
			 1024 + o.tcg_tb_mb + o.vmm_overhead_mb);
	assert_int_equal(sb_vmm_memory_cap(&o, AL_ACCEL_KVM) >> 20,
			 1024 + o.vmm_overhead_mb);
	o.tcg_tb_mb = 0; /* QEMU's own default, 1 GiB, is still counted */
	assert_int_equal(sb_vmm_memory_cap(&o, AL_ACCEL_TCG) >> 20,
			 1024 + 1024 + o.vmm_overhead_mb);
}

/* fill.c writes 16 MiB blocks until the step's cgroup kills it. */
#define FILL_C                                                                 \
	"#include <stdlib.h>\\n#include <string.h>\\n"                         \
	"int main(void){for(;;){char *p=malloc(16<<20);if(!p)return 3;"        \
	"memset(p,1,16<<20);}}\\n"
/* jit.c runs code it writes, a new block every 16 bytes of a 16 MiB map
 * (as a JIT such as node's does), for at most 60 s: TCG translates every
 * block anew and its translation buffer fills to its cap. */
#define JIT_C                                                                  \
	"#include <string.h>\\n#include <sys/mman.h>\\n#include <time.h>\\n"   \
	"int main(void){size_t n=16u<<20,o;unsigned s=0;time_t t=time(0);"     \
	"unsigned char *m=mmap(0,n,7,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);"         \
	"if(m==MAP_FAILED)return 2;for(o=0;o+8<=n;o+=16){m[o]=0xb8;"           \
	"memcpy(m+o+1,&o,4);m[o+5]=0xc3;s+=((unsigned(*)(void))(m+o))();"      \
	"if(!(o&65535)&&time(0)-t>60)break;}return s==1;}\\n"

static void test_fill_ram_and_code(void **state)
{
	struct al_result res;

	(void)state;
	vmtest_run(&worker,
		   "{\"template\":\"c\",\"files\":{\"fill.c\":\"" FILL_C "\","
		   "\"jit.c\":\"" JIT_C "\"},"
		   "\"limits\":{\"memory_mb\":768,\"wall_ms\":300000},"
		   "\"steps\":["
		   "{\"sh\":\"gcc -O2 -o fill fill.c && gcc -O2 -o jit jit.c\","
		   "\"timeout_ms\":120000},"
		   "{\"cmd\":[\"./fill\"],\"timeout_ms\":120000},"
		   "{\"cmd\":[\"./jit\"],\"timeout_ms\":120000,"
		   "\"if\":\"always\"},"
		   "{\"sh\":\"echo alive\",\"if\":\"always\"}]}",
		   &res);
	/* never XX: the VMM lived through every step */
	CHECK(res.status != AL_XX, &res);
	CHECK(res.n_steps == 4, &res);
	CHECK(STEP(&res, 0)->status == AL_OK, &res);
	CHECK(STEP(&res, 1)->status == AL_ML, &res);
	CHECK(STEP(&res, 2)->status == AL_OK, &res);
	CHECK(STEP(&res, 3)->status == AL_OK, &res);
	CHECK(STEP(&res, 3)->stdout_.len == 6 &&
		  !memcmp(STEP(&res, 3)->stdout_.data, "alive\n", 6),
	      &res);
	al_result_release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cap_formula),
	    cmocka_unit_test(test_fill_ram_and_code),
	};
	if (getenv("AL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
