/* fuzz_memlog.c: libFuzzer target for the memory event CSV reader and the replay's log check (mate_memlog_parse, mate_alloc_replay_check), and a pool replay of small logs. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mate_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mate_alloc_replay_result res;
	const struct mate_memlog_event *ev;
	mate_memlog_trace *t;
	mate_error err;
	size_t n;

	mate_error_clear(&err);
	t = mate_memlog_parse((const char *)data, size, &err);
	if (t == NULL) {
		if (err.code == 0 || err.message[0] == '\0')
			__builtin_trap();  /* every failure must say why */
		return 0;
	}
	ev = mate_memlog_trace_events(t, &n);
	for (size_t i = 0; i < n; i++)
		if (ev[i].thread >= mate_memlog_trace_threads(t) || ev[i].line < 1 || ev[i].action > 2)
			__builtin_trap();
	if (mate_alloc_replay_check(t, &res, &err) != MATE_OK) {
		if (res.failed_line < 1 || strstr(err.message, "line ") == NULL)
			__builtin_trap();  /* a bad log names its row */
	} else if (n < 64) {
		/* small sizes only: the replay really allocates */
		int small = 1;
		for (size_t i = 0; i < n; i++)
			small &= ev[i].size < (1u << 20);
		if (small && mate_alloc_replay(t, "pool", &res, &err) != MATE_OK)
			__builtin_trap();
	}
	mate_memlog_trace_free(t);
	return 0;
}
