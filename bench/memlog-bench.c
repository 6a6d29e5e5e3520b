/* memlog-bench.c: the cost of a logged allocation (tracking only, and with the CSV written) and the allocation replay's events per second (malloc and pool, one thread and four). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mate_record.h"
#include "util.h"

/* n allocate/deallocate pairs with up to 64 live at once. */
static double
log_pairs(const char *path, int n)
{
	mate_memlog *m = mate_memlog_new(path, NULL);
	double t0 = mate_mono_seconds(), t;

	for (int i = 0; i < n; i++) {
		mate_memlog_allocate(m, (uint64_t)(i + 1) * 256, 256 + (uint64_t)(i % 1000), 0);
		if (i >= 64)
			mate_memlog_deallocate(m, (uint64_t)(i - 63) * 256, 0);
	}
	t = mate_mono_seconds() - t0;
	mate_memlog_free(m);
	return t / (2.0 * n - 64) * 1e9;
}

/* A synthetic trace: n events over `threads` threads, sizes 256 B to 4 MiB, up to
 * 1000 live allocations, frees in a scrambled order. */
static char *
make_trace(int n, int threads)
{
	size_t cap = (size_t)n * 64, len = 0;
	char *text = malloc(cap);
	int live[1000], nlive = 0, next = 1;
	unsigned s = 1;

	if (text == NULL)
		return NULL;
	len += (size_t)snprintf(text, cap, "Thread,Time,Action,Pointer,Size,Stream\n");
	for (int i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		int th = (int)((s >> 16) % (unsigned)threads);
		if (nlive == 1000 || (nlive > 0 && ((s >> 8) & 1))) {
			int j = (int)((s >> 4) % (unsigned)nlive), p = live[j];
			live[j] = live[--nlive];
			len += (size_t)snprintf(text + len, cap - len, "%d,1.0,deallocate,0x%x000,%d,0\n",
			    th, p, 256 << (p % 15));
		} else {
			live[nlive++] = next;
			len += (size_t)snprintf(text + len, cap - len, "%d,1.0,allocate,0x%x000,%d,0\n",
			    th, next, 256 << (next % 15));
			next++;
		}
	}
	return text;
}

static void
replay(int n, int threads)
{
	char *text = make_trace(n, threads);
	mate_error err;
	double t0 = mate_mono_seconds();
	mate_memlog_trace *t = text ? mate_memlog_parse(text, strlen(text), &err) : NULL;
	struct mate_alloc_replay_result res;

	if (t == NULL) {
		fprintf(stderr, "memlog-bench: %s\n", text ? err.message : "out of memory");
		exit(1);
	}
	printf("parse: %.2f M rows/s\n", n / (mate_mono_seconds() - t0) / 1e6);
	for (int a = 0; a < 2; a++) {
		const char *name = mate_alloc_replay_allocator((size_t)a);
		if (mate_alloc_replay(t, name, &res, &err) != MATE_OK) {
			fprintf(stderr, "memlog-bench: %s: %s\n", name, err.message);
			exit(1);
		}
		printf("replay %-6s %d thread%s %.2f M events/s (%.3f s), peak footprint %.1f MiB\n",
		    name, threads, threads == 1 ? ": " : "s:", (double)res.events / res.seconds / 1e6,
		    res.seconds, (double)res.peak_footprint / 1048576.0);
	}
	mate_memlog_trace_free(t);
	free(text);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000000;
	char path[] = "/tmp/mate-memlog-bench-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || n < 1000)
		return 2;
	close(fd);
	printf("logged allocation, tracking only: %.0f ns/event\n", log_pairs(NULL, n));
	printf("logged allocation, CSV written:   %.0f ns/event\n", log_pairs(path, n / 4));
	unlink(path);
	replay(n, 1);
	replay(n / 10, 4);   /* thread handoffs: slower, and bounded by the cores */
	return 0;
}
