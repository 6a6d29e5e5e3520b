/* error.c: error reporting, checked I/O helpers and atomic file output for libmate. */
#include "mate_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
mate_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
mate_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
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

/* "<path>.tmp.<pid>.<n>" without printf, whose cost grows when a library
 * of the host (libquadmath) registers printf handlers; out has room for
 * path and 64 more bytes. */
static void
tmp_name(char *out, const char *path, uint64_t pid, unsigned n)
{
	size_t len = strlen(path);
	char num[24];
	int k;

	memcpy(out, path, len);
	memcpy(out + len, ".tmp.", 5);
	len += 5;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t v = pass == 0 ? pid : n;
		k = 0;
		do
			num[k++] = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		while (k > 0)
			out[len++] = num[--k];
		if (pass == 0)
			out[len++] = '.';
	}
	out[len] = '\0';
}

int
mate_atomic_open(mate_atomic_file *af, const char *path, mate_error *err)
{
	static unsigned counter;
	size_t n = strlen(path) + 64;

	af->fd = -1;
	af->path = strdup(path);
	af->tmp_path = malloc(n);
	if (af->path == NULL || af->tmp_path == NULL) {
		mate_atomic_abort(af);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	tmp_name(af->tmp_path, path, (uint64_t)getpid(),
	    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	af->fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (af->fd < 0) {
		int e = errno;
		mate_set_errno(err, e, "cannot create", af->tmp_path);
		mate_atomic_abort(af);
		return err != NULL ? err->code : MATE_ERR_IO;
	}
	return MATE_OK;
}

int
mate_atomic_commit(mate_atomic_file *af, mate_error *err)
{
	int rc = MATE_OK;

	/* No fsync: rename after a complete write is what makes a killed
	 * process leave no torn file; power loss is out of scope. */
	if (close(af->fd) != 0)
		rc = mate_set_errno(err, errno, "cannot close", af->tmp_path);
	af->fd = -1;
	if (rc == MATE_OK && rename(af->tmp_path, af->path) != 0)
		rc = mate_set_errno(err, errno, "cannot rename", af->tmp_path);
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
	if (af->tmp_path != NULL)
		unlink(af->tmp_path);
	free(af->path);
	free(af->tmp_path);
	af->fd = -1;
	af->path = af->tmp_path = NULL;
}
