/* dump_nonfinite.c: the NaN and infinity scan of a dump list: each tensor file streamed once, on threads, in bounded memory; the call where a NaN was born. */
#include "mate_private.h"
#include "dump_nonfinite.h"
#include "dump_private.h"
#include "parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Element classes. */
enum { NF_FINITE, NF_NAN, NF_POSINF, NF_NEGINF };

/* ---- dtypes ---------------------------------------------------------------------------- */

static int
nf_dtype(mate_dtype dt)
{
	switch (dt) {
	case MATE_F16: case MATE_BF16: case MATE_F32: case MATE_F64:
	case MATE_F8_E4M3FN: case MATE_F8_E5M2: case MATE_F8_E4M3FNUZ: case MATE_F8_E5M2FNUZ:
	case MATE_F8_E8M0FNU: case MATE_C32: case MATE_C64: case MATE_C128:
		return 1;
	default:
		return 0;       /* integers and bool hold no NaN */
	}
}

static uint16_t
ld16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint32_t
ld32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t
ld64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* An IEEE-style value whose exponent is all ones: NaN when its mantissa is not zero. */
#define IEEE_CLASS(x, expm, mantm, signm) \
	(((x) & (expm)) != (expm) ? NF_FINITE : ((x) & (mantm)) ? NF_NAN : \
	    ((x) & (signm)) ? NF_NEGINF : NF_POSINF)

/* The class of one real element of dt at p. */
static int
classify_real(mate_dtype dt, const unsigned char *p)
{
	switch (dt) {
	case MATE_F32: {
		uint32_t x = ld32(p);
		return IEEE_CLASS(x, 0x7f800000u, 0x007fffffu, 0x80000000u);
	}
	case MATE_BF16: {
		uint16_t x = ld16(p);
		return IEEE_CLASS(x, 0x7f80u, 0x007fu, 0x8000u);
	}
	case MATE_F16: {
		uint16_t x = ld16(p);
		return IEEE_CLASS(x, 0x7c00u, 0x03ffu, 0x8000u);
	}
	case MATE_F64: {
		uint64_t x = ld64(p);
		return IEEE_CLASS(x, 0x7ff0000000000000ull, 0x000fffffffffffffull,
		    0x8000000000000000ull);
	}
	case MATE_F8_E5M2:
		return IEEE_CLASS(*p, 0x7cu, 0x03u, 0x80u);
	case MATE_F8_E4M3FN:        /* no infinity; NaN is S.1111.111 */
		return (*p & 0x7f) == 0x7f ? NF_NAN : NF_FINITE;
	case MATE_F8_E4M3FNUZ:      /* the one NaN is the negative zero's pattern */
	case MATE_F8_E5M2FNUZ:
		return *p == 0x80 ? NF_NAN : NF_FINITE;
	case MATE_F8_E8M0FNU:
		return *p == 0xff ? NF_NAN : NF_FINITE;
	default:
		return NF_FINITE;
	}
}

/* A complex element is NaN when a part is, else infinite when a part is. */
static int
classify(mate_dtype dt, const unsigned char *p)
{
	mate_dtype part = dt == MATE_C32 ? MATE_F16 : dt == MATE_C64 ? MATE_F32 :
	    dt == MATE_C128 ? MATE_F64 : MATE_DTYPE_INVALID;
	int re, im;

	if (part == MATE_DTYPE_INVALID)
		return classify_real(dt, p);
	re = classify_real(part, p);
	im = classify_real(part, p + mate_dtype_size(part));
	if (re == NF_NAN || im == NF_NAN)
		return NF_NAN;
	return re != NF_FINITE ? re : im;
}

/* Whether any word of nbytes at p (a whole number of elements) has, in some
 * lane, its exponent field m all ones: (w & m) + a carries into the lane's
 * top bit t only then, and no lane's sum carries into the next. The pass
 * every byte goes through: 128 bytes a step in four accumulators, in the
 * compiler's vector extension (SSE2 or AVX2), branch-free. */
typedef uint64_t nf_v4 __attribute__((vector_size(32)));

/* The pass, inlined into a plain and (x86-64) an AVX2 copy; any_exp_ones()
 * picks one by the CPU, once. (Not target_clones: its ifunc resolver is a
 * global symbol of libmate.a that no header declares.) */
static inline __attribute__((always_inline)) int
exp_ones_body(const unsigned char *p, size_t nbytes, uint64_t m, uint64_t a, uint64_t t)
{
	nf_v4 vm = { m, m, m, m }, va = { a, a, a, a }, acc0 = { 0, 0, 0, 0 }, acc1 = acc0,
	    acc2 = acc0, acc3 = acc0;
	uint64_t acc = 0, w;
	size_t i = 0;

	for (; i + 128 <= nbytes; i += 128) {
		nf_v4 x0, x1, x2, x3;

		memcpy(&x0, p + i, 32);
		memcpy(&x1, p + i + 32, 32);
		memcpy(&x2, p + i + 64, 32);
		memcpy(&x3, p + i + 96, 32);
		acc0 |= (x0 & vm) + va;
		acc1 |= (x1 & vm) + va;
		acc2 |= (x2 & vm) + va;
		acc3 |= (x3 & vm) + va;
	}
	acc0 |= acc1 | acc2 | acc3;
	acc = acc0[0] | acc0[1] | acc0[2] | acc0[3];
	for (; i + 8 <= nbytes; i += 8) {
		memcpy(&w, p + i, 8);
		acc |= (w & m) + a;
	}
	if (i < nbytes) {       /* whole elements of a dtype narrower than 8 bytes; zeros are finite */
		w = 0;
		memcpy(&w, p + i, nbytes - i);
		acc |= (w & m) + a;
	}
	return (acc & t) != 0;
}

static int
exp_ones_plain(const unsigned char *p, size_t nbytes, uint64_t m, uint64_t a, uint64_t t)
{
	return exp_ones_body(p, nbytes, m, a, t);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static int
exp_ones_avx2(const unsigned char *p, size_t nbytes, uint64_t m, uint64_t a, uint64_t t)
{
	return exp_ones_body(p, nbytes, m, a, t);
}
#endif

static int
any_exp_ones(const unsigned char *p, size_t nbytes, uint64_t m, uint64_t a, uint64_t t)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int avx2 = -1;   /* -1: not asked yet */
	int have = __atomic_load_n(&avx2, __ATOMIC_RELAXED);

	if (have < 0) {
		__builtin_cpu_init();
		have = __builtin_cpu_supports("avx2") != 0;
		__atomic_store_n(&avx2, have, __ATOMIC_RELAXED);
	}
	if (have)
		return exp_ones_avx2(p, nbytes, m, a, t);
#endif
	return exp_ones_plain(p, nbytes, m, a, t);
}

/* Whether any of n elements of dt at p is not finite. */
static int
any_nonfinite(mate_dtype dt, const unsigned char *p, size_t n)
{
	switch (dt) {
	case MATE_F16:
	case MATE_C32:
		return any_exp_ones(p, n * mate_dtype_size(dt), 0x7c007c007c007c00ull,
		    0x0400040004000400ull, 0x8000800080008000ull);
	case MATE_BF16:
		return any_exp_ones(p, n * 2, 0x7f807f807f807f80ull, 0x0080008000800080ull,
		    0x8000800080008000ull);
	case MATE_F32:
	case MATE_C64:
		return any_exp_ones(p, n * mate_dtype_size(dt), 0x7f8000007f800000ull,
		    0x0080000000800000ull, 0x8000000080000000ull);
	case MATE_F64:
	case MATE_C128:
		return any_exp_ones(p, n * mate_dtype_size(dt), 0x7ff0000000000000ull,
		    0x0010000000000000ull, 0x8000000000000000ull);
	case MATE_F8_E4M3FN:    /* S.1111.111 */
		return any_exp_ones(p, n, 0x7f7f7f7f7f7f7f7full, 0x0101010101010101ull,
		    0x8080808080808080ull);
	case MATE_F8_E5M2:
		return any_exp_ones(p, n, 0x7c7c7c7c7c7c7c7cull, 0x0404040404040404ull,
		    0x8080808080808080ull);
	case MATE_F8_E4M3FNUZ:
	case MATE_F8_E5M2FNUZ:
		return memchr(p, 0x80, n) != NULL;
	case MATE_F8_E8M0FNU:
		return memchr(p, 0xff, n) != NULL;
	default:
		return 0;
	}
}

/* ---- one tensor file ---------------------------------------------------------------- */

/* One tensor of the file being read. */
struct view {
	const mate_storage *st;
	char *key;                  /* copied: the file's tree goes before it is kept */
	mate_tensor t;
	size_t es;                  /* element size */
	int64_t numel, extent;      /* elements; storage elements up to its last */
	int contiguous;
	int64_t nan, posinf, neginf, first;
	unsigned char *map;         /* non-contiguous views: 2 bits per storage element of
	                               [offset, extent), made at the first non-finite one */
	size_t order;               /* place in the file */
};

struct file_scan {
	struct view *v;
	size_t nv;
	uint64_t bytes;
};

static int
by_storage(const void *a, const void *b)
{
	const struct view *x = a, *y = b;

	if (x->st != y->st)
		return (uintptr_t)x->st < (uintptr_t)y->st ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int
by_order(const void *a, const void *b)
{
	const struct view *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/* The file's floating tensors, checked against their storages. */
static int
fs_begin(void *ctx, const mate_value *tensors, mate_error *err)
{
	struct file_scan *fs = ctx;
	size_t n = mate_value_len(tensors);

	if ((fs->v = calloc(n > 0 ? n : 1, sizeof(*fs->v))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const mate_value *item = mate_value_item(tensors, i);
		const char *key = mate_value_get_str(mate_value_key(tensors, i), NULL);
		struct view *w = &fs->v[fs->nv];
		const mate_tensor *t;

		if (key == NULL || mate_value_kind_of(item) != MATE_V_TENSOR)
			continue;
		t = mate_value_get_tensor(item);
		if (!nf_dtype(t->dtype))
			continue;
		w->st = mate_value_get_storage(item);
		if ((w->key = strdup(key)) == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		w->order = fs->nv++;    /* from here the caller frees its key */
		w->t = *t;
		w->es = mate_dtype_size(t->dtype);
		w->numel = mate_tensor_numel(t);
		w->extent = mate_tensor_storage_extent(t);
		w->contiguous = mate_tensor_is_contiguous(t);
		w->first = -1;
		/* an empty view (extent == offset) is in no chunk's range */
		if (w->st == NULL || w->numel < 0 || w->extent < 0 ||
		    (uint64_t)w->extent > mate_storage_size(w->st) / w->es)
			return mate_set_error(err, MATE_ERR_FORMAT, "tensor '%.100s' does not fit "
			    "its storage", key);
	}
	if (fs->nv > 1)
		qsort(fs->v, fs->nv, sizeof(*fs->v), by_storage);
	return 0;
}

/* Counts one non-finite element at row-major index idx. */
static void
count(struct view *w, int c, int64_t idx)
{
	if (c == NF_NAN)
		w->nan++;
	else if (c == NF_POSINF)
		w->posinf++;
	else
		w->neginf++;
	if (w->first < 0 || idx < w->first)
		w->first = idx;
}

/* Elements a chunk that holds a non-finite one is searched by, the vector pass first. */
#define NF_BLOCK 256

/* Storage elements [a, b) of the chunk at p (element a at p) for view w. */
static int
scan_view(struct view *w, int64_t a, int64_t b, const unsigned char *p,
    mate_error *err)
{
	int64_t lo = w->t.offset;
	int64_t hi = w->contiguous ? w->t.offset + w->numel : w->extent;
	int64_t s0 = a > lo ? a : lo, s1 = b < hi ? b : hi;
	const unsigned char *q;

	if (s0 >= s1)
		return 0;
	q = p + (size_t)(s0 - a) * w->es;
	if (!any_nonfinite(w->t.dtype, q, (size_t)(s1 - s0)))
		return 0;
	if (!w->contiguous && w->map == NULL) {
		uint64_t bytes = ((uint64_t)(w->extent - w->t.offset) + 3) / 4;

		if (bytes > mate_memory_cap())
			return mate_set_error(err, MATE_ERR_LIMIT, "tensor '%.100s': mapping the "
			    "non-finite elements of its view over %lld storage elements would take "
			    "more than the memory limit of %llu MiB (MATE_MAX_MEMORY raises it)",
			    w->key, (long long)(w->extent - w->t.offset),
			    (unsigned long long)(mate_memory_cap() >> 20));
		if ((w->map = calloc(1, (size_t)bytes)) == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	/* element by element only in the blocks that hold one */
	for (int64_t b0 = s0; b0 < s1; b0 += NF_BLOCK, q += NF_BLOCK * w->es) {
		int64_t b1 = s1 - b0 < NF_BLOCK ? s1 : b0 + NF_BLOCK;
		const unsigned char *e = q;

		if (!any_nonfinite(w->t.dtype, q, (size_t)(b1 - b0)))
			continue;
		for (int64_t s = b0; s < b1; s++, e += w->es) {
			int c = classify(w->t.dtype, e);

			if (c == NF_FINITE)
				continue;
			if (w->contiguous)
				count(w, c, s - w->t.offset);
			else {
				uint64_t at = (uint64_t)(s - w->t.offset);
				w->map[at / 4] |= (unsigned char)(c << (2 * (at % 4)));
			}
		}
	}
	return 0;
}

static int
fs_chunk(void *ctx, const mate_storage *st, uint64_t off, const void *p, size_t n,
    mate_error *err)
{
	struct file_scan *fs = ctx;
	size_t lo = 0, hi = fs->nv;

	fs->bytes += n;
	while (lo < hi) {       /* the first view of st */
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)fs->v[mid].st < (uintptr_t)st)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < fs->nv && fs->v[i].st == st; i++) {
		struct view *w = &fs->v[i];
		/* whole elements only; chunks of a storage start on multiples of 1 MiB */
		int64_t a = (int64_t)((off + w->es - 1) / w->es), b = (int64_t)((off + n) / w->es);
		const unsigned char *q = (const unsigned char *)p + ((uint64_t)a * w->es - off);

		if (scan_view(w, a, b, q, err) != 0)
			return -1;
	}
	return 0;
}

/* A non-contiguous view, once its storage was read: its elements in
 * row-major order, each counted as often as the view holds it. */
static void
walk_map(struct view *w)
{
	int64_t idx[MATE_MAX_DIMS] = { 0 }, pos = 0;

	for (int64_t i = 0; i < w->numel; i++) {
		uint64_t at = (uint64_t)pos;
		int c = (w->map[at / 4] >> (2 * (at % 4))) & 3, d;

		if (c != NF_FINITE)
			count(w, c, i);
		for (d = w->t.ndim - 1; d >= 0; d--) {   /* the odometer */
			pos += w->t.stride[d];
			if (++idx[d] < w->t.shape[d])
				break;
			pos -= w->t.stride[d] * w->t.shape[d];
			idx[d] = 0;
		}
	}
}

/* ---- one call -------------------------------------------------------------------------- */

struct call_ctx {
	struct mate_nf_call *c;
	char problem[1024];
	size_t plen;
	size_t cap;                 /* of c->t */
	uint64_t bytes;
	int failed_nomem;
};

static void problem(struct call_ctx *cc, const char *fmt, ...) MATE_PRINTF(2, 3);

static void
problem(struct call_ctx *cc, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (cc->plen + 3 >= sizeof(cc->problem))
		return;
	if (cc->plen > 0) {
		memcpy(cc->problem + cc->plen, "; ", 2);
		cc->plen += 2;
	}
	va_start(ap, fmt);
	k = vsnprintf(cc->problem + cc->plen, sizeof(cc->problem) - cc->plen, fmt, ap);
	va_end(ap);
	if (k > 0)
		cc->plen += (size_t)k < sizeof(cc->problem) - cc->plen ? (size_t)k :
		    sizeof(cc->problem) - cc->plen - 1;
}

static int
keep(struct call_ctx *cc, const struct view *w, int kind)
{
	struct mate_nf_call *c = cc->c;
	struct mate_nf_tensor *t, *grown;

	if (c->nt == cc->cap) {
		size_t cap = cc->cap == 0 ? 4 : 2 * cc->cap;
		if ((grown = realloc(c->t, cap * sizeof(*c->t))) == NULL)
			return -1;
		c->t = grown;
		cc->cap = cap;
	}
	t = &c->t[c->nt];
	memset(t, 0, sizeof(*t));
	if ((t->key = strdup(w->key)) == NULL)
		return -1;
	c->nt++;
	t->kind = kind;
	t->dtype = w->t.dtype;
	t->ndim = w->t.ndim;
	memcpy(t->shape, w->t.shape, sizeof(t->shape));
	t->numel = w->numel;
	t->nan = w->nan;
	t->posinf = w->posinf;
	t->neginf = w->neginf;
	t->first = w->first;
	if (kind == MATE_NF_INPUT)
		c->inputs_nonfinite++;
	else
		c->outputs_nonfinite++;
	return 0;
}

/* Scans dir/<stem>.{pt,safetensors}, the recorded format's first.
 * @return 1 when read whole, 0 when it is a problem (noted), -1 out of memory. */
static int
scan_file(struct call_ctx *cc, const char *stem, int kind, int expected)
{
	const struct mate_dump_info *info = cc->c->info;
	struct file_scan fs;
	struct mate_tensor_stream s = { fs_begin, fs_chunk, &fs };
	char path[4200];
	const char *ext = NULL, *msg;
	mate_error err;
	int fd = -ENOENT, rc, ok = 1;
	size_t pl;

	for (int i = 0; i < 2 && fd == -ENOENT; i++) {
		ext = mate_dump_tensor_ext(info->format, i);
		snprintf(path, sizeof(path), "%s/%s%s", info->path, stem, ext);
		fd = mate_open_regular(AT_FDCWD, path, 1);
	}
	if (fd == -ENOENT) {
		if (expected > 0)
			problem(cc, "no %s.pt or %s.safetensors", stem, stem);
		return expected > 0 ? 0 : 1;
	}
	memset(&fs, 0, sizeof(fs));
	mate_error_clear(&err);
	rc = strcmp(ext, ".pt") == 0 ? mate_pt_read_stream(fd, path, &s, &err) :
	    mate_safetensors_read_stream(fd, path, &s, &err);
	cc->bytes += fs.bytes;
	if (rc != MATE_OK) {
		if (rc == MATE_ERR_NOMEM)
			cc->failed_nomem = 1;
		msg = err.message;
		pl = strlen(path);
		if (strncmp(msg, path, pl) == 0 && strncmp(msg + pl, ": ", 2) == 0)
			msg += pl + 2;      /* the caller names the dump */
		problem(cc, "%s%s: %s", stem, ext, msg);
		ok = 0;
	}
	if (fs.nv > 1)
		qsort(fs.v, fs.nv, sizeof(*fs.v), by_order);
	for (size_t i = 0; i < fs.nv; i++) {
		struct view *w = &fs.v[i];

		if (ok && w->map != NULL)
			walk_map(w);
		if (ok && w->first >= 0 && keep(cc, w, kind) != 0)
			cc->failed_nomem = 1;
		free(w->map);
		free(w->key);
	}
	free(fs.v);
	return ok;
}

static void
scan_call(struct mate_nf_call *c, uint64_t *bytes, int *nomem)
{
	const struct mate_dump_info *info = c->info;
	struct call_ctx cc;

	memset(&cc, 0, sizeof(cc));
	cc.c = c;
	if (info->status == MATE_DUMP_INCOMPLETE)
		return;     /* no record: the list says so */
	c->inputs_known = scan_file(&cc, "inputs", MATE_NF_INPUT, info->n_inputs) == 1;
	if (info->status == MATE_DUMP_COMPLETED) {
		scan_file(&cc, "outputs", MATE_NF_OUTPUT, info->n_outputs);
		scan_file(&cc, "inplace", MATE_NF_INPLACE, info->n_inplace);
	}
	if (cc.plen > 0 && (c->problem = strdup(cc.problem)) == NULL)
		cc.failed_nomem = 1;
	*bytes = cc.bytes;
	*nomem = cc.failed_nomem;
}

/* ---- the list, on threads ------------------------------------------------------------ */

struct job {
	struct mate_nf_scan *s;
	size_t next;                /* taken atomically */
	size_t done;                /* added atomically */
	uint64_t bytes;             /* added atomically */
	int nomem;
	pthread_mutex_t progress_lock;  /* one thread reports at a time; a busy one skips */
	void (*progress)(void *arg, size_t done, size_t total);
	void *arg;
};

static void *
worker(void *arg)
{
	struct job *j = arg;

	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED), done;
		uint64_t bytes = 0;
		int nomem = 0;

		if (i >= j->s->n)
			break;
		scan_call(&j->s->calls[i], &bytes, &nomem);
		__atomic_fetch_add(&j->bytes, bytes, __ATOMIC_RELAXED);
		done = __atomic_add_fetch(&j->done, 1, __ATOMIC_RELAXED);
		/* whichever thread finished a dump (the caller's alone stayed silent when the
		 * others took every dump: a loaded CI saw no progress line) */
		if (j->progress != NULL && pthread_mutex_trylock(&j->progress_lock) == 0) {
			j->progress(j->arg, done, j->s->n);
			pthread_mutex_unlock(&j->progress_lock);
		}
		if (nomem)
			__atomic_store_n(&j->nomem, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int
mate_dump_nonfinite(const mate_dump_list *l, int threads, struct mate_nf_scan **out,
    mate_error *err)
{
	return mate_dump_nonfinite_progress(l, threads, NULL, NULL, out, err);
}

int
mate_dump_nonfinite_progress(const mate_dump_list *l, int threads,
    void (*progress)(void *arg, size_t done, size_t total), void *arg,
    struct mate_nf_scan **out, mate_error *err)
{
	struct mate_nf_scan *s = calloc(1, sizeof(*s));
	size_t n = mate_dump_list_count(l);
	struct job j = { .s = s, .progress_lock = PTHREAD_MUTEX_INITIALIZER, .progress = progress,
	    .arg = arg };
	pthread_t *tid = NULL;
	int nt = threads > 0 ? threads : mate_parallel_threads(), started = 0;

	*out = NULL;
	if (s == NULL || (s->calls = calloc(n > 0 ? n : 1, sizeof(*s->calls))) == NULL) {
		free(s);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	s->n = n;
	for (size_t i = 0; i < n; i++)
		s->calls[i].info = mate_dump_list_get(l, i);
	if ((size_t)nt > n)
		nt = n > 0 ? (int)n : 1;
	if (nt > 1 && (tid = calloc((size_t)nt, sizeof(*tid))) != NULL)
		for (int i = 1; i < nt; i++) {
			if (pthread_create(&tid[started], NULL, worker, &j) != 0)
				break;  /* fewer threads: this one does the rest */
			started++;
		}
	worker(&j);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	s->bytes = j.bytes;
	s->origin = s->first_input = (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		struct mate_nf_call *c = &s->calls[i];

		if (c->inputs_nonfinite > 0 && s->first_input == (size_t)-1)
			s->first_input = i;
		if (c->outputs_nonfinite > 0)
			s->listed++;
		if (c->problem != NULL)
			s->problems++;
		if (c->outputs_nonfinite > 0 && c->inputs_nonfinite == 0 && c->inputs_known &&
		    s->origin == (size_t)-1) {
			s->origin = i;
			c->origin = 1;
		}
	}
	if (j.nomem) {
		mate_nf_scan_free(s);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory scanning %zu dumps", n);
	}
	*out = s;
	return MATE_OK;
}

void
mate_nf_scan_free(struct mate_nf_scan *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->calls[i].nt; k++)
			free(s->calls[i].t[k].key);
		free(s->calls[i].t);
		free(s->calls[i].problem);
	}
	free(s->calls);
	free(s);
}

void
mate_nf_index(const struct mate_nf_tensor *t, int64_t *idx)
{
	int64_t r = t->first;

	for (int d = t->ndim - 1; d >= 0; d--) {
		idx[d] = t->shape[d] > 0 ? r % t->shape[d] : 0;
		r = t->shape[d] > 0 ? r / t->shape[d] : 0;
	}
}

void
mate_nf_index_format(const struct mate_nf_tensor *t, char *buf, size_t len)
{
	int64_t idx[MATE_MAX_DIMS];
	size_t o = 0;

	mate_nf_index(t, idx);
	o += (size_t)snprintf(buf, len, "[");
	for (int d = 0; d < t->ndim && o < len; d++)
		o += (size_t)snprintf(buf + o, len - o, d ? ", %lld" : "%lld", (long long)idx[d]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}
