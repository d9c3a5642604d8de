/* vm_internal.h: pieces of vm.c that template.c and accel.c share. */
#ifndef AL_VM_INTERNAL_H
#define AL_VM_INTERNAL_H

#include "sandbox.h"
#include "vmm.h"

/* How guest RAM is backed: anonymous (cold boot), a shared file (a
 * template being made) or a private copy-on-write map of it (a clone). */
struct vm_mem {
	const char *path; /* NULL: anonymous RAM */
	bool share;       /* share=on (template) or off (clone) */
	bool incoming;    /* -incoming defer (clone) */
};

/* The one QEMU command line of a VM (template and clones agree on it). */
void vm_machine_args(struct vmm_argv *a, const char *qemu,
		     const struct sb_options *o, const struct sb_image *img,
		     enum al_accel accel, const char *dir,
		     const struct vm_mem *mem, uint32_t cid);
uint32_t vm_new_cid(void);
struct sb_vm *vm_new(void);
int find_binary(const char *name, char *out, size_t size);
int vm_make_dir(const struct sb_options *o, struct sb_vm *vm);
int vm_spawn(struct sb_vm *vm, const struct sb_options *o,
	     const struct vmm_argv *a);
int vm_connect(struct sb_vm *vm, const struct sb_options *o);
/* vm_spawn, then vm_connect */
int vm_start(struct sb_vm *vm, const struct sb_options *o,
	     const struct vmm_argv *a);
int vm_handshake(struct sb_vm *vm, const struct sb_options *o,
		 uint32_t timeout_ms);
int vm_reseed(struct sb_vm *vm, const struct sb_options *o);
/* reseed only (a clone: its template's agent already said hello) */
int vm_ready(struct sb_vm *vm, const struct sb_options *o,
	     uint32_t timeout_ms);
int vm_call_timeout(const struct sb_vm *vm, uint64_t want);
void vm_fail(struct sb_vm *vm, int r, const char *what);
int vm_boot_accel(const struct sb_options *o, const struct sb_image *img,
		  enum al_accel accel, uint32_t timeout_ms, struct sb_vm **ret);

#endif
