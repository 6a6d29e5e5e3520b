/* dump_safetensors.c: safetensors files: a canonical writer (byte-identical to the reference) and a bounded, validating reader. */
#include "mate_private.h"
#include "wqueue.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER 100000000u   /* the reference's MAX_HEADER_SIZE */
#define ST_MAX_DEPTH 128           /* serde_json's recursion limit */
#define ST_WBUF (4u << 20)         /* write coalescing buffer */
#define ST_DIRECT (256u << 10)     /* contiguous runs this large skip the buffer */

/* ---- dtypes ---------------------------------------------------------------
 * In the reference's rank order (ascending): the writer sorts by rank
 * descending. mate has no 6-bit types (0: MATE_DTYPE_INVALID); "F4" is
 * float4_e2m1fn_x2, two values a byte, whose last dimension in the file counts
 * values, as torch's safetensors writes it: twice mate's (and torch's) bytes. */
struct st_dtype {
	const char *name;
	unsigned bits;
	mate_dtype dt;
};

static const struct st_dtype st_dtypes[] = {
	{ "BOOL", 8, MATE_BOOL }, { "F4", 4, MATE_F4_E2M1FN_X2 }, { "F6_E2M3", 6, 0 }, { "F6_E3M2", 6, 0 },
	{ "U8", 8, MATE_U8 }, { "I8", 8, MATE_I8 }, { "F8_E5M2", 8, MATE_F8_E5M2 },
	{ "F8_E4M3", 8, MATE_F8_E4M3FN }, { "F8_E8M0", 8, MATE_F8_E8M0FNU },
	{ "F8_E4M3FNUZ", 8, MATE_F8_E4M3FNUZ }, { "F8_E5M2FNUZ", 8, MATE_F8_E5M2FNUZ },
	{ "I16", 16, MATE_I16 }, { "U16", 16, MATE_U16 }, { "F16", 16, MATE_F16 },
	{ "BF16", 16, MATE_BF16 }, { "I32", 32, MATE_I32 }, { "U32", 32, MATE_U32 },
	{ "F32", 32, MATE_F32 }, { "C64", 64, MATE_C64 }, { "F64", 64, MATE_F64 },
	{ "I64", 64, MATE_I64 }, { "U64", 64, MATE_U64 },
};
#define ST_NDTYPES (int)(sizeof(st_dtypes) / sizeof(st_dtypes[0]))

static int
rank_of_mate(mate_dtype dt)
{
	for (int i = 0; i < ST_NDTYPES; i++)
		if (st_dtypes[i].dt == dt && dt != MATE_DTYPE_INVALID)
			return i;
	return -1;
}

static int
rank_of_name(const char *s, size_t len)
{
	for (int i = 0; i < ST_NDTYPES; i++)
		if (strlen(st_dtypes[i].name) == len && memcmp(st_dtypes[i].name, s, len) == 0)
			return i;
	return -1;
}

/* Offset of the first byte that breaks UTF-8 as Rust's str::from_utf8
 * defines it (no overlongs, surrogates or code points past U+10FFFF), or
 * len when it is all valid. */
size_t
mate_utf8_invalid_at(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], n, cp, min;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; min = 0x80; }
		else if ((c & 0xf0) == 0xe0) { n = 2; cp = c & 0x0f; min = 0x800; }
		else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; min = 0x10000; }
		else return i;
		if (len - i <= n)
			return i;
		for (unsigned k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

/* ==== writer =============================================================== */

struct st_item {
	const char *name;
	size_t len;
	const mate_tensor *t;
	int rank;
	uint64_t nbytes;
};

/* Bytewise, a prefix first: Rust's String order. */
static int
cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : alen < blen ? -1 : alen > blen;
}

/* The reference's order: dtype rank descending, then name. */
static int
cmp_item(const void *a, const void *b)
{
	const struct st_item *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return cmp_bytes(x->name, x->len, y->name, y->len);
}

static int
check_str(const mate_value *v, const char *what, mate_error *err)
{
	size_t len;
	const char *s = mate_value_get_str(v, &len);

	if (mate_value_kind_of(v) != MATE_V_STR)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: %s is not a string", what);
	if (mate_utf8_invalid_at((const unsigned char *)s, len) != len)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "safetensors: %s '%.100s' is not valid UTF-8", what, s);
	return MATE_OK;
}

/* Checks that one named tensor view can be written and fills in its item. */
static int
check_item(const mate_value *k, const mate_value *v, struct st_item *it, mate_error *err)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	const mate_storage *st = mate_value_get_storage(v);
	int64_t nbytes, extent = -1;
	int rc = check_str(k, "tensor name", err);

	if (rc != MATE_OK)
		return rc;
	it->name = mate_value_get_str(k, &it->len);
	if (it->len == 12 && memcmp(it->name, "__metadata__", 12) == 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: '__metadata__' cannot name a tensor");
	if (t == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: '%.100s' is not a tensor", it->name);
	it->t = t;
	it->rank = rank_of_mate(t->dtype);
	if (it->rank < 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "safetensors: tensor '%.100s': "
		    "dtype %s has no safetensors name", it->name, mate_dtype_name(t->dtype));
	if (t->device_type != MATE_DEVICE_CPU)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED,
		    "safetensors: tensor '%.100s' is not in host memory", it->name);
	if (t->dtype == MATE_F4_E2M1FN_X2 && t->ndim == 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "safetensors: tensor '%.100s': a "
		    "0-dimensional float4_e2m1fn_x2 has no F4 shape (its values pair along the last "
		    "dimension)", it->name);
	nbytes = mate_tensor_nbytes(t);
	if (t->ndim >= 0 && t->ndim <= MATE_MAX_DIMS)
		extent = mate_tensor_storage_extent(t);
	if (nbytes < 0 || extent < 0 || (nbytes > 0 && t->data == NULL) || (st != NULL &&
	    nbytes > 0 && (uint64_t)extent > mate_storage_size(st) / mate_dtype_size(t->dtype)))
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "safetensors: tensor '%.100s' has an invalid shape, strides or storage", it->name);
	it->nbytes = (uint64_t)nbytes;
	return MATE_OK;
}

/* The tensors dict as items in canonical order. */
static int
collect_items(const mate_value *tensors, struct st_item **items, size_t *n, mate_error *err)
{
	int rc = MATE_OK;

	*items = NULL;
	*n = mate_value_len(tensors);
	if (mate_value_kind_of(tensors) != MATE_V_DICT)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: tensors must be a dict");
	if ((*items = calloc(*n ? *n : 1, sizeof(**items))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < *n && rc == MATE_OK; i++)
		rc = check_item(mate_value_key(tensors, i), mate_value_item(tensors, i), &(*items)[i], err);
	if (rc == MATE_OK)
		qsort(*items, *n, sizeof(**items), cmp_item);
	return rc;
}

static int
put_metadata(struct mate_buf *sb, const mate_value *meta, mate_error *err)
{
	size_t len;
	const char *s;
	int rc;

	if (mate_value_kind_of(meta) != MATE_V_DICT)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: metadata must be a dict");
	mate_buf_puts(sb, "\"__metadata__\":{");
	for (size_t i = 0; i < mate_value_len(meta); i++) {
		if ((rc = check_str(mate_value_key(meta, i), "metadata key", err)) != MATE_OK ||
		    (rc = check_str(mate_value_item(meta, i), "metadata value", err)) != MATE_OK)
			return rc;
		s = mate_value_get_str(mate_value_key(meta, i), &len);
		mate_buf_puts(sb, i > 0 ? "," : "");
		mate_buf_json(sb, s, len, MATE_JSON_SHORT);
		s = mate_value_get_str(mate_value_item(meta, i), &len);
		mate_buf_puts(sb, ":");
		mate_buf_json(sb, s, len, MATE_JSON_SHORT);
	}
	mate_buf_puts(sb, "}");
	return MATE_OK;
}

/* The 8-byte length and the compact JSON header padded with spaces to a
 * multiple of 8, exactly as the reference writes them. */
static int
build_header(struct mate_buf *sb, const struct st_item *items, size_t n,
    const mate_value *meta, mate_error *err)
{
	uint64_t off = 0, hlen;
	int rc;

	mate_buf_put(sb, "\0\0\0\0\0\0\0\0{", 9);
	if (meta != NULL && (rc = put_metadata(sb, meta, err)) != MATE_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const mate_tensor *t = items[i].t;
		mate_buf_puts(sb, i > 0 || meta != NULL ? "," : "");
		mate_buf_json(sb, items[i].name, items[i].len, MATE_JSON_SHORT);
		mate_buf_puts(sb, ":{\"dtype\":\"");
		mate_buf_puts(sb, st_dtypes[items[i].rank].name);
		mate_buf_puts(sb, "\",\"shape\":[");
		for (int d = 0; d < t->ndim; d++) {
			mate_buf_puts(sb, d > 0 ? "," : "");
			/* F4: the last dimension counts values, two a byte */
			mate_buf_uint(sb, (uint64_t)t->shape[d] *
			    (t->dtype == MATE_F4_E2M1FN_X2 && d == t->ndim - 1 ? 2 : 1));
		}
		mate_buf_puts(sb, "],\"data_offsets\":[");
		mate_buf_uint(sb, off);
		mate_buf_puts(sb, ",");
		if (__builtin_add_overflow(off, items[i].nbytes, &off))
			return mate_set_error(err, MATE_ERR_LIMIT, "safetensors: tensors too large");
		mate_buf_uint(sb, off);
		mate_buf_puts(sb, "]}");
	}
	mate_buf_puts(sb, "}");
	while (sb->len % 8 != 0)
		mate_buf_puts(sb, " ");
	if (sb->oom)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	hlen = sb->len - 8;
	for (int i = 0; i < 8; i++)
		sb->p[i] = (char)(hlen >> (8 * i));
	return MATE_OK;
}

/* Writes a view in row-major order through the output queue (wqueue.h):
 * big contiguous views straight from the caller's memory, which stays in
 * place until the file is written; small ones copied into the queue's
 * buffer (q->cap: at most ST_WBUF, and at least every view gathered whole);
 * other views gathered there, split along dim 0 until they fit. The first
 * error sticks (q->error). */
static void
write_view(struct mate_wq *q, const mate_tensor *t)
{
	size_t es = mate_dtype_size(t->dtype), nbytes = (size_t)mate_tensor_nbytes(t);
	const char *base = (const char *)t->data + (size_t)t->offset * es;
	mate_tensor sub;
	void *d;

	if (nbytes == 0 || q->error != 0)
		return;
	if (mate_tensor_is_contiguous(t) && nbytes >= ST_DIRECT) {
		mate_wq_put(q, base, nbytes, 1);
	} else if (mate_tensor_is_contiguous(t)) {
		mate_wq_copy(q, base, nbytes);
	} else if (nbytes <= q->cap) {
		if ((d = mate_wq_reserve(q, nbytes)) != NULL)
			mate_tensor_copy_contiguous(t, d);
	} else {
		sub = *t;
		sub.ndim = t->ndim - 1;
		memmove(sub.shape, t->shape + 1, (size_t)sub.ndim * sizeof(sub.shape[0]));
		memmove(sub.stride, t->stride + 1, (size_t)sub.ndim * sizeof(sub.stride[0]));
		for (int64_t i = 0; i < t->shape[0] && q->error == 0; i++) {
			sub.offset = t->offset + i * t->stride[0];
			write_view(q, &sub);
		}
	}
}

static int
write_file(const char *path, const struct mate_buf *hdr, const struct st_item *items,
    size_t n, mate_error *err)
{
	mate_atomic_file af;
	struct mate_wq q;
	unsigned char *buf;
	size_t cap = hdr->len;
	int rc;

	/* a buffer no larger than the file (small files: one malloc, one write) */
	for (size_t i = 0; i < n && cap < ST_WBUF; i++)
		cap += items[i].nbytes < ST_WBUF ? (size_t)items[i].nbytes : ST_WBUF;
	if (cap > ST_WBUF)
		cap = ST_WBUF;
	buf = malloc(cap > 0 ? cap : 1);
	rc = buf == NULL ? mate_set_error(err, MATE_ERR_NOMEM, "out of memory") :
	    mate_atomic_open(&af, path, err);
	if (rc != MATE_OK) {
		free(buf);
		return rc;
	}
	mate_wq_init(&q, af.fd, buf, cap);
	if (hdr->len <= cap)
		mate_wq_copy(&q, hdr->p, hdr->len);
	else
		mate_wq_put(&q, hdr->p, hdr->len, 1);
	for (size_t i = 0; i < n && q.error == 0; i++)
		write_view(&q, items[i].t);
	mate_wq_flush(&q);
	free(buf);
	if (q.error == 0)
		return mate_atomic_commit(&af, err);
	rc = mate_set_errno(err, q.error, "cannot write", af.tmp_path);
	mate_atomic_abort(&af);
	return rc;
}

int
mate_safetensors_write(const char *path, const mate_value *tensors,
    const mate_value *metadata, mate_error *err)
{
	struct mate_buf hdr = { 0 };
	struct st_item *items;
	size_t n;
	int rc;

	if (path == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: no path");
	rc = collect_items(tensors, &items, &n, err);
	if (rc == MATE_OK)
		rc = build_header(&hdr, items, n, metadata, err);
	if (rc == MATE_OK)
		rc = write_file(path, &hdr, items, n, err);
	mate_buf_free(&hdr);
	free(items);
	return rc;
}

/* ==== header parser ========================================================
 * A strict JSON reader for the header that accepts what serde_json accepts
 * into the reference's types. Numbers are exact u64; strings are unescaped
 * in place (the header copy is writable and NUL-terminated, with no NUL
 * inside, so *p == '\0' only at the end).
 *
 * Why not cJSON (used everywhere else for JSON): a cJSON-based version was
 * built and measured (branch h-st2). cJSON keeps numbers as doubles, accepts
 * what the reference rejects (raw control characters, leading zeros, bad
 * \u escapes), cuts strings at \u0000, and allocates per value: the header
 * parse was slower and a hostile header cost memory many times its own size
 * (bench/README.md, "Tensor files", has the figures). The
 * safetensors header is untrusted input with a fixed schema, so this reader
 * allocates nothing per value and checks while it scans. */

struct st_entry {
	const char *name;
	size_t name_len;
	uint64_t begin, end, numel;
	uint32_t ndim;      /* dims beyond MATE_MAX_DIMS are counted, not kept */
	uint32_t order;     /* position in the header */
	size_t dims_at;     /* its first dim in the dims pool */
	int rank;
	int overflow;       /* the shape product overflowed u64 */
};

struct st_parser {
	char *base, *p, *end;
	int depth;
	struct st_entry *ents;
	size_t nents, cap_ents;
	uint64_t *dims;
	size_t ndims, cap_dims;
	mate_value *meta;
	int have_meta;
	mate_error *err;
	uint64_t spent;     /* memory the header's tensors will take, against mate_memory_cap() */
};

static int perr(struct st_parser *ps, const char *fmt, ...) MATE_PRINTF(2, 3);

/* A JSON or schema error: the reference's InvalidHeaderDeserialization. */
static int
perr(struct st_parser *ps, const char *fmt, ...)
{
	char what[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return mate_set_error(ps->err, MATE_ERR_FORMAT,
	    "InvalidHeaderDeserialization: %s at header byte %zu", what, (size_t)(ps->p - ps->base));
}

static char
peek(struct st_parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
		ps->p++;
	return *ps->p;
}

static int
hex4(const char *p, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = (unsigned char)p[i], lc = c | 0x20;
		if (!(c >= '0' && c <= '9') && !(lc >= 'a' && lc <= 'f'))
			return -1;
		*out = *out * 16 + (c <= '9' ? c - '0' : lc - 'a' + 10);
	}
	return 0;
}

static char *
put_utf8(char *w, unsigned cp)
{
	int n = cp < 0x80 ? 0 : cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;
	static const unsigned char lead[] = { 0, 0xc0, 0xe0, 0xf0 };

	*w++ = (char)(lead[n] | (cp >> (6 * n)));
	while (n-- > 0)
		*w++ = (char)(0x80 | ((cp >> (6 * n)) & 0x3f));
	return w;
}

/* One escape after the backslash; surrogate pairs are joined. */
static int
unescape(struct st_parser *ps, char **w)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = *ps->p != '\0' ? strchr(from, *ps->p) : NULL;
	unsigned cp, lo;

	if (*ps->p != 'u') {
		if (e == NULL)
			return perr(ps, "invalid escape");
		*(*w)++ = to[e - from];
		ps->p++;
		return MATE_OK;
	}
	if (hex4(ps->p + 1, &cp) != 0)
		return perr(ps, "invalid \\u escape");
	ps->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return perr(ps, "lone trailing surrogate in hex escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) != 0 ||
		    lo < 0xdc00 || lo > 0xdfff)
			return perr(ps, "lone leading surrogate in hex escape");
		ps->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*w = put_utf8(*w, cp);
	return MATE_OK;
}

/* A string, unescaped in place: *s points into the header, NUL-terminated,
 * *len bytes (a \u0000 escape may put NULs inside). */
static int
parse_string(struct st_parser *ps, const char **s, size_t *len)
{
	char *w;

	if (peek(ps) != '"')
		return perr(ps, "expected a string");
	w = ++ps->p;
	*s = w;
	while (*ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p++;
		if (c == '\0')
			return perr(ps, "EOF while parsing a string");
		if (c < 0x20)
			return perr(ps, "control character in a string");
		if (c != '\\')
			*w++ = (char)c;
		else if (unescape(ps, &w) != MATE_OK)
			return MATE_ERR_FORMAT;
	}
	*len = (size_t)(w - *s);
	*w = '\0';  /* w <= the closing quote, which is consumed */
	ps->p++;
	return MATE_OK;
}

/* An object key and its colon. */
static int
parse_key(struct st_parser *ps, const char **s, size_t *len)
{
	if (parse_string(ps, s, len) != MATE_OK)
		return MATE_ERR_FORMAT;
	if (peek(ps) != ':')
		return perr(ps, "expected ':'");
	ps->p++;
	return MATE_OK;
}

static size_t
digits(const char *p)
{
	return strspn(p, "0123456789");
}

/* Any JSON number; like serde_json, one too large for an f64 is an error. */
static int
skip_number(struct st_parser *ps)
{
	char *start = ps->p, *q;
	int frac = 0;

	ps->p += *ps->p == '-';
	if (digits(ps->p) == 0 || (*ps->p == '0' && digits(ps->p) > 1))
		return perr(ps, "invalid number");
	ps->p += digits(ps->p);
	if (*ps->p == '.') {
		if (digits(++ps->p) == 0)
			return perr(ps, "invalid number");
		ps->p += digits(ps->p);
		frac = 1;
	}
	if (*ps->p == 'e' || *ps->p == 'E') {
		ps->p++;
		ps->p += *ps->p == '+' || *ps->p == '-';
		if (digits(ps->p) == 0)
			return perr(ps, "invalid number");
		ps->p += digits(ps->p);
		frac = 1;
	}
	if (frac && isinf(strtod(start, &q)))
		return perr(ps, "number out of range");
	return MATE_OK;
}

/* An exact u64 (shape, data_offsets): no sign, fraction or exponent. */
static int
parse_u64(struct st_parser *ps, uint64_t *out)
{
	char c = peek(ps);
	size_t n = digits(ps->p);

	if (c == '-')
		return perr(ps, "invalid type: negative number, expected an unsigned integer");
	if (n == 0)
		return perr(ps, "invalid type: expected an unsigned integer");
	if (c == '0' && n > 1)
		return perr(ps, "invalid number (leading zero)");
	for (*out = 0; n > 0; n--, ps->p++)
		if (__builtin_mul_overflow(*out, 10, out) ||
		    __builtin_add_overflow(*out, (uint64_t)(*ps->p - '0'), out))
			return perr(ps, "invalid type: integer too large for u64");
	if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E')
		return perr(ps, "invalid type: floating point number, expected an unsigned integer");
	return MATE_OK;
}

/* Opens an array or object: 0, or 1 when it is empty (and closed). */
static int
open_container(struct st_parser *ps, char open, const char *what)
{
	if (peek(ps) != open)
		return perr(ps, "invalid type: %s", what);
	if (++ps->depth > ST_MAX_DEPTH)
		return perr(ps, "recursion limit exceeded");
	ps->p++;
	if (peek(ps) != (open == '[' ? ']' : '}'))
		return 0;
	ps->p++;
	ps->depth--;
	return 1;
}

/* After an item of an array or object: ',' goes on (0), the closing
 * bracket ends it (1), anything else is an error. */
static int
next_item(struct st_parser *ps, char close)
{
	char c = peek(ps);

	if (c != ',' && c != close)
		return perr(ps, "expected ',' or '%c'", close);
	ps->p++;
	if (c == ',')
		return 0;
	ps->depth--;
	return 1;
}

/* Any JSON value (extra keys in tensor entries), fully checked. */
static int
skip_value(struct st_parser *ps)
{
	static const char *words[] = { "true", "false", "null" };
	char c = peek(ps), close = c == '[' ? ']' : '}';
	const char *s;
	size_t len;
	int rc;

	if (c == '"')
		return parse_string(ps, &s, &len);
	if (c == '[' || c == '{') {
		rc = open_container(ps, c, "");
		while (rc == 0) {
			if ((c == '{' && parse_key(ps, &s, &len) != MATE_OK) || skip_value(ps) != MATE_OK)
				return MATE_ERR_FORMAT;
			rc = next_item(ps, close);
		}
		return rc < 0 ? rc : MATE_OK;
	}
	for (int i = 0; i < 3; i++)
		if (c == words[i][0]) {
			len = strlen(words[i]);
			if ((size_t)(ps->end - ps->p) < len || memcmp(ps->p, words[i], len) != 0)
				return perr(ps, "expected a value");
			ps->p += len;
			return MATE_OK;
		}
	return skip_number(ps);
}

static int
parse_shape(struct st_parser *ps, struct st_entry *e)
{
	int rc = open_container(ps, '[', "shape must be an array of unsigned integers");
	uint64_t v;

	e->numel = 1;
	e->dims_at = ps->ndims;
	while (rc == 0) {
		if (parse_u64(ps, &v) != MATE_OK)
			return MATE_ERR_FORMAT;
		e->overflow |= __builtin_mul_overflow(e->numel, v, &e->numel);
		if (e->ndim++ < MATE_MAX_DIMS) {
			if (mate_array_grow(&ps->dims, ps->ndims, &ps->cap_dims, sizeof(*ps->dims),
			    64) != 0)
				return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
			ps->dims[ps->ndims++] = v;
		}
		rc = next_item(ps, ']');
	}
	return rc < 0 ? rc : MATE_OK;
}

static int
parse_offsets(struct st_parser *ps, struct st_entry *e)
{
	int rc = open_container(ps, '[', "data_offsets must be an array of 2 unsigned integers");

	if (rc == 0 && parse_u64(ps, &e->begin) != MATE_OK)
		return MATE_ERR_FORMAT;
	if (rc == 0 && (rc = next_item(ps, ']')) == 0 && parse_u64(ps, &e->end) != MATE_OK)
		return MATE_ERR_FORMAT;
	if (rc == 0 && (rc = next_item(ps, ']')) == 1)
		return MATE_OK;
	return rc < 0 ? rc : perr(ps, "invalid length, expected a tuple of size 2");
}

static int
parse_dtype(struct st_parser *ps, struct st_entry *e)
{
	const char *s;
	size_t len;

	if (peek(ps) != '"')
		return perr(ps, "invalid type: dtype must be a string");
	if (parse_string(ps, &s, &len) != MATE_OK)
		return MATE_ERR_FORMAT;
	e->rank = rank_of_name(s, len);
	if (e->rank < 0)
		return perr(ps, "unknown dtype '%.40s'", s);
	return MATE_OK;
}

/* What one tensor of the header takes once parsed and loaded, data aside
 * (the file holds that): its entry (the array doubles), a key and a tensor
 * node, the name, a storage and the dict's item. */
static uint64_t
entry_cost(size_t name_len)
{
	return 2 * sizeof(struct st_entry) + 2 * mate_value_node_bytes() + name_len + 1 +
	    3 * MATE_MALLOC_OVERHEAD + 32 + MATE_VALUE_DICT_ITEM_BYTES;
}

static struct st_entry *
new_entry(struct st_parser *ps, const char *name, size_t len)
{
	struct st_entry *e;

	ps->spent += entry_cost(len);
	if (ps->spent > mate_memory_cap()) {
		mate_set_error(ps->err, MATE_ERR_LIMIT, "safetensors: the header's %zu tensors would "
		    "take more than the memory limit of %llu MiB (MATE_MAX_MEMORY raises it)",
		    ps->nents + 1, (unsigned long long)(mate_memory_cap() >> 20));
		return NULL;
	}

	if (mate_array_grow(&ps->ents, ps->nents, &ps->cap_ents, sizeof(*e), 16) != 0) {
		mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	e = &ps->ents[ps->nents];
	memset(e, 0, sizeof(*e));
	e->name = name;
	e->name_len = len;
	e->order = (uint32_t)ps->nents++;
	return e;
}

/* {"dtype":..., "shape":[...], "data_offsets":[b,e], other keys ignored} */
static int
parse_tensor(struct st_parser *ps, const char *name, size_t len)
{
	static const char *fields[] = { "dtype", "shape", "data_offsets" };
	struct st_entry *e = new_entry(ps, name, len);  /* stays valid: no entries are added below */
	unsigned seen = 0;
	const char *key;
	size_t klen;
	int rc, f;

	rc = e == NULL ? MATE_ERR_NOMEM : open_container(ps, '{', "a tensor entry must be an object");
	while (rc == 0) {
		if (parse_key(ps, &key, &klen) != MATE_OK)
			return MATE_ERR_FORMAT;
		for (f = 2; f >= 0; f--)
			if (strlen(fields[f]) == klen && memcmp(fields[f], key, klen) == 0)
				break;
		if (f >= 0 && (seen & (1u << f)))
			return perr(ps, "duplicate field `%s` in tensor '%.100s'", fields[f], name);
		seen |= f >= 0 ? 1u << f : 0;
		rc = f < 0 ? skip_value(ps) : f == 0 ? parse_dtype(ps, e) :
		    f == 1 ? parse_shape(ps, e) : parse_offsets(ps, e);
		if (rc == MATE_OK)
			rc = next_item(ps, '}');
	}
	for (f = 0; rc == 1 && f < 3; f++)
		if (!(seen & (1u << f)))
			return perr(ps, "missing field `%s` in tensor '%.100s'", fields[f], name);
	return rc < 0 ? rc : MATE_OK;
}

/* null, or an object of strings (a repeated key: the last one wins). */
static int
parse_metadata(struct st_parser *ps)
{
	const char *k, *v;
	size_t klen, vlen;
	int rc;

	if (ps->have_meta++)
		return perr(ps, "duplicate field `__metadata__`");
	if (peek(ps) == 'n')
		return skip_value(ps);
	rc = open_container(ps, '{', "__metadata__ must be an object of strings or null");
	if (rc >= 0 && (ps->meta = mate_value_dict()) == NULL)
		return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
	while (rc == 0) {
		if (parse_key(ps, &k, &klen) != MATE_OK)
			return MATE_ERR_FORMAT;
		if (peek(ps) != '"')
			return perr(ps, "invalid type: __metadata__ value for '%.100s' is not a string", k);
		if (parse_string(ps, &v, &vlen) != MATE_OK)
			return MATE_ERR_FORMAT;
		if (mate_value_set(ps->meta, mate_value_str(k, klen), mate_value_str(v, vlen)) != MATE_OK)
			return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
		rc = next_item(ps, '}');
	}
	return rc < 0 ? rc : MATE_OK;
}

/* The whole header: one object of __metadata__ and tensor entries. */
static int
parse_header(struct st_parser *ps)
{
	const char *key;
	size_t len;
	int rc = open_container(ps, '{', "the header must be a JSON object");

	while (rc == 0) {
		if (parse_key(ps, &key, &len) != MATE_OK)
			return MATE_ERR_FORMAT;
		if (len == 12 && memcmp(key, "__metadata__", 12) == 0)
			rc = parse_metadata(ps);
		else
			rc = parse_tensor(ps, key, len);
		if (rc == MATE_OK)
			rc = next_item(ps, '}');
	}
	if (rc < 0)
		return rc;
	if (peek(ps) != '\0')
		return perr(ps, "trailing characters");
	return MATE_OK;
}

/* ==== validation (the reference's rules, in its order) ===================== */

static int
cmp_name(const void *a, const void *b)
{
	const struct st_entry *x = *(const struct st_entry *const *)a;
	const struct st_entry *y = *(const struct st_entry *const *)b;

	return cmp_bytes(x->name, x->name_len, y->name, y->name_len);
}

static int
check_duplicates(const struct st_parser *ps)
{
	const struct st_entry **v;
	int rc = MATE_OK;

	if (ps->nents < 2)
		return MATE_OK;
	v = malloc(ps->nents * sizeof(*v));
	if (v == NULL)
		return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < ps->nents; i++)
		v[i] = &ps->ents[i];
	qsort(v, ps->nents, sizeof(*v), cmp_name);
	for (size_t i = 1; i < ps->nents && rc == MATE_OK; i++)
		if (cmp_name(&v[i - 1], &v[i]) == 0)
			rc = mate_set_error(ps->err, MATE_ERR_FORMAT,
			    "duplicate tensor name '%.100s'", v[i]->name);
	free(v);
	return rc;
}

static int
cmp_offsets(const void *a, const void *b)
{
	const struct st_entry *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int
check_entry(const struct st_entry *e, uint64_t start, mate_error *err)
{
	uint64_t bits;

	if (e->begin != start || e->end < e->begin)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "InvalidOffset: tensor '%.100s' has data_offsets [%llu, %llu]; it must begin at %llu",
		    e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
		    (unsigned long long)start);
	if (e->overflow || __builtin_mul_overflow(e->numel, (uint64_t)st_dtypes[e->rank].bits, &bits))
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "ValidationOverflow: tensor '%.100s': the size of its shape overflows", e->name);
	if (bits % 8 != 0)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "MisalignedSlice: tensor '%.100s': %llu elements of %s are not a whole number of bytes",
		    e->name, (unsigned long long)e->numel, st_dtypes[e->rank].name);
	if (e->end - e->begin != bits / 8)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "TensorInvalidInfo: tensor '%.100s': data_offsets span %llu bytes, its shape and dtype need %llu",
		    e->name, (unsigned long long)(e->end - e->begin), (unsigned long long)(bits / 8));
	return MATE_OK;
}

/* What the reference accepts but mate's tensor model cannot hold. */
static int
check_supported(const struct st_parser *ps)
{
	for (size_t i = 0; i < ps->nents; i++) {
		const struct st_entry *e = &ps->ents[i];
		if (st_dtypes[e->rank].dt == MATE_DTYPE_INVALID)
			return mate_set_error(ps->err, MATE_ERR_UNSUPPORTED,
			    "unsupported dtype %s (tensor '%.100s'): mate has no such tensor type",
			    st_dtypes[e->rank].name, e->name);
		if (e->ndim > MATE_MAX_DIMS)
			return mate_set_error(ps->err, MATE_ERR_UNSUPPORTED,
			    "tensor '%.100s' has %u dimensions; mate supports %d",
			    e->name, e->ndim, MATE_MAX_DIMS);
		if (st_dtypes[e->rank].dt == MATE_F4_E2M1FN_X2 &&
		    (e->ndim == 0 || ps->dims[e->dims_at + e->ndim - 1] % 2 != 0))
			return mate_set_error(ps->err, MATE_ERR_UNSUPPORTED,
			    "tensor '%.100s': F4 values pair into float4_e2m1fn_x2 bytes along the "
			    "last dimension, which must be even", e->name);
		for (uint32_t d = 0; d < e->ndim; d++)
			if (ps->dims[e->dims_at + d] > INT64_MAX)
				return mate_set_error(ps->err, MATE_ERR_UNSUPPORTED,
				    "tensor '%.100s': dimension too large", e->name);
	}
	return MATE_OK;
}

/* Sorts the entries into file order and checks they tile the byte buffer
 * exactly (file_size - 8 - hlen bytes). */
static int
validate(struct st_parser *ps, uint64_t hlen, uint64_t file_size)
{
	uint64_t start = 0, total;
	int rc = check_duplicates(ps);

	if (rc != MATE_OK)
		return rc;
	if (ps->nents > 1)
		qsort(ps->ents, ps->nents, sizeof(*ps->ents), cmp_offsets);
	for (size_t i = 0; i < ps->nents; i++) {
		if ((rc = check_entry(&ps->ents[i], start, ps->err)) != MATE_OK)
			return rc;
		start = ps->ents[i].end;
	}
	if (__builtin_add_overflow(start, 8 + hlen, &total) || total != file_size)
		return mate_set_error(ps->err, MATE_ERR_FORMAT,
		    "MetadataIncompleteBuffer: the tensors end at byte %llu of the data but the "
		    "file holds %llu bytes of data",
		    (unsigned long long)start, (unsigned long long)(file_size - 8 - hlen));
	return check_supported(ps);
}

/* ==== loading ============================================================== */

/* Where the bytes come from: a file (pread) or a caller's buffer. */
struct st_src {
	int fd;
	const unsigned char *buf;  /* a caller's buffer, or the mapped file */
	mate_map *map;             /* the file mapped (buf is its data), or NULL */
	uint64_t size;
	int header_only;    /* tensors without storages: the header checked, no data read */
	const struct mate_tensor_stream *stream;  /* or placeholders, the data handed to it */
};

/* Maps the file where mate_map_file() does (its bytes then read where they lie). */
static void
map_file(struct st_src *src)
{
	if ((src->map = mate_map_file(src->fd, src->size)) != NULL)
		src->buf = mate_map_data(src->map);
}

static int
src_read(const struct st_src *src, void *dst, size_t n, uint64_t off, mate_error *err)
{
	int rc;

	if (n == 0)
		return MATE_OK;
	if (src->buf != NULL) {
		memcpy(dst, src->buf + off, n);
		return MATE_OK;
	}
	rc = mate_pread_big(src->fd, dst, n, off);
	if (rc == -EIO)
		return mate_set_error(err, MATE_ERR_IO, "cannot read: the file shrank while being read");
	if (rc < 0)
		return mate_set_errno(err, -rc, "cannot read", NULL);
	return MATE_OK;
}

/* The descriptor of entry e's tensor (no data). */
static int
entry_tensor(const struct st_parser *ps, const struct st_entry *e, mate_tensor *t)
{
	int64_t shape[MATE_MAX_DIMS];

	for (uint32_t d = 0; d < e->ndim; d++)
		shape[d] = (int64_t)ps->dims[e->dims_at + d];
	if (st_dtypes[e->rank].dt == MATE_F4_E2M1FN_X2)
		shape[e->ndim - 1] /= 2;        /* values to bytes (check_supported: even) */
	if (mate_tensor_init(t, st_dtypes[e->rank].dt, (int)e->ndim, shape, NULL, NULL) != MATE_OK)
		return mate_set_error(ps->err, MATE_ERR_UNSUPPORTED,
		    "tensor '%.100s': its shape cannot be represented", e->name);
	return MATE_OK;
}

static int
read_data(const struct st_parser *ps, const struct st_entry *e,
    const struct st_src *src, uint64_t data_start, mate_value **out)
{
	uint64_t nbytes = e->end - e->begin;
	mate_storage *st;
	mate_tensor t;
	int rc;

	if ((rc = entry_tensor(ps, e, &t)) != MATE_OK)
		return rc;
	if (nbytes > SIZE_MAX)
		return mate_set_error(ps->err, MATE_ERR_NOMEM, "tensor '%.100s' is too large", e->name);
	if (src->map != NULL && MATE_MAP_ALIGNED(src->buf + data_start + e->begin, t.dtype)) {
		/* validate() checked the range against the file's size */
		if ((st = mate_storage_view(src->map,
		    (void *)(uintptr_t)(src->buf + data_start + e->begin), (size_t)nbytes, ps->err)) == NULL)
			return MATE_ERR_NOMEM;
		rc = MATE_OK;
	} else if ((st = mate_storage_new_uninit((size_t)nbytes, ps->err)) == NULL)
		return MATE_ERR_NOMEM;
	else
		rc = src_read(src, mate_storage_data(st), (size_t)nbytes, data_start + e->begin, ps->err);
	if (rc != MATE_OK) {
		mate_storage_unref(st);
		return rc;
	}
	if ((*out = mate_value_tensor_take(&t, st)) == NULL)  /* st is released */
		return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}

static int
load_tensor(const struct st_parser *ps, const struct st_entry *e,
    const struct st_src *src, uint64_t data_start, mate_value **out)
{
	if (src->header_only || src->stream != NULL) {
		mate_storage *st = NULL;
		mate_tensor t;
		int rc = entry_tensor(ps, e, &t);

		if (rc != MATE_OK)
			return rc;
		if (src->stream != NULL &&
		    (st = mate_storage_wrap(NULL, (size_t)(e->end - e->begin), ps->err)) == NULL)
			return MATE_ERR_NOMEM;
		*out = st != NULL ? mate_value_tensor_take(&t, st) : mate_value_tensor(&t, NULL);
		if (*out == NULL)
			return mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
		return MATE_OK;
	}
	return read_data(ps, e, src, data_start, out);
}

/* The tensors in file order, each with a storage of its own. */
static mate_value *
load_tensors(struct st_parser *ps, const struct st_src *src, uint64_t data_start)
{
	mate_value *dict = mate_value_dict(), *v = NULL;
	int rc = dict == NULL ? mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory") : MATE_OK;

	for (size_t i = 0; i < ps->nents && rc == MATE_OK; i++) {
		const struct st_entry *e = &ps->ents[i];
		if ((rc = load_tensor(ps, e, src, data_start, &v)) == MATE_OK &&
		    mate_value_set(dict, mate_value_str(e->name, e->name_len), v) != MATE_OK)
			rc = mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory");
	}
	if (rc == MATE_OK)
		return dict;
	mate_value_free(dict);
	return NULL;
}

/* Streaming: each tensor's bytes, in file order, to the stream. Tensors
 * up to MATE_STREAM_CHUNK bytes come whole from a window of the file
 * (refilled from a tensor that does not fit it), larger ones in chunks. */
static int
stream_tensors(const struct st_parser *ps, const struct st_src *src, uint64_t data_start,
    const mate_value *dict)
{
	const struct mate_tensor_stream *s = src->stream;
	unsigned char *buf = malloc(MATE_STREAM_CHUNK);
	uint64_t wstart = 0, wlen = 0;
	int rc = buf == NULL ? mate_set_error(ps->err, MATE_ERR_NOMEM, "out of memory") : MATE_OK;

	mate_error_clear(ps->err);
	if (rc == MATE_OK && s->begin != NULL && s->begin(s->ctx, dict, ps->err) != 0)
		rc = ps->err->code != MATE_OK ? ps->err->code : MATE_ERR_ARGUMENT;
	for (size_t i = 0; i < ps->nents && rc == MATE_OK; i++) {
		const struct st_entry *e = &ps->ents[i];
		const mate_storage *st = mate_value_get_storage(mate_value_item(dict, i));
		uint64_t at = data_start + e->begin, size = e->end - e->begin;

		if (src->buf != NULL) {  /* the bytes where they lie, in chunks */
			for (uint64_t done = 0; done < size && rc == MATE_OK; done += MATE_STREAM_CHUNK) {
				size_t n = size - done < MATE_STREAM_CHUNK ? (size_t)(size - done) :
				    MATE_STREAM_CHUNK;

				if (s->chunk(s->ctx, st, done, src->buf + at + done, n, ps->err) != 0)
					rc = ps->err->code != MATE_OK ? ps->err->code : MATE_ERR_ARGUMENT;
			}
			continue;
		}
		if (size > 0 && size <= MATE_STREAM_CHUNK) {
			if (wlen == 0 || at < wstart || at + size > wstart + wlen) {
				wstart = at;
				wlen = src->size - at < MATE_STREAM_CHUNK ? src->size - at :
				    MATE_STREAM_CHUNK;
				if ((rc = src_read(src, buf, (size_t)wlen, wstart, ps->err)) != MATE_OK)
					break;
			}
			if (s->chunk(s->ctx, st, 0, buf + (at - wstart), (size_t)size, ps->err) != 0)
				rc = ps->err->code != MATE_OK ? ps->err->code : MATE_ERR_ARGUMENT;
			continue;
		}
		for (uint64_t done = 0; done < size && rc == MATE_OK; done += MATE_STREAM_CHUNK) {
			size_t n = size - done < MATE_STREAM_CHUNK ? (size_t)(size - done) :
			    MATE_STREAM_CHUNK;

			if ((rc = src_read(src, buf, n, at + done, ps->err)) == MATE_OK &&
			    s->chunk(s->ctx, st, done, buf, n, ps->err) != 0)
				rc = ps->err->code != MATE_OK ? ps->err->code : MATE_ERR_ARGUMENT;
		}
	}
	free(buf);
	return rc;
}

/* Reads and checks the length prefix, then the header text: bytes, not
 * yet JSON. Sizes are checked against the source before allocating. */
static int
read_header(const struct st_src *src, char **hdr, uint64_t *hlen, mate_error *err)
{
	unsigned char b[8];
	uint64_t n = 0;
	int rc;

	*hdr = NULL;
	if (src->size < 8)
		return mate_set_error(err, MATE_ERR_FORMAT, "HeaderTooSmall: %llu bytes, "
		    "shorter than the 8-byte header length", (unsigned long long)src->size);
	if ((rc = src_read(src, b, 8, 0, err)) != MATE_OK)
		return rc;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | b[i];
	if (n > ST_MAX_HEADER)
		return mate_set_error(err, MATE_ERR_LIMIT, "HeaderTooLarge: header length %llu "
		    "exceeds %u bytes", (unsigned long long)n, ST_MAX_HEADER);
	if (n > src->size - 8)
		return mate_set_error(err, MATE_ERR_FORMAT, "InvalidHeaderLength: header length %llu "
		    "runs past the end (%llu bytes)", (unsigned long long)n, (unsigned long long)src->size);
	if ((*hdr = malloc((size_t)n + 1)) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	(*hdr)[n] = '\0';
	*hlen = n;
	return src_read(src, *hdr, (size_t)n, 8, err);
}

/* The reference's InvalidHeader: not UTF-8; also a BOM or NUL bytes. */
static int
check_text(const char *hdr, size_t n, mate_error *err)
{
	size_t bad = mate_utf8_invalid_at((const unsigned char *)hdr, n);
	const char *nul = memchr(hdr, '\0', n);

	if (bad != n)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "InvalidHeader: the header is not valid UTF-8 (byte %zu)", bad);
	if (n >= 3 && memcmp(hdr, "\xef\xbb\xbf", 3) == 0)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "InvalidHeader: the header starts with a byte-order mark");
	if (nul != NULL)
		return mate_set_error(err, MATE_ERR_FORMAT,
		    "InvalidHeader: NUL byte in the header (byte %zu)", (size_t)(nul - hdr));
	return MATE_OK;
}

static mate_value *
load(const struct st_src *src, mate_value **metadata, mate_error *err)
{
	struct st_parser ps;
	mate_value *res = NULL;
	uint64_t hlen = 0;
	char *hdr;

	if (read_header(src, &hdr, &hlen, err) != MATE_OK) {
		free(hdr);
		return NULL;
	}
	memset(&ps, 0, sizeof(ps));
	ps.base = ps.p = hdr;
	ps.end = hdr + hlen;
	ps.err = err;
	ps.spent = hlen + 1;
	if (check_text(hdr, (size_t)hlen, err) == MATE_OK && parse_header(&ps) == MATE_OK &&
	    validate(&ps, hlen, src->size) == MATE_OK)
		res = load_tensors(&ps, src, 8 + hlen);
	if (res != NULL && src->stream != NULL && stream_tensors(&ps, src, 8 + hlen, res) != MATE_OK) {
		mate_value_free(res);
		res = NULL;
	}
	if (res != NULL && metadata != NULL) {
		*metadata = ps.meta;
		ps.meta = NULL;
	}
	mate_value_free(ps.meta);
	free(ps.ents);
	free(ps.dims);
	free(hdr);
	return res;
}

mate_value *
mate_safetensors_parse(const void *buf, size_t len, mate_value **metadata, mate_error *err)
{
	struct st_src src = { .fd = -1, .buf = buf, .size = len };

	if (metadata != NULL)
		*metadata = NULL;
	if (buf == NULL && len > 0) {
		mate_set_error(err, MATE_ERR_ARGUMENT, "safetensors: no buffer");
		return NULL;
	}
	return load(&src, metadata, err);
}

mate_value *
mate_safetensors_read_fd(int fd, const char *path, mate_value **metadata, int header_only,
    mate_error *err)
{
	struct st_src src = { .fd = -1, .header_only = header_only };
	struct stat sb;
	mate_value *v = NULL;

	if (metadata != NULL)
		*metadata = NULL;
	src.fd = fd;
	if (src.fd == -EFTYPE_MATE) {
		mate_set_error(err, MATE_ERR_FORMAT, "%s: not a regular file", path);
		return NULL;
	}
	if (src.fd < 0) {
		mate_set_errno(err, -src.fd, "cannot open", path);
		return NULL;
	}
	if (fstat(src.fd, &sb) != 0)
		mate_set_errno(err, errno, "cannot stat", path);
	else if (!S_ISREG(sb.st_mode))
		mate_set_error(err, MATE_ERR_ARGUMENT, "%s: not a regular file", path);
	else {
		src.size = (uint64_t)sb.st_size;
		if (!header_only)
			map_file(&src);
		v = load(&src, metadata, err);
		if (v == NULL && err != NULL) {
			char msg[sizeof(err->message)];
			snprintf(msg, sizeof(msg), "%.200s: %.300s", path, err->message);
			memcpy(err->message, msg, sizeof(msg));
		}
	}
	mate_map_unref(src.map);  /* the storages that view it keep it */
	close(src.fd);
	return v;
}

int
mate_safetensors_read_stream(int fd, const char *path, const struct mate_tensor_stream *s,
    mate_error *err)
{
	struct st_src src = { .fd = fd, .stream = s };
	mate_error local;
	mate_value *v = NULL;
	struct stat sb;

	if (err == NULL)
		err = &local;
	mate_error_clear(err);
	if (fd == -EFTYPE_MATE)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: not a regular file", path);
	if (fd < 0)
		return mate_set_errno(err, -fd, "cannot open", path);
	if (fstat(fd, &sb) != 0)
		mate_set_errno(err, errno, "cannot stat", path);
	else {
		src.size = (uint64_t)sb.st_size;
		map_file(&src);
		if ((v = load(&src, NULL, err)) == NULL) {
			char msg[sizeof(err->message)];

			snprintf(msg, sizeof(msg), "%.200s: %.300s", path, err->message);
			memcpy(err->message, msg, sizeof(msg));
		}
	}
	mate_map_unref(src.map);
	close(fd);
	if (v == NULL)
		return err->code != MATE_OK ? err->code : MATE_ERR_FORMAT;
	mate_value_free(v);
	return MATE_OK;
}

mate_value *
mate_safetensors_read(const char *path, mate_value **metadata, mate_error *err)
{
	return mate_safetensors_read_fd(mate_open_regular(AT_FDCWD, path, 0), path, metadata, 0,
	    err);
}

mate_value *
mate_safetensors_read_header(const char *path, mate_error *err)
{
	return mate_safetensors_read_fd(mate_open_regular(AT_FDCWD, path, 0), path, NULL, 1, err);
}
