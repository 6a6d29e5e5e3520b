/* pickle.c: a restricted unpickler for torch.save's data.pkl that builds a mate_value tree and never executes anything. */
#include "mate_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The pickle is run on a small private object graph (struct pobj, kept in
 * an arena and freed all at once), so the memo can share objects with the
 * stack exactly as Python does; the graph is turned into a mate_value tree
 * at STOP. Objects reachable twice are copied, under a depth limit and an
 * allocation budget, so cycles and exponential sharing fail cleanly. The
 * budget is 16 MiB and 256 bytes per byte of the pickle, at most
 * mate_memory_cap(), and every
 * allocation counts against it at its real size: the arena, the stack,
 * marks, memo and storage table, and each node of the result tree.
 *
 * Opcodes: those of spec tensor-files.md B4 (protocol 2, plus the protocol
 * 3/4 ones listed there; STACK_GLOBAL is not among them). What the tree
 * holds for what Python would build:
 *   OrderedDict            an ordered dict; BUILD's attributes (a
 *                          state_dict's _metadata) are checked and dropped
 *   torch.Size             a tuple of ints
 *   set                    a list
 *   torch.device           an object "torch.device", repr "cpu" / "cuda:0"
 *   a bare storage         a 1-D tensor over it
 *   Parameter              a tensor with requires_grad set
 *   an allowlisted global  an object "global", repr "module name"
 */

#define PK_MAX_DEPTH 1000          /* container nesting in the result */
#define PK_MAX_MARKS 1000          /* MARKs open at once */
#define PK_MAX_STACK (1u << 24)    /* stack items */
#define PK_MAX_GLOBAL 256          /* bytes of a GLOBAL's module or name */

enum pk_kind {
	PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_BYTES, PK_LIST,
	PK_TUPLE, PK_DICT, PK_SET, PK_TENSOR, PK_DTYPE, PK_DEVICE, PK_GLOBAL,
	PK_STORAGE
};

/* What an allowlisted GLOBAL stands for. */
enum pk_global {
	G_TENSOR_V1, G_TENSOR_V2, G_TENSOR_V3, G_PARAMETER, G_PARAMETER_STATE,
	G_FROM_TYPE_V2, G_ODICT, G_SIZE, G_DEVICE, G_ENCODE, G_BYTES, G_SET,
	G_TYPED_STORAGE, G_UNTYPED_STORAGE, G_TENSOR_TYPE
};

static const struct {
	const char *module, *name;
	enum pk_global action;
} allowlist[] = {
	{ "torch._utils", "_rebuild_tensor", G_TENSOR_V1 },
	{ "torch._utils", "_rebuild_tensor_v2", G_TENSOR_V2 },
	{ "torch._utils", "_rebuild_tensor_v3", G_TENSOR_V3 },
	{ "torch._utils", "_rebuild_parameter", G_PARAMETER },
	{ "torch._utils", "_rebuild_parameter_with_state", G_PARAMETER_STATE },
	{ "torch._tensor", "_rebuild_from_type_v2", G_FROM_TYPE_V2 },
	{ "collections", "OrderedDict", G_ODICT },
	{ "torch", "Size", G_SIZE },
	{ "torch", "device", G_DEVICE },
	{ "_codecs", "encode", G_ENCODE },
	{ "__builtin__", "bytes", G_BYTES },
	{ "builtins", "bytes", G_BYTES },
	{ "__builtin__", "set", G_SET },
	{ "builtins", "set", G_SET },
	{ "torch.storage", "UntypedStorage", G_UNTYPED_STORAGE },
	{ "torch", "UntypedStorage", G_UNTYPED_STORAGE },
	{ "torch", "Tensor", G_TENSOR_TYPE },
	{ "torch._tensor", "Tensor", G_TENSOR_TYPE },
	{ "torch.nn.parameter", "Parameter", G_TENSOR_TYPE },
};

/* One storage key, loaded once and shared by every tensor naming it. */
struct pk_store {
	char *key;
	size_t keylen;
	uint64_t nbytes;
	mate_storage *st;
};

struct pk_tensor {
	mate_tensor t;
	mate_storage *st;   /* borrowed from the storage cache */
};

typedef struct pobj pobj;
struct pobj {
	uint8_t kind;       /* enum pk_kind */
	uint8_t ordered;    /* PK_DICT: an OrderedDict */
	uint8_t action;     /* PK_GLOBAL: enum pk_global */
	uint8_t untyped;    /* PK_STORAGE: an UntypedStorage (dt is uint8) */
	mate_dtype dt;      /* PK_DTYPE, PK_STORAGE, PK_GLOBAL typed storage */
	union {
		int64_t i;
		double f;
		struct {
			char *s;
			size_t len;
		} str;          /* PK_STR, PK_BYTES, PK_DEVICE; PK_GLOBAL name */
		struct {
			pobj **items;   /* dicts: key, value, key, value... */
			size_t n, cap;
		} seq;
		struct pk_tensor *tensor;
		struct pk_store *store;
	} u;
};

#define PK_SLAB 256
struct pk_slab {
	struct pk_slab *next;
	size_t n;
	pobj objs[PK_SLAB];
};

/* Bump-allocated memory for strings, item arrays and tensors: freed all at once. */
#define PK_CHUNK ((size_t)64 << 10)
struct pk_chunk {
	struct pk_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

struct pk {
	const uint8_t *start, *p, *end;
	size_t op;                      /* offset of the opcode being run */
	mate_error *err;
	int failed;
	mate_storage_loader load;
	void *ctx;
	pobj **stack;
	size_t sn, scap, fence;
	size_t *marks;
	size_t mn, mcap;
	pobj **memo;                    /* memo[key]; keys below the input length */
	size_t memo_cap, memo_n;
	struct pk_store **stores;
	size_t nstores, stores_cap;
	uint32_t *store_index;          /* hash of key -> store + 1 */
	size_t store_index_cap;
	struct pk_slab *slabs;
	struct pk_chunk *chunks;
	uint64_t spent, budget;
	pobj none, yes, no;
};

/* ---- errors and budget ---------------------------------------------------- */

static int pk_fail(struct pk *pk, int code, const char *fmt, ...) MATE_PRINTF(3, 4);

/* Records the first error with the opcode's offset; returns -1. */
static int
pk_fail(struct pk *pk, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (pk->failed)
		return -1;
	pk->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mate_set_error(pk->err, code, "pickle: %s (offset %zu)", msg, pk->op);
	return -1;
}

#define PICKLE_BUDGET_BASE ((uint64_t)16 << 20)
#define PICKLE_BUDGET_PER_BYTE 256

/* Counts n bytes (and one malloc block) against the allocation budget. */
static int
spend(struct pk *pk, uint64_t n)
{
	n = n > UINT64_MAX - MATE_MALLOC_OVERHEAD ? UINT64_MAX : n + MATE_MALLOC_OVERHEAD;
	if (n > pk->budget - pk->spent)
		return pk_fail(pk, MATE_ERR_LIMIT, "memory limit of %llu MiB reached (%s)",
		    (unsigned long long)(pk->budget >> 20), pk->budget < mate_memory_cap() ?
		    "a pickle's objects may take 16 MiB and 256 bytes per byte of the pickle, and "
		    "at most MATE_MAX_MEMORY" : "the MATE_MAX_MEMORY variable raises it");
	pk->spent += n;
	return 0;
}

static int
nomem(struct pk *pk)
{
	return pk_fail(pk, MATE_ERR_NOMEM, "out of memory");
}

/* Room for one more of the n elements (size bytes each, and extra bytes
 * kept beside each) at *arrayp: its growth is spent from the budget. 0,
 * or -1 with the error recorded. */
static int
pk_grow(struct pk *pk, void *arrayp, size_t n, size_t *cap, size_t size, size_t extra,
    size_t first)
{
	if (n < *cap)
		return 0;
	if (spend(pk, (uint64_t)(*cap ? *cap : first) * (size + extra)) != 0)
		return -1;
	return mate_array_grow(arrayp, n, cap, size, first) != 0 ? nomem(pk) : 0;
}

/* Copies s for messages, replacing anything unprintable. */
static void
printable(char *dst, size_t cap, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && i + 1 < cap; i++)
		dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	dst[i] = '\0';
}

/* ---- the object arena ------------------------------------------------------ */

static pobj *
new_obj(struct pk *pk, enum pk_kind kind)
{
	struct pk_slab *s = pk->slabs;
	pobj *o;

	if (s == NULL || s->n == PK_SLAB) {
		if (spend(pk, sizeof(*s)) != 0)
			return NULL;
		s = calloc(1, sizeof(*s));
		if (s == NULL) {
			nomem(pk);
			return NULL;
		}
		s->next = pk->slabs;
		pk->slabs = s;
	}
	o = &s->objs[s->n++];
	o->kind = (uint8_t)kind;
	return o;
}

/* n bytes (16-byte aligned) that live until the end of the load. */
static void *
pk_alloc(struct pk *pk, size_t n)
{
	struct pk_chunk *c = pk->chunks;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (c == NULL || c->cap - c->used < n) {
		size_t cap = n > PK_CHUNK ? n : PK_CHUNK;

		if (spend(pk, sizeof(*c) + cap) != 0)
			return NULL;
		if ((c = malloc(sizeof(*c) + cap)) == NULL) {
			nomem(pk);
			return NULL;
		}
		c->used = 0;
		c->cap = cap;
		c->next = pk->chunks;
		pk->chunks = c;
	}
	p = c->data + c->used;
	c->used += n;
	return p;
}

static pobj *
new_int(struct pk *pk, int64_t v)
{
	pobj *o = new_obj(pk, PK_INT);

	if (o != NULL)
		o->u.i = v;
	return o;
}

/* A string-like object holding a NUL-terminated copy of len bytes. */
static pobj *
new_str(struct pk *pk, enum pk_kind kind, const void *s, size_t len)
{
	pobj *o = new_obj(pk, kind);

	if (o == NULL || (o->u.str.s = pk_alloc(pk, len + 1)) == NULL)
		return NULL;
	if (len > 0)
		memcpy(o->u.str.s, s, len);
	o->u.str.s[len] = '\0';
	o->u.str.len = len;
	return o;
}

static int
seq_add(struct pk *pk, pobj *seq, pobj *item)
{
	if (seq->u.seq.n == seq->u.seq.cap) {
		size_t cap = seq->u.seq.cap ? seq->u.seq.cap * 2 : 4;
		pobj **items = pk_alloc(pk, cap * sizeof(*items));

		if (items == NULL)
			return -1;
		if (seq->u.seq.n > 0)
			memcpy(items, seq->u.seq.items, seq->u.seq.n * sizeof(*items));
		seq->u.seq.items = items;
		seq->u.seq.cap = cap;
	}
	seq->u.seq.items[seq->u.seq.n++] = item;
	return 0;
}

/* A new list, tuple, dict or set holding items[0..n). */
static pobj *
new_seq(struct pk *pk, enum pk_kind kind, pobj **items, size_t n)
{
	pobj *o = new_obj(pk, kind);

	if (o == NULL)
		return NULL;
	if (n > 0) {
		if ((o->u.seq.items = pk_alloc(pk, n * sizeof(pobj *))) == NULL)
			return NULL;
		memcpy(o->u.seq.items, items, n * sizeof(pobj *));
		o->u.seq.n = o->u.seq.cap = n;
	}
	return o;
}

/* ---- the stack, marks and memo -------------------------------------------- */

static int
push(struct pk *pk, pobj *o)
{
	if (o == NULL)
		return -1;
	if (pk->sn == pk->scap && pk->sn >= PK_MAX_STACK)
		return pk_fail(pk, MATE_ERR_LIMIT, "stack deeper than %u items", PK_MAX_STACK);
	if (pk_grow(pk, &pk->stack, pk->sn, &pk->scap, sizeof(*pk->stack), 0, 64) != 0)
		return -1;
	pk->stack[pk->sn++] = o;
	return 0;
}

/* Pops one item above the current MARK, or NULL on underflow. */
static pobj *
pop(struct pk *pk)
{
	if (pk->sn <= pk->fence) {
		pk_fail(pk, MATE_ERR_FORMAT, "stack underflow");
		return NULL;
	}
	return pk->stack[--pk->sn];
}

static pobj *
top(struct pk *pk)
{
	if (pk->sn <= pk->fence) {
		pk_fail(pk, MATE_ERR_FORMAT, "stack underflow");
		return NULL;
	}
	return pk->stack[pk->sn - 1];
}

static int
push_mark(struct pk *pk)
{
	if (pk->mn == PK_MAX_MARKS)
		return pk_fail(pk, MATE_ERR_LIMIT, "more than %d nested MARKs", PK_MAX_MARKS);
	if (pk_grow(pk, &pk->marks, pk->mn, &pk->mcap, sizeof(*pk->marks), 0, 16) != 0)
		return -1;
	pk->marks[pk->mn++] = pk->sn;
	pk->fence = pk->sn;
	return 0;
}

/* Closes the innermost MARK; *at gets the stack index it was set at. */
static int
pop_mark(struct pk *pk, size_t *at)
{
	if (pk->mn == 0)
		return pk_fail(pk, MATE_ERR_FORMAT, "no MARK to close");
	*at = pk->marks[--pk->mn];
	pk->fence = pk->mn > 0 ? pk->marks[pk->mn - 1] : 0;
	return 0;
}

/* memo[key] = stack top (not popped). Python's picklers number the memo
 * 0, 1, 2, ...: a key can be no larger than the input is long. */
static int
memo_put(struct pk *pk, uint32_t key)
{
	pobj *o = top(pk);

	if (o == NULL)
		return -1;
	if (key >= (size_t)(pk->end - pk->start))
		return pk_fail(pk, MATE_ERR_FORMAT, "memo key %u is out of range", key);
	if (key >= pk->memo_cap) {
		size_t cap = pk->memo_cap ? pk->memo_cap : 64;
		pobj **m;

		while (cap <= key)
			cap *= 2;
		if (spend(pk, (uint64_t)(cap - pk->memo_cap) * sizeof(*m)) != 0)
			return -1;
		if ((m = realloc(pk->memo, cap * sizeof(*m))) == NULL)
			return nomem(pk);
		memset(m + pk->memo_cap, 0, (cap - pk->memo_cap) * sizeof(*m));
		pk->memo = m;
		pk->memo_cap = cap;
	}
	pk->memo_n += pk->memo[key] == NULL;
	pk->memo[key] = o;
	return 0;
}

static int
memo_get(struct pk *pk, uint32_t key)
{
	pobj *o = key < pk->memo_cap ? pk->memo[key] : NULL;

	if (o == NULL)
		return pk_fail(pk, MATE_ERR_FORMAT, "memo key %u is not defined", key);
	return push(pk, o);
}

/* ---- reading the input ------------------------------------------------------ */

static const uint8_t *
take(struct pk *pk, uint64_t n)
{
	const uint8_t *p = pk->p;

	if (n > (uint64_t)(pk->end - pk->p)) {
		pk_fail(pk, MATE_ERR_FORMAT, "truncated: %llu bytes needed, %zu left",
		    (unsigned long long)n, (size_t)(pk->end - pk->p));
		return NULL;
	}
	pk->p += n;
	return p;
}

static int
take_uint(struct pk *pk, int nbytes, uint64_t *v)
{
	const uint8_t *p = take(pk, (uint64_t)nbytes);

	if (p == NULL)
		return -1;
	*v = 0;
	for (int i = nbytes - 1; i >= 0; i--)
		*v = (*v << 8) | p[i];
	return 0;
}

/* UTF-8, allowing encoded surrogates as Python's "surrogatepass" does. */
static int
utf8_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			k = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3, cp = c & 0x07;
		else
			return 0;
		if (n - i <= k)
			return 0;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += k + 1;
	}
	return 1;
}

/* BINUNICODE and friends: lenbytes of little-endian length, then text. */
static int
op_string(struct pk *pk, int lenbytes, enum pk_kind kind)
{
	uint64_t len;
	const uint8_t *s;

	if (take_uint(pk, lenbytes, &len) != 0 || (s = take(pk, len)) == NULL)
		return -1;
	if (kind == PK_STR && !utf8_ok(s, (size_t)len))
		return pk_fail(pk, MATE_ERR_FORMAT, "string is not valid UTF-8");
	return push(pk, new_str(pk, kind, s, (size_t)len));
}

static int
op_long1(struct pk *pk)
{
	uint64_t n, v = 0;
	const uint8_t *p;

	if (take_uint(pk, 1, &n) != 0 || (p = take(pk, n)) == NULL)
		return -1;
	if (n > 8) {
		/* Allow redundant sign bytes; anything wider is too large. */
		for (uint64_t i = 8; i < n; i++)
			if (p[i] != ((p[7] & 0x80) ? 0xff : 0x00))
				return pk_fail(pk, MATE_ERR_UNSUPPORTED,
				    "integer of %llu bytes does not fit in 64 bits", (unsigned long long)n);
		n = 8;
	}
	for (uint64_t i = n; i > 0; i--)
		v = (v << 8) | p[i - 1];
	if (n > 0 && n < 8 && (p[n - 1] & 0x80))
		v |= ~(uint64_t)0 << (8 * n);
	return push(pk, new_int(pk, (int64_t)v));
}

static int
op_binfloat(struct pk *pk)
{
	const uint8_t *p = take(pk, 8);
	uint64_t bits = 0;
	pobj *o;

	if (p == NULL)
		return -1;
	for (int i = 0; i < 8; i++)
		bits = (bits << 8) | p[i];
	if ((o = new_obj(pk, PK_FLOAT)) == NULL)
		return -1;
	memcpy(&o->u.f, &bits, sizeof(bits));
	return push(pk, o);
}

/* ---- GLOBAL ------------------------------------------------------------------ */

static const uint8_t *
take_line(struct pk *pk, size_t *len)
{
	const uint8_t *nl, *p = pk->p;
	size_t left = (size_t)(pk->end - pk->p);

	nl = memchr(p, '\n', left < PK_MAX_GLOBAL + 1 ? left : PK_MAX_GLOBAL + 1);
	if (nl == NULL) {
		pk_fail(pk, MATE_ERR_FORMAT, "GLOBAL name is unterminated or longer than %d bytes",
		    PK_MAX_GLOBAL);
		return NULL;
	}
	*len = (size_t)(nl - p);
	pk->p = nl + 1;
	return p;
}

static int
is_name(const uint8_t *s, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(s, want, len) == 0;
}

/* Maps module + name to an allowlisted action, a dtype, or nothing (-1). */
static int
lookup_global(const uint8_t *mod, size_t mlen, const uint8_t *name, size_t nlen,
    pobj *o)
{
	char buf[PK_MAX_GLOBAL + 1];

	for (size_t i = 0; i < sizeof(allowlist) / sizeof(allowlist[0]); i++) {
		if (is_name(mod, mlen, allowlist[i].module) && is_name(name, nlen, allowlist[i].name)) {
			o->kind = PK_GLOBAL;
			o->action = (uint8_t)allowlist[i].action;
			return 0;
		}
	}
	if (!is_name(mod, mlen, "torch") || memchr(name, '\0', nlen) != NULL)
		return -1;
	memcpy(buf, name, nlen);
	buf[nlen] = '\0';
	if ((o->dt = mate_dtype_from_storage_class(buf)) != MATE_DTYPE_INVALID) {
		o->kind = PK_GLOBAL;
		o->action = G_TYPED_STORAGE;
		return 0;
	}
	if ((o->dt = mate_dtype_from_name(buf)) != MATE_DTYPE_INVALID) {
		o->kind = PK_DTYPE;
		return 0;
	}
	return -1;
}

/* torch dtypes mate has no tensor type for (torch 2.x's sub-byte, shell and
 * quantized dtypes): refused as unsupported, not as a hostile global. */
static int
is_unknown_torch_dtype(const uint8_t *mod, size_t mlen, const uint8_t *name, size_t nlen)
{
	static const char *const names[] = {
		"float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
		"uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
		"int1", "int2", "int3", "int4", "int5", "int6", "int7",
		"quint8", "qint8", "qint32", "quint4x2", "quint2x4",
	};

	if (!is_name(mod, mlen, "torch"))
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (is_name(name, nlen, names[i]))
			return 1;
	return 0;
}

static int
op_global(struct pk *pk)
{
	const uint8_t *mod, *name;
	size_t mlen, nlen;
	char text[2 * PK_MAX_GLOBAL + 2];
	pobj *o;

	if ((mod = take_line(pk, &mlen)) == NULL || (name = take_line(pk, &nlen)) == NULL)
		return -1;
	printable(text, sizeof(text), (const char *)mod, mlen);
	text[mlen] = ' ';
	printable(text + mlen + 1, sizeof(text) - mlen - 1, (const char *)name, nlen);
	if ((o = new_str(pk, PK_GLOBAL, text, strlen(text))) == NULL)
		return -1;
	if (lookup_global(mod, mlen, name, nlen, o) != 0) {
		o->kind = PK_GLOBAL;    /* keeps the name freed with the arena */
		if (is_unknown_torch_dtype(mod, mlen, name, nlen))
			return pk_fail(pk, MATE_ERR_UNSUPPORTED,
			    "unsupported dtype torch.%s: mate has no such tensor type", text + mlen + 1);
		return pk_fail(pk, MATE_ERR_FORMAT, "global '%s' is not allowed", text);
	}
	return push(pk, o);
}

/* ---- arguments -------------------------------------------------------------- */

static const char *
kind_name(const pobj *o)
{
	static const char *names[] = { "None", "bool", "int", "float", "str", "bytes",
		"list", "tuple", "dict", "set", "tensor", "dtype", "device", "global", "storage" };
	return names[o->kind];
}

static int
want_int(struct pk *pk, const pobj *o, const char *what, int64_t *v)
{
	if (o->kind != PK_INT && o->kind != PK_BOOL)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s is a %s, not an int", what, kind_name(o));
	*v = o->u.i;
	if (*v < 0)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s is negative (%lld)", what, (long long)*v);
	return 0;
}

/* A size or stride: a tuple or list of non-negative ints. */
static int
want_dims(struct pk *pk, const pobj *o, const char *what, int64_t *dims, int *n)
{
	if (o->kind != PK_TUPLE && o->kind != PK_LIST)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s is a %s, not a tuple", what, kind_name(o));
	if (o->u.seq.n > MATE_MAX_DIMS)
		return pk_fail(pk, MATE_ERR_UNSUPPORTED, "%s has %zu dimensions (at most %d)",
		    what, o->u.seq.n, MATE_MAX_DIMS);
	*n = (int)o->u.seq.n;
	for (int i = 0; i < *n; i++)
		if (want_int(pk, o->u.seq.items[i], what, &dims[i]) != 0)
			return -1;
	return 0;
}

static int
is_dict_or_none(const pobj *o)
{
	return o->kind == PK_DICT || o->kind == PK_NONE;
}

/* Tensor metadata (torch 2.x): flags such as conj/neg must all be off. */
static int
check_metadata(struct pk *pk, const pobj *o)
{
	if (o->kind == PK_NONE)
		return 0;
	if (o->kind != PK_DICT)
		return pk_fail(pk, MATE_ERR_FORMAT, "tensor metadata is a %s, not a dict", kind_name(o));
	for (size_t i = 0; i + 1 < o->u.seq.n; i += 2) {
		const pobj *k = o->u.seq.items[i], *v = o->u.seq.items[i + 1];
		if (v->kind == PK_NONE || ((v->kind == PK_BOOL || v->kind == PK_INT) && v->u.i == 0))
			continue;
		return pk_fail(pk, MATE_ERR_UNSUPPORTED, "tensor metadata '%s' is not supported",
		    k->kind == PK_STR ? k->u.str.s : "?");
	}
	return 0;
}

/* ---- tensors and storages --------------------------------------------------- */

static pobj *
new_tensor(struct pk *pk, const mate_tensor *t, mate_storage *st)
{
	pobj *o;

	if ((o = new_obj(pk, PK_TENSOR)) == NULL ||
	    (o->u.tensor = pk_alloc(pk, sizeof(*o->u.tensor))) == NULL)
		return NULL;
	o->u.tensor->t = *t;
	o->u.tensor->st = st;
	return o;
}

/* Checks that the view stays inside the storage (torch does not). */
static int
check_bounds(struct pk *pk, const mate_tensor *t, uint64_t nbytes)
{
	int64_t extent = mate_tensor_storage_extent(t), need;

	if (extent < 0 || !mate_mul_ok(extent, (int64_t)mate_dtype_size(t->dtype), &need))
		return pk_fail(pk, MATE_ERR_FORMAT, "tensor view overflows");
	if (mate_tensor_numel(t) > 0 && (uint64_t)need > nbytes)
		return pk_fail(pk, MATE_ERR_FORMAT,
		    "tensor view needs %lld bytes of its storage, which has %llu",
		    (long long)need, (unsigned long long)nbytes);
	return 0;
}

/* The arguments after size and stride: requires_grad, hooks, the v3
 * dtype and the optional metadata. *dt gets the tensor's dtype. */
static int
check_extra_args(struct pk *pk, int version, pobj **a, size_t n, mate_dtype *dt)
{
	if (version >= 2 && a[4]->kind != PK_BOOL)
		return pk_fail(pk, MATE_ERR_FORMAT, "requires_grad is a %s, not a bool",
		    kind_name(a[4]));
	if (version >= 2 && !is_dict_or_none(a[5]))
		return pk_fail(pk, MATE_ERR_FORMAT, "backward hooks are a %s", kind_name(a[5]));
	if (version == 3) {
		if (a[6]->kind != PK_DTYPE)
			return pk_fail(pk, MATE_ERR_FORMAT, "_rebuild_tensor_v3 dtype is a %s",
			    kind_name(a[6]));
		*dt = a[6]->dt;
	} else if (a[0]->untyped) {
		return pk_fail(pk, MATE_ERR_FORMAT, "an UntypedStorage needs _rebuild_tensor_v3");
	}
	if ((size_t)(version + 4) < n)
		return check_metadata(pk, a[n - 1]);
	return 0;
}

/* _rebuild_tensor (4 args), _rebuild_tensor_v2 (6-7) and _rebuild_tensor_v3 (7-8). */
static pobj *
rebuild_tensor(struct pk *pk, int version, pobj **a, size_t n)
{
	int64_t shape[MATE_MAX_DIMS], stride[MATE_MAX_DIMS], offset;
	int ndim, nstride;
	mate_dtype dt;
	mate_tensor t;

	if ((version == 1 && n != 4) || (version == 2 && (n < 6 || n > 7)) ||
	    (version == 3 && (n < 7 || n > 8))) {
		pk_fail(pk, MATE_ERR_FORMAT, "_rebuild_tensor%s takes %s arguments, not %zu",
		    version == 1 ? "" : version == 2 ? "_v2" : "_v3",
		    version == 1 ? "4" : version == 2 ? "6 or 7" : "7 or 8", n);
		return NULL;
	}
	if (a[0]->kind != PK_STORAGE) {
		pk_fail(pk, MATE_ERR_FORMAT, "tensor storage is a %s", kind_name(a[0]));
		return NULL;
	}
	dt = a[0]->dt;
	if (want_int(pk, a[1], "storage offset", &offset) != 0 ||
	    want_dims(pk, a[2], "size", shape, &ndim) != 0 ||
	    want_dims(pk, a[3], "stride", stride, &nstride) != 0)
		return NULL;
	if (ndim != nstride) {
		pk_fail(pk, MATE_ERR_FORMAT, "size has %d dimensions but stride has %d", ndim, nstride);
		return NULL;
	}
	if (check_extra_args(pk, version, a, n, &dt) != 0)
		return NULL;
	if (mate_tensor_init(&t, dt, ndim, shape, stride, NULL) != MATE_OK) {
		pk_fail(pk, MATE_ERR_FORMAT, "invalid tensor shape");
		return NULL;
	}
	t.offset = offset;
	t.requires_grad = version >= 2 && a[4]->u.i != 0;
	if (mate_tensor_nbytes(&t) < 0) {
		pk_fail(pk, MATE_ERR_FORMAT, "tensor size overflows");
		return NULL;
	}
	if (check_bounds(pk, &t, a[0]->u.store->nbytes) != 0)
		return NULL;
	return new_tensor(pk, &t, a[0]->u.store->st);
}

static struct pk_store *
store_find(struct pk *pk, const char *key, size_t len)
{
	size_t mask = pk->store_index_cap - 1;

	if (pk->store_index_cap == 0)
		return NULL;
	for (size_t h = mate_fnv1a32(key, len) & mask; pk->store_index[h] != 0; h = (h + 1) & mask) {
		struct pk_store *s = pk->stores[pk->store_index[h] - 1];
		if (s->keylen == len && memcmp(s->key, key, len) == 0)
			return s;
	}
	return NULL;
}

static int
store_index_add(struct pk *pk, size_t i)
{
	size_t mask = pk->store_index_cap - 1;
	size_t h = mate_fnv1a32(pk->stores[i]->key, pk->stores[i]->keylen) & mask;

	while (pk->store_index[h] != 0)
		h = (h + 1) & mask;
	pk->store_index[h] = (uint32_t)(i + 1);
	return 0;
}

static int
store_add(struct pk *pk, struct pk_store *s)
{
	if (pk->nstores == pk->stores_cap) {
		/* the index (two slots a store) is spent with the array */
		if (pk_grow(pk, &pk->stores, pk->nstores, &pk->stores_cap, sizeof(*pk->stores),
		    2 * sizeof(uint32_t), 16) != 0)
			return -1;
		free(pk->store_index);
		pk->store_index = calloc(pk->stores_cap * 2, sizeof(uint32_t));
		pk->store_index_cap = pk->stores_cap * 2;
		if (pk->store_index == NULL) {
			pk->store_index_cap = 0;
			return nomem(pk);
		}
		for (size_t i = 0; i < pk->nstores; i++)
			store_index_add(pk, i);
	}
	pk->stores[pk->nstores] = s;
	return store_index_add(pk, pk->nstores++);
}

/* Loads (once per key) the storage a persistent id names. */
static struct pk_store *
load_store(struct pk *pk, const pobj *key, mate_dtype dt, int64_t numel, uint64_t nbytes)
{
	struct pk_store *s = store_find(pk, key->u.str.s, key->u.str.len);

	if (s != NULL) {
		if (s->nbytes != nbytes) {
			pk_fail(pk, MATE_ERR_FORMAT, "storage '%s' is declared with %llu and %llu bytes",
			    s->key, (unsigned long long)s->nbytes, (unsigned long long)nbytes);
			return NULL;
		}
		return s;
	}
	if (spend(pk, sizeof(*s) + key->u.str.len + 1) != 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL || (s->key = strdup(key->u.str.s)) == NULL) {
		free(s);
		nomem(pk);
		return NULL;
	}
	s->keylen = key->u.str.len;
	s->nbytes = nbytes;
	if (store_add(pk, s) != 0) {
		free(s->key);
		free(s);
		return NULL;
	}
	if (pk->load != NULL)
		s->st = pk->load(s->key, dt, numel, pk->ctx, pk->err);
	else
		s->st = mate_storage_wrap(NULL, (size_t)nbytes, pk->err);
	if (s->st == NULL) {
		if (pk->err != NULL && pk->err->code == MATE_OK)
			mate_set_error(pk->err, MATE_ERR_FORMAT, "cannot load storage '%s'", s->key);
		pk->failed = 1;
		return NULL;
	}
	if (mate_storage_size(s->st) != nbytes) {
		pk_fail(pk, MATE_ERR_FORMAT, "storage '%s' has %zu bytes, not %llu", s->key,
		    mate_storage_size(s->st), (unsigned long long)nbytes);
		return NULL;
	}
	return s;
}

/* BINPERSID: ('storage', class, key, location, numel) -> a storage. */
static int
op_persid(struct pk *pk)
{
	pobj *pid = pop(pk), *o, **a;
	int64_t numel, nbytes;
	mate_dtype dt;
	int untyped;

	if (pid == NULL)
		return -1;
	if (pid->kind != PK_TUPLE || pid->u.seq.n != 5)
		return pk_fail(pk, MATE_ERR_FORMAT, "persistent id is not a 5-tuple");
	a = pid->u.seq.items;
	if (a[0]->kind != PK_STR || strcmp(a[0]->u.str.s, "storage") != 0)
		return pk_fail(pk, MATE_ERR_FORMAT, "persistent id is not a 'storage'");
	if (a[1]->kind != PK_GLOBAL ||
	    (a[1]->action != G_TYPED_STORAGE && a[1]->action != G_UNTYPED_STORAGE))
		return pk_fail(pk, MATE_ERR_FORMAT, "storage class is a %s", kind_name(a[1]));
	if (a[2]->kind != PK_STR || a[2]->u.str.len == 0 || a[3]->kind != PK_STR)
		return pk_fail(pk, MATE_ERR_FORMAT, "storage key or location is not a string");
	if (memchr(a[2]->u.str.s, '\0', a[2]->u.str.len) != NULL)
		return pk_fail(pk, MATE_ERR_FORMAT, "storage key contains a NUL byte");
	if (want_int(pk, a[4], "storage size", &numel) != 0)
		return -1;
	untyped = a[1]->action == G_UNTYPED_STORAGE;
	dt = untyped ? MATE_U8 : a[1]->dt;
	if (!mate_mul_ok(numel, (int64_t)mate_dtype_size(dt), &nbytes) || (uint64_t)nbytes > SIZE_MAX)
		return pk_fail(pk, MATE_ERR_FORMAT, "storage size overflows");
	if ((o = new_obj(pk, PK_STORAGE)) == NULL)
		return -1;
	o->dt = dt;
	o->untyped = (uint8_t)untyped;
	o->u.store = load_store(pk, a[2], dt, numel, (uint64_t)nbytes);
	if (o->u.store == NULL) {
		o->kind = PK_NONE;
		return -1;
	}
	return push(pk, o);
}

/* ---- REDUCE and NEWOBJ ------------------------------------------------------- */

static pobj *apply(struct pk *pk, const pobj *fn, pobj *args);

static pobj *
rebuild_parameter(struct pk *pk, int with_state, pobj **a, size_t n)
{
	mate_tensor t;

	if (n != (size_t)(with_state ? 4 : 3) || a[0]->kind != PK_TENSOR || a[1]->kind != PK_BOOL ||
	    !is_dict_or_none(a[2]) || (with_state && a[3]->kind != PK_DICT &&
	    a[3]->kind != PK_NONE && a[3]->kind != PK_TUPLE)) {
		pk_fail(pk, MATE_ERR_FORMAT, "bad arguments to _rebuild_parameter%s",
		    with_state ? "_with_state" : "");
		return NULL;
	}
	t = a[0]->u.tensor->t;
	t.requires_grad = a[1]->u.i != 0;
	return new_tensor(pk, &t, a[0]->u.tensor->st);
}

/* _rebuild_from_type_v2(func, type, args, state) is func(*args). */
static pobj *
rebuild_from_type(struct pk *pk, pobj **a, size_t n)
{
	if (n != 4 || a[0]->kind != PK_GLOBAL || a[0]->action == G_FROM_TYPE_V2 ||
	    a[1]->kind != PK_GLOBAL ||
	    a[1]->action != G_TENSOR_TYPE || a[2]->kind != PK_TUPLE || !is_dict_or_none(a[3])) {
		pk_fail(pk, MATE_ERR_FORMAT, "bad arguments to _rebuild_from_type_v2");
		return NULL;
	}
	if (a[3]->kind == PK_DICT && a[3]->u.seq.n > 0) {
		pk_fail(pk, MATE_ERR_UNSUPPORTED, "tensor subclass state is not supported");
		return NULL;
	}
	return apply(pk, a[0], a[2]);
}

/* torch.device('cpu'), ('cuda', 0) or ('cuda:0'). */
static pobj *
make_device(struct pk *pk, pobj **a, size_t n)
{
	char buf[96];

	if (n < 1 || n > 2 || a[0]->kind != PK_STR || a[0]->u.str.len > 64 ||
	    (n == 2 && a[1]->kind != PK_INT && a[1]->kind != PK_NONE)) {
		pk_fail(pk, MATE_ERR_FORMAT, "bad arguments to torch.device");
		return NULL;
	}
	if (n == 2 && a[1]->kind == PK_INT)
		snprintf(buf, sizeof(buf), "%s:%lld", a[0]->u.str.s, (long long)a[1]->u.i);
	else
		snprintf(buf, sizeof(buf), "%s", a[0]->u.str.s);
	return new_str(pk, PK_DEVICE, buf, strlen(buf));
}

/* _codecs.encode(text, 'latin1'): protocol 2's bytes. */
static pobj *
make_bytes(struct pk *pk, pobj **a, size_t n)
{
	const uint8_t *s;
	size_t len, out = 0;
	pobj *o;

	if (n != 2 || a[0]->kind != PK_STR || a[1]->kind != PK_STR ||
	    (strcmp(a[1]->u.str.s, "latin1") != 0 && strcmp(a[1]->u.str.s, "latin-1") != 0)) {
		pk_fail(pk, MATE_ERR_FORMAT, "_codecs.encode is only allowed as (str, 'latin1')");
		return NULL;
	}
	s = (const uint8_t *)a[0]->u.str.s;
	len = a[0]->u.str.len;
	if ((o = new_str(pk, PK_BYTES, s, len)) == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < 0x80) {
			o->u.str.s[out++] = (char)s[i];
		} else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < len) {
			o->u.str.s[out++] = (char)(((s[i] & 0x03) << 6) | (s[i + 1] & 0x3f));
			i++;
		} else {
			pk_fail(pk, MATE_ERR_FORMAT, "_codecs.encode: text is not latin-1");
			return NULL;
		}
	}
	o->u.str.s[out] = '\0';
	o->u.str.len = out;
	return o;
}

static pobj *
make_set(struct pk *pk, pobj **a, size_t n)
{
	if (n == 0)
		return new_seq(pk, PK_SET, NULL, 0);
	if (n == 1 && (a[0]->kind == PK_LIST || a[0]->kind == PK_TUPLE || a[0]->kind == PK_SET))
		return new_seq(pk, PK_SET, a[0]->u.seq.items, a[0]->u.seq.n);
	pk_fail(pk, MATE_ERR_FORMAT, "bad arguments to set");
	return NULL;
}

/* Applies an allowlisted callable to a tuple of arguments. */
static pobj *
apply(struct pk *pk, const pobj *fn, pobj *args)
{
	pobj **a = args->u.seq.items, *o;
	size_t n = args->u.seq.n;

	switch (fn->action) {
	case G_TENSOR_V1: return rebuild_tensor(pk, 1, a, n);
	case G_TENSOR_V2: return rebuild_tensor(pk, 2, a, n);
	case G_TENSOR_V3: return rebuild_tensor(pk, 3, a, n);
	case G_PARAMETER: return rebuild_parameter(pk, 0, a, n);
	case G_PARAMETER_STATE: return rebuild_parameter(pk, 1, a, n);
	case G_FROM_TYPE_V2: return rebuild_from_type(pk, a, n);
	case G_DEVICE: return make_device(pk, a, n);
	case G_ENCODE: return make_bytes(pk, a, n);
	case G_SET: return make_set(pk, a, n);
	case G_ODICT:
		if (n != 0)
			break;
		if ((o = new_seq(pk, PK_DICT, NULL, 0)) != NULL)
			o->ordered = 1;
		return o;
	case G_SIZE:
		if (n != 1 || a[0]->kind != PK_TUPLE)
			break;
		for (size_t i = 0; i < a[0]->u.seq.n; i++)
			if (a[0]->u.seq.items[i]->kind != PK_INT)
				goto bad;
		return a[0];
	case G_BYTES:
		if (n != 0)
			break;
		return new_str(pk, PK_BYTES, "", 0);
	default:
		pk_fail(pk, MATE_ERR_FORMAT, "global '%s' cannot be called", fn->u.str.s);
		return NULL;
	}
bad:
	pk_fail(pk, MATE_ERR_FORMAT, "bad arguments to '%s'", fn->u.str.s);
	return NULL;
}

/* REDUCE (callable, args) and NEWOBJ (class, args). */
static int
op_reduce(struct pk *pk, int newobj)
{
	pobj *args = pop(pk), *fn = args ? pop(pk) : NULL;

	if (fn == NULL)
		return -1;
	if (fn->kind != PK_GLOBAL)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s of a %s", newobj ? "NEWOBJ" : "REDUCE",
		    kind_name(fn));
	if (args->kind != PK_TUPLE)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s arguments are a %s, not a tuple",
		    newobj ? "NEWOBJ" : "REDUCE", kind_name(args));
	if (newobj && fn->action != G_ODICT && fn->action != G_SET && fn->action != G_SIZE)
		return pk_fail(pk, MATE_ERR_FORMAT, "NEWOBJ of '%s' is not allowed", fn->u.str.s);
	return push(pk, apply(pk, fn, args));
}

/* BUILD: only an OrderedDict's attributes (state_dict's _metadata), dropped. */
static int
op_build(struct pk *pk)
{
	pobj *state = pop(pk), *inst = state ? top(pk) : NULL;

	if (inst == NULL)
		return -1;
	if (inst->kind != PK_DICT || !inst->ordered)
		return pk_fail(pk, MATE_ERR_FORMAT, "BUILD of a %s is not allowed", kind_name(inst));
	if (state->kind != PK_DICT)
		return pk_fail(pk, MATE_ERR_FORMAT, "BUILD state is a %s, not a dict", kind_name(state));
	return 0;
}

/* ---- containers ---------------------------------------------------------------- */

static int
op_tuple(struct pk *pk, int n)
{
	size_t at = 0;
	pobj *o;

	if (n < 0) {
		if (pop_mark(pk, &at) != 0)
			return -1;
	} else {
		if (pk->sn - pk->fence < (size_t)n)
			return pk_fail(pk, MATE_ERR_FORMAT, "stack underflow");
		at = pk->sn - (size_t)n;
	}
	o = new_seq(pk, PK_TUPLE, at < pk->sn ? pk->stack + at : NULL, pk->sn - at);
	pk->sn = at;
	return push(pk, o);
}

static int
hashable(struct pk *pk, const pobj *k)
{
	if (k->kind == PK_LIST || k->kind == PK_DICT || k->kind == PK_SET)
		return pk_fail(pk, MATE_ERR_FORMAT, "unhashable dict key (%s)", kind_name(k));
	return 0;
}

/* Moves stack[from..sn) into the container at stack[from - 1]. */
static int
fill(struct pk *pk, size_t from, enum pk_kind want, const char *op)
{
	pobj *c;

	if (from == 0 || from - 1 < pk->fence || from > pk->sn)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s: stack underflow", op);
	c = pk->stack[from - 1];
	if (c->kind != want)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s on a %s", op, kind_name(c));
	if (want == PK_DICT && (pk->sn - from) % 2 != 0)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s: odd number of items", op);
	for (size_t i = from; i < pk->sn; i++) {
		if (want == PK_DICT && (i - from) % 2 == 0 && hashable(pk, pk->stack[i]) != 0)
			return -1;
		if (want == PK_SET && hashable(pk, pk->stack[i]) != 0)
			return -1;
		if (seq_add(pk, c, pk->stack[i]) != 0)
			return -1;
	}
	pk->sn = from;
	return 0;
}

static int
op_fill_mark(struct pk *pk, enum pk_kind want, const char *op)
{
	size_t at = 0;

	if (pop_mark(pk, &at) != 0)
		return -1;
	return fill(pk, at, want, op);
}

static int
op_fill(struct pk *pk, size_t n, enum pk_kind want, const char *op)
{
	if (pk->sn < n)
		return pk_fail(pk, MATE_ERR_FORMAT, "%s: stack underflow", op);
	return fill(pk, pk->sn - n, want, op);
}

/* ---- the opcode loop ------------------------------------------------------------- */

static int
push_empty(struct pk *pk, enum pk_kind kind)
{
	return push(pk, new_seq(pk, kind, NULL, 0));
}

static int
op_memo(struct pk *pk, int nbytes, int get)
{
	uint64_t key;

	if (take_uint(pk, nbytes, &key) != 0)
		return -1;
	return get ? memo_get(pk, (uint32_t)key) : memo_put(pk, (uint32_t)key);
}

static int
op_int(struct pk *pk, int nbytes)
{
	uint64_t v;

	if (take_uint(pk, nbytes, &v) != 0)
		return -1;
	return push(pk, new_int(pk, nbytes == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v));
}

static int
op_misc(struct pk *pk, uint8_t op)
{
	uint64_t v;

	switch (op) {
	case 0x80:      /* PROTO */
		if (take_uint(pk, 1, &v) != 0)
			return -1;
		if (v > 5)
			return pk_fail(pk, MATE_ERR_UNSUPPORTED, "pickle protocol %llu", (unsigned long long)v);
		return 0;
	case 0x95:      /* FRAME */
		if (take_uint(pk, 8, &v) != 0)
			return -1;
		if (v > (uint64_t)(pk->end - pk->p))
			return pk_fail(pk, MATE_ERR_FORMAT, "FRAME longer than the input");
		return 0;
	case 0x94:      /* MEMOIZE */
		if (pk->memo_n >= UINT32_MAX)
			return pk_fail(pk, MATE_ERR_LIMIT, "memo full");
		return memo_put(pk, (uint32_t)pk->memo_n);
	default:
		return pk_fail(pk, MATE_ERR_FORMAT, "unsupported opcode 0x%02x ('%c')", op,
		    op >= 0x20 && op < 0x7f ? op : '?');
	}
}

/* Runs one opcode; 1 at STOP, 0 to go on, -1 on error. */
static int
step(struct pk *pk, uint8_t op)
{
	switch (op) {
	case '.': return 1;                                   /* STOP */
	case '(': return push_mark(pk);                       /* MARK */
	case '}': return push_empty(pk, PK_DICT);             /* EMPTY_DICT */
	case ']': return push_empty(pk, PK_LIST);             /* EMPTY_LIST */
	case ')': return push_empty(pk, PK_TUPLE);            /* EMPTY_TUPLE */
	case 0x8f: return push_empty(pk, PK_SET);             /* EMPTY_SET */
	case 't': return op_tuple(pk, -1);                    /* TUPLE */
	case 0x85: return op_tuple(pk, 1);                    /* TUPLE1 */
	case 0x86: return op_tuple(pk, 2);                    /* TUPLE2 */
	case 0x87: return op_tuple(pk, 3);                    /* TUPLE3 */
	case 's': return op_fill(pk, 2, PK_DICT, "SETITEM");
	case 'u': return op_fill_mark(pk, PK_DICT, "SETITEMS");
	case 'a': return op_fill(pk, 1, PK_LIST, "APPEND");
	case 'e': return op_fill_mark(pk, PK_LIST, "APPENDS");
	case 0x90: return op_fill_mark(pk, PK_SET, "ADDITEMS");
	case 'X': return op_string(pk, 4, PK_STR);            /* BINUNICODE */
	case 0x8c: return op_string(pk, 1, PK_STR);           /* SHORT_BINUNICODE */
	case 'U': return op_string(pk, 1, PK_STR);            /* SHORT_BINSTRING */
	case 'B': return op_string(pk, 4, PK_BYTES);          /* BINBYTES */
	case 'C': return op_string(pk, 1, PK_BYTES);          /* SHORT_BINBYTES */
	case 'K': return op_int(pk, 1);                       /* BININT1 */
	case 'M': return op_int(pk, 2);                       /* BININT2 */
	case 'J': return op_int(pk, 4);                       /* BININT */
	case 0x8a: return op_long1(pk);                       /* LONG1 */
	case 'G': return op_binfloat(pk);                     /* BINFLOAT */
	case 'N': return push(pk, &pk->none);                 /* NONE */
	case 0x88: return push(pk, &pk->yes);                 /* NEWTRUE */
	case 0x89: return push(pk, &pk->no);                  /* NEWFALSE */
	case 'c': return op_global(pk);                       /* GLOBAL */
	case 'R': return op_reduce(pk, 0);                    /* REDUCE */
	case 0x81: return op_reduce(pk, 1);                   /* NEWOBJ */
	case 'b': return op_build(pk);                        /* BUILD */
	case 'Q': return op_persid(pk);                       /* BINPERSID */
	case 'q': return op_memo(pk, 1, 0);                   /* BINPUT */
	case 'r': return op_memo(pk, 4, 0);                   /* LONG_BINPUT */
	case 'h': return op_memo(pk, 1, 1);                   /* BINGET */
	case 'j': return op_memo(pk, 4, 1);                   /* LONG_BINGET */
	default: return op_misc(pk, op);
	}
}

/* ---- the result tree ---------------------------------------------------------------- */

static mate_value *to_value(struct pk *pk, const pobj *o, int depth);

static mate_value *
seq_value(struct pk *pk, const pobj *o, int depth)
{
	mate_value *v;
	size_t step_by = o->kind == PK_DICT ? 2 : 1;

	if (o->kind == PK_DICT)
		v = o->ordered ? mate_value_ordered_dict() : mate_value_dict();
	else
		v = o->kind == PK_TUPLE ? mate_value_tuple() : mate_value_list();
	if (v == NULL) {
		nomem(pk);
		return NULL;
	}
	for (size_t i = 0; i + step_by <= o->u.seq.n; i += step_by) {
		mate_value *item = to_value(pk, o->u.seq.items[i + step_by - 1], depth + 1);
		mate_value *key = NULL;
		int rc;

		if (item != NULL && step_by == 2)
			key = to_value(pk, o->u.seq.items[i], depth + 1);
		if (item == NULL || (step_by == 2 && key == NULL)) {
			mate_value_free(item);
			mate_value_free(v);
			return NULL;
		}
		rc = step_by == 2 ? mate_value_set(v, key, item) : mate_value_append(v, item);
		if (rc != MATE_OK) {
			mate_value_free(v);
			nomem(pk);
			return NULL;
		}
	}
	return v;
}

static mate_value *
storage_value(const pobj *o)
{
	mate_tensor t;
	int64_t numel = (int64_t)(o->u.store->nbytes / mate_dtype_size(o->dt));

	mate_tensor_init(&t, o->dt, 1, &numel, NULL, NULL);
	return mate_value_tensor(&t, o->u.store->st);
}

/* Converts one object (a copy each time it is reached). */
static mate_value *
to_value(struct pk *pk, const pobj *o, int depth)
{
	mate_value *v;

	if (depth > PK_MAX_DEPTH) {
		pk_fail(pk, MATE_ERR_LIMIT, "values nested deeper than %d (or a cycle)", PK_MAX_DEPTH);
		return NULL;
	}
	if (spend(pk, mate_value_node_bytes()) != 0)
		return NULL;
	switch (o->kind) {
	case PK_NONE: v = mate_value_none(); break;
	case PK_BOOL: v = mate_value_bool(o->u.i != 0); break;
	case PK_INT: v = mate_value_int(o->u.i); break;
	case PK_FLOAT: v = mate_value_float(o->u.f); break;
	case PK_STR:
	case PK_BYTES:
		if (spend(pk, o->u.str.len + 1) != 0)
			return NULL;
		v = o->kind == PK_STR ? mate_value_str(o->u.str.s, o->u.str.len) :
		    mate_value_bytes(o->u.str.s, o->u.str.len);
		break;
	case PK_LIST:
	case PK_TUPLE:
	case PK_DICT:
	case PK_SET:
		if (spend(pk, o->u.seq.n * (o->kind == PK_DICT ? MATE_VALUE_DICT_ITEM_BYTES :
		    MATE_VALUE_ITEM_BYTES)) != 0)
			return NULL;
		return seq_value(pk, o, depth);
	case PK_TENSOR: v = mate_value_tensor(&o->u.tensor->t, o->u.tensor->st); break;
	case PK_STORAGE: v = storage_value(o); break;
	case PK_DTYPE: v = mate_value_dtype(o->dt); break;
	case PK_DEVICE:
	case PK_GLOBAL:
		/* the type and the repr are copied */
		if (spend(pk, o->u.str.len + 32) != 0)
			return NULL;
		v = o->kind == PK_DEVICE ? mate_value_object("torch.device", o->u.str.s) :
		    mate_value_object("global", o->u.str.s);
		break;
	default: v = mate_value_object("global", o->u.str.s); break;
	}
	if (v == NULL)
		nomem(pk);
	return v;
}

/* ---- entry point ----------------------------------------------------------------------- */

static void
pk_free(struct pk *pk)
{
	struct pk_slab *s, *snext;
	struct pk_chunk *c, *cnext;

	for (s = pk->slabs; s != NULL; s = snext) {
		snext = s->next;
		free(s);
	}
	for (c = pk->chunks; c != NULL; c = cnext) {
		cnext = c->next;
		free(c);
	}
	for (size_t i = 0; i < pk->nstores; i++) {
		mate_storage_unref(pk->stores[i]->st);
		free(pk->stores[i]->key);
		free(pk->stores[i]);
	}
	free(pk->stores);
	free(pk->store_index);
	free(pk->stack);
	free(pk->marks);
	free(pk->memo);
}

mate_value *
mate_pickle_load(const void *buf, size_t len, mate_storage_loader load_storage,
    void *ctx, mate_error *err)
{
	static const uint8_t empty[1];
	struct pk pk;
	mate_error local;
	mate_value *result = NULL;
	int rc = 0;

	memset(&pk, 0, sizeof(pk));
	mate_error_clear(&local);
	pk.err = err != NULL ? err : &local;
	mate_error_clear(pk.err);
	pk.start = pk.p = buf != NULL ? buf : empty;
	pk.end = pk.start + (buf != NULL ? len : 0);
	pk.load = load_storage;
	pk.ctx = ctx;
	pk.none.kind = PK_NONE;
	pk.yes.kind = pk.no.kind = PK_BOOL;
	pk.yes.u.i = 1;
	/* a pickle's objects cost memory in proportion to the pickle (a real one's tree is a few
	 * times its bytes), never more than the cap: a 1 KB billion laughs stops at 16 MiB */
	pk.budget = PICKLE_BUDGET_BASE + PICKLE_BUDGET_PER_BYTE * (uint64_t)(pk.end - pk.start);
	if (pk.budget > mate_memory_cap())
		pk.budget = mate_memory_cap();
	while (rc == 0) {
		pk.op = (size_t)(pk.p - pk.start);
		if (pk.p == pk.end) {
			pk_fail(&pk, MATE_ERR_FORMAT, "truncated: no STOP opcode");
			break;
		}
		rc = step(&pk, *pk.p++);
	}
	if (rc == 1) {
		pobj *o = pop(&pk);
		if (o != NULL)
			result = to_value(&pk, o, 0);
	}
	pk_free(&pk);
	return result;
}
