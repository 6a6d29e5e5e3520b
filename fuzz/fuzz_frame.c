/* fuzz_frame.c: libFuzzer target for the live-event frames a subscriber receives (JSON parsing, merging, the activity aggregate). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mate_record.h"
#include "mate_events.h"
#include "events_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static mate_monitor *m;
	static mate_activity *a;
	mate_live_event le;
	mate_publisher_info pi;
	const uint8_t *p = data, *end = data + size;

	if (m == NULL) {
		m = mate_monitor_new(NULL);
		a = mate_activity_new(1.0);
		if (m == NULL || a == NULL)
			return 0;
		mate_monitor_flush(m);
	}
	/* frames separated by newlines, as several arrive one after another */
	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		mate_mon_take_frame(m, (const char *)p, n);
		p += n + 1;
	}
	while (mate_monitor_next(m, &le, 0, NULL) > 0) {
		mate_monitor_publisher(m, le.publisher, &pi);
		mate_activity_add(a, pi.pid, pi.program, &le);
	}
	mate_activity_tick(a, 1.0);
	for (int i = 0; i < mate_activity_rows(a); i++) {
		mate_worker_row r;
		mate_activity_row(a, i, &r);
	}
	return 0;
}
