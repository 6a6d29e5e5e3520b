/* write_ends.h: for tests of libmate's writers: its writev() calls resolve to the one here, which notes the file offset at which each write ended while write_ends_tracking is set. Include in one file of a test program. */
#ifndef MATE_TEST_WRITE_ENDS_H
#define MATE_TEST_WRITE_ENDS_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static int write_ends_tracking;
static off_t write_ends[4096];
static int nwrite_ends;

ssize_t
writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t n = syscall(SYS_writev, fd, iov, iovcnt);

	if (write_ends_tracking && n > 0 &&
	    nwrite_ends < (int)(sizeof(write_ends) / sizeof(write_ends[0])))
		write_ends[nwrite_ends++] = lseek(fd, 0, SEEK_CUR);
	return n;
}

/* How many of the writes noted ended at a multiple of unit, and how many not. */
static inline void
write_ends_count(off_t unit, int *aligned, int *unaligned)
{
	*aligned = *unaligned = 0;
	for (int i = 0; i < nwrite_ends; i++) {
		if (write_ends[i] % unit == 0)
			(*aligned)++;
		else
			(*unaligned)++;
	}
}

#endif
