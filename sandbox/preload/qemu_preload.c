/* qemu_preload.c: a shared object preloaded into every QEMU Airlock starts
 * (LD_PRELOAD, handed over as a sealed memfd: vmm.c). It replaces one libc
 * function and nothing else.
 *
 * malloc_trim: QEMU 7.2's RCU thread calls malloc_trim(4 MiB) after every
 * batch of RCU callbacks, and a VM's memory-map updates (device loads,
 * TCG's address-space dispatch) make many batches. Each call walks every
 * malloc arena and madvise(MADV_DONTNEED)s the free chunks: ~500 calls in
 * one python job's QEMU, each flushing the TLB of every CPU the process
 * runs on, after which QEMU faults the same pages back in as it allocates
 * again. A QEMU here lives for one job and is then killed, so returning
 * its free heap to the kernel early buys nothing; measured on a 40-job
 * HumanEval batch it cost 10-20% of the batch's CPU time
 * (docs/performance.md, "QEMU's malloc_trim"). Freed memory stays in
 * QEMU's heap for reuse, as it does in any process that never trims.
 *
 * Built with -nostdlib: it needs nothing from libc, so it loads into any
 * QEMU build, and it is not built with the sanitizers (QEMU has no ASan
 * runtime).
 */
#include <stddef.h>

int malloc_trim(size_t pad);

int malloc_trim(size_t pad)
{
	(void)pad;
	return 0;
}
