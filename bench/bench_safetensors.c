/* bench_safetensors.c: safetensors write/read throughput against plain write()/pread() of the same bytes.
 *
 * usage: bench_safetensors [DIR] [MiB-of-the-big-tensor]
 * Cases: one 512 MiB tensor; a 1 GiB mix (512 MiB + 100 x 5 MiB + 10,000 x 4 KiB).
 * Prints MB/s for each and the ratio to the plain baseline. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mate_core.h"
#include "util.h"

static void
add(mate_value *d, const char *name, size_t nbytes)
{
	int64_t n = (int64_t)(nbytes / 4);
	mate_tensor t;
	mate_storage *st = mate_storage_new(nbytes, NULL);

	memset(mate_storage_data(st), 0x5a, nbytes);  /* touch the pages */
	mate_tensor_init(&t, MATE_F32, 1, &n, NULL, NULL);
	mate_value_set_str(d, name, mate_value_tensor(&t, st));
	mate_storage_unref(st);
}

/* Plain write() of every tensor's bytes, one call per tensor. */
static double
plain_write(const char *path, const mate_value *d)
{
	double t0 = mate_mono_seconds();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t total = 0;

	for (size_t i = 0; i < mate_value_len(d); i++) {
		const mate_tensor *t = mate_value_get_tensor(mate_value_item(d, i));
		size_t n = (size_t)mate_tensor_nbytes(t);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(fd, (char *)t->data + off, n - off);
			if (w <= 0)
				abort();
			off += (size_t)w;
		}
		total += n;
	}
	close(fd);
	return (double)total / (mate_mono_seconds() - t0) / 1e6;
}

static double
plain_read(const char *path, size_t total)
{
	double t0 = mate_mono_seconds();
	int fd = open(path, O_RDONLY);
	char *buf = malloc(total);

	for (size_t off = 0; off < total;) {
		ssize_t r = pread(fd, buf + off, total - off, (off_t)off);
		if (r <= 0)
			abort();
		off += (size_t)r;
	}
	close(fd);
	free(buf);
	return (double)total / (mate_mono_seconds() - t0) / 1e6;
}

static void
run_case(const char *label, const mate_value *d, const char *dir)
{
	char p1[512], p2[512];
	size_t total = 0;
	double pw = 0, pr = 0, mw = 0, mr = 0, t0;
	mate_error err;

	for (size_t i = 0; i < mate_value_len(d); i++)
		total += (size_t)mate_tensor_nbytes(mate_value_get_tensor(mate_value_item(d, i)));
	snprintf(p1, sizeof(p1), "%s/bench-plain.bin", dir);
	snprintf(p2, sizeof(p2), "%s/bench.safetensors", dir);
	for (int rep = 0; rep < 3; rep++) {
		double a = plain_write(p1, d), b, c, e;
		b = plain_read(p1, total);
		unlink(p1);
		t0 = mate_mono_seconds();
		if (mate_safetensors_write(p2, d, NULL, &err) != MATE_OK) {
			fprintf(stderr, "write: %s\n", err.message);
			exit(1);
		}
		c = (double)total / (mate_mono_seconds() - t0) / 1e6;
		t0 = mate_mono_seconds();
		mate_value *r = mate_safetensors_read(p2, NULL, &err);
		e = (double)total / (mate_mono_seconds() - t0) / 1e6;
		if (r == NULL) {
			fprintf(stderr, "read: %s\n", err.message);
			exit(1);
		}
		mate_value_free(r);
		unlink(p2);
		pw = a > pw ? a : pw;
		pr = b > pr ? b : pr;
		mw = c > mw ? c : mw;
		mr = e > mr ? e : mr;
	}
	printf("%-34s write %7.0f MB/s (plain %7.0f, %3.0f%%)  read %7.0f MB/s (plain %7.0f, %3.0f%%)\n",
	    label, mw, pw, 100 * mw / pw, mr, pr, 100 * mr / pr);
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	size_t big = (argc > 2 ? (size_t)atoi(argv[2]) : 512) << 20;
	mate_value *d = mate_value_dict();
	char name[32];

	add(d, "big", big);
	run_case("one 512 MiB tensor", d, dir);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "mid.%d", i);
		add(d, name, 5 << 20);
	}
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "small.%d", i);
		add(d, name, 4096);
	}
	run_case("1 GiB: 512M + 100x5M + 10000x4K", d, dir);
	mate_value_free(d);
	return 0;
}
