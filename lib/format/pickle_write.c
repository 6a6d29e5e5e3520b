/* pickle_write.c: pickles a mate_value tree (protocol 2, torch 1.13's encodings, no memo) for .pt files. */
#include "mate_private.h"
#include "pickle_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Encodings follow Python's pickler at protocol 2 as torch 1.13 drives it
 * (spec tensor-files.md B1-B3), without the memo: no BINPUT/BINGET, so the
 * same global is written again each time it is used. Values with no pickle
 * form of their own are written so that torch.load(weights_only=True)
 * accepts them:
 *   MATE_V_ENUM    its name, a str ("Mode.FAST")
 *   MATE_V_OBJECT  its repr, a str (the type name when the repr is empty)
 *   MATE_V_BYTES   _codecs.encode(<latin-1 str>, 'latin1'), also for b''
 *                  (weights_only=True in 1.13 refuses this global, as it
 *                  refuses BINFLOAT for floats)
 *   MATE_V_DTYPE   GLOBAL torch <name>
 */

#define PW_MAX_DEPTH 1000 /* nesting deeper than this is refused */
#define PW_BATCH 1000     /* items per APPENDS/SETITEMS, as Python's pickler */
#define NO_STORAGE ((size_t)-1)

enum {
	OP_MARK = 0x28, OP_EMPTY_TUPLE = 0x29, OP_STOP = 0x2e, OP_BINFLOAT = 0x47,
	OP_BININT = 0x4a, OP_BININT1 = 0x4b, OP_BININT2 = 0x4d, OP_NONE = 0x4e,
	OP_BINPERSID = 0x51, OP_REDUCE = 0x52, OP_BINUNICODE = 0x58,
	OP_EMPTY_LIST = 0x5d, OP_APPEND = 0x61, OP_GLOBAL = 0x63, OP_APPENDS = 0x65,
	OP_SETITEM = 0x73, OP_TUPLE = 0x74, OP_SETITEMS = 0x75, OP_EMPTY_DICT = 0x7d,
	OP_PROTO = 0x80, OP_TUPLE1 = 0x85, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a
};

struct pw {
	struct mate_pickle_out *out;
	int use_v3;
	mate_error *err;
	int rc; /* first error; once set, nothing more is written */
};

static int save(struct pw *w, const mate_value *v, int depth);

/* ---- output -------------------------------------------------------------- */

static int
fail(struct pw *w, int code, const char *msg)
{
	if (w->rc == MATE_OK)
		w->rc = mate_set_error(w->err, code, "%s", msg);
	return w->rc;
}

static int
reserve(struct pw *w, size_t n)
{
	struct mate_pickle_out *o = w->out;
	size_t cap = o->cap ? o->cap : 4096;
	unsigned char *p;

	if (w->rc != MATE_OK || o->cap - o->len >= n)
		return w->rc;
	while (cap - o->len < n) {
		if (cap > SIZE_MAX / 2)
			return fail(w, MATE_ERR_NOMEM, "pickle too large");
		cap *= 2;
	}
	p = realloc(o->buf, cap);
	if (p == NULL)
		return fail(w, MATE_ERR_NOMEM, "out of memory for the pickle");
	o->buf = p;
	o->cap = cap;
	return MATE_OK;
}

static void
put(struct pw *w, const void *p, size_t n)
{
	if (reserve(w, n) != MATE_OK)
		return;
	memcpy(w->out->buf + w->out->len, p, n);
	w->out->len += n;
}

static void
put1(struct pw *w, unsigned c)
{
	unsigned char b = (unsigned char)c;

	put(w, &b, 1);
}

static void
put_u32(struct pw *w, uint32_t v)
{
	unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	put(w, b, 4);
}

/* ---- atoms --------------------------------------------------------------- */

static void
op_global(struct pw *w, const char *module, const char *name)
{
	put1(w, OP_GLOBAL);
	put(w, module, strlen(module));
	put1(w, '\n');
	put(w, name, strlen(name));
	put1(w, '\n');
}

/* Python decodes BINUNICODE as UTF-8 with surrogatepass: anything else fails. */
static int
utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], lo = 0x80, hi = 0xbf, n;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, lo = c == 0xe0 ? 0xa0 : 0x80;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		else
			return 0;
		if (len - i <= n || s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (size_t k = 2; k <= n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += n + 1;
	}
	return 1;
}

static void
op_unicode(struct pw *w, const char *s, size_t len)
{
	if (len > UINT32_MAX) {
		fail(w, MATE_ERR_LIMIT, "string longer than 4 GiB");
		return;
	}
	put1(w, OP_BINUNICODE);
	put_u32(w, (uint32_t)len);
	put(w, s, len);
}

static void
op_str(struct pw *w, const char *s, size_t len)
{
	if (!utf8_valid((const unsigned char *)s, len)) {
		if (w->rc == MATE_OK)
			w->rc = mate_set_error(w->err, MATE_ERR_ARGUMENT,
			    "string is not valid UTF-8: \"%.40s\"", s);
		return;
	}
	op_unicode(w, s, len);
}

/* Minimal little-endian two's complement, as Python's encode_long. */
static void
op_long1(struct pw *w, int64_t v)
{
	unsigned char b[10];
	int n = 1;

	while (n < 8) {
		int64_t lim = (int64_t)1 << (8 * n - 1);
		if (v >= -lim && v < lim)
			break;
		n++;
	}
	b[0] = OP_LONG1;
	b[1] = (unsigned char)n;
	for (int i = 0; i < n; i++)
		b[2 + i] = (unsigned char)(((uint64_t)v >> (8 * i)) & 0xff);
	put(w, b, (size_t)n + 2);
}

static void
op_int(struct pw *w, int64_t v)
{
	if (v >= 0 && v <= 0xff) {
		unsigned char b[2] = { OP_BININT1, (unsigned char)v };
		put(w, b, 2);
	} else if (v >= 0 && v <= 0xffff) {
		unsigned char b[3] = { OP_BININT2, v & 0xff, (unsigned char)(v >> 8) };
		put(w, b, 3);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		put1(w, OP_BININT);
		put_u32(w, (uint32_t)v);
	} else {
		op_long1(w, v);
	}
}

static void
op_float(struct pw *w, double d)
{
	unsigned char b[9];
	uint64_t u;

	memcpy(&u, &d, 8);
	b[0] = OP_BINFLOAT;
	for (int i = 0; i < 8; i++)
		b[1 + i] = (unsigned char)(u >> (56 - 8 * i));
	put(w, b, 9);
}

/* bytes -> _codecs.encode(latin-1 text, 'latin1'), Python's protocol-2 form. */
static void
op_bytes(struct pw *w, const unsigned char *p, size_t len)
{
	size_t ulen = len;
	unsigned char *u, *q;

	for (size_t i = 0; i < len; i++)
		ulen += p[i] >= 0x80;
	if (ulen < len || (u = malloc(ulen ? ulen : 1)) == NULL) {
		fail(w, MATE_ERR_NOMEM, "out of memory for bytes");
		return;
	}
	q = u;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < 0x80) {
			*q++ = p[i];
		} else {
			*q++ = (unsigned char)(0xc0 | (p[i] >> 6));
			*q++ = (unsigned char)(0x80 | (p[i] & 0x3f));
		}
	}
	op_global(w, "_codecs", "encode");
	op_unicode(w, (const char *)u, ulen);
	op_unicode(w, "latin1", 6);
	put1(w, OP_TUPLE1 + 1);
	put1(w, OP_REDUCE);
	free(u);
}

/* A tuple of n already-pushed items: MARK first when n > 3. */
static void
tuple_open(struct pw *w, size_t n)
{
	if (n > 3)
		put1(w, OP_MARK);
}

static void
tuple_close(struct pw *w, size_t n)
{
	put1(w, n == 0 ? OP_EMPTY_TUPLE : n <= 3 ? OP_TUPLE1 + (unsigned)n - 1 : OP_TUPLE);
}

static void
save_ints(struct pw *w, const int64_t *v, int n)
{
	tuple_open(w, (size_t)n);
	for (int i = 0; i < n; i++)
		op_int(w, v[i]);
	tuple_close(w, (size_t)n);
}

static void
ordered_dict_new(struct pw *w)
{
	op_global(w, "collections", "OrderedDict");
	put1(w, OP_EMPTY_TUPLE);
	put1(w, OP_REDUCE);
}

/* ---- storages ------------------------------------------------------------ */

static size_t
hash_ptr(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

static size_t
storage_find(const struct mate_pickle_out *o, const void *id)
{
	if (o->index_cap == 0)
		return NO_STORAGE;
	for (size_t h = hash_ptr(id, o->index_cap); o->index[h] != 0;
	    h = (h + 1) & (o->index_cap - 1))
		if (o->storages[o->index[h] - 1].id == id)
			return o->index[h] - 1;
	return NO_STORAGE;
}

static void
index_put(struct mate_pickle_out *o, size_t i)
{
	size_t h = hash_ptr(o->storages[i].id, o->index_cap);

	while (o->index[h] != 0)
		h = (h + 1) & (o->index_cap - 1);
	o->index[h] = i + 1;
}

/* Room for one more storage, and an index at most half full. */
static int
storage_reserve(struct pw *w)
{
	struct mate_pickle_out *o = w->out;

	if (mate_array_grow(&o->storages, o->nstorages, &o->storages_cap, sizeof(*o->storages),
	    16) != 0)
		return fail(w, MATE_ERR_NOMEM, "out of memory");
	if ((o->nstorages + 1) * 2 > o->index_cap) {
		size_t cap = o->index_cap ? o->index_cap * 2 : 32;
		size_t *idx = calloc(cap, sizeof(*idx));
		if (idx == NULL)
			return fail(w, MATE_ERR_NOMEM, "out of memory");
		free(o->index);
		o->index = idx;
		o->index_cap = cap;
		for (size_t i = 0; i < o->nstorages; i++)
			index_put(o, i);
	}
	return MATE_OK;
}

/* Adds the storage a tensor views; @return its index or NO_STORAGE. */
static size_t
storage_add(struct pw *w, const mate_value *v, const mate_tensor *t, int v3,
    int64_t extent)
{
	mate_storage *st = mate_value_get_storage(v);
	struct mate_pickle_storage *ps;
	size_t elsize = mate_dtype_size(t->dtype);
	int64_t nbytes;

	if (st != NULL) {
		nbytes = (int64_t)mate_storage_size(st);
	} else if (!mate_mul_ok(extent, (int64_t)elsize, &nbytes)) {
		fail(w, MATE_ERR_ARGUMENT, "tensor too large");
		return NO_STORAGE;
	}
	if (storage_reserve(w) != MATE_OK)
		return NO_STORAGE;
	ps = &w->out->storages[w->out->nstorages];
	ps->id = st != NULL ? (const void *)st : (const void *)v;
	ps->data = st != NULL ? mate_storage_data(st) : t->data;
	/* A typed record holds whole elements only. */
	ps->nbytes = (uint64_t)nbytes - (v3 ? 0 : (uint64_t)nbytes % elsize);
	ps->dtype = t->dtype;
	ps->device_type = t->device_type;
	ps->stream = t->stream;
	if (ps->data == NULL && ps->nbytes > 0) {
		fail(w, MATE_ERR_ARGUMENT, "tensor has no data");
		return NO_STORAGE;
	}
	index_put(w->out, w->out->nstorages);
	return w->out->nstorages++;
}

/* ---- tensors ------------------------------------------------------------- */

static int
check_tensor(struct pw *w, const mate_tensor *t, int64_t *extent)
{
	int kind = mate_dtype_kind(t->dtype);

	if (mate_dtype_size(t->dtype) == 0)
		return fail(w, MATE_ERR_ARGUMENT, "tensor has an invalid dtype");
	if (t->ndim < 0 || t->ndim > MATE_MAX_DIMS)
		return fail(w, MATE_ERR_ARGUMENT, "tensor has a bad ndim");
	*extent = mate_tensor_storage_extent(t);
	if (*extent < 0 || mate_tensor_numel(t) < 0)
		return fail(w, MATE_ERR_ARGUMENT,
		    "tensor has a negative or overflowing shape, stride or offset");
	if (t->requires_grad && kind != MATE_KIND_FLOAT && kind != MATE_KIND_COMPLEX)
		return w->rc = mate_set_error(w->err, MATE_ERR_ARGUMENT,
		    "requires_grad on a %s tensor (torch allows it on float and complex only)",
		    mate_dtype_name(t->dtype));
	return MATE_OK;
}

/* Finds or adds the tensor's storage; @return its key index or NO_STORAGE. */
static size_t
tensor_storage(struct pw *w, const mate_value *v, const mate_tensor *t, int v3)
{
	mate_storage *st = mate_value_get_storage(v);
	size_t i = st != NULL ? storage_find(w->out, st) : NO_STORAGE;
	size_t elsize = mate_dtype_size(t->dtype);
	const struct mate_pickle_storage *ps;
	int64_t extent = 0;

	if (check_tensor(w, t, &extent) != MATE_OK)
		return NO_STORAGE;
	if (i == NO_STORAGE && (i = storage_add(w, v, t, v3, extent)) == NO_STORAGE)
		return NO_STORAGE;
	ps = &w->out->storages[i];
	if (!w->use_v3 && ps->dtype != t->dtype) {
		mate_set_error(w->err, MATE_ERR_UNSUPPORTED,
		    "tensors view one storage as %s and as %s (torch.save refuses this too)",
		    mate_dtype_name(ps->dtype), mate_dtype_name(t->dtype));
		w->rc = MATE_ERR_UNSUPPORTED;
		return NO_STORAGE;
	}
	if ((uint64_t)extent > ps->nbytes / elsize) {
		mate_set_error(w->err, MATE_ERR_ARGUMENT,
		    "tensor view needs %lld elements but its storage holds %llu",
		    (long long)extent, (unsigned long long)(ps->nbytes / elsize));
		w->rc = MATE_ERR_ARGUMENT;
		return NO_STORAGE;
	}
	return i;
}

/* _rebuild_tensor_v2(persid, offset, size, stride, requires_grad, OrderedDict())
 * or _rebuild_tensor_v3(... same ..., dtype) over an UntypedStorage. */
static int
save_tensor(struct pw *w, const mate_value *v)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	const char *cls = mate_dtype_storage_class(t->dtype);
	int v3 = w->use_v3 || cls == NULL;
	size_t i = tensor_storage(w, v, t, v3);
	char key[24];
	uint64_t nbytes;

	if (i == NO_STORAGE)
		return w->rc;
	nbytes = w->out->storages[i].nbytes;
	snprintf(key, sizeof(key), "%zu", i);
	op_global(w, "torch._utils", v3 ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2");
	put1(w, OP_MARK);
	put1(w, OP_MARK);
	op_unicode(w, "storage", 7);
	if (v3)
		op_global(w, "torch.storage", "UntypedStorage");
	else
		op_global(w, "torch", cls);
	op_unicode(w, key, strlen(key));
	op_unicode(w, "cpu", 3);
	op_int(w, (int64_t)(v3 ? nbytes : nbytes / mate_dtype_size(t->dtype)));
	put1(w, OP_TUPLE);
	put1(w, OP_BINPERSID);
	op_int(w, t->offset);
	save_ints(w, t->shape, t->ndim);
	save_ints(w, t->stride, t->ndim);
	put1(w, t->requires_grad ? OP_NEWTRUE : OP_NEWFALSE);
	ordered_dict_new(w);
	if (v3)
		op_global(w, "torch", mate_dtype_name(t->dtype));
	put1(w, OP_TUPLE);
	put1(w, OP_REDUCE);
	return w->rc;
}

/* ---- containers ---------------------------------------------------------- */

/* Keys that Python cannot hash (lists, dicts) would fail at load time. */
static int
check_key(struct pw *w, const mate_value *k, int depth)
{
	switch (mate_value_kind_of(k)) {
	case MATE_V_LIST:
	case MATE_V_DICT:
		return fail(w, MATE_ERR_ARGUMENT, mate_value_kind_of(k) == MATE_V_LIST ?
		    "dict key is a list (unhashable)" : "dict key is a dict (unhashable)");
	case MATE_V_TUPLE:
		if (depth > PW_MAX_DEPTH)
			return fail(w, MATE_ERR_LIMIT, "values nested too deeply");
		for (size_t i = 0; i < mate_value_len(k); i++)
			if (check_key(w, mate_value_item(k, i), depth + 1) != MATE_OK)
				return w->rc;
		return MATE_OK;
	default:
		return MATE_OK;
	}
}

/* The items of a list, or the keys and items of a dict, in batches of
 * PW_BATCH as pickle's batch_list and batch_dict write them: MARK, the
 * items, APPENDS/SETITEMS; a batch of one without MARK, with APPEND/SETITEM. */
static int
save_items(struct pw *w, const mate_value *v, int depth, int dict)
{
	size_t n = mate_value_len(v);

	for (size_t i = 0; i < n && w->rc == MATE_OK; i += PW_BATCH) {
		size_t m = n - i < PW_BATCH ? n - i : PW_BATCH;
		if (m > 1)
			put1(w, OP_MARK);
		for (size_t j = i; j < i + m && w->rc == MATE_OK; j++) {
			if (dict) {
				check_key(w, mate_value_key(v, j), depth);
				save(w, mate_value_key(v, j), depth + 1);
			}
			save(w, mate_value_item(v, j), depth + 1);
		}
		if (dict)
			put1(w, m > 1 ? OP_SETITEMS : OP_SETITEM);
		else
			put1(w, m > 1 ? OP_APPENDS : OP_APPEND);
	}
	return w->rc;
}

static int
save_dict(struct pw *w, const mate_value *v, int depth)
{
	if (mate_value_is_ordered(v))
		ordered_dict_new(w);
	else
		put1(w, OP_EMPTY_DICT);
	return save_items(w, v, depth, 1);
}

static int
save_list(struct pw *w, const mate_value *v, int depth)
{
	put1(w, OP_EMPTY_LIST);
	return save_items(w, v, depth, 0);
}

static int
save_tuple(struct pw *w, const mate_value *v, int depth)
{
	size_t n = mate_value_len(v);

	tuple_open(w, n);
	for (size_t i = 0; i < n && w->rc == MATE_OK; i++)
		save(w, mate_value_item(v, i), depth + 1);
	tuple_close(w, n);
	return w->rc;
}

static int
save(struct pw *w, const mate_value *v, int depth)
{
	const char *s;
	size_t len = 0;

	if (w->rc != MATE_OK)
		return w->rc;
	if (depth > PW_MAX_DEPTH)
		return fail(w, MATE_ERR_LIMIT, "values nested more than 1000 deep");
	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE: put1(w, OP_NONE); break;
	case MATE_V_BOOL: put1(w, mate_value_get_bool(v) ? OP_NEWTRUE : OP_NEWFALSE); break;
	case MATE_V_INT: op_int(w, mate_value_get_int(v)); break;
	case MATE_V_FLOAT: op_float(w, mate_value_get_float(v)); break;
	case MATE_V_STR:
		s = mate_value_get_str(v, &len);
		op_str(w, s, len);
		break;
	case MATE_V_BYTES:
		s = mate_value_get_str(v, &len);
		op_bytes(w, (const unsigned char *)s, len);
		break;
	case MATE_V_LIST: return save_list(w, v, depth);
	case MATE_V_TUPLE: return save_tuple(w, v, depth);
	case MATE_V_DICT: return save_dict(w, v, depth);
	case MATE_V_TENSOR: return save_tensor(w, v);
	case MATE_V_DTYPE:
		if (mate_dtype_size(mate_value_get_dtype(v)) == 0)
			return fail(w, MATE_ERR_ARGUMENT, "invalid dtype value");
		op_global(w, "torch", mate_dtype_name(mate_value_get_dtype(v)));
		break;
	case MATE_V_ENUM:
		s = mate_value_enum_name(v);
		op_str(w, s, strlen(s));
		break;
	case MATE_V_OBJECT:
		s = mate_value_object_repr(v);
		if (s == NULL || s[0] == '\0')
			s = mate_value_object_type(v);
		op_str(w, s, strlen(s));
		break;
	default:
		return fail(w, MATE_ERR_ARGUMENT, "unknown value kind");
	}
	return w->rc;
}

int
mate_pickle_dump(const mate_value *root, int use_v3, struct mate_pickle_out *out,
    mate_error *err)
{
	struct pw w = { out, use_v3, err, MATE_OK };

	if (root == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "no value to pickle");
	put1(&w, OP_PROTO);
	put1(&w, 2);
	save(&w, root, 0);
	put1(&w, OP_STOP);
	return w.rc;
}

void
mate_pickle_out_free(struct mate_pickle_out *out)
{
	if (out == NULL)
		return;
	free(out->buf);
	free(out->storages);
	free(out->index);
	memset(out, 0, sizeof(*out));
}
