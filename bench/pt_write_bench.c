/* pt_write_bench.c: mate_pt_write() throughput against plain write() of the same bytes, and zlib's CRC-32 alone.
 *
 * usage: pt_write_bench [DIR] [REPEATS]
 * Cases (about 1 GiB in all): one 512 MiB tensor, 100 x 5 MiB, 10,000 x 4 KiB.
 * For each: the best of REPEATS (default 3) runs of mate_pt_write(), of
 * write() of every tensor's bytes to one file (one call per tensor), and of
 * zlib's crc32() over the same bytes (libarchive's own CRC, which the
 * writer no longer uses: it computes libdeflate's).
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "mate_core.h"
#include "util.h"

struct bcase {
	const char *name;
	int count;
	size_t bytes;
};

static mate_value *
make_dict(const struct bcase *c, mate_storage **st)
{
	mate_value *d = mate_value_dict();
	char key[32];

	for (int i = 0; i < c->count; i++) {
		int64_t shape[1] = { (int64_t)(c->bytes / 4) };
		mate_tensor t;
		unsigned char *p;
		st[i] = mate_storage_new(c->bytes, NULL);
		if (st[i] == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		p = mate_storage_data(st[i]);
		for (size_t k = 0; k < c->bytes; k += 64)
			p[k] = (unsigned char)(k ^ (size_t)i);
		mate_tensor_init(&t, MATE_F32, 1, shape, NULL, NULL);
		snprintf(key, sizeof(key), "layer.%d.weight", i);
		mate_value_set_str(d, key, mate_value_tensor(&t, st[i]));
	}
	return d;
}

static double
time_plain(const char *path, const struct bcase *c, mate_storage **st)
{
	double t0 = mate_mono_seconds();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (int i = 0; i < c->count; i++) {
		const char *p = mate_storage_data(st[i]);
		size_t left = c->bytes;
		while (left > 0) {
			ssize_t n = write(fd, p, left);
			if (n <= 0) {
				perror("write");
				exit(1);
			}
			p += n;
			left -= (size_t)n;
		}
	}
	close(fd);
	return mate_mono_seconds() - t0;
}

static double
time_crc(const struct bcase *c, mate_storage **st, unsigned long *sum)
{
	double t0 = mate_mono_seconds();

	for (int i = 0; i < c->count; i++) {
		const unsigned char *p = mate_storage_data(st[i]);
		unsigned long crc = 0;
		for (size_t off = 0; off < c->bytes; off += 1 << 20) {
			size_t k = c->bytes - off < (1 << 20) ? c->bytes - off : (1 << 20);
			crc = crc32(crc, p + off, (unsigned)k);
		}
		*sum += crc;
	}
	return mate_mono_seconds() - t0;
}

int
main(int argc, char **argv)
{
	static const struct bcase cases[] = {
		{ "1 x 512 MiB", 1, (size_t)512 << 20 },
		{ "100 x 5 MiB", 100, (size_t)5 << 20 },
		{ "10000 x 4 KiB", 10000, 4096 },
	};
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int repeats = argc > 2 ? atoi(argv[2]) : 3;
	char pt[4096], raw[4096];
	unsigned long sum = 0;

	snprintf(pt, sizeof(pt), "%s/pt_write_bench.%ld.pt", dir, (long)getpid());
	snprintf(raw, sizeof(raw), "%s/pt_write_bench.%ld.raw", dir, (long)getpid());
	printf("%-14s %10s %10s %10s %7s\n", "case", "write()", "mate_pt", "crc32", "ratio");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct bcase *c = &cases[k];
		mate_storage **st = calloc((size_t)c->count, sizeof(*st));
		mate_value *d = make_dict(c, st);
		double total = (double)c->count * (double)c->bytes;
		double best_plain = 1e30, best_pt = 1e30, best_crc = 1e30;
		mate_error err;

		for (int r = 0; r < repeats; r++) {
			double t = time_plain(raw, c, st);
			best_plain = t < best_plain ? t : best_plain;
			unlink(raw);
			t = mate_mono_seconds();
			if (mate_pt_write(pt, d, NULL, &err) != MATE_OK) {
				fprintf(stderr, "mate_pt_write: %s\n", err.message);
				return 1;
			}
			t = mate_mono_seconds() - t;
			best_pt = t < best_pt ? t : best_pt;
			unlink(pt);
			t = time_crc(c, st, &sum);
			best_crc = t < best_crc ? t : best_crc;
		}
		printf("%-14s %7.2f GB/s %6.2f GB/s %6.2f GB/s %6.0f%%\n", c->name,
		    total / best_plain / 1e9, total / best_pt / 1e9, total / best_crc / 1e9,
		    100.0 * best_plain / best_pt);
		mate_value_free(d);
		for (int i = 0; i < c->count; i++)
			mate_storage_unref(st[i]);
		free(st);
	}
	return sum == 42 ? 2 : 0;
}
