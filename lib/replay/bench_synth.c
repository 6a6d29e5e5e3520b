/* bench_synth.c: mate-bench's problems: a profile entry (its JSON line, or the command-line
 * form `-c FUNCTION KEY=SPEC...`) read back, inputs of its shapes made up (random, seeded;
 * index tensors valid for the call), and the call run and timed on the replay engine. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mate_private.h"
#include "mate_dump.h"
#include "dump_private.h"
#include "op_cost.h"
#include "replay_private.h"
#include "profile.h"

#define BENCH_MAX_TENSORS 64
#define BENCH_MAX_ARGS 128

struct mate_bench_entry {
	cJSON *shape;           /* {"function","module","tensors","scalars"} */
	char key[17];           /* the profile's key, or the one the shape hashes to */
};

/* Whether a shape's or stride's item is an integer from 0 to 2^63 - 1, which an int64_t
 * holds (infinities and NaN are not). */
static int
dim_ok(const cJSON *x)
{
	int64_t v;

	return cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
	    mate_double_to_i64(x->valuedouble, &v) && v >= 0;
}

/* Checks one tensor object {shape, dtype, stride, device}: sizes within the memory cap. */
static int
check_tensor(const char *key, const cJSON *t, mate_error *err)
{
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
	const cJSON *stride = cJSON_GetObjectItemCaseSensitive(t, "stride");
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
	const cJSON *d;
	mate_dtype dt;
	double extent = 1;
	int nd, i = 0;

	if (!cJSON_IsObject(t) || !cJSON_IsArray(shape) || !cJSON_IsString(dtype))
		return mate_set_error(err, MATE_ERR_FORMAT, "tensor %s: needs a shape list and a dtype", key);
	if ((dt = mate_dtype_from_name(dtype->valuestring)) == MATE_DTYPE_INVALID)
		return mate_set_error(err, MATE_ERR_FORMAT, "tensor %s: unknown dtype '%.60s'", key,
		    dtype->valuestring);
	if ((nd = cJSON_GetArraySize(shape)) > MATE_MAX_DIMS)
		return mate_set_error(err, MATE_ERR_FORMAT, "tensor %s: %d dimensions (at most %d)", key,
		    nd, MATE_MAX_DIMS);
	if (stride != NULL && !cJSON_IsNull(stride) &&
	    (!cJSON_IsArray(stride) || cJSON_GetArraySize(stride) != nd))
		return mate_set_error(err, MATE_ERR_FORMAT, "tensor %s: %d strides for %d dimensions",
		    key, cJSON_IsArray(stride) ? cJSON_GetArraySize(stride) : -1, nd);
	cJSON_ArrayForEach(d, shape) {
		const cJSON *s = cJSON_IsArray(stride) ? cJSON_GetArrayItem(stride, i) : NULL;

		/* the run casts each to int64_t: 1e300 (or 2^63) would be undefined there */
		if (!dim_ok(d) || (s != NULL && !dim_ok(s)))
			return mate_set_error(err, MATE_ERR_FORMAT, "tensor %s: dimension %d: its %s is "
			    "not an integer from 0 to 2^63 - 1", key, i, dim_ok(d) ? "stride" : "size");
		extent *= d->valuedouble;
		i++;
	}
	if (extent * (double)mate_dtype_size(dt) > (double)mate_memory_cap())
		return mate_set_error(err, MATE_ERR_LIMIT, "tensor %s: %.3g bytes, more than the "
		    "memory limit of %" PRIu64 " MiB (--max-memory or MATE_MAX_MEMORY raises it)", key,
		    extent * (double)mate_dtype_size(dt), mate_memory_cap() >> 20);
	return MATE_OK;
}

/* Takes shape (consumed): checks it and computes its key when it has none. */
static mate_bench_entry *
entry_new(cJSON *shape, const char *key, mate_error *err)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(shape, "function");
	const cJSON *mod = cJSON_GetObjectItemCaseSensitive(shape, "module");
	const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(shape, "tensors");
	const cJSON *scalars = cJSON_GetObjectItemCaseSensitive(shape, "scalars");
	const cJSON *t;
	mate_bench_entry *e;
	char *text;

	if (!cJSON_IsString(fn) || *fn->valuestring == '\0') {
		mate_set_error(err, MATE_ERR_FORMAT, "no \"function\" name");
		goto fail;
	}
	if (mod != NULL && !cJSON_IsString(mod) && !cJSON_IsNull(mod)) {
		mate_set_error(err, MATE_ERR_FORMAT, "\"module\" is not a string");
		goto fail;
	}
	if ((tensors != NULL && !cJSON_IsObject(tensors)) ||
	    (scalars != NULL && !cJSON_IsObject(scalars))) {
		mate_set_error(err, MATE_ERR_FORMAT, "\"tensors\" and \"scalars\" must be objects");
		goto fail;
	}
	if (cJSON_GetArraySize(tensors) > BENCH_MAX_TENSORS ||
	    cJSON_GetArraySize(tensors) + cJSON_GetArraySize(scalars) > BENCH_MAX_ARGS) {
		mate_set_error(err, MATE_ERR_LIMIT, "more than %d arguments", BENCH_MAX_ARGS);
		goto fail;
	}
	cJSON_ArrayForEach(t, tensors)
		if (check_tensor(t->string, t, err) != MATE_OK)
			goto fail;
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto fail;
	}
	e->shape = shape;
	if (key != NULL)
		snprintf(e->key, sizeof(e->key), "%s", key);
	else if ((text = cJSON_PrintUnformatted(shape)) != NULL) {
		mate_profile_text_key(text, e->key);
		free(text);
	}
	return e;
fail:
	cJSON_Delete(shape);
	return NULL;
}

/* The canonical shape of a profile object: function, module, tensors, scalars. */
mate_bench_entry *
mate_bench_entry_from_json(const char *text, mate_error *err)
{
	cJSON *j = cJSON_Parse(text), *shape;
	const cJSON *key;
	static const char *const fields[] = { "function", "module", "tensors", "scalars" };
	mate_bench_entry *e;

	if (j == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		mate_set_error(err, MATE_ERR_FORMAT, "not a JSON object");
		return NULL;
	}
	if ((shape = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(j);
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		cJSON *f = cJSON_DetachItemFromObjectCaseSensitive(j, fields[i]);

		if (f == NULL && i >= 2)
			f = cJSON_CreateObject();
		if (f != NULL)
			cJSON_AddItemToObject(shape, fields[i], f);
	}
	key = cJSON_GetObjectItemCaseSensitive(j, "key");
	e = entry_new(shape, cJSON_IsString(key) ? key->valuestring : NULL, err);
	cJSON_Delete(j);
	return e;
}

/* "[1,2,3]" at *p into arr (a cJSON array of numbers); advances *p. */
static int
parse_dims(const char **p, cJSON *arr)
{
	const char *s = *p;

	if (*s++ != '[')
		return -1;
	while (*s != ']') {
		char *end;
		long long v;

		if (*s < '0' || *s > '9')
			return -1;
		v = strtoll(s, &end, 10);
		if (v < 0 || v > (1LL << 53) || end == s)
			return -1;
		cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v));
		s = end;
		if (*s == ',')
			s++;
		else if (*s != ']')
			return -1;
		if (cJSON_GetArraySize(arr) > MATE_MAX_DIMS)
			return -1;
	}
	*p = s + 1;
	return 0;
}

/* A tensor SPEC (DTYPE[D0,...][@[S0,...]][:DEVICE]) as a tensor object, or NULL. */
static cJSON *
parse_tensor_spec(const char *spec)
{
	const char *br = strchr(spec, '['), *p;
	char dtname[64], tname[80];
	cJSON *t, *shape, *stride;
	int nd;

	if (br == NULL || br == spec || (size_t)(br - spec) >= sizeof(dtname))
		return NULL;
	memcpy(dtname, spec, (size_t)(br - spec));
	dtname[br - spec] = '\0';
	if (mate_dtype_from_name(dtname) == MATE_DTYPE_INVALID || strchr(dtname, '.') != NULL)
		return NULL;
	t = cJSON_CreateObject();
	shape = cJSON_AddArrayToObject(t, "shape");
	p = br;
	if (parse_dims(&p, shape) != 0)
		goto bad;
	snprintf(tname, sizeof(tname), "torch.%s", mate_dtype_name(mate_dtype_from_name(dtname)));
	cJSON_AddStringToObject(t, "dtype", tname);
	stride = cJSON_AddArrayToObject(t, "stride");
	nd = cJSON_GetArraySize(shape);
	if (*p == '@') {
		p++;
		if (parse_dims(&p, stride) != 0 || cJSON_GetArraySize(stride) != nd)
			goto bad;
	} else {
		double s = 1;
		cJSON *d;

		for (int i = nd - 1; i >= 0; i--) {
			cJSON_InsertItemInArray(stride, 0, cJSON_CreateNumber(s));
			d = cJSON_GetArrayItem(shape, i);
			s *= d->valuedouble > 1 ? d->valuedouble : 1;
		}
	}
	if (*p == ':' && p[1] != '\0')
		cJSON_AddStringToObject(t, "device", p + 1);
	else if (*p == '\0')
		cJSON_AddStringToObject(t, "device", "cpu");
	else
		goto bad;
	return t;
bad:
	cJSON_Delete(t);
	return NULL;
}

/* The command-line form: module (NULL: none), function, and KEY=SPEC words. */
mate_bench_entry *
mate_bench_entry_from_words(const char *module, const char *function, int n,
    char *const *words, mate_error *err)
{
	cJSON *shape = cJSON_CreateObject(), *tensors, *scalars;

	if (shape == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	cJSON_AddStringToObject(shape, "function", function ? function : "");
	/* a call recorded without a module has "<unknown>" (the recorder's and the dumps'
	 * spelling), which the command-line form leaves out */
	cJSON_AddStringToObject(shape, "module", module != NULL ? module : "<unknown>");
	tensors = cJSON_AddObjectToObject(shape, "tensors");
	scalars = cJSON_AddObjectToObject(shape, "scalars");
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(words[i], '=');
		char key[256];
		cJSON *v;

		if (eq == NULL || eq == words[i] || (size_t)(eq - words[i]) >= sizeof(key)) {
			mate_set_error(err, MATE_ERR_FORMAT, "'%.200s' is not KEY=SPEC", words[i]);
			goto fail;
		}
		memcpy(key, words[i], (size_t)(eq - words[i]));
		key[eq - words[i]] = '\0';
		if (cJSON_GetObjectItemCaseSensitive(tensors, key) != NULL ||
		    cJSON_GetObjectItemCaseSensitive(scalars, key) != NULL) {
			mate_set_error(err, MATE_ERR_FORMAT, "%s given twice", key);
			goto fail;
		}
		if ((v = parse_tensor_spec(eq + 1)) != NULL) {
			cJSON_AddItemToObject(tensors, key, v);
			continue;
		}
		if (strchr(eq + 1, '[') != NULL) {  /* DTYPE[ but not a tensor: a bad spec */
			char dt[64];
			size_t l = strcspn(eq + 1, "[");

			snprintf(dt, sizeof(dt), "%.*s", (int)(l < 63 ? l : 63), eq + 1);
			if (l > 0 && l < 63 && mate_dtype_from_name(dt) != MATE_DTYPE_INVALID) {
				mate_set_error(err, MATE_ERR_FORMAT, "%s: bad tensor spec '%.200s' "
				    "(DTYPE[D0,...][@[S0,...]][:DEVICE])", key, eq + 1);
				goto fail;
			}
		}
		if ((v = cJSON_Parse(eq + 1)) == NULL)
			v = cJSON_CreateString(eq + 1);  /* not JSON: a string */
		cJSON_AddItemToObject(scalars, key, v);
	}
	return entry_new(shape, NULL, err);
fail:
	cJSON_Delete(shape);
	return NULL;
}

void
mate_bench_entry_free(mate_bench_entry *e)
{
	if (e == NULL)
		return;
	cJSON_Delete(e->shape);
	free(e);
}

const char *
mate_bench_entry_function(const mate_bench_entry *e)
{
	return cJSON_GetObjectItemCaseSensitive(e->shape, "function")->valuestring;
}

const char *
mate_bench_entry_module(const mate_bench_entry *e)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e->shape, "module");

	return cJSON_IsString(m) ? m->valuestring : NULL;
}

const char *
mate_bench_entry_key(const mate_bench_entry *e)
{
	return e->key;
}

char *
mate_bench_entry_problem(const mate_bench_entry *e)
{
	return cJSON_PrintUnformatted(e->shape);
}

/* ---- Making the inputs ----------------------------------------------------------- */

struct targ {
	const char *key;        /* the entry's key: arg_4, kwarg_q, arg_4__0 */
	char name[160];         /* the handler's parameter name for it ("" unknown) */
	mate_tensor t;
	mate_storage *st;
	int filled;
};

struct synth {
	struct targ a[BENCH_MAX_TENSORS];
	int n;
	uint64_t rng;
	const char *fn, *sig;
	const cJSON *scalars;
};

static uint64_t
rnd(struct synth *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);  /* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static double
uni(struct synth *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd(s) >> 11) * 0x1.0p-53;
}

/* An integer in [lo, hi] (lo when hi < lo). */
static int64_t
irange(struct synth *s, int64_t lo, int64_t hi)
{
	return hi <= lo ? lo : lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static void
store(mate_dtype dt, void *p, double v)
{
	switch (dt) {
	case MATE_BOOL: *(uint8_t *)p = v != 0; break;
	case MATE_U8: *(uint8_t *)p = (uint8_t)v; break;
	case MATE_I8: *(int8_t *)p = (int8_t)v; break;
	case MATE_I16: *(int16_t *)p = (int16_t)v; break;
	case MATE_U16: *(uint16_t *)p = (uint16_t)v; break;
	case MATE_I32: *(int32_t *)p = (int32_t)v; break;
	case MATE_U32: *(uint32_t *)p = (uint32_t)v; break;
	case MATE_I64: *(int64_t *)p = (int64_t)v; break;
	case MATE_U64: *(uint64_t *)p = (uint64_t)v; break;
	case MATE_F16: *(uint16_t *)p = mate_f32_to_f16((float)v); break;
	case MATE_BF16: *(uint16_t *)p = mate_f32_to_bf16((float)v); break;
	case MATE_F32: case MATE_C64: *(float *)p = (float)v; break;
	case MATE_F64: case MATE_C128: *(double *)p = v; break;
	case MATE_F8_E4M3FN: *(uint8_t *)p = mate_f32_to_f8e4m3fn((float)v); break;
	case MATE_F8_E5M2: *(uint8_t *)p = mate_f32_to_f8e5m2((float)v); break;
	default: break;  /* fnuz, e8m0, complex32: left zero */
	}
}

static void
set(struct targ *a, int64_t i, double v)
{
	store(a->t.dtype, mate_tensor_element(&a->t, i), v);
}

static double
get(const struct targ *a, int64_t i)
{
	return mate_load_f64(a->t.dtype, mate_tensor_element(&a->t, i));
}

static int64_t
numel(const struct targ *a)
{
	return a != NULL ? mate_tensor_numel(&a->t) : 0;
}

static int64_t
dim(const struct targ *a, int d)
{
	if (a == NULL || a->t.ndim == 0)
		return 1;
	d = d < 0 ? a->t.ndim + d : d;
	return d >= 0 && d < a->t.ndim ? a->t.shape[d] : 1;
}

static struct targ *
find(struct synth *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->a[i].name, name) == 0)
			return &s->a[i];
	return NULL;
}

/* An integer scalar argument `name`, or dflt. */
static int64_t
scalar_int(struct synth *s, const char *name, int64_t dflt)
{
	char key[160], pname[64];
	const cJSON *v;

	snprintf(key, sizeof(key), "kwarg_%s", name);
	if ((v = cJSON_GetObjectItemCaseSensitive(s->scalars, key)) == NULL)
		for (int i = 0; mate_op_param_name(s->sig, i, pname, sizeof(pname)) == 0; i++)
			if (strcmp(pname, name) == 0) {
				snprintf(key, sizeof(key), "arg_%d", i);
				v = cJSON_GetObjectItemCaseSensitive(s->scalars, key);
			}
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 ?
	    (int64_t)v->valuedouble : dflt;
}

/* Offsets 0..total in n-1 even steps. */
static void
fill_indptr(struct targ *a, int64_t total)
{
	int64_t n = numel(a);

	for (int64_t i = 0; i < n; i++)
		set(a, i, n > 1 ? (double)(total * i / (n - 1)) : 0);
}

/* What an offset array named name counts, for this call. */
static int64_t
indptr_total(struct synth *s, const char *name)
{
	struct targ *x;

	if (strcmp(name, "kv_indptr") == 0)
		return numel(find(s, "kv_indices"));
	if (strcmp(name, "append_indptr") == 0)
		return scalar_int(s, "nnz", 0);
	if (strcmp(name, "seg_indptr") == 0)
		return dim(find(s, "x"), 0);
	if (strstr(s->fn, "packbits") != NULL)
		return numel(find(s, "x"));
	if ((x = find(s, "q")) != NULL)
		return dim(x, 0);
	for (int i = 0; i < s->n; i++)
		if (mate_dtype_kind(s->a[i].t.dtype) == MATE_KIND_FLOAT)
			return dim(&s->a[i], 0);
	return 0;
}

/* The vocabulary a top-k or an index row picks from. */
static struct targ *
scores(struct synth *s)
{
	struct targ *p = find(s, "probs");

	if (p == NULL)
		p = find(s, "logits");
	return p != NULL ? p : find(s, "input");
}

/* Request b's pages in a page table (kv_indptr), 0 when unknown. */
static int64_t
pages_of(struct synth *s, int64_t b)
{
	struct targ *ip = find(s, "kv_indptr");

	if (ip == NULL || b + 1 >= numel(ip))
		return 0;
	return (int64_t)get(ip, b + 1) - (int64_t)get(ip, b);
}

/* Integer tensors, by what the parameter means to the call. */
static void
fill_int(struct synth *s, struct targ *a)
{
	const char *nm = a->name;
	int64_t n = numel(a), L = strlen(nm);
	struct targ *o;

	if (L >= 6 && strcmp(nm + L - 6, "indptr") == 0) {
		fill_indptr(a, indptr_total(s, nm));
		return;
	}
	if (strncmp(nm, "cum_seq_lens", 12) == 0) {   /* the trtllm functions' offsets */
		fill_indptr(a, strcmp(nm, "cum_seq_lens_kv") == 0 ? numel(find(s, "block_tables")) :
		    dim(find(s, "query"), 0));
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double v;

		if (strcmp(nm, "seg_lens") == 0) {
			int64_t tot = dim(find(s, "x"), 0);

			v = (double)(tot * (i + 1) / n - tot * i / n);
		} else if (strcmp(nm, "seq_lens") == 0 && (o = find(s, "append_indptr")) != NULL &&
		    i + 1 < numel(o))
			v = get(o, i + 1) - get(o, i) + (double)(i % 3);
		else if (strcmp(nm, "seq_lens") == 0 && find(s, "block_tables") != NULL)
			v = (double)scalar_int(s, "max_seq_len", scalar_int(s, "max_kv_len", 1));
		else if (strcmp(nm, "block_tables") == 0)
			v = (double)(i % (dim(find(s, "kv_cache"), 0) > 0 ? dim(find(s, "kv_cache"), 0) : 1));
		else if (strcmp(nm, "kv_indices") == 0) {
			int64_t pages;

			if ((o = find(s, "paged_kv_cache")) == NULL)
				o = find(s, "ckv_cache");
			pages = o != NULL ? dim(o, 0) : 1;
			v = (double)(pages > 0 ? i % pages : 0);
		} else if (strcmp(nm, "kv_last_page_len") == 0)
			v = 1;
		else if (strcmp(nm, "batch_indices") == 0) {
			int64_t batch = numel(find(s, "kv_indptr")) - 1, b = batch > 0 ? i * batch / n : 0;

			while (b > 0 && pages_of(s, b) == 0)  /* a request with a page */
				b--;
			v = (double)b;
		} else if (strcmp(nm, "positions") == 0 && strstr(s->fn, "append") != NULL) {
			o = find(s, "batch_indices");
			v = (double)irange(s, 0, pages_of(s, o && i < numel(o) ? (int64_t)get(o, i) : 0) - 1);
		} else if (strcmp(nm, "positions") == 0 && (o = find(s, "cos_sin_cache")) != NULL)
			v = (double)irange(s, 0, dim(o, 0) - 1);
		else if (strcmp(nm, "positions") == 0 || strcmp(nm, "pos_ids") == 0)
			v = (double)irange(s, 0, 4095);
		else if (strcmp(nm, "offsets") == 0)
			v = (double)irange(s, 0, 63);
		else if (strcmp(nm, "top_k") == 0 || strcmp(nm, "k") == 0)
			v = (double)irange(s, 1, dim(scores(s), -1));
		else if (strcmp(nm, "indices") == 0)
			v = (double)irange(s, 0, dim(scores(s), 0) - 1);
		else if (strcmp(nm, "lengths") == 0 && strstr(s->fn, "top_k_") != NULL)
			v = (double)irange(s, 1, dim(find(s, "input"), -1));
		else if (strcmp(nm, "draft_token_ids") == 0)
			v = (double)irange(s, 0, dim(find(s, "draft_probs"), -1) - 1);
		else if (strcmp(nm, "weight_indices") == 0)
			v = (double)irange(s, 0, dim(find(s, "weights"), 0) - 1);
		else if (a->t.dtype == MATE_BOOL)
			v = (double)(rnd(s) & 1);
		else
			v = (double)irange(s, 0, 7);
		set(a, i, v);
	}
}

/* Floating tensors: uniform in [-1, 1), but probabilities (*probs: rows summing to 1), top_p and
 * min_p thresholds, and scales (1). */
static void
fill_float(struct synth *s, struct targ *a)
{
	int64_t n = numel(a), row = dim(a, -1);
	size_t L = strlen(a->name);

	if (L >= 5 && strcmp(a->name + L - 5, "probs") == 0 && row > 0) {
		for (int64_t r = 0; r < n / row; r++) {
			double sum = 0;

			for (int64_t j = 0; j < row; j++) {
				double v = uni(s, 0.01, 1);

				sum += v;
				set(a, r * row + j, v);
			}
			for (int64_t j = 0; j < row; j++)
				set(a, r * row + j, get(a, r * row + j) / sum);
		}
		return;
	}
	for (int64_t i = 0; i < n; i++)
		set(a, i, strcmp(a->name, "top_p") == 0 ? uni(s, 0.3, 0.9) :
		    strcmp(a->name, "min_p") == 0 ? uni(s, 0.05, 0.3) :
		    strstr(a->name, "scale") != NULL ? 1 : uni(s, -1, 1));
}

/* The order index tensors are made in: page tables before what indexes into them. */
static int
rank(const struct targ *a)
{
	static const char *const order[] = { "kv_indices", "kv_indptr", "append_indptr",
	    "batch_indices", NULL };
	int k = mate_dtype_kind(a->t.dtype);

	if (k == MATE_KIND_FLOAT || k == MATE_KIND_COMPLEX)
		return 0;
	for (int i = 0; order[i] != NULL; i++)
		if (strcmp(a->name, order[i]) == 0)
			return i + 1;
	return 10;
}

/* The handler's parameter name for an entry key: kwarg_NAME, arg_I by sig, KEY__J as KEY. */
static void
param_name(const char *sig, const char *key, char *buf, size_t cap)
{
	char base[160];
	const char *sub = strstr(key, "__");

	snprintf(base, sizeof(base), "%.*s", sub ? (int)(sub - key) : (int)strlen(key), key);
	buf[0] = '\0';
	if (strncmp(base, "kwarg_", 6) == 0)
		snprintf(buf, cap, "%s", base + 6);
	else if (strncmp(base, "arg_", 4) == 0 && mate_op_param_name(sig, atoi(base + 4), buf, cap) != 0)
		buf[0] = '\0';
}

/* a's tensor from its JSON, without storage yet, and the bytes that storage will take. */
static int
size_tensor(struct targ *a, const cJSON *j, uint64_t *bytes, mate_error *err)
{
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
	const cJSON *stride = cJSON_GetObjectItemCaseSensitive(j, "stride");
	int64_t sh[MATE_MAX_DIMS], st[MATE_MAX_DIMS], extent;
	int nd = cJSON_GetArraySize(shape);

	for (int i = 0; i < nd; i++) {
		sh[i] = (int64_t)cJSON_GetArrayItem(shape, i)->valuedouble;
		st[i] = cJSON_IsArray(stride) ? (int64_t)cJSON_GetArrayItem(stride, i)->valuedouble : 0;
	}
	if (mate_tensor_init(&a->t, mate_dtype_from_name(cJSON_GetObjectItemCaseSensitive(j,
	    "dtype")->valuestring), nd, sh, cJSON_IsArray(stride) ? st : NULL, NULL) != MATE_OK ||
	    (extent = mate_tensor_storage_extent(&a->t)) < 0 ||
	    (double)extent * (double)mate_dtype_size(a->t.dtype) > (double)mate_memory_cap())
		return mate_set_error(err, MATE_ERR_LIMIT, "tensor %s: its strides reach past the "
		    "memory limit", a->key);
	*bytes = (uint64_t)(extent > 0 ? extent : 1) * mate_dtype_size(a->t.dtype);
	return MATE_OK;
}

/* a's storage, of bytes zeroed bytes. */
static int
alloc_tensor(struct targ *a, uint64_t bytes, mate_error *err)
{
	if ((a->st = mate_storage_new((size_t)bytes, err)) == NULL)
		return err->code;
	a->t.data = mate_storage_data(a->st);
	memset(a->t.data, 0, mate_storage_size(a->st));
	return MATE_OK;
}

/* A scalar's JSON as a value: integers as ints, "torch.X" dtypes as dtypes; objects and lists
 * as a dump records them ({"type": "torch.dtype", "value": ...}, enums, lists). */
static mate_value *
scalar_value(const cJSON *v)
{
	mate_error err;

	if (cJSON_IsObject(v) || cJSON_IsArray(v))
		return mate_record_decode_value(v, &err);
	if (cJSON_IsBool(v))
		return mate_value_bool(cJSON_IsTrue(v));
	if (cJSON_IsNumber(v))
		return v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9e15 ?
		    mate_value_int((int64_t)v->valuedouble) : mate_value_float(v->valuedouble);
	if (cJSON_IsString(v)) {
		if (strncmp(v->valuestring, "torch.", 6) == 0 &&
		    mate_dtype_from_name(v->valuestring) != MATE_DTYPE_INVALID)
			return mate_value_dtype(mate_dtype_from_name(v->valuestring));
		return mate_value_str(v->valuestring, strlen(v->valuestring));
	}
	return mate_value_none();
}

/* Puts a tensor under its key: KEY__J is item J of a tuple KEY. */
static int
place(mate_value *args, const char *key, mate_value *v)
{
	const char *sub = strstr(key, "__");
	char base[160];
	mate_value *tup;

	if (sub == NULL || sub[2] < '0' || sub[2] > '9')
		return mate_value_set_str(args, key, v);
	snprintf(base, sizeof(base), "%.*s", (int)(sub - key), key);
	if ((tup = mate_value_lookup(args, base)) == NULL) {
		if ((tup = mate_value_tuple()) == NULL || mate_value_set_str(args, base, tup) != MATE_OK) {
			mate_value_free(v);
			return MATE_ERR_NOMEM;
		}
	}
	return mate_value_append(tup, v);
}

/* The first registered signature of function (NULL: none stated). */
static const char *
handler_signature(const mate_replay *r, const char *module, const char *fn)
{
	struct mate_replay_op op;

	for (size_t i = 0; mate_replay_op_get(r, i, &op) == MATE_OK; i++)
		if (strcmp(op.name, fn) == 0 && (op.module == NULL || (module && strcmp(op.module, module) == 0)))
			return op.signature;
	return NULL;
}

/* The arguments of e, made up with seed, into *args. */
static int
synthesize(const mate_replay *r, const mate_bench_entry *e, uint64_t seed, mate_value **args,
    mate_error *err)
{
	const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(e->shape, "tensors"), *t;
	struct synth *s = calloc(1, sizeof(*s));
	int rc = MATE_OK, order[BENCH_MAX_TENSORS];
	uint64_t total = 0, bytes[BENCH_MAX_TENSORS];

	if (s == NULL || (*args = mate_value_dict()) == NULL) {
		free(s);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	s->rng = seed;
	s->fn = mate_bench_entry_function(e);
	s->sig = handler_signature(r, mate_bench_entry_module(e), s->fn);
	s->scalars = cJSON_GetObjectItemCaseSensitive(e->shape, "scalars");
	/* every tensor's size first, all of them checked against the limit together before
	 * any is made */
	cJSON_ArrayForEach(t, tensors) {
		struct targ *a = &s->a[s->n];

		a->key = t->string;
		param_name(s->sig, a->key, a->name, sizeof(a->name));
		if ((rc = size_tensor(a, t, &bytes[s->n++], err)) != MATE_OK)
			goto out;
		if ((total += bytes[s->n - 1]) > mate_memory_cap()) {
			rc = mate_set_error(err, MATE_ERR_LIMIT, "its tensors take more than the memory "
			    "limit of %" PRIu64 " MiB together (--max-memory or MATE_MAX_MEMORY raises it)",
			    mate_memory_cap() >> 20);
			goto out;
		}
	}
	for (int i = 0; i < s->n; i++)
		if ((rc = alloc_tensor(&s->a[i], bytes[i], err)) != MATE_OK)
			goto out;
	for (int i = 0; i < s->n; i++)
		order[i] = i;
	for (int i = 1; i < s->n; i++)  /* stable insertion sort by rank */
		for (int j = i; j > 0 && rank(&s->a[order[j - 1]]) > rank(&s->a[order[j]]); j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (int i = 0; i < s->n; i++) {
		struct targ *a = &s->a[order[i]];
		int k = mate_dtype_kind(a->t.dtype);

		if (k == MATE_KIND_FLOAT || k == MATE_KIND_COMPLEX)
			fill_float(s, a);
		else
			fill_int(s, a);
	}
	for (int i = 0; i < s->n && rc == MATE_OK; i++) {
		mate_value *v = mate_value_tensor(&s->a[i].t, s->a[i].st);

		rc = v != NULL ? place(*args, s->a[i].key, v) : MATE_ERR_NOMEM;
	}
	cJSON_ArrayForEach(t, s->scalars)
		if (rc == MATE_OK)
			rc = mate_value_set_str(*args, t->string, scalar_value(t));
	if (rc != MATE_OK && err->code == MATE_OK)
		mate_set_error(err, rc, "out of memory");
out:
	for (int i = 0; i < s->n; i++)
		mate_storage_unref(s->a[i].st);
	free(s);
	if (rc != MATE_OK) {
		mate_value_free(*args);
		*args = NULL;
	}
	return rc;
}

static const char *const stateful_why = "a wrapper's plan is timed with the run that uses it "
    "(mate-bench makes the plan of a decode, prefill or cascade wrapper's run from the run's "
    "shapes; "
    "an MLA run's shapes do not give its page tables)";


/* ---- Wrapper plans from a run's shapes ------------------------------------------ */

/* The shape of tensor argument pos/name of e (a tuple's first item), into d, and its dtype
 * into *dt where dt is not NULL; its rank or -1. */
static int
entry_tensor(const mate_bench_entry *e, int pos, const char *name, int64_t d[MATE_MAX_DIMS],
    mate_dtype *dt)
{
	const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(e->shape, "tensors"), *t = NULL, *x;
	char key[3][80];
	int n = 0;

	snprintf(key[0], sizeof(key[0]), "arg_%d", pos);
	snprintf(key[1], sizeof(key[1]), "arg_%d__0", pos);
	snprintf(key[2], sizeof(key[2]), "kwarg_%s", name);
	for (int i = 0; i < 3 && t == NULL; i++)
		t = cJSON_GetObjectItemCaseSensitive(tensors, key[i]);
	if (t == NULL) {
		snprintf(key[0], sizeof(key[0]), "kwarg_%s__0", name);
		t = cJSON_GetObjectItemCaseSensitive(tensors, key[0]);
	}
	if (t == NULL)
		return -1;
	if (dt != NULL && (x = cJSON_GetObjectItemCaseSensitive(t, "dtype")) != NULL &&
	    cJSON_IsString(x))
		*dt = mate_dtype_from_name(x->valuestring);
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "shape"))
		d[n++] = (int64_t)x->valuedouble;
	return n;
}

static int
entry_dims(const mate_bench_entry *e, int pos, const char *name, int64_t d[MATE_MAX_DIMS])
{
	return entry_tensor(e, pos, name, d, NULL);
}

/* A 1-D int32 tensor of n elements: f(i) = total * i / (n - 1) (offsets), or i % mod, or val;
 * NULL when out of memory. */
static mate_value *
i32_value(int64_t n, int64_t total, int64_t mod, int64_t val)
{
	mate_error err;
	mate_storage *st = mate_storage_new((size_t)(n > 0 ? n : 1) * 4, &err);
	mate_value *v;
	mate_tensor t;

	if (st == NULL)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		((int32_t *)mate_storage_data(st))[i] = (int32_t)(total >= 0 ? (n > 1 ? total * i / (n - 1) : 0) :
		    mod > 0 ? i % mod : val);
	mate_tensor_init(&t, MATE_I32, 1, &n, NULL, mate_storage_data(st));
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	return v;
}

static int
put_i32(mate_value *args, const char *key, int64_t n, int64_t total, int64_t mod, int64_t val)
{
	mate_value *v = i32_value(n, total, mod, val);

	return v != NULL ? mate_value_set_str(args, key, v) : MATE_ERR_NOMEM;
}

/* A cascade's plan lists from a run's shapes: two levels, a prefix of half the pages shared by
 * the B = q rows requests, then a page table of the others each (FlashInfer's decode example). */
static int
cascade_plan_args(mate_value *a, int64_t B, int64_t pages, int64_t P)
{
	int64_t sp = pages / 2 > 0 ? pages / 2 : 1, per = (pages - sp) / B > 0 ? (pages - sp) / B : 1;
	mate_value *l[4] = { mate_value_list(), mate_value_list(), mate_value_list(), mate_value_list() };
	mate_value *items[8] = { i32_value(2, B, 0, 0), i32_value(B + 1, B, 0, 0),
		i32_value(2, sp, 0, 0), i32_value(B + 1, B * per, 0, 0),
		i32_value(sp, -1, pages, 0), i32_value(B * per, -1, pages, 0),
		i32_value(1, -1, 0, P), i32_value(B, -1, 0, P) };
	char key[8];
	int rc = MATE_OK;

	for (int i = 0; i < 8; i++) {   /* each item moves into its list */
		if (rc == MATE_OK && items[i] != NULL && l[i / 2] != NULL) {
			rc = mate_value_append(l[i / 2], items[i]);
			continue;
		}
		mate_value_free(items[i]);
		rc = MATE_ERR_NOMEM;
	}
	for (int i = 0; i < 4; i++) {   /* each list into the arguments */
		snprintf(key, sizeof(key), "arg_%d", i + 1);
		if (rc == MATE_OK && l[i] != NULL)
			rc = mate_value_set_str(a, key, l[i]);
		else
			mate_value_free(l[i]), rc = MATE_ERR_NOMEM;
	}
	return rc;
}

static int
put_int(mate_value *args, const char *key, int64_t v)
{
	return mate_value_set_str(args, key, mate_value_int(v));
}

static int
put_dt(mate_value *args, const char *key, mate_dtype dt)
{
	return mate_value_set_str(args, key, mate_value_dtype(dt));
}

/* The plan arguments of a decode, paged or ragged prefill wrapper's run entry: its requests
 * share the query rows and the pages (reused when there are fewer than requests). */
static int
plan_args(const mate_bench_entry *e, const char *cls, mate_value *a)
{
	int64_t q[MATE_MAX_DIMS], k[MATE_MAX_DIMS], v[MATE_MAX_DIMS], B, per, P, Hk, pages;
	mate_dtype qdt = MATE_F16, kdt = MATE_F16;
	int nq = entry_tensor(e, 1, "q", q, &qdt), nk, rc = MATE_OK;

	/* the plan's q_data_type and kv_data_type: those of the run's q and k, as FlashInfer's
	 * run requires */
	if (strcmp(cls, "BatchPrefillWithRaggedKVCacheWrapper") == 0) {
		if (nq != 3 || entry_tensor(e, 2, "k", k, &kdt) != 3 || entry_dims(e, 3, "v", v) != 3 ||
		    put_dt(a, "kwarg_q_data_type", qdt) != MATE_OK ||
		    put_dt(a, "kwarg_kv_data_type", kdt) != MATE_OK)
			return MATE_ERR_UNSUPPORTED;
		B = q[0] < k[0] ? q[0] : k[0];
		B = B < 4 ? B : 4;
		if (B < 1)
			return MATE_ERR_UNSUPPORTED;
		return put_i32(a, "arg_1", B + 1, q[0], 0, 0) | put_i32(a, "arg_2", B + 1, k[0], 0, 0) |
		    put_int(a, "arg_3", q[1]) | put_int(a, "arg_4", k[1]) | put_int(a, "arg_5", q[2]) |
		    put_int(a, "arg_6", v[2]);
	}
	nk = entry_tensor(e, 2, "paged_kv_cache", k, &kdt);
	if (nq != 3 || (nk != 5 && nk != 4) ||  /* (pages, 2, P, H, D) or a tuple of (pages, P, H, D) */
	    put_dt(a, "kwarg_q_data_type", qdt) != MATE_OK ||
	    put_dt(a, "kwarg_kv_data_type", kdt) != MATE_OK)
		return MATE_ERR_UNSUPPORTED;
	pages = k[0], P = k[nk - 3], Hk = k[nk - 2];
	if (strcmp(cls, "MultiLevelCascadeAttentionWrapper") == 0)
		return q[0] < 1 || pages < 1 ? MATE_ERR_UNSUPPORTED : cascade_plan_args(a, q[0], pages, P) |
		    put_int(a, "arg_5", q[1]) | put_int(a, "arg_6", Hk) | put_int(a, "arg_7", q[2]) |
		    put_int(a, "arg_8", P);
	if (strcmp(cls, "BatchDecodeWithPagedKVCacheWrapper") == 0) {
		B = q[0];
		if (B < 1 || pages < 1)
			return MATE_ERR_UNSUPPORTED;
		per = pages / B > 0 ? pages / B : 1;
		rc = put_i32(a, "arg_1", B + 1, B * per, 0, 0) | put_i32(a, "arg_2", B * per, -1, pages, 0) |
		    put_i32(a, "arg_3", B, -1, 0, P) | put_int(a, "arg_4", q[1]) | put_int(a, "arg_5", Hk) |
		    put_int(a, "arg_6", q[2]) | put_int(a, "arg_7", P);
		return rc;
	}
	B = q[0] < 4 ? q[0] : 4;
	if (B < 1 || pages < 1)
		return MATE_ERR_UNSUPPORTED;
	per = pages / B > 0 ? pages / B : 1;
	return put_i32(a, "arg_1", B + 1, q[0], 0, 0) | put_i32(a, "arg_2", B + 1, B * per, 0, 0) |
	    put_i32(a, "arg_3", B * per, -1, pages, 0) | put_i32(a, "arg_4", B, -1, 0, P) |
	    put_int(a, "arg_5", q[1]) | put_int(a, "arg_6", Hk) | put_int(a, "arg_7", q[2]) |
	    put_int(a, "arg_8", P) | put_int(a, "arg_9", k[nk - 1]);
}

/* Plans the object of a wrapper's run entry as its shapes allow. 1 when it did. */
static int
plan_for_run(mate_replay *r, const struct mate_replay_request *run, const mate_bench_entry *e,
    const char *cls)
{
	static const char *const plannable[] = { "BatchDecodeWithPagedKVCacheWrapper",
	    "BatchPrefillWithPagedKVCacheWrapper", "BatchPrefillWithRaggedKVCacheWrapper",
	    "MultiLevelCascadeAttentionWrapper", NULL };
	struct mate_replay_request pr = *run;
	struct mate_replay_result rr;
	char fn[200];
	int i, saved;

	for (i = 0; plannable[i] != NULL && strcmp(plannable[i], cls) != 0; i++)
		;
	if (plannable[i] == NULL || (pr.args = mate_value_dict()) == NULL)
		return 0;
	snprintf(fn, sizeof(fn), "%s.plan", cls);
	pr.function = fn;
	if (plan_args(e, cls, pr.args) != MATE_OK) {
		mate_value_free(pr.args);
		return 0;
	}
	saved = mate_replay_get_bench(r);
	mate_replay_set_bench(r, 0);
	mate_replay_execute(r, &pr, &rr);
	mate_replay_set_bench(r, saved);
	mate_value_free(pr.args);
	return rr.verdict == MATE_REPLAY_NOW_RUNS;
}

/* ---- Running it ------------------------------------------------------------------ */

/* NaN and infinite elements of the floating tensors in v. */
static void
count_nonfinite(const mate_value *v, int depth, int64_t *nan, int64_t *inf)
{
	if (v == NULL || depth > 8)
		return;
	if (mate_value_kind_of(v) == MATE_V_TENSOR) {
		const mate_tensor *t = mate_value_get_tensor(v);
		int64_t n = mate_tensor_numel(t);

		if (mate_dtype_kind(t->dtype) != MATE_KIND_FLOAT || t->device_type != MATE_DEVICE_CPU)
			return;
		for (int64_t i = 0; i < n; i++) {
			double x = mate_load_f64(t->dtype, mate_tensor_element(t, i));

			*nan += isnan(x) != 0;
			*inf += isinf(x) != 0;
		}
		return;
	}
	for (size_t i = 0; i < mate_value_len(v); i++)
		count_nonfinite(mate_value_item(v, i), depth + 1, nan, inf);
}

/* Stateful wrappers: a run needs its plan's tables, which a run's shapes do not give. */
static const char *
stateful(const char *fn)
{
	const char *dot = strrchr(fn, '.');

	if (dot != NULL && strcmp(dot, ".run") == 0 && ((strncmp(fn, "Batch", 5) == 0 &&
	    strncmp(fn, "BatchMLA", 8) != 0) || strncmp(fn, "MultiLevelCascade", 17) == 0))
		return NULL;  /* its plan is made from its shapes */
	if (dot != NULL && (strcmp(dot, ".run") == 0 || strcmp(dot, ".plan") == 0) &&
	    strncmp(fn, "SegmentGEMMWrapper.", 19) != 0)
		return stateful_why;
	return NULL;
}

static const char *
unsupported_why(const mate_replay *r, const char *module, const char *fn)
{
	if (!mate_replay_has_handler(r, module, fn))
		return "no replay handler for this function (a plugin's op, or not an op mate "
		    "implements)";
	return stateful(fn);
}

int
mate_bench_run(mate_replay *r, const mate_bench_entry *e, uint64_t seed,
    struct mate_bench_result *res)
{
	const char *fn = mate_bench_entry_function(e), *module = mate_bench_entry_module(e), *why;
	const char *dot = strrchr(fn, '.');
	struct mate_replay_request req;
	struct mate_replay_result rr;
	mate_value *args = NULL, *outputs = NULL;
	mate_error err;
	char self[40];

	memset(res, 0, sizeof(*res));
	res->flops = -1;
	mate_error_clear(&err);
	if ((why = unsupported_why(r, module, fn)) != NULL) {
		res->status = MATE_ERR_UNSUPPORTED;
		snprintf(res->message, sizeof(res->message), "%s", why);
		return MATE_OK;
	}
	memset(&req, 0, sizeof(req));
	req.function = fn;
	req.module = module;
	if (dot != NULL && strncmp(fn, "Tensor.", 7) != 0) {  /* a method: __init__ the object */
		static unsigned long next;
		char init[256];
		int64_t ws = 1024;

		snprintf(self, sizeof(self), "mate-bench-%lu", ++next);
		req.self_id = self;
		snprintf(init, sizeof(init), "%.*s.__init__", (int)(dot - fn), fn);
		if (strcmp(dot, ".__init__") != 0 && mate_replay_has_handler(r, module, init)) {
			struct mate_replay_request ir = req;
			mate_storage *st = mate_storage_new((size_t)ws, &err);
			mate_tensor t;
			int saved;

			if (st == NULL || (ir.args = mate_value_dict()) == NULL) {
				mate_storage_unref(st);
				res->status = MATE_ERR_NOMEM;
				snprintf(res->message, sizeof(res->message), "out of memory");
				return MATE_OK;
			}
			mate_tensor_init(&t, MATE_U8, 1, &ws, NULL, mate_storage_data(st));
			if (strncmp(fn, "MultiLevelCascadeAttentionWrapper.", 34) == 0) {
				/* num_levels first: the two levels cascade_plan_args() plans */
				mate_value_set_str(ir.args, "arg_1", mate_value_int(2));
				mate_value_set_str(ir.args, "arg_2", mate_value_tensor(&t, st));
			} else {
				mate_value_set_str(ir.args, "arg_1", mate_value_tensor(&t, st));
			}
			mate_storage_unref(st);
			ir.function = init;
			saved = mate_replay_get_bench(r);
			mate_replay_set_bench(r, 0);
			mate_replay_execute(r, &ir, &rr);
			mate_replay_set_bench(r, saved);
			mate_value_free(ir.args);
		}
		if (strcmp(dot, ".run") == 0 && (strncmp(fn, "Batch", 5) == 0 ||
		    strncmp(fn, "MultiLevelCascadeAttentionWrapper.", 34) == 0)) {
			char cls[160];

			snprintf(cls, sizeof(cls), "%.*s", (int)(dot - fn), fn);
			if (!plan_for_run(r, &req, e, cls)) {
				res->status = MATE_ERR_UNSUPPORTED;
				snprintf(res->message, sizeof(res->message), "%s: no plan could be made "
				    "from the run's shapes (q (n, heads, dim) and a paged cache (pages, 2, "
				    "page, heads, dim) or (k, v) are needed)", cls);
				return MATE_OK;
			}
		}
	}
	if (synthesize(r, e, seed, &args, &err) != MATE_OK) {
		res->status = err.code;
		snprintf(res->message, sizeof(res->message), "%s", err.message);
		return MATE_OK;
	}
	req.args = args;
	mate_replay_execute_outputs(r, &req, &rr, &outputs);
	if (rr.verdict == MATE_REPLAY_NOW_RUNS) {
		res->status = MATE_OK;
		res->runs = rr.bench_runs;
		res->median = rr.bench_median;
		res->min = rr.bench_min;
		res->max = rr.bench_max;
		res->bytes = (double)rr.bench_bytes;
		res->flops = rr.bench_runs > 0 ? rr.bench_flops : -1;
		res->first_seconds = rr.seconds;
		count_nonfinite(outputs, 0, &res->nan, &res->inf);
		count_nonfinite(args, 0, &res->nan, &res->inf);  /* written in place */
	} else {
		res->status = rr.verdict == MATE_REPLAY_UNSUPPORTED ? MATE_ERR_UNSUPPORTED : MATE_ERR_ARGUMENT;
		snprintf(res->message, sizeof(res->message), "%s", rr.message);
	}
	mate_value_free(outputs);
	mate_value_free(args);
	return MATE_OK;
}

/* ---- Built-in problems --------------------------------------------------------------- */

#define APPEND_TABLES "arg_5=int32[6] arg_6=int32[3] arg_7=int32[2]"
/* trtllm's workspace, block_tables (8 requests of 4 pages) and seq_lens */
#define PAGED_TABLES "arg_2=uint8[1024] arg_3=int32[8,4] arg_4=int32[8]"
#define ROPE_QK "arg_0=float32[8,4,64] arg_1=float32[8,2,64]"
#define PROBS "arg_0=float32[4,100]"
#define CUBLAS_SGEMM "arg_7=float32[512] arg_9=float32[768] arg_12=float32[384] arg_0=null " \
	"arg_1=0 arg_2=0 arg_3=16 arg_4=24 arg_5=32 arg_6=1 arg_8=16 arg_10=32 arg_11=0 arg_13=16"

/* One problem per built-in op, in the command-line form's words; NULL words: why not. */
static const struct {
	const char *fn, *words;
} examples[] = {
	{ "rmsnorm", "arg_0=float32[8,64] arg_1=float32[64] kwarg_eps=1e-06" },
	{ "gemma_rmsnorm", "arg_0=bfloat16[8,64] arg_1=bfloat16[64]" },
	{ "fused_add_rmsnorm", "arg_0=float32[8,64] arg_1=float32[8,64] arg_2=float32[64]" },
	{ "gemma_fused_add_rmsnorm", "arg_0=float16[8,64] arg_1=float16[8,64] arg_2=float16[64]" },
	{ "silu_and_mul", "arg_0=float32[8,128]" },
	{ "gelu_and_mul", "arg_0=float32[8,128]" },
	{ "gelu_tanh_and_mul", "arg_0=bfloat16[8,128]" },
	{ "softmax", "arg_0=float32[4,100]" },
	{ "Tensor.softmax", "arg_0=float32[4,100] arg_1=-1" },
	{ "mm", "arg_0=float32[16,32] arg_1=float32[32,24]@[1,32]" },
	{ "bmm", "arg_0=float32[2,16,32] arg_1=float32[2,32,24]" },
	{ "Tensor.mm", "arg_0=float64[16,32] arg_1=float64[32,24]" },
	{ "Tensor.bmm", "arg_0=float16[2,16,32] arg_1=float16[2,32,24]" },
	{ "bmm_fp8", "arg_0=float8_e4m3fn[2,16,32] arg_1=float8_e4m3fn[2,32,24]@[768,1,32] "
	    "arg_2=float32[] arg_3=float32[] arg_4=\"torch.bfloat16\"" },
	{ "mm_fp8", "arg_0=float8_e4m3fn[16,32] arg_1=float8_e4m3fn[24,32]" },
	{ "single_decode_with_kv_cache", "arg_0=float32[4,64] arg_1=float32[32,4,64] "
	    "arg_2=float32[32,4,64]" },
	{ "single_prefill_with_kv_cache", "arg_0=float32[8,4,64] arg_1=float32[32,4,64] "
	    "arg_2=float32[32,4,64] kwarg_causal=true" },
	{ "SegmentGEMMWrapper.__init__", "arg_1=uint8[1024]" },
	{ "SegmentGEMMWrapper.run", "arg_1=float32[12,32] arg_2=float32[3,32,16] kwarg_seg_lens=int64[3] "
	    "kwarg_weight_indices=int64[3] arg_3=3 arg_4=false" },
	{ "apply_rope", ROPE_QK " arg_2=int32[3] arg_3=int32[2]" },
	{ "apply_rope_inplace", ROPE_QK " arg_2=int32[3] arg_3=int32[2]" },
	{ "apply_rope_pos_ids", ROPE_QK " arg_2=int32[8]" },
	{ "apply_rope_pos_ids_inplace", ROPE_QK " arg_2=int32[8]" },
	{ "apply_llama31_rope", ROPE_QK " arg_2=int32[3] arg_3=int32[2]" },
	{ "apply_llama31_rope_inplace", ROPE_QK " arg_2=int32[3] arg_3=int32[2]" },
	{ "apply_llama31_rope_pos_ids", ROPE_QK " arg_2=int32[8]" },
	{ "apply_llama31_rope_pos_ids_inplace", ROPE_QK " arg_2=int32[8]" },
	{ "apply_rope_with_cos_sin_cache", "arg_0=int64[8] arg_1=float32[8,256] arg_2=float32[8,128] "
	    "arg_4=float32[4096,64] arg_3=64" },
	{ "apply_rope_with_cos_sin_cache_inplace", "arg_0=int64[8] arg_1=float32[8,256] "
	    "arg_2=float32[8,128] arg_4=float32[4096,64] arg_3=64" },
	{ "top_k_renorm_probs", PROBS " arg_1=int32[4]" },
	{ "top_p_renorm_probs", PROBS " arg_1=0.9" },
	{ "top_k_mask_logits", PROBS " arg_1=10" },
	{ "sampling_from_probs", PROBS },
	{ "sampling_from_logits", PROBS },
	{ "top_k_sampling_from_probs", PROBS " arg_1=int32[4]" },
	{ "top_p_sampling_from_probs", PROBS " arg_1=float32[4]" },
	{ "min_p_sampling_from_probs", PROBS " arg_1=0.1" },
	{ "top_k_top_p_sampling_from_probs", PROBS " arg_1=10 arg_2=0.9" },
	{ "top_k_top_p_sampling_from_logits", PROBS " arg_1=10 arg_2=0.9" },
	{ "top_k_page_table_transform", "arg_0=float32[4,100] arg_1=int32[4,100] arg_2=int32[4] "
	    "arg_3=8" },
	{ "top_k_ragged_transform", "arg_0=float32[4,100] arg_1=int32[4] arg_2=int32[4] arg_3=8" },
	{ "chain_speculative_sampling", "arg_0=float32[4,3,100] arg_1=int32[4,3] "
	    "arg_2=float32[4,4,100]" },
	{ "mm_bf16", "arg_0=bfloat16[16,32] arg_1=bfloat16[32,24]" },
	{ "bmm_bf16", "arg_0=bfloat16[2,16,32] arg_1=bfloat16[2,32,24]" },
	{ "packbits", "arg_0=bool[100]" },
	{ "segment_packbits", "arg_0=bool[100] arg_1=int32[4]" },
	{ "fused_rmsnorm_silu", "arg_0=bfloat16[8,64] arg_1=bfloat16[64]" },
	{ "layernorm", "arg_0=bfloat16[8,64] arg_1=float32[64] arg_2=float32[64]" },
	{ "fp4_quantize", "arg_0=bfloat16[128,256] arg_1=float32[1]" },
	{ "nvfp4_quantize", "arg_0=bfloat16[128,256] arg_1=1" },
	{ "mxfp4_quantize", "arg_0=bfloat16[128,256]" },
	{ "mxfp8_quantize", "arg_0=bfloat16[128,256]" },
	{ "mxfp4_dequantize", "arg_0=uint8[128,128] arg_1=uint8[1024]" },
	{ "mxfp4_dequantize_host", "arg_0=uint8[128,128] arg_1=uint8[128,8]" },
	{ "silu_and_mul_nvfp4_quantize", "arg_0=bfloat16[128,512] arg_1=float32[1]" },
	{ "mm_fp4", "arg_0=uint8[128,128] arg_1=uint8[128,128]@[1,128] arg_2=uint8[128,16] "
	    "arg_3=uint8[16,128]@[1,16] arg_4=float32[]" },
	{ "mm_mxfp8", "arg_0=float8_e4m3fn[128,256] arg_1=float8_e4m3fn[256,128]@[1,256] "
	    "arg_2=uint8[1024] arg_3=uint8[1024]" },
	{ "rmsnorm_quant", "arg_0=float8_e4m3fn[8,64] arg_1=bfloat16[8,64] arg_2=bfloat16[64] "
	    "arg_3=float32[1]" },
	{ "fused_add_rmsnorm_quant", "arg_0=float8_e4m3fn[8,64] arg_1=bfloat16[8,64] "
	    "arg_2=bfloat16[8,64] arg_3=bfloat16[64] arg_4=float32[1]" },
	{ "fused_qk_rmsnorm_rope", "arg_0=bfloat16[48,256] arg_1=bfloat16[128] arg_2=bfloat16[64] "
	    "kwarg_ppf=2 kwarg_pph=3 kwarg_ppw=4 kwarg_num_frame_channels=16 "
	    "kwarg_num_height_channels=24 kwarg_num_width_channels=24 kwarg_num_heads_q=2 "
	    "kwarg_num_heads_k=1 kwarg_num_heads_v=1 kwarg_head_dim=64" },
	{ "BatchDecodeWithPagedKVCacheWrapper.__init__", "arg_1=uint8[1024]" },
	{ "BatchPrefillWithPagedKVCacheWrapper.__init__", "arg_1=uint8[1024]" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.__init__", "arg_1=uint8[1024]" },
	{ "BatchMLAPagedAttentionWrapper.__init__", "arg_1=uint8[1024]" },
	{ "MultiLevelCascadeAttentionWrapper.__init__", "arg_2=uint8[1024] arg_1=2" },
	{ "merge_state", "arg_0=float32[8,4,64] arg_1=float32[8,4] arg_2=float32[8,4,64] "
	    "arg_3=float32[8,4]" },
	{ "merge_states", "arg_0=float32[8,3,4,64] arg_1=float32[8,3,4]" },
	{ "merge_state_in_place", "arg_0=float32[8,4,64] arg_1=float32[8,4] arg_2=float32[8,4,64] "
	    "arg_3=float32[8,4]" },
	{ "append_paged_kv_cache", "arg_0=float32[6,2,64] arg_1=float32[6,2,64] arg_2=int32[6] "
	    "arg_3=int32[6] arg_4=float32[8,2,4,2,64] " APPEND_TABLES " kwarg_kv_layout=\"NHD\"" },
	{ "append_paged_mla_kv_cache", "arg_0=float32[6,64] arg_1=float32[6,16] arg_2=int32[6] "
	    "arg_3=int32[6] arg_4=float32[8,4,64] arg_5=float32[8,4,16] arg_6=int32[6] "
	    "arg_7=int32[3] arg_8=int32[2]" },
	{ "get_batch_indices_positions", "arg_0=int32[3] arg_1=int32[2] arg_2=6" },
	{ "cblas_sgemm", "arg_7=float32[512] arg_9=float32[768] arg_12=float32[384] "
	    "arg_0=101 arg_1=111 arg_2=111 arg_3=16 "
	    "arg_4=24 arg_5=32 arg_6=1 arg_8=32 arg_10=24 arg_11=0 arg_13=24" },
	{ "cblas_dgemm", "arg_7=float64[512] arg_9=float64[768] arg_12=float64[384] "
	    "arg_0=101 arg_1=111 arg_2=111 arg_3=16 "
	    "arg_4=24 arg_5=32 arg_6=1 arg_8=32 arg_10=24 arg_11=0 arg_13=24" },
	{ "sgemm_", "arg_6=float32[768] arg_8=float32[512] arg_11=float32[384] "
	    "arg_0=\"N\" arg_1=\"N\" arg_2=24 "
	    "arg_3=16 arg_4=32 arg_5=1 arg_7=24 arg_9=32 arg_10=0 arg_12=24" },
	{ "dgemm_", "arg_6=float64[768] arg_8=float64[512] arg_11=float64[384] "
	    "arg_0=\"N\" arg_1=\"N\" arg_2=24 "
	    "arg_3=16 arg_4=32 arg_5=1 arg_7=24 arg_9=32 arg_10=0 arg_12=24" },
	{ "BatchDecodeWithPagedKVCacheWrapper.run", "arg_1=float32[4,8,64] "
	    "arg_2=float32[8,2,16,2,64]" },
	{ "BatchPrefillWithPagedKVCacheWrapper.run", "arg_1=float32[12,8,64] "
	    "arg_2__0=float32[8,16,2,64] arg_2__1=float32[8,16,2,64]" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.run", "arg_1=float32[12,8,64] arg_2=float32[40,2,64] "
	    "arg_3=float32[40,2,64]" },
	{ "MultiLevelCascadeAttentionWrapper.run", "arg_1=float32[8,8,64] "
	    "arg_2=float32[16,2,16,2,64]" },
	{ "trtllm_batch_decode_with_kv_cache", "arg_0=float32[8,8,128] arg_1=float32[32,2,2,16,128] "
	    PAGED_TABLES " arg_5=64 arg_6=0.088" },
	{ "trtllm_batch_context_with_kv_cache", "arg_0=float32[32,8,128] "
	    "arg_1=float32[32,2,2,16,128] " PAGED_TABLES " arg_10=int32[9] arg_11=int32[9] arg_5=4 "
	    "arg_6=64 arg_7=0.088 arg_8=1 arg_9=8" },
	{ "xqa_batch_decode_with_kv_cache", "arg_0=float32[8,8,128] arg_1__0=float32[32,16,2,128] "
	    "arg_1__1=float32[32,16,2,128] " PAGED_TABLES " arg_5=64 arg_6=0.088" },
	{ "trtllm_batch_decode_with_kv_cache_mla", "arg_0=bfloat16[4,1,16,576] "
	    "arg_1=bfloat16[16,1,32,576] arg_2=uint8[1024] arg_6=int32[4,4] arg_7=int32[4] arg_3=128 "
	    "arg_4=512 arg_5=64 arg_8=128 arg_11=0.072" },
	{ "cublasSgemm_v2", CUBLAS_SGEMM },
	{ "cublasSgemm", CUBLAS_SGEMM },
	{ "cublasGemmEx", "arg_7=float32[512] arg_10=float32[768] arg_14=float32[384] arg_0=null "
	    "arg_1=0 arg_2=0 arg_3=16 arg_4=24 arg_5=32 arg_6=1 arg_8=0 arg_9=16 arg_11=0 arg_12=32 "
	    "arg_13=0 arg_15=0 arg_16=16 arg_17=68 arg_18=-1" },
	{ "cublasGemmStridedBatchedEx", "arg_7=float32[1024] arg_11=float32[1536] "
	    "arg_16=float32[768] arg_0=null arg_1=0 arg_2=0 arg_3=16 arg_4=24 arg_5=32 arg_6=1 "
	    "arg_8=0 arg_9=16 arg_10=512 arg_12=0 arg_13=32 arg_14=768 arg_15=0 arg_17=0 arg_18=16 "
	    "arg_19=384 arg_20=2 arg_21=68 arg_22=-1" },
};

int
mate_bench_example(const char *fn, char *buf, size_t cap, const char **why)
{
	*why = NULL;
	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		if (strcmp(examples[i].fn, fn) != 0)
			continue;
		snprintf(buf, cap, "%s", examples[i].words);
		return MATE_OK;
	}
	if ((*why = stateful(fn)) != NULL)
		;
	else if (strcmp(fn, "top_k") == 0)
		*why = "its handler checks the indices against recorded ones (ties may order either "
		    "way), and a profile records none";
	else
		*why = "no built-in problem for this function";
	return MATE_ERR_UNSUPPORTED;
}
