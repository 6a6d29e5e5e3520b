/* nonfinite-scan.c: mate-list-dumps --nonfinite's scan (lib/dump/dump_nonfinite.c) of a dump root from the page cache, against plain read() of the same files' bytes in the same run.
 *
 * usage: bench/nonfinite-scan [-r ROUNDS] [-j THREADS] [DIR [MIB]]
 * Writes (once; kept) a root of dumps under DIR (default $TMPDIR or /tmp)
 * holding MIB MiB of tensors (default 256): 2 MiB tensors, one in each
 * dump's inputs and outputs files, half float32 in .pt files and half
 * bfloat16 in safetensors, all finite but one NaN in the last dump's
 * output. Each round reads every file once with read() (1 MiB at a time,
 * the anchor; it also warms the page cache) and scans the root as the
 * tool does (listing it, sorting, reading each tensor file once), on 1
 * thread and on THREADS (default: one per CPU); both sides spread the
 * files over the same number of threads. One thread is timed in its CPU
 * time (user and system), which a loaded machine does not stretch; several
 * in wall time. Prints the medians over ROUNDS (default 9) and the ratios
 * scan/read of their throughputs (goal: at least 0.8).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "dump_nonfinite.h"
#include "mate_core.h"
#include "mate_replay.h"
#include "parallel.h"

#define TENSOR_BYTES ((size_t)2 << 20)

static char **files;
static size_t nfiles;

static void
die(const char *what)
{
	fprintf(stderr, "nonfinite-scan: %s\n", what);
	exit(1);
}

/* One dump: its record and its inputs and outputs files, each one 2 MiB tensor. */
static void
write_dump(const char *root, int i, int ndumps)
{
	int st = i % 2;
	mate_dtype dt = st ? MATE_BF16 : MATE_F32;
	int64_t n = (int64_t)(TENSOR_BYTES / mate_dtype_size(dt));
	const char *ext = st ? ".safetensors" : ".pt";
	char dir[4096], path[4200];
	mate_storage *s;
	mate_value *d;
	mate_tensor t;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/20261128_120000_%03d_pid1_step_call%04d", root, i / 10, i + 1);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		die("cannot make a dump folder");
	for (int k = 0; k < 2; k++) {
		if ((s = mate_storage_new(TENSOR_BYTES, NULL)) == NULL)
			die("out of memory");
		for (int64_t e = 0; e < n; e++) {
			float v = (float)((e * 7919 + i) % 1000) / 100 - 5;
			if (st) {
				uint16_t b = mate_f32_to_bf16(v);
				memcpy((char *)mate_storage_data(s) + 2 * e, &b, 2);
			} else
				memcpy((char *)mate_storage_data(s) + 4 * e, &v, 4);
		}
		if (k == 1 && i == ndumps - 1) {
			float nan = NAN;
			memcpy(mate_storage_data(s), &nan, 4);  /* float32, or a bf16 NaN pair */
		}
		mate_tensor_init(&t, dt, 1, &n, NULL, NULL);
		d = mate_value_dict();
		mate_value_set_str(d, k ? "result" : "arg_0", mate_value_tensor(&t, s));
		mate_storage_unref(s);
		snprintf(path, sizeof(path), "%s/%s%s", dir, k ? "outputs" : "inputs", ext);
		if ((st ? mate_safetensors_write(path, d, NULL, NULL) :
		    mate_pt_write(path, d, NULL, NULL)) != MATE_OK)
			die("cannot write a tensor file");
		mate_value_free(d);
	}
	snprintf(path, sizeof(path), "%s/metadata.jsonl", dir);
	if ((f = fopen(path, "w")) == NULL)
		die("cannot write a record");
	fprintf(f, "{\"function_name\": \"step\", \"module\": \"bench\", \"call_sequence\": %d, "
	    "\"timestamp\": \"20261128_120000_%03d\", \"process_id\": 1, \"input_metadata\": {}, "
	    "\"output_metadata\": {}, \"tensor_info\": {\"input_tensor_keys\": [\"arg_0\"], "
	    "\"output_tensor_keys\": [\"result\"], \"input_size_bytes\": %zu, "
	    "\"output_size_bytes\": %zu}, \"tensor_format\": \"%s\", "
	    "\"execution_status\": \"completed\"}\n", i + 1, i / 10, TENSOR_BYTES, TENSOR_BYTES,
	    st ? "safetensors" : "torch");
	if (fclose(f) != 0)
		die("cannot write a record");
}

static void
add_file(const char *path)
{
	if ((files = realloc(files, (nfiles + 1) * sizeof(*files))) == NULL ||
	    (files[nfiles] = strdup(path)) == NULL)
		die("out of memory");
	nfiles++;
}

/* ---- the anchor: read() of every file --------------------------------------------- */

struct rd {
	size_t next;
	uint64_t bytes;
};

static void *
read_files(void *arg)
{
	struct rd *r = arg;
	char *buf = malloc(1 << 20);
	uint64_t bytes = 0;

	if (buf == NULL)
		die("out of memory");
	for (;;) {
		size_t i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
		ssize_t got;
		int fd;

		if (i >= nfiles)
			break;
		if ((fd = open(files[i], O_RDONLY)) < 0)
			die("cannot open a file");
		while ((got = read(fd, buf, 1 << 20)) > 0)
			bytes += (uint64_t)got;
		close(fd);
	}
	free(buf);
	__atomic_fetch_add(&r->bytes, bytes, __ATOMIC_RELAXED);
	return NULL;
}

/* The clock: the calling thread's CPU time (user and system: the kernel's
 * copy too) on one thread, which the machine's load does not stretch; wall
 * time on several. */
static double
now(int threads)
{
	return threads == 1 ? bench_thread_cpu() : mate_clock_seconds(CLOCK_MONOTONIC);
}

static double
time_read(int threads, uint64_t *bytes)
{
	pthread_t tid[256];
	struct rd r = { 0, 0 };
	double t0 = now(threads);
	int started = 0;

	for (int i = 1; i < threads; i++)
		if (pthread_create(&tid[started], NULL, read_files, &r) == 0)
			started++;
	read_files(&r);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	*bytes = r.bytes;
	return now(threads) - t0;
}

/* ---- the scan, as mate-list-dumps --nonfinite runs it ------------------------------ */

static double
time_scan(const char *root, int threads, uint64_t *bytes, size_t *listed)
{
	double t0 = now(threads);
	mate_dump_list *l = mate_dump_list_new(0, NULL);
	struct mate_nf_scan *s;

	if (l == NULL || mate_dump_list_add(l, root, NULL) < 0)
		die("cannot list the root");
	mate_dump_list_sort(l);
	if (mate_dump_nonfinite(l, threads, &s, NULL) != MATE_OK)
		die("the scan failed");
	*bytes = s->bytes;
	*listed = s->listed + s->problems;
	mate_nf_scan_free(s);
	mate_dump_list_free(l);
	return now(threads) - t0;
}

int
main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int rounds = 9, threads = mate_parallel_threads(), c, ndumps, tcount[2];
	long mib = 256;
	char root[1100], flag[1200];
	double tr[2][64], ts[2][64];

	while ((c = getopt(argc, argv, "r:j:")) != -1) {
		if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'j')
			threads = atoi(optarg);
		else
			return 2;
	}
	if (rounds < 1 || rounds > 64 || threads < 1 || threads > 256)
		die("-r 1..64, -j 1..256");
	if (optind < argc)
		tmp = argv[optind];
	if (tmp != NULL && strlen(tmp) > 1000)
		die("DIR: at most 1000 bytes");
	if (optind + 1 < argc)
		mib = atol(argv[optind + 1]);
	if (mib < 4 || mib > (1 << 20))
		die("MIB: 4 or more");
	ndumps = (int)(mib / 4);
	snprintf(root, sizeof(root), "%s/mate-bench-nonfinite-%ld", tmp ? tmp : "/tmp", mib);
	snprintf(flag, sizeof(flag), "%s/.complete", root);
	if (access(flag, F_OK) != 0) {
		fprintf(stderr, "writing %d dumps (%ld MiB of tensors) in %s ...\n", ndumps, mib, root);
		if (mkdir(root, 0755) != 0 && errno != EEXIST)
			die("cannot make the root");
		for (int i = 0; i < ndumps; i++)
			write_dump(root, i, ndumps);
		close(open(flag, O_WRONLY | O_CREAT, 0644));
	}
	for (int i = 0; i < ndumps; i++) {
		char path[4300];
		const char *ext = i % 2 ? ".safetensors" : ".pt";

		snprintf(path, sizeof(path), "%s/20261128_120000_%03d_pid1_step_call%04d/inputs%s",
		    root, i / 10, i + 1, ext);
		add_file(path);
		snprintf(path, sizeof(path), "%s/20261128_120000_%03d_pid1_step_call%04d/outputs%s",
		    root, i / 10, i + 1, ext);
		add_file(path);
	}
	tcount[0] = 1;
	tcount[1] = threads;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			uint64_t rb, sb;
			size_t listed;

			tr[k][r] = time_read(tcount[k], &rb);
			ts[k][r] = time_scan(root, tcount[k], &sb, &listed);
			if (listed != 1 || sb != (uint64_t)ndumps * 2 * TENSOR_BYTES || rb < sb)
				die("the scan did not read every byte, or missed the NaN");
		}
	printf("%d dumps, %zu files, %.0f MiB, page cache, median of %d rounds (1 thread: CPU "
	    "time; more: wall time)\n", ndumps, nfiles,
	    (double)ndumps * 2 * TENSOR_BYTES / (1 << 20), rounds);
	for (int k = 0; k < 2; k++) {
		double mr = bench_median(tr[k], rounds), ms = bench_median(ts[k], rounds);
		double mb = (double)ndumps * 2 * TENSOR_BYTES / (1 << 20);

		printf("%2d thread%s: read() %7.0f MiB/s (%.3f s)  scan %7.0f MiB/s (%.3f s)  "
		    "ratio %.2f (goal >= 0.8)\n", tcount[k], tcount[k] == 1 ? " " : "s", mb / mr, mr,
		    mb / ms, ms, mr / ms);
	}
	return 0;
}
