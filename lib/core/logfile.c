/* logfile.c: opening the files the recorder appends to without blocking its host or crossing a planted symlink. */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kinds of file a user may name: a FIFO or socket is opened only when
 * a reader holds it (O_NONBLOCK), so nothing waits for one. */
static int
kind_ok(mode_t mode, enum mate_log_name name)
{
	if (S_ISREG(mode))
		return 1;
	return name == MATE_LOG_NAMED &&
	    (S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode));
}

int
mate_log_open(const char *path, int flags, enum mate_log_name name)
{
	struct stat st;
	int fd, fl, e;

	/* made by this open: a regular file, and nothing to wait for */
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return (fd = open(path, flags | O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644)) < 0 ?
		    -errno : fd;
	flags |= O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	if (name != MATE_LOG_NAMED)
		flags |= O_NOFOLLOW;
	if ((fd = open(path, flags, 0644)) < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return -e;
	}
	if (!kind_ok(st.st_mode, name)) {
		close(fd);
		return -MATE_ENOTREG;
	}
	/* once open, writes wait as they would on stderr: the user chose the reader */
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

const char *
mate_log_strerror(int errnum)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == ELOOP)
		return "a symbolic link (refused: name the link itself to follow it)";
	if (errnum == MATE_ENOTREG)
		return "not a regular file (refused)";
	if (errnum == ENXIO)
		return "no reader (a FIFO is written only while one reads it)";
	return strerror(errnum);
}

enum mate_log_name
mate_log_name_of(const char *tmpl)
{
	return tmpl != NULL && strstr(tmpl, "%i") != NULL ? MATE_LOG_MADE : MATE_LOG_NAMED;
}
