/* events-overhead.c: level-1 calls per second with monitoring off, on without a subscriber, with one subscriber and with a stalled one (--tensors: each call with two tensor arguments, whose shapes a RECV carries); or a flood of events for capture benchmarks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mate_record.h"
#include "mate_events.h"
#include "bench_util.h"

/* OFF_AGAIN: monitoring off once more, a control: its ratio to OFF is the
 * machine's own noise, the figure the others are to be read against */
enum { OFF, NO_SUB, ONE_SUB, STALLED, OFF_AGAIN, MODES };
static const char *const mode_name[MODES] = { "monitoring off", "no subscriber",
	"one subscriber", "stalled subscriber", "off again (control)" };

static int with_tensors;

static void
one_call(void)
{
	static float a[16 * 32], b[32 * 8];
	mate_call *c = mate_call_begin("rmsnorm", "bench", NULL);

	if (with_tensors) {
		static const int64_t sa[2] = { 16, 32 }, sb[2] = { 32, 8 };
		mate_tensor ta, tb;
		mate_tensor_init(&ta, MATE_F32, 2, sa, NULL, a);
		mate_tensor_init(&tb, MATE_F32, 2, sb, NULL, b);
		mate_call_tensor(c, MATE_ARG, NULL, &ta);
		mate_call_tensor(c, MATE_ARG, NULL, &tb);
	}
	mate_call_end(c);
}

/* Level-1 calls for secs seconds: @return calls per second of wall time;
 * *per_cpu gets them per second of the calling thread's CPU time (what the
 * program would do with a core to itself, whatever the machine's load). */
static double
calls_per_s(double secs, double *per_cpu)
{
	double t0 = mate_mono_seconds(), c0 = bench_thread_cpu(), t;
	long n = 0;

	do {
		for (int i = 0; i < 1000; i++)
			one_call();
		n += 1000;
	} while ((t = mate_mono_seconds() - t0) < secs);
	if (per_cpu != NULL)
		*per_cpu = n / (bench_thread_cpu() - c0);
	return n / t;
}

/* ---- a subscriber thread, through libmate's own monitor ----------------------------- */

static struct {
	pthread_t th;
	mate_monitor *m;
	volatile int stop, stall, got;
} sub;

static void *
sub_main(void *arg)
{
	mate_live_event le;

	(void)arg;
	while (!sub.stop) {
		if (sub.stall && sub.got) {
			usleep(10000);   /* attached, reading nothing */
			continue;
		}
		if (mate_monitor_next(sub.m, &le, 50, NULL) > 0)
			sub.got = 1;
	}
	return NULL;
}

static void
sub_start(int stall)
{
	memset(&sub, 0, sizeof(sub));
	sub.stall = stall;
	sub.m = mate_monitor_new(NULL);
	mate_monitor_add_pid(sub.m, (long)getpid(), NULL);
	pthread_create(&sub.th, NULL, sub_main, NULL);
	/* events flow once the subscription has reached the publisher */
	for (int i = 0; i < 2000 && !sub.got; i++) {
		one_call();
		usleep(1000);
	}
}

static void
sub_stop(void)
{
	sub.stop = 1;
	pthread_join(sub.th, NULL);
	mate_monitor_free(sub.m);
}

static void
configure(int monitor)
{
	struct mate_config cfg;

	mate_config_default(&cfg);
	cfg.level = 1;
	cfg.logdest = "/dev/null";
	cfg.monitor = monitor ? "1" : NULL;
	mate_configure(&cfg, NULL);
}

/* Four events per call (the call and its work), for secs seconds. */
static int
flood(double secs)
{
	double t0 = mate_mono_seconds();
	long n = 0;

	while (mate_mono_seconds() - t0 < secs) {
		for (int i = 0; i < 100; i++) {
			mate_call *c = mate_call_begin("gemm", "bench", NULL);
			mate_work w;
			mate_work_begin(&w, mate_call_id(c), "worker_0", "gemm", 4096);
			mate_work_end(&w, 4096, 1);
			mate_call_end(c);
		}
		n += 100;
	}
	fprintf(stderr, "events-overhead: %ld calls, %ld events in %.2f s\n", n, 4 * n + 1,
	    mate_mono_seconds() - t0);
	return 0;
}

/* The host's other thread: it waits forever. */
static void *
idle_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The median, and the ends of the middle half in *lo and *hi. */
static double
median(double *v, int n, double *lo, double *hi)
{
	double m = bench_median(v, n);

	if (lo != NULL)
		*lo = v[n / 4];
	if (hi != NULL)
		*hi = v[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
	return m;
}

int
main(int argc, char **argv)
{
	enum { MAX_ROUNDS = 99 };
	static double rate[MODES][MAX_ROUNDS], cpu[MODES][MAX_ROUNDS];
	static double ratio[MODES][MAX_ROUNDS], cratio[MODES][MAX_ROUNDS];
	double secs = 0.3;
	int rounds = 30, single = 0;
	char dir[] = "/tmp/mate-bench-XXXXXX";
	pthread_t idle;

	/*
	 * The host program has a second, idle thread, as every CUDA or PyTorch
	 * program has (they start several). Monitoring starts threads of its
	 * own, and in a process that had only one, glibc and the kernel stop
	 * taking their single-thread shortcuts (no cancellation points, no
	 * file reference counts on write()), which makes the level-1 log's
	 * write() dearer: --single-threaded measures that host too.
	 */
	if (argc >= 2 && strcmp(argv[1], "--tensors") == 0) {
		with_tensors = 1;
		argc--, argv++;
	}
	if (argc >= 2 && strcmp(argv[1], "--single-threaded") == 0) {
		single = 1;
		argc--, argv++;
	} else if (!(argc >= 2 && strcmp(argv[1], "--flood") == 0))
		pthread_create(&idle, NULL, idle_main, NULL);

	if (argc == 3 && strcmp(argv[1], "--flood") == 0)
		return flood(atof(argv[2]));
	if (argc == 4 && strcmp(argv[1], "--mode") == 0) {
		/* one mode alone, for profilers: --mode 0..3 SECONDS */
		int m = atoi(argv[2]) % MODES;
		double c;
		configure(m != OFF && m != OFF_AGAIN);
		if (m == ONE_SUB || m == STALLED)
			sub_start(m == STALLED);
		printf("%s: %.0f calls/s\n", mode_name[m], calls_per_s(atof(argv[3]), &c));
		if (m == ONE_SUB || m == STALLED)
			sub_stop();
		configure(0);
		return 0;
	}
	if (argc == 2)
		rounds = atoi(argv[1]) > 0 && atoi(argv[1]) <= MAX_ROUNDS ? atoi(argv[1]) : rounds;
	if (getenv("MATE_MONITOR_DIR") == NULL && mkdtemp(dir) != NULL)
		setenv("MATE_MONITOR_DIR", dir, 1);
	/*
	 * Short rounds, each running every mode once and starting from a
	 * different one, and each mode compared with monitoring off in the same
	 * round: on a shared machine the load drifts over seconds, and a ratio
	 * of two figures taken a second apart carries that drift. The figure is
	 * the median of the rounds' ratios, with the middle half of them.
	 */
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < MODES; k++) {
			int m = (r + k) % MODES;
			configure(m != OFF && m != OFF_AGAIN);
			if (m == ONE_SUB || m == STALLED)
				sub_start(m == STALLED);
			calls_per_s(0.3, NULL);
			rate[m][r] = calls_per_s(secs, &cpu[m][r]);
			if (m == ONE_SUB || m == STALLED)
				sub_stop();
		}
	configure(0);
	for (int m = 0; m < MODES; m++)
		for (int r = 0; r < rounds; r++) {
			ratio[m][r] = rate[m][r] / rate[OFF][r];
			cratio[m][r] = cpu[m][r] / cpu[OFF][r];
		}
	printf("host program: %s%s\n", single ? "one thread (before monitoring starts its own)" :
	    "two threads (the second idle)", with_tensors ? ", two tensor arguments a call" : "");
	printf("level-1 calls per second, %d rounds of %.1f s a mode; ratio to monitoring off in\n"
	    "the same round, median (middle half of the rounds):\n"
	    "  %-20s %11s %21s %21s\n", rounds, secs, "", "calls/s", "per wall second",
	    "per thread-CPU s");
	for (int m = 0; m < MODES; m++) {
		double lo, hi, clo, chi, r = median(ratio[m], rounds, &lo, &hi);
		double c = median(cratio[m], rounds, &clo, &chi);
		printf("  %-20s %11.0f %6.3f (%.3f-%.3f) %6.3f (%.3f-%.3f)\n", mode_name[m],
		    median(rate[m], rounds, NULL, NULL), r, lo, hi, c, clo, chi);
	}
	rmdir(dir);
	return 0;
}
