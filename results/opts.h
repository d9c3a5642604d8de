/* opts.h: a program's command-line options written once, as one table,
 * for getopt_long.
 *
 * getopt_long wants each option twice: a long table (name, argument,
 * code) and a short-option string ("t:j") that must agree with it. Here
 * a program writes one row per option and the two are derived, so a
 * short option cannot lose its argument or its long name. In results/
 * because the guest agent parses its options with it too (it may include
 * nothing else); no I/O of its own (getopt prints its own messages about
 * a bad option, as it always does). Callers:
 *
 *  1. write `static const struct al_opt opts[] = {{"jobs", 'n',
 *     AL_OPT_ARG}, ..., {NULL, 0, 0}};` (the row with code 0 ends it)
 *  2. either loop `while ((c = al_opts_next(argc, argv, opts)) != -1)`
 *     and switch on the codes, as with getopt_long, or (tools/cli/cli.c,
 *     which adds common options of its own) build the tables with
 *     al_opts_long() and al_opts_short().
 */
#ifndef AL_OPTS_H
#define AL_OPTS_H

#include <getopt.h>
#include <stddef.h>

/* What an option row says besides its name and code. */
enum {
	AL_OPT_ARG = 1 << 0,   /* takes an argument (--NAME X, -C X) */
	AL_OPT_SHORT = 1 << 1, /* also -C, C being its code (a letter) */
};

/* One option. */
struct al_opt {
	const char *name; /* --NAME; NULL: a short option only */
	int code;	  /* what getopt returns for it; 0 ends the table */
	unsigned flags;	  /* AL_OPT_* */
};

/* Most options one table may have (al_opts_next()'s own tables). */
#define AL_OPTS_MAX 32

/* getopt_long's long table of t (its rows with a name) into ret, which
 * has room for n entries, the zeroed one that ends it included. The
 * number of long options, or -E2BIG when they do not fit. */
int al_opts_long(const struct al_opt *t, struct option *ret, size_t n);

/* getopt's short-option string of t's AL_OPT_SHORT rows ("t:j") into ret
 * (len bytes). 0, -E2BIG when it does not fit, -EINVAL when such a row's
 * code is not a letter or a digit. */
int al_opts_short(const struct al_opt *t, char *ret, size_t len);

/* getopt_long(argc, argv, shorts, longs, NULL) with both derived from t:
 * the next option's code, -1 after the last, '?' for an unknown option
 * or a missing argument (getopt has said which), -E2BIG for a table over
 * AL_OPTS_MAX, -EINVAL for a short option that is not a letter or a
 * digit (both bugs in the caller's table). */
int al_opts_next(int argc, char **argv, const struct al_opt *t);

#endif
