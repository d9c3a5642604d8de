/* accel.h: deciding KVM or TCG, and caching the verdict. Internal to
 * sandbox/ (sb_accel_resolve() in vm.c is the public face). */
#ifndef AL_SB_ACCEL_H
#define AL_SB_ACCEL_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox.h"

/* Can `img` boot under KVM and its agent answer within timeout_ms? The
 * caller supplies this (vm.c boots a VM), so accel.c starts nothing. */
typedef bool (*accel_probe_fn)(const struct sb_options *o,
			       const struct sb_image *img,
			       uint32_t timeout_ms);

/* The accelerator for o->accel on this host: kvm/tcg as asked; auto is
 * TCG without a usable /dev/kvm, else the cached verdict for this image,
 * else what `probe` says (then cached). */
enum al_accel sb__accel_decide(const struct sb_options *o,
			       const struct sb_image *img,
			       accel_probe_fn probe);

#endif
