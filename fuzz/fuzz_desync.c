/* fuzz_desync.c: libFuzzer target for mate-trace --desync over an instruction log: the ranks, calls and ends it takes (mate_desync_event()) and the verdicts, checked as it goes and at the end. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mate_events.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
verdicts(mate_desync *d, double now, int final)
{
	mate_desync_verdict v;

	while (mate_desync_check(d, now, final, &v) == 1)
		if (v.text == NULL || strlen(v.text) >= 1024 || v.rank < 0)
			__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mate_desync *d = mate_desync_new();
	mate_ilog *r = mate_ilog_open_memory(data, size, "fuzz", NULL);
	mate_event ev;
	long file_pid = -1;
	uint64_t n = 0;

	if (d == NULL || r == NULL)
		goto out;
	while (mate_ilog_next(r, &ev, NULL) == 1) {
		char pid[24];
		long p = -1;
		if (mate_ilog_detail(ev.details, "pid", pid, sizeof(pid)) > 0)
			p = strtol(pid, NULL, 10);
		if (p >= 0 && strcmp(ev.event, "CONNECT") == 0)
			file_pid = p;
		if (mate_desync_event(d, &ev, p >= 0 ? p : file_pid, -1, NULL) == MATE_ERR_NOMEM)
			break;
		if (++n % 64 == 0)   /* as the live tool checks, now and then, stalls included */
			verdicts(d, ev.time, 0);
	}
	verdicts(d, 0, 1);
out:
	mate_ilog_free(r);
	mate_desync_free(d);
	return 0;
}
