/* enospc-shim.c: an LD_PRELOAD library for tests that makes a folder behave like a full disk after a byte budget.
 *
 *   MATE_TEST_ENOSPC_DIR=/path    the folder (files opened under it are tracked)
 *   MATE_TEST_ENOSPC_BYTES=N      bytes that may still be written there
 *
 * Writes to tracked files (write, pwrite, writev, pwritev and their 64-bit
 * names) succeed until the budget is spent: the write that crosses it is
 * short, as the kernel's is when a disk fills, and later ones fail with
 * ENOSPC. Once it is spent, creating files or folders under the folder
 * fails with ENOSPC too. MATE_TEST_ENOSPC_HITS=PATH appends one line there
 * per refused call, so a test can tell that the shim was in play.
 *
 * Two more switches take away what atomic file output (lib/core/error.c) would
 * rather use, to test its fallbacks: MATE_TEST_NO_TMPFILE=1 fails
 * open(O_TMPFILE) with EOPNOTSUPP (as a filesystem without it does), and
 * MATE_TEST_NO_FLINK=1 fails linkat() with EPERM (as kernels before 6.10
 * without /proc do).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 65536

static const char *dir;
static size_t dir_len;
static long long budget = -1;          /* < 0: the shim is off */
static unsigned char tracked[MAX_FD];
static const char *hits_path;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_close)(int);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int no_tmpfile, no_flink;

__attribute__((constructor)) static void
shim_init(void)
{
	const char *b = getenv("MATE_TEST_ENOSPC_BYTES");

	real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	real_pwritev = (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
	real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	real_mkdir = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	real_linkat = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
	no_tmpfile = getenv("MATE_TEST_NO_TMPFILE") != NULL;
	no_flink = getenv("MATE_TEST_NO_FLINK") != NULL;
	dir = getenv("MATE_TEST_ENOSPC_DIR");
	hits_path = getenv("MATE_TEST_ENOSPC_HITS");
	if (dir != NULL && *dir != '\0' && b != NULL && *b != '\0') {
		dir_len = strlen(dir);
		budget = atoll(b);
	}
}

static void
hit(const char *what)
{
	int fd;

	if (hits_path == NULL || (fd = real_openat(AT_FDCWD, hits_path,
	    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		return;
	real_write(fd, what, strlen(what));
	real_close(fd);
}

static int
under_dir(const char *path)
{
	return budget >= 0 && path != NULL && strncmp(path, dir, dir_len) == 0 &&
	    (path[dir_len] == '/' || path[dir_len] == '\0');
}

static int
spent(void)
{
	return __atomic_load_n(&budget, __ATOMIC_RELAXED) <= 0;
}

/* How many of n bytes may be written to fd; -1 with ENOSPC for none. */
static ssize_t
allow(int fd, size_t n)
{
	long long left, take;

	if (budget < 0 || fd < 0 || fd >= MAX_FD || !tracked[fd] || n == 0)
		return (ssize_t)n;
	left = __atomic_load_n(&budget, __ATOMIC_RELAXED);
	do {
		if (left <= 0) {
			hit("write\n");
			errno = ENOSPC;
			return -1;
		}
		take = (long long)n < left ? (long long)n : left;
	} while (!__atomic_compare_exchange_n(&budget, &left, left - take, 0, __ATOMIC_RELAXED,
	    __ATOMIC_RELAXED));
	return (ssize_t)take;
}

static int
track(int fd, const char *path)
{
	if (fd >= 0 && fd < MAX_FD)
		tracked[fd] = under_dir(path);
	return fd;
}

static int
creates(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* mode = the mode argument after flags of an open() that creates (a
 * macro: va_start() belongs to the open() being defined). */
#define OPEN_MODE(flags, mode) do { \
	if (creates(flags)) { \
		va_list ap_; \
		va_start(ap_, flags); \
		mode = (mode_t)va_arg(ap_, int); \
		va_end(ap_); \
	} \
} while (0)

int
openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	if (no_tmpfile && (flags & O_TMPFILE) == O_TMPFILE) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (creates(flags) && under_dir(path) && spent()) {
		hit("create\n");
		errno = ENOSPC;
		return -1;
	}
	return track(real_openat(dirfd, path, flags, mode), path);
}

int
open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	return openat(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int
creat(const char *path, mode_t mode)
{
	return openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int
linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	if (no_flink) {
		errno = EPERM;
		return -1;
	}
	if (under_dir(newpath) && spent()) {
		hit("link\n");
		errno = ENOSPC;
		return -1;
	}
	return real_linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}

int
mkdir(const char *path, mode_t mode)
{
	if (under_dir(path) && spent()) {
		hit("mkdir\n");
		errno = ENOSPC;
		return -1;
	}
	return real_mkdir(path, mode);
}

int
close(int fd)
{
	if (fd >= 0 && fd < MAX_FD)
		tracked[fd] = 0;
	return real_close(fd);
}

ssize_t
write(int fd, const void *p, size_t n)
{
	ssize_t k = allow(fd, n);

	return k < 0 ? -1 : real_write(fd, p, (size_t)k);
}

ssize_t
pwrite(int fd, const void *p, size_t n, off_t off)
{
	ssize_t k = allow(fd, n);

	return k < 0 ? -1 : real_pwrite(fd, p, (size_t)k, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off) __attribute__((alias("pwrite")));

/* The vector forms: whole buffers up to the allowance, then a part of the next. */
static int
clip(const struct iovec *iov, int cnt, size_t k, struct iovec *out)
{
	int n = 0;

	for (int i = 0; i < cnt && i < 64 && k > 0; i++) {
		out[n] = iov[i];
		if (out[n].iov_len > k)
			out[n].iov_len = k;
		k -= out[n++].iov_len;
	}
	return n;
}

static size_t
total(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
	struct iovec v[64];
	ssize_t k = allow(fd, total(iov, cnt));

	if (k < 0)
		return -1;
	if (budget < 0 || fd < 0 || fd >= MAX_FD || !tracked[fd])
		return real_writev(fd, iov, cnt);
	return real_writev(fd, v, clip(iov, cnt, (size_t)k, v));
}

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	struct iovec v[64];
	ssize_t k = allow(fd, total(iov, cnt));

	if (k < 0)
		return -1;
	if (budget < 0 || fd < 0 || fd >= MAX_FD || !tracked[fd])
		return real_pwritev(fd, iov, cnt, off);
	return real_pwritev(fd, v, clip(iov, cnt, (size_t)k, v), off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off) __attribute__((alias("pwritev")));
