/* test_pt_read.c: unit tests for the .pt reader (lib/format/pt_read.c) on hand-built zips, a real torch file and hostile archives. */
#include "config.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "mate_replay.h"
#include "mate_private.h"
#include "test.h"
#include "pt_build.h"

static char tmp_path[256];
static int zip_flags;     /* ZB_DEFLATE: run everything through libarchive */

/* zip_build() with the flags of this round (both_ways()). */
static void
make_zip(struct buf *out, const struct zip_entry *e, size_t n, int crc_zero)
{
	zip_build(out, e, n, zip_flags | (crc_zero ? ZB_CRC0 : 0));
}

/* The pickle of {'w': float32 (2, 3) view of storage key, 'v': same key
 * transposed}; numel is the storage's declared element count. */
static void
make_pickle(struct buf *b, const char *key, int64_t numel)
{
	int64_t size[2] = { 2, 3 }, stride[2] = { 3, 1 }, tsize[2] = { 3, 2 }, tstride[2] = { 1, 3 };

	memset(b, 0, sizeof(*b));
	b_op(b, 0x80);
	b_op(b, 2);
	b_op(b, '}');
	b_op(b, '(');
	p_str(b, "w");
	p_tensor_v2(b, "FloatStorage", key, numel, 0, 2, size, stride);
	p_str(b, "v");
	p_tensor_v2(b, "FloatStorage", key, numel, 0, 2, tsize, tstride);
	b_op(b, 'u');
	b_op(b, '.');
}

static const unsigned char data24[24] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23
};

/* A valid little .pt in out; the entries can be changed by the caller
 * through e[] before zip_build (see build_with). */
static size_t
std_entries(struct zip_entry *e, struct buf *pkl, const char *root, char names[][64])
{
	make_pickle(pkl, "0", 6);
	snprintf(names[0], 64, "%s/data.pkl", root);
	snprintf(names[1], 64, "%s/data/0", root);
	snprintf(names[2], 64, "%s/version", root);
	e[0] = (struct zip_entry){ names[0], pkl->p, pkl->n };
	e[1] = (struct zip_entry){ names[1], data24, sizeof(data24) };
	e[2] = (struct zip_entry){ names[2], "3\n", 2 };
	return 3;
}

static mate_value *
read_mem(const struct buf *zip, mate_error *err, int load_data)
{
	struct mate_pt_read_options o = { 0 };

	o.load_data = load_data;
	return mate_pt_read_memory(zip->p, zip->n, &o, err);
}

static mate_value *
read_path(const struct buf *zip, mate_error *err, const struct mate_pt_read_options *o)
{
	mate_value *v;

	CHECK(write_file(tmp_path, zip->p, zip->n) == 0);
	v = mate_pt_read(tmp_path, o, err);
	unlink(tmp_path);
	return v;
}

/* The file and memory readers both fail with want in the message, and so
 * does a read of the metadata alone (mate-list-dumps -d), with the same
 * words; then frees zip. */
static void
expect_fail(struct buf *zip, const char *want, int code)
{
	mate_error err, meta;
	mate_value *v = read_mem(zip, &err, 1);

	CHECK(v == NULL);
	CHECK_CONTAINS(err.message, want);
	if (code != 0)
		CHECK_EQ_INT(err.code, code);
	mate_value_free(v);
	v = read_mem(zip, &meta, 0);
	CHECK(v == NULL);
	CHECK_STR(meta.message, err.message);
	mate_value_free(v);
	v = read_path(zip, &err, NULL);
	CHECK(v == NULL);
	CHECK_CONTAINS(err.message, want);
	mate_value_free(v);
	b_free(zip);
}

/* expect_fail() of the zip of e[0..n) as make_zip() builds it. */
static void
zip_fails(const struct zip_entry *e, size_t n, const char *want, int code)
{
	struct buf zip = { 0 };

	make_zip(&zip, e, n, 0);
	expect_fail(&zip, want, code);
}

/* zip_fails() with the pickle pkl as r[0], the data.pkl; then frees pkl. */
static void
pickle_fails(struct zip_entry *r, size_t n, struct buf *pkl, const char *want, int code)
{
	r[0].data = pkl->p;
	r[0].len = pkl->n;
	zip_fails(r, n, want, code);
	b_free(pkl);
}

/* Runs fn on stored entries, which take the direct path, then on deflated
 * ones, which take libarchive's. */
static void
both_ways(void (*fn)(void))
{
	zip_flags = 0;
	fn();
	zip_flags = ZB_DEFLATE;
	fn();
	zip_flags = 0;
}

static void
check_std(mate_value *v)
{
	mate_value *w = mate_value_lookup(v, "w"), *t = mate_value_lookup(v, "v");

	CHECK(w != NULL && t != NULL);
	if (w == NULL || t == NULL)
		return;
	CHECK(mate_value_get_storage(w) == mate_value_get_storage(t));
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(w)), 24);
	CHECK(memcmp(mate_value_get_tensor(w)->data, data24, 24) == 0);
	CHECK_EQ_INT(mate_value_get_tensor(t)->stride[1], 3);
}

/* v, as read from the zip of std_entries(), is its tree (else err says
 * why); then frees v. */
static void
expect_std(mate_value *v, const mate_error *err)
{
	CHECK(v != NULL);
	if (v == NULL)
		fprintf(stderr, "%s\n", err->message);
	check_std(v);
	mate_value_free(v);
}

static void
basic(void)
{
	struct zip_entry e[8];
	char names[8][64];
	struct buf pkl, zip = { 0 };
	mate_error err;
	mate_value *v;
	struct mate_pt_read_options meta = { 0, 0, 0 };
	size_t n = std_entries(e, &pkl, "archive", names);

	make_zip(&zip, e, n, 0);
	expect_std(read_mem(&zip, &err, 1), &err);
	expect_std(read_path(&zip, &err, NULL), &err);
	/* Metadata only: placeholders of the right size, no data. */
	v = read_path(&zip, &err, &meta);
	CHECK(v != NULL);
	CHECK(mate_storage_data(mate_value_get_storage(mate_value_lookup(v, "w"))) == NULL);
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(mate_value_lookup(v, "w"))), 24);
	CHECK(mate_value_get_storage(mate_value_lookup(v, "w")) ==
	    mate_value_get_storage(mate_value_lookup(v, "v")));
	mate_value_free(v);
	b_free(&zip);

	/* CRC 0 (torch 2.x without CRCs) reads. */
	make_zip(&zip, e, n, 1);
	expect_std(read_path(&zip, &err, NULL), &err);
	b_free(&zip);

	/* Custom and UTF-8 roots; version first, "3" without LF; .data/version;
	 * byteorder; an unreferenced extra record; records before data.pkl. */
	{
		struct zip_entry r[6];
		b_free(&pkl);
		n = std_entries(e, &pkl, "\xd0\xbc\xd0\xbe\xd0\xb4\xd0\xb5\xd0\xbb\xd1\x8c", names);
		snprintf(names[3], 64, "%s/.data/version", "\xd0\xbc\xd0\xbe\xd0\xb4\xd0\xb5\xd0\xbb\xd1\x8c");
		snprintf(names[4], 64, "%s/byteorder", "\xd0\xbc\xd0\xbe\xd0\xb4\xd0\xb5\xd0\xbb\xd1\x8c");
		snprintf(names[5], 64, "%s/data/99", "\xd0\xbc\xd0\xbe\xd0\xb4\xd0\xb5\xd0\xbb\xd1\x8c");
		r[0] = (struct zip_entry){ names[3], "3", 1 };
		r[1] = e[1];
		r[2] = (struct zip_entry){ names[4], "little", 6 };
		r[3] = (struct zip_entry){ names[5], "xyz", 3 };
		r[4] = e[0];
		make_zip(&zip, r, 5, 0);
		expect_std(read_path(&zip, &err, NULL), &err);
		b_free(&zip);
	}
	b_free(&pkl);
}

DEFINE_TEST(basic)
{
	both_ways(basic);
}

/* Each broken archive gets its own error. */
static void
structure_errors(void)
{
	struct zip_entry e[8];
	char names[8][64];
	struct buf pkl, p2;
	size_t n = std_entries(e, &pkl, "archive", names);
	struct zip_entry r[8];
	const struct {
		const char *text;
		const char *want;
		int code;
	} versions[] = {
		{ "99\n", "format version 99 is not supported", MATE_ERR_UNSUPPORTED },
		{ "0", "archive/version: not a version number", MATE_ERR_FORMAT },
		{ "3 x", "not a version number", MATE_ERR_FORMAT },
	};
	/* one entry more: TorchScript, big-endian, duplicates */
	const struct {
		struct zip_entry extra;
		const char *want;
		int code;
	} extras[] = {
		{ { "archive/constants.pkl", "\x80\x02N.", 4 }, "TorchScript", MATE_ERR_UNSUPPORTED },
		{ { "archive/byteorder", "big", 3 }, "big-endian", MATE_ERR_UNSUPPORTED },
		{ { "archive/byteorder", "middle", 6 }, "must be \"little\" or \"big\"", MATE_ERR_FORMAT },
		{ e[0], "duplicate archive/data.pkl", MATE_ERR_FORMAT },
		{ e[1], "duplicate record archive/data/0", MATE_ERR_FORMAT },
	};

	/* Missing version, data.pkl, the data record. */
	zip_fails(e, 2, "no archive/version record", MATE_ERR_FORMAT);
	zip_fails(e + 1, 2, "no archive/data.pkl record", MATE_ERR_FORMAT);
	r[0] = e[0];
	r[1] = e[2];
	zip_fails(r, 2, "missing record archive/data/0", MATE_ERR_FORMAT);
	/* version 99, 0 and junk. */
	memcpy(r, e, sizeof(e[0]) * n);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		r[2].data = versions[i].text;
		r[2].len = strlen(versions[i].text);
		zip_fails(r, n, versions[i].want, versions[i].code);
	}
	/* Two roots; no root at all. */
	memcpy(r, e, sizeof(e[0]) * n);
	r[1].name = "other/data/0";
	zip_fails(r, n, "entry 'other/data/0' is outside the archive root 'archive'", MATE_ERR_FORMAT);
	r[1] = e[1];
	r[0].name = "data.pkl";
	zip_fails(r, n, "entry 'data.pkl' is not in a subdirectory", MATE_ERR_FORMAT);
	memcpy(r, e, sizeof(e[0]) * n);
	for (size_t i = 0; i < sizeof(extras) / sizeof(extras[0]); i++) {
		r[n] = extras[i].extra;
		zip_fails(r, n + 1, extras[i].want, extras[i].code);
	}
	/* Record sizes that disagree with the pickle. */
	memcpy(r, e, sizeof(e[0]) * n);
	r[1].len = 20;
	zip_fails(r, n, "record archive/data/0 has 20 bytes, but the pickle declares 24", 0);
	r[1].len = 24;
	make_pickle(&p2, "0", 8);       /* numel 8: 32 bytes, record has 24 */
	pickle_fails(r, n, &p2, "has 24 bytes, but the pickle declares 32", 0);
	make_pickle(&p2, "0", 1LL << 40);   /* far more than the file holds */
	pickle_fails(r, n, &p2,
	    "record archive/data/0 has 24 bytes, but the pickle declares 4398046511104", 0);
	/* A hostile pickle inside a good zip. */
	memset(&p2, 0, sizeof(p2));
	{
		static const char evil[] = "\x80\x02" "cos\nsystem\nX\x02\x00\x00\x00id\x85R.";
		b_bytes(&p2, evil, sizeof(evil) - 1);
	}
	pickle_fails(r, n, &p2, "global 'os system' is not allowed", MATE_ERR_FORMAT);
	b_free(&pkl);
}

DEFINE_TEST(structure_errors)
{
	both_ways(structure_errors);
}

DEFINE_TEST(magic)
{
	struct buf b = { 0 };
	mate_error err;
	mate_value *v;

	b_bytes(&b, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
	expect_fail(&b, "legacy torch.save format (pre-1.6) is not supported", MATE_ERR_UNSUPPORTED);
	b_bytes(&b, "GIF89a........", 14);
	expect_fail(&b, "bad magic", MATE_ERR_FORMAT);
	b_bytes(&b, "PK", 2);
	expect_fail(&b, "too short", MATE_ERR_FORMAT);
	b_bytes(&b, "PK\003\004 not really a zip at all, just text", 40);
	expect_fail(&b, "zip", MATE_ERR_FORMAT);
	v = mate_pt_read_memory(NULL, 0, NULL, &err);
	CHECK(v == NULL);
	CHECK_CONTAINS(err.message, "too short");
	v = mate_pt_read("/nonexistent/dir/x.pt", NULL, &err);
	CHECK(v == NULL);
	CHECK_EQ_INT(err.code, MATE_ERR_IO);
	CHECK_CONTAINS(err.message, "/nonexistent/dir/x.pt");
	CHECK_CONTAINS(err.message, "No such file");
	v = mate_pt_read("/nonexistent/dir/x.pt", NULL, NULL);     /* NULL err is fine */
	CHECK(v == NULL);
}

/* A small .pt cut at every byte offset fails cleanly, file and memory. */
static void
truncation(void)
{
	struct zip_entry e[8];
	char names[8][64];
	struct buf pkl, zip = { 0 }, cut;
	size_t n = std_entries(e, &pkl, "archive", names);
	int failures = 0, messages = 0;
	mate_error err;

	make_zip(&zip, e, n, 0);
	for (size_t len = 0; len < zip.n; len++) {
		mate_value *v;

		cut = (struct buf){ zip.p, len, len };
		v = read_mem(&cut, &err, 1);
		failures += v == NULL;
		messages += err.message[0] != '\0';
		mate_value_free(v);
		if (len % 16 == 0 || len + 30 > zip.n) {
			v = read_path(&cut, &err, NULL);
			failures += v == NULL;
			messages += err.message[0] != '\0';
			mate_value_free(v);
		}
	}
	CHECK_EQ_INT(failures, messages);
	CHECK(failures > (int)zip.n);
	{
		int expected = 0;
		for (size_t len = 0; len < zip.n; len++)
			expected += 1 + (len % 16 == 0 || len + 30 > zip.n);
		CHECK_EQ_INT(failures, expected);
	}
	b_free(&zip);
	b_free(&pkl);
}

DEFINE_TEST(truncation)
{
	both_ways(truncation);
}

/* 100,000 entries: read in reasonable time, or refused by max_records. */
static void
many_entries(void)
{
	enum { N = 100000 };
	struct zip_entry *e = calloc(N, sizeof(*e));
	char (*names)[32] = calloc(N, sizeof(*names));
	struct buf pkl, zip = { 0 };
	struct mate_pt_read_options o = { 0, 1000, 1 };
	mate_error err;
	mate_value *v;
	clock_t t0;

	if (e == NULL || names == NULL)
		abort();
	make_pickle(&pkl, "0", 6);
	e[0] = (struct zip_entry){ "archive/data.pkl", pkl.p, pkl.n };
	e[1] = (struct zip_entry){ "archive/data/0", data24, sizeof(data24) };
	e[2] = (struct zip_entry){ "archive/version", "3\n", 2 };
	for (int i = 3; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "archive/data/x%d", i);
		e[i] = (struct zip_entry){ names[i], "", 0 };
	}
	make_zip(&zip, e, N, 0);
	t0 = clock();
	expect_std(read_path(&zip, &err, NULL), &err);
	CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 10);
	v = read_path(&zip, &err, &o);
	CHECK(v == NULL);
	CHECK_EQ_INT(err.code, MATE_ERR_LIMIT);
	CHECK_CONTAINS(err.message, "100000 zip entries, more than the limit of 1000");
	b_free(&zip);
	/* The same limit met while walking the entries (a 3-entry file). */
	make_zip(&zip, e, 3, 0);
	o.max_records = 2;
	v = read_path(&zip, &err, &o);
	CHECK(v == NULL);
	CHECK_CONTAINS(err.message, "limit of 2");
	o.max_records = 0;
	o.max_pickle_bytes = 10;
	v = read_path(&zip, &err, &o);
	CHECK(v == NULL);
	CHECK_EQ_INT(err.code, MATE_ERR_LIMIT);
	CHECK_CONTAINS(err.message, "more than the limit of 10");
	b_free(&zip);
	b_free(&pkl);
	free(e);
	free(names);
}

DEFINE_TEST(many_entries)
{
	both_ways(many_entries);
}

/* The central directory header (or, local: the local header) of name. */
static unsigned char *
find_header(struct buf *zip, const char *name, int local)
{
	const char *sig = local ? "PK\003\004" : "PK\001\002";
	size_t hlen = local ? 30 : 46, nl = strlen(name);

	for (size_t i = 0; i + hlen + nl <= zip->n; i++)
		if (memcmp(zip->p + i, sig, 4) == 0 && zip->p[i + 28 - (local ? 2 : 0)] == nl &&
		    memcmp(zip->p + i + hlen, name, nl) == 0)
			return zip->p + i;
	abort();
}

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A field of archive/data/0's central (local: local) header set to value,
 * width bytes at offset at, and what the reader says of it. */
static const struct {
	int local, flags;       /* flags: zip_build()'s */
	size_t at;
	uint64_t value;
	int width;
	const char *want;
	int code;
} damaged[] = {
	{ .at = 10, .value = 12, .width = 2, .code = MATE_ERR_UNSUPPORTED,
	  .want = "archive/data/0: compression method 12 is not supported" },
	{ .at = 8, .value = 0x0801, .width = 2, .code = MATE_ERR_UNSUPPORTED,
	  .want = "encrypted entries are not supported" },
	{ .at = 24, .value = 25, .width = 4, .code = MATE_ERR_FORMAT,         /* usize != csize */
	  .want = "archive/data/0: bad sizes or offset" },
	{ .flags = ZB_DEFLATE, .at = 24, .value = 0x7fffffff, .width = 4,     /* a deflate bomb's claim */
	  .code = MATE_ERR_FORMAT, .want = "archive/data/0: bad sizes or offset" },
	{ .at = 42, .value = 1000000, .width = 4, .code = MATE_ERR_FORMAT,
	  .want = "archive/data/0: bad sizes or offset" },
	{ .local = 1, .at = 3, .value = 9, .width = 1, .code = MATE_ERR_FORMAT,
	  .want = "archive/data/0: bad local header" },
	{ .local = 1, .at = 28, .value = 5000, .width = 2, .code = MATE_ERR_FORMAT,  /* extra runs into the CD */
	  .want = "archive/data/0: data runs into the central directory" },
	/* a central record pointing at another entry's local header (the
	 * pickle's) would read its bytes as the tensor's */
	{ .at = 42, .value = 0, .width = 4, .code = MATE_ERR_FORMAT,
	  .want = "archive/data/0: the local header at offset 0 names another entry" },
	{ .local = 1, .at = 22, .value = 23, .width = 4, .code = MATE_ERR_FORMAT,    /* local size */
	  .want = "archive/data/0: the local header's method or sizes differ" },
	{ .local = 1, .at = 8, .value = 8, .width = 2, .code = MATE_ERR_FORMAT,      /* local method */
	  .want = "archive/data/0: the local header's method or sizes differ" },
};

/* Damaged zip structures the direct reader must refuse (or accept). */
DEFINE_TEST(zip_structures)
{
	struct zip_entry e[8];
	char names[8][64];
	struct buf pkl, zip = { 0 };
	size_t n = std_entries(e, &pkl, "archive", names);
	mate_error err;

	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		zip_build(&zip, e, n, damaged[i].flags);
		put_le(find_header(&zip, "archive/data/0", damaged[i].local) + damaged[i].at,
		    damaged[i].value, damaged[i].width);
		expect_fail(&zip, damaged[i].want, damaged[i].code);
	}
	zip_build(&zip, e, n, 0);
	put_le(zip.p + zip.n - 6, 1u << 30, 4);                           /* CD offset */
	expect_fail(&zip, "bad central directory", MATE_ERR_FORMAT);
	zip_build(&zip, e, n, 0);
	put_le(zip.p + zip.n - 22 + 4, 1, 2);                             /* disk number */
	expect_fail(&zip, "multi-disk", MATE_ERR_UNSUPPORTED);
	zip_build(&zip, e, n, 0);
	for (size_t i = 0; i < n; i++)
		put_le(find_header(&zip, e[i].name, 0) + 42, 0, 4);
	expect_fail(&zip, "names another entry", MATE_ERR_FORMAT);
	/* a deflate stream that does not inflate: a block of the reserved type 3 */
	zip_build(&zip, e, n, ZB_DEFLATE);
	{
		unsigned char *h = find_header(&zip, "archive/data/0", 1);

		h[30 + (h[26] | h[27] << 8) + (h[28] | h[29] << 8)] = 0x07;
	}
	expect_fail(&zip, "archive/data/0: ", MATE_ERR_FORMAT);
	/* sizes left to a data descriptor (flag bit 3) are fine */
	zip_build(&zip, e, n, 0);
	put_le(find_header(&zip, "archive/data/0", 1) + 6, 0x0808, 2);
	put_le(find_header(&zip, "archive/data/0", 1) + 18, 0, 8);
	expect_std(read_mem(&zip, &err, 1), &err);
	b_free(&zip);
	/* An archive comment is fine. */
	zip_build(&zip, e, n, 0);
	put_le(zip.p + zip.n - 2, 7, 2);
	b_bytes(&zip, "comment", 7);
	expect_std(read_mem(&zip, &err, 1), &err);
	/* ... but bytes after the end record are not. */
	b_bytes(&zip, "x", 1);
	expect_fail(&zip, "no end of central directory", MATE_ERR_FORMAT);
	b_free(&pkl);
}

/* ---- mate_pt_write() then mate_pt_read(): the same tree comes back ---- */

struct pairs {
	const mate_storage *a[64], *b[64];
	int n;
};

/* Storages must correspond one to one. */
static int
same_storage(struct pairs *p, const mate_storage *a, const mate_storage *b)
{
	for (int i = 0; i < p->n; i++)
		if (p->a[i] == a || p->b[i] == b)
			return p->a[i] == a && p->b[i] == b;
	if (p->n == 64)
		return 0;
	p->a[p->n] = a;
	p->b[p->n++] = b;
	return mate_storage_size(a) == mate_storage_size(b) &&
	    memcmp(mate_storage_data(a), mate_storage_data(b), mate_storage_size(a)) == 0;
}

static int
same_tensor(struct pairs *p, const mate_value *a, const mate_value *b)
{
	const mate_tensor *x = mate_value_get_tensor(a), *y = mate_value_get_tensor(b);

	if (x == NULL || y == NULL || x->dtype != y->dtype || x->ndim != y->ndim ||
	    x->offset != y->offset || x->requires_grad != y->requires_grad)
		return 0;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] != y->shape[i] || x->stride[i] != y->stride[i])
			return 0;
	return same_storage(p, mate_value_get_storage(a), mate_value_get_storage(b));
}

/* a as written, b as read: enums and objects come back as their str. */
static int
same(struct pairs *p, const mate_value *a, const mate_value *b)
{
	mate_value_kind k = mate_value_kind_of(a);
	const char *sa;
	int r;

	if (k == MATE_V_ENUM || k == MATE_V_OBJECT) {
		sa = k == MATE_V_ENUM ? mate_value_enum_name(a) : mate_value_object_repr(a);
		return mate_value_kind_of(b) == MATE_V_STR && strcmp(sa, mate_value_get_str(b, NULL)) == 0;
	}
	if (k != mate_value_kind_of(b))
		return 0;
	if ((r = test_same_scalar(a, b)) >= 0)
		return r;
	switch (k) {
	case MATE_V_TENSOR:
		return same_tensor(p, a, b);
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		if (mate_value_len(a) != mate_value_len(b) ||
		    mate_value_is_ordered(a) != mate_value_is_ordered(b))
			return 0;
		for (size_t i = 0; i < mate_value_len(a); i++)
			if (!same(p, mate_value_item(a, i), mate_value_item(b, i)) ||
			    (k == MATE_V_DICT && !same(p, mate_value_key(a, i), mate_value_key(b, i))))
				return 0;
		return 1;
	default:
		return 1;
	}
}

static mate_value *
tensor_of(mate_dtype dt, int ndim, const int64_t *shape, const int64_t *stride,
    int64_t offset, mate_storage *st)
{
	mate_tensor t;

	mate_tensor_init(&t, dt, ndim, shape, stride, NULL);
	t.offset = offset;
	return mate_value_tensor(&t, st);
}

static mate_value *
roundtrip_tree(mate_storage **sts)
{
	static const mate_dtype dts[] = { MATE_F64, MATE_F32, MATE_F16, MATE_BF16, MATE_I64,
		MATE_I32, MATE_I16, MATE_I8, MATE_U8, MATE_BOOL, MATE_C64, MATE_C128 };
	int64_t s23[2] = { 2, 3 }, s32[2] = { 3, 2 }, t32[2] = { 1, 3 }, one = 1, four = 4;
	mate_value *root = mate_value_ordered_dict(), *list = mate_value_list();
	mate_value *tup = mate_value_tuple(), *d = mate_value_dict();

	for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
		char name[16];
		mate_storage *st = mate_storage_new(6 * mate_dtype_size(dts[i]), NULL);

		for (size_t k = 0; k < mate_storage_size(st); k++)
			((unsigned char *)mate_storage_data(st))[k] =
			    dts[i] == MATE_BOOL ? (unsigned char)(k & 1) : (unsigned char)(k * 37 + i);
		snprintf(name, sizeof(name), "t%zu", i);
		mate_value_set_str(root, name, tensor_of(dts[i], 2, s23, NULL, 0, st));
		sts[i] = st;
	}
	mate_value_set_str(root, "t", tensor_of(MATE_F32, 2, s32, t32, 0, sts[1]));
	mate_value_set_str(root, "slice", tensor_of(MATE_F32, 1, &four, &one, 2, sts[1]));
	mate_value_set_str(root, "scalar", tensor_of(MATE_I64, 0, NULL, NULL, 5, sts[4]));
	mate_value_append(list, mate_value_int(-1));
	mate_value_append(list, mate_value_int(INT64_MIN));
	mate_value_append(list, mate_value_float(-0.0));
	mate_value_append(list, mate_value_float(1e300));
	mate_value_append(list, mate_value_str("h\xc3\xa9", (size_t)-1));
	mate_value_append(list, mate_value_bytes("\x00\xff\x80", 3));
	mate_value_append(list, mate_value_bytes("", 0));
	mate_value_append(list, mate_value_none());
	mate_value_append(list, mate_value_bool(1));
	mate_value_append(list, mate_value_dtype(MATE_BF16));
	mate_value_append(list, mate_value_enum("Mode.FAST", 1));
	mate_value_append(list, mate_value_object("Thing", "Thing(3)"));
	mate_value_append(tup, mate_value_int(7));
	mate_value_append(tup, list);
	mate_value_set(d, mate_value_int(3), mate_value_str("int key", (size_t)-1));
	mate_value_set_str(d, "tuple", tup);
	mate_value_set_str(root, "nested", d);
	return root;
}

DEFINE_TEST(roundtrip)
{
	mate_storage *sts[12];
	mate_value *tree = roundtrip_tree(sts), *v;
	mate_error err;

	for (int v3 = 0; v3 < 2; v3++) {
		struct mate_pt_write_options wo = { "rt", v3 };
		struct pairs p = { .n = 0 };

		mate_error_clear(&err);
		CHECK_EQ_INT(mate_pt_write(tmp_path, tree, &wo, &err), MATE_OK);
		if (err.code != MATE_OK)
			fprintf(stderr, "%s\n", err.message);
		v = mate_pt_read(tmp_path, NULL, &err);
		unlink(tmp_path);
		CHECK(v != NULL);
		if (v == NULL)
			fprintf(stderr, "%s\n", err.message);
		CHECK(same(&p, tree, v));
		CHECK_EQ_INT(p.n, 12);
		mate_value_free(v);
	}
	mate_value_free(tree);
	for (int i = 0; i < 12; i++)
		mate_storage_unref(sts[i]);
}

/* A real torch 1.13 file from the MATE reference fixtures. */
DEFINE_TEST(fixture)
{
	char path[1024];
	const char *src = getenv("top_srcdir");
	mate_error err;
	mate_value *v;

	snprintf(path, sizeof(path), "%s/tests/fixtures/mate-reference/mate_dumps/"
	    "20261121_125033_783_pid23322_gemm_call0001/inputs.pt", src ? src : "..");
	v = mate_pt_read(path, NULL, &err);
	CHECK(v != NULL);
	if (v == NULL) {
		fprintf(stderr, "%s\n", err.message);
		return;
	}
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_DICT);
	CHECK(mate_value_len(v) >= 1);
	for (size_t i = 0; i < mate_value_len(v); i++) {
		const mate_tensor *t = mate_value_get_tensor(mate_value_item(v, i));
		CHECK(t != NULL);
		if (t != NULL)
			CHECK(mate_tensor_storage_extent(t) * 4 <=
			    (int64_t)mate_storage_size(mate_value_get_storage(mate_value_item(v, i))));
	}
	mate_value_free(v);

	/* The torch-written file cut at every byte offset fails cleanly. */
	{
		FILE *f = fopen(path, "rb");
		struct buf whole = { 0 };
		unsigned char chunk[4096];
		size_t k;
		int failures = 0;

		CHECK(f != NULL);
		if (f == NULL)
			return;
		while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
			b_bytes(&whole, chunk, k);
		fclose(f);
		for (size_t len = 0; len < whole.n; len++) {
			mate_value *cut = mate_pt_read_memory(whole.p, len, NULL, &err);
			failures += cut == NULL && err.message[0] != '\0';
			mate_value_free(cut);
		}
		CHECK_EQ_INT(failures, (long long)whole.n);
		v = mate_pt_read_memory(whole.p, whole.n, NULL, &err);
		CHECK(v != NULL);
		mate_value_free(v);
		b_free(&whole);
	}
}

/* A file of 64 KiB or more is mapped: its tensors (64-byte aligned, as libmate
 * writes them) view the mapping (copy-on-write: a write into one leaves the file as it was), the
 * mapping lives as long as a storage does, and MATE_MMAP=0 reads copies. */
DEFINE_TEST(mapped)
{
	int64_t n = 20000, three = 3;
	mate_storage *big = mate_storage_new((size_t)n * 4, NULL), *small = mate_storage_new(12, NULL);
	mate_value *tree = mate_value_dict(), *v, *w;
	const mate_tensor *t;
	mate_storage *kept;
	mate_error err;

	for (int64_t i = 0; i < n; i++)
		((float *)mate_storage_data(big))[i] = (float)i * 0.5f;
	memcpy(mate_storage_data(small), (int32_t[]){ 7, -8, 9 }, 12);
	mate_value_set_str(tree, "big", tensor_of(MATE_F32, 1, &n, NULL, 0, big));
	mate_value_set_str(tree, "small", tensor_of(MATE_I32, 1, &three, NULL, 0, small));
	mate_value_set_str(tree, "again", tensor_of(MATE_F32, 1, &three, NULL, 5, big));
	CHECK_EQ_INT(mate_pt_write(tmp_path, tree, NULL, &err), MATE_OK);
	v = mate_pt_read(tmp_path, NULL, &err);
	CHECK(v != NULL);
	if (v == NULL) {
		fprintf(stderr, "%s\n", err.message);
		goto out;
	}
	CHECK(same(&(struct pairs){ .n = 0 }, tree, v));
	for (size_t i = 0; i < mate_value_len(v); i++) {
		t = mate_value_get_tensor(mate_value_item(v, i));
		CHECK_EQ_INT(test_mapped_at(t->data, tmp_path), 1);
		CHECK_EQ_INT((uintptr_t)t->data % 64, 0);
	}
	/* one storage, one view: "again" shares "big"'s */
	CHECK(mate_value_get_storage(mate_value_lookup(v, "again")) ==
	    mate_value_get_storage(mate_value_lookup(v, "big")));
	/* a write into a view stays in this process */
	t = mate_value_get_tensor(mate_value_lookup(v, "big"));
	((float *)t->data)[1] = -1.0f;
	setenv("MATE_MMAP", "0", 1);
	w = mate_pt_read(tmp_path, NULL, &err);
	unsetenv("MATE_MMAP");
	CHECK(w != NULL);
	if (w != NULL) {
		t = mate_value_get_tensor(mate_value_lookup(w, "big"));
		CHECK_EQ_INT(test_mapped_at(t->data, tmp_path), 0);
		CHECK(((float *)t->data)[1] == 0.5f);
		CHECK(same(&(struct pairs){ .n = 0 }, tree, w));
	}
	mate_value_free(w);
	/* the mapping outlives the tree while a storage is held, and goes with it */
	kept = mate_storage_ref(mate_value_get_storage(mate_value_lookup(v, "small")));
	mate_value_free(v);
	CHECK_EQ_INT(test_mapped_at(NULL, tmp_path), 1);
	CHECK_EQ_INT(((int32_t *)mate_storage_data(kept))[1], -8);
	mate_storage_unref(kept);
	CHECK_EQ_INT(test_mapped_at(NULL, tmp_path), 0);
out:
	unlink(tmp_path);
	mate_value_free(tree);
	mate_storage_unref(big);
	mate_storage_unref(small);
}

int
main(int argc, char **argv)
{
	snprintf(tmp_path, sizeof(tmp_path), "test_pt_read.%ld.pt", (long)getpid());
	return test_main(argc, argv);
}
