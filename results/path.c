/* path.c: field paths for diagnostics: steps[1].env["X"].
 *
 * Paths end up in logs and in RJ results, so map keys taken from the input
 * are escaped (quotes, backslashes, non-printable bytes as \xNN) and
 * truncated: no raw input bytes leave this file.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void al__path_field(char *out, size_t size, const char *base, const char *name)
{
	snprintf(out, size, "%s%s%s", base, base[0] ? "." : "", name);
}

void al__path_index(char *out, size_t size, const char *base, size_t i)
{
	snprintf(out, size, "%s[%zu]", base, i);
}

void al__path_key(char *out, size_t size, const char *base, const char *key,
		  size_t len)
{
	char esc[72];
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (o + 6 >= sizeof(esc) - 4) {
			memcpy(esc + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			esc[o++] = '\\';
			esc[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += (size_t)snprintf(esc + o, sizeof(esc) - o,
					      "\\x%02x", c);
		} else {
			esc[o++] = (char)c;
		}
	}
	esc[o] = 0;
	snprintf(out, size, "%s[\"%s\"]", base, esc);
}
