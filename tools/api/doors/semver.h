/* semver.h: npm `semver` range matching, the subset Piston's `version`
 * selector needs (docs/compat.md, "Piston v2"). */
#ifndef AL_SEMVER_H
#define AL_SEMVER_H

#include <stdbool.h>

/* Does the release version v ("3.11.2") satisfy the range as npm's
 * semver.satisfies does? Ranges: "||" sets of comparators (<, <=, >, >=,
 * =, ~, ^, none), partials with x, X, a star or missing parts, hyphen ranges.
 * A range that does not parse (pre-release tags included) fits nothing. */
bool al_semver_fits(const char *range, const char *v);

#endif
