/* wqueue.h: the output side of libmate's file writers: small pieces gathered, large ones written from where they lie, in writes that end on 2 MiB boundaries. */
#ifndef MATE_WQUEUE_H_INCLUDED
#define MATE_WQUEUE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define MATE_WQ_ALIGN ((uint64_t)2 << 20)   /* writes end at multiples of this */
#define MATE_WQ_IOVS 64                     /* pieces queued at most */

/*
 * Pieces are queued in file order and written with writev(). A piece the
 * caller keeps in place until the end (mate_wq_put(stable = 1)) may stay
 * queued: the queue is written up to the last multiple of MATE_WQ_ALIGN it
 * reaches, and the rest waits for the next piece. So a write ends off such
 * a boundary only when it is the last, writes an unstable piece, or makes
 * room (a full buffer, MATE_WQ_IOVS pieces), and the page cache takes whole
 * large folios (2 MiB on ext4), as it does for one big write() from offset
 * 0. Writes that ended anywhere (after a zip header, between tensors) left
 * folios of a few pages at each joint, and the writes ran several times
 * slower than aligned ones (bench/README.md, "Tensor files").
 */
struct mate_wq {
	int fd;
	int error;               /* the first errno; nothing is written after it */
	unsigned char *buf;      /* the caller's gathering buffer */
	size_t cap, fill;
	struct iovec iov[MATE_WQ_IOVS];
	int niov;
	size_t queued;           /* bytes in iov */
	uint64_t written;        /* bytes written to fd */
};

void mate_wq_init(struct mate_wq *q, int fd, unsigned char *buf, size_t cap);
/* Room for n bytes in the buffer, queued (their content is the caller's to
 * fill before the next call), or NULL after an error (n > cap: EINVAL). */
void *mate_wq_reserve(struct mate_wq *q, size_t n);
/* Queues n bytes copied into the buffer (n <= cap). 0 or -1 (q->error). */
int mate_wq_copy(struct mate_wq *q, const void *p, size_t n);
/* Queues n bytes from where they lie. stable: they stay there, unchanged,
 * until mate_wq_flush(); else they are written before this returns. */
int mate_wq_put(struct mate_wq *q, const void *p, size_t n, int stable);
/* Writes everything queued. 0 or -1 (q->error). */
int mate_wq_flush(struct mate_wq *q);
/* Bytes written and queued: the file offset the next piece goes to. */
static inline uint64_t mate_wq_offset(const struct mate_wq *q)
{
	return q->written + q->queued;
}

#endif
