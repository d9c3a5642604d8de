/* diags.c: collecting every problem a decoder finds, with its field path. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void al_diags_init(struct al_diags *d)
{
	memset(d, 0, sizeof(*d));
}

struct al_diags *al__diags_or(struct al_diags *d, struct al_diags *local)
{
	if (d)
		return d;
	al_diags_init(local);
	return local;
}

size_t al__diags_count(const struct al_diags *d)
{
	return d->n + d->dropped;
}

void al_diags_add(struct al_diags *d, const char *path, const char *fmt, ...)
{
	struct al_diag *it;
	va_list ap;

	if (d->n >= AL_DIAGS_MAX) {
		d->dropped++;
		return;
	}
	it = &d->items[d->n++];
	snprintf(it->path, sizeof(it->path), "%s", path ? path : "");
	va_start(ap, fmt);
	vsnprintf(it->reason, sizeof(it->reason), fmt, ap);
	va_end(ap);
}

size_t al_diags_format(const struct al_diags *d, char *buf, size_t size)
{
	size_t used = 0;

	if (size)
		buf[0] = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct al_diag *it = &d->items[i];
		size_t room = used < size ? size - used : 0;

		used += (size_t)snprintf(buf + (size - room), room, "%s%s%s%s",
					 i ? "; " : "", it->path,
					 it->path[0] ? ": " : "", it->reason);
	}
	if (d->dropped) {
		size_t room = used < size ? size - used : 0;

		used += (size_t)snprintf(buf + (size - room), room,
					 "; and %zu more", d->dropped);
	}
	return used;
}
