/* pt_build.h: builds pickles and stored zip files by hand for the .pt reader's unit tests. */
#ifndef MATE_PT_BUILD_H_INCLUDED
#define MATE_PT_BUILD_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing byte buffer; aborts when out of memory (tests only). */
struct buf {
	unsigned char *p;
	size_t n, cap;
};

static inline void
b_bytes(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		while (b->n + n > b->cap)
			b->cap = b->cap ? b->cap * 2 : 256;
		b->p = realloc(b->p, b->cap);
		if (b->p == NULL)
			abort();
	}
	if (n > 0)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static inline void
b_op(struct buf *b, int c)
{
	unsigned char u = (unsigned char)c;
	b_bytes(b, &u, 1);
}

static inline void
b_le(struct buf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		b_op(b, (int)((v >> (8 * i)) & 0xff));
}

static inline void
b_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- pickle opcodes ---- */

static inline void
p_str(struct buf *b, const char *s)          /* BINUNICODE */
{
	b_op(b, 'X');
	b_le(b, strlen(s), 4);
	b_bytes(b, s, strlen(s));
}

static inline void
p_global(struct buf *b, const char *mod, const char *name)
{
	b_op(b, 'c');
	b_bytes(b, mod, strlen(mod));
	b_op(b, '\n');
	b_bytes(b, name, strlen(name));
	b_op(b, '\n');
}

/* An int the way Python's pickler writes it. */
static inline void
p_int(struct buf *b, int64_t v)
{
	if (v >= 0 && v < 256) {
		b_op(b, 'K');
		b_le(b, (uint64_t)v, 1);
	} else if (v >= 0 && v < 65536) {
		b_op(b, 'M');
		b_le(b, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		b_op(b, 'J');
		b_le(b, (uint64_t)(uint32_t)(int32_t)v, 4);
	} else {
		b_op(b, 0x8a);
		b_op(b, 8);
		b_le(b, (uint64_t)v, 8);
	}
}

static inline void
p_ints(struct buf *b, int n, const int64_t *v)   /* a tuple of ints */
{
	if (n == 0) {
		b_op(b, ')');
		return;
	}
	b_op(b, '(');
	for (int i = 0; i < n; i++)
		p_int(b, v[i]);
	b_op(b, 't');
}

static inline void
p_odict(struct buf *b)                        /* OrderedDict() */
{
	p_global(b, "collections", "OrderedDict");
	b_op(b, ')');
	b_op(b, 'R');
}

/* ('storage', torch.<cls>, key, 'cpu', numel) BINPERSID */
static inline void
p_storage(struct buf *b, const char *mod, const char *cls, const char *key, int64_t numel)
{
	b_op(b, '(');
	p_str(b, "storage");
	p_global(b, mod, cls);
	p_str(b, key);
	p_str(b, "cpu");
	p_int(b, numel);
	b_op(b, 't');
	b_op(b, 'Q');
}

/* MARK (storage mod.cls, offset, size, stride: the arguments every
 * tensor-rebuilding function begins with, after its GLOBAL; the caller
 * writes the rest and the closing TUPLE. */
static inline void
p_tensor_args(struct buf *b, const char *mod, const char *cls, const char *key, int64_t numel,
    int64_t offset, int ndim, const int64_t *size, const int64_t *stride)
{
	b_op(b, '(');
	p_storage(b, mod, cls, key, numel);
	p_int(b, offset);
	p_ints(b, ndim, size);
	p_ints(b, ndim, stride);
}

/* _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()) */
static inline void
p_tensor_v2(struct buf *b, const char *cls, const char *key, int64_t numel, int64_t offset,
    int ndim, const int64_t *size, const int64_t *stride)
{
	p_global(b, "torch._utils", "_rebuild_tensor_v2");
	p_tensor_args(b, "torch", cls, key, numel, offset, ndim, size, stride);
	b_op(b, 0x89);
	p_odict(b);
	b_op(b, 't');
	b_op(b, 'R');
}

/* ---- a stored zip, written the simple way (no descriptors, no padding) ---- */

struct zip_entry {
	const char *name;
	const void *data;
	size_t len;
};

static inline uint32_t
zip_crc32(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= s[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return c ^ 0xffffffffu;
}

/* Deflate's "stored" blocks: method 8 data without a compressor. */
static inline void
deflate_stored(struct buf *out, const void *p, size_t n)
{
	const unsigned char *s = p;

	do {
		size_t k = n > 65535 ? 65535 : n;
		b_op(out, n == k);
		b_le(out, k, 2);
		b_le(out, ~k & 0xffff, 2);
		b_bytes(out, s, k);
		s += k;
		n -= k;
	} while (n > 0);
}

enum { ZB_CRC0 = 1, ZB_DEFLATE = 2 };

/* Writes entries as a zip into out. ZB_CRC0 writes CRC 0 everywhere (as
 * torch 2.x may); ZB_DEFLATE writes method 8 entries. A ZIP64 tail is
 * added when there are > 65535 entries. */
static inline void
zip_build(struct buf *out, const struct zip_entry *e, size_t n, int flags)
{
	struct buf cd = { 0 }, data = { 0 };
	uint64_t cd_off;

	for (size_t i = 0; i < n; i++) {
		uint32_t crc = (flags & ZB_CRC0) ? 0 : zip_crc32(e[i].data, e[i].len);
		uint64_t off = out->n;
		size_t nl = strlen(e[i].name);
		int method = (flags & ZB_DEFLATE) ? 8 : 0;

		data.n = 0;
		if (method == 8)
			deflate_stored(&data, e[i].data, e[i].len);
		else
			b_bytes(&data, e[i].data, e[i].len);
		b_le(out, 0x04034b50, 4);
		b_le(out, 20, 2);
		b_le(out, 0x0800, 2);
		b_le(out, method, 2);
		b_le(out, 0, 4);
		b_le(out, crc, 4);
		b_le(out, data.n, 4);
		b_le(out, e[i].len, 4);
		b_le(out, nl, 2);
		b_le(out, 0, 2);
		b_bytes(out, e[i].name, nl);
		b_bytes(out, data.p, data.n);

		b_le(&cd, 0x02014b50, 4);
		b_le(&cd, 20, 2);
		b_le(&cd, 20, 2);
		b_le(&cd, 0x0800, 2);
		b_le(&cd, method, 2);
		b_le(&cd, 0, 4);
		b_le(&cd, crc, 4);
		b_le(&cd, data.n, 4);
		b_le(&cd, e[i].len, 4);
		b_le(&cd, nl, 2);
		b_le(&cd, 0, 2);
		b_le(&cd, 0, 2);
		b_le(&cd, 0, 2);
		b_le(&cd, 0, 2);
		b_le(&cd, 0, 4);
		b_le(&cd, off, 4);
		b_bytes(&cd, e[i].name, nl);
	}
	cd_off = out->n;
	b_bytes(out, cd.p, cd.n);
	if (n > 0xffff) {
		uint64_t z64 = out->n;
		b_le(out, 0x06064b50, 4);
		b_le(out, 44, 8);
		b_le(out, 45, 2);
		b_le(out, 45, 2);
		b_le(out, 0, 4);
		b_le(out, 0, 4);
		b_le(out, n, 8);
		b_le(out, n, 8);
		b_le(out, cd.n, 8);
		b_le(out, cd_off, 8);
		b_le(out, 0x07064b50, 4);
		b_le(out, 0, 4);
		b_le(out, z64, 8);
		b_le(out, 1, 4);
	}
	b_le(out, 0x06054b50, 4);
	b_le(out, 0, 2);
	b_le(out, 0, 2);
	b_le(out, n > 0xffff ? 0xffff : n, 2);
	b_le(out, n > 0xffff ? 0xffff : n, 2);
	b_le(out, cd.n, 4);
	b_le(out, cd_off, 4);
	b_le(out, 0, 2);
	b_free(&cd);
	b_free(&data);
}

static inline int
write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (f == NULL)
		return -1;
	ok = fwrite(p, 1, n, f) == n;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

#endif /* MATE_PT_BUILD_H_INCLUDED */
