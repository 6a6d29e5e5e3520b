/* replay_shrink.c: mate-replay --shrink: cuts a failing call's inputs to the smallest slice (rows, tokens, a GEMM's rows of A and columns of B) that still fails the same way, and writes it as a dump of the same format. */
#include "mate_private.h"
#include "replay_private.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_STAGES 4
#define MAX_CUTS 8

/* One tensor cut along dim: a parameter's, or every returned tensor's ("result"). */
struct cut {
	char param[64];
	int dim;                    /* negative: from the end */
	int group;                  /* "PARAM.DIM/": unit u is its index u * size / units (GQA's
	                               KV head of query head u) */
	int seg;                    /* "PARAM.DIM+": unit u is the rows indptr[u]..indptr[u+1]
	                               of the stage's indptr */
	char key[96];               /* the recorded argument's key ("arg_0", "kwarg_out",
	                               "result_1"), or "" for every returned tensor */
};

struct stage {
	char unit[32];              /* "row", "column", ...; a kept note: its name ("K") */
	int note;                   /* "=NAME:PARAM.DIM": reported as kept, cuts nothing */
	struct cut cuts[MAX_CUTS];
	int ncuts;
	char guard[64], guard_key[96], guard_val[32];   /* "?PARAM=VALUE": cuts only where the
	                                                   string argument is absent or VALUE */
	char seg[64], seg_key[96];  /* "#PARAM": the units are the segments of that indptr,
	                               which a cut rebuilds */
	int64_t *ip, rows;          /* its values (units + 1), and the rows they cut */
	mate_dtype ip_dt;
	/* what the shrink chose */
	int64_t n;                  /* units before the cut */
	int64_t *fail;              /* the units that fail alone */
	size_t nfail;
	const int64_t *keep;        /* what is kept: fail[0], all of fail, or NULL (all) */
	size_t nkeep;
};

/* A call before the one shrunk that it depends on (a wrapper's __init__ and plan). */
struct dep {
	char *path;
	mate_dump *d;
	const struct mate_dump_info *info;
	mate_value *args, *exp;
	struct mate_replay_request req;
};

/* A batch's requests (rules "@paged": a decode wrapper's run, q a row per request;
 * "@prefill": a paged prefill's, q rows by the plan's qo_indptr; "@ragged": a
 * ragged prefill's, q rows by qo_indptr and rows of k and v by kv_indptr; "@mla":
 * an MLA wrapper's, q_nope and q_pe rows by qo_indptr, the pages of ckv_cache and
 * kpe_cache by kv_indptr and kv_indices, kv_len_arr per request). */
enum batch_kind { B_DECODE, B_PREFILL, B_RAGGED, B_MLA };

struct paged {
	enum batch_kind kind;
	int64_t B, npages;          /* requests; pages of the cache (ragged: rows of k and v) */
	int64_t *indptr, *indices, *last;   /* ragged: indices 0..npages, last unused */
	int64_t *qo, nq;            /* q's rows of each request (decode: b..b+1); rows of q */
	mate_dtype dt_indptr, dt_indices, dt_last, dt_qo;
	char k_indptr[96], k_indices[96], k_last[96], k_qo[96];   /* the plan's keys */
	char k_q[96], k_kv[96], k_k[96], k_v[96], k_out[96], k_lse[96];   /* the run's */
	char k_q2[96], k_kv2[96];   /* MLA: q_pe and kpe_cache beside q_nope and ckv_cache */
	int kv_dim;                 /* ragged: the token dimension of k and v (1 for HND) */
	/* the requests kept, and what they make */
	const int64_t *keep;
	size_t nkeep;
	int64_t *pages, *new_indptr, *new_indices, *new_last, *qrows, *new_qo;
	size_t npk, nqk;
	int64_t *fail;
	size_t nfail;
};

enum role { R_CALL, R_INIT, R_PLAN, R_RUN };

struct shrink {
	mate_replay *r;
	const char *dump;
	mate_dump *d;
	const struct mate_dump_info *info;
	struct mate_replay_request req;   /* the call as recorded */
	struct mate_replay_result want;   /* how it fails */
	struct stage st[MAX_STAGES];
	int nst;
	int paged;                  /* a wrapper's run: init, plan and pg */
	struct dep init, plan;
	struct paged pg;
	int blas;                   /* rule "@blas": a BLAS GEMM, its sizes and leading
	                               dimensions rebuilt from the cut A, B and C */
	char k_dim[5][96];          /* the keys of M, N, lda, ldb, ldc */
	int colmajor;
	int session;                /* the dump's root has session.jsonl */
	char *report;
	size_t reportlen;
};

/* ---- the rule ------------------------------------------------------------------ */

/* The position of param in the signature text (NULL: none), -1 when absent or
 * not positional. */
static int
param_position(const char *sigtext, const char *param)
{
	struct mate_sig *s;
	mate_error err;
	int pos = -1;

	if (sigtext == NULL || strcmp(sigtext, "<unavailable>") == 0)
		return -1;
	mate_error_clear(&err);
	if ((s = mate_sig_parse(sigtext, &err)) == NULL)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].name, param) == 0) {
			if (s->p[i].kind == MATE_PARAM_POSITIONAL_ONLY ||
			    s->p[i].kind == MATE_PARAM_POSITIONAL_OR_KEYWORD)
				pos = (int)i;
			break;
		}
	mate_sig_free(s);
	return pos;
}

/* The recorded key of parameter param of a call on args whose recorded signature
 * is recsig (else the handler's, hsig): arg_<i> when the call passed it by
 * position, else kwarg_<param> (which may be absent). */
static void
key_of(const mate_value *args, const char *recsig, const char *hsig, const char *param, char *key,
    size_t len)
{
	int pos = param_position(recsig, param);
	char k[96];

	if (pos < 0 && (recsig == NULL || strcmp(recsig, "<unavailable>") == 0))
		pos = param_position(hsig, param);
	snprintf(k, sizeof(k), "arg_%d", pos);
	if (pos < 0 || mate_value_lookup(args, k) == NULL)
		snprintf(k, sizeof(k), "kwarg_%.80s", param);
	snprintf(key, len, "%s", k);
}

static void
param_key(const struct shrink *s, const char *handler_sig, const char *param, char *key, size_t len)
{
	key_of(s->req.args, s->req.signature, handler_sig, param, key, len);
}

static int
parse_rule(struct shrink *s, const char *rule, const char *handler_sig, mate_error *err)
{
	const char *p = rule;

	while (*p != '\0') {
		size_t n = strcspn(p, ";"), u;
		const char *end = p + n, *q;
		struct stage *st;

		if (s->nst == MAX_STAGES)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: too many stages", rule);
		st = &s->st[s->nst++];
		memset(st, 0, sizeof(*st));
		if (*p == '=') {
			st->note = 1;
			p++;
		}
		u = strcspn(p, ":");
		if (p + u >= end || u == 0 || u >= sizeof(st->unit))
			return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: no unit", rule);
		memcpy(st->unit, p, u);
		for (q = p + u + 1; q < end;) {
			size_t w, dot;
			struct cut *c;
			char num[16];

			while (q < end && *q == ' ')
				q++;
			if (q >= end)
				break;
			for (w = 0; q + w < end && q[w] != ' '; w++)
				;
			if (*q == '#') {  /* the indptr of segments */
				if (w - 1 >= sizeof(st->seg) || w < 2)
					return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: bad indptr",
					    rule);
				memcpy(st->seg, q + 1, w - 1);
				st->seg[w - 1] = '\0';
				param_key(s, handler_sig, st->seg, st->seg_key, sizeof(st->seg_key));
				q += w;
				continue;
			}
			if (*q == '?') {  /* a guard */
				size_t eq;

				for (eq = 1; eq < w && q[eq] != '='; eq++)
					;
				if (eq == w || eq - 1 >= sizeof(st->guard) || w - eq - 1 >= sizeof(st->guard_val))
					return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: bad guard",
					    rule);
				memcpy(st->guard, q + 1, eq - 1);
				st->guard[eq - 1] = '\0';
				memcpy(st->guard_val, q + eq + 1, w - eq - 1);
				st->guard_val[w - eq - 1] = '\0';
				param_key(s, handler_sig, st->guard, st->guard_key, sizeof(st->guard_key));
				q += w;
				continue;
			}
			for (dot = w; dot > 0 && q[dot - 1] != '.'; dot--)
				;
			if (dot < 2 || w - dot >= sizeof(num) || dot - 1 >= sizeof(c->param) ||
			    st->ncuts == MAX_CUTS)
				return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: bad cut", rule);
			c = &st->cuts[st->ncuts++];
			memcpy(c->param, q, dot - 1);
			c->param[dot - 1] = '\0';
			memcpy(num, q + dot, w - dot);
			num[w - dot] = '\0';
			c->group = w - dot > 0 && num[w - dot - 1] == '/';
			c->seg = w - dot > 0 && num[w - dot - 1] == '+';
			if (c->seg && st->seg[0] == '\0')
				return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: a cut by "
				    "segment before its #indptr", rule);
			c->dim = atoi(num);
			if (strncmp(c->param, "result_", 7) == 0)
				memcpy(c->key, c->param, strlen(c->param) + 1);  /* param is the shorter */
			else if (strcmp(c->param, "result") != 0)
				param_key(s, handler_sig, c->param, c->key, sizeof(c->key));
			q += w;
		}
		if (st->ncuts == 0)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: a stage cuts nothing",
			    rule);
		p = *end == ';' ? end + 1 : end;
	}
	return MATE_OK;
}

/* ---- cutting tensors -------------------------------------------------------------- */

static int
is_result_key(const char *key)
{
	return strcmp(key, "result") == 0 || strncmp(key, "result_", 7) == 0;
}

/* The cut of st that applies to the tensor under key, or NULL. */
static const struct cut *
cut_for(const struct stage *st, const char *key)
{
	for (int i = 0; i < st->ncuts; i++) {
		const struct cut *c = &st->cuts[i];

		if (c->key[0] != '\0' ? strcmp(c->key, key) == 0 : is_result_key(key))
			return c;
	}
	return NULL;
}

/* A contiguous copy of tensor v keeping indices keep[0..nkeep) along dim (all of
 * them, in order, when keep is NULL: a deep copy). NULL with err. */
static mate_value *
cut_tensor(const char *key, const mate_value *v, int dim, int64_t n, const int64_t *keep,
    size_t nkeep, mate_error *err)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	mate_tensor out;
	mate_storage *st;
	mate_value *nv;
	size_t es = mate_dtype_size(t->dtype);
	int64_t shape[MATE_MAX_DIMS], numel = 1, idx[MATE_MAX_DIMS];
	int d = dim < 0 ? t->ndim + dim : dim;
	unsigned char *dst;

	if (t->device_type != MATE_DEVICE_CPU || es == 0) {
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s: a tensor of dtype %s cannot be cut", key,
		    mate_dtype_name(t->dtype));
		return NULL;
	}
	if (keep != NULL && (d < 0 || d >= t->ndim || t->shape[d] != n)) {
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s has no dimension %d of %" PRId64
		    " to cut", key, dim, n);
		return NULL;
	}
	for (int i = 0; i < t->ndim; i++) {
		shape[i] = keep != NULL && i == d ? (int64_t)nkeep : t->shape[i];
		if (shape[i] != 0 && numel > INT64_MAX / shape[i]) {
			mate_set_error(err, MATE_ERR_LIMIT, "%s: too many elements", key);
			return NULL;
		}
		numel *= shape[i];
	}
	if ((uint64_t)numel > mate_memory_cap() / es) {
		mate_set_error(err, MATE_ERR_LIMIT, "%s: its cut would take more than the memory limit "
		    "(--max-memory or MATE_MAX_MEMORY raises it)", key);
		return NULL;
	}
	if ((st = mate_storage_new((size_t)numel * es, err)) == NULL)
		return NULL;
	dst = mate_storage_data(st);
	memset(idx, 0, sizeof(idx));
	for (int64_t i = 0; i < numel; i++) {
		int64_t off = t->offset;

		for (int j = 0; j < t->ndim; j++)
			off += (keep != NULL && j == d ? keep[idx[j]] : idx[j]) * t->stride[j];
		memcpy(dst + (size_t)i * es, (const unsigned char *)t->data + (size_t)off * es, es);
		for (int j = t->ndim - 1; j >= 0; j--) {  /* the next index, row-major */
			if (++idx[j] < shape[j])
				break;
			idx[j] = 0;
		}
	}
	mate_tensor_init(&out, t->dtype, t->ndim, shape, NULL, dst);
	nv = mate_value_tensor(&out, st);
	mate_storage_unref(st);
	if (nv == NULL)
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return nv;
}

/* A copy of dict (keys to values) with the tensors st cuts kept at keep[0..nkeep);
 * copy_also (may be NULL) names keys whose tensors are copied whole (arguments a
 * call writes in place: the copy is theirs to write). NULL with err. */
/* cut_tensor() of a grouped cut: of the m indices along dim, the one of each unit
 * keep[k] of n (n a multiple of m: unit u is index u / (n / m)). */
static mate_value *
cut_group(const char *key, const mate_value *v, int dim, int64_t n, const int64_t *keep,
    size_t nkeep, mate_error *err)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	int d = dim < 0 ? t->ndim + dim : dim;
	int64_t m, *idx;
	mate_value *nv;

	if (d < 0 || d >= t->ndim || (m = t->shape[d]) <= 0 || n % m != 0) {
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s has no dimension %d that groups %" PRId64
		    " units", key, dim, n);
		return NULL;
	}
	if ((idx = calloc(nkeep + 1, sizeof(int64_t))) == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (size_t k = 0; k < nkeep; k++)
		idx[k] = keep[k] / (n / m);
	nv = cut_tensor(key, v, dim, m, idx, nkeep, err);
	free(idx);
	return nv;
}

static mate_value *new_ints(mate_dtype dt, const int64_t *v, size_t n, mate_error *err);

/* The rows of the segments keep[0..nkeep) of st's indptr, in order, and the indptr
 * that numbers them from 0 (both malloc'ed). */
static int
seg_rows(const struct stage *st, const int64_t *keep, size_t nkeep, int64_t **rows,
    size_t *nrows, int64_t **newip, mate_error *err)
{
	size_t total = 0;

	for (size_t k = 0; k < nkeep; k++)
		total += (size_t)(st->ip[keep[k] + 1] - st->ip[keep[k]]);
	*rows = calloc(total + 1, sizeof(int64_t));
	*newip = calloc(nkeep + 1, sizeof(int64_t));
	if (*rows == NULL || *newip == NULL) {
		free(*rows);
		free(*newip);
		*rows = *newip = NULL;
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	*nrows = 0;
	for (size_t k = 0; k < nkeep; k++) {
		for (int64_t j = st->ip[keep[k]]; j < st->ip[keep[k] + 1]; j++)
			(*rows)[(*nrows)++] = j;
		(*newip)[k + 1] = (int64_t)*nrows;
	}
	return MATE_OK;
}

static mate_value *
cut_dict(const struct stage *st, const mate_value *dict, int64_t n, const int64_t *keep,
    size_t nkeep, const mate_value *copy_also, mate_error *err)
{
	mate_value *out = mate_value_dict();
	int64_t *rows = NULL, *newip = NULL;
	size_t nrows = 0;

	if (out == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (st != NULL && st->seg[0] != '\0' && keep != NULL &&
	    seg_rows(st, keep, nkeep, &rows, &nrows, &newip, err) != MATE_OK) {
		mate_value_free(out);
		return NULL;
	}
	for (size_t i = 0; i < mate_value_len(dict); i++) {
		const char *key = mate_value_get_str(mate_value_key(dict, i), NULL);
		const mate_value *v = mate_value_item(dict, i);
		const struct cut *c = st != NULL ? cut_for(st, key) : NULL;
		mate_value *nv;

		if (newip != NULL && strcmp(key, st->seg_key) == 0)
			nv = new_ints(st->ip_dt, newip, nkeep + 1, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL && c->seg && rows != NULL)
			nv = cut_tensor(key, v, c->dim, st->rows, rows, nrows, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL &&
		    mate_value_get_tensor(v)->ndim > 0 && c->group && keep != NULL)
			nv = cut_group(key, v, c->dim, n, keep, nkeep, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL &&
		    mate_value_get_tensor(v)->ndim > 0)
			nv = cut_tensor(key, v, c->dim, n, keep, nkeep, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && copy_also != NULL &&
		    mate_value_lookup(copy_also, key) != NULL)
			nv = cut_tensor(key, v, 0, 0, NULL, 0, err);
		else if ((nv = mate_value_copy(v)) == NULL)
			mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		if (nv == NULL || mate_value_set_str(out, key, nv) != MATE_OK) {
			mate_value_free(out);
			out = NULL;
			break;
		}
	}
	free(rows);
	free(newip);
	return out;
}

static int ints_of(const char *what, const mate_value *v, int64_t **out, int64_t *n,
    mate_dtype *dt, mate_error *err);

/* err's message as the reason the call cannot be sliced (code rc). */
static int
cannot_slice(const struct shrink *s, int rc, mate_error *err)
{
	char why[sizeof(err->message)];

	snprintf(why, sizeof(why), "%s", err->message);
	return mate_set_error(err, rc, "%s cannot be sliced: %s", s->info->function, why);
}

/* A segmented stage's units: the segments of its indptr, which must run from 0 up,
 * not past the rows of its first cut's tensor (st->rows). */
static int
stage_segments(const struct shrink *s, struct stage *st, const mate_value *args, int64_t *n,
    mate_error *err)
{
	char what[96];
	int64_t nip;
	int rc;

	free(st->ip);
	st->ip = NULL;
	snprintf(what, sizeof(what), "its %s", st->seg);
	if ((rc = ints_of(what, mate_value_lookup(args, st->seg_key), &st->ip, &nip, &st->ip_dt,
	    err)) != MATE_OK)
		return cannot_slice(s, rc, err);
	if (nip < 1 || st->ip[0] != 0 || st->ip[nip - 1] > st->rows)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: its %s (%" PRId64 " values, from %"
		    PRId64 " to %" PRId64 ") does not fit the %" PRId64 " rows of its %s",
		    s->info->function, st->seg, nip, nip > 0 ? st->ip[0] : 0,
		    nip > 0 ? st->ip[nip - 1] : 0, st->rows, st->cuts[0].param);
	for (int64_t i = 0; i + 1 < nip; i++)
		if (st->ip[i + 1] < st->ip[i])
			return mate_set_error(err, MATE_ERR_FORMAT, "%s: its %s decreases at %" PRId64,
			    s->info->function, st->seg, i + 1);
	*n = nip - 1;
	return MATE_OK;
}

/* How many units st cuts: the size of its first cut's tensor along its dim (a
 * segmented stage: the segments of its indptr). */
static int
stage_units(const struct shrink *s, struct stage *st, const mate_value *args,
    const mate_value *exp, int64_t *n, mate_error *err)
{
	const struct cut *c = &st->cuts[0];
	const mate_value *v = c->key[0] != '\0' ? mate_value_lookup(args, c->key) :
	    exp != NULL ? mate_value_lookup(exp, "result") : NULL;
	const mate_tensor *t;
	int d;

	if (mate_value_kind_of(v) != MATE_V_TENSOR)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its %s is not "
		    "a tensor", s->info->function, c->param);
	t = mate_value_get_tensor(v);
	d = c->dim < 0 ? t->ndim + c->dim : c->dim;
	if (d < 0 || d >= t->ndim)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its %s has no "
		    "dimension %d", s->info->function, c->param, c->dim);
	*n = t->shape[d];
	if (st->seg[0] != '\0') {
		st->rows = *n;
		return stage_segments(s, st, args, n, err);
	}
	return MATE_OK;
}

/* ---- a BLAS GEMM: rows of A, columns of B, its integers rebuilt ------------------- */

/* An integer argument (an int or a CBLAS enum), else def. */
static int64_t
int_arg(const mate_value *args, const char *key, int64_t def)
{
	const mate_value *v = mate_value_lookup(args, key);

	return mate_value_kind_of(v) == MATE_V_INT || mate_value_kind_of(v) == MATE_V_ENUM ?
	    mate_value_get_int(v) : def;
}

/* Whether the transpose argument under key transposes: 'T'/'C' (Fortran) or CBLAS's
 * 112/113; -1 when it is neither that nor 'N'/111. */
static int
transposes(const mate_value *args, const char *key)
{
	const mate_value *v = mate_value_lookup(args, key);
	const char *t;
	int64_t i;

	if (mate_value_kind_of(v) == MATE_V_STR) {
		t = mate_value_get_str(v, NULL);
		return t == NULL || t[0] == '\0' || strchr("NnTtCc", t[0]) == NULL ? -1 :
		    strchr("Nn", t[0]) == NULL;
	}
	i = int_arg(args, key, -1);
	return i == 111 ? 0 : i == 112 || i == 113 ? 1 : -1;
}

/* The stages of a cblas_?gemm or ?gemm_ call (signature hsig): the rows of A (and
 * of C), the columns of B (and of C), K kept; which of A's and B's dimensions they
 * are follows the transposes. */
static int
blas_setup(struct shrink *s, const char *hsig, mate_error *err)
{
	static const char *const cb[] = { "Order", "TransA", "TransB", "A", "B", "C", "M", "N",
	    "lda", "ldb", "ldc" };
	static const char *const f77[] = { NULL, "transa", "transb", "a", "b", "c", "m", "n",
	    "lda", "ldb", "ldc" };
	const char *const *nm = param_position(hsig, "Order") >= 0 ? cb : f77;
	char k[6][96];
	int ta, tb;

	for (int i = 0; i < 6; i++)
		if (nm[i] != NULL)
			param_key(s, hsig, nm[i], k[i], sizeof(k[i]));
	for (int i = 0; i < 5; i++)
		param_key(s, hsig, nm[6 + i], s->k_dim[i], sizeof(s->k_dim[i]));
	ta = transposes(s->req.args, k[1]);
	tb = transposes(s->req.args, k[2]);
	if (ta < 0 || tb < 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its %s is not "
		    "a transpose", s->info->function, ta < 0 ? nm[1] : nm[2]);
	s->colmajor = nm[0] == NULL || int_arg(s->req.args, k[0], 0) == 102;
	{
		const struct { const char *unit; int note, op; int dim; int cdim; } st[3] = {
			{ "row", 0, 3, ta ? 1 : 0, 0 },       /* A is (m, k), or (k, m) transposed */
			{ "column", 0, 4, tb ? 0 : 1, 1 },    /* B is (k, n), or (n, k) */
			{ "K", 1, 3, ta ? 0 : 1, -1 } };

		s->nst = 3;
		for (int i = 0; i < 3; i++) {
			struct stage *g = &s->st[i];

			memset(g, 0, sizeof(*g));
			snprintf(g->unit, sizeof(g->unit), "%s", st[i].unit);
			g->note = st[i].note;
			g->ncuts = st[i].cdim >= 0 ? 2 : 1;
			snprintf(g->cuts[0].param, sizeof(g->cuts[0].param), "%s", nm[st[i].op]);
			snprintf(g->cuts[0].key, sizeof(g->cuts[0].key), "%s", k[st[i].op]);
			g->cuts[0].dim = st[i].dim;
			snprintf(g->cuts[1].param, sizeof(g->cuts[1].param), "%s", nm[5]);
			snprintf(g->cuts[1].key, sizeof(g->cuts[1].key), "%s", k[5]);
			g->cuts[1].dim = st[i].cdim;
		}
	}
	return MATE_OK;
}

/* M, N, lda, ldb and ldc of a BLAS call on the (cut) tensors of dict: 0 when A, B
 * or C is not a matrix there. */
static int
blas_dims(const struct shrink *s, const mate_value *dict, int64_t dims[5])
{
	const mate_tensor *t[3];

	for (int i = 0; i < 3; i++) {
		const mate_value *v = mate_value_lookup(dict, i == 2 ? s->st[0].cuts[1].key :
		    s->st[i].cuts[0].key);

		if (mate_value_kind_of(v) != MATE_V_TENSOR || (t[i] = mate_value_get_tensor(v))->ndim != 2)
			return 0;
	}
	dims[0] = t[2]->shape[0];
	dims[1] = t[2]->shape[1];
	for (int i = 0; i < 3; i++) {
		int64_t ld = t[i]->shape[s->colmajor ? 0 : 1];

		dims[2 + i] = ld > 1 ? ld : 1;
	}
	return 1;
}

/* Sets a cut BLAS call's integers in its arguments. */
static int
blas_fix(const struct shrink *s, mate_value *args, mate_error *err)
{
	int64_t dims[5];

	if (!s->blas || !blas_dims(s, args, dims))
		return MATE_OK;
	for (int i = 0; i < 5; i++) {
		mate_value *v;

		if (mate_value_lookup(args, s->k_dim[i]) == NULL)
			continue;
		if ((v = mate_value_int(dims[i])) == NULL || mate_value_set_str(args, s->k_dim[i], v) !=
		    MATE_OK)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	return MATE_OK;
}

/* ---- replaying a slice ----------------------------------------------------------- */

/* Whether two error messages say the same but for their numbers ("position 9999
 * of token 11" and "position 9999 of token 0"): a cut renumbers. */
static int
same_words(const char *a, const char *b)
{
	for (;;) {
		if (*a == '-' && a[1] >= '0' && a[1] <= '9')  /* a sign is the number's */
			a++;
		if (*b == '-' && b[1] >= '0' && b[1] <= '9')
			b++;
		while (*a >= '0' && *a <= '9')
			a++;
		while (*b >= '0' && *b <= '9')
			b++;
		if (*a != *b)
			return 0;
		if (*a == '\0')
			return 1;
		a++, b++;
	}
}

/* Whether res fails as s->want does: the same verdict and, for a mismatch, the
 * same output; for an error, the same message but for its numbers. */
static int
same_failure(const struct shrink *s, const struct mate_replay_result *res)
{
	if (res->verdict != s->want.verdict)
		return 0;
	if (s->want.verdict == MATE_REPLAY_ERROR)
		return same_words(res->message, s->want.message);
	return s->want.verdict != MATE_REPLAY_MISMATCH || strcmp(res->key, s->want.key) == 0;
}

/* Replays the call on args and exp (which it may write) into *res. */
static void
replay_on(struct shrink *s, mate_value *args, const mate_value *exp, struct mate_replay_result *res)
{
	struct mate_replay_request req = s->req;

	req.args = args;
	req.expected = exp;
	mate_replay_execute(s->r, &req, res);
}

/* Cuts *args and *exp by st to the units in keep (ownership of the new dicts moves
 * to them; the old ones are freed). */
static int
apply_stage(const struct shrink *s, const struct stage *st, mate_value **args, mate_value **exp,
    mate_error *err)
{
	mate_value *na, *ne = NULL;

	if (st->keep == NULL)
		return MATE_OK;
	if ((na = cut_dict(st, *args, st->n, st->keep, st->nkeep, NULL, err)) == NULL ||
	    blas_fix(s, na, err) != MATE_OK ||
	    (*exp != NULL && (ne = cut_dict(st, *exp, st->n, st->keep, st->nkeep, NULL, err)) == NULL)) {
		mate_value_free(na);
		return err->code;
	}
	mate_value_free(*args);
	mate_value_free(*exp);
	*args = na;
	*exp = ne;
	return MATE_OK;
}

/* Finds, for stage st of the call on args/exp, the units that fail alone. */
static int
find_failing(struct shrink *s, struct stage *st, const mate_value *args, const mate_value *exp,
    mate_error *err)
{
	int rc;

	if ((rc = stage_units(s, st, args, exp, &st->n, err)) != MATE_OK)
		return rc;
	if (st->n <= 1)
		return MATE_OK;
	if ((st->fail = calloc((size_t)st->n, sizeof(int64_t))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (int64_t u = 0; u < st->n; u++) {
		struct mate_replay_result res;
		mate_value *a, *e = NULL;

		if ((a = cut_dict(st, args, st->n, &u, 1, exp, err)) == NULL ||
		    blas_fix(s, a, err) != MATE_OK ||
		    (exp != NULL && (e = cut_dict(st, exp, st->n, &u, 1, NULL, err)) == NULL)) {
			mate_value_free(a);
			return err->code == MATE_ERR_UNSUPPORTED ? cannot_slice(s, err->code, err) : err->code;
		}
		replay_on(s, a, e, &res);
		if (same_failure(s, &res))
			st->fail[st->nfail++] = u;
		mate_value_free(a);
		mate_value_free(e);
	}
	return MATE_OK;
}

/* ---- the report ----------------------------------------------------------------- */

/* n with thousands separators ("1,731"). */
static const char *
grouped(int64_t n, char *buf, size_t len)
{
	char digits[32];
	size_t nd, j = 0;

	snprintf(digits, sizeof(digits), "%" PRId64, n);
	nd = strlen(digits);
	for (size_t i = 0; i < nd && j + 2 < len; i++) {
		if (i > 0 && digits[i] != '-' && (nd - i) % 3 == 0 && digits[0] != '-')
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

static void
say(struct shrink *s, const char *fmt, ...) MATE_PRINTF(2, 3);

static void
say(struct shrink *s, const char *fmt, ...)
{
	size_t n = strlen(s->report);
	va_list ap;

	if (n + 1 >= s->reportlen)
		return;
	va_start(ap, fmt);
	vsnprintf(s->report + n, s->reportlen - n, fmt, ap);
	va_end(ap);
}

static void
write_report(struct shrink *s, const mate_value *args0)
{
	char b1[32], b2[32], b3[32];
	int cutting = 0, first = 1;

	s->report[0] = '\0';
	for (int i = 0; i < s->nst; i++)
		cutting += !s->st[i].note && s->st[i].keep != NULL;
	for (int i = 0; i < s->nst; i++) {
		const struct stage *st = &s->st[i];

		if (st->note || st->keep == NULL)
			continue;
		say(s, "%s%s%s ", first ? "" : " and ", st->unit, st->nkeep > 1 ? "s" : "");
		for (size_t k = 0; k < st->nkeep; k++)
			say(s, "%s%s", k ? ", " : "", grouped(st->keep[k], b1, sizeof(b1)));
		say(s, " of %s", grouped(st->n, b2, sizeof(b2)));
		if (cutting > 1)
			say(s, " of %s", st->cuts[0].param);
		if (st->seg[0] != '\0') {
			int64_t rows = 0;

			for (size_t k = 0; k < st->nkeep; k++)
				rows += st->ip[st->keep[k] + 1] - st->ip[st->keep[k]];
			say(s, " (%s of %s rows of %s)", grouped(rows, b1, sizeof(b1)),
			    grouped(st->rows, b3, sizeof(b3)), st->cuts[0].param);
		}
		first = 0;
	}
	for (int i = 0; i < s->nst; i++) {  /* what no unit of it fails alone, and notes */
		const struct stage *st = &s->st[i];
		const mate_value *v = mate_value_lookup(args0, st->cuts[0].key);

		if (st->note && mate_value_kind_of(v) == MATE_V_TENSOR) {
			const mate_tensor *t = mate_value_get_tensor(v);
			int d = st->cuts[0].dim < 0 ? t->ndim + st->cuts[0].dim : st->cuts[0].dim;

			if (d >= 0 && d < t->ndim)
				say(s, " (%s = %s kept)", st->unit, grouped(t->shape[d], b1, sizeof(b1)));
		} else if (!st->note && st->keep == NULL && st->n > 1) {
			say(s, "; all %s %ss kept (none fails alone)", grouped(st->n, b1, sizeof(b1)),
			    st->unit);
		}
	}
	if (cutting == 1)
		for (int i = 0; i < s->nst; i++) {
			const struct stage *st = &s->st[i];

			if (st->note || st->keep == NULL)
				continue;
			if (st->nfail == 1)
				say(s, ": the only %s that %s", st->unit,
				    s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatches" : "fails");
			else
				say(s, ": %s of %s %ss %s", grouped((int64_t)st->nfail, b1, sizeof(b1)),
				    grouped(st->n, b3, sizeof(b3)), st->unit,
				    s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatch" : "fail");
		}
}

/* ---- a paged batch: requests, with their pages ----------------------------------- */

/* A 1-D int32 or int64 host tensor's elements as int64 (malloc'ed). */
static int
ints_of(const char *what, const mate_value *v, int64_t **out, int64_t *n, mate_dtype *dt,
    mate_error *err)
{
	const mate_tensor *t;

	if (mate_value_kind_of(v) != MATE_V_TENSOR)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s is not a tensor", what);
	t = mate_value_get_tensor(v);
	if (t->ndim != 1 || t->device_type != MATE_DEVICE_CPU ||
	    (t->dtype != MATE_I32 && t->dtype != MATE_I64))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s is not a 1-D int32 or int64 "
		    "tensor", what);
	*n = t->shape[0];
	*dt = t->dtype;
	if ((*out = calloc((size_t)(*n > 0 ? *n : 1), sizeof(int64_t))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < *n; i++) {
		const void *p = mate_tensor_element(t, i);

		if (t->dtype == MATE_I32) {
			int32_t x;

			memcpy(&x, p, sizeof(x));
			(*out)[i] = x;
		} else
			memcpy(&(*out)[i], p, sizeof(int64_t));
	}
	return MATE_OK;
}

static mate_value *
new_ints(mate_dtype dt, const int64_t *v, size_t n, mate_error *err)
{
	int64_t shape[1] = { (int64_t)n };
	mate_storage *st = mate_storage_new(n * mate_dtype_size(dt) + 1, err);
	mate_tensor t;
	mate_value *nv;

	if (st == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = (unsigned char *)mate_storage_data(st) + i * mate_dtype_size(dt);

		if (dt == MATE_I32) {
			int32_t x = (int32_t)v[i];
			memcpy(p, &x, sizeof(x));
		} else
			memcpy(p, &v[i], sizeof(v[i]));
	}
	mate_tensor_init(&t, dt, 1, shape, NULL, mate_storage_data(st));
	nv = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	if (nv == NULL)
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return nv;
}

/* The page table of the requests keep[0..nkeep): their pages (ragged: rows of k and
 * v) in order, renumbered, and their rows of q. */
static int
paged_select(struct paged *pg, const int64_t *keep, size_t nkeep, mate_error *err)
{
	size_t total = 0, qtotal = 0;

	free(pg->pages);
	free(pg->new_indptr);
	free(pg->new_indices);
	free(pg->new_last);
	free(pg->qrows);
	free(pg->new_qo);
	pg->pages = pg->new_indptr = pg->new_indices = pg->new_last = pg->qrows = pg->new_qo = NULL;
	for (size_t k = 0; k < nkeep; k++) {
		total += (size_t)(pg->indptr[keep[k] + 1] - pg->indptr[keep[k]]);
		qtotal += (size_t)(pg->qo[keep[k] + 1] - pg->qo[keep[k]]);
	}
	if ((pg->pages = calloc(total + 1, sizeof(int64_t))) == NULL ||
	    (pg->new_indices = calloc(total + 1, sizeof(int64_t))) == NULL ||
	    (pg->new_indptr = calloc(nkeep + 1, sizeof(int64_t))) == NULL ||
	    (pg->new_last = calloc(nkeep + 1, sizeof(int64_t))) == NULL ||
	    (pg->qrows = calloc(qtotal + 1, sizeof(int64_t))) == NULL ||
	    (pg->new_qo = calloc(nkeep + 1, sizeof(int64_t))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	pg->npk = pg->nqk = 0;
	for (size_t k = 0; k < nkeep; k++) {
		for (int64_t j = pg->indptr[keep[k]]; j < pg->indptr[keep[k] + 1]; j++) {
			pg->pages[pg->npk] = pg->indices[j];
			pg->new_indices[pg->npk] = (int64_t)pg->npk;
			pg->npk++;
		}
		for (int64_t j = pg->qo[keep[k]]; j < pg->qo[keep[k] + 1]; j++)
			pg->qrows[pg->nqk++] = j;
		pg->new_indptr[k + 1] = (int64_t)pg->npk;
		pg->new_qo[k + 1] = (int64_t)pg->nqk;
		pg->new_last[k] = pg->last != NULL ? pg->last[keep[k]] : 0;
	}
	pg->keep = keep;
	pg->nkeep = nkeep;
	return MATE_OK;
}

static int
has_prefix_key(const char *key, const char *parent)
{
	size_t n = strlen(parent);

	return parent[0] != '\0' && strncmp(key, parent, n) == 0 && strncmp(key + n, "__", 2) == 0;
}

/* The value under key of the plan's or run's dict, cut to the kept requests. */
static mate_value *
paged_value(const struct paged *pg, enum role role, const char *key, const mate_value *v,
    int copy, mate_error *err)
{
	mate_value_kind k = mate_value_kind_of(v);

	if (role == R_PLAN && strcmp(key, pg->k_indptr) == 0)
		return new_ints(pg->dt_indptr, pg->new_indptr, pg->nkeep + 1, err);
	if (role == R_PLAN && pg->kind != B_DECODE && strcmp(key, pg->k_qo) == 0)
		return new_ints(pg->dt_qo, pg->new_qo, pg->nkeep + 1, err);
	if (role == R_PLAN && pg->kind != B_RAGGED && strcmp(key, pg->k_indices) == 0)
		return new_ints(pg->dt_indices, pg->new_indices, pg->npk, err);
	if (role == R_PLAN && pg->kind != B_RAGGED && strcmp(key, pg->k_last) == 0)
		return new_ints(pg->dt_last, pg->new_last, pg->nkeep, err);
	if (role == R_RUN && k == MATE_V_TENSOR && (strcmp(key, pg->k_q) == 0 ||
	    strcmp(key, pg->k_q2) == 0 || strcmp(key, pg->k_out) == 0 || strcmp(key, pg->k_lse) == 0 ||
	    is_result_key(key)))
		return cut_tensor(key, v, 0, pg->nq, pg->qrows, pg->nqk, err);
	if (role == R_RUN && k == MATE_V_TENSOR && pg->kind == B_RAGGED &&
	    (strcmp(key, pg->k_k) == 0 || strcmp(key, pg->k_v) == 0))
		return cut_tensor(key, v, pg->kv_dim, pg->npages, pg->pages, pg->npk, err);
	if (role == R_RUN && k == MATE_V_TENSOR && pg->kind != B_RAGGED &&
	    (strcmp(key, pg->k_kv) == 0 || strcmp(key, pg->k_kv2) == 0 || has_prefix_key(key, pg->k_kv)))
		return cut_tensor(key, v, 0, pg->npages, pg->pages, pg->npk, err);
	if (role == R_RUN && pg->kind != B_RAGGED && (k == MATE_V_TUPLE || k == MATE_V_LIST) &&
	    strcmp(key, pg->k_kv) == 0) {
		mate_value *seq = k == MATE_V_TUPLE ? mate_value_tuple() : mate_value_list();

		for (size_t i = 0; seq != NULL && i < mate_value_len(v); i++) {
			const mate_value *it = mate_value_item(v, i);
			mate_value *ni = mate_value_kind_of(it) == MATE_V_TENSOR ?
			    cut_tensor(key, it, 0, pg->npages, pg->pages, pg->npk, err) : mate_value_copy(it);

			if (ni == NULL || mate_value_append(seq, ni) != MATE_OK) {
				mate_value_free(seq);
				return NULL;
			}
		}
		if (seq == NULL)
			mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return seq;
	}
	if (copy && k == MATE_V_TENSOR)
		return cut_tensor(key, v, 0, 0, NULL, 0, err);
	return mate_value_copy(v);
}

/* A copy of the plan's or run's dict cut to the kept requests; the tensors under
 * copy_also's keys copied whole. */
static mate_value *
paged_dict(const struct paged *pg, enum role role, const mate_value *dict,
    const mate_value *copy_also, mate_error *err)
{
	mate_value *out = mate_value_dict();

	if (out == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < mate_value_len(dict); i++) {
		const char *key = mate_value_get_str(mate_value_key(dict, i), NULL);
		mate_value *nv = paged_value(pg, role, key, mate_value_item(dict, i),
		    copy_also != NULL && mate_value_lookup(copy_also, key) != NULL, err);

		if (nv == NULL) {
			if (err->code == MATE_OK)
				mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			mate_value_free(out);
			return NULL;
		}
		if (mate_value_set_str(out, key, nv) != MATE_OK) {
			mate_value_free(out);
			mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			return NULL;
		}
	}
	return out;
}

static void
dep_free(struct dep *d)
{
	mate_value_free(d->args);
	mate_value_free(d->exp);
	mate_dump_free(d->d);
	free(d->path);
}

static int
dep_open(struct dep *dp, const char *path, mate_error *err)
{
	if ((dp->path = strdup(path)) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	if ((dp->d = mate_dump_open(path, err)) == NULL || (dp->args = mate_dump_load_args(dp->d, err)) == NULL ||
	    mate_dump_load_outputs(dp->d, &dp->exp, err) != MATE_OK)
		return err->code != MATE_OK ? err->code : MATE_ERR_FORMAT;
	dp->info = mate_dump_get_info(dp->d);
	dp->req.function = dp->info->function;
	dp->req.module = dp->info->module;
	dp->req.signature = mate_dump_signature(dp->d);
	dp->req.self_id = dp->info->self_id;
	dp->req.process_id = dp->info->process_id;
	dp->req.args = dp->args;
	dp->req.expected = dp->exp;
	return MATE_OK;
}

/* The folder that holds path (malloc'ed; "." for a bare name). */
static char *
parent_of(const char *path)
{
	char *p = strdup(path);
	size_t n;

	if (p == NULL)
		return NULL;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	while (n > 0 && p[n - 1] != '/')
		n--;
	while (n > 1 && p[n - 1] == '/')
		n--;
	if (n == 0) {
		free(p);
		return strdup(".");
	}
	p[n] = '\0';
	return p;
}

/* Finds the run's plan and __init__ (the same process and self_id, before it in its
 * root) and reads the plan's page table. */
static int
paged_setup(struct shrink *s, mate_error *err)
{
	struct paged *pg = &s->pg;
	char *root = parent_of(s->dump), prefix[256];
	mate_dump_list *l;
	size_t n, at = (size_t)-1;
	const struct mate_dump_info *plan = NULL, *init = NULL;
	const char *dot = strrchr(s->info->function, '.');
	const mate_value *q, *kv;
	int64_t nind = 0, nlast = 0, nptr = 0, nqo = 0;
	int rc;

	if (root == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	if (dot == NULL || (size_t)(dot - s->info->function) >= sizeof(prefix) - 16) {
		free(root);
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: not a method",
		    s->info->function);
	}
	if ((l = mate_dump_list_new(0, err)) == NULL || mate_dump_list_add(l, root, err) < 0) {
		mate_dump_list_free(l);
		free(root);
		return err->code;
	}
	mate_dump_list_sort(l);
	n = mate_dump_list_count(l);
	for (size_t i = 0; i < n; i++)
		if (strcmp(mate_dump_list_get(l, i)->name, s->info->name) == 0)
			at = i;
	for (size_t i = at; at != (size_t)-1 && i-- > 0;) {
		const struct mate_dump_info *d = mate_dump_list_get(l, i);
		size_t pl = (size_t)(dot - s->info->function);

		if (d->process_id != s->info->process_id || d->self_id == NULL ||
		    strcmp(d->self_id, s->info->self_id) != 0 ||
		    strncmp(d->function, s->info->function, pl + 1) != 0)
			continue;
		if (plan == NULL && strcmp(d->function + pl + 1, "plan") == 0)
			plan = d;
		else if (plan != NULL && strcmp(d->function + pl + 1, "__init__") == 0) {
			init = d;
			break;
		}
	}
	rc = MATE_OK;
	if (plan == NULL || init == NULL)
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its object's %s is "
		    "not in %s", s->info->function, plan == NULL ? "plan" : "__init__", root);
	if (rc == MATE_OK && (rc = dep_open(&s->init, init->path, err)) == MATE_OK)
		rc = dep_open(&s->plan, plan->path, err);
	mate_dump_list_free(l);
	free(root);
	if (rc != MATE_OK)
		return rc;
	{
		static const char *const names[4][4] = {  /* indptr, indices, last_page_len, qo_indptr */
			{ "indptr", "indices", "last_page_len", NULL },
			{ "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len", "qo_indptr" },
			{ "kv_indptr", NULL, NULL, "qo_indptr" },
			{ "kv_indptr", "kv_indices", "kv_len_arr", "qo_indptr" } };
		const char *const *nm = names[pg->kind];
		char k_lay[96], k_layout[96];
		const mate_value *lay;
		const char *ls;

		key_of(s->plan.args, s->plan.req.signature, NULL, nm[0], pg->k_indptr,
		    sizeof(pg->k_indptr));
		if (nm[1] != NULL) {
			key_of(s->plan.args, s->plan.req.signature, NULL, nm[1], pg->k_indices,
			    sizeof(pg->k_indices));
			key_of(s->plan.args, s->plan.req.signature, NULL, nm[2], pg->k_last,
			    sizeof(pg->k_last));
		}
		if (nm[3] != NULL)
			key_of(s->plan.args, s->plan.req.signature, NULL, nm[3], pg->k_qo,
			    sizeof(pg->k_qo));
		key_of(s->req.args, s->req.signature, NULL, pg->kind == B_MLA ? "q_nope" : "q", pg->k_q,
		    sizeof(pg->k_q));
		key_of(s->req.args, s->req.signature, NULL, pg->kind == B_MLA ? "ckv_cache" :
		    "paged_kv_cache", pg->k_kv, sizeof(pg->k_kv));
		if (pg->kind == B_MLA) {
			key_of(s->req.args, s->req.signature, NULL, "q_pe", pg->k_q2, sizeof(pg->k_q2));
			key_of(s->req.args, s->req.signature, NULL, "kpe_cache", pg->k_kv2,
			    sizeof(pg->k_kv2));
		}
		key_of(s->req.args, s->req.signature, NULL, "k", pg->k_k, sizeof(pg->k_k));
		key_of(s->req.args, s->req.signature, NULL, "v", pg->k_v, sizeof(pg->k_v));
		key_of(s->req.args, s->req.signature, NULL, "out", pg->k_out, sizeof(pg->k_out));
		key_of(s->req.args, s->req.signature, NULL, "lse", pg->k_lse, sizeof(pg->k_lse));
		/* an lse of (heads, tokens) is not cut by q's rows */
		key_of(s->req.args, s->req.signature, NULL, "lse_layout", k_lay, sizeof(k_lay));
		lay = mate_value_lookup(s->req.args, k_lay);
		if (mate_value_kind_of(lay) == MATE_V_STR && (ls = mate_value_get_str(lay, NULL)) != NULL &&
		    strcmp(ls, "NH") != 0)
			return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its lse_layout "
			    "'%s' puts the tokens in the second dimension", s->info->function, ls);
		/* a ragged k and v of HND layout: (heads, tokens, dim) */
		key_of(s->init.args, s->init.req.signature, NULL, "kv_layout", k_layout, sizeof(k_layout));
		lay = mate_value_lookup(s->init.args, k_layout);
		pg->kv_dim = mate_value_kind_of(lay) == MATE_V_STR &&
		    (ls = mate_value_get_str(lay, NULL)) != NULL && strcmp(ls, "HND") == 0;
	}
	if ((rc = ints_of(pg->kind == B_RAGGED ? "the plan's kv_indptr" : "the plan's indptr",
	    mate_value_lookup(s->plan.args, pg->k_indptr), &pg->indptr, &nptr, &pg->dt_indptr,
	    err)) != MATE_OK)
		return rc;
	if (pg->kind != B_RAGGED &&
	    ((rc = ints_of("the plan's indices", mate_value_lookup(s->plan.args, pg->k_indices), &pg->indices,
	    &nind, &pg->dt_indices, err)) != MATE_OK ||
	    (rc = ints_of(pg->kind == B_MLA ? "the plan's kv_len_arr" : "the plan's last_page_len",
	    mate_value_lookup(s->plan.args, pg->k_last), &pg->last, &nlast, &pg->dt_last, err)) != MATE_OK))
		return rc;
	if (pg->kind != B_DECODE && (rc = ints_of("the plan's qo_indptr", mate_value_lookup(s->plan.args,
	    pg->k_qo), &pg->qo, &nqo, &pg->dt_qo, err)) != MATE_OK)
		return rc;
	q = mate_value_lookup(s->req.args, pg->k_q);
	kv = mate_value_lookup(s->req.args, pg->kind == B_RAGGED ? pg->k_k : pg->k_kv);
	if (mate_value_kind_of(kv) == MATE_V_TUPLE || mate_value_kind_of(kv) == MATE_V_LIST)
		kv = mate_value_len(kv) > 0 ? mate_value_item(kv, 0) : NULL;
	if (mate_value_kind_of(q) != MATE_V_TENSOR || mate_value_kind_of(kv) != MATE_V_TENSOR ||
	    mate_value_get_tensor(q)->ndim < 1 || mate_value_get_tensor(kv)->ndim <= pg->kv_dim)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its q or %s is "
		    "not a tensor", s->info->function, pg->kind == B_RAGGED ? "k" : pg->kind == B_MLA ?
		    "ckv_cache" : "paged_kv_cache");
	pg->nq = mate_value_get_tensor(q)->shape[0];
	pg->npages = mate_value_get_tensor(kv)->shape[pg->kv_dim];
	pg->B = nptr - 1;
	if (pg->kind == B_DECODE) {  /* a row of q per request */
		nqo = pg->nq + 1;
		if ((pg->qo = calloc((size_t)nqo, sizeof(int64_t))) == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < nqo; i++)
			pg->qo[i] = i;
	}
	if (pg->kind == B_RAGGED) {  /* the rows of k and v, in order */
		nind = pg->npages;
		if ((pg->indices = calloc((size_t)(nind > 0 ? nind : 1), sizeof(int64_t))) == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < nind; i++)
			pg->indices[i] = i;
		nlast = pg->B;
	}
	if (nptr < 1 || nqo != nptr || nlast != pg->B || pg->indptr[0] != 0 || pg->qo[0] != 0 ||
	    pg->indptr[pg->B] > nind || pg->qo[pg->B] != pg->nq)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: the plan's %s (indptr of %" PRId64
		    ", %s of %" PRId64 ", %s of %" PRId64 ") does not fit q's %" PRId64 " rows",
		    s->info->function, pg->kind == B_RAGGED ? "indptrs" : "page table", nptr,
		    pg->kind == B_DECODE ? "last_page_len" : "qo_indptr",
		    pg->kind == B_DECODE ? nlast : nqo, pg->kind == B_RAGGED ? "rows of k" : "indices",
		    nind, pg->nq);
	for (int64_t i = 0; i < pg->B; i++)
		if (pg->indptr[i + 1] < pg->indptr[i] || pg->qo[i + 1] < pg->qo[i])
			return mate_set_error(err, MATE_ERR_FORMAT, "%s: the plan's %s decreases at %"
			    PRId64, s->info->function, pg->qo[i + 1] < pg->qo[i] ? "qo_indptr" : "indptr",
			    i + 1);
	for (int64_t j = 0; j < pg->indptr[pg->B]; j++)
		if (pg->indices[j] < 0 || pg->indices[j] >= pg->npages)
			return mate_set_error(err, MATE_ERR_FORMAT, "%s: the plan's page %" PRId64 " is "
			    "not one of the cache's %" PRId64, s->info->function, pg->indices[j], pg->npages);
	return MATE_OK;
}

/* Replays __init__, the plan on plan_args and the run on args/exp into *res. */
static void
replay_paged(struct shrink *s, mate_value *plan_args, mate_value *args, const mate_value *exp,
    struct mate_replay_result *res)
{
	struct mate_replay_request req = s->plan.req;

	mate_replay_execute(s->r, &s->init.req, res);
	req.args = plan_args;
	mate_replay_execute(s->r, &req, res);
	replay_on(s, args, exp, res);
}

/* Which requests fail alone. */
static int
paged_failing(struct shrink *s, mate_error *err)
{
	struct paged *pg = &s->pg;

	if ((pg->fail = calloc((size_t)(pg->B > 0 ? pg->B : 1), sizeof(int64_t))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (int64_t u = 0; u < pg->B; u++) {
		struct mate_replay_result res;
		mate_value *pa = NULL, *a = NULL, *e = NULL;
		int rc;

		if ((rc = paged_select(pg, &u, 1, err)) != MATE_OK ||
		    (pa = paged_dict(pg, R_PLAN, s->plan.args, NULL, err)) == NULL ||
		    (a = paged_dict(pg, R_RUN, s->req.args, s->req.expected, err)) == NULL ||
		    (s->req.expected != NULL &&
		    (e = paged_dict(pg, R_RUN, s->req.expected, NULL, err)) == NULL)) {
			mate_value_free(pa);
			mate_value_free(a);
			return rc != MATE_OK ? rc : err->code;
		}
		replay_paged(s, pa, a, e, &res);
		if (same_failure(s, &res))
			pg->fail[pg->nfail++] = u;
		mate_value_free(pa);
		mate_value_free(a);
		mate_value_free(e);
	}
	return MATE_OK;
}

static void
paged_report(struct shrink *s)
{
	const struct paged *pg = &s->pg;
	char b1[32], b2[32];
	const char *verb = s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatch" : "fail";

	s->report[0] = '\0';
	say(s, "request%s ", pg->nkeep > 1 ? "s" : "");
	for (size_t k = 0; k < pg->nkeep; k++)
		say(s, "%s%s", k ? ", " : "", grouped(pg->keep[k], b1, sizeof(b1)));
	say(s, " of %s: ", grouped(pg->B, b2, sizeof(b2)));
	if (pg->nfail == 1)
		say(s, "the only request that %ses", verb);
	else
		say(s, "%s of %s requests %s", grouped((int64_t)pg->nfail, b1, sizeof(b1)),
		    grouped(pg->B, b2, sizeof(b2)), verb);
	if (pg->kind == B_RAGGED)
		say(s, "; %s of %s rows of k and v kept", grouped((int64_t)pg->npk, b1, sizeof(b1)),
		    grouped(pg->npages, b2, sizeof(b2)));
	else
		say(s, "; %s of %s pages of the cache kept, renumbered", grouped((int64_t)pg->npk, b1,
		    sizeof(b1)), grouped(pg->npages, b2, sizeof(b2)));
	if (pg->kind != B_DECODE)
		say(s, "; %s of %s rows of q", grouped((int64_t)pg->nqk, b1, sizeof(b1)),
		    grouped(pg->nq, b2, sizeof(b2)));
}

/* ---- writing the dump ------------------------------------------------------------- */

static char *
join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (p != NULL) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

/* Sets shape and (contiguous) stride of a tensor's JSON object to t's. */
static void
set_json_shape(cJSON *o, const mate_tensor *t)
{
	int64_t stride[MATE_MAX_DIMS], acc = 1;
	cJSON *sh, *sd;

	if (!cJSON_IsObject(o))
		return;
	for (int i = t->ndim - 1; i >= 0; i--) {
		stride[i] = acc;
		acc *= t->shape[i] > 0 ? t->shape[i] : 1;
	}
	if ((sh = cJSON_CreateArray()) == NULL || (sd = cJSON_CreateArray()) == NULL) {
		cJSON_Delete(sh);
		return;
	}
	for (int i = 0; i < t->ndim; i++) {
		cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[i]));
		cJSON_AddItemToArray(sd, cJSON_CreateNumber((double)stride[i]));
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "shape") != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, "shape", sh);
	else
		cJSON_Delete(sh);
	if (cJSON_GetObjectItemCaseSensitive(o, "stride") != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, "stride", sd);
	else
		cJSON_Delete(sd);
	if (cJSON_GetObjectItemCaseSensitive(o, "is_contiguous") != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, "is_contiguous", cJSON_CreateTrue());
}

/* The metadata of the tensor under key: meta[key], or for "<parent>__<i>" the i-th
 * item of meta[parent] (the structured form), or NULL. */
static cJSON *
meta_of(cJSON *meta, const char *key)
{
	const char *sep = strstr(key, "__");
	char parent[128];
	cJSON *o, *items;
	char *end;
	long i;

	if ((o = cJSON_GetObjectItemCaseSensitive(meta, key)) != NULL || sep == NULL ||
	    (size_t)(sep - key) >= sizeof(parent))
		return o;
	memcpy(parent, key, (size_t)(sep - key));
	parent[sep - key] = '\0';
	i = strtol(sep + 2, &end, 10);
	if (*end != '\0' || i < 0 || (o = cJSON_GetObjectItemCaseSensitive(meta, parent)) == NULL ||
	    !cJSON_IsArray(items = cJSON_GetObjectItemCaseSensitive(o, "items")))
		return NULL;
	return cJSON_GetArrayItem(items, (int)i);
}

static void
set_number(cJSON *o, const char *key, double v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, key) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
}

/* A cut BLAS call's integers, from its cut inputs t, in its record's input_metadata. */
static void
blas_fix_record(const struct shrink *s, const mate_value *t, cJSON *inmeta)
{
	int64_t dims[5];

	if (!blas_dims(s, t, dims))
		return;
	for (int i = 0; i < 5; i++)
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(inmeta, s->k_dim[i])))
			set_number(inmeta, s->k_dim[i], (double)dims[i]);
}

/* The tensors of a file of a dump in role, cut as the shrink keeps them (a new dict). */
static mate_value *
cut_file(const struct shrink *s, enum role role, mate_value *t, mate_error *err)
{
	if (role == R_PLAN || role == R_RUN) {
		mate_value *nt = paged_dict(&s->pg, role, t, NULL, err);

		mate_value_free(t);
		return nt;
	}
	if (role == R_CALL)
		for (int i = 0; i < s->nst; i++) {
			mate_value *nt;

			if (s->st[i].note || s->st[i].keep == NULL)
				continue;
			if ((nt = cut_dict(&s->st[i], t, s->st[i].n, s->st[i].keep, s->st[i].nkeep, NULL,
			    err)) == NULL) {
				mate_value_free(t);
				return NULL;
			}
			mate_value_free(t);
			t = nt;
		}
	return t;
}

/* One tensor file (stem "inputs", "outputs", "inplace") of the dump in src, in
 * role, cut into dir; its bytes into *bytes. MATE_OK also when there is none. */
static int
write_file(const struct shrink *s, enum role role, const char *src_dir, const char *format,
    const char *stem, const char *dir, cJSON *rec, int64_t *bytes, mate_error *err)
{
	const char *ext = strcmp(format ? format : "", "safetensors") == 0 ? ".safetensors" : ".pt";
	char name[64];
	char *src, *dst;
	mate_value *t;
	cJSON *details = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
	cJSON *inmeta = cJSON_GetObjectItemCaseSensitive(rec, "input_metadata");
	int rc = MATE_OK;
	struct stat sb;

	*bytes = 0;
	snprintf(name, sizeof(name), "%s%s", stem, ext);
	if ((src = join(src_dir, name)) == NULL || (dst = join(dir, name)) == NULL) {
		free(src);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	if (lstat(src, &sb) != 0) {
		free(src);
		free(dst);
		return MATE_OK;
	}
	if ((t = mate_dump_read_tensors(src, 1, err)) == NULL || (t = cut_file(s, role, t, err)) == NULL) {
		free(src);
		free(dst);
		return err->code != MATE_OK ? err->code : MATE_ERR_NOMEM;
	}
	if (s->blas && role == R_CALL && strcmp(stem, "inputs") == 0)
		blas_fix_record(s, t, inmeta);
	for (size_t i = 0; i < mate_value_len(t); i++) {
		const char *key = mate_value_get_str(mate_value_key(t, i), NULL);
		const mate_value *v = mate_value_item(t, i);

		if (mate_value_kind_of(v) != MATE_V_TENSOR)
			continue;
		set_json_shape(cJSON_GetObjectItemCaseSensitive(details, key), mate_value_get_tensor(v));
		set_json_shape(meta_of(inmeta, key), mate_value_get_tensor(v));
		*bytes += mate_tensor_nbytes(mate_value_get_tensor(v));
	}
	rc = strcmp(ext, ".pt") == 0 ? mate_pt_write(dst, t, NULL, err) :
	    mate_safetensors_write(dst, t, NULL, err);
	mate_value_free(t);
	free(src);
	free(dst);
	return rc;
}

static int
write_text(const char *path, const char *text, const char *mode, mate_error *err)
{
	FILE *f = fopen(path, mode);
	int bad;

	if (f == NULL)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	bad = fputs(text, f) < 0;
	if (fclose(f) != 0 || bad)
		return mate_set_error(err, MATE_ERR_IO, "%s: cannot write", path);
	return MATE_OK;
}

/* Writes the dump in src (its record rec0, its info) as role into root/<its name>,
 * its record appended to root/session.jsonl where the dump's root has one. */
static int
write_dump(const struct shrink *s, enum role role, const char *src, const cJSON *rec0,
    const struct mate_dump_info *info, const char *root, const char *final_root, mate_error *err)
{
	cJSON *rec = cJSON_Duplicate(rec0, 1);
	cJSON *ti;
	char *dir = join(root, info->name), *final = join(final_root, info->name);
	char *text = NULL, *line = NULL, *path = NULL;
	int64_t in = 0, out = 0, inpl = 0;
	int rc = MATE_OK;
	size_t n;

	if (rec == NULL || dir == NULL || final == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	if (mkdir(dir, 0777) != 0) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
		goto done;
	}
	if ((rc = write_file(s, role, src, info->format, "inputs", dir, rec, &in, err)) != MATE_OK ||
	    (rc = write_file(s, role, src, info->format, "outputs", dir, rec, &out, err)) != MATE_OK ||
	    (rc = write_file(s, role, src, info->format, "inplace", dir, rec, &inpl, err)) != MATE_OK)
		goto done;
	if ((ti = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info")) != NULL) {
		set_number(ti, "input_size_bytes", (double)in);
		set_number(ti, "input_size_mb", (double)in / (1024.0 * 1024.0));
		set_number(ti, "output_size_bytes", (double)out);
		set_number(ti, "output_size_mb", (double)out / (1024.0 * 1024.0));
		set_number(ti, "inplace_size_bytes", (double)inpl);
		set_number(ti, "inplace_size_mb", (double)inpl / (1024.0 * 1024.0));
		set_number(ti, "total_size_bytes", (double)(in + out + inpl));
		set_number(ti, "total_size_mb", (double)(in + out + inpl) / (1024.0 * 1024.0));
	}
	if (cJSON_GetObjectItemCaseSensitive(rec, "dump_dir") != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(rec, "dump_dir", cJSON_CreateString(final));
	if ((text = cJSON_PrintUnformatted(rec)) == NULL || (line = malloc(strlen(text) + 2)) == NULL ||
	    (path = join(dir, "metadata.jsonl")) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	n = strlen(text);
	memcpy(line, text, n);
	memcpy(line + n, "\n", 2);
	if ((rc = write_text(path, line, "wx", err)) != MATE_OK)
		goto done;
	if (s->session) {
		free(path);
		if ((path = join(root, "session.jsonl")) == NULL)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		else
			rc = write_text(path, line, "a", err);
	}
done:
	cJSON_Delete(rec);
	cJSON_free(text);
	free(line);
	free(path);
	free(dir);
	free(final);
	return rc;
}

/* Removes a dump folder that write_dump() made under root. */
static void
remove_dump(const char *root, const char *name)
{
	static const char *const files[] = { "inputs.pt", "inputs.safetensors", "outputs.pt",
	    "outputs.safetensors", "inplace.pt", "inplace.safetensors", "metadata.jsonl" };
	char *dir = join(root, name), *p;

	for (size_t i = 0; dir != NULL && i < sizeof(files) / sizeof(files[0]); i++)
		if ((p = join(dir, files[i])) != NULL) {
			unlink(p);
			free(p);
		}
	if (dir != NULL)
		rmdir(dir);
	free(dir);
}

static void
remove_tree(const struct shrink *s, const char *root)
{
	char *p;

	remove_dump(root, s->info->name);
	if (s->paged) {
		remove_dump(root, s->init.info->name);
		remove_dump(root, s->plan.info->name);
	}
	if ((p = join(root, "session.jsonl")) != NULL) {
		unlink(p);
		free(p);
	}
	rmdir(root);
}

/* Whether path does not exist or is an empty folder (which is then removed, for the
 * rename). @return MATE_OK, or an error. */
static int
check_target(const char *path, int remove_empty, mate_error *err)
{
	DIR *dp;
	struct dirent *e;
	int empty = 1;
	struct stat sb;

	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? MATE_OK :
		    mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s exists and is not a folder: "
		    "refusing to overwrite it", path);
	if ((dp = opendir(path)) == NULL)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	while ((e = readdir(dp)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(dp);
	if (!empty)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s is not empty: refusing to write "
		    "into it", path);
	if (remove_empty && rmdir(path) != 0)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	return MATE_OK;
}

/* mate_replay_run()'s report: the result of the dump named ctx->name. */
struct catch_run {
	const char *name;
	struct mate_replay_result *res;
	int found;
};

static void
catch_result(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *res,
    void *ctx)
{
	struct catch_run *c = ctx;

	(void)i;
	if (strcmp(d->name, c->name) == 0) {
		*c->res = *res;
		c->found = 1;
	}
}

/* Replays the written root in order (a wrapper's __init__, plan, run) into *res: the
 * result of the shrunk call. */
static int
replay_root(const struct shrink *s, const char *root, struct mate_replay_result *res,
    mate_error *err)
{
	mate_dump_list *l = mate_dump_list_new(0, err);
	const struct mate_dump_info *d[3];
	struct catch_run c = { s->info->name, res, 0 };
	size_t n;
	int rc;

	if (l == NULL)
		return err->code;
	if (mate_dump_list_add(l, root, err) < 0) {
		mate_dump_list_free(l);
		return err->code;
	}
	mate_dump_list_sort(l);
	n = mate_dump_list_count(l);
	for (size_t i = 0; i < n && i < 3; i++)
		d[i] = mate_dump_list_get(l, i);
	rc = mate_replay_run(s->r, d, n < 3 ? n : 3, 1, catch_result, &c, err);
	mate_dump_list_free(l);
	if (rc == MATE_OK && !c.found) {
		memset(res, 0, sizeof(*res));
		res->verdict = MATE_REPLAY_ERROR;
		snprintf(res->message, sizeof(res->message), "the written dump was not found");
	}
	return rc;
}

/* Writes the dumps as the shrink now keeps them into a temporary root beside outdir,
 * replays them from there; on the same failure renames it to outdir (*ok 1). */
static int
write_and_check(struct shrink *s, const char *outdir, int *ok, struct mate_replay_result *res,
    mate_error *err)
{
	size_t len = strlen(outdir) + 16;
	char *tmp = malloc(len), *dir;
	int rc;

	*ok = 0;
	if (tmp == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	snprintf(tmp, len, "%s.tmp-XXXXXX", outdir);
	if (mkdtemp(tmp) == NULL) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	if (s->paged) {
		if ((rc = write_dump(s, R_INIT, s->init.path, mate_dump_record(s->init.d), s->init.info,
		    tmp, outdir, err)) == MATE_OK &&
		    (rc = write_dump(s, R_PLAN, s->plan.path, mate_dump_record(s->plan.d), s->plan.info,
		    tmp, outdir, err)) == MATE_OK &&
		    (rc = write_dump(s, R_RUN, s->dump, mate_dump_record(s->d), s->info, tmp, outdir,
		    err)) == MATE_OK &&
		    (rc = replay_root(s, tmp, res, err)) == MATE_OK)
			*ok = same_failure(s, res);
	} else if ((rc = write_dump(s, R_CALL, s->dump, mate_dump_record(s->d), s->info, tmp, outdir,
	    err)) == MATE_OK) {
		if ((dir = join(tmp, s->info->name)) == NULL)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		else {
			mate_replay_dump(s->r, dir, res);
			free(dir);
			*ok = same_failure(s, res);
		}
	}
	if (rc == MATE_OK && *ok && (rc = check_target(outdir, 1, err)) == MATE_OK &&
	    rename(tmp, outdir) != 0)
		rc = mate_set_error(err, MATE_ERR_IO, "cannot rename %s to %s: %s", tmp, outdir,
		    strerror(errno));
	if (rc != MATE_OK || !*ok)
		remove_tree(s, tmp);
	free(tmp);
	return rc;
}

/* ---- the shrink ------------------------------------------------------------------- */

/* Cuts the call by its stages (s->st): *cut 1 when some stage kept less than all. */
static int
shrink_stages(struct shrink *s, int *cut, mate_error *err)
{
	mate_value *cargs = NULL, *cexp = NULL;
	int rc = MATE_OK;

	*cut = 0;
	if ((cargs = mate_value_copy(s->req.args)) == NULL ||
	    (s->req.expected != NULL && (cexp = mate_value_copy(s->req.expected)) == NULL)) {
		mate_value_free(cargs);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; i < s->nst && rc == MATE_OK; i++) {
		struct stage *st = &s->st[i];

		if (st->note)
			continue;
		if (st->guard[0] != '\0') {
			const mate_value *g = mate_value_lookup(cargs, st->guard_key);
			const char *gs = mate_value_kind_of(g) == MATE_V_STR ? mate_value_get_str(g, NULL) :
			    NULL;

			if (g != NULL && mate_value_kind_of(g) != MATE_V_NONE &&
			    strcmp(st->guard_val, "None") == 0) {
				rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced by %s: "
				    "its %s is given", s->info->function, st->unit, st->guard);
				break;
			}
			if (g != NULL && mate_value_kind_of(g) != MATE_V_NONE &&
			    (gs == NULL || strcmp(gs, st->guard_val) != 0)) {
				rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced by %s: "
				    "its %s is %s%s%s, not '%s'", s->info->function, st->unit, st->guard,
				    gs != NULL ? "'" : "", gs != NULL ? gs : "not a string", gs != NULL ? "'" : "",
				    st->guard_val);
				break;
			}
		}
		if ((rc = find_failing(s, st, cargs, cexp, err)) != MATE_OK || st->nfail == 0)
			continue;
		st->keep = st->fail;
		st->nkeep = 1;
		*cut = 1;
		rc = apply_stage(s, st, &cargs, &cexp, err);
	}
	mate_value_free(cargs);
	mate_value_free(cexp);
	return rc;
}

static int
shrink_into(mate_replay *r, const char *dump, const char *outdir, char *report,
    size_t reportlen, mate_error *err)
{
	struct shrink s;
	mate_value *args = NULL, *exp = NULL, *cargs = NULL;
	const char *rule, *hsig;
	struct mate_replay_result res;
	int rc, ok, cut = 0;
	char *parent = NULL, *session = NULL;
	struct stat sb;

	memset(&s, 0, sizeof(s));
	s.r = r;
	s.dump = dump;
	s.report = report;
	s.reportlen = reportlen;
	report[0] = '\0';
	mate_error_clear(err);
	if ((rc = check_target(outdir, 0, err)) != MATE_OK)
		return rc;
	if ((s.d = mate_dump_open(dump, err)) == NULL)
		return err->code;
	s.info = mate_dump_get_info(s.d);
	if ((args = mate_dump_load_args(s.d, err)) == NULL ||
	    (rc = mate_dump_load_outputs(s.d, &exp, err)) != MATE_OK) {
		rc = err->code != MATE_OK ? err->code : MATE_ERR_FORMAT;
		goto done;
	}
	if ((parent = parent_of(dump)) == NULL || (session = join(parent, "session.jsonl")) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	s.session = stat(session, &sb) == 0 && S_ISREG(sb.st_mode);
	s.req.function = s.info->function;
	s.req.module = s.info->module;
	s.req.signature = mate_dump_signature(s.d);
	s.req.self_id = s.info->self_id;
	s.req.process_id = s.info->process_id;
	s.req.args = args;
	s.req.expected = exp;
	s.req.recorded_error = s.info->status == MATE_DUMP_FAILED ?
	    (s.info->error ? s.info->error : "failed") : NULL;
	rule = mate_replay_slice_rule(r, &s.req, &hsig);
	s.blas = rule != NULL && strcmp(rule, "@blas") == 0;
	s.paged = rule != NULL && rule[0] == '@' && !s.blas;
	if (s.paged && strcmp(rule, "@paged") != 0 && strcmp(rule, "@prefill") != 0 &&
	    strcmp(rule, "@ragged") != 0 && strcmp(rule, "@mla") != 0) {
		rc = mate_set_error(err, MATE_ERR_ARGUMENT, "slicing rule %s: no such batch rule", rule);
		goto done;
	}
	s.pg.kind = !s.paged ? B_DECODE : strcmp(rule, "@ragged") == 0 ? B_RAGGED :
	    strcmp(rule, "@prefill") == 0 ? B_PREFILL : strcmp(rule, "@mla") == 0 ? B_MLA : B_DECODE;
	if (s.paged && (rc = paged_setup(&s, err)) != MATE_OK)
		goto done;
	/* how the call fails, on a copy (a call may write its arguments) */
	if ((cargs = cut_dict(NULL, args, 0, NULL, 0, args, err)) == NULL) {
		rc = err->code;
		goto done;
	}
	if (s.paged)
		replay_paged(&s, s.plan.args, cargs, exp, &s.want);
	else
		replay_on(&s, cargs, exp, &s.want);
	mate_value_free(cargs);
	if (s.want.verdict != MATE_REPLAY_MISMATCH && s.want.verdict != MATE_REPLAY_ERROR) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s %s on replay (%s): nothing to shrink",
		    s.info->function, s.want.verdict == MATE_REPLAY_UNSUPPORTED ? "is unsupported" :
		    s.want.verdict == MATE_REPLAY_PASSED ? "passes" : mate_replay_verdict_name(s.want.verdict),
		    s.want.message);
		goto done;
	}
	if (rule == NULL) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: %s",
		    s.info->function, s.info->self_id != NULL ? "a call on an object (self_id) depends on "
		    "the calls before it, and its handler states no rule for cutting them together" :
		    "its handler states no slicing rule (no rows, tokens or requests that fail alone)");
		goto done;
	}
	if (s.paged) {
		if ((rc = paged_failing(&s, err)) != MATE_OK)
			goto done;
		cut = s.pg.nfail > 0 && s.pg.B > 1;
		if (cut && (rc = paged_select(&s.pg, s.pg.fail, 1, err)) != MATE_OK)
			goto done;
	} else if ((rc = s.blas ? blas_setup(&s, hsig, err) : parse_rule(&s, rule, hsig, err)) !=
	    MATE_OK || (rc = shrink_stages(&s, &cut, err)) != MATE_OK)
		goto done;
	if (!cut) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "the failure of %s does not survive "
		    "slicing: no %s of it fails alone", s.info->function, s.paged ? "request" :
		    s.st[0].unit);
		goto done;
	}
	if ((rc = write_and_check(&s, outdir, &ok, &res, err)) != MATE_OK)
		goto done;
	if (!ok) {  /* then every unit that fails alone */
		for (int i = 0; i < s.nst; i++)
			if (s.st[i].keep != NULL)
				s.st[i].nkeep = s.st[i].nfail;
		if (s.paged && (rc = paged_select(&s.pg, s.pg.fail, s.pg.nfail, err)) != MATE_OK)
			goto done;
		if ((rc = write_and_check(&s, outdir, &ok, &res, err)) != MATE_OK)
			goto done;
		if (!ok) {
			rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "the failure of %s does not survive "
			    "slicing: the cut dump replays as %s (%s)", s.info->function,
			    mate_replay_verdict_name(res.verdict), res.message);
			goto done;
		}
	}
	if (s.paged)
		paged_report(&s);
	else
		write_report(&s, args);
	say(&s, "\nreplays as %s: %s", mate_replay_verdict_name(res.verdict), res.message);
	rc = MATE_OK;
done:
	for (int i = 0; i < s.nst; i++) {
		free(s.st[i].fail);
		free(s.st[i].ip);
	}
	free(s.pg.indptr);
	free(s.pg.indices);
	free(s.pg.last);
	free(s.pg.pages);
	free(s.pg.new_indptr);
	free(s.pg.new_indices);
	free(s.pg.new_last);
	free(s.pg.qo);
	free(s.pg.qrows);
	free(s.pg.new_qo);
	free(s.pg.fail);
	dep_free(&s.init);
	dep_free(&s.plan);
	free(parent);
	free(session);
	mate_value_free(args);
	mate_value_free(exp);
	mate_dump_free(s.d);
	return rc;
}

int
mate_replay_shrink(mate_replay *r, const char *dump, const char *outdir, char *report,
    size_t reportlen, mate_error *err)
{
	char *dir = strdup(outdir);
	size_t n;
	int rc;

	if (report == NULL || reportlen == 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "mate_replay_shrink: no report buffer");
	report[0] = '\0';
	if (dir == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')  /* "out/": the folder out, whose temporary is beside it */
		dir[--n] = '\0';
	if (n == 0 || strcmp(dir, "/") == 0 || strcmp(dir, ".") == 0 || strcmp(dir, "..") == 0) {
		free(dir);
		return mate_set_error(err, MATE_ERR_ARGUMENT, "-o %s: not a folder that can be "
		    "written whole", outdir);
	}
	rc = shrink_into(r, dump, dir, report, reportlen, err);
	free(dir);
	return rc;
}
