/* test_wqueue.c: the file writers' output queue (lib/core/wqueue.c): bytes in order, writes that end on 2 MiB boundaries, the iovec limit, sticky errors. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wqueue.h"
#include "test.h"
#include "write_ends.h"
#include "xorshift.h"

#define MiB ((size_t)1 << 20)

static char path[256];

static uint32_t rng = 12345;

/* Everything fd's file holds, compared with want. */
static int
file_is(int fd, const unsigned char *want, size_t n)
{
	unsigned char *got = malloc(n + 1);
	ssize_t k = got != NULL ? pread(fd, got, n + 1, 0) : -1;
	int same = k == (ssize_t)n && memcmp(got, want, n) == 0;

	free(got);
	return same;
}

/* A random mix of copied pieces and pieces put from where they lie (stable,
 * some not): the file holds them in order, and every write but the last
 * and those of unstable pieces ends on a 2 MiB boundary. */
DEFINE_TEST(mix)
{
	size_t total = 40 * MiB, off = 0;
	unsigned char *src = malloc(total), buf[65536];
	off_t unstable_ends[256];
	int nunstable = 0, fd, bad = 0;
	struct mate_wq q;

	for (size_t i = 0; i < total; i++)
		src[i] = (unsigned char)xorshift32(&rng);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	mate_wq_init(&q, fd, buf, sizeof(buf));
	nwrite_ends = 0;
	while (off < total) {
		uint32_t r = xorshift32(&rng);
		size_t n = r % 4 == 0 ? r % 4000 : r % 4 == 1 ? r % (3 * MiB) : r % 300000;

		n = n < total - off ? n : total - off;
		if (r % 4 == 0)
			CHECK_EQ_INT(mate_wq_copy(&q, src + off, n), 0);
		else if (r % 32 == 1 && nunstable < 256) {
			CHECK_EQ_INT(mate_wq_put(&q, src + off, n, 0), 0);
			if (n > 0)
				unstable_ends[nunstable++] = (off_t)(off + n);
		} else
			CHECK_EQ_INT(mate_wq_put(&q, src + off, n, 1), 0);
		off += n;
		CHECK(mate_wq_offset(&q) == off);
	}
	CHECK_EQ_INT(mate_wq_flush(&q), 0);
	CHECK(file_is(fd, src, total));
	CHECK(nwrite_ends > 10 && write_ends[nwrite_ends - 1] == (off_t)total);
	for (int i = 0; i < nwrite_ends - 1; i++) {
		int ok = write_ends[i] % (off_t)(2 * MiB) == 0;

		for (int k = 0; k < nunstable && !ok; k++)
			ok = write_ends[i] == unstable_ends[k];
		bad += !ok;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(nunstable > 0);
	close(fd);
	free(src);
}

/* More small stable pieces than the queue holds, apart in memory, none
 * reaching a boundary: written when the queue is full. */
DEFINE_TEST(many_pieces)
{
	enum { N = 3 * MATE_WQ_IOVS + 5, SZ = 1000 };
	unsigned char *pieces[N], *want = malloc((size_t)N * SZ), buf[64];
	struct mate_wq q;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	mate_wq_init(&q, fd, buf, sizeof(buf));
	nwrite_ends = 0;
	for (int i = 0; i < N; i++) {
		pieces[i] = malloc(SZ + 64);   /* + 64: never adjacent */
		for (int k = 0; k < SZ; k++)
			pieces[i][k] = want[(size_t)i * SZ + (size_t)k] = (unsigned char)xorshift32(&rng);
		CHECK_EQ_INT(mate_wq_put(&q, pieces[i], SZ, 1), 0);
	}
	CHECK_EQ_INT(nwrite_ends, 3);
	CHECK_EQ_INT(mate_wq_flush(&q), 0);
	CHECK_EQ_INT(nwrite_ends, 4);
	CHECK(file_is(fd, want, (size_t)N * SZ));
	for (int i = 0; i < N; i++)
		free(pieces[i]);
	free(want);
	close(fd);
}

/* A write error (a full disk: /dev/full) sticks: every later call fails
 * and writes nothing. A copy or a reservation larger than the buffer is
 * refused with EINVAL. */
DEFINE_TEST(errors)
{
	static unsigned char big[3 << 20];
	unsigned char buf[16];
	struct mate_wq q;
	int fd = open("/dev/full", O_WRONLY);

	if (fd >= 0) {
		mate_wq_init(&q, fd, buf, sizeof(buf));
		CHECK_EQ_INT(mate_wq_copy(&q, "abc", 3), 0);
		CHECK_EQ_INT(mate_wq_put(&q, big, sizeof(big), 1), -1);
		CHECK_EQ_INT(q.error, ENOSPC);
		CHECK_EQ_INT(mate_wq_copy(&q, "abc", 3), -1);
		CHECK(mate_wq_reserve(&q, 3) == NULL);
		CHECK_EQ_INT(mate_wq_put(&q, big, 10, 0), -1);
		CHECK_EQ_INT(mate_wq_flush(&q), -1);
		CHECK_EQ_INT(q.error, ENOSPC);
		close(fd);
	} else {
		fprintf(stderr, "no /dev/full: the full-disk case is not run\n");
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	mate_wq_init(&q, fd, buf, sizeof(buf));
	CHECK_EQ_INT(mate_wq_copy(&q, big, sizeof(buf) + 1), -1);
	CHECK_EQ_INT(q.error, EINVAL);
	mate_wq_init(&q, fd, buf, sizeof(buf));
	CHECK(mate_wq_reserve(&q, sizeof(buf) + 1) == NULL);
	CHECK_EQ_INT(q.error, EINVAL);
	close(fd);
}

int
main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int st;

	snprintf(path, sizeof(path), "%s/test_wqueue.%ld", base, (long)getpid());
	write_ends_tracking = 1;
	st = test_main(argc, argv);
	unlink(path);
	return st;
}
