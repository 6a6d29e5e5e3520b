/* tensor-files.c: benchmark of libmate's .pt and safetensors write/read throughput, with plain write()/read() as the anchor.
 *
 * Run it through bench/tensor-files.sh, which also runs the torch.save/torch.load
 * half (bench/tensor-files-torch.py) in the same folder and prints the table.
 *
 * usage: tensor-files [--small] [--dir DIR] [--repeat N] [--cold] [--fsync]
 *                     [--no-prefault] [--format pt|safetensors|both]
 *
 * The workload is three cases of random f32 tensors, each saved as one file
 * holding a dict name -> tensor: "big" (1 x 512 MiB), "medium" (100 x 5 MiB)
 * and "small" (10,000 x 4 KiB); --small shrinks it to about 61 MiB. The data
 * is a counter hash that bench/tensor-files-torch.py reproduces bit for bit
 * (CHECKSUM lines let the driver check that).
 *
 * For each format and case, every repetition times: the libmate writer, the
 * libmate reader (with one byte of every page of its tensors read, since a
 * mapped file's pages arrive when touched), then write() of the same tensor
 * bytes plus padding to the same file size, and read() of them back into
 * freshly allocated buffers.
 * Page cache: before each timed write the target is gone and our earlier
 * files are fsync'ed (nothing of ours is dirty); a timed write ends at
 * close() (--fsync: at fsync()); after it the file is fsync'ed untimed.
 * Before each timed read the file is read through once (warm, the default)
 * or dropped from the cache with POSIX_FADV_DONTNEED (--cold).
 * Memory: right before each timed operation, the process touches and frees
 * 1.25 times the payload (--no-prefault: not). On a virtual machine that
 * hands freed memory back to its host (virtio-balloon free page reporting,
 * within seconds), the first touch of a page costs a trip to the host: about
 * 450 MiB/s here against 10 GiB/s, which would measure the host rather than
 * the code. Before a timed write it also writes a scratch file of that size
 * in the same folder and unlinks it unsynced, which does the same for the
 * page cache the write will take. The torch half does the same.
 *
 * Output, one line per figure (times are the median and the best of N):
 *   RESULT <libmate|plain> <pt|safetensors> <write|read> <case> <payload bytes> <median s> <min s>
 *   FILESIZE <libmate> <format> <case> <bytes>
 *   CHECKSUM <case> <sum of the data's u32 words>
 * "NA" replaces the times when libmate reported an error (the message goes to stderr).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fe.h"
#include "mate_core.h"
#include "bench_util.h"

#define KiB (INT64_C(1) << 10)
#define MiB (INT64_C(1) << 20)
#define MAX_REPEAT 50
#define CHUNK (4 * MiB)

struct bcase {
	const char *name;
	int64_t count;   /* tensors */
	int64_t nbytes;  /* bytes per tensor (f32, a multiple of 4 KiB) */
};

static const struct bcase full_cases[3] = {
	{ "big", 1, 512 * MiB }, { "medium", 100, 5 * MiB }, { "small", 10000, 4 * KiB },
};
static const struct bcase small_cases[3] = {
	{ "big", 1, 32 * MiB }, { "medium", 100, 256 * KiB }, { "small", 1000, 4 * KiB },
};

enum { FMT_PT = 1, FMT_ST = 2 };

struct options {
	const char *dir;
	int repeat;
	int cold;
	int fsync;
	int small;
	int formats;
	int no_prefault;
};

/* One case's data: the dict handed to the writers, and the raw tensors. */
struct workload {
	const struct bcase *c;
	mate_value *dict;
	char **names;
	void **data;     /* borrowed from the storages in dict */
	uint64_t checksum;
};

/* ---- data ------------------------------------------------------------------ */

/* lowbias32 (C. Wellons); tensor-files-torch.py computes the same in numpy. */
static uint32_t
hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/* Element i of the workload is (hash32(i) >> 8) * 2^-23 - 1, exact in f32. */
static void
fill(float *p, int64_t n, uint32_t first)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = (float)(hash32(first + (uint32_t)i) >> 8) * (1.0f / 8388608.0f) - 1.0f;
}

static uint64_t
sum_words(const void *p, int64_t nbytes)
{
	const uint32_t *w = p;
	uint64_t s = 0;

	for (int64_t i = 0; i < nbytes / 4; i++)
		s += w[i];
	return s;
}

static char *
tensor_name(const struct bcase *c, int64_t k)
{
	char buf[64];

	if (c->count == 1)
		snprintf(buf, sizeof(buf), "%s.weight", c->name);
	else
		snprintf(buf, sizeof(buf), "%s.%" PRId64 ".weight", c->name, k);
	return strdup(buf);
}

static void
workload_free(struct workload *w)
{
	if (w->names != NULL)
		for (int64_t k = 0; k < w->c->count; k++)
			free(w->names[k]);
	free(w->names);
	free(w->data);
	mate_value_free(w->dict);
	memset(w, 0, sizeof(*w));
}

static void
workload_make(struct workload *w, const struct bcase *c, uint32_t first)
{
	mate_error err;
	int64_t shape[2] = { c->nbytes / 4 / 1024, 1024 };

	memset(w, 0, sizeof(*w));
	w->c = c;
	w->dict = mate_value_dict();
	w->names = calloc((size_t)c->count, sizeof(*w->names));
	w->data = calloc((size_t)c->count, sizeof(*w->data));
	if (w->dict == NULL || w->names == NULL || w->data == NULL)
		mate_fe_errx(1, "out of memory");
	for (int64_t k = 0; k < c->count; k++) {
		mate_storage *st = mate_storage_new((size_t)c->nbytes, &err);
		mate_tensor t;

		if (st == NULL)
			mate_fe_errx(1, "%s", err.message);
		w->data[k] = mate_storage_data(st);
		fill(w->data[k], c->nbytes / 4, first + (uint32_t)(k * (c->nbytes / 4)));
		w->checksum += sum_words(w->data[k], c->nbytes);
		mate_tensor_init(&t, MATE_F32, 2, shape, NULL, NULL);
		w->names[k] = tensor_name(c, k);
		if (w->names[k] == NULL ||
		    mate_value_set_str(w->dict, w->names[k], mate_value_tensor(&t, st)) != MATE_OK)
			mate_fe_errx(1, "out of memory");
		mate_storage_unref(st);
	}
}

/* Checks a dict read back against the workload: same names, same bytes. */
static int
workload_same(const struct workload *w, const mate_value *got)
{
	if (mate_value_len(got) != (size_t)w->c->count)
		return 0;
	for (int64_t k = 0; k < w->c->count; k++) {
		const mate_tensor *t = mate_value_get_tensor(mate_value_lookup(got, w->names[k]));
		void *buf = NULL;
		const char *p;
		int same;

		if (t == NULL || t->dtype != MATE_F32 || mate_tensor_nbytes(t) != w->c->nbytes)
			return 0;
		if (mate_tensor_is_contiguous(t)) {
			p = (const char *)t->data + t->offset * 4;
		} else {
			if ((buf = malloc((size_t)w->c->nbytes)) == NULL)
				mate_fe_errx(1, "out of memory");
			mate_tensor_copy_contiguous(t, buf);
			p = buf;
		}
		same = memcmp(p, w->data[k], (size_t)w->c->nbytes) == 0;
		free(buf);
		if (!same)
			return 0;
	}
	return 1;
}

/* ---- files and the page cache ------------------------------------------------ */

/* Moves len bytes between buf and fd (to fd when writing), at most 1 GiB a call. */
static void
transfer_all(int fd, char *p, size_t len, const char *path, int writing)
{
	while (len > 0) {
		size_t part = len > (size_t)(1 << 30) ? (size_t)(1 << 30) : len;
		ssize_t n = writing ? write(fd, p, part) : read(fd, p, part);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			mate_fe_errx(1, "%s %s: %s", writing ? "write" : "read", path,
			    n < 0 ? strerror(errno) : writing ? "short write" : "short file");
		p += n;
		len -= (size_t)n;
	}
}

static void
write_all(int fd, const void *buf, size_t len, const char *path)
{
	transfer_all(fd, (char *)buf, len, path, 1);
}

static void
read_all(int fd, void *buf, size_t len, const char *path)
{
	transfer_all(fd, buf, len, path, 0);
}

/* padding for plain_write(), content for prefault_write() */
static char zeros[CHUNK];

static int
open_or_die(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		mate_fe_errx(1, "open %s: %s", path, strerror(errno));
	return fd;
}

static void
fsync_path(const char *path)
{
	int fd = open_or_die(path, O_RDONLY);

	if (fsync(fd) != 0)
		mate_fe_errx(1, "fsync %s: %s", path, strerror(errno));
	close(fd);
}

static int64_t
file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* Puts the file in the state every timed read starts from: wholly cached
 * (read through once) or wholly dropped from the cache. */
static void
prepare_read(const char *path, const struct options *o)
{
	static char buf[CHUNK];
	int fd = open_or_die(path, O_RDONLY);

	if (o->cold) {
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	} else {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
	}
	close(fd);
}

/* Touches and frees bytes of memory, so that the next timed operation gets
 * pages the host backs (see the top of the file). */
static void
remove_file(const char *path)
{
	if (unlink(path) != 0 && errno != ENOENT)
		mate_fe_errx(1, "unlink %s: %s", path, strerror(errno));
}

static void
prefault(const struct options *o, int64_t bytes)
{
	char *p;

	if (o->no_prefault || (p = malloc((size_t)bytes)) == NULL)
		return;
	memset(p, 1, (size_t)bytes);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

/*
 * Before a timed write: the same, and then a scratch file of that size is
 * written in the target's folder and unlinked unsynced (no disk I/O). The
 * anonymous pages above are not the kind a file's page cache takes (ext4
 * uses large folios); without this, a plain write()'s time swung several
 * fold from one round to the next (bench/README.md, "Tensor files").
 */
static void
prefault_write(const struct options *o, int64_t bytes)
{
	char path[4096];
	int fd;

	prefault(o, bytes);
	if (o->no_prefault)
		return;
	snprintf(path, sizeof(path), "%s/prefault.scratch", o->dir);
	fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
	for (int64_t off = 0; off < bytes; off += CHUNK)
		write_all(fd, zeros, (size_t)(bytes - off < CHUNK ? bytes - off : CHUNK), path);
	close(fd);
	remove_file(path);
}

/* ---- the timed operations -------------------------------------------------- */

static int
libmate_write(int fmt, const char *path, const struct workload *w, const struct options *o,
    double *secs)
{
	mate_error err;
	double t0 = mate_mono_seconds();
	int rc;

	mate_error_clear(&err);
	if (fmt == FMT_PT)
		rc = mate_pt_write(path, w->dict, NULL, &err);
	else
		rc = mate_safetensors_write(path, w->dict, NULL, &err);
	if (rc == MATE_OK && o->fsync)
		fsync_path(path);
	*secs = mate_mono_seconds() - t0;
	if (rc != MATE_OK) {
		mate_fe_warnx("libmate %s write: %s", fmt == FMT_PT ? "pt" : "safetensors",
		    err.message);
		return -1;
	}
	return 0;
}

/* Reads one byte of every page of each tensor the reader gave: a mapped storage costs its
 * page faults here, as read() pays its copy, so both sides end with the data in memory. */
static void
touch_pages(const mate_value *v)
{
	static volatile unsigned char sink __attribute__((unused));
	unsigned char acc = 0;

	for (size_t i = 0; i < mate_value_len(v); i++) {
		const mate_tensor *t = mate_value_get_tensor(mate_value_item(v, i));
		int64_t n = t != NULL ? mate_tensor_nbytes(t) : 0;
		const unsigned char *p = t != NULL ? (const unsigned char *)t->data : NULL;

		for (int64_t off = 0; off < n; off += 4096)
			acc ^= p[off];
		if (n > 0)
			acc ^= p[n - 1];
	}
	sink = acc;
}

static int
libmate_read(int fmt, const char *path, const struct workload *w, int verify, double *secs)
{
	struct mate_pt_read_options ro = { 0, 0, 1 };
	mate_error err;
	mate_value *v;
	double t0 = mate_mono_seconds();

	mate_error_clear(&err);
	if (fmt == FMT_PT)
		v = mate_pt_read(path, &ro, &err);
	else
		v = mate_safetensors_read(path, NULL, &err);
	if (v != NULL)
		touch_pages(v);
	*secs = mate_mono_seconds() - t0;
	if (v == NULL) {
		mate_fe_warnx("libmate %s read: %s", fmt == FMT_PT ? "pt" : "safetensors",
		    err.message);
		return -1;
	}
	if (verify && !workload_same(w, v))
		mate_fe_errx(1, "libmate %s read of %s gave different tensors",
		    fmt == FMT_PT ? "pt" : "safetensors", path);
	mate_value_free(v);
	return 0;
}

/* write() of each tensor's bytes, then padding up to file_bytes. */
static double
plain_write(const char *path, const struct workload *w, int64_t file_bytes,
    const struct options *o)
{
	int64_t pad = file_bytes - w->c->count * w->c->nbytes;
	double t0 = mate_mono_seconds();
	int fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);

	for (int64_t k = 0; k < w->c->count; k++)
		write_all(fd, w->data[k], (size_t)w->c->nbytes, path);
	for (; pad > 0; pad -= CHUNK)
		write_all(fd, zeros, (size_t)(pad < CHUNK ? pad : CHUNK), path);
	if (o->fsync && fsync(fd) != 0)
		mate_fe_errx(1, "fsync %s: %s", path, strerror(errno));
	if (close(fd) != 0)
		mate_fe_errx(1, "close %s: %s", path, strerror(errno));
	return mate_mono_seconds() - t0;
}

/* read() of the same bytes into one fresh buffer per tensor. */
static double
plain_read(const char *path, const struct workload *w, int verify)
{
	static char scratch[CHUNK];
	void **bufs = calloc((size_t)w->c->count, sizeof(*bufs));
	double t0, secs;
	int fd;
	ssize_t n;

	if (bufs == NULL)
		mate_fe_errx(1, "out of memory");
	t0 = mate_mono_seconds();
	fd = open_or_die(path, O_RDONLY);
	for (int64_t k = 0; k < w->c->count; k++) {
		if ((bufs[k] = malloc((size_t)w->c->nbytes)) == NULL)
			mate_fe_errx(1, "out of memory");
		read_all(fd, bufs[k], (size_t)w->c->nbytes, path);
	}
	while ((n = read(fd, scratch, sizeof(scratch))) > 0)
		;
	close(fd);
	secs = mate_mono_seconds() - t0;
	for (int64_t k = 0; k < w->c->count; k++) {
		if (verify && memcmp(bufs[k], w->data[k], (size_t)w->c->nbytes) != 0)
			mate_fe_errx(1, "plain read of %s gave different bytes", path);
		free(bufs[k]);
	}
	free(bufs);
	return secs;
}

/* ---- driver ------------------------------------------------------------------ */

struct timing {
	double t[MAX_REPEAT];
	int n;
	int failed;
};

static void
report(const char *who, const char *fmt, const char *op, const struct workload *w,
    struct timing *tm)
{
	int64_t payload = w->c->count * w->c->nbytes;
	double median;

	if (tm->failed || tm->n == 0) {
		printf("RESULT %s %s %s %s %" PRId64 " NA NA\n", who, fmt, op, w->c->name, payload);
		return;
	}
	median = bench_median(tm->t, tm->n);
	printf("RESULT %s %s %s %s %" PRId64 " %.6f %.6f\n", who, fmt, op, w->c->name, payload,
	    median, tm->t[0]);
}

/* All repetitions for one format and case; prints its RESULT lines. */
static void
run_case(int fmt, const struct workload *w, const struct options *o)
{
	const char *fname = fmt == FMT_PT ? "pt" : "safetensors";
	char path[4096], ppath[4096];
	struct timing lw = { .n = 0 }, lr = { .n = 0 }, pw = { .n = 0 }, pr = { .n = 0 };
	int64_t fsize = -1, mem = w->c->count * w->c->nbytes / 4 * 5;
	double s;

	snprintf(path, sizeof(path), "%s/libmate-%s.%s", o->dir, w->c->name, fname);
	snprintf(ppath, sizeof(ppath), "%s/plain-%s.%s.raw", o->dir, w->c->name, fname);
	for (int r = 0; r < o->repeat; r++) {
		remove_file(path);
		prefault_write(o, mem);
		if (!lw.failed && libmate_write(fmt, path, w, o, &s) == 0) {
			lw.t[lw.n++] = s;
			fsync_path(path);
			fsize = file_size(path);
			prepare_read(path, o);
			prefault(o, mem);
			if (libmate_read(fmt, path, w, r == 0, &s) == 0)
				lr.t[lr.n++] = s;
			else
				lr.failed = 1;
			remove_file(path);
		} else {
			lw.failed = lr.failed = 1;
		}
		remove_file(ppath);
		prefault_write(o, mem);
		pw.t[pw.n++] = plain_write(ppath, w, fsize > 0 ? fsize : w->c->count * w->c->nbytes, o);
		fsync_path(ppath);
		prepare_read(ppath, o);
		prefault(o, mem);
		pr.t[pr.n++] = plain_read(ppath, w, r == 0);
		remove_file(ppath);
	}
	if (fsize > 0)
		printf("FILESIZE libmate %s %s %" PRId64 "\n", fname, w->c->name, fsize);
	report("libmate", fname, "write", w, &lw);
	report("libmate", fname, "read", w, &lr);
	report("plain", fname, "write", w, &pw);
	report("plain", fname, "read", w, &pr);
	fflush(stdout);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s [--small] [--dir DIR] [--repeat N] [--cold] [--fsync]\n"
	    "       [--no-prefault] [--format pt|safetensors|both]\n"
	    "Times libmate's .pt/safetensors writers and readers and plain write()/read();\n"
	    "normally run by bench/tensor-files.sh, which adds torch and prints the table.\n",
	    mate_fe_progname());
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "small", no_argument, NULL, 's' }, { "dir", required_argument, NULL, 'd' },
		{ "repeat", required_argument, NULL, 'r' }, { "cold", no_argument, NULL, 'c' },
		{ "fsync", no_argument, NULL, 'f' }, { "format", required_argument, NULL, 'F' },
		{ "no-prefault", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int ch;

	*o = (struct options){ .dir = ".", .repeat = 3, .formats = FMT_PT | FMT_ST };
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': o->small = 1; break;
		case 'd': o->dir = optarg; break;
		case 'r': o->repeat = (int)mate_fe_parse_count("--repeat", optarg); break;
		case 'c': o->cold = 1; break;
		case 'f': o->fsync = 1; break;
		case 'P': o->no_prefault = 1; break;
		case 'F':
			if (strcmp(optarg, "pt") == 0)
				o->formats = FMT_PT;
			else if (strcmp(optarg, "safetensors") == 0)
				o->formats = FMT_ST;
			else if (strcmp(optarg, "both") == 0)
				o->formats = FMT_PT | FMT_ST;
			else
				mate_fe_usage_error("bad value for --format: %s", optarg);
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc)
		mate_fe_usage_error("unexpected argument: %s", argv[optind]);
	if (o->repeat < 1 || o->repeat > MAX_REPEAT)
		mate_fe_usage_error("--repeat must be 1 to %d", MAX_REPEAT);
}

int
main(int argc, char **argv)
{
	struct options o;
	const struct bcase *cases;
	uint32_t first = 0;

	mate_fe_set_progname(argv[0]);
	parse_options(argc, argv, &o);
	cases = o.small ? small_cases : full_cases;
	printf("CONFIG mode=%s repeat=%d cache=%s fsync=%s prefault=%s dir=%s\n",
	    o.small ? "small" : "full", o.repeat, o.cold ? "cold" : "warm", o.fsync ? "yes" : "no",
	    o.no_prefault ? "no" : "yes", o.dir);
	for (int i = 0; i < 3; i++) {
		struct workload w;

		workload_make(&w, &cases[i], first);
		printf("CHECKSUM %s %" PRIu64 "\n", cases[i].name, w.checksum);
		if (o.formats & FMT_PT)
			run_case(FMT_PT, &w, &o);
		if (o.formats & FMT_ST)
			run_case(FMT_ST, &w, &o);
		workload_free(&w);
		first += (uint32_t)(cases[i].count * (cases[i].nbytes / 4));
	}
	return 0;
}
