/* test_pread_big.c: lib/core/error.c's mate_pread_big(): a read of 64 MiB and more split over threads gives exactly the bytes of the file, at any offset, and a short file is an error; lib/core/value.c's large storages are zero-padded. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mate_private.h"
#include "test.h"

#define MiB ((size_t)1 << 20)

/* the file's byte at offset i: a hash, so a part read from the wrong place shows */
static unsigned char
byte_at(uint64_t i)
{
	uint64_t x = (i >> 2) * 0x9E3779B97F4A7C15u;

	return (unsigned char)((x >> 40) >> (8 * (i & 3)));
}

static int
same_as_file(const unsigned char *p, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte_at(off + i))
			return 0;
	return 1;
}

/* An 80 MiB file read whole, at odd offsets, past its end, with threads
 * and without. */
DEFINE_TEST(pread_big)
{
	char path[256];
	size_t fsize = 80 * MiB + 12345, n;
	unsigned char *buf, *chunk;
	int fd;

	snprintf(path, sizeof(path), "%s/pread-big.%ld", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	    (long)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	unlink(path);
	chunk = malloc(MiB);
	CHECK(chunk != NULL);
	for (size_t at = 0; at < fsize; at += MiB) {
		n = fsize - at < MiB ? fsize - at : MiB;
		for (size_t i = 0; i < n; i++)
			chunk[i] = byte_at(at + i);
		CHECK(mate_write_all(fd, chunk, n) == 0);
	}
	free(chunk);

	buf = malloc(fsize);
	CHECK(buf != NULL);
	/* several threads (forced), one thread, and a small read: same bytes */
	setenv("MATE_NUM_THREADS", "3", 1);
	memset(buf, 0xAA, fsize);
	CHECK_EQ_INT(mate_pread_big(fd, buf, fsize, 0), 0);
	CHECK(same_as_file(buf, fsize, 0));
	/* an odd offset and length: the last part is short */
	n = 70 * MiB + 7;
	memset(buf, 0xAA, fsize);
	CHECK_EQ_INT(mate_pread_big(fd, buf, n, 4097), 0);
	CHECK(same_as_file(buf, n, 4097));
	CHECK(buf[n] == 0xAA);
	setenv("MATE_NUM_THREADS", "1", 1);
	memset(buf, 0xAA, fsize);
	CHECK_EQ_INT(mate_pread_big(fd, buf, n, 4097), 0);
	CHECK(same_as_file(buf, n, 4097));
	CHECK_EQ_INT(mate_pread_big(fd, buf, 1000, 999), 0);
	CHECK(same_as_file(buf, 1000, 999));
	/* past the end of the file: -EIO, with threads or not */
	CHECK_EQ_INT(mate_pread_big(fd, buf, 70 * MiB, fsize - 64 * MiB), -EIO);
	setenv("MATE_NUM_THREADS", "4", 1);
	CHECK_EQ_INT(mate_pread_big(fd, buf, 70 * MiB, fsize - 64 * MiB), -EIO);
	/* a bad descriptor: its errno */
	CHECK_EQ_INT(mate_pread_big(-1, buf, 70 * MiB, 0), -EBADF);
	free(buf);
	close(fd);
}

/* Large (huge-page) and small storages: the padding to 64 bytes is zero. */
DEFINE_TEST(storage_padding)
{
	mate_error err;
	mate_storage *st;

	mate_error_clear(&err);
	for (size_t sz = 1; sz <= 16 * MiB + 1; sz = sz * 7 + 3) {
		unsigned char *d;
		CHECK((st = mate_storage_new_uninit(sz, &err)) != NULL);
		d = mate_storage_data(st);
		CHECK(((uintptr_t)d & 63) == 0);
		for (size_t i = sz; i < ((sz + 63) & ~(size_t)63); i++)
			CHECK(d[i] == 0);
		memset(d, 1, sz);   /* all of it is writable */
		mate_storage_unref(st);
	}
}

TEST_MAIN()
