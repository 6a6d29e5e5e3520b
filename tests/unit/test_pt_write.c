/* test_pt_write.c: unit tests of mate_pt_write(): exact pickle bytes, zip entries, sharing, errors, atomicity. */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mate_core.h"
#include "test.h"
#include "write_ends.h"
#include "xorshift.h"

#define MAX_ENTRIES 4096

struct zip_entry {
	char name[256];
	unsigned char *data;
	size_t len;
};

struct zip {
	struct zip_entry *e;
	int n;
	int ok; /* read to the end with every CRC right */
};

static char *tmpdir;   /* made and removed by main() */

/* ---- helpers ---------------------------------------------------------------- */

static void
zip_free(struct zip *z)
{
	for (int i = 0; i < z->n; i++)
		free(z->e[i].data);
	free(z->e);
	memset(z, 0, sizeof(*z));
}

/* Reads every entry with libarchive's seekable zip reader (it checks the
 * CRCs of the central directory), or its streaming one (those of the data
 * descriptors). */
static int
zip_read_with(const char *path, struct zip *z, int streaming)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	int r;

	memset(z, 0, sizeof(*z));
	z->e = calloc(MAX_ENTRIES, sizeof(*z->e));
	if (streaming)
		archive_read_support_format_zip_streamable(a);
	else
		archive_read_support_format_zip_seekable(a);
	if (archive_read_open_filename(a, path, 65536) != ARCHIVE_OK) {
		fprintf(stderr, "open %s: %s\n", path, archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK && z->n < MAX_ENTRIES) {
		struct zip_entry *e = &z->e[z->n++];
		size_t cap = 4096;
		la_ssize_t k;
		snprintf(e->name, sizeof(e->name), "%s", archive_entry_pathname(ae));
		e->data = malloc(cap);
		while ((k = archive_read_data(a, e->data + e->len, cap - e->len)) > 0) {
			e->len += (size_t)k;
			if (e->len == cap)
				e->data = realloc(e->data, cap *= 2);
		}
		if (k < 0) {
			fprintf(stderr, "read %s: %s\n", e->name, archive_error_string(a));
			break;
		}
	}
	z->ok = r == ARCHIVE_EOF;
	archive_read_free(a);
	return z->ok ? 0 : -1;
}

/* Both readers; z gets the seekable one's entries. */
static int
zip_read(const char *path, struct zip *z)
{
	struct zip st;
	int rc = zip_read_with(path, &st, 1);

	if (rc != 0)
		fprintf(stderr, "%s: the streaming zip reader failed\n", path);
	zip_free(&st);
	if (zip_read_with(path, z, 0) != 0)
		return -1;
	return rc;
}

static const struct zip_entry *
zip_find(const struct zip *z, const char *name)
{
	for (int i = 0; i < z->n; i++)
		if (strcmp(z->e[i].name, name) == 0)
			return &z->e[i];
	return NULL;
}

static void
tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* How many files in tmpdir start with prefix (finds leftover temporaries). */
static int
count_files(const char *prefix)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	int n = 0;

	while (d != NULL && (de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	if (d != NULL)
		closedir(d);
	return n;
}

/* Writes v to a file and returns its data.pkl (and the zip in z). */
static const struct zip_entry *
write_read(const mate_value *v, const struct mate_pt_write_options *o, struct zip *z)
{
	char path[512];
	mate_error err;
	int rc;

	tmp_path(path, sizeof(path), "t.pt");
	rc = mate_pt_write(path, v, o, &err);
	CHECK_EQ_INT(rc, MATE_OK);
	if (rc != MATE_OK) {
		fprintf(stderr, "mate_pt_write: %s\n", err.message);
		memset(z, 0, sizeof(*z));
		return NULL;
	}
	CHECK_EQ_INT(zip_read(path, z), 0);
	unlink(path);
	return zip_find(z, o != NULL && o->root != NULL ? "r/data.pkl" : "archive/data.pkl");
}

/* An expected byte string built from pieces. */
struct bytes {
	unsigned char b[16384];
	size_t n;
};

static void
add(struct bytes *x, const void *p, size_t n)
{
	memcpy(x->b + x->n, p, n);
	x->n += n;
}

static void
addc(struct bytes *x, unsigned c)
{
	x->b[x->n++] = (unsigned char)c;
}

static void
adds(struct bytes *x, const char *s)
{
	add(x, s, strlen(s));
}

/* BINUNICODE */
static void
addu(struct bytes *x, const char *s)
{
	size_t n = strlen(s);
	unsigned char h[5] = { 0x58, n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >> 24 };

	add(x, h, 5);
	add(x, s, n);
}

static void
addg(struct bytes *x, const char *module, const char *name)
{
	addc(x, 0x63);
	adds(x, module);
	addc(x, '\n');
	adds(x, name);
	addc(x, '\n');
}

/* The opening of a tensor's pickle: GLOBAL torch._utils.fn, two MARKs
 * and the persistent id's "storage", module.cls, key "0", "cpu". */
static void
add_rebuild(struct bytes *x, const char *fn, const char *module, const char *cls)
{
	addg(x, "torch._utils", fn);
	add(x, "((", 2);
	addu(x, "storage");
	addg(x, module, cls);
	addu(x, "0");
	addu(x, "cpu");
}

/* A whole _rebuild_tensor_v3 call: add_rebuild()'s opening over an
 * UntypedStorage, args (the storage's numel in bytes, the end of its
 * persistent id, offset, size, stride, requires_grad), OrderedDict() for
 * the hooks, the torch dtype last, TUPLE and REDUCE. */
static void
add_rebuild_v3(struct bytes *x, const void *args, size_t n, const char *dtype)
{
	add_rebuild(x, "_rebuild_tensor_v3", "torch.storage", "UntypedStorage");
	add(x, args, n);
	addg(x, "collections", "OrderedDict");
	add(x, "\x29\x52", 2);
	addg(x, "torch", dtype);
	add(x, "\x74\x52", 2);
}

static void
dump_hex(const char *what, const unsigned char *p, size_t n)
{
	fprintf(stderr, "%s (%zu):", what, n);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "\n");
}

static void
check_bytes(const struct zip_entry *pkl, const struct bytes *want, const char *what)
{
	int same = pkl != NULL && pkl->len == want->n && memcmp(pkl->data, want->b, want->n) == 0;

	CHECK(same);
	if (!same) {
		fprintf(stderr, "pickle mismatch: %s\n", what);
		dump_hex("want", want->b, want->n);
		if (pkl != NULL)
			dump_hex("got ", pkl->data, pkl->len);
	}
}

/* A tensor value over a new storage of nbytes filled with 0, 1, 2, ... */
static mate_value *
tensor_over(mate_storage *st, mate_dtype dt, int ndim, const int64_t *shape,
    const int64_t *stride, int64_t offset)
{
	mate_tensor t;

	CHECK_EQ_INT(mate_tensor_init(&t, dt, ndim, shape, stride, NULL), MATE_OK);
	t.offset = offset;
	return mate_value_tensor(&t, st);
}

static mate_storage *
storage_seq(size_t nbytes, unsigned seed)
{
	mate_storage *st = mate_storage_new(nbytes, NULL);
	unsigned char *p = mate_storage_data(st);

	for (size_t i = 0; i < nbytes; i++)
		p[i] = (unsigned char)(i * 7 + seed);
	return st;
}

/* ---- tests ------------------------------------------------------------------ */

/* Spec B1: {'w': float32 2x3} pickles to exactly these 138 bytes. */
DEFINE_TEST(minimal_tensor)
{
	int64_t shape[2] = { 2, 3 };
	mate_storage *st = storage_seq(24, 1);
	mate_value *d = mate_value_dict();
	struct bytes want = { .n = 0 };
	static const unsigned char tail[] = { 0x4b, 0x06, 0x74, 0x51, 0x4b, 0x00, 0x4b, 0x02,
		0x4b, 0x03, 0x86, 0x4b, 0x03, 0x4b, 0x01, 0x86, 0x89 };
	const struct zip_entry *pkl, *e;
	struct zip z;

	mate_value_set_str(d, "w", tensor_over(st, MATE_F32, 2, shape, NULL, 0));
	add(&want, "\x80\x02\x7d", 3);
	addu(&want, "w");
	add_rebuild(&want, "_rebuild_tensor_v2", "torch", "FloatStorage");
	add(&want, tail, sizeof(tail));
	addg(&want, "collections", "OrderedDict");
	add(&want, "\x29\x52\x74\x52\x73\x2e", 6);
	CHECK_EQ_INT(want.n, 138);
	pkl = write_read(d, NULL, &z);
	check_bytes(pkl, &want, "{'w': float32 2x3}");

	/* Entries, in order, with their contents. */
	CHECK_EQ_INT(z.n, 4);
	CHECK_STR(z.e[0].name, "archive/data.pkl");
	CHECK_STR(z.e[1].name, "archive/byteorder");
	CHECK_STR(z.e[2].name, "archive/data/0");
	CHECK_STR(z.e[3].name, "archive/version");
	e = zip_find(&z, "archive/byteorder");
	CHECK(e != NULL && e->len == 6 && memcmp(e->data, "little", 6) == 0);
	e = zip_find(&z, "archive/version");
	CHECK(e != NULL && e->len == 2 && memcmp(e->data, "3\n", 2) == 0);
	e = zip_find(&z, "archive/data/0");
	CHECK(e != NULL && e->len == 24 && memcmp(e->data, mate_storage_data(st), 24) == 0);
	zip_free(&z);
	mate_value_free(d);
	mate_storage_unref(st);
}

/* Spec B3 integer forms and the other scalars, in a list (MARK ... APPENDS). */
DEFINE_TEST(scalars)
{
	static const int64_t ints[] = { 0, 255, 256, 65535, 65536, -1, INT32_MAX, INT32_MIN,
		(int64_t)1 << 31, -((int64_t)1 << 31) - 1, INT64_MAX, INT64_MIN };
	static const unsigned char want_ints[] = {
		0x4b, 0x00, 0x4b, 0xff, 0x4d, 0x00, 0x01, 0x4d, 0xff, 0xff,
		0x4a, 0x00, 0x00, 0x01, 0x00, 0x4a, 0xff, 0xff, 0xff, 0xff,
		0x4a, 0xff, 0xff, 0xff, 0x7f, 0x4a, 0x00, 0x00, 0x00, 0x80,
		0x8a, 0x05, 0x00, 0x00, 0x00, 0x80, 0x00,
		0x8a, 0x05, 0xff, 0xff, 0xff, 0x7f, 0xff,
		0x8a, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
		0x8a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 };
	mate_value *l = mate_value_list();
	struct bytes want = { .n = 0 };
	struct zip z;

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		mate_value_append(l, mate_value_int(ints[i]));
	mate_value_append(l, mate_value_float(1.5));
	mate_value_append(l, mate_value_str("h\xc3\xa9", (size_t)-1));
	mate_value_append(l, mate_value_bytes("\x00\xff", 2));
	mate_value_append(l, mate_value_none());
	mate_value_append(l, mate_value_bool(1));
	mate_value_append(l, mate_value_bool(0));
	mate_value_append(l, mate_value_dtype(MATE_BF16));
	mate_value_append(l, mate_value_enum("Mode.FAST", 1));
	mate_value_append(l, mate_value_object("Foo", "Foo(x=1)"));
	mate_value_append(l, mate_value_object("Bar", NULL));

	add(&want, "\x80\x02\x5d\x28", 4);
	add(&want, want_ints, sizeof(want_ints));
	add(&want, "\x47\x3f\xf8\x00\x00\x00\x00\x00\x00", 9);
	addu(&want, "h\xc3\xa9");
	addg(&want, "_codecs", "encode");
	add(&want, "\x58\x03\x00\x00\x00\x00\xc3\xbf", 8);
	addu(&want, "latin1");
	add(&want, "\x86\x52\x4e\x88\x89", 5);
	addg(&want, "torch", "bfloat16");
	addu(&want, "Mode.FAST");
	addu(&want, "Foo(x=1)");
	addu(&want, "Bar");
	add(&want, "\x65\x2e", 2);
	check_bytes(write_read(l, NULL, &z), &want, "scalars");
	zip_free(&z);
	mate_value_free(l);
}

/* Tuples of 0..4 items, one-item list/dict (APPEND/SETITEM), OrderedDict. */
DEFINE_TEST(containers)
{
	mate_value *t = mate_value_tuple(), *l1 = mate_value_list(), *od = mate_value_ordered_dict();
	mate_value *d1 = mate_value_dict(), *k = mate_value_tuple();
	struct bytes want = { .n = 0 };
	struct zip z;

	for (int n = 0; n <= 4; n++) {
		mate_value *s = mate_value_tuple();
		for (int i = 0; i < n; i++)
			mate_value_append(s, mate_value_int(i));
		mate_value_append(t, s);
	}
	mate_value_append(l1, mate_value_int(7));
	mate_value_append(t, l1);
	mate_value_append(k, mate_value_int(1));
	mate_value_append(k, mate_value_str("k", 1));
	mate_value_set(d1, k, mate_value_none()); /* a tuple key */
	mate_value_append(t, d1);
	mate_value_set_str(od, "a", mate_value_int(1));
	mate_value_set_str(od, "b", mate_value_int(2));
	mate_value_append(t, od);
	mate_value_append(t, mate_value_dict());
	mate_value_append(t, mate_value_list());

	add(&want, "\x80\x02\x28", 3);
	add(&want, "\x29", 1);
	add(&want, "\x4b\x00\x85", 3);
	add(&want, "\x4b\x00\x4b\x01\x86", 5);
	add(&want, "\x4b\x00\x4b\x01\x4b\x02\x87", 7);
	add(&want, "\x28\x4b\x00\x4b\x01\x4b\x02\x4b\x03\x74", 10);
	add(&want, "\x5d\x4b\x07\x61", 4);
	add(&want, "\x7d\x4b\x01", 3);
	addu(&want, "k");
	add(&want, "\x86\x4e\x73", 3);
	addg(&want, "collections", "OrderedDict");
	add(&want, "\x29\x52\x28", 3);
	addu(&want, "a");
	add(&want, "\x4b\x01", 2);
	addu(&want, "b");
	add(&want, "\x4b\x02\x75", 3);
	add(&want, "\x7d\x5d\x74\x2e", 4);
	check_bytes(write_read(t, NULL, &z), &want, "containers");
	zip_free(&z);
	mate_value_free(t);
}

/* Lists and dicts go out in batches of 1000 (MARK ... APPENDS), a last
 * single item with APPEND / SETITEM. */
DEFINE_TEST(batches)
{
	mate_value *l = mate_value_list(), *d = mate_value_dict();
	struct bytes want = { .n = 0 };
	struct zip z;
	char key[16];

	for (int i = 0; i < 2001; i++)
		mate_value_append(l, mate_value_int(0));
	add(&want, "\x80\x02\x5d", 3);
	for (int b = 0; b < 2; b++) {
		addc(&want, 0x28);
		for (int i = 0; i < 1000; i++)
			add(&want, "\x4b\x00", 2);
		addc(&want, 0x65);
	}
	add(&want, "\x4b\x00\x61\x2e", 4);
	check_bytes(write_read(l, NULL, &z), &want, "list of 2001");
	zip_free(&z);

	for (int i = 0; i < 1002; i++) {
		snprintf(key, sizeof(key), "%d", i);
		mate_value_set_str(d, key, mate_value_int(i & 0xff));
	}
	want.n = 0;
	add(&want, "\x80\x02\x7d\x28", 4);
	for (int i = 0; i < 1002; i++) {
		snprintf(key, sizeof(key), "%d", i);
		if (i == 1000)
			addc(&want, 0x28);
		addu(&want, key);
		addc(&want, 0x4b);
		addc(&want, (unsigned)(i & 0xff));
		if (i == 999)
			addc(&want, 0x75);
	}
	add(&want, "\x75\x2e", 2);
	check_bytes(write_read(d, NULL, &z), &want, "dict of 1002");
	zip_free(&z);
	mate_value_free(l);
	mate_value_free(d);
}

/* Spec B2: float8 goes out as _rebuild_tensor_v3 over an UntypedStorage
 * (numel in bytes, dtype last); use_v3 does the same for float32. 0-dim
 * tensors have () size and stride. */
DEFINE_TEST(v3)
{
	int64_t shape[1] = { 4 };
	mate_storage *st8 = storage_seq(4, 3), *st32 = storage_seq(8, 5);
	mate_value *d = mate_value_dict();
	struct mate_pt_write_options o = { "r", 1 };
	struct bytes want = { .n = 0 };
	const struct zip_entry *pkl;
	struct zip z;

	mate_value_set_str(d, "f", tensor_over(st8, MATE_F8_E4M3FN, 1, shape, NULL, 0));
	add(&want, "\x80\x02\x7d", 3);
	addu(&want, "f");
	add_rebuild_v3(&want, "\x4b\x04\x74\x51\x4b\x00\x4b\x04\x85\x4b\x01\x85\x89", 13,
	    "float8_e4m3fn");
	add(&want, "\x73\x2e", 2);
	check_bytes(write_read(d, NULL, &z), &want, "float8 as v3");
	zip_free(&z);
	mate_value_free(d);

	/* use_v3: a 0-dim float32 at offset 1 of an 8-byte storage. */
	d = tensor_over(st32, MATE_F32, 0, NULL, NULL, 1);
	want.n = 0;
	add(&want, "\x80\x02", 2);
	add_rebuild_v3(&want, "\x4b\x08\x74\x51\x4b\x01\x29\x29\x89", 9, "float32");
	add(&want, "\x2e", 1);
	pkl = write_read(d, &o, &z);
	check_bytes(pkl, &want, "use_v3 0-dim float32");
	CHECK_STR(z.e[0].name, "r/data.pkl");
	CHECK_STR(z.e[3].name, "r/version");
	zip_free(&z);
	mate_value_free(d);
	mate_storage_unref(st8);
	mate_storage_unref(st32);
}

/* Views of one storage share one record; keys follow first appearance;
 * an empty tensor has a 0-byte record. */
DEFINE_TEST(sharing)
{
	int64_t shape[2] = { 2, 2 }, tstride[2] = { 1, 3 }, shape1[1] = { 2 }, eshape[2] = { 0, 3 };
	mate_storage *a = storage_seq(36, 11), *b = storage_seq(8, 13), *e = mate_storage_new(0, NULL);
	mate_value *l = mate_value_list();
	const struct zip_entry *r;
	struct zip z;
	char path[512];

	mate_value_append(l, tensor_over(b, MATE_I32, 1, shape1, NULL, 0));
	mate_value_append(l, tensor_over(a, MATE_F32, 2, shape, tstride, 1));
	mate_value_append(l, tensor_over(a, MATE_F32, 1, shape1, NULL, 7));
	mate_value_append(l, tensor_over(e, MATE_F16, 2, eshape, NULL, 0));
	mate_value_append(l, tensor_over(b, MATE_I32, 0, NULL, NULL, 1));
	write_read(l, NULL, &z);
	CHECK_EQ_INT(z.n, 6);
	r = zip_find(&z, "archive/data/0");
	CHECK(r != NULL && r->len == 8 && memcmp(r->data, mate_storage_data(b), 8) == 0);
	r = zip_find(&z, "archive/data/1");
	CHECK(r != NULL && r->len == 36 && memcmp(r->data, mate_storage_data(a), 36) == 0);
	r = zip_find(&z, "archive/data/2");
	CHECK(r != NULL && r->len == 0);
	CHECK(zip_find(&z, "archive/data/3") == NULL);
	CHECK_STR(z.e[5].name, "archive/version");
	zip_free(&z);

	/* The same value written twice gives the same bytes (no timestamps). */
	tmp_path(path, sizeof(path), "same1.pt");
	CHECK_EQ_INT(mate_pt_write(path, l, NULL, NULL), MATE_OK);
	tmp_path(path, sizeof(path), "same2.pt");
	CHECK_EQ_INT(mate_pt_write(path, l, NULL, NULL), MATE_OK);
	{
		char p1[512], *b1, *b2;
		size_t n1, n2;
		tmp_path(p1, sizeof(p1), "same1.pt");
		b1 = test_slurp(p1, &n1);
		b2 = test_slurp(path, &n2);
		CHECK(b1 != NULL && b2 != NULL && n1 == n2 && memcmp(b1, b2, n1) == 0);
		free(b1);
		free(b2);
		unlink(p1);
		unlink(path);
	}
	mate_value_free(l);
	mate_storage_unref(a);
	mate_storage_unref(b);
	mate_storage_unref(e);
}

/* A value mate_pt_write refuses: the code, the message, and no file at all. */
static void
expect_refused(mate_value *v, const struct mate_pt_write_options *o, int code,
    const char *msg)
{
	char path[512];
	mate_error err;

	tmp_path(path, sizeof(path), "bad.pt");
	mate_error_clear(&err);
	CHECK_EQ_INT(mate_pt_write(path, v, o, &err), code);
	CHECK_CONTAINS(err.message, msg);
	CHECK(access(path, F_OK) != 0);
	CHECK_EQ_INT(count_files("bad.pt"), 0);
	mate_value_free(v);
}

DEFINE_TEST(refused)
{
	int64_t shape[1] = { 3 };
	mate_storage *st = storage_seq(8, 1);
	mate_value *d, *deep;
	struct mate_pt_write_options o = { "a/b", 0 };
	mate_tensor t;

	/* A view past the end of its storage. */
	expect_refused(tensor_over(st, MATE_F32, 1, shape, NULL, 0), NULL,
	    MATE_ERR_ARGUMENT, "storage holds 2");
	/* One storage seen as two dtypes (torch.save refuses it too). */
	d = mate_value_list();
	mate_value_append(d, tensor_over(st, MATE_F32, 0, NULL, NULL, 0));
	mate_value_append(d, tensor_over(st, MATE_I32, 0, NULL, NULL, 1));
	expect_refused(d, NULL, MATE_ERR_UNSUPPORTED, "float32 and as int32");
	/* requires_grad on an integer tensor. */
	mate_tensor_init(&t, MATE_I32, 0, NULL, NULL, NULL);
	t.requires_grad = 1;
	expect_refused(mate_value_tensor(&t, st), NULL, MATE_ERR_ARGUMENT, "requires_grad");
	expect_refused(mate_value_str("\xff\xfe", 2), NULL, MATE_ERR_ARGUMENT, "UTF-8");
	expect_refused(mate_value_str("\xed\xa0", 2), NULL, MATE_ERR_ARGUMENT, "UTF-8");
	d = mate_value_dict();
	mate_value_set(d, mate_value_list(), mate_value_none());
	expect_refused(d, NULL, MATE_ERR_ARGUMENT, "unhashable");
	deep = mate_value_list();
	for (int i = 0; i < 2000; i++) {
		mate_value *outer = mate_value_list();
		mate_value_append(outer, deep);
		deep = outer;
	}
	expect_refused(deep, NULL, MATE_ERR_LIMIT, "nested");
	expect_refused(mate_value_none(), &o, MATE_ERR_ARGUMENT, "root folder");
	o.root = "";
	expect_refused(mate_value_none(), &o, MATE_ERR_ARGUMENT, "root folder");
	{
		/* torch reads 511 bytes of an entry name: roots stop at 255 */
		static char longroot[257];
		memset(longroot, 'r', 256);
		o.root = longroot;
		expect_refused(mate_value_none(), &o, MATE_ERR_ARGUMENT, "root folder");
	}
	CHECK_EQ_INT(mate_pt_write(NULL, NULL, NULL, NULL), MATE_ERR_ARGUMENT);
	mate_storage_unref(st);
}

/* Failures while writing leave nothing under the final name (nor a
 * temporary): a missing directory, and a file size limit (EFBIG) hit while
 * small pieces are gathered and while a big storage goes out directly. */
DEFINE_TEST(write_errors)
{
	int64_t shape[1];
	mate_value *small = mate_value_str("x", 1), *big;
	mate_storage *st = mate_storage_new((size_t)24 << 20, NULL);
	struct rlimit old, lim;
	char path[512];
	mate_error err;
	int rc;

	tmp_path(path, sizeof(path), "missing/dir/x.pt");
	CHECK_EQ_INT(mate_pt_write(path, small, NULL, &err), MATE_ERR_IO);
	CHECK_CONTAINS(err.message, "missing/dir");
	CHECK_EQ_INT(err.sys_errno, ENOENT);

	shape[0] = (int64_t)(mate_storage_size(st) / 4);
	big = tensor_over(st, MATE_F32, 1, shape, NULL, 0);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	for (int i = 0; i < 3; i++) {
		lim.rlim_cur = i == 0 ? 100 : i == 1 ? (rlim_t)1 << 20 : (rlim_t)20 << 20;
		setrlimit(RLIMIT_FSIZE, &lim);
		tmp_path(path, sizeof(path), "full.pt");
		mate_error_clear(&err);
		rc = mate_pt_write(path, i == 0 ? small : big, NULL, &err);
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK_EQ_INT(rc, MATE_ERR_IO);
		CHECK_EQ_INT(err.sys_errno, EFBIG);
		CHECK_CONTAINS(err.message, "full.pt");
		CHECK(access(path, F_OK) != 0);
		CHECK_EQ_INT(count_files("full.pt"), 0);
	}
	/* And with room, the same big value goes through and reads back. */
	{
		struct zip z;
		const struct zip_entry *e;
		CHECK_EQ_INT(mate_pt_write(path, big, NULL, &err), MATE_OK);
		CHECK_EQ_INT(zip_read(path, &z), 0);
		e = zip_find(&z, "archive/data/0");
		CHECK(e != NULL && e->len == mate_storage_size(st));
		zip_free(&z);
		CHECK_EQ_INT(count_files("full.pt"), 1);
		unlink(path);
	}
	mate_value_free(small);
	mate_value_free(big);
	mate_storage_unref(st);
}

/* Many storages get keys in order and their own bytes, and the zip reads
 * back with right CRCs: small ones (gathered), 1 KiB ones (written from
 * the caller's memory) and 3000 x 4 KiB (each a piece of its own). */
static void
many(int count, size_t nbytes)
{
	mate_value *d = mate_value_dict();
	int64_t shape[1] = { (int64_t)nbytes };
	struct zip z;
	int bad = 0;
	char key[32];

	for (int i = 0; i < count; i++) {
		mate_storage *st = storage_seq(nbytes, (unsigned)i);
		snprintf(key, sizeof(key), "t%d", i);
		mate_value_set_str(d, key, tensor_over(st, MATE_U8, 1, shape, NULL, 0));
		mate_storage_unref(st);
	}
	write_read(d, NULL, &z);
	CHECK(z.ok);
	CHECK_EQ_INT(z.n, count + 3);
	for (int i = 0; i < count && z.n == count + 3; i++) {
		const struct zip_entry *e = &z.e[2 + i];
		const mate_storage *st = mate_value_get_storage(mate_value_item(d, (size_t)i));
		snprintf(key, sizeof(key), "archive/data/%d", i);
		bad += strcmp(e->name, key) != 0 || e->len != nbytes ||
		    memcmp(e->data, mate_storage_data(st), nbytes) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	zip_free(&z);
	mate_value_free(d);
}

DEFINE_TEST(many)
{
	many(50, 3);
	many(600, 1024);
	many(3000, 4096);
}

/* Large storages go out in writes that end at multiples of 2 MiB in the
 * file (whole large folios in the page cache), all but the last one, and
 * every byte lands where it belongs. */
DEFINE_TEST(aligned_chunks)
{
	static const size_t sizes[2] = { ((size_t)9 << 20) + 4321, ((size_t)3 << 20) + 77 };
	mate_value *d = mate_value_dict();
	int aligned, unaligned;
	char path[512];
	mate_error err;
	struct zip z;

	for (int i = 0; i < 2; i++) {
		mate_storage *st = mate_storage_new(sizes[i], NULL);
		uint32_t *p = mate_storage_data(st), x = 2463534242U + (uint32_t)i;
		int64_t shape[1] = { (int64_t)sizes[i] };
		char key[8];

		for (size_t k = 0; k < sizes[i] / 4; k++)
			p[k] = xorshift32(&x);
		snprintf(key, sizeof(key), "t%d", i);
		mate_value_set_str(d, key, tensor_over(st, MATE_U8, 1, shape, NULL, 0));
		mate_storage_unref(st);
	}
	tmp_path(path, sizeof(path), "aligned.pt");
	nwrite_ends = 0;
	write_ends_tracking = 1;
	CHECK_EQ_INT(mate_pt_write(path, d, NULL, &err), MATE_OK);
	write_ends_tracking = 0;
	write_ends_count((off_t)2 << 20, &aligned, &unaligned);
	/* 12 MiB and a bit: at 2, 4, ..., 12 MiB, then the rest at the end */
	CHECK_EQ_INT(aligned, 6);
	CHECK_EQ_INT(unaligned, 1);
	CHECK_EQ_INT(zip_read(path, &z), 0);
	CHECK(z.ok);
	for (int i = 0; i < 2; i++) {
		const mate_storage *st = mate_value_get_storage(mate_value_item(d, (size_t)i));
		char name[32];
		const struct zip_entry *e;

		snprintf(name, sizeof(name), "archive/data/%d", i);
		e = zip_find(&z, name);
		CHECK(e != NULL && e->len == sizes[i] &&
		    memcmp(e->data, mate_storage_data(st), sizes[i]) == 0);
	}
	zip_free(&z);
	unlink(path);
	mate_value_free(d);
}

TEST_MAIN_TMPDIR("test-pt-write", tmpdir)
