/* error.c: error reporting, checked I/O helpers and atomic file output for libmate. */
#include "mate_private.h"
#include "parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *
mate_version_string(void)
{
	return PACKAGE_VERSION;
}

void
mate_error_clear(mate_error *err)
{
	if (err == NULL)
		return;
	err->code = MATE_OK;
	err->sys_errno = 0;
	err->message[0] = '\0';
}

int
mate_set_error(mate_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return code;
	err->code = code;
	err->sys_errno = 0;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

int
mate_set_errno(mate_error *err, int errnum, const char *what, const char *path)
{
	int code = MATE_ERR_IO;

	if (errnum == ENOSPC || errnum == EDQUOT)
		code = MATE_ERR_NOSPACE;
	else if (errnum == ENOMEM)
		code = MATE_ERR_NOMEM;
	if (path != NULL)
		mate_set_error(err, code, "%s: %s: %s", what, path, strerror(errnum));
	else
		mate_set_error(err, code, "%s: %s", what, strerror(errnum));
	if (err != NULL)
		err->sys_errno = errnum;
	return code;
}

int
mate_open_unchecked(int dirfd, const char *path, int nofollow)
{
	struct stat st;
	int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)),
	    e;

	if (fd < 0) {
		e = errno;
		/* O_NOFOLLOW's ELOOP: the name itself is a link, refused as any other kind */
		if (e == ELOOP && nofollow && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			e = EFTYPE_MATE;
		return -e;
	}
	return fd;
}

int
mate_open_regular(int dirfd, const char *path, int nofollow)
{
	struct stat st;
	int fd = mate_open_unchecked(dirfd, path, nofollow), e;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0)
		e = errno;
	else if (!S_ISREG(st.st_mode))
		e = EFTYPE_MATE;
	else
		return fd;
	close(fd);
	return -e;
}

/* All len bytes at p: written out (write), else read at off (pread), in pieces
 * of at most 1 GiB, again after EINTR. 0, -errno, or -EIO at the end. */
static int
io_all(int fd, char *p, size_t len, uint64_t off, int out)
{
	while (len > 0) {
		size_t part = len > (1u << 30) ? (1u << 30) : len;
		ssize_t n = out ? write(fd, p, part) : pread(fd, p, part, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int
mate_write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (char *)buf, len, 0, 1);
}

int
mate_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return io_all(fd, buf, len, off, 0);
}

/* Large reads are split over threads: each copies its part out of the page
 * cache and takes the page faults of its part of the buffer, which is most
 * of the cost of reading a file that is already cached. */
#define PREAD_SPLIT_MIN ((size_t)64 << 20)     /* below: one pread loop */
#define PREAD_CHUNK ((int64_t)8 << 20)

struct pread_job {
	int fd;
	char *buf;
	uint64_t off;
	size_t len;
	int rc;                      /* the first error, 0 if none */
};

static void
pread_chunks(void *ctx, int64_t begin, int64_t end)
{
	struct pread_job *j = ctx;

	for (int64_t c = begin; c < end; c++) {
		size_t at = (size_t)c * (size_t)PREAD_CHUNK;
		size_t n = j->len - at < (size_t)PREAD_CHUNK ? j->len - at : (size_t)PREAD_CHUNK;
		int rc;
		if (__atomic_load_n(&j->rc, __ATOMIC_RELAXED) != 0)
			return;
		if ((rc = mate_pread_all(j->fd, j->buf + at, n, j->off + at)) != 0) {
			int none = 0;
			__atomic_compare_exchange_n(&j->rc, &none, rc, 0, __ATOMIC_RELAXED,
			    __ATOMIC_RELAXED);
			return;
		}
	}
}

int
mate_pread_big(int fd, void *buf, size_t len, uint64_t off)
{
	struct pread_job j = { fd, buf, off, len, 0 };

	if (len < PREAD_SPLIT_MIN || mate_parallel_threads() < 2)
		return mate_pread_all(fd, buf, len, off);
	/* cost per chunk: enough that every chunk may get a thread */
	mate_parallel_for((int64_t)((len + (size_t)PREAD_CHUNK - 1) / (size_t)PREAD_CHUNK),
	    1 << 20, pread_chunks, &j);
	return j.rc;
}

/* 0 once O_TMPFILE files cannot be made or linked here: named temporary
 * files from then on. */
static int unnamed_ok = 1;

/* An O_TMPFILE file in path's directory, or -1. */
int
mate_open_unnamed(const char *path)
{
#ifdef O_TMPFILE
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, e;

	if (!__atomic_load_n(&unnamed_ok, __ATOMIC_RELAXED))
		return -1;
	if (slash == NULL)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (dir == NULL)
		return -1;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644); /* readable: see copy_unnamed() */
	e = errno;
	free(dir);
	/* no support in the kernel or the filesystem: never again; other
	 * errors are left for the named file to report */
	if (fd < 0 && (e == EOPNOTSUPP || e == EISDIR || e == EINVAL))
		__atomic_store_n(&unnamed_ok, 0, __ATOMIC_RELAXED);
	return fd;
#else
	(void)path;
	return -1;
#endif
}

/* What a name that is not a regular file is, for the refusal. */
static const char *
kind_of(mode_t mode)
{
	return S_ISLNK(mode) ? "a symbolic link" : S_ISDIR(mode) ? "a directory" :
	    S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device" :
	    S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

int
mate_atomic_open(mate_atomic_file *af, const char *path, mate_error *err)
{
	size_t n = strlen(path) + 64;
	struct stat sb;

	af->fd = -1;
	af->unnamed = 0;
	af->path = af->tmp_path = NULL;
	af->path = strdup(path);
	af->tmp_path = malloc(n);
	if (af->path == NULL || af->tmp_path == NULL) {
		mate_atomic_abort(af);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	/* An unnamed file takes no temporary name (the one in messages is the path's) and
	 * refuses a link or special file at path when it is linked there (EEXIST): the
	 * common case is open, write, link, close. */
	memcpy(af->tmp_path, path, n - 63);
	if ((af->fd = mate_open_unnamed(path)) >= 0) {
		af->unnamed = 1;
		return MATE_OK;
	}
	/* the final rename would replace the link or special file itself */
	if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		mate_atomic_abort(af);
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s is %s: not replaced", path,
		    kind_of(sb.st_mode));
	}
	af->fd = mate_tmp_create(af->tmp_path, path);
	if (af->fd < 0) {
		int e = -af->fd;
		af->fd = -1;
		mate_set_errno(err, e, "cannot create", af->tmp_path);
		mate_atomic_abort(af);
		return err != NULL ? err->code : MATE_ERR_IO;
	}
	return MATE_OK;
}

/* Gives the unnamed file fd the name `name`: linkat(AT_EMPTY_PATH) (Linux
 * 6.10 lets the opener do it), else through /proc/self/fd. 0 or errno. */
int
mate_link_unnamed(int fd, const char *name)
{
	char proc[64];
	int e;

#ifdef AT_EMPTY_PATH
	if (linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH) == 0)
		return 0;
	if ((e = errno) == EEXIST)
		return e;
#endif
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	e = errno;
	return e;
}

/* Copies the unnamed file's bytes into a named temporary file (when it
 * cannot be linked). 0 or errno. */
static int
copy_unnamed(mate_atomic_file *af)
{
	char buf[65536];
	uint64_t off = 0;
	ssize_t got;
	int out = mate_tmp_create(af->tmp_path, af->path), rc = 0;

	if (out < 0)
		return -out;
	while (rc == 0 && (got = pread(af->fd, buf, sizeof(buf), (off_t)off)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		rc = got < 0 ? errno : -mate_write_all(out, buf, (size_t)got);
		off += got > 0 ? (uint64_t)got : 0;
	}
	if (close(out) != 0 && rc == 0)
		rc = errno;
	return rc;
}

/* Names a finished unnamed file: a link, or (a regular file is at path) a
 * link to the temporary name renamed over path, or (no way to link) a copy
 * under the temporary name, renamed; a link or special file at path is
 * refused. MATE_OK or the error set in err; af->unnamed is 0 once the
 * temporary name may exist. */
static int
name_unnamed(mate_atomic_file *af, mate_error *err)
{
	int e = mate_link_unnamed(af->fd, af->path);
	struct stat sb;

	if (e == 0)
		return MATE_OK;
	/* something is at path: replaced only when it is a regular file */
	if (e == EEXIST && lstat(af->path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s is %s: not replaced", af->path,
		    kind_of(sb.st_mode));
	mate_tmp_name(af->tmp_path, af->path);
	if (e == EEXIST) {
		e = mate_link_unnamed(af->fd, af->tmp_path);
	} else {
		__atomic_store_n(&unnamed_ok, 0, __ATOMIC_RELAXED);
		e = copy_unnamed(af);
	}
	af->unnamed = 0;
	if (e == 0 && rename(af->tmp_path, af->path) != 0)
		e = errno;
	return e != 0 ? mate_set_errno(err, e, "cannot name", af->path) : MATE_OK;
}

int
mate_atomic_commit(mate_atomic_file *af, mate_error *err)
{
	int rc = MATE_OK;

	/* No fsync: naming the file only when it is complete is what makes a
	 * killed process leave no torn file; power loss is out of scope. */
	if (!af->unnamed) {
		if (close(af->fd) != 0)
			rc = mate_set_errno(err, errno, "cannot close", af->tmp_path);
		af->fd = -1;
		if (rc == MATE_OK && rename(af->tmp_path, af->path) != 0)
			rc = mate_set_errno(err, errno, "cannot rename", af->tmp_path);
	} else if ((rc = name_unnamed(af, err)) != MATE_OK) {
		;
	} else if (close(af->fd) != 0) {
		/* a late write error: the name must not stay on the file */
		rc = mate_set_errno(err, errno, "cannot close", af->path);
		af->fd = -1;
		unlink(af->path);
	} else
		af->fd = -1;
	if (rc != MATE_OK) {
		mate_atomic_abort(af);
		return rc;
	}
	free(af->path);
	free(af->tmp_path);
	af->path = af->tmp_path = NULL;
	return MATE_OK;
}

void
mate_atomic_abort(mate_atomic_file *af)
{
	if (af->fd >= 0)
		close(af->fd);
	if (af->tmp_path != NULL && !af->unnamed)
		unlink(af->tmp_path);
	free(af->path);
	free(af->tmp_path);
	af->fd = -1;
	af->path = af->tmp_path = NULL;
}
