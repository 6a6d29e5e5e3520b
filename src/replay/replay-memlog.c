/* replay-memlog.c: mate-replay --memlog: replays a memory log (mate's or RMM's CSV) against allocators and prints how each fared. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe.h"
#include "mate.h"
#include "mate_record.h"
#include "replay-memlog.h"

static const char *
human(uint64_t b, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static void
print_result(const char *name, const struct mate_alloc_replay_result *r)
{
	char b1[32], b2[32];
	double rate = r->seconds > 0 ? (double)r->events / r->seconds / 1e6 : 0;

	printf("%s: %" PRIu64 " events in %.3f s (%.2f M/s); peak %s requested, footprint %s\n",
	    name, r->events, r->seconds, rate, human(r->peak_bytes, b1, sizeof(b1)),
	    human(r->peak_footprint, b2, sizeof(b2)));
}

/* What the log itself shows, once: leaks (RMM's words), skipped rows, odd sizes. */
static void
print_log_facts(const struct mate_alloc_replay_result *r)
{
	if (r->leaked_count > 0)
		printf("LOG shows leak of %" PRIu64 " allocations of %" PRIu64 " total bytes\n",
		    r->leaked_count, r->leaked_bytes);
	if (r->skipped > 0)
		printf("skipped %" PRIu64 " 'allocate failure' row%s\n", r->skipped,
		    r->skipped == 1 ? "" : "s");
	if (r->size_mismatches > 0)
		printf("%" PRIu64 " free%s logged with another size than the allocation's; "
		    "the allocation's size was used\n", r->size_mismatches,
		    r->size_mismatches == 1 ? "" : "s");
}

int
mate_replay_memlog_main(const char *path, const char *const *allocators, size_t n,
    long long repeat)
{
	static const char *const defaults[] = { "malloc", "pool" };
	const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
	struct mate_alloc_replay_result res;
	mate_memlog_trace *t;
	mate_error err;
	int status = MATE_EXIT_OK;

	if (n == 0) {
		allocators = defaults;
		n = 2;
	}
	for (size_t i = 0; i < n; i++)
		if (mate_alloc_replay_available(allocators[i], &err) != MATE_OK) {
			mate_fe_warnx("%s", err.message);
			return MATE_EXIT_USAGE;
		}
	if ((t = mate_memlog_read(path, &err)) == NULL) {
		mate_fe_warnx("%s", err.message);
		return MATE_EXIT_USAGE;
	}
	if (mate_alloc_replay_check(t, &res, &err) != MATE_OK) {
		mate_fe_warnx("%s:%s", name, err.message + (strncmp(err.message, "line ", 5) == 0 ? 5 : 0));
		mate_memlog_trace_free(t);
		return MATE_EXIT_FAIL;
	}
	printf("%s: %zu thread%s\n", name, mate_memlog_trace_threads(t),
	    mate_memlog_trace_threads(t) == 1 ? "" : "s");
	print_log_facts(&res);
	for (size_t i = 0; i < n && status == MATE_EXIT_OK; i++)
		for (long long k = 0; k < (repeat > 0 ? repeat : 1); k++) {
			if (mate_alloc_replay(t, allocators[i], &res, &err) != MATE_OK) {
				mate_fe_warnx("%s:%s", name, err.message +
				    (strncmp(err.message, "line ", 5) == 0 ? 5 : 0));
				status = MATE_EXIT_FAIL;
				break;
			}
			print_result(allocators[i], &res);
			fflush(stdout);
		}
	mate_memlog_trace_free(t);
	return status;
}
