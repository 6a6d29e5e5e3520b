/* dump_pt_read.c: reads torch.save's zip format (.pt): its central directory directly, compressed archives through libarchive. */
#include "mate_private.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

/*
 * torch writes stored (uncompressed) entries, so the usual path reads the
 * zip's central directory itself: it learns every record's size before
 * the pickle runs, runs the pickle once, and pread()s each record straight
 * into its storage, in file order. An archive with a compressed entry is
 * handed to libarchive's seekable zip reader instead.
 *
 * A file of 64 KiB or more is mapped (mate_map_file()): headers
 * and small records are then read where they lie, a stored record whose data
 * is aligned to its element size (torch 2.x and libmate align them to 64)
 * becomes a view of the mapping instead of a copy, and a stream's chunks are
 * the mapping's bytes. Unaligned records (torch 1.x's can be) are copied
 * out; where mapping fails the file is read.
 */

#define PT_DEFAULT_MAX_PICKLE ((uint64_t)256 << 20)
#define PT_DEFAULT_MAX_RECORDS 1000000
#define PT_BLOCK_SIZE (1 << 20)
#define PT_MAX_SMALL 64                /* version, byteorder */
#define PT_READ_CHUNK ((size_t)1 << 30)
#define PT_FALLBACK 1                  /* direct_read(): use libarchive */

/* Zip structures (APPNOTE 4.3). */
#define ZIP_LFH_SIZE 30
#define ZIP_CDH_SIZE 46
#define ZIP_EOCD_SIZE 22
#define ZIP64_LOCATOR_SIZE 20
#define ZIP64_EOCD_SIZE 56
#define ZIP_MAX_COMMENT 65535
#define ZIP_MAX_RATIO 1100            /* deflate's limit is about 1032:1 */

/* One <root>/data/<key> record, seen in the zip and/or named by the pickle. */
struct pt_record {
	char *key;
	uint64_t size;        /* the zip entry's size, once seen */
	uint64_t want;        /* bytes the pickle declares, once referenced */
	uint64_t lfh;         /* direct path: local header offset */
	mate_storage *st;     /* the storage it is (or will be) read into */
	int seen, referenced;
	int mapped;           /* st views the mapped file: nothing to read */
};

struct pt_reader {
	const char *path;     /* the file, or "<memory>", for messages */
	mate_error *err;
	int failed;
	uint64_t max_pickle, max_records, nentries;
	int load_data;
	int fd;               /* the file (direct path), or -1 */
	const unsigned char *mem;   /* or the whole file in memory */
	mate_map *map;        /* the file mapped (mem is its data), or NULL */
	uint64_t file_size, cd_offset;
	struct archive *a;    /* libarchive path */
	char *root;
	size_t root_len;
	unsigned char *pickle;
	size_t pickle_len;
	int have_pickle, parsed, have_version;
	mate_value *result;
	struct pt_record **recs;
	size_t nrecs, recs_cap;
	uint32_t *index;      /* hash of keys: recs index + 1, 0 = free */
	size_t index_cap;
	mate_value *cd_sizes; /* libarchive path: name -> size in the central directory */
	uint64_t inflated;    /* libarchive path: bytes of the records read so far */
	const struct mate_tensor_stream *stream;  /* mate_pt_read_stream(): where records go */
	unsigned char *chunk; /* its buffer, MATE_STREAM_CHUNK bytes */
};

static int pt_fail(struct pt_reader *r, int code, const char *fmt, ...) MATE_PRINTF(3, 4);
static void record_name(char *buf, size_t cap, const char *root, const char *key);

/* Records the first error as "path: why"; returns -1. */
static int
pt_fail(struct pt_reader *r, int code, const char *fmt, ...)
{
	char msg[440];
	va_list ap;

	if (r->failed)
		return -1;
	r->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mate_set_error(r->err, code, "%s: %s", r->path, msg);
	return -1;
}

/* Keeps an error someone else (the unpickler, an allocator) set, adding the path. */
static int
pt_fail_inner(struct pt_reader *r)
{
	char msg[sizeof(r->err->message)];

	if (r->failed)
		return -1;
	snprintf(msg, sizeof(msg), "%s", r->err->message);
	return pt_fail(r, r->err->code != MATE_OK ? r->err->code : MATE_ERR_FORMAT, "%s", msg);
}

static uint64_t
le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* ---- records --------------------------------------------------------------------- */

static struct pt_record *
rec_find(struct pt_reader *r, const char *key)
{
	size_t mask = r->index_cap - 1;

	if (r->index_cap == 0)
		return NULL;
	for (size_t h = mate_fnv1a32(key, strlen(key)) & mask; r->index[h] != 0; h = (h + 1) & mask)
		if (strcmp(r->recs[r->index[h] - 1]->key, key) == 0)
			return r->recs[r->index[h] - 1];
	return NULL;
}

static void
index_put(struct pt_reader *r, size_t i)
{
	const char *key = r->recs[i]->key;
	size_t mask = r->index_cap - 1, h = mate_fnv1a32(key, strlen(key)) & mask;

	while (r->index[h] != 0)
		h = (h + 1) & mask;
	r->index[h] = (uint32_t)(i + 1);
}

/* Keeps the index at most half full. */
static int
index_reserve(struct pt_reader *r)
{
	size_t cap = r->index_cap ? r->index_cap : 64;

	while (cap < (r->nrecs + 1) * 2)
		cap *= 2;
	if (cap == r->index_cap)
		return 0;
	free(r->index);
	if ((r->index = calloc(cap, sizeof(*r->index))) == NULL) {
		r->index_cap = 0;
		return -1;
	}
	r->index_cap = cap;
	for (size_t i = 0; i < r->nrecs; i++)
		index_put(r, i);
	return 0;
}

static struct pt_record *
rec_add(struct pt_reader *r, const char *key)
{
	struct pt_record *rec;

	if (r->nrecs >= UINT32_MAX - 1 || index_reserve(r) != 0)
		goto nomem;
	if (mate_array_grow(&r->recs, r->nrecs, &r->recs_cap, sizeof(*r->recs), 64) != 0)
		goto nomem;
	rec = calloc(1, sizeof(*rec));
	if (rec == NULL || (rec->key = strdup(key)) == NULL) {
		free(rec);
		goto nomem;
	}
	r->recs[r->nrecs] = rec;
	index_put(r, r->nrecs++);
	return rec;
nomem:
	pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	return NULL;
}

/* A zip entry data/<key> of size bytes; duplicates are refused. */
static struct pt_record *
rec_seen(struct pt_reader *r, const char *key, const char *name, uint64_t size)
{
	struct pt_record *rec = rec_find(r, key);

	if (rec != NULL && rec->seen) {
		pt_fail(r, MATE_ERR_FORMAT, "duplicate record %s", name);
		return NULL;
	}
	if (rec == NULL && (rec = rec_add(r, key)) == NULL)
		return NULL;
	rec->seen = 1;
	rec->size = size;
	return rec;
}

static int
size_mismatch(struct pt_reader *r, mate_error *err, const char *key, uint64_t has, uint64_t want)
{
	return mate_set_error(err, MATE_ERR_FORMAT, "record %s/data/%s has %llu bytes, but the "
	    "pickle declares %llu", r->root, key, (unsigned long long)has, (unsigned long long)want);
}

/* Runs the pickle with a storage loader; r->result gets the tree. */
static int
run_pickle(struct pt_reader *r, mate_storage_loader load)
{
	mate_error perr;

	mate_error_clear(&perr);
	mate_value_free(r->result);
	r->result = mate_pickle_load(r->pickle, r->pickle_len, load, r, &perr);
	if (r->result == NULL) {
		if (r->failed)
			return -1;
		*r->err = perr;
		return pt_fail_inner(r);
	}
	return 0;
}

/* ---- entries both paths check ----------------------------------------------------- */

/* <root>/version: ASCII decimal in [1, 10], optionally followed by space. */
static int
check_version(struct pt_reader *r, const char *name, const char *buf)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = buf[0] >= '0' && buf[0] <= '9' ? strtoul(buf, &end, 10) : 0;
	if (v == 0 || errno != 0 || strspn(end, " \t\r\n") != strlen(end))
		return pt_fail(r, MATE_ERR_FORMAT, "%s: not a version number", name);
	if (v > 10)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "%s: format version %lu is not supported "
		    "(1 to 10 are)", name, v);
	return 0;
}

static int
check_byteorder(struct pt_reader *r, const char *name, const char *buf)
{
	if (strcmp(buf, "little") == 0)
		return 0;
	if (strcmp(buf, "big") == 0)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "big-endian .pt files are not supported");
	return pt_fail(r, MATE_ERR_FORMAT, "%s: must be \"little\" or \"big\"", name);
}

static int
check_small(struct pt_reader *r, const char *name, uint64_t size)
{
	if (size > PT_MAX_SMALL)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: %llu bytes is too long", name,
		    (unsigned long long)size);
	return 0;
}

static int
check_pickle(struct pt_reader *r, const char *name, uint64_t size)
{
	if (r->have_pickle++)
		return pt_fail(r, MATE_ERR_FORMAT, "duplicate %s", name);
	if (size > r->max_pickle)
		return pt_fail(r, MATE_ERR_LIMIT, "%s: %llu bytes is more than the limit of %llu",
		    name, (unsigned long long)size, (unsigned long long)r->max_pickle);
	r->pickle = malloc(size > 0 ? (size_t)size : 1);
	if (r->pickle == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	r->pickle_len = (size_t)size;
	return 0;
}

/* Sets the root from the first entry, or checks that name is under it. */
static const char *
check_root(struct pt_reader *r, const char *name)
{
	if (r->root == NULL) {
		const char *slash = strchr(name, '/');

		if (slash == NULL || slash == name) {
			pt_fail(r, MATE_ERR_FORMAT, "entry '%s' is not in a subdirectory", name);
			return NULL;
		}
		r->root_len = (size_t)(slash - name);
		r->root = strndup(name, r->root_len);
		if (r->root == NULL) {
			pt_fail(r, MATE_ERR_NOMEM, "out of memory");
			return NULL;
		}
	}
	if (strncmp(name, r->root, r->root_len) != 0 || name[r->root_len] != '/') {
		pt_fail(r, MATE_ERR_FORMAT, "entry '%s' is outside the archive root '%s' "
		    "(more than one root)", name, r->root);
		return NULL;
	}
	return name + r->root_len + 1;
}

enum pt_kind { PT_OTHER, PT_PICKLE, PT_VERSION, PT_BYTEORDER, PT_RECORD };

/* What a zip entry is for (*key: a record's key); -1 when it is refused. */
static int
classify(struct pt_reader *r, const char *name, const char **key)
{
	const char *rest;

	if (++r->nentries > r->max_records)
		return pt_fail(r, MATE_ERR_LIMIT, "more than %llu zip entries",
		    (unsigned long long)r->max_records);
	if ((rest = check_root(r, name)) == NULL)
		return -1;
	if (strcmp(rest, "constants.pkl") == 0)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "a TorchScript archive (%s), not a "
		    "torch.save file", name);
	if (strcmp(rest, "data.pkl") == 0)
		return PT_PICKLE;
	if (strcmp(rest, "version") == 0 || strcmp(rest, ".data/version") == 0)
		return r->have_version++ ? PT_OTHER : PT_VERSION;   /* the first one counts */
	if (strcmp(rest, "byteorder") == 0)
		return PT_BYTEORDER;
	if (strncmp(rest, "data/", 5) != 0 || rest[5] == '\0')
		return PT_OTHER;
	*key = rest + 5;
	return PT_RECORD;
}

/* After the last entry: what is required was there. */
static int
check_required(struct pt_reader *r)
{
	if (r->root == NULL)
		return pt_fail(r, MATE_ERR_FORMAT, "empty zip archive");
	if (!r->have_pickle)
		return pt_fail(r, MATE_ERR_FORMAT, "no %s/data.pkl record", r->root);
	if (!r->have_version)
		return pt_fail(r, MATE_ERR_FORMAT, "no %s/version record", r->root);
	return 0;
}

/* ---- the direct path: the central directory ------------------------------------------ */

/* Reads n bytes at off of the file (or the memory image). */
static int
src_read(struct pt_reader *r, uint64_t off, void *dst, uint64_t n, const char *what)
{
	int rc;

	if (off > r->file_size || n > r->file_size - off)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: truncated (%llu bytes at %llu, the file has "
		    "%llu)", what, (unsigned long long)n, (unsigned long long)off,
		    (unsigned long long)r->file_size);
	if (r->mem != NULL) {
		if (n > 0)
			memcpy(dst, r->mem + off, (size_t)n);
		return 0;
	}
	if ((rc = mate_pread_big(r->fd, dst, (size_t)n, off)) != 0) {
		mate_set_errno(r->err, -rc, "cannot read", r->path);
		r->failed = 1;
		return -1;
	}
	return 0;
}

/* Finds the end of central directory record; fills its fields. */
static int
find_eocd(struct pt_reader *r, uint64_t *eocd, uint64_t *count, uint64_t *cd_size,
    uint64_t *cd_off)
{
	size_t n = r->file_size < ZIP_EOCD_SIZE + ZIP_MAX_COMMENT ? (size_t)r->file_size :
	    ZIP_EOCD_SIZE + ZIP_MAX_COMMENT;
	uint64_t base = r->file_size - n;
	unsigned char *tail = malloc(n > 0 ? n : 1);
	size_t i;

	if (tail == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	if (src_read(r, base, tail, n, "zip end record") != 0) {
		free(tail);
		return -1;
	}
	for (i = n >= ZIP_EOCD_SIZE ? n - ZIP_EOCD_SIZE + 1 : 0; i-- > 0;)
		if (memcmp(tail + i, "PK\005\006", 4) == 0 &&
		    i + ZIP_EOCD_SIZE + le(tail + i + 20, 2) == n)
			break;
	if (i == (size_t)-1) {
		free(tail);
		return pt_fail(r, MATE_ERR_FORMAT, "zip: no end of central directory record "
		    "(truncated file?)");
	}
	*eocd = base + i;
	*count = le(tail + i + 10, 2);
	*cd_size = le(tail + i + 12, 4);
	*cd_off = le(tail + i + 16, 4);
	if (le(tail + i + 4, 2) != 0 || le(tail + i + 6, 2) != 0 || le(tail + i + 8, 2) != *count) {
		free(tail);
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "zip: multi-disk archives are not supported");
	}
	free(tail);
	return 0;
}

/* ZIP64: a locator before the end record points at the 64-bit end record,
 * whose fields replace the 32-bit ones. Without a locator those stay. */
static int
find_eocd64(struct pt_reader *r, uint64_t *eocd, uint64_t *count, uint64_t *cd_size,
    uint64_t *cd_off)
{
	unsigned char loc[ZIP64_LOCATOR_SIZE], rec[ZIP64_EOCD_SIZE];
	uint64_t at;

	if (*eocd < ZIP64_LOCATOR_SIZE ||
	    src_read(r, *eocd - ZIP64_LOCATOR_SIZE, loc, sizeof(loc), "zip64 locator") != 0 ||
	    memcmp(loc, "PK\006\007", 4) != 0)
		return 0;
	at = le(loc + 8, 8);
	if (at > *eocd - ZIP64_LOCATOR_SIZE ||
	    *eocd - ZIP64_LOCATOR_SIZE - at < ZIP64_EOCD_SIZE ||
	    src_read(r, at, rec, sizeof(rec), "zip64 end record") != 0 ||
	    memcmp(rec, "PK\006\006", 4) != 0)
		return pt_fail(r, MATE_ERR_FORMAT, "zip: bad ZIP64 end of central directory");
	if (le(rec + 16, 4) != 0 || le(rec + 20, 4) != 0 || le(rec + 24, 8) != le(rec + 32, 8))
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "zip: multi-disk archives are not supported");
	*count = le(rec + 32, 8);
	*cd_size = le(rec + 40, 8);
	*cd_off = le(rec + 48, 8);
	*eocd = at;
	return 0;
}

/* Reads the whole central directory into *cd; *count entries. */
static int
load_cd(struct pt_reader *r, unsigned char **cd, uint64_t *cd_size, uint64_t *count)
{
	uint64_t eocd = 0, cd_off = 0;

	if (find_eocd(r, &eocd, count, cd_size, &cd_off) != 0)
		return -1;
	if ((*count == 0xffff || *cd_size == 0xffffffff || cd_off == 0xffffffff) &&
	    find_eocd64(r, &eocd, count, cd_size, &cd_off) != 0)
		return -1;
	if (*count > r->max_records)
		return pt_fail(r, MATE_ERR_LIMIT, "%llu zip entries, more than the limit of %llu",
		    (unsigned long long)*count, (unsigned long long)r->max_records);
	if (cd_off > eocd || *cd_size > eocd - cd_off || *count > *cd_size / ZIP_CDH_SIZE)
		return pt_fail(r, MATE_ERR_FORMAT, "zip: bad central directory (offset %llu, "
		    "%llu bytes, %llu entries)", (unsigned long long)cd_off,
		    (unsigned long long)*cd_size, (unsigned long long)*count);
	r->cd_offset = cd_off;
	*cd = malloc(*cd_size > 0 ? (size_t)*cd_size : 1);
	if (*cd == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	return src_read(r, cd_off, *cd, *cd_size, "zip central directory");
}

/* One central directory header, decoded. */
struct cd_entry {
	char name[1024];
	uint64_t size, csize, lfh;
	unsigned method, flags;
	size_t len;           /* bytes of the header */
};

/* The ZIP64 extra field replaces the 32-bit fields that read 0xffffffff. */
static int
zip64_extra(const unsigned char *x, size_t n, struct cd_entry *e)
{
	while (n >= 4) {
		size_t id = (size_t)le(x, 2), sz = (size_t)le(x + 2, 2), at = 4;

		if (sz > n - 4)
			return -1;
		if (id == 1) {
			uint64_t *f[3] = { &e->size, &e->csize, &e->lfh };
			for (int i = 0; i < 3; i++) {
				if (*f[i] != 0xffffffff)
					continue;
				if (at + 8 > 4 + sz)
					return -1;
				*f[i] = le(x + at, 8);
				at += 8;
			}
			return 0;
		}
		x += 4 + sz;
		n -= 4 + sz;
	}
	return 0;
}

static int
parse_cdh(struct pt_reader *r, const unsigned char *p, size_t left, struct cd_entry *e)
{
	size_t nlen, xlen, clen;

	if (left < ZIP_CDH_SIZE || memcmp(p, "PK\001\002", 4) != 0)
		return pt_fail(r, MATE_ERR_FORMAT, "zip: bad central directory header %llu",
		    (unsigned long long)r->nentries);
	e->flags = (unsigned)le(p + 8, 2);
	e->method = (unsigned)le(p + 10, 2);
	e->csize = le(p + 20, 4);
	e->size = le(p + 24, 4);
	nlen = (size_t)le(p + 28, 2);
	xlen = (size_t)le(p + 30, 2);
	clen = (size_t)le(p + 32, 2);
	e->lfh = le(p + 42, 4);
	e->len = ZIP_CDH_SIZE + nlen + xlen + clen;
	if (e->len > left || nlen >= sizeof(e->name) || memchr(p + ZIP_CDH_SIZE, 0, nlen) != NULL ||
	    zip64_extra(p + ZIP_CDH_SIZE + nlen, xlen, e) != 0)
		return pt_fail(r, MATE_ERR_FORMAT, "zip: bad central directory header %llu",
		    (unsigned long long)r->nentries);
	memcpy(e->name, p + ZIP_CDH_SIZE, nlen);
	e->name[nlen] = '\0';
	if (e->flags & 1)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "%s: encrypted entries are not supported",
		    e->name);
	if (e->method != 0 && e->method != 8)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "%s: compression method %u is not supported "
		    "(torch reads stored and deflated entries only)", e->name, e->method);
	/* Deflate cannot expand data more than about 1032 times: a bigger
	 * claim would only make us allocate for a zip bomb. */
	if ((e->method == 0 && e->csize != e->size) ||
	    (e->method == 8 && e->size / ZIP_MAX_RATIO > e->csize) || e->lfh > r->cd_offset ||
	    r->cd_offset - e->lfh < ZIP_LFH_SIZE || r->cd_offset - e->lfh - ZIP_LFH_SIZE < e->csize)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: bad sizes or offset in the central directory",
		    e->name);
	return 0;
}

/* Whether a local header's 32-bit size field agrees with the central
 * directory's size: equal, ZIP64's 0xffffffff, or 0 before a data
 * descriptor (flag bit 3). */
static int
local_size_ok(uint64_t field, uint64_t size, unsigned flags)
{
	return field == 0xffffffff || (size < 0xffffffff && field == size) ||
	    ((flags & 8) && field == 0);
}

/* Checks the local header h (its fixed part, then strlen(name) bytes)
 * against the central directory's stored entry name of size bytes, as
 * Python's zipfile checks the name: central records that point at another
 * entry's header would read its bytes as theirs. */
static int
check_local(struct pt_reader *r, const unsigned char *h, uint64_t lfh, const char *name,
    uint64_t size)
{
	size_t nlen = strlen(name);
	unsigned flags = (unsigned)le(h + 6, 2);

	if (memcmp(h, "PK\003\004", 4) != 0)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: bad local header", name);
	if (le(h + 26, 2) != nlen || memcmp(h + ZIP_LFH_SIZE, name, nlen) != 0)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: the local header at offset %llu names "
		    "another entry", name, (unsigned long long)lfh);
	if (le(h + 8, 2) != 0 || !local_size_ok(le(h + 18, 4), size, flags) ||
	    !local_size_ok(le(h + 22, 4), size, flags))
		return pt_fail(r, MATE_ERR_FORMAT, "%s: the local header's method or sizes "
		    "differ from the central directory's", name);
	return 0;
}

/* Where an entry's data starts: after its local header's name and extra. */
static int
data_offset(struct pt_reader *r, const char *name, uint64_t lfh, uint64_t size, uint64_t *off)
{
	unsigned char h[ZIP_LFH_SIZE + 1024];
	size_t nlen = strlen(name);

	if (nlen >= 1024)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: name too long", name);
	if (src_read(r, lfh, h, ZIP_LFH_SIZE + nlen, name) != 0 || check_local(r, h, lfh, name, size) != 0)
		return -1;
	*off = lfh + ZIP_LFH_SIZE + le(h + 26, 2) + le(h + 28, 2);
	if (*off > r->cd_offset || r->cd_offset - *off < size)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: data runs into the central directory", name);
	return 0;
}

static int
read_entry(struct pt_reader *r, const struct cd_entry *e, void *dst)
{
	uint64_t off;

	if (data_offset(r, e->name, e->lfh, e->size, &off) != 0)
		return -1;
	return src_read(r, off, dst, e->size, e->name);
}

static int
direct_small(struct pt_reader *r, const struct cd_entry *e, int kind)
{
	char buf[PT_MAX_SMALL + 1];

	if (check_small(r, e->name, e->size) != 0 || read_entry(r, e, buf) != 0)
		return -1;
	buf[e->size] = '\0';
	return kind == PT_VERSION ? check_version(r, e->name, buf) :
	    check_byteorder(r, e->name, buf);
}

/* Handles one central directory entry. */
static int
direct_entry(struct pt_reader *r, const struct cd_entry *e)
{
	const char *key = NULL;
	struct pt_record *rec;
	size_t n = strlen(e->name);
	int kind = classify(r, e->name, &key);

	if (kind < 0 || (n > 0 && e->name[n - 1] == '/'))
		return kind < 0 ? -1 : 0;      /* a directory */
	switch (kind) {
	case PT_PICKLE:
		if (check_pickle(r, e->name, e->size) != 0)
			return -1;
		return read_entry(r, e, r->pickle);
	case PT_VERSION:
	case PT_BYTEORDER:
		return direct_small(r, e, kind);
	case PT_RECORD:
		if ((rec = rec_seen(r, key, e->name, e->size)) == NULL)
			return -1;
		rec->lfh = e->lfh;
		return 0;
	default:
		return 0;
	}
}

/* Streaming: the record's storage, without data, made once (shared by its views). */
static mate_storage *
stream_placeholder(struct pt_record *rec, uint64_t n, mate_error *err)
{
	if (rec->st == NULL && (rec->st = mate_storage_wrap(NULL, (size_t)n, err)) == NULL)
		return NULL;
	return mate_storage_ref(rec->st);
}

/* Streaming: the tree, once the pickle ran, to the caller's begin(). */
static int
stream_begin(struct pt_reader *r)
{
	mate_error_clear(r->err);
	if (r->stream->begin != NULL && r->stream->begin(r->stream->ctx, r->result, r->err) != 0)
		return pt_fail_inner(r);
	return 0;
}

/* Streaming: n bytes of rec's storage at off, handed on. */
static int
stream_chunk(struct pt_reader *r, const struct pt_record *rec, uint64_t off, const void *p,
    size_t n)
{
	mate_error_clear(r->err);
	if (r->stream->chunk(r->stream->ctx, rec->st, off, p, n, r->err) != 0)
		return pt_fail_inner(r);
	return 0;
}

/* The loader: every key must name a record of exactly the declared size;
 * the storage is allocated now and filled after the pickle ran. */
static mate_storage *
direct_storage(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct pt_reader *r = ctx;
	struct pt_record *rec = rec_find(r, key);
	uint64_t n = (uint64_t)numel * mate_dtype_size(dt);

	if (rec == NULL || !rec->seen) {
		mate_set_error(err, MATE_ERR_FORMAT, "missing record %s/data/%s", r->root, key);
		return NULL;
	}
	if (rec->size != n) {
		size_mismatch(r, err, key, rec->size, n);
		return NULL;
	}
	rec->referenced = 1;
	if (r->stream != NULL)  /* one placeholder per record: the storage the chunks name */
		return stream_placeholder(rec, n, err);
	if (!r->load_data)
		return mate_storage_wrap(NULL, (size_t)n, err);
	if (rec->st != NULL)  /* named again */
		return mate_storage_ref(rec->st);
	if (r->map != NULL) {
		char name[1100];
		uint64_t off;

		record_name(name, sizeof(name), r->root, key);
		if (data_offset(r, name, rec->lfh, rec->size, &off) != 0)
			return NULL;  /* r->failed: run_pickle() reports r->err */
		if (MATE_MAP_ALIGNED(r->mem + off, dt)) {
			rec->mapped = 1;
			rec->st = mate_storage_view(r->map, (void *)(uintptr_t)(r->mem + off), (size_t)n, err);
			return mate_storage_ref(rec->st);
		}
	}
	rec->st = mate_storage_new_uninit((size_t)n, err);
	return mate_storage_ref(rec->st);
}

static int
by_offset(const void *a, const void *b)
{
	const struct pt_record *x = *(struct pt_record *const *)a, *y = *(struct pt_record *const *)b;

	return x->lfh < y->lfh ? -1 : x->lfh > y->lfh;
}

/* Small records are read many at a time through a window of the file;
 * large ones straight into their storage. */
#define PT_WINDOW ((size_t)1 << 20)
#define PT_SMALL_RECORD ((uint64_t)256 << 10)

struct pt_window {
	unsigned char *p;
	uint64_t start;
	size_t len;
};

static const unsigned char *
window_at(const struct pt_window *w, uint64_t off, uint64_t n)
{
	if (w->p == NULL || off < w->start || off - w->start > w->len ||
	    n > w->len - (off - w->start))
		return NULL;
	return w->p + (off - w->start);
}

/* Refills the window from off (n <= PT_WINDOW bytes are needed there). */
static const unsigned char *
window_fill(struct pt_reader *r, struct pt_window *w, uint64_t off, uint64_t n,
    const char *name)
{
	size_t len = r->cd_offset - off < PT_WINDOW ? (size_t)(r->cd_offset - off) : PT_WINDOW;

	if (r->mem != NULL) {  /* the bytes where they lie */
		if (off > r->cd_offset || r->cd_offset - off < n) {
			pt_fail(r, MATE_ERR_FORMAT, "%s: data runs into the central directory", name);
			return NULL;
		}
		return r->mem + off;
	}
	if (w->p == NULL && (w->p = malloc(PT_WINDOW)) == NULL) {
		pt_fail(r, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (len < n) {
		pt_fail(r, MATE_ERR_FORMAT, "%s: data runs into the central directory", name);
		return NULL;
	}
	w->len = 0;
	if (src_read(r, off, w->p, len, name) != 0)
		return NULL;
	w->start = off;
	w->len = len;
	return w->p;
}

/* Where a record's data starts, from its local header. */
static int
record_offset(struct pt_reader *r, struct pt_window *w, const char *name,
    const struct pt_record *rec, uint64_t *off)
{
	size_t hlen = ZIP_LFH_SIZE + strlen(name);
	const unsigned char *h = window_at(w, rec->lfh, hlen);

	if (h == NULL && rec->size >= PT_SMALL_RECORD)
		return data_offset(r, name, rec->lfh, rec->size, off);
	if (h == NULL && (h = window_fill(r, w, rec->lfh, hlen, name)) == NULL)
		return -1;
	if (check_local(r, h, rec->lfh, name, rec->size) != 0)
		return -1;
	*off = rec->lfh + ZIP_LFH_SIZE + le(h + 26, 2) + le(h + 28, 2);
	if (*off > r->cd_offset || r->cd_offset - *off < rec->size)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: data runs into the central directory", name);
	return 0;
}

/* "<root>/data/<key>" into buf (truncated to fit). */
static void
record_name(char *buf, size_t cap, const char *root, const char *key)
{
	size_t a = strlen(root), b = strlen(key);

	if (a + 6 + b >= cap)
		b = a + 6 < cap ? cap - a - 7 : 0;
	if (a + 6 >= cap)
		a = cap - 7;
	memcpy(buf, root, a);
	memcpy(buf + a, "/data/", 6);
	memcpy(buf + a + 6, key, b);
	buf[a + 6 + b] = '\0';
}

/* Streaming: a small record from the window, a large one in chunks. */
static int
stream_record(struct pt_reader *r, struct pt_window *w, const char *name,
    const struct pt_record *rec)
{
	const unsigned char *p;
	uint64_t off, done;

	if (record_offset(r, w, name, rec, &off) != 0)
		return -1;
	if (rec->size < PT_SMALL_RECORD) {
		p = window_at(w, off, rec->size);
		if (p == NULL && (p = window_fill(r, w, off, rec->size, name)) == NULL)
			return -1;
		return rec->size > 0 ? stream_chunk(r, rec, 0, p, (size_t)rec->size) : 0;
	}
	for (done = 0; done < rec->size; done += MATE_STREAM_CHUNK) {
		size_t n = rec->size - done < MATE_STREAM_CHUNK ? (size_t)(rec->size - done) :
		    MATE_STREAM_CHUNK;

		if (r->mem != NULL) {  /* record_offset() checked the bounds */
			if (stream_chunk(r, rec, done, r->mem + off + done, n) != 0)
				return -1;
		} else if (src_read(r, off + done, r->chunk, n, name) != 0 ||
		    stream_chunk(r, rec, done, r->chunk, n) != 0)
			return -1;
	}
	return 0;
}

static int
read_record(struct pt_reader *r, struct pt_window *w, const struct pt_record *rec)
{
	char name[1100];
	const unsigned char *p;
	uint64_t off;

	record_name(name, sizeof(name), r->root, rec->key);
	if (r->stream != NULL)
		return stream_record(r, w, name, rec);
	if (!r->load_data)  /* the local header's checks alone, one small read */
		return data_offset(r, name, rec->lfh, rec->size, &off);
	if (record_offset(r, w, name, rec, &off) != 0)
		return -1;
	if (rec->size >= PT_SMALL_RECORD)
		return src_read(r, off, mate_storage_data(rec->st), rec->size, name);
	p = window_at(w, off, rec->size);
	if (p == NULL && (p = window_fill(r, w, off, rec->size, name)) == NULL)
		return -1;
	if (rec->size > 0)
		memcpy(mate_storage_data(rec->st), p, (size_t)rec->size);
	return 0;
}

/* Reads the records the pickle used, in file order, into their storages;
 * without load_data, checks their local headers as reading them would, so
 * that a file the reader would refuse is refused by a look at its tensors'
 * headers too (mate-list-dumps -d and mate-replay say the same of it). */
static int
read_records(struct pt_reader *r)
{
	struct pt_record **v = malloc((r->nrecs > 0 ? r->nrecs : 1) * sizeof(*v));
	struct pt_window w = { NULL, 0, 0 };
	size_t n = 0;
	int rc = 0;

	if (v == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->nrecs; i++)
		if (r->recs[i]->referenced && !r->recs[i]->mapped)
			v[n++] = r->recs[i];
	qsort(v, n, sizeof(*v), by_offset);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = read_record(r, &w, v[i]);
	free(w.p);
	free(v);
	return rc;
}

/* Checks every central directory header; *deflated: some are compressed. */
static int
check_cd(struct pt_reader *r, const unsigned char *cd, uint64_t cd_size, uint64_t count,
    struct cd_entry *e, int *deflated)
{
	uint64_t at = 0;

	*deflated = 0;
	for (uint64_t i = 0; i < count; i++) {
		if (parse_cdh(r, cd + at, (size_t)(cd_size - at), e) != 0)
			return -1;
		at += e->len;
		*deflated |= e->method != 0;
	}
	if (!*deflated)
		return 0;
	/* libarchive may believe a local header; its sizes are checked
	 * against these (which are bounded by the compressed sizes). */
	if ((r->cd_sizes = mate_value_dict()) == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	at = 0;
	for (uint64_t i = 0; i < count; i++) {
		parse_cdh(r, cd + at, (size_t)(cd_size - at), e);
		at += e->len;
		if (mate_value_set_str(r->cd_sizes, e->name, mate_value_int((int64_t)e->size)) != MATE_OK)
			return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	}
	return 0;
}

/* Reads a stored archive; PT_FALLBACK when it has compressed entries. */
static int
direct_read(struct pt_reader *r)
{
	unsigned char *cd = NULL;
	uint64_t cd_size = 0, count = 0, at = 0;
	struct cd_entry *e = malloc(sizeof(*e));
	int rc = -1, deflated = 0;

	if (e == NULL)
		pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	else if (load_cd(r, &cd, &cd_size, &count) == 0 &&
	    check_cd(r, cd, cd_size, count, e, &deflated) == 0)
		rc = deflated ? PT_FALLBACK : 0;
	for (uint64_t i = 0; i < count && rc == 0; i++) {
		rc = parse_cdh(r, cd + at, (size_t)(cd_size - at), e);
		if (rc == 0) {
			at += e->len;
			rc = direct_entry(r, e);
		}
	}
	free(cd);
	free(e);
	if (rc != 0)
		return rc;
	if (check_required(r) != 0 || run_pickle(r, direct_storage) != 0)
		return -1;
	if (r->stream != NULL && stream_begin(r) != 0)
		return -1;
	return read_records(r);
}

/* ---- the libarchive path (compressed archives) ----------------------------------------- */

/*
 * libarchive streams the entries, so the sizes of the records are only
 * known as they come. The pickle then runs twice when data is loaded:
 * first with placeholder storages, to learn which records it needs and
 * how big they must be, so nothing is allocated before the zip's size of
 * a record was checked against the pickle; then, after the records were
 * read into their storages, for the final tree.
 */

static int
la_fail(struct pt_reader *r, const char *what)
{
	const char *why = archive_error_string(r->a);

	return pt_fail(r, MATE_ERR_FORMAT, "%s: %s", what, why != NULL ? why : "zip error");
}

/* First run: note each key's declared size; placeholders without data. */
static mate_storage *
scan_storage(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct pt_reader *r = ctx;
	struct pt_record *rec = rec_find(r, key);
	uint64_t n = (uint64_t)numel * mate_dtype_size(dt);

	if (rec == NULL && (rec = rec_add(r, key)) == NULL)
		return NULL;
	if (rec->seen && rec->size != n) {
		size_mismatch(r, err, key, rec->size, n);
		return NULL;
	}
	rec->referenced = 1;
	rec->want = n;
	if (r->stream != NULL)
		return stream_placeholder(rec, n, err);
	return mate_storage_wrap(NULL, (size_t)n, err);
}

/* Second run: the storages read from the zip. */
static mate_storage *
loaded_storage(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct pt_reader *r = ctx;
	struct pt_record *rec = rec_find(r, key);

	if (rec == NULL || rec->st == NULL) {
		mate_set_error(err, MATE_ERR_FORMAT, "storage '%s' was not loaded", key);
		return NULL;
	}
	return mate_storage_ref(rec->st);
}

static int
scan_pickle(struct pt_reader *r)
{
	r->parsed = 1;
	if (run_pickle(r, scan_storage) != 0)
		return -1;
	if (r->stream != NULL)
		return stream_begin(r);
	if (r->load_data) {
		mate_value_free(r->result);
		r->result = NULL;
	}
	return 0;
}

/* Reads exactly n bytes of the current entry into dst. */
static int
la_read(struct pt_reader *r, void *dst, uint64_t n, const char *name)
{
	char *p = dst;

	while (n > 0) {
		size_t want = n > PT_READ_CHUNK ? PT_READ_CHUNK : (size_t)n;
		la_ssize_t got = archive_read_data(r->a, p, want);

		if (got < 0)
			return la_fail(r, name);
		if (got == 0)
			return pt_fail(r, MATE_ERR_FORMAT, "%s: truncated record", name);
		p += got;
		n -= (uint64_t)got;
	}
	return 0;
}

static int
la_small(struct pt_reader *r, const char *name, uint64_t size, int kind)
{
	char buf[PT_MAX_SMALL + 1];

	if (check_small(r, name, size) != 0 || la_read(r, buf, size, name) != 0)
		return -1;
	buf[size] = '\0';
	return kind == PT_VERSION ? check_version(r, name, buf) : check_byteorder(r, name, buf);
}

/* Reads and drops n bytes of the current entry: the deflate stream is
 * checked as reading it into a storage would check it. */
static int
la_discard(struct pt_reader *r, uint64_t n, const char *name)
{
	char buf[16384];

	while (n > 0) {
		size_t want = n > sizeof(buf) ? sizeof(buf) : (size_t)n;

		if (la_read(r, buf, want, name) != 0)
			return -1;
		n -= want;
	}
	return 0;
}

/* Streaming: the record in chunks, inflated as they come. torch writes
 * data.pkl first; a record before it cannot be told apart from one no
 * tensor uses, and is refused rather than held in memory. */
static int
la_stream(struct pt_reader *r, const struct pt_record *rec, const char *name, uint64_t size)
{
	if (!r->parsed)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "%s comes before data.pkl in the zip "
		    "(torch writes data.pkl first)", name);
	for (uint64_t done = 0; done < size; done += MATE_STREAM_CHUNK) {
		size_t n = size - done < MATE_STREAM_CHUNK ? (size_t)(size - done) : MATE_STREAM_CHUNK;

		if (la_read(r, r->chunk, n, name) != 0 || stream_chunk(r, rec, done, r->chunk, n) != 0)
			return -1;
	}
	return 0;
}

/* data/<key>: allocated only once its size is known and checked. */
static int
la_record(struct pt_reader *r, const char *key, const char *name, uint64_t size)
{
	struct pt_record *rec = rec_seen(r, key, name, size);

	if (rec == NULL)
		return -1;
	if (r->parsed && !rec->referenced)
		return 0;
	if (r->parsed && size != rec->want)
		return pt_fail(r, MATE_ERR_FORMAT, "record %s has %llu bytes, but the pickle "
		    "declares %llu", name, (unsigned long long)size, (unsigned long long)rec->want);
	if (r->stream != NULL)
		return la_stream(r, rec, name, size);
	if (!r->load_data)
		return la_discard(r, size, name);
	/* a deflated record inflates: what the records take beyond the file's own bytes counts
	 * against the one memory limit, checked before each is allocated */
	r->inflated = size > UINT64_MAX - r->inflated ? UINT64_MAX : r->inflated + size;
	if (r->inflated > r->file_size && r->inflated - r->file_size > mate_memory_cap())
		return pt_fail(r, MATE_ERR_LIMIT, "%s: the records would take more than the file's "
		    "%llu bytes and the memory limit of %llu MiB once inflated (MATE_MAX_MEMORY "
		    "raises it)", name, (unsigned long long)r->file_size,
		    (unsigned long long)(mate_memory_cap() >> 20));
	if ((rec->st = mate_storage_new_uninit((size_t)size, r->err)) == NULL)
		return pt_fail_inner(r);
	return la_read(r, mate_storage_data(rec->st), size, name);
}

static int
la_entry(struct pt_reader *r, struct archive_entry *e)
{
	const char *name = archive_entry_pathname_utf8(e), *key = NULL;
	mate_value *cd;
	uint64_t size;
	int kind;

	if (name == NULL)
		name = archive_entry_pathname(e);
	if (name == NULL)
		return pt_fail(r, MATE_ERR_FORMAT, "zip entry %llu: name is not valid UTF-8",
		    (unsigned long long)r->nentries);
	if ((kind = classify(r, name, &key)) < 0 || archive_entry_filetype(e) == AE_IFDIR)
		return kind < 0 ? -1 : 0;
	if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: size unknown", name);
	size = (uint64_t)archive_entry_size(e);
	if ((cd = mate_value_lookup(r->cd_sizes, name)) == NULL ||
	    (uint64_t)mate_value_get_int(cd) != size)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: the local header does not match the "
		    "central directory", name);
	switch (kind) {
	case PT_PICKLE:
		if (check_pickle(r, name, size) != 0)
			return -1;
		return la_read(r, r->pickle, size, name);
	case PT_VERSION:
	case PT_BYTEORDER:
		return la_small(r, name, size, kind);
	case PT_RECORD:
		if (r->have_pickle && !r->parsed && scan_pickle(r) != 0)
			return -1;
		return la_record(r, key, name, size);
	default:
		return 0;
	}
}

static int
la_finish(struct pt_reader *r)
{
	if (check_required(r) != 0 || (!r->parsed && scan_pickle(r) != 0))
		return -1;
	for (size_t i = 0; i < r->nrecs; i++)
		if (r->recs[i]->referenced && !r->recs[i]->seen)
			return pt_fail(r, MATE_ERR_FORMAT, "missing record %s/data/%s",
			    r->root, r->recs[i]->key);
	return r->load_data ? run_pickle(r, loaded_storage) : 0;
}

/* Reads the archive through libarchive, from the start. libarchive
 * converts zip names (UTF-8 in torch files) to the current locale, which
 * fails for non-ASCII names in the C locale: the thread reads in C.UTF-8
 * where the system has it. */
static int
archive_path(struct pt_reader *r, const char *path)
{
	struct archive_entry *e;
	locale_t old = mate_locale_enter(MATE_LOCALE_UTF8);
	int rc;

	r->a = archive_read_new();
	if (r->a == NULL) {
		mate_locale_leave(old);
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	}
	archive_read_support_format_zip_seekable(r->a);
	/* torch 2.x may write CRC 0; torch itself never checks CRCs. */
	archive_read_set_options(r->a, "zip:ignorecrc32");
	/* the descriptor already open, never the name again: it may have become a link */
	if (path != NULL && r->fd >= 0 && lseek(r->fd, 0, SEEK_SET) == 0)
		rc = archive_read_open_fd(r->a, r->fd, PT_BLOCK_SIZE);
	else if (path != NULL)
		rc = archive_read_open_filename(r->a, path, PT_BLOCK_SIZE);
	else
		rc = archive_read_open_memory(r->a, r->mem, (size_t)r->file_size);
	if (rc != ARCHIVE_OK)
		la_fail(r, "zip");
	while (!r->failed) {
		rc = archive_read_next_header(r->a, &e);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc < ARCHIVE_WARN)
			la_fail(r, "zip");
		else
			la_entry(r, e);
	}
	if (!r->failed)
		la_finish(r);
	archive_read_free(r->a);
	r->a = NULL;
	mate_locale_leave(old);
	return r->failed ? -1 : 0;
}

/* ---- entry points ------------------------------------------------------------------------ */

/* Rejects what is not a torch.save zip. */
static int
check_magic(struct pt_reader *r, const unsigned char *p, size_t n)
{
	if (n >= 4 && memcmp(p, "PK\003\004", 4) == 0)
		return 0;
	if (n >= 2 && p[0] == 0x80 && p[1] <= 5)
		return pt_fail(r, MATE_ERR_UNSUPPORTED,
		    "legacy torch.save format (pre-1.6) is not supported");
	if (n < 4)
		return pt_fail(r, MATE_ERR_FORMAT, "too short for a .pt file (%zu bytes)", n);
	return pt_fail(r, MATE_ERR_FORMAT, "not a .pt file (bad magic %02x %02x %02x %02x)",
	    p[0], p[1], p[2], p[3]);
}

static void
reader_init(struct pt_reader *r, const char *path, const struct mate_pt_read_options *opts,
    mate_error *err, mate_error *local)
{
	memset(r, 0, sizeof(*r));
	mate_error_clear(local);
	r->err = err != NULL ? err : local;
	mate_error_clear(r->err);
	r->path = path;
	r->fd = -1;
	r->max_pickle = opts && opts->max_pickle_bytes ? opts->max_pickle_bytes : PT_DEFAULT_MAX_PICKLE;
	r->max_records = opts && opts->max_records ? opts->max_records : PT_DEFAULT_MAX_RECORDS;
	r->load_data = opts ? opts->load_data : 1;
}

/* Forgets what a direct read that needs libarchive had gathered. */
static void
reader_reset(struct pt_reader *r)
{
	for (size_t i = 0; i < r->nrecs; i++) {
		mate_storage_unref(r->recs[i]->st);
		free(r->recs[i]->key);
		free(r->recs[i]);
	}
	r->nrecs = 0;
	free(r->index);
	r->index = NULL;
	r->index_cap = 0;
	free(r->root);
	free(r->pickle);
	mate_value_free(r->result);
	r->root = NULL;
	r->pickle = NULL;
	r->result = NULL;
	r->nentries = 0;
	r->have_pickle = r->parsed = r->have_version = 0;
}

/* Maps the file where mate_map_file() does (its data becomes r->mem), else it is read. */
static void
map_file(struct pt_reader *r)
{
	if ((r->map = mate_map_file(r->fd, r->file_size)) != NULL)
		r->mem = mate_map_data(r->map);
}

/* Runs the direct path, then libarchive if needed; frees the reader. */
static mate_value *
read_pt(struct pt_reader *r, const char *path)
{
	mate_value *v = NULL;

	if (direct_read(r) == PT_FALLBACK) {
		reader_reset(r);
		archive_path(r, path);
	}
	if (!r->failed) {
		v = r->result;
		r->result = NULL;
	}
	reader_reset(r);
	free(r->recs);
	free(r->chunk);
	mate_value_free(r->cd_sizes);
	mate_map_unref(r->map);  /* the storages that view it keep it */
	if (r->fd >= 0)
		close(r->fd);
	return v;
}

mate_value *
mate_pt_read(const char *path, const struct mate_pt_read_options *opts, mate_error *err)
{
	return mate_pt_read_fd(mate_open_regular(AT_FDCWD, path, 0), path, opts, err);
}

mate_value *
mate_pt_read_fd(int fd, const char *path, const struct mate_pt_read_options *opts,
    mate_error *err)
{
	struct pt_reader r;
	mate_error local;
	unsigned char head[4];
	struct stat sb;
	int rc;

	reader_init(&r, path, opts, err, &local);
	r.fd = fd;
	if (r.fd == -EFTYPE_MATE) {
		pt_fail(&r, MATE_ERR_FORMAT, "not a regular file");
		return NULL;
	}
	if (r.fd < 0 || fstat(r.fd, &sb) != 0) {
		mate_set_errno(r.err, r.fd < 0 ? -r.fd : errno, "cannot open", path);
		if (r.fd >= 0)
			close(r.fd);
		return NULL;
	}
	r.file_size = (uint64_t)sb.st_size;
	rc = mate_pread_all(r.fd, head, r.file_size < 4 ? (size_t)r.file_size : 4, 0);
	if (rc != 0) {
		mate_set_errno(r.err, -rc, "cannot read", path);
		close(r.fd);
		return NULL;
	}
	if (check_magic(&r, head, r.file_size < 4 ? (size_t)r.file_size : 4) != 0) {
		close(r.fd);
		return NULL;
	}
	map_file(&r);
	return read_pt(&r, path);
}

mate_value *
mate_pt_read_memory(const void *buf, size_t len, const struct mate_pt_read_options *opts,
    mate_error *err)
{
	struct pt_reader r;
	mate_error local;

	reader_init(&r, "<memory>", opts, err, &local);
	r.mem = buf;
	r.file_size = len;
	if (check_magic(&r, buf, len) != 0)
		return NULL;
	return read_pt(&r, NULL);
}

int
mate_pt_read_stream(int fd, const char *path, const struct mate_tensor_stream *s,
    mate_error *err)
{
	struct pt_reader r;
	mate_error local;
	unsigned char head[4];
	struct stat sb;
	mate_value *v;
	int rc;

	reader_init(&r, path, NULL, err, &local);
	r.load_data = 0;
	r.stream = s;
	r.fd = fd;
	if (r.fd == -EFTYPE_MATE) {
		pt_fail(&r, MATE_ERR_FORMAT, "not a regular file");
		return MATE_ERR_FORMAT;
	}
	if (r.fd < 0 || fstat(r.fd, &sb) != 0) {
		mate_set_errno(r.err, r.fd < 0 ? -r.fd : errno, "cannot open", path);
		if (r.fd >= 0)
			close(r.fd);
		return r.err->code;
	}
	r.file_size = (uint64_t)sb.st_size;
	rc = mate_pread_all(r.fd, head, r.file_size < 4 ? (size_t)r.file_size : 4, 0);
	if (rc != 0)
		mate_set_errno(r.err, -rc, "cannot read", path);
	else if (check_magic(&r, head, r.file_size < 4 ? (size_t)r.file_size : 4) == 0 &&
	    (r.chunk = malloc(MATE_STREAM_CHUNK)) == NULL)
		pt_fail(&r, MATE_ERR_NOMEM, "out of memory");
	if (rc != 0 || r.failed) {
		free(r.chunk);
		close(r.fd);
		return r.err->code != MATE_OK ? r.err->code : MATE_ERR_IO;
	}
	map_file(&r);
	v = read_pt(&r, path);
	if (v == NULL)
		return r.err->code != MATE_OK ? r.err->code : MATE_ERR_FORMAT;
	mate_value_free(v);
	return MATE_OK;
}
