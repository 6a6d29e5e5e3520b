/* ilog-check.c: reads an instruction log through libmate's parser and writes every event back with its formatter (round-trip checks), then "events N malformed M" on stderr. */
#include <stdio.h>
#include <stdlib.h>

#include "mate_events.h"

int
main(int argc, char **argv)
{
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	mate_ilog_stats st;
	char line[70000];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: ilog-check LOG\n");
		return 2;
	}
	if ((r = mate_ilog_open(argv[1], &err)) == NULL) {
		fprintf(stderr, "ilog-check: %s\n", err.message);
		return 1;
	}
	while ((rc = mate_ilog_next(r, &ev, &err)) == 1) {
		mate_ilog_format(line, sizeof(line), &ev);
		fputs(line, stdout);
	}
	mate_ilog_get_stats(r, &st);
	fprintf(stderr, "events %llu malformed %llu\n", (unsigned long long)st.events,
	    (unsigned long long)st.malformed);
	mate_ilog_free(r);
	return rc < 0 || st.malformed > 0;
}
