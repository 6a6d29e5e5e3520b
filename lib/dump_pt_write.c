/* dump_pt_write.c: writes .pt files (torch.save's zip of data.pkl and storages) through libarchive, atomically. */
#include "mate_private.h"
#include "backend.h"
#include "pickle_write.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/*
 * Layout (spec tensor-files.md A1-A4): <root>/data.pkl, <root>/byteorder,
 * <root>/data/<key> for each storage in key order, <root>/version = "3\n";
 * stored (uncompressed) entries with CRCs, ZIP64 where libarchive needs it.
 *
 * Output path: libarchive is unbuffered (bytes per block 0) and hands every
 * piece to sink_write(). Small pieces (headers, the pickle) are gathered in
 * 1 MiB buffers; pieces of host tensor memory go to write() straight from
 * the caller's memory. For files with more than a few MiB of tensor data a
 * writer thread does the write() calls while the calling thread runs
 * libarchive, whose CRC-32 of each chunk then overlaps the write of the one
 * before. Measured CPU for one 512 MiB tensor to tmpfs: write() 211 ms;
 * here 89 ms on the calling thread (86 of them zlib's crc32 inside
 * libarchive) and 200 ms on the writer (bench/pt_write_bench.c).
 */

#define PT_CHUNK ((size_t)1 << 20)          /* bytes per archive_write_data() */
#define SINK_BUF ((size_t)1 << 20)          /* gathering buffer */
#define SINK_NBUF 4
#define SINK_QUEUE 256                      /* queued pieces */
#define SINK_IOV 64                         /* or this many pieces (one writev) */
#define SINK_BATCH ((size_t)256 << 10)      /* the writer waits for this much, */
#define SINK_AHEAD ((size_t)8 << 20)        /* the caller waits past this much */
#define SINK_DIRECT_MIN ((size_t)512)       /* smaller pieces are gathered */
#define SINK_THREAD_MIN ((uint64_t)8 << 20) /* less tensor data: no thread */

/* A piece of output: caller memory, or a span of a gathering buffer. */
struct seg {
	const unsigned char *p;
	size_t n;
	int buf; /* the gathering buffer it lies in, or -1 */
};

struct sink {
	int fd;
	int threaded;
	pthread_t thread;
	pthread_mutex_t mu; /* guards the queue, refs, closing and error */
	pthread_cond_t cv;  /* broadcast on every change of those */
	struct seg q[SINK_QUEUE];
	size_t qhead, qlen; /* queued, including those being written */
	size_t qbytes;      /* bytes in the queue */
	int waiting;        /* the calling thread waits for the writer */
	int closing;
	int error;          /* first errno of a write */
	unsigned char *buf[SINK_NBUF];
	int refs[SINK_NBUF]; /* queued pieces in each buffer */
	int cur;            /* buffer being filled, or -1 (calling thread only) */
	size_t fill, sent;  /* bytes in it; bytes of those already queued */
	uintptr_t lo, hi;   /* caller memory that outlives the call: not copied */
};

struct pt_writer {
	struct archive *a;
	struct archive_entry *e;
	struct sink sink;
	const char *path;
	char *name;        /* "<root>/..." */
	size_t root_len;
	mate_error *err;
	int rc;
};

/* ---- sink: the write callback and its writer thread ------------------------ */

static void
sink_lock(struct sink *s)
{
	if (s->threaded)
		pthread_mutex_lock(&s->mu);
}

static void
sink_unlock(struct sink *s)
{
	if (s->threaded)
		pthread_mutex_unlock(&s->mu);
}

/* writev() of every piece, retrying short writes and EINTR. 0 or an errno. */
static int
writev_all(int fd, const struct seg *g, size_t k)
{
	struct iovec iov[SINK_IOV];
	size_t i = 0;

	for (size_t j = 0; j < k; j++) {
		iov[j].iov_base = (void *)(uintptr_t)g[j].p;
		iov[j].iov_len = g[j].n;
	}
	while (i < k) {
		ssize_t n = writev(fd, iov + i, (int)(k - i));
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

/* Writes up to SINK_IOV pieces from the head of the queue and dequeues
 * them. Called with the lock held (threaded), which it drops meanwhile. */
static void
sink_write_some(struct sink *s)
{
	struct seg g[SINK_IOV];
	size_t k = s->qlen < SINK_IOV ? s->qlen : SINK_IOV;
	int e = s->error;

	for (size_t j = 0; j < k; j++)
		g[j] = s->q[(s->qhead + j) % SINK_QUEUE];
	if (e == 0) {
		sink_unlock(s);
		e = writev_all(s->fd, g, k);
		sink_lock(s);
		if (e != 0 && s->error == 0)
			s->error = e;
	}
	for (size_t j = 0; j < k; j++) {
		if (g[j].buf >= 0)
			s->refs[g[j].buf]--;
		s->qbytes -= g[j].n;
	}
	s->qhead = (s->qhead + k) % SINK_QUEUE;
	s->qlen -= k;
	if (s->threaded)
		pthread_cond_broadcast(&s->cv);
}

/* Whether the writer should write now: a batch is full, or someone waits. */
static int
sink_ready(const struct sink *s)
{
	return s->qlen >= SINK_IOV || s->qbytes >= SINK_BATCH || s->waiting || s->closing;
}

static void *
sink_main(void *arg)
{
	struct sink *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while ((s->qlen == 0 || !sink_ready(s)) && !s->closing)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->qlen == 0)
			break;
		sink_write_some(s);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int
sink_error(struct sink *s)
{
	int e;

	sink_lock(s);
	e = s->error;
	sink_unlock(s);
	return e;
}

/* Lets the writer make progress: waits for it, or writes on this thread. */
static void
sink_wait(struct sink *s)
{
	if (!s->threaded) {
		sink_write_some(s);
		return;
	}
	s->waiting = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_cond_wait(&s->cv, &s->mu);
	s->waiting = 0;
}

/* Queues n bytes at p (inside gathering buffer buf, or -1). Without a
 * thread the queue is written out whenever it fills. 0 or -1. */
static int
sink_submit(struct sink *s, const unsigned char *p, size_t n, int buf)
{
	int rc;

	sink_lock(s);
	while ((s->qlen == SINK_QUEUE || s->qbytes >= SINK_AHEAD) && s->error == 0)
		sink_wait(s);
	if (s->error == 0) {
		s->q[(s->qhead + s->qlen) % SINK_QUEUE] = (struct seg){ p, n, buf };
		s->qlen++;
		s->qbytes += n;
		if (buf >= 0)
			s->refs[buf]++;
		if (s->threaded && sink_ready(s))
			pthread_cond_broadcast(&s->cv);
	}
	rc = s->error ? -1 : 0;
	sink_unlock(s);
	return rc;
}

/* Queues what was gathered since the last call. */
static int
sink_send_pending(struct sink *s)
{
	size_t from = s->sent;

	if (s->cur < 0 || s->fill == from)
		return 0;
	s->sent = s->fill;
	return sink_submit(s, s->buf[s->cur] + from, s->fill - from, s->cur);
}

/* Makes a gathering buffer with no queued pieces current. */
static int
sink_take_buf(struct sink *s)
{
	int b = -1;

	sink_lock(s);
	while (b < 0 && s->error == 0) {
		for (int i = 0; i < SINK_NBUF && b < 0; i++)
			if (s->refs[i] == 0)
				b = i;
		if (b >= 0)
			break;
		sink_wait(s);
	}
	if (b >= 0 && s->buf[b] == NULL && (s->buf[b] = malloc(SINK_BUF)) == NULL)
		s->error = ENOMEM;
	if (s->error != 0)
		b = -1;
	sink_unlock(s);
	if (b < 0)
		return -1;
	s->cur = b;
	s->fill = s->sent = 0;
	return 0;
}

static la_ssize_t
sink_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
	struct sink *s = ctx;
	const unsigned char *p = buf;
	size_t left = n;

	(void)a;
	if (sink_error(s) != 0)
		return -1;
	if (n >= SINK_DIRECT_MIN && (uintptr_t)p >= s->lo && (uintptr_t)p + n <= s->hi) {
		if (sink_send_pending(s) < 0 || sink_submit(s, p, n, -1) < 0)
			return -1;
		return (la_ssize_t)n;
	}
	while (left > 0) {
		size_t k;
		if (s->cur < 0 && sink_take_buf(s) < 0)
			return -1;
		k = SINK_BUF - s->fill < left ? SINK_BUF - s->fill : left;
		memcpy(s->buf[s->cur] + s->fill, p, k);
		s->fill += k;
		p += k;
		left -= k;
		if (s->fill == SINK_BUF) {
			if (sink_send_pending(s) < 0)
				return -1;
			s->cur = -1;
		}
	}
	return (la_ssize_t)n;
}

static void
sink_init(struct sink *s, int fd, uint64_t data_bytes)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->cur = -1;
	if (data_bytes < SINK_THREAD_MIN)
		return;
	if (pthread_mutex_init(&s->mu, NULL) != 0)
		return;
	if (pthread_cond_init(&s->cv, NULL) != 0) {
		pthread_mutex_destroy(&s->mu);
		return;
	}
	s->threaded = 1;
	if (pthread_create(&s->thread, NULL, sink_main, s) != 0) {
		/* No thread: write on the calling thread instead. */
		s->threaded = 0;
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
	}
}

/* Writes out everything queued and stops the thread. @return 0 or an errno. */
static int
sink_finish(struct sink *s)
{
	sink_send_pending(s);
	s->cur = -1;
	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->closing = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		s->threaded = 0;
	}
	while (s->qlen > 0)
		sink_write_some(s);
	for (int i = 0; i < SINK_NBUF; i++) {
		free(s->buf[i]);
		s->buf[i] = NULL;
	}
	return s->error;
}

/* ---- zip entries ------------------------------------------------------------ */

/* Records the first error: the sink's errno if a write failed, else libarchive's. */
static int
pt_fail(struct pt_writer *w, const char *what)
{
	int e = sink_error(&w->sink);

	if (w->rc != MATE_OK)
		return w->rc;
	if (e != 0)
		w->rc = mate_set_errno(w->err, e, "cannot write", w->path);
	else if (archive_errno(w->a) == ENOSPC || archive_errno(w->a) == EDQUOT)
		w->rc = mate_set_errno(w->err, archive_errno(w->a), what, w->path);
	else
		w->rc = mate_set_error(w->err, MATE_ERR_IO, "%s: %s: %s", what, w->path,
		    archive_error_string(w->a) ? archive_error_string(w->a) : "libarchive error");
	return w->rc;
}

static int
pt_header(struct pt_writer *w, const char *suffix, uint64_t size)
{
	strcpy(w->name + w->root_len, suffix);
	archive_entry_clear(w->e);
	archive_entry_set_pathname(w->e, w->name);
	archive_entry_set_filetype(w->e, AE_IFREG);
	archive_entry_set_perm(w->e, 0644);
	archive_entry_set_mtime(w->e, 0, 0);
	archive_entry_set_size(w->e, (la_int64_t)size);
	if (archive_write_header(w->a, w->e) != ARCHIVE_OK)
		return pt_fail(w, "cannot write a zip header");
	return MATE_OK;
}

/* archive_write_data() in chunks (it takes at most INT_MAX and may write less). */
static int
pt_data(struct pt_writer *w, const void *p, uint64_t n)
{
	const unsigned char *q = p;

	while (n > 0) {
		size_t k = n > PT_CHUNK ? PT_CHUNK : (size_t)n;
		la_ssize_t done = archive_write_data(w->a, q, k);
		if (done <= 0)
			return pt_fail(w, "cannot write zip data");
		q += done;
		n -= (uint64_t)done;
	}
	return MATE_OK;
}

static int
pt_small(struct pt_writer *w, const char *suffix, const void *p, size_t n)
{
	if (pt_header(w, suffix, n) != MATE_OK)
		return w->rc;
	return pt_data(w, p, n);
}

/* A storage record: host memory straight from the caller, device memory
 * through a bounce buffer. */
static int
pt_storage(struct pt_writer *w, size_t key, const struct mate_pickle_storage *ps)
{
	const mate_backend *be;
	unsigned char *bounce;
	char suffix[40];

	snprintf(suffix, sizeof(suffix), "/data/%zu", key);
	if (pt_header(w, suffix, ps->nbytes) != MATE_OK)
		return w->rc;
	if (ps->device_type != MATE_DEVICE_CUDA) {
		w->sink.lo = (uintptr_t)ps->data;
		w->sink.hi = (uintptr_t)ps->data + ps->nbytes;
		pt_data(w, ps->data, ps->nbytes);
		w->sink.lo = w->sink.hi = 0;
		return w->rc;
	}
	be = mate_backend_get();
	if (strcmp(be->name, "cuda") != 0)
		return w->rc = mate_set_error(w->err, MATE_ERR_UNSUPPORTED,
		    "%s: a tensor is on a CUDA device but no CUDA device is usable", w->path);
	if ((bounce = malloc(PT_CHUNK)) == NULL)
		return w->rc = mate_set_error(w->err, MATE_ERR_NOMEM, "out of memory");
	for (uint64_t off = 0; off < ps->nbytes && w->rc == MATE_OK; off += PT_CHUNK) {
		size_t k = ps->nbytes - off < PT_CHUNK ? (size_t)(ps->nbytes - off) : PT_CHUNK;
		if (be->copy_to_host(bounce, (const char *)ps->data + off, k, ps->stream) != 0)
			w->rc = mate_set_error(w->err, MATE_ERR_IO,
			    "%s: cannot copy storage %zu from the device", w->path, key);
		else
			pt_data(w, bounce, k);
	}
	free(bounce);
	return w->rc;
}

static int
pt_open(struct pt_writer *w)
{
	w->a = archive_write_new();
	w->e = archive_entry_new();
	if (w->a == NULL || w->e == NULL)
		return w->rc = mate_set_error(w->err, MATE_ERR_NOMEM, "out of memory");
	if (archive_write_set_format_zip(w->a) != ARCHIVE_OK ||
	    archive_write_set_options(w->a, "zip:compression=store") != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->a, 0) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(w->a, &w->sink, NULL, sink_write, NULL, NULL) != ARCHIVE_OK)
		return pt_fail(w, "cannot start the zip writer");
	return MATE_OK;
}

static int
pt_entries(struct pt_writer *w, const struct mate_pickle_out *po)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	static const char byteorder[] = "big";
#else
	static const char byteorder[] = "little";
#endif

	if (pt_open(w) != MATE_OK)
		return w->rc;
	/* The pickle outlives the archive too: no need to copy it. */
	w->sink.lo = (uintptr_t)po->buf;
	w->sink.hi = (uintptr_t)po->buf + po->len;
	pt_small(w, "/data.pkl", po->buf, po->len);
	w->sink.lo = w->sink.hi = 0;
	if (w->rc != MATE_OK ||
	    pt_small(w, "/byteorder", byteorder, strlen(byteorder)) != MATE_OK)
		return w->rc;
	for (size_t i = 0; i < po->nstorages; i++)
		if (pt_storage(w, i, &po->storages[i]) != MATE_OK)
			return w->rc;
	if (pt_small(w, "/version", "3\n", 2) != MATE_OK)
		return w->rc;
	if (archive_write_close(w->a) != ARCHIVE_OK)
		return pt_fail(w, "cannot finish the zip file");
	return MATE_OK;
}

static int
pt_write_file(const char *path, const char *root, const struct mate_pickle_out *po,
    mate_error *err)
{
	struct pt_writer w;
	mate_atomic_file af;
	uint64_t data_bytes = 0;
	int e;

	memset(&w, 0, sizeof(w));
	w.path = path;
	w.err = err;
	w.root_len = strlen(root);
	if ((w.name = malloc(w.root_len + 48)) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	memcpy(w.name, root, w.root_len);
	if (mate_atomic_open(&af, path, err) != MATE_OK) {
		free(w.name);
		return err != NULL ? err->code : MATE_ERR_IO;
	}
	for (size_t i = 0; i < po->nstorages; i++)
		data_bytes += po->storages[i].nbytes;
	sink_init(&w.sink, af.fd, data_bytes);
	pt_entries(&w, po);
	/* The sink outlives the archive: archive_write_free() may still write. */
	if (w.a != NULL)
		archive_write_free(w.a);
	archive_entry_free(w.e);
	e = sink_finish(&w.sink);
	if (e != 0 && w.rc == MATE_OK)
		w.rc = mate_set_errno(err, e, "cannot write", path);
	free(w.name);
	if (w.rc != MATE_OK) {
		mate_atomic_abort(&af);
		return w.rc;
	}
	return mate_atomic_commit(&af, err);
}

/* The root folder becomes every entry's first path component. */
static int
check_root(const char *root, mate_error *err)
{
	size_t n = strlen(root);

	if (n == 0 || n > 1024 || strchr(root, '/') != NULL || strchr(root, '\\') != NULL ||
	    strcmp(root, ".") == 0 || strcmp(root, "..") == 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "bad .pt root folder name \"%.64s\"", root);
	return MATE_OK;
}

int
mate_pt_write(const char *path, const mate_value *root,
    const struct mate_pt_write_options *opts, mate_error *err)
{
	struct mate_pickle_out po;
	const char *rootname = opts != NULL && opts->root != NULL ? opts->root : "archive";
	int rc;

	if (path == NULL || root == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "mate_pt_write: no path or value");
	if ((rc = check_root(rootname, err)) != MATE_OK)
		return rc;
	memset(&po, 0, sizeof(po));
	rc = mate_pickle_dump(root, opts != NULL && opts->use_v3, &po, err);
	if (rc == MATE_OK)
		rc = pt_write_file(path, rootname, &po, err);
	mate_pickle_out_free(&po);
	return rc;
}
