/* dump-check.c: test driver that checks a level-10 dump root with dumpcheck.c and prints what it holds.
 *
 * usage: dump-check [--torn-last-ok] [--max-unlogged N] ROOT
 * Prints one summary line; exit status 0 when nothing is wrong, 1 when a
 * violation was found (each is printed on stderr), 2 for usage.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpcheck.h"

int
main(int argc, char **argv)
{
	struct dc_stats st;
	int flags = 0, i;
	long max_unlogged = 0;

	for (i = 1; i < argc - 1; i++) {
		if (strcmp(argv[i], "--torn-last-ok") == 0)
			flags |= DC_TORN_LAST_OK;
		else if (strcmp(argv[i], "--max-unlogged") == 0 && i + 2 < argc)
			max_unlogged = atol(argv[++i]);
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: dump-check [--torn-last-ok] [--max-unlogged N] ROOT\n");
		return 2;
	}
	return dc_check_root(argv[i], flags, max_unlogged, NULL, NULL, &st) == 0 ? 0 : 1;
}
