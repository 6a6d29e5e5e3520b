/* wqueue.c: the output side of libmate's file writers: small pieces gathered, large ones written from where they lie, in writes that end on 2 MiB boundaries. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "wqueue.h"

void
mate_wq_init(struct mate_wq *q, int fd, unsigned char *buf, size_t cap)
{
	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->buf = buf;
	q->cap = cap;
}

/* Writes the first k iovecs (after a partial write, from where it stopped). */
static int
writev_all(int fd, struct iovec *iov, int k)
{
	int i = 0;

	while (i < k) {
		ssize_t n = writev(fd, iov + i, k - i);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		while (i < k && (size_t)n >= iov[i].iov_len)
			n -= (ssize_t)iov[i++].iov_len;
		if (i < k) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	return 0;
}

int
mate_wq_flush(struct mate_wq *q)
{
	int e;

	if (q->error != 0)
		return -1;
	e = q->niov > 0 ? writev_all(q->fd, q->iov, q->niov) : 0;
	q->written += q->queued;
	q->niov = 0;
	q->queued = 0;
	q->fill = 0;
	if (e != 0) {
		q->error = e;
		return -1;
	}
	return 0;
}

/* Appends a piece, joined to the last one where it follows it in memory
 * (room for one more is the caller's to make). */
static void
push(struct mate_wq *q, const void *p, size_t n)
{
	struct iovec *last = q->niov > 0 ? &q->iov[q->niov - 1] : NULL;

	if (last != NULL && (const char *)last->iov_base + last->iov_len == (const char *)p)
		last->iov_len += n;
	else
		q->iov[q->niov++] = (struct iovec){ (void *)(uintptr_t)p, n };
	q->queued += n;
}

void *
mate_wq_reserve(struct mate_wq *q, size_t n)
{
	void *p;

	if (q->error == 0 && n > q->cap)
		q->error = EINVAL;   /* the caller's mistake: it never fits */
	if (q->error != 0)
		return NULL;
	if ((n > q->cap - q->fill || q->niov == MATE_WQ_IOVS) && mate_wq_flush(q) < 0)
		return NULL;
	p = q->buf + q->fill;
	q->fill += n;
	push(q, p, n);
	return p;
}

int
mate_wq_copy(struct mate_wq *q, const void *p, size_t n)
{
	void *d;

	if (n == 0)
		return q->error != 0 ? -1 : 0;
	if ((d = mate_wq_reserve(q, n)) == NULL)
		return -1;
	memcpy(d, p, n);
	return 0;
}

int
mate_wq_put(struct mate_wq *q, const void *p, size_t n, int stable)
{
	uint64_t end, cut;
	size_t rest;

	if (q->error != 0)
		return -1;
	if (n == 0)
		return 0;
	if (q->niov == MATE_WQ_IOVS && mate_wq_flush(q) < 0)
		return -1;
	push(q, p, n);
	if (!stable)
		return mate_wq_flush(q);
	end = mate_wq_offset(q);
	cut = end - end % MATE_WQ_ALIGN;
	if (cut <= end - n)   /* no boundary within this piece: it waits */
		return 0;
	/* up to the boundary now (the buffer's pieces all come before this
	 * one), the rest of the piece stays queued */
	rest = (size_t)(end - cut);
	q->iov[q->niov - 1].iov_len -= rest;
	q->queued -= rest;
	if (mate_wq_flush(q) < 0)
		return -1;
	if (rest > 0)
		push(q, (const char *)p + n - rest, rest);
	return 0;
}
