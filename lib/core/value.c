/* value.c: storages and the Python-like value tree shared by the file formats and the recorder. */
#include "mate_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct mate_storage {
	int refs;
	int owned;            /* 1: data is ours to free; 2: a view of map */
	void *data;
	size_t nbytes;
	mate_map *map;
};

struct mate_map {
	int refs;
	void *base;
	size_t len;
};

struct mate_value {
	mate_value_kind kind;
	int ordered;
	union {
		int b;
		int64_t i;
		double f;
		mate_dtype dt;
		struct {
			char *s;
			size_t len;
		} str;
		struct {
			mate_value **items;
			mate_value **keys;  /* dicts only */
			size_t n, cap;
			uint32_t *index;    /* dicts: hash of string keys -> item+1 */
			size_t index_cap;
		} seq;
		struct {
			mate_tensor t;
			mate_storage *st;
		} tensor;
		struct {
			char *name;
			char *repr;
			int64_t v;
		} obj;
	} u;
};

/* ---- storages ------------------------------------------------------------ */

#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_STORAGE ((size_t)8 << 20)   /* storages this large are 2 MiB-aligned */

/* A storage of nbytes in a block rounded up to 64 bytes, 64-byte aligned;
 * zeroed from byte from on. huge: 2 MiB aligned when large. */
static mate_storage *
storage_alloc(size_t nbytes, size_t from, int huge, mate_error *err)
{
	mate_storage *s = calloc(1, sizeof(*s));
	size_t alloc = (nbytes + 63) & ~(size_t)63;

	if (s == NULL || alloc < nbytes)
		goto nomem;
	if (alloc == 0)
		alloc = 64;
	/* 2 MiB aligned, so that where transparent huge pages are on for
	 * everything a large storage gets them. No MADV_HUGEPAGE: with the
	 * common defrag=madvise setting it makes page faults compact memory
	 * synchronously, which stalled a 512 MiB read from 0.13 s to 0.7 s
	 * (median) in bench/tensor-files. */
	if (posix_memalign(&s->data, huge && alloc >= HUGE_STORAGE ? HUGE_PAGE : 64, alloc) != 0)
		goto nomem;
	memset((char *)s->data + from, 0, alloc - from);
	s->refs = 1;
	s->owned = 1;
	s->nbytes = nbytes;
	return s;
nomem:
	free(s);
	mate_set_error(err, MATE_ERR_NOMEM, "cannot allocate a storage of %zu bytes", nbytes);
	return NULL;
}

mate_storage *
mate_storage_new(size_t nbytes, mate_error *err)
{
	return storage_alloc(nbytes, 0, 0, err);
}

mate_storage *
mate_storage_new_uninit(size_t nbytes, mate_error *err)
{
	/* the padding after the last byte is never left undefined */
	return storage_alloc(nbytes, nbytes, 1, err);
}

#define MAP_MIN ((uint64_t)64 << 10)

mate_map *
mate_map_file(int fd, uint64_t size)
{
	const char *env = getenv("MATE_MMAP");
	size_t len = (size_t)size;
	mate_map *m;
	void *p;

	if ((env != NULL && strcmp(env, "0") == 0) || size < MAP_MIN || size > SIZE_MAX ||
	    (m = malloc(sizeof(*m))) == NULL)
		return NULL;
	if ((p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		free(m);
		return NULL;
	}
	m->refs = 1;
	m->base = p;
	m->len = len;
	return m;
}

const unsigned char *
mate_map_data(const mate_map *m)
{
	return m->base;
}

void
mate_map_unref(mate_map *m)
{
	if (m == NULL || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	munmap(m->base, m->len);
	free(m);
}

mate_storage *
mate_storage_view(mate_map *m, void *data, size_t nbytes, mate_error *err)
{
	mate_storage *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
	s->refs = 1;
	s->owned = 2;
	s->data = data;
	s->nbytes = nbytes;
	s->map = m;
	return s;
}

mate_storage *
mate_storage_wrap(void *data, size_t nbytes, mate_error *err)
{
	mate_storage *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->refs = 1;
	s->data = data;
	s->nbytes = nbytes;
	return s;
}

mate_storage *
mate_storage_ref(mate_storage *s)
{
	if (s != NULL)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void
mate_storage_unref(mate_storage *s)
{
	if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (s->owned == 1)
		free(s->data);
	else if (s->owned == 2)
		mate_map_unref(s->map);
	free(s);
}

void *
mate_storage_data(const mate_storage *s)
{
	return s != NULL ? s->data : NULL;
}

size_t
mate_storage_size(const mate_storage *s)
{
	return s != NULL ? s->nbytes : 0;
}

/* ---- constructors -------------------------------------------------------- */

static mate_value *
new_value(mate_value_kind kind)
{
	mate_value *v = calloc(1, sizeof(*v));

	if (v != NULL)
		v->kind = kind;
	return v;
}

/* A new value holding what *tmpl holds (nothing it points to is copied):
 * a scalar, or a copy of one. */
static mate_value *
new_like(const mate_value *tmpl)
{
	mate_value *v = malloc(sizeof(*v));

	if (v != NULL)
		*v = *tmpl;
	return v;
}

size_t
mate_value_node_bytes(void)
{
	return sizeof(mate_value) + MATE_MALLOC_OVERHEAD;
}

mate_value *mate_value_none(void) { return new_value(MATE_V_NONE); }
mate_value *mate_value_list(void) { return new_value(MATE_V_LIST); }
mate_value *mate_value_tuple(void) { return new_value(MATE_V_TUPLE); }
mate_value *mate_value_dict(void) { return new_value(MATE_V_DICT); }

mate_value *
mate_value_ordered_dict(void)
{
	mate_value *v = new_value(MATE_V_DICT);

	if (v != NULL)
		v->ordered = 1;
	return v;
}

mate_value *
mate_value_bool(int b)
{
	return new_like(&(mate_value){ .kind = MATE_V_BOOL, .u.b = b != 0 });
}

mate_value *
mate_value_int(int64_t i)
{
	return new_like(&(mate_value){ .kind = MATE_V_INT, .u.i = i });
}

mate_value *
mate_value_float(double d)
{
	return new_like(&(mate_value){ .kind = MATE_V_FLOAT, .u.f = d });
}

static mate_value *
new_bytes(mate_value_kind kind, const void *p, size_t len)
{
	mate_value *v = new_value(kind);

	if (v == NULL)
		return NULL;
	v->u.str.s = malloc(len + 1);
	if (v->u.str.s == NULL) {
		free(v);
		return NULL;
	}
	if (len > 0)
		memcpy(v->u.str.s, p, len);
	v->u.str.s[len] = '\0';
	v->u.str.len = len;
	return v;
}

mate_value *
mate_value_str(const char *s, size_t len)
{
	if (s == NULL)
		s = "";
	return new_bytes(MATE_V_STR, s, len == (size_t)-1 ? strlen(s) : len);
}

mate_value *
mate_value_bytes(const void *p, size_t len)
{
	return new_bytes(MATE_V_BYTES, p, len);
}

/* Each thread keeps a few freed tensor values for its next ones: the recorder makes and
 * frees one for every tensor argument of a call. Freed at the thread's exit. */
#define SPARE_TENSORS 8
struct spare_values {
	mate_value *v[SPARE_TENSORS];
	int n;
};
static __thread struct spare_values spare;
static __thread int spare_keyed;   /* 1 its destructor registered, -1 it cannot be */

static void
spare_destroy(void *arg)
{
	struct spare_values *s = arg;

	while (s->n > 0)
		free(s->v[--s->n]);
}

/* Keeps the freed tensor value v for the thread's next one; 0 when it is not kept. */
static int
spare_keep(mate_value *v)
{
	if (spare.n == SPARE_TENSORS)
		return 0;
	if (spare_keyed == 0)
		spare_keyed = mate_thread_at_exit(spare_destroy, &spare) == 0 ? 1 : -1;
	if (spare_keyed != 1)
		return 0;
	spare.v[spare.n++] = v;
	return 1;
}

mate_value *
mate_value_tensor_take(const mate_tensor *t, mate_storage *st)
{
	/* not zeroed first: a tensor value is its kind and its tensor */
	mate_value *v = spare.n > 0 ? spare.v[--spare.n] : malloc(sizeof(*v));

	if (v == NULL) {
		mate_storage_unref(st);
		return NULL;
	}
	v->kind = MATE_V_TENSOR;
	v->ordered = 0;
	v->u.tensor.t = *t;
	v->u.tensor.st = st;
	if (st != NULL)
		v->u.tensor.t.data = st->data;
	return v;
}

mate_value *
mate_value_tensor(const mate_tensor *t, mate_storage *st)
{
	return mate_value_tensor_take(t, mate_storage_ref(st));
}

mate_value *
mate_value_dtype(mate_dtype dt)
{
	return new_like(&(mate_value){ .kind = MATE_V_DTYPE, .u.dt = dt });
}

static mate_value *
new_named(mate_value_kind kind, const char *name, const char *repr, int64_t iv)
{
	mate_value *v = new_value(kind);

	if (v == NULL)
		return NULL;
	v->u.obj.name = strdup(name != NULL ? name : "");
	v->u.obj.repr = repr != NULL ? strdup(repr) : NULL;
	v->u.obj.v = iv;
	if (v->u.obj.name == NULL || (repr != NULL && v->u.obj.repr == NULL)) {
		mate_value_free(v);
		return NULL;
	}
	return v;
}

mate_value *
mate_value_enum(const char *name, int64_t iv)
{
	return new_named(MATE_V_ENUM, name, NULL, iv);
}

mate_value *
mate_value_object(const char *type, const char *repr)
{
	return new_named(MATE_V_OBJECT, type, repr != NULL ? repr : "", 0);
}

void
mate_value_free(mate_value *v)
{
	if (v == NULL)
		return;
	switch (v->kind) {
	case MATE_V_STR:
	case MATE_V_BYTES:
		free(v->u.str.s);
		break;
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		for (size_t i = 0; i < v->u.seq.n; i++) {
			mate_value_free(v->u.seq.items[i]);
			if (v->u.seq.keys != NULL)
				mate_value_free(v->u.seq.keys[i]);
		}
		free(v->u.seq.items);
		free(v->u.seq.keys);
		free(v->u.seq.index);
		break;
	case MATE_V_TENSOR:
		mate_storage_unref(v->u.tensor.st);
		if (spare_keep(v))
			return;
		break;
	case MATE_V_ENUM:
	case MATE_V_OBJECT:
		free(v->u.obj.name);
		free(v->u.obj.repr);
		break;
	default:
		break;
	}
	free(v);
}

mate_value *
mate_value_copy(const mate_value *v)
{
	mate_value *c;

	if (v == NULL)
		return NULL;
	switch (v->kind) {
	case MATE_V_STR:
	case MATE_V_BYTES:
		return new_bytes(v->kind, v->u.str.s, v->u.str.len);
	case MATE_V_TENSOR:
		return mate_value_tensor(&v->u.tensor.t, v->u.tensor.st);
	case MATE_V_ENUM:
	case MATE_V_OBJECT:
		return new_named(v->kind, v->u.obj.name, v->u.obj.repr, v->u.obj.v);
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		c = new_value(v->kind);
		if (c == NULL)
			return NULL;
		c->ordered = v->ordered;
		for (size_t i = 0; i < v->u.seq.n; i++) {
			int rc;
			mate_value *item = mate_value_copy(v->u.seq.items[i]);
			if (v->kind == MATE_V_DICT)
				rc = mate_value_set(c, mate_value_copy(v->u.seq.keys[i]), item);
			else
				rc = mate_value_append(c, item);
			if (rc != MATE_OK) {
				mate_value_free(c);
				return NULL;
			}
		}
		return c;
	default:
		return new_like(v);
	}
}

/* ---- containers ---------------------------------------------------------- */

static int
grow(mate_value *seq)
{
	size_t cap = seq->u.seq.cap ? seq->u.seq.cap * 2 : 4;
	mate_value **items, **keys;

	if (cap > SIZE_MAX / sizeof(*items) / 2)
		return MATE_ERR_NOMEM;
	items = realloc(seq->u.seq.items, cap * sizeof(*items));
	if (items == NULL)
		return MATE_ERR_NOMEM;
	seq->u.seq.items = items;
	if (seq->kind == MATE_V_DICT) {
		keys = realloc(seq->u.seq.keys, cap * sizeof(*keys));
		if (keys == NULL)
			return MATE_ERR_NOMEM;
		seq->u.seq.keys = keys;
	}
	seq->u.seq.cap = cap;
	return MATE_OK;
}

int
mate_value_append(mate_value *seq, mate_value *item)
{
	if (seq == NULL || item == NULL ||
	    (seq->kind != MATE_V_LIST && seq->kind != MATE_V_TUPLE)) {
		mate_value_free(item);
		return MATE_ERR_ARGUMENT;
	}
	if (seq->u.seq.n == seq->u.seq.cap && grow(seq) != MATE_OK) {
		mate_value_free(item);
		return MATE_ERR_NOMEM;
	}
	seq->u.seq.items[seq->u.seq.n++] = item;
	return MATE_OK;
}

static void
index_put(mate_value *d, size_t item)
{
	const mate_value *k = d->u.seq.keys[item];
	size_t mask = d->u.seq.index_cap - 1;
	size_t h = mate_fnv1a32(k->u.str.s, k->u.str.len) & mask;

	while (d->u.seq.index[h] != 0)
		h = (h + 1) & mask;
	d->u.seq.index[h] = (uint32_t)(item + 1);
}

/* Keeps the string-key index at most half full; 0 or MATE_ERR_NOMEM. */
static int
index_reserve(mate_value *d)
{
	size_t need = (d->u.seq.n + 1) * 2, cap = 16;

	if (d->u.seq.index_cap >= need)
		return MATE_OK;
	while (cap < need)
		cap *= 2;
	free(d->u.seq.index);
	d->u.seq.index = calloc(cap, sizeof(uint32_t));
	d->u.seq.index_cap = d->u.seq.index ? cap : 0;
	if (d->u.seq.index == NULL)
		return MATE_ERR_NOMEM;
	for (size_t i = 0; i < d->u.seq.n; i++)
		if (d->u.seq.keys[i]->kind == MATE_V_STR)
			index_put(d, i);
	return MATE_OK;
}

static long
find_key(const mate_value *d, const char *s, size_t len)
{
	if (d->u.seq.index != NULL) {
		size_t mask = d->u.seq.index_cap - 1;
		for (size_t h = mate_fnv1a32(s, len) & mask; d->u.seq.index[h] != 0; h = (h + 1) & mask) {
			const mate_value *k = d->u.seq.keys[d->u.seq.index[h] - 1];
			if (k->u.str.len == len && memcmp(k->u.str.s, s, len) == 0)
				return (long)d->u.seq.index[h] - 1;
		}
		return -1;
	}
	for (size_t i = 0; i < d->u.seq.n; i++) {
		const mate_value *k = d->u.seq.keys[i];
		if (k->kind == MATE_V_STR && k->u.str.len == len && memcmp(k->u.str.s, s, len) == 0)
			return (long)i;
	}
	return -1;
}

int
mate_value_set(mate_value *dict, mate_value *key, mate_value *item)
{
	long at = -1;

	if (dict == NULL || dict->kind != MATE_V_DICT || key == NULL || item == NULL ||
	    dict->u.seq.n >= UINT32_MAX - 1) {
		mate_value_free(key);
		mate_value_free(item);
		return MATE_ERR_ARGUMENT;
	}
	if (key->kind == MATE_V_STR)
		at = find_key(dict, key->u.str.s, key->u.str.len);
	if (at >= 0) {
		mate_value_free(dict->u.seq.items[at]);
		dict->u.seq.items[at] = item;
		mate_value_free(key);
		return MATE_OK;
	}
	if ((dict->u.seq.n == dict->u.seq.cap && grow(dict) != MATE_OK) ||
	    (dict->u.seq.n >= 8 && index_reserve(dict) != MATE_OK)) {
		mate_value_free(key);
		mate_value_free(item);
		return MATE_ERR_NOMEM;
	}
	dict->u.seq.keys[dict->u.seq.n] = key;
	dict->u.seq.items[dict->u.seq.n] = item;
	if (dict->u.seq.index != NULL && key->kind == MATE_V_STR)
		index_put(dict, dict->u.seq.n);
	dict->u.seq.n++;
	return MATE_OK;
}

int
mate_value_set_str(mate_value *dict, const char *key, mate_value *item)
{
	mate_value *k = mate_value_str(key, (size_t)-1);

	if (k == NULL) {
		mate_value_free(item);
		return MATE_ERR_NOMEM;
	}
	return mate_value_set(dict, k, item);
}

/* ---- getters ------------------------------------------------------------- */

mate_value_kind
mate_value_kind_of(const mate_value *v)
{
	return v != NULL ? v->kind : MATE_V_NONE;
}

int
mate_value_is_ordered(const mate_value *v)
{
	return v != NULL && v->ordered;
}

int
mate_value_get_bool(const mate_value *v)
{
	if (v == NULL)
		return 0;
	return v->kind == MATE_V_BOOL ? v->u.b : v->kind == MATE_V_INT ? v->u.i != 0 : 0;
}

int64_t
mate_value_get_int(const mate_value *v)
{
	if (v == NULL)
		return 0;
	switch (v->kind) {
	case MATE_V_INT: return v->u.i;
	case MATE_V_BOOL: return v->u.b;
	case MATE_V_ENUM: return v->u.obj.v;
	case MATE_V_FLOAT:
		/* truncate, saturating: an out-of-range cast would be UB */
		if (isnan(v->u.f))
			return 0;
		if (v->u.f >= 9223372036854775808.0)
			return INT64_MAX;
		return v->u.f < -9223372036854775808.0 ? INT64_MIN : (int64_t)v->u.f;
	default: return 0;
	}
}

double
mate_value_get_float(const mate_value *v)
{
	if (v == NULL)
		return 0;
	switch (v->kind) {
	case MATE_V_FLOAT: return v->u.f;
	case MATE_V_INT: return (double)v->u.i;
	case MATE_V_BOOL: return v->u.b;
	default: return 0;
	}
}

const char *
mate_value_get_str(const mate_value *v, size_t *len)
{
	if (v == NULL || (v->kind != MATE_V_STR && v->kind != MATE_V_BYTES))
		return NULL;
	if (len != NULL)
		*len = v->u.str.len;
	return v->u.str.s;
}

size_t
mate_value_len(const mate_value *v)
{
	if (v == NULL || (v->kind != MATE_V_LIST && v->kind != MATE_V_TUPLE && v->kind != MATE_V_DICT))
		return 0;
	return v->u.seq.n;
}

mate_value *
mate_value_item(const mate_value *v, size_t i)
{
	return i < mate_value_len(v) ? v->u.seq.items[i] : NULL;
}

mate_value *
mate_value_key(const mate_value *v, size_t i)
{
	if (v == NULL || v->kind != MATE_V_DICT || i >= v->u.seq.n)
		return NULL;
	return v->u.seq.keys[i];
}

mate_value *
mate_value_lookup(const mate_value *dict, const char *key)
{
	long at;

	if (dict == NULL || dict->kind != MATE_V_DICT || key == NULL)
		return NULL;
	at = find_key(dict, key, strlen(key));
	return at >= 0 ? dict->u.seq.items[at] : NULL;
}

const mate_tensor *
mate_value_get_tensor(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_TENSOR ? &v->u.tensor.t : NULL;
}

mate_storage *
mate_value_get_storage(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_TENSOR ? v->u.tensor.st : NULL;
}

mate_dtype
mate_value_get_dtype(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_DTYPE ? v->u.dt : MATE_DTYPE_INVALID;
}

const char *
mate_value_enum_name(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_ENUM ? v->u.obj.name : NULL;
}

const char *
mate_value_object_type(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_OBJECT ? v->u.obj.name : NULL;
}

const char *
mate_value_object_repr(const mate_value *v)
{
	return v != NULL && v->kind == MATE_V_OBJECT ? v->u.obj.repr : NULL;
}
