/* script_text.c: print one of the queue's Lua scripts exactly as the
 * dispatcher sends it (alq_script_text), for script_copies_test.py,
 * which holds the Python client's copies to it byte for byte. */
#include <stdio.h>
#include <string.h>

#include "queue.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum alq_script s;
	} t[] = {
	    {"SUBMIT", ALQ_SUBMIT},
	    {"JOB_STATUS", ALQ_JOB_STATUS},
	    {"CANCEL", ALQ_CANCEL},
	};

	for (size_t i = 0; argc == 2 && i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(argv[1], t[i].name)) {
			fputs(alq_script_text(t[i].s), stdout);
			return 0;
		}
	fprintf(stderr, "usage: script_text SUBMIT|JOB_STATUS|CANCEL\n");
	return 2;
}
