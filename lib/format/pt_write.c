/* dump_pt_write.c: writes .pt files (torch.save's zip of data.pkl and storages) through libarchive, atomically. */
#include "mate_private.h"
#include "backend.h"
#include "pickle_write.h"
#include "wqueue.h"

#include <archive.h>
#include <archive_entry.h>
#include <libdeflate.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Layout (spec tensor-files.md A1-A4): <root>/data.pkl, <root>/byteorder,
 * <root>/data/<key> for each storage in key order, <root>/version = "3\n";
 * stored (uncompressed) entries with CRCs, ZIP64 where libarchive needs it.
 *
 * Output path: libarchive is unbuffered (bytes per block 0) and hands every
 * piece to sink_write(). Small pieces (headers, descriptors) are gathered in
 * a buffer; a large piece (tensor memory, or the device bounce buffer) goes
 * out with them straight from where it lies, through a write queue
 * (wqueue.h) whose writes end on 2 MiB boundaries in the file. Tensor data
 * goes to libarchive in chunks that end on such boundaries too (so that
 * the device's bounce buffer, which cannot wait in the queue, also ends its
 * writes there), each chunk's CRC taken first, so that the kernel copies a
 * chunk the CRC has just brought into cache.
 *
 * CRC-32: libarchive's own is zlib's crc32(), which cost nearly as much as
 * the write() itself (bench/README.md, "Tensor files", has the figures). So
 * libarchive runs with its "fakecrc32" option, which writes 0 for every CRC,
 * and this file computes each entry's CRC with libdeflate_crc32(), taken
 * before the write rather than after (the kernel then copies from cache),
 * then puts it where
 * the zip format keeps it: in the entry's data descriptor (the 16 or 24
 * bytes "PK\7\10" crc sizes, which libarchive writes as one piece when the
 * next entry starts or the archive closes) and in the entry's central
 * directory record (offset 16; the directory is held back until the end for
 * that). Anything else where a descriptor or a record should be fails the
 * write; it is never left with a wrong CRC.
 *
 * Alignment: torch 2.x's own writer starts every entry's data on a multiple
 * of 64 bytes (padding its local header with an extra field "FB"), and its
 * torch.load(mmap=True) uses the storage where it lies in the mapped file:
 * a complex128 tensor at an odd offset crashed it (SIGSEGV). So the sink
 * holds each local header libarchive writes, pads it the same way, and at
 * the end writes the central directory again with the moved offsets (and
 * ZIP64 fields and end records wherever the new offsets need them).
 */

#define PT_CHUNK ((size_t)2 << 20)       /* most bytes per archive_write_data() */
#define SINK_BUF ((size_t)1 << 20)       /* gathering buffer */
_Static_assert(PT_CHUNK % MATE_WQ_ALIGN == 0, "chunks end where the queue's writes do");
#define SINK_DIRECT_MIN ((size_t)64 << 10) /* smaller pieces are gathered */
#define CD_MAX ((size_t)1 << 30)         /* central directory held back */
#define PT_ALIGN 64                      /* entry data alignment (torch 2.x's) */
#define HDR_MAX 1024                     /* a local header held for padding (root <= 255) */
#define U32_MAX_ 0xffffffffu

struct sink_entry {
	uint32_t crc;
	uint64_t offset;      /* of its local header in the file */
};

struct sink {
	int error;            /* first errno of a write, or EPROTO (why says) */
	const char *why;      /* what was not as expected in libarchive's output */
	struct mate_wq q;
	/* pieces inside [stable_lo, stable_hi) stay in place until the end */
	uintptr_t stable_lo, stable_hi;
	/* CRCs */
	struct sink_entry *ents; /* headers written so far, in order */
	size_t nents, ents_cap;
	size_t ncrcs;         /* entries finished (their CRC known) */
	unsigned char hdr[HDR_MAX]; /* the local header being gathered */
	size_t hdr_len;
	int in_header;        /* libarchive is writing a local header */
	int desc_pending;     /* the next piece is entry ncrcs-1's data descriptor */
	int cd_next;          /* after that descriptor comes the central directory */
	int in_cd;
	unsigned char *cd;    /* the central directory and end records */
	size_t cd_len, cd_cap;
	unsigned char buf[SINK_BUF]; /* last: sink_new() clears only what comes before it */
};

struct pt_writer {
	struct archive *a;
	struct archive_entry *e;
	struct sink *sink;
	const char *path;
	char *name;        /* "<root>/..." */
	size_t root_len;
	mate_error *err;
	int rc;
	int entries;       /* entries started */
	uint32_t crc;      /* of the entry being written */
};

/* ---- sink: libarchive's write callback --------------------------------------- */

static void
put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void
put_le16(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void
put_le64(unsigned char *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static size_t
get_le16(const unsigned char *p)
{
	return (size_t)p[0] | (size_t)p[1] << 8;
}

static uint32_t
get_le32(const unsigned char *p)
{
	return (uint32_t)get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static uint64_t
get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* Writes out everything queued. 0 or -1. */
static int
sink_flush(struct sink *s)
{
	if (s->error == 0 && mate_wq_flush(&s->q) < 0)
		s->error = s->q.error;
	return s->error != 0 ? -1 : 0;
}

static int
sink_fail(struct sink *s, const char *why)
{
	s->error = EPROTO;
	s->why = why;
	return -1;
}

/* Appends to the held-back central directory. 0 or -1. */
static int
sink_hold(struct sink *s, const unsigned char *p, size_t n)
{
	if (n > CD_MAX - s->cd_len)
		return sink_fail(s, "a central directory over 1 GiB");
	if (s->cd_len + n > s->cd_cap) {
		size_t cap = s->cd_cap ? s->cd_cap : 4096;
		unsigned char *q;

		while (cap < s->cd_len + n)
			cap *= 2;
		if ((q = realloc(s->cd, cap)) == NULL) {
			s->error = ENOMEM;
			return -1;
		}
		s->cd = q;
		s->cd_cap = cap;
	}
	memcpy(s->cd + s->cd_len, p, n);
	s->cd_len += n;
	return 0;
}

static la_ssize_t
sink_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
	struct sink *s = ctx;
	const unsigned char *p = buf;

	(void)a;
	if (s->error != 0)
		return -1;
	if (s->in_cd)
		return sink_hold(s, p, n) < 0 ? -1 : (la_ssize_t)n;
	if (s->in_header && !s->desc_pending) {
		if (n > HDR_MAX - s->hdr_len)
			return sink_fail(s, "a local header over 1 KiB");
		memcpy(s->hdr + s->hdr_len, p, n);
		s->hdr_len += n;
		return (la_ssize_t)n;
	}
	if (s->desc_pending) {
		/* PK\7\10, CRC-32, then 4- or 8-byte sizes (ZIP64) */
		unsigned char *d;

		if ((n != 16 && n != 24) || memcmp(p, "PK\7\10", 4) != 0)
			return sink_fail(s, "no data descriptor after an entry");
		if ((d = mate_wq_reserve(&s->q, n)) == NULL) {
			s->error = s->q.error;
			return -1;
		}
		memcpy(d, p, n);
		put_le32(d + 4, s->ents[s->ncrcs - 1].crc);
		s->desc_pending = 0;
		s->in_cd = s->cd_next;
		return (la_ssize_t)n;
	}
	if (n >= SINK_DIRECT_MIN ?
	    mate_wq_put(&s->q, p, n, (uintptr_t)p >= s->stable_lo &&
	        (uintptr_t)p + n <= s->stable_hi) < 0 :
	    mate_wq_copy(&s->q, p, n) < 0) {
		s->error = s->q.error;
		return -1;
	}
	return (la_ssize_t)n;
}

/* Records the CRC of the entry just finished; its data descriptor is the
 * next piece libarchive writes (cd: and the central directory after it). */
static int
sink_entry_done(struct sink *s, uint32_t crc, int cd)
{
	if (s->ncrcs >= s->nents)
		return sink_fail(s, "an entry ended before its header");
	s->ents[s->ncrcs++].crc = crc;
	s->desc_pending = 1;
	s->cd_next = cd;
	return 0;
}

/* Writes out the local header gathered since pt_header() set in_header, with an
 * extra field "FB" of filler (as torch 2.x's writer has) so that the entry's
 * data starts on a multiple of PT_ALIGN. */
static int
sink_header_end(struct sink *s)
{
	uint64_t at = mate_wq_offset(&s->q);
	size_t pad = (size_t)((PT_ALIGN - (at + s->hdr_len) % PT_ALIGN) % PT_ALIGN);
	size_t xlen;

	s->in_header = 0;
	if (s->error != 0)
		return -1;
	if (s->hdr_len < 30 || memcmp(s->hdr, "PK\3\4", 4) != 0 ||
	    s->hdr_len != 30 + get_le16(s->hdr + 26) + get_le16(s->hdr + 28))
		return sink_fail(s, "no local header where an entry starts");
	if (pad > 0 && pad < 4)
		pad += PT_ALIGN;
	xlen = get_le16(s->hdr + 28) + pad;
	if (pad > 0) {
		if (pad > HDR_MAX - s->hdr_len)
			return sink_fail(s, "a local header over 1 KiB");
		memcpy(s->hdr + s->hdr_len, "FB", 2);
		put_le16(s->hdr + s->hdr_len + 2, pad - 4);
		memset(s->hdr + s->hdr_len + 4, 'Z', pad - 4);
		put_le16(s->hdr + 28, xlen);
		s->hdr_len += pad;
	}
	if (s->nents == s->ents_cap) {
		size_t cap = s->ents_cap ? 2 * s->ents_cap : 64;
		struct sink_entry *q = realloc(s->ents, cap * sizeof(*q));

		if (q == NULL) {
			s->error = ENOMEM;
			return -1;
		}
		s->ents = q;
		s->ents_cap = cap;
	}
	s->ents[s->nents].crc = 0;
	s->ents[s->nents++].offset = at;
	if (mate_wq_copy(&s->q, s->hdr, s->hdr_len) < 0) {
		s->error = s->q.error;
		return -1;
	}
	return 0;
}

/* One central directory record again, at out (room for its length + 28):
 * its CRC, its local header's real offset, and a ZIP64 extra field holding
 * the sizes libarchive put there and the offset if it needs one. Other extra
 * fields are kept. @return the new record's length, 0 if r is malformed. */
static size_t
cd_record(const unsigned char *r, size_t avail, const struct sink_entry *ent,
    unsigned char *out)
{
	size_t nlen, xlen, clen, len, o, want;
	uint64_t vals[3];
	int nvals = 0, found = 0;

	if (avail < 46 || memcmp(r, "PK\1\2", 4) != 0)
		return 0;
	nlen = get_le16(r + 28);
	xlen = get_le16(r + 30);
	clen = get_le16(r + 32);
	if (46 + nlen + xlen + clen > avail)
		return 0;
	memcpy(out, r, 46 + nlen);
	put_le32(out + 16, ent->crc);
	len = 46 + nlen;
	/* the 64-bit sizes are those whose 32-bit field reads 0xffffffff,
	 * uncompressed first (APPNOTE 4.5.3) */
	want = 8 * (size_t)((get_le32(r + 24) == U32_MAX_) + (get_le32(r + 20) == U32_MAX_));
	for (o = 0; o + 4 <= xlen; o += 4 + get_le16(r + 46 + nlen + o + 2)) {
		const unsigned char *x = r + 46 + nlen + o;
		size_t n = get_le16(x + 2);

		if (o + 4 + n > xlen)
			return 0;
		if (get_le16(x) == 1) {
			if (n < want || found++)
				return 0;
			for (size_t k = 0; k < want; k += 8)
				vals[nvals++] = get_le64(x + 4 + k);
			continue;
		}
		memcpy(out + len, x, 4 + n);
		len += 4 + n;
	}
	/* libarchive gives a size of exactly 0xffffffff no ZIP64 field */
	for (; !found && (size_t)nvals < want / 8; nvals++)
		vals[nvals] = U32_MAX_;
	if (ent->offset >= U32_MAX_)
		vals[nvals++] = ent->offset;
	put_le32(out + 42, ent->offset >= U32_MAX_ ? U32_MAX_ : (uint32_t)ent->offset);
	if (nvals > 0) {
		put_le16(out + len, 1);
		put_le16(out + len + 2, 8 * (size_t)nvals);
		for (int k = 0; k < nvals; k++)
			put_le64(out + len + 4 + 8 * (size_t)k, vals[k]);
		len += 4 + 8 * (size_t)nvals;
		if (get_le16(out + 6) < 45)
			put_le16(out + 6, 45);
	}
	put_le16(out + 30, len - 46 - nlen);
	memcpy(out + len, r + 46 + nlen + xlen, clen);
	return len + clen;
}

/* Writes the central directory again (cd_record()) where the file now ends,
 * then the end records for it: ZIP64 ones where a field does not fit. */
static int
sink_write_cd(struct sink *s)
{
	uint64_t start = mate_wq_offset(&s->q), size;
	size_t off = 0, len = 0;
	unsigned char *out, *e;

	if (s->desc_pending || !s->in_cd || s->ncrcs != s->nents)
		return sink_fail(s, "no data descriptor after the last entry");
	/* each record grows by at most a 28-byte ZIP64 field; 98 end bytes */
	if ((out = malloc(s->cd_len + 28 * s->nents + 98)) == NULL) {
		s->error = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < s->nents; i++) {
		const unsigned char *r = s->cd + off;
		size_t n;

		if ((n = cd_record(r, s->cd_len - off, &s->ents[i], out + len)) == 0) {
			free(out);
			return sink_fail(s, "fewer central directory records than entries");
		}
		off += 46 + get_le16(r + 28) + get_le16(r + 30) + get_le16(r + 32);
		len += n;
	}
	if (s->cd_len - off < 4 || memcmp(s->cd + off, "PK\1\2", 4) == 0) {
		free(out);
		return sink_fail(s, "more central directory records than entries");
	}
	size = len;
	e = out + len;
	if (start >= U32_MAX_ || size >= U32_MAX_ || s->nents >= 0xffff) {
		memset(e, 0, 76);
		memcpy(e, "PK\6\6", 4);
		put_le64(e + 4, 44);
		put_le16(e + 12, 45);
		put_le16(e + 14, 45);
		put_le64(e + 24, s->nents);
		put_le64(e + 32, s->nents);
		put_le64(e + 40, size);
		put_le64(e + 48, start);
		memcpy(e + 56, "PK\6\7", 4);
		put_le64(e + 64, start + size);
		put_le32(e + 72, 1);
		e += 76;
	}
	memset(e, 0, 22);
	memcpy(e, "PK\5\6", 4);
	put_le16(e + 8, s->nents < 0xffff ? s->nents : 0xffff);
	put_le16(e + 10, s->nents < 0xffff ? s->nents : 0xffff);
	put_le32(e + 12, size < U32_MAX_ ? (uint32_t)size : U32_MAX_);
	put_le32(e + 16, start < U32_MAX_ ? (uint32_t)start : U32_MAX_);
	e += 22;
	if (mate_wq_put(&s->q, out, (size_t)(e - out), 0) < 0)
		s->error = s->q.error;
	sink_flush(s);
	free(out);
	return s->error != 0 ? -1 : 0;
}

static struct sink *
sink_new(int fd)
{
	/* not calloc(): clearing the 1 MiB buffer was a fifth of a small dump's time */
	struct sink *s = malloc(sizeof(*s));

	if (s != NULL) {
		memset(s, 0, offsetof(struct sink, buf));
		mate_wq_init(&s->q, fd, s->buf, sizeof(s->buf));
	}
	return s;
}

/* Writes out what is held back (all of it if the archive is complete) and
 * frees the sink. @return 0 or an errno (EPROTO: *why says what). */
static int
sink_finish(struct sink *s, int complete, const char **why)
{
	int e;

	if (s->error == 0 && complete)
		sink_write_cd(s);
	else if (s->error == 0)
		sink_flush(s);
	e = s->error;
	*why = s->why;
	free(s->ents);
	free(s->cd);
	free(s);
	return e;
}

/* ---- zip entries ------------------------------------------------------------ */

/* The error for a sink's errno e. */
static int
sink_report(mate_error *err, const char *path, int e, const char *why)
{
	if (e == EPROTO && why != NULL)
		return mate_set_error(err, MATE_ERR_IO,
		    "%s: libarchive's zip output was not as expected: %s", path, why);
	if (e == ENOMEM)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return mate_set_errno(err, e, "cannot write", path);
}

/* Records the first error: the sink's errno if a write failed, else libarchive's. */
static int
pt_fail(struct pt_writer *w, const char *what)
{
	int e = w->sink->error;

	if (w->rc != MATE_OK)
		return w->rc;
	if (e != 0)
		w->rc = sink_report(w->err, w->path, e, w->sink->why);
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
	/* the entry before ends here: its descriptor comes first */
	if (w->entries > 0 && sink_entry_done(w->sink, w->crc, 0) < 0)
		return pt_fail(w, "cannot write a zip header");
	w->sink->in_header = 1;
	w->sink->hdr_len = 0;
	if (archive_write_header(w->a, w->e) != ARCHIVE_OK ||
	    sink_header_end(w->sink) < 0)
		return pt_fail(w, "cannot write a zip header");
	if (w->sink->desc_pending) {
		sink_fail(w->sink, "no data descriptor after an entry");
		return pt_fail(w, "cannot write a zip header");
	}
	w->entries++;
	w->crc = 0;
	return MATE_OK;
}

/* How much of n bytes of entry data to hand libarchive next: at most up to
 * the next multiple of PT_CHUNK in the file (see the top of the file). */
static size_t
pt_chunk_len(const struct pt_writer *w, uint64_t n)
{
	size_t k = PT_CHUNK - (size_t)(mate_wq_offset(&w->sink->q) % PT_CHUNK);

	return n < k ? (size_t)n : k;
}

/* archive_write_data() in chunks (it takes at most INT_MAX and may write
 * less). stable: p stays in place until the file is done (not so the
 * device's bounce buffer). */
static int
pt_data(struct pt_writer *w, const void *p, uint64_t n, int stable)
{
	const unsigned char *q = p;

	w->sink->stable_lo = stable ? (uintptr_t)p : 0;
	w->sink->stable_hi = stable ? (uintptr_t)p + n : 0;
	while (n > 0) {
		size_t k = pt_chunk_len(w, n);
		/* first: the copy into the page cache then reads from cache */
		uint32_t crc = (uint32_t)libdeflate_crc32(w->crc, q, k);
		la_ssize_t done = archive_write_data(w->a, q, k);
		if (done <= 0)
			return pt_fail(w, "cannot write zip data");
		w->crc = (size_t)done == k ? crc : (uint32_t)libdeflate_crc32(w->crc, q, (size_t)done);
		q += done;
		n -= (uint64_t)done;
	}
	w->sink->stable_lo = w->sink->stable_hi = 0;
	return MATE_OK;
}

static int
pt_small(struct pt_writer *w, const char *suffix, const void *p, size_t n)
{
	if (pt_header(w, suffix, n) != MATE_OK)
		return w->rc;
	return pt_data(w, p, n, 1);
}

/* A storage record: host memory straight from the caller, device memory
 * through a bounce buffer. */
static int
pt_storage(struct pt_writer *w, size_t key, const struct mate_pickle_storage *ps)
{
	const mate_backend *be;
	unsigned char *bounce;
	char suffix[40];
	size_t k;

	snprintf(suffix, sizeof(suffix), "/data/%zu", key);
	if (pt_header(w, suffix, ps->nbytes) != MATE_OK)
		return w->rc;
	if (ps->device_type != MATE_DEVICE_CUDA) {
		pt_data(w, ps->data, ps->nbytes, 1);
		return w->rc;
	}
	be = mate_backend_get();
	if (strcmp(be->name, "cuda") != 0)
		return w->rc = mate_set_error(w->err, MATE_ERR_UNSUPPORTED,
		    "%s: a tensor is on a CUDA device but no CUDA device is usable", w->path);
	if ((bounce = malloc(PT_CHUNK)) == NULL)
		return w->rc = mate_set_error(w->err, MATE_ERR_NOMEM, "out of memory");
	for (uint64_t off = 0; off < ps->nbytes && w->rc == MATE_OK; off += k) {
		k = pt_chunk_len(w, ps->nbytes - off);
		if (be->copy_to_host(bounce, (const char *)ps->data + off, k, ps->stream) != 0)
			w->rc = mate_set_error(w->err, MATE_ERR_IO,
			    "%s: cannot copy storage %zu from the device", w->path, key);
		else
			pt_data(w, bounce, k, 0);
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
	    archive_write_set_options(w->a, "zip:fakecrc32") != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->a, 0) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(w->a, w->sink, NULL, sink_write, NULL, NULL) != ARCHIVE_OK)
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
	if (pt_small(w, "/data.pkl", po->buf, po->len) != MATE_OK ||
	    pt_small(w, "/byteorder", byteorder, strlen(byteorder)) != MATE_OK)
		return w->rc;
	for (size_t i = 0; i < po->nstorages; i++)
		if (pt_storage(w, i, &po->storages[i]) != MATE_OK)
			return w->rc;
	if (pt_small(w, "/version", "3\n", 2) != MATE_OK)
		return w->rc;
	if (sink_entry_done(w->sink, w->crc, 1) < 0 || archive_write_close(w->a) != ARCHIVE_OK)
		return pt_fail(w, "cannot finish the zip file");
	return MATE_OK;
}

static int
pt_write_file(const char *path, const char *root, const struct mate_pickle_out *po,
    mate_error *err)
{
	struct pt_writer w;
	mate_atomic_file af;
	const char *why;
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
	if ((w.sink = sink_new(af.fd)) == NULL) {
		free(w.name);
		mate_atomic_abort(&af);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	pt_entries(&w, po);
	/* The sink outlives the archive: archive_write_free() may still write. */
	if (w.a != NULL)
		archive_write_free(w.a);
	archive_entry_free(w.e);
	e = sink_finish(w.sink, w.rc == MATE_OK, &why);
	if (e != 0 && w.rc == MATE_OK)
		w.rc = sink_report(err, path, e, why);
	free(w.name);
	if (w.rc != MATE_OK) {
		mate_atomic_abort(&af);
		return w.rc;
	}
	return mate_atomic_commit(&af, err);
}

/* The root folder becomes every entry's first path component. torch reads
 * at most 511 bytes of an entry's name (miniz's MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE):
 * a 1024-byte root made files torch 1.13 and 2.15 refused ("not in a
 * subdirectory"). torch.save names the root after the file, so at most
 * NAME_MAX (255) bytes, which leaves room for every suffix. */
static int
check_root(const char *root, mate_error *err)
{
	size_t n = strlen(root);

	if (n == 0 || n > 255 || strchr(root, '/') != NULL || strchr(root, '\\') != NULL ||
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
