/* test_safetensors.c: unit tests for the safetensors writer and reader (lib/format/safetensors.c). */
#include "config.h"

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

/* The folder of the files the cases write, made and removed by main(). */
static char *tmpdir;

static char *
tmp_path(const char *name)
{
	static char buf[8][256];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static void
spit(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

/* A tensor with its own storage of bytes b(i) = (i * 37 + seed) & 0xff. */
static mate_value *
tensor(mate_dtype dt, int ndim, const int64_t *shape, int seed)
{
	mate_tensor t;
	mate_storage *st;
	mate_value *v;
	size_t n;

	if (mate_tensor_init(&t, dt, ndim, shape, NULL, NULL) != MATE_OK)
		abort();
	n = (size_t)mate_tensor_nbytes(&t);
	st = mate_storage_new(n, NULL);
	for (size_t i = 0; i < n; i++)
		((unsigned char *)mate_storage_data(st))[i] = (unsigned char)(i * 37 + (size_t)seed);
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	return v;
}

static mate_value *
tensor1(mate_dtype dt, int64_t n, int seed)
{
	return tensor(dt, 1, &n, seed);
}

static mate_value *
f32_tensor(int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
    mate_storage *st)
{
	mate_tensor t;

	if (mate_tensor_init(&t, MATE_F32, ndim, shape, stride, NULL) != MATE_OK)
		abort();
	t.offset = offset;
	return mate_value_tensor(&t, st);
}

/* The file as bytes: 8-byte length, header text, dlen data bytes (i & 0xff). */
static unsigned char *
mkfile(const char *json, size_t jlen, size_t dlen, size_t *len)
{
	unsigned char *b = malloc(8 + jlen + dlen + 1);

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)jlen >> (8 * i));
	memcpy(b + 8, json, jlen);
	for (size_t i = 0; i < dlen; i++)
		b[8 + jlen + i] = (unsigned char)i;
	*len = 8 + jlen + dlen;
	return b;
}

static mate_value *
parse_json(const char *json, size_t jlen, size_t dlen, mate_value **meta, mate_error *err)
{
	size_t len;
	unsigned char *b = mkfile(json, jlen, dlen, &len);
	mate_value *v;

	mate_error_clear(err);
	v = mate_safetensors_parse(b, len, meta, err);
	free(b);
	return v;
}

static void
reject_at(int line, const char *json, size_t jlen, size_t dlen, const char *name, int code)
{
	mate_error err;
	mate_value *meta = NULL;
	mate_value *v = parse_json(json, jlen, dlen, &meta, &err);

	test_checks++;
	if (v != NULL || meta != NULL || strstr(err.message, name) == NULL ||
	    (code != 0 && err.code != code)) {
		test_failures++;
		fprintf(stderr, "%s:%d: header %.*s: expected %s, got %s (code %d)\n",
		    __FILE__, line, (int)jlen, json, name, v ? "success" : err.message, err.code);
	}
	mate_value_free(v);
	mate_value_free(meta);
}

#define REJECT(json, dlen, name) reject_at(__LINE__, json, sizeof(json) - 1, dlen, name, MATE_ERR_FORMAT)
#define UNSUPPORTED(json, dlen, name) \
	reject_at(__LINE__, json, sizeof(json) - 1, dlen, name, MATE_ERR_UNSUPPORTED)
#define DESER "InvalidHeaderDeserialization"

static mate_value *
accept_at(int line, const char *json, size_t dlen, mate_value **meta)
{
	mate_error err;
	mate_value *v = parse_json(json, strlen(json), dlen, meta, &err);

	test_checks++;
	if (v == NULL) {
		test_failures++;
		fprintf(stderr, "%s:%d: header %s rejected: %s\n", __FILE__, line, json, err.message);
	}
	return v;
}

#define ACCEPT(json, dlen) accept_at(__LINE__, json, dlen, NULL)

static int
write_ok(const char *path, const mate_value *d, const mate_value *meta)
{
	mate_error err;
	int rc;

	mate_error_clear(&err);
	rc = mate_safetensors_write(path, d, meta, &err);
	if (rc != MATE_OK)
		fprintf(stderr, "write %s: %s\n", path, err.message);
	return rc;
}

static mate_value *
read_ok(const char *path, mate_value **meta)
{
	mate_error err;
	mate_value *v;

	mate_error_clear(&err);
	v = mate_safetensors_read(path, meta, &err);
	if (v == NULL)
		fprintf(stderr, "read %s: %s\n", path, err.message);
	return v;
}

/* Writes d (and meta) to the file name, which must work, and reads back
 * its header text without the padding. @return it, malloc'd ("" when the
 * file has no header). */
static char *
written_header(const char *name, const mate_value *d, const mate_value *meta)
{
	unsigned char *b;
	size_t len;
	uint64_t n = 0;
	char *s;

	CHECK_EQ_INT(write_ok(tmp_path(name), d, meta), MATE_OK);
	b = (unsigned char *)test_slurp(tmp_path(name), &len);
	for (int i = 7; i >= 0 && len >= 8; i--)
		n = n << 8 | b[i];
	if (len < 8 || n > len - 8) {
		free(b);
		return strdup("");
	}
	s = malloc(n + 1);
	memcpy(s, b + 8, n);
	s[n] = '\0';
	while (n > 0 && s[n - 1] == ' ')
		s[--n] = '\0';
	free(b);
	return s;
}

/* ---- writer --------------------------------------------------------------- */

DEFINE_TEST(vector)
{
	static const unsigned char expect[] = {
		0x48, 0, 0, 0, 0, 0, 0, 0, 0x7B, 0x22, 0x61, 0x74, 0x74, 0x6E, 0x30, 0x22, 0x3A,
		0x7B, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3A, 0x22, 0x46, 0x33, 0x32,
		0x22, 0x2C, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3A, 0x5B, 0x31, 0x2C,
		0x31, 0x2C, 0x32, 0x2C, 0x33, 0x5D, 0x2C, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5F,
		0x6F, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3A, 0x5B, 0x30, 0x2C, 0x32,
		0x34, 0x5D, 0x7D, 0x7D, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
		0, 0, 0, 0, 0, 0, 0x80, 0x3F,
	};
	int64_t shape[] = { 1, 1, 2, 3 };
	mate_value *d = mate_value_dict(), *t = tensor(MATE_F32, 4, shape, 0);
	float *f = mate_storage_data(mate_value_get_storage(t));
	unsigned char *b;
	size_t len;

	for (int i = 0; i < 6; i++)
		f[i] = (float)i;
	mate_value_set_str(d, "attn0", t);
	CHECK_EQ_INT(write_ok(tmp_path("vector.safetensors"), d, NULL), MATE_OK);
	b = (unsigned char *)test_slurp(tmp_path("vector.safetensors"), &len);
	CHECK_EQ_INT(len, 80 + 24);
	CHECK(b != NULL && len >= sizeof(expect) && memcmp(b, expect, sizeof(expect)) == 0);
	CHECK(b != NULL && len == 104 && memcmp(b + 80, f, 24) == 0);
	free(b);
	unlink(tmp_path("vector.safetensors"));
	mate_value_free(d);
}

DEFINE_TEST(canonical_order)
{
	static const char expect[] =
	    "{\"u64\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[0,8]},"
	    "\"ab\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[8,24]},"
	    "\"c\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[24,32]},"
	    "\"C\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[32,40]},"
	    "\"B\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[40,44]},"
	    "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[44,48]},"
	    "\"aa\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[48,52]},"
	    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[52,56]},"
	    "\"\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[56,60]},"
	    "\"bf\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[60,66]},"
	    "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[66,68]},"
	    "\"z\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[68,71]},"
	    "\"m\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[71,72]}}";
	mate_value *d = mate_value_dict();
	char *h;

	mate_value_set_str(d, "m", tensor1(MATE_BOOL, 1, 1));
	mate_value_set_str(d, "b", tensor1(MATE_F32, 1, 2));
	mate_value_set_str(d, "z", tensor1(MATE_U8, 3, 3));
	mate_value_set_str(d, "a", tensor1(MATE_F32, 1, 4));
	mate_value_set_str(d, "\xc3\xa9", tensor1(MATE_F32, 1, 5));
	mate_value_set_str(d, "c", tensor(MATE_F64, 0, NULL, 6));
	mate_value_set_str(d, "bf", tensor1(MATE_BF16, 3, 7));
	mate_value_set_str(d, "aa", tensor1(MATE_F32, 1, 8));
	mate_value_set_str(d, "C", tensor1(MATE_C64, 1, 9));
	mate_value_set_str(d, "f8", tensor1(MATE_F8_E4M3FN, 2, 10));
	mate_value_set_str(d, "B", tensor1(MATE_F32, 1, 11));
	mate_value_set_str(d, "ab", tensor1(MATE_I64, 2, 12));
	mate_value_set_str(d, "u64", tensor1(MATE_U64, 1, 13));
	h = written_header("order.safetensors", d, NULL);
	CHECK_STR(h, expect);
	free(h);
	mate_value_free(d);
}

/* One tensor of every dtype: the file lists them in the spec's rank order. */
DEFINE_TEST(rank_order)
{
	static const char *expect[] = { "U64", "I64", "F64", "C64", "F32", "U32", "I32",
		"BF16", "F16", "U16", "I16", "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0", "F8_E4M3",
		"F8_E5M2", "I8", "U8", "F4", "BOOL" };
	mate_value *d = mate_value_dict(), *r;
	size_t k = 0;

	for (int dt = 1; dt < MATE_DTYPE_COUNT; dt++) {
		char name[8];
		if (mate_dtype_safetensors_name((mate_dtype)dt) == NULL)
			continue;
		snprintf(name, sizeof(name), "%c", 'z' - dt);  /* names against the rank */
		mate_value_set_str(d, name, tensor1((mate_dtype)dt, 1, dt));
	}
	CHECK_EQ_INT(mate_value_len(d), 20);
	CHECK_EQ_INT(write_ok(tmp_path("ranks.safetensors"), d, NULL), MATE_OK);
	r = read_ok(tmp_path("ranks.safetensors"), NULL);
	CHECK_EQ_INT(mate_value_len(r), 20);
	for (k = 0; k < mate_value_len(r) && k < 20; k++)
		CHECK_STR(mate_dtype_safetensors_name(mate_value_get_tensor(mate_value_item(r, k))->dtype),
		    expect[k]);
	mate_value_free(r);
	mate_value_free(d);
}

DEFINE_TEST(padding)
{
	for (int n = 1; n <= 9; n++) {
		char name[16];
		mate_value *d = mate_value_dict();
		unsigned char *b;
		size_t len;
		uint64_t hlen = 0;

		memset(name, 'n', (size_t)n);
		name[n] = '\0';
		mate_value_set_str(d, name, tensor1(MATE_U8, 3, n));
		CHECK_EQ_INT(write_ok(tmp_path("pad.safetensors"), d, NULL), MATE_OK);
		b = (unsigned char *)test_slurp(tmp_path("pad.safetensors"), &len);
		for (int i = 7; i >= 0 && b != NULL; i--)
			hlen = hlen << 8 | b[i];
		CHECK_EQ_INT(hlen % 8, 0);
		CHECK_EQ_INT(len, 8 + hlen + 3);
		if (b != NULL && hlen >= 8 && hlen + 8 <= len) {
			size_t j = 8 + hlen;
			while (j > 8 && b[j - 1] == ' ')
				j--;
			CHECK(b[j - 1] == '}');
			CHECK(8 + hlen - j < 8);
		}
		free(b);
		mate_value_free(d);
	}
	/* an empty dict: "{}" and six spaces */
	{
		mate_value *d = mate_value_dict();
		unsigned char *b;
		size_t len;
		CHECK_EQ_INT(write_ok(tmp_path("empty.safetensors"), d, NULL), MATE_OK);
		b = (unsigned char *)test_slurp(tmp_path("empty.safetensors"), &len);
		CHECK(len == 16 && memcmp(b, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
		free(b);
		mate_value_free(d);
	}
}

DEFINE_TEST(metadata)
{
	mate_value *d = mate_value_dict(), *m = mate_value_dict(), *r, *rm = NULL;
	char *h;
	mate_error err;

	mate_value_set_str(d, "x", tensor1(MATE_I32, 1, 0));
	mate_value_set_str(m, "format", mate_value_str("pt", (size_t)-1));
	mate_value_set_str(m, "k\"\\q", mate_value_str("v\n\t\x01/\xe2\x82\xac", (size_t)-1));
	h = written_header("meta.safetensors", d, m);
	CHECK_STR(h, "{\"__metadata__\":{\"format\":\"pt\",\"k\\\"\\\\q\":\"v\\n\\t\\u0001/\xe2\x82\xac\"},"
	    "\"x\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
	free(h);
	r = read_ok(tmp_path("meta.safetensors"), &rm);
	CHECK_EQ_INT(mate_value_len(rm), 2);
	CHECK_STR(mate_value_get_str(mate_value_lookup(rm, "format"), NULL), "pt");
	CHECK_STR(mate_value_get_str(mate_value_lookup(rm, "k\"\\q"), NULL), "v\n\t\x01/\xe2\x82\xac");
	mate_value_free(r);
	mate_value_free(rm);

	/* an empty metadata dict is written, as the reference does */
	mate_value_free(m);
	m = mate_value_dict();
	h = written_header("meta.safetensors", d, m);
	CHECK_STR(h, "{\"__metadata__\":{},\"x\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
	free(h);
	r = read_ok(tmp_path("meta.safetensors"), &rm);
	CHECK(rm != NULL && mate_value_len(rm) == 0);
	mate_value_free(r);
	mate_value_free(rm);

	/* non-string values, invalid UTF-8: argument errors, no file */
	unlink(tmp_path("meta.safetensors"));
	mate_value_set_str(m, "n", mate_value_int(3));
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("meta.safetensors"), d, m, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "not a string");
	mate_value_free(m);
	m = mate_value_dict();
	mate_value_set_str(m, "bad", mate_value_str("\xff", 1));
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("meta.safetensors"), d, m, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "UTF-8");
	CHECK(access(tmp_path("meta.safetensors"), F_OK) != 0);
	mate_value_free(m);
	mate_value_free(d);
}

static int
same_bytes(const mate_value *a, const mate_value *b)
{
	const mate_tensor *x = mate_value_get_tensor(a), *y = mate_value_get_tensor(b);
	int64_t n = mate_tensor_nbytes(x);

	if (x == NULL || y == NULL || x->dtype != y->dtype || x->ndim != y->ndim ||
	    mate_tensor_nbytes(y) != n)
		return 0;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] != y->shape[i])
			return 0;
	return n == 0 || memcmp(x->data, y->data, (size_t)n) == 0;
}

DEFINE_TEST(round_trip_dtypes)
{
	int64_t shape[] = { 3, 5 };
	mate_value *d = mate_value_dict(), *r;
	mate_error err;

	for (int dt = 1; dt < MATE_DTYPE_COUNT; dt++) {
		mate_value *one = mate_value_dict();
		mate_value_set_str(one, mate_dtype_name((mate_dtype)dt), tensor(dt, 2, shape, dt));
		if (mate_dtype_safetensors_name((mate_dtype)dt) == NULL) {
			/* complex32, complex128: safetensors has no name for them */
			CHECK_EQ_INT(mate_safetensors_write(tmp_path("no.safetensors"), one, NULL, &err),
			    MATE_ERR_UNSUPPORTED);
			CHECK_CONTAINS(err.message, "no safetensors name");
			mate_value_free(one);
			continue;
		}
		mate_value_free(one);
		mate_value_set_str(d, mate_dtype_name((mate_dtype)dt), tensor(dt, 2, shape, dt));
	}
	CHECK(access(tmp_path("no.safetensors"), F_OK) != 0);
	CHECK_EQ_INT(write_ok(tmp_path("all.safetensors"), d, NULL), MATE_OK);
	r = read_ok(tmp_path("all.safetensors"), NULL);
	CHECK_EQ_INT(mate_value_len(r), mate_value_len(d));
	for (size_t i = 0; i < mate_value_len(d); i++) {
		const char *name = mate_value_get_str(mate_value_key(d, i), NULL);
		const mate_value *got = mate_value_lookup(r, name);
		test_checks++;
		if (!same_bytes(mate_value_item(d, i), got)) {
			test_failures++;
			fprintf(stderr, "round trip of %s differs\n", name);
		}
	}
	/* each tensor read has a storage of its own */
	for (size_t i = 1; i < mate_value_len(r); i++)
		CHECK(mate_value_get_storage(mate_value_item(r, i)) !=
		    mate_value_get_storage(mate_value_item(r, i - 1)));
	mate_value_free(r);
	mate_value_free(d);
}

DEFINE_TEST(views)
{
	mate_storage *st = mate_storage_new(40 * sizeof(float), NULL);
	float *f = mate_storage_data(st);
	int64_t s23[] = { 3, 2 }, st23[] = { 1, 3 }, s4[] = { 4 }, one[] = { 1 };
	mate_value *d = mate_value_dict(), *r;
	const float *p;

	for (int i = 0; i < 40; i++)
		f[i] = (float)i;
	mate_value_set_str(d, "t", f32_tensor(2, s23, st23, 0, st));      /* transpose of 2x3 */
	mate_value_set_str(d, "o", f32_tensor(1, s4, NULL, 3, st));       /* offset 3 */
	mate_value_set_str(d, "s", f32_tensor(1, s4, (int64_t[]){ 5 }, 2, st)); /* strided */
	mate_value_set_str(d, "w", f32_tensor(1, one, NULL, 39, st));     /* the last element */
	CHECK_EQ_INT(write_ok(tmp_path("views.safetensors"), d, NULL), MATE_OK);
	r = read_ok(tmp_path("views.safetensors"), NULL);
	p = mate_value_get_tensor(mate_value_lookup(r, "t")) ?
	    mate_value_get_tensor(mate_value_lookup(r, "t"))->data : NULL;
	CHECK(p != NULL && p[0] == 0 && p[1] == 3 && p[2] == 1 && p[3] == 4 && p[4] == 2 && p[5] == 5);
	p = mate_value_get_tensor(mate_value_lookup(r, "o")) ?
	    mate_value_get_tensor(mate_value_lookup(r, "o"))->data : NULL;
	CHECK(p != NULL && p[0] == 3 && p[1] == 4 && p[2] == 5 && p[3] == 6);
	p = mate_value_get_tensor(mate_value_lookup(r, "s")) ?
	    mate_value_get_tensor(mate_value_lookup(r, "s"))->data : NULL;
	CHECK(p != NULL && p[0] == 2 && p[1] == 7 && p[2] == 12 && p[3] == 17);
	p = mate_value_get_tensor(mate_value_lookup(r, "w")) ?
	    mate_value_get_tensor(mate_value_lookup(r, "w"))->data : NULL;
	CHECK(p != NULL && p[0] == 39);
	CHECK_EQ_INT(mate_value_len(r), 4);
	mate_value_free(r);

	/* a view past the end of its storage is refused */
	mate_value_set_str(d, "bad", f32_tensor(1, s4, NULL, 37, st));
	{
		mate_error err;
		CHECK_EQ_INT(mate_safetensors_write(tmp_path("bad.safetensors"), d, NULL, &err),
		    MATE_ERR_ARGUMENT);
		CHECK_CONTAINS(err.message, "'bad'");
	}
	mate_value_free(d);
	mate_storage_unref(st);
}

/* A non-contiguous view bigger than the write buffer is gathered in parts. */
DEFINE_TEST(big_view)
{
	int64_t rows = 1100, cols = 1024, shape[] = { 1024, 1100 }, stride[] = { 1, 1024 };
	mate_storage *st = mate_storage_new((size_t)(rows * cols) * 4, NULL);
	float *f = mate_storage_data(st);
	mate_value *d = mate_value_dict(), *r;
	const float *p;
	int bad = 0;

	for (int64_t i = 0; i < rows * cols; i++)
		f[i] = (float)i;
	mate_value_set_str(d, "t", f32_tensor(2, shape, stride, 0, st));
	CHECK_EQ_INT(write_ok(tmp_path("big.safetensors"), d, NULL), MATE_OK);
	r = read_ok(tmp_path("big.safetensors"), NULL);
	p = mate_value_get_tensor(mate_value_item(r, 0)) ?
	    mate_value_get_tensor(mate_value_item(r, 0))->data : NULL;
	CHECK(p != NULL);
	for (int64_t i = 0; p != NULL && i < cols; i++)
		for (int64_t j = 0; j < rows; j++)
			bad += p[i * rows + j] != (float)(j * cols + i);
	CHECK_EQ_INT(bad, 0);
	unlink(tmp_path("big.safetensors"));
	mate_value_free(r);
	mate_value_free(d);
	mate_storage_unref(st);
}

/* Big tensors go out from where they lie in writes that end at multiples
 * of 2 MiB in the file, all but the last one; small ones between them are
 * gathered; every byte reads back. (Sorted by dtype rank, then name.) */
DEFINE_TEST(aligned_writes)
{
	static const int64_t sizes[3] = { (5 << 20) + 3, 1000, (3 << 20) + 5 };
	mate_value *d = mate_value_dict(), *r;
	int aligned, unaligned, bad = 0;

	for (int i = 0; i < 3; i++) {
		char key[8];

		snprintf(key, sizeof(key), "t%d", i);
		mate_value_set_str(d, key, tensor(MATE_U8, 1, &sizes[i], i));
	}
	nwrite_ends = 0;
	write_ends_tracking = 1;
	CHECK_EQ_INT(write_ok(tmp_path("aligned.safetensors"), d, NULL), MATE_OK);
	write_ends_tracking = 0;
	write_ends_count((off_t)2 << 20, &aligned, &unaligned);
	/* 8 MiB and a bit: up to 4 MiB (t0's last boundary), then t0's rest,
	 * t1 and t2 up to 8 MiB, then the rest */
	CHECK_EQ_INT(aligned, 2);
	CHECK_EQ_INT(unaligned, 1);
	r = read_ok(tmp_path("aligned.safetensors"), NULL);
	CHECK(r != NULL && mate_value_len(r) == 3);
	for (int i = 0; r != NULL && i < 3; i++) {
		char key[8];
		const mate_tensor *got, *want;

		snprintf(key, sizeof(key), "t%d", i);
		got = mate_value_get_tensor(mate_value_lookup(r, key));
		want = mate_value_get_tensor(mate_value_lookup(d, key));
		bad += got == NULL || mate_tensor_nbytes(got) != sizes[i] ||
		    memcmp(got->data, want->data, (size_t)sizes[i]) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	unlink(tmp_path("aligned.safetensors"));
	mate_value_free(r);
	mate_value_free(d);
}

DEFINE_TEST(scalar_and_empty)
{
	int64_t z[] = { 0, 3 };
	mate_value *d = mate_value_dict(), *r;
	char *h;

	mate_value_set_str(d, "s", tensor(MATE_F64, 0, NULL, 1));
	mate_value_set_str(d, "e", tensor(MATE_F64, 2, z, 2));
	mate_value_set_str(d, "f", tensor(MATE_F16, 2, z, 3));
	h = written_header("scalar.safetensors", d, NULL);
	CHECK_STR(h, "{\"e\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
	    "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
	    "\"f\":{\"dtype\":\"F16\",\"shape\":[0,3],\"data_offsets\":[8,8]}}");
	free(h);
	r = read_ok(tmp_path("scalar.safetensors"), NULL);
	CHECK_EQ_INT(mate_value_len(r), 3);
	for (size_t i = 0; i < mate_value_len(d); i++)
		CHECK(same_bytes(mate_value_item(d, i),
		    mate_value_lookup(r, mate_value_get_str(mate_value_key(d, i), NULL))));
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_lookup(r, "s"))->ndim, 0);
	mate_value_free(r);
	mate_value_free(d);
}

DEFINE_TEST(write_errors)
{
	mate_value *d = mate_value_dict(), *l = mate_value_list();
	mate_error err;

	mate_value_set_str(d, "__metadata__", tensor1(MATE_U8, 1, 0));
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("e.safetensors"), d, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "__metadata__");
	mate_value_free(d);
	d = mate_value_dict();
	mate_value_set_str(d, "x", mate_value_int(1));
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("e.safetensors"), d, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "not a tensor");
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("e.safetensors"), l, NULL, &err), MATE_ERR_ARGUMENT);
	mate_value_free(d);
	d = mate_value_dict();
	mate_value_set_str(d, "\xc3", tensor1(MATE_U8, 1, 0));
	CHECK_EQ_INT(mate_safetensors_write(tmp_path("e.safetensors"), d, NULL, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "UTF-8");
	CHECK_EQ_INT(mate_safetensors_write("/nonexistent-dir/x.safetensors", l, NULL, &err),
	    MATE_ERR_ARGUMENT);
	mate_value_free(d);
	d = mate_value_dict();
	CHECK(mate_safetensors_write("/nonexistent-dir/x.safetensors", d, NULL, &err) == MATE_ERR_IO);
	CHECK_CONTAINS(err.message, "nonexistent-dir");
	CHECK(access(tmp_path("e.safetensors"), F_OK) != 0);
	mate_value_free(d);
	mate_value_free(l);
}

/* A write that fails half-way (file size limit) leaves the old file alone
 * and no temporary behind. */
DEFINE_TEST(atomic)
{
	struct rlimit old, lim;
	mate_value *d = mate_value_dict();
	mate_error err;
	unsigned char *b;
	size_t len;
	int before;

	spit(tmp_path("atomic.safetensors"), "old", 3);
	before = test_count_entries(tmpdir);
	mate_value_set_str(d, "big", tensor1(MATE_U8, 1 << 20, 0));
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 65536;
	CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
	CHECK(mate_safetensors_write(tmp_path("atomic.safetensors"), d, NULL, &err) != MATE_OK);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK_CONTAINS(err.message, "cannot write");
	CHECK_EQ_INT(err.sys_errno, EFBIG);
	CHECK_EQ_INT(test_count_entries(tmpdir), before);
	b = (unsigned char *)test_slurp(tmp_path("atomic.safetensors"), &len);
	CHECK(len == 3 && memcmp(b, "old", 3) == 0);
	free(b);
	CHECK_EQ_INT(write_ok(tmp_path("atomic.safetensors"), d, NULL), MATE_OK);
	CHECK_EQ_INT(test_count_entries(tmpdir), before);
	unlink(tmp_path("atomic.safetensors"));
	mate_value_free(d);
}

/* Many small tensors and a few big ones: the coalescing path. */
DEFINE_TEST(many)
{
	mate_value *d = mate_value_dict(), *r;
	int bad = 0;

	for (int i = 0; i < 3000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "layer.%d.w", i);
		mate_value_set_str(d, name, tensor1(i % 3 ? MATE_F32 : MATE_F16, (i % 7) * 100 + 1, i));
	}
	mate_value_set_str(d, "big", tensor1(MATE_U8, (1 << 20) + 3, 7));
	CHECK_EQ_INT(write_ok(tmp_path("many.safetensors"), d, NULL), MATE_OK);
	r = read_ok(tmp_path("many.safetensors"), NULL);
	CHECK_EQ_INT(mate_value_len(r), 3001);
	for (size_t i = 0; i < mate_value_len(d); i++)
		bad += !same_bytes(mate_value_item(d, i),
		    mate_value_lookup(r, mate_value_get_str(mate_value_key(d, i), NULL)));
	CHECK_EQ_INT(bad, 0);
	/* file order: F32 tensors (rank higher) first, names bytewise */
	CHECK_STR(mate_value_get_str(mate_value_key(r, 0), NULL), "layer.1.w");
	CHECK_STR(mate_value_get_str(mate_value_key(r, 1), NULL), "layer.10.w");
	CHECK_STR(mate_value_get_str(mate_value_key(r, 3000), NULL), "big");
	unlink(tmp_path("many.safetensors"));
	mate_value_free(r);
	mate_value_free(d);
}

/* ---- reader --------------------------------------------------------------- */

DEFINE_TEST(accepts)
{
	mate_value *v, *m = NULL;
	const mate_tensor *t;

	v = ACCEPT("{}", 0);
	CHECK(v != NULL && mate_value_len(v) == 0);
	mate_value_free(v);
	v = ACCEPT("  \n\t{\r\n \"a\" : { \"dtype\" : \"U8\" , \"shape\" : [ 2 ] ,\n"
	    "  \"data_offsets\" : [ 0 , 2 ] }  }\n\n  ", 2);
	CHECK(v != NULL && mate_value_len(v) == 1);
	mate_value_free(v);
	/* unpadded, key order != offset order, fields in any order, extra keys */
	v = ACCEPT("{\"b\":{\"data_offsets\":[2,6],\"shape\":[2],\"dtype\":\"I16\",\"x\":{\"y\":[1,2.5e3,"
	    "null,true,false,\"s\\u00e9\",{}]}},\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 6);
	CHECK(v != NULL && mate_value_len(v) == 2);
	CHECK_STR(mate_value_get_str(mate_value_key(v, 0), NULL), "a");
	CHECK_STR(mate_value_get_str(mate_value_key(v, 1), NULL), "b");
	t = mate_value_get_tensor(mate_value_item(v, 1));
	CHECK(t != NULL && t->dtype == MATE_I16 && ((unsigned char *)t->data)[0] == 2 &&
	    ((unsigned char *)t->data)[3] == 5);
	mate_value_free(v);
	/* null metadata, scalar, zero-size tensors at the same offset */
	v = accept_at(__LINE__, "{\"__metadata__\":null,\"s\":{\"dtype\":\"F32\",\"shape\":[],"
	    "\"data_offsets\":[0,4]},\"z2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
	    "\"z1\":{\"dtype\":\"F64\",\"shape\":[5,0],\"data_offsets\":[4,4]}}", 4, &m);
	CHECK(m == NULL);
	CHECK(v != NULL && mate_value_len(v) == 3);
	t = mate_value_get_tensor(mate_value_lookup(v, "s"));
	CHECK(t != NULL && t->ndim == 0 && mate_tensor_numel(t) == 1);
	t = mate_value_get_tensor(mate_value_lookup(v, "z1"));
	CHECK(t != NULL && t->ndim == 2 && mate_tensor_numel(t) == 0);
	mate_value_free(v);
	/* metadata: escapes, duplicate keys (last wins), names with escapes */
	v = accept_at(__LINE__, "{\"__metadata__\":{\"k\":\"1\",\"\\u006b\":\"2\",\"e\":\"\\ud83d\\ude00\\/\"},"
	    "\"n\\u00e9\\n\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, &m);
	CHECK(m != NULL && mate_value_len(m) == 2);
	CHECK_STR(mate_value_get_str(mate_value_lookup(m, "k"), NULL), "2");
	CHECK_STR(mate_value_get_str(mate_value_lookup(m, "e"), NULL), "\xf0\x9f\x98\x80/");
	CHECK(mate_value_lookup(v, "n\xc3\xa9\n") != NULL);
	mate_value_free(m);
	mate_value_free(v);
	/* every safetensors dtype mate has, with its spelling */
	v = ACCEPT("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]},"
	    "\"b\":{\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[1,2]},"
	    "\"c\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[2,10]}}", 10);
	CHECK(v != NULL && mate_value_get_tensor(mate_value_lookup(v, "a"))->dtype == MATE_F8_E4M3FN);
	CHECK(v != NULL && mate_value_get_tensor(mate_value_lookup(v, "b"))->dtype == MATE_F8_E8M0FNU);
	CHECK(v != NULL && mate_value_get_tensor(mate_value_lookup(v, "c"))->dtype == MATE_C64);
	mate_value_free(v);
	/* a 32-dim shape; nesting below the limit in an extra key */
	v = ACCEPT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	    "1,1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,2],\"deep\":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}}", 2);
	CHECK(v != NULL && mate_value_get_tensor(mate_value_item(v, 0))->ndim == 32);
	mate_value_free(v);
}

DEFINE_TEST(rejects)
{
	char deep[400];
	mate_error err;
	unsigned char small[8] = { 0 };

	/* length prefix */
	for (size_t n = 0; n < 8; n++) {
		CHECK(mate_safetensors_parse(small, n, NULL, &err) == NULL);
		CHECK_CONTAINS(err.message, "HeaderTooSmall");
	}
	REJECT("{\"a\":1", 0, DESER);
	/* UTF-8, BOM, NUL */
	REJECT("{\"\xff\":{}}", 0, "InvalidHeader: ");
	REJECT("{\"\xc0\xaf\":{}}", 0, "InvalidHeader: ");
	REJECT("{\"\xed\xa0\x80\":{}}", 0, "InvalidHeader: ");
	REJECT("{\"\xf4\x90\x80\x80\":{}}", 0, "InvalidHeader: ");
	REJECT("{\"\xe2\x82\":{}}", 0, "InvalidHeader: ");
	REJECT("\xef\xbb\xbf{}", 0, "InvalidHeader: ");
	REJECT("{}\0\0\0\0\0\0", 0, "InvalidHeader: ");
	/* JSON */
	REJECT("", 0, DESER);
	REJECT("[]", 0, DESER);
	REJECT("{", 0, DESER);
	REJECT("{}}", 0, DESER);
	REJECT("{},", 0, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},}", 1, DESER);
	REJECT("{'a':{}}", 0, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}} x", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1e400}}", 1, "out of range");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":01}}", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":-}}", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1.}}", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":tru}}", 1, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":[1,]}}", 1, DESER);
	REJECT("{\"a\\ud800\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "surrogate");
	REJECT("{\"a\\udc00\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "surrogate");
	REJECT("{\"a\\x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "escape");
	REJECT("{\"a\\u12\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "escape");
	REJECT("{\"a\tb\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "control character");
	/* nesting deeper than serde_json's limit */
	strcpy(deep, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":");
	for (int i = 0; i < 130; i++)
		strcat(deep, "[");
	strcat(deep, "]}}");
	reject_at(__LINE__, deep, strlen(deep), 1, "recursion limit", MATE_ERR_FORMAT);
	/* schema: numbers, offsets, fields, dtypes, metadata */
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2.0],\"data_offsets\":[0,2]}}", 2, "floating point");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2e0],\"data_offsets\":[0,2]}}", 2, "floating point");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 2, "negative");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[-0],\"data_offsets\":[0,0]}}", 0, "negative");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[02],\"data_offsets\":[0,2]}}", 2, "leading zero");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,2]}}", 2, "too large");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[\"2\"],\"data_offsets\":[0,2]}}", 2, "unsigned integer");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":2,\"data_offsets\":[0,2]}}", 2, "shape");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0.0,2]}}", 2, "floating point");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2.5]}}", 2, "floating point");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[-1,2]}}", 2, "negative");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2,4]}}", 2, "invalid length");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0]}}", 2, "invalid length");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[]}}", 2, "invalid length");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":{}}}", 2, "data_offsets");
	REJECT("{\"a\":{\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "missing field `dtype`");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,2]}}", 2, "missing field `shape`");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, "missing field `data_offsets`");
	REJECT("{\"a\":{}}", 0, "missing field");
	REJECT("{\"a\":[]}", 0, DESER);
	REJECT("{\"a\":null}", 0, DESER);
	REJECT("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
	    "duplicate field `dtype`");
	REJECT("{\"a\":{\"dtype\":\"F8_E4M3FN\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "unknown dtype 'F8_E4M3FN'");
	REJECT("{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype 'f32'");
	REJECT("{\"a\":{\"dtype\":\"F128\",\"shape\":[2],\"data_offsets\":[0,32]}}", 32, "unknown dtype 'F128'");
	REJECT("{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, DESER);
	REJECT("{\"__metadata__\":{\"k\":1}}", 0, "not a string");
	REJECT("{\"__metadata__\":{\"k\":null}}", 0, "not a string");
	REJECT("{\"__metadata__\":{\"k\":[\"v\"]}}", 0, "not a string");
	REJECT("{\"__metadata__\":[]}", 0, "__metadata__");
	REJECT("{\"__metadata__\":\"x\"}", 0, "__metadata__");
	REJECT("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate field `__metadata__`");
	/* offsets */
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3, "InvalidOffset");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]}}", 5, "InvalidOffset: tensor 'b'");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3, "InvalidOffset");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "InvalidOffset");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,1]}}", 2, "InvalidOffset");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	    "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 4, "duplicate tensor name 'a'");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
	    "\"\\u0061\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 4, "duplicate tensor name 'a'");
	/* sizes */
	REJECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "TensorInvalidInfo");
	REJECT("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}}", 0, "TensorInvalidInfo");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]}}", 0,
	    "ValidationOverflow");
	REJECT("{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]}}", 0,
	    "ValidationOverflow");
	REJECT("{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, "MisalignedSlice");
	REJECT("{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "MisalignedSlice");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 3, "MetadataIncompleteBuffer");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 1, "MetadataIncompleteBuffer");
	REJECT("{}", 1, "MetadataIncompleteBuffer");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[18446744073709551615,"
	    "18446744073709551615]}}", 0, "InvalidOffset");
	/* valid for the reference, not representable in mate */
	UNSUPPORTED("{\"a\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]}}", 3,
	    "last dimension, which must be even");
	UNSUPPORTED("{\"a\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[0,3]}}", 3,
	    "unsupported dtype F6_E3M2");
	strcpy(deep, "{\"a\":{\"dtype\":\"U8\",\"shape\":[");
	for (int i = 0; i < 33; i++)
		strcat(deep, "1,");
	strcat(deep, "1],\"data_offsets\":[0,1]}}");
	reject_at(__LINE__, deep, strlen(deep), 1, "34 dimensions", MATE_ERR_UNSUPPORTED);
	UNSUPPORTED("{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808,0],\"data_offsets\":[0,0]}}", 0,
	    "dimension too large");
}

/* JSON edges: \u0000 in names and metadata, numbers of more than 63 bytes,
 * offsets past 2^53, all exact both ways. */
DEFINE_TEST(json_edges)
{
	mate_value *v, *m = NULL, *d = mate_value_dict();
	const char *s;
	char *h;
	size_t len;

	v = accept_at(__LINE__, "{\"__metadata__\":{\"k\\u0000\":\"\\u0000v\\u0000\"},"
	    "\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
	    "\"a\\u0000c\":{\"dtype\\u0000\":1,\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2],"
	    "\"x\":[100000000000000000000000000000000000000000000000000000000000000000000000000000000,-0.000000000000000000000000000000000000000000000000000000000000000000000000000000001e-5]}}", 2, &m);
	s = v != NULL ? mate_value_get_str(mate_value_key(v, 0), &len) : NULL;
	CHECK(s != NULL && len == 3 && memcmp(s, "a\0b", 3) == 0);
	s = v != NULL ? mate_value_get_str(mate_value_key(v, 1), &len) : NULL;
	CHECK(s != NULL && len == 3 && memcmp(s, "a\0c", 3) == 0);
	s = m != NULL ? mate_value_get_str(mate_value_key(m, 0), &len) : NULL;
	CHECK(s != NULL && len == 2 && memcmp(s, "k\0", 2) == 0);
	s = m != NULL ? mate_value_get_str(mate_value_item(m, 0), &len) : NULL;
	CHECK(s != NULL && len == 3 && memcmp(s, "\0v\0", 3) == 0);
	mate_value_free(v);
	mate_value_free(m);
	REJECT("{\"a\":{\"dtype\":\"U8\\u0000\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "unknown dtype");
	REJECT("{\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
	    "\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate tensor name");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[100000000000000000000000000000000000000000000000000000000000000000000000000000000],\"data_offsets\":[0,1]}}", 1, "too large");
	REJECT("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9007199254740993,"
	    "9007199254740993]}}", 0, "[9007199254740993, 9007199254740993]");

	/* the writer: a NUL byte is written \u0000 and read back */
	mate_value_set(d, mate_value_str("n\0ul", 4), tensor1(MATE_U8, 1, 0));
	h = written_header("nul.safetensors", d, NULL);
	CHECK_CONTAINS(h, "{\"n\\u0000ul\":{");
	free(h);
	mate_value_free(d);
	d = read_ok(tmp_path("nul.safetensors"), NULL);
	s = d != NULL ? mate_value_get_str(mate_value_key(d, 0), &len) : NULL;
	CHECK(s != NULL && len == 4 && memcmp(s, "n\0ul", 4) == 0);
	mate_value_free(d);
	unlink(tmp_path("nul.safetensors"));
}

/* Declared header lengths: limits checked before any allocation. */
DEFINE_TEST(header_length)
{
	unsigned char b[16] = { 0 };
	uint64_t big[] = { 100000001, UINT64_MAX, (uint64_t)1 << 63 };
	mate_error err;

	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		for (int k = 0; k < 8; k++)
			b[k] = (unsigned char)(big[i] >> (8 * k));
		CHECK(mate_safetensors_parse(b, sizeof(b), NULL, &err) == NULL);
		CHECK_CONTAINS(err.message, "HeaderTooLarge");
		CHECK_EQ_INT(err.code, MATE_ERR_LIMIT);
	}
	/* exactly the limit is allowed, but the file is too short for it */
	for (int k = 0; k < 8; k++)
		b[k] = (unsigned char)((uint64_t)100000000 >> (8 * k));
	CHECK(mate_safetensors_parse(b, sizeof(b), NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "InvalidHeaderLength");
	memset(b, 0, 8);
	b[0] = 9;
	memcpy(b + 8, "{}", 2);
	CHECK(mate_safetensors_parse(b, 10, NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "InvalidHeaderLength");
	/* and through a file, with the path in the message */
	spit(tmp_path("large.safetensors"), "\x01\xe1\xf5\x05\0\0\0\0{}", 10);
	CHECK(mate_safetensors_read(tmp_path("large.safetensors"), NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "HeaderTooLarge");
	CHECK_CONTAINS(err.message, "large.safetensors");
	unlink(tmp_path("large.safetensors"));
}

/* Every prefix of a valid file is an error, never a crash. */
DEFINE_TEST(truncated)
{
	mate_value *d = mate_value_dict(), *m = mate_value_dict(), *v, *mv;
	unsigned char *b;
	size_t len;
	mate_error err;
	int bad = 0;

	mate_value_set_str(d, "w", tensor1(MATE_F32, 3, 1));
	mate_value_set_str(d, "b", tensor1(MATE_U8, 5, 2));
	mate_value_set_str(m, "k", mate_value_str("v", 1));
	CHECK_EQ_INT(write_ok(tmp_path("full.safetensors"), d, m), MATE_OK);
	b = (unsigned char *)test_slurp(tmp_path("full.safetensors"), &len);
	CHECK(len > 100);
	for (size_t n = 0; n < len; n++) {
		mv = NULL;
		v = mate_safetensors_parse(b, n, &mv, &err);
		bad += v != NULL || mv != NULL || err.message[0] == '\0';
		mate_value_free(v);
		spit(tmp_path("cut.safetensors"), b, n);
		v = mate_safetensors_read(tmp_path("cut.safetensors"), &mv, &err);
		bad += v != NULL || mv != NULL || strstr(err.message, "cut.safetensors") == NULL;
		mate_value_free(v);
	}
	CHECK_EQ_INT(bad, 0);
	v = mate_safetensors_parse(b, len, &mv, &err);
	CHECK(v != NULL && mv != NULL && mate_value_len(v) == 2);
	mate_value_free(v);
	mate_value_free(mv);
	unlink(tmp_path("cut.safetensors"));
	unlink(tmp_path("full.safetensors"));
	free(b);
	mate_value_free(d);
	mate_value_free(m);
}

DEFINE_TEST(read_errors)
{
	mate_error err;
	mate_value *m = (mate_value *)&err;

	CHECK(mate_safetensors_read(tmp_path("missing.safetensors"), &m, &err) == NULL);
	CHECK(m == NULL);
	CHECK_EQ_INT(err.code, MATE_ERR_IO);
	CHECK_CONTAINS(err.message, "missing.safetensors");
	CHECK(mate_safetensors_read(tmpdir, NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "not a regular file");
	CHECK(mate_safetensors_parse(NULL, 0, NULL, &err) == NULL);
	CHECK_CONTAINS(err.message, "HeaderTooSmall");
	CHECK(mate_safetensors_parse(NULL, 0, NULL, NULL) == NULL);
}

/* A file of 20,000 float32 (i / 4) whose data starts at byte 8 + hlen, the
 * header padded with spaces to hlen bytes. */
static void
write_floats(const char *path, size_t hlen)
{
	char hdr[256];
	float x[20000];
	int n = snprintf(hdr, sizeof(hdr),
	    "{\"x\":{\"dtype\":\"F32\",\"shape\":[20000],\"data_offsets\":[0,80000]}}");
	unsigned char len[8] = { (unsigned char)hlen };
	FILE *f = fopen(path, "wb");

	for (int i = 0; i < 20000; i++)
		x[i] = (float)i / 4;
	memset(hdr + n, ' ', hlen - (size_t)n);
	CHECK(f != NULL && fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, hlen, f) == hlen &&
	    fwrite(x, 4, 20000, f) == 20000);
	if (f != NULL)
		fclose(f);
}

/* A file of 64 KiB or more is mapped: a tensor whose data is aligned to its
 * element size views the mapping (copy-on-write), a less aligned one is copied
 * out, MATE_MMAP=0 copies all; every way reads the same numbers. */
DEFINE_TEST(mapped)
{
	/* float32 data at 8 + 92 = 100 (4-aligned), then at 8 + 90 = 98 (not) */
	static const size_t hlens[2] = { 92, 90 };

	for (int k = 0; k < 2; k++)
		for (int off = 0; off < 2; off++) {
			const char *path = tmp_path("mapped.safetensors");
			mate_value *v;
			const mate_tensor *t;
			mate_error err;
			int ok = 1;

			write_floats(path, hlens[k]);
			if (off)
				setenv("MATE_MMAP", "0", 1);
			v = mate_safetensors_read(path, NULL, &err);
			unsetenv("MATE_MMAP");
			CHECK(v != NULL);
			if (v == NULL) {
				fprintf(stderr, "%s\n", err.message);
				continue;
			}
			t = mate_value_get_tensor(mate_value_lookup(v, "x"));
			CHECK_EQ_INT(test_mapped_at(t->data, path), k == 0 && !off);
			for (int i = 0; i < 20000; i++)
				ok &= ((const float *)t->data)[i] == (float)i / 4;
			CHECK(ok);
			if (k == 0 && !off) {  /* a write stays here */
				((float *)t->data)[3] = -1;
				mate_value_free(v);
				CHECK_EQ_INT(test_mapped_at(NULL, path), 0);
				setenv("MATE_MMAP", "0", 1);
				v = mate_safetensors_read(path, NULL, &err);
				unsetenv("MATE_MMAP");
				CHECK(v != NULL && ((const float *)mate_value_get_tensor(
				    mate_value_lookup(v, "x"))->data)[3] == 0.75f);
			}
			mate_value_free(v);
			unlink(path);
		}
}

/* The last case: the cases' files are all known, no temporary is left. */
DEFINE_TEST(nothing_left)
{
	const char *rm[] = { "ranks", "pad", "empty", "meta", "all", "views", "order", "scalar" };

	for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s.safetensors", rm[i]);
		unlink(tmp_path(name));
	}
	CHECK_EQ_INT(test_count_entries(tmpdir), 0);
}

TEST_MAIN_TMPDIR("st", tmpdir)
