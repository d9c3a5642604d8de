/* lookalike.h: is a requested name suspiciously close to an allowed or a
 * popular one? Typosquats live one keystroke or one confusable letter away
 * from the real thing (reqeusts, colourama, python-jwt2): a refused name
 * that is near a known one is marked so in the audit log and in pending,
 * with the near name, so a person does not approve it by reflex.
 *
 * Checks, in order, each against every reference name (both sides PEP 503
 * normalised): equal once normalised; equal once confusables are folded
 * (1 l i -> l, 0 o -> o, rn -> m, vv -> w); one edit (insert, delete,
 * replace); two neighbours swapped; the same `-`-separated words in
 * another order; a reference name plus a short suffix (digits, or up to
 * 6 more characters after a separator: requests2, requests-dev).
 */
#ifndef AL_GW_LOOKALIKE_H
#define AL_GW_LOOKALIKE_H

#include <stdbool.h>
#include <stddef.h>

#include "allow.h"

#define GW_LOOKALIKE_WHY_MAX 64

/* Well-known names of an ecosystem (a short built-in list). */
const char *const *gw_popular_names(enum gw_eco eco);

/* Is NAME near one of the n REFS (or, with refs NULL, the allowlist's
 * names and the popular ones) without being it? On true, near names the
 * reference and why the check that fired. */
bool gw_lookalike(const struct gw_allow *a, enum gw_eco eco, const char *name,
		  char near[GW_NAME_MAX + 1], char why[GW_LOOKALIKE_WHY_MAX]);

/* The check alone, NAME against one reference; why is set on true. */
bool gw_lookalike_pair(const char *name, const char *ref,
		       char why[GW_LOOKALIKE_WHY_MAX]);

#endif
