/* sess_id.h: the one rule for the ids a session host makes (common.c's
 * sess__new_id): PREFIX "-" and 24 lowercase hex digits, "s" for a
 * session, "r" for a reply. Header-only so the HTTP API's route parser
 * (tools/api/session_route.c, fuzzed alone) applies the same rule as the
 * session operations without linking them. */
#ifndef AL_SESS_ID_H
#define AL_SESS_ID_H

#include <stdbool.h>
#include <stddef.h>

#define AL_SESS_ID_LEN 26 /* "s-" and 24 hex digits */

static inline bool al_sess_id_ok(const char *s, size_t n, char prefix)
{
	if (n != AL_SESS_ID_LEN || s[0] != prefix || s[1] != '-')
		return false;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

#endif
