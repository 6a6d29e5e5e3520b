/* replay_shrink.c: mate-replay --shrink: cuts a failing call's inputs to the smallest slice (rows, tokens, requests of a segmented call, heads, a GEMM's or a BLAS or cuBLAS call's rows of A and columns of B) that still fails the same way, and writes it as a dump of the same format (a batch wrapper's requests: replay_shrink_batch.c). */
#include "replay_shrink.h"

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
void
shrink_key_of(const mate_value *args, const char *recsig, const char *hsig, const char *param,
    char *key, size_t len)
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
	shrink_key_of(s->req.args, s->req.signature, handler_sig, param, key, len);
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

int
shrink_is_result_key(const char *key)
{
	return strcmp(key, "result") == 0 || strncmp(key, "result_", 7) == 0;
}

/* The cut of st that applies to the tensor under key, or NULL. */
static const struct cut *
cut_for(const struct stage *st, const char *key)
{
	for (int i = 0; i < st->ncuts; i++) {
		const struct cut *c = &st->cuts[i];

		if (c->key[0] != '\0' ? strcmp(c->key, key) == 0 : shrink_is_result_key(key))
			return c;
	}
	return NULL;
}

/* A contiguous copy of tensor v keeping indices keep[0..nkeep) along dim (all of
 * them, in order, when keep is NULL: a deep copy). NULL with err. */
mate_value *
shrink_cut_tensor(const char *key, const mate_value *v, int dim, int64_t n, const int64_t *keep,
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
/* shrink_cut_tensor() of a grouped cut: of the m indices along dim, the one of each unit
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
	nv = shrink_cut_tensor(key, v, dim, m, idx, nkeep, err);
	free(idx);
	return nv;
}

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
			nv = shrink_new_ints(st->ip_dt, newip, nkeep + 1, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL && c->seg && rows != NULL)
			nv = shrink_cut_tensor(key, v, c->dim, st->rows, rows, nrows, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL &&
		    mate_value_get_tensor(v)->ndim > 0 && c->group && keep != NULL)
			nv = cut_group(key, v, c->dim, n, keep, nkeep, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL &&
		    mate_value_get_tensor(v)->ndim > 0)
			nv = shrink_cut_tensor(key, v, c->dim, n, keep, nkeep, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && copy_also != NULL &&
		    mate_value_lookup(copy_also, key) != NULL)
			nv = shrink_cut_tensor(key, v, 0, 0, NULL, 0, err);
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
	if ((rc = shrink_ints_of(what, mate_value_lookup(args, st->seg_key), &st->ip, &nip, &st->ip_dt,
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

/* Whether the transpose argument under key transposes: 'T'/'C' (Fortran), CBLAS's
 * 112/113, or cuBLAS's CUBLAS_OP_T/_C (1, 2; cublas set); -1 when it is neither that nor
 * 'N', 111 or CUBLAS_OP_N (0). */
static int
transposes(const mate_value *args, const char *key, int cublas)
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
	if (cublas)
		return i == 0 ? 0 : i == 1 || i == 2 ? 1 : -1;
	return i == 111 ? 0 : i == 112 || i == 113 ? 1 : -1;
}

/* The stages of a cblas_?gemm, ?gemm_, cublasSgemm or cublasGemmEx call (signature
 * hsig): the rows of A (and of C), the columns of B (and of C), K kept; which of A's and
 * B's dimensions they are follows the transposes. cuBLAS is column major, as Fortran. */
static int
blas_setup(struct shrink *s, const char *hsig, mate_error *err)
{
	static const char *const cb[] = { "Order", "TransA", "TransB", "A", "B", "C", "M", "N",
	    "lda", "ldb", "ldc" };
	static const char *const f77[] = { NULL, "transa", "transb", "a", "b", "c", "m", "n",
	    "lda", "ldb", "ldc" };
	static const char *const cu[] = { NULL, "transa", "transb", "A", "B", "C", "m", "n",
	    "lda", "ldb", "ldc" };
	int cublas = param_position(hsig, "handle") >= 0;
	const char *const *nm = param_position(hsig, "Order") >= 0 ? cb : cublas ? cu : f77;
	char k[6][96];
	int ta, tb;

	for (int i = 0; i < 6; i++)
		if (nm[i] != NULL)
			param_key(s, hsig, nm[i], k[i], sizeof(k[i]));
	for (int i = 0; i < 5; i++)
		param_key(s, hsig, nm[6 + i], s->k_dim[i], sizeof(s->k_dim[i]));
	ta = transposes(s->req.args, k[1], cublas);
	tb = transposes(s->req.args, k[2], cublas);
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
int
shrink_same_failure(const struct shrink *s, const struct mate_replay_result *res)
{
	if (res->verdict != s->want.verdict)
		return 0;
	if (s->want.verdict == MATE_REPLAY_ERROR)
		return same_words(res->message, s->want.message);
	return s->want.verdict != MATE_REPLAY_MISMATCH || strcmp(res->key, s->want.key) == 0;
}

/* Replays the call on args and exp (which it may write) into *res. */
void
shrink_replay_on(struct shrink *s, mate_value *args, const mate_value *exp,
    struct mate_replay_result *res)
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
		shrink_replay_on(s, a, e, &res);
		if (shrink_same_failure(s, &res))
			st->fail[st->nfail++] = u;
		mate_value_free(a);
		mate_value_free(e);
	}
	return MATE_OK;
}

/* ---- the report ----------------------------------------------------------------- */

/* n with thousands separators ("1,731"). */
const char *
shrink_grouped(int64_t n, char *buf, size_t len)
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

void
shrink_say(struct shrink *s, const char *fmt, ...)
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
		shrink_say(s, "%s%s%s ", first ? "" : " and ", st->unit, st->nkeep > 1 ? "s" : "");
		for (size_t k = 0; k < st->nkeep; k++)
			shrink_say(s, "%s%s", k ? ", " : "", shrink_grouped(st->keep[k], b1, sizeof(b1)));
		shrink_say(s, " of %s", shrink_grouped(st->n, b2, sizeof(b2)));
		if (cutting > 1)
			shrink_say(s, " of %s", st->cuts[0].param);
		if (st->seg[0] != '\0') {
			int64_t rows = 0;

			for (size_t k = 0; k < st->nkeep; k++)
				rows += st->ip[st->keep[k] + 1] - st->ip[st->keep[k]];
			shrink_say(s, " (%s of %s rows of %s)", shrink_grouped(rows, b1, sizeof(b1)),
			    shrink_grouped(st->rows, b3, sizeof(b3)), st->cuts[0].param);
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
				shrink_say(s, " (%s = %s kept)", st->unit, shrink_grouped(t->shape[d], b1, sizeof(b1)));
		} else if (!st->note && st->keep == NULL && st->n > 1) {
			shrink_say(s, "; all %s %ss kept (none fails alone)", shrink_grouped(st->n, b1, sizeof(b1)),
			    st->unit);
		}
	}
	if (cutting == 1)
		for (int i = 0; i < s->nst; i++) {
			const struct stage *st = &s->st[i];

			if (st->note || st->keep == NULL)
				continue;
			if (st->nfail == 1)
				shrink_say(s, ": the only %s that %s", st->unit,
				    s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatches" : "fails");
			else
				shrink_say(s, ": %s of %s %ss %s", shrink_grouped((int64_t)st->nfail, b1, sizeof(b1)),
				    shrink_grouped(st->n, b3, sizeof(b3)), st->unit,
				    s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatch" : "fail");
		}
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
		mate_value *nt = shrink_paged_dict(&s->pg, role, t, NULL, err);

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
			*ok = shrink_same_failure(s, res);
	} else if ((rc = write_dump(s, R_CALL, s->dump, mate_dump_record(s->d), s->info, tmp, outdir,
	    err)) == MATE_OK) {
		if ((dir = join(tmp, s->info->name)) == NULL)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		else {
			mate_replay_dump(s->r, dir, res);
			free(dir);
			*ok = shrink_same_failure(s, res);
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
	if ((parent = shrink_parent_of(dump)) == NULL ||
	    (session = join(parent, "session.jsonl")) == NULL) {
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
	if (s.paged && (rc = shrink_paged_setup(&s, err)) != MATE_OK)
		goto done;
	/* how the call fails, on a copy (a call may write its arguments) */
	if ((cargs = cut_dict(NULL, args, 0, NULL, 0, args, err)) == NULL) {
		rc = err->code;
		goto done;
	}
	if (s.paged)
		shrink_replay_paged(&s, s.plan.args, cargs, exp, &s.want);
	else
		shrink_replay_on(&s, cargs, exp, &s.want);
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
		if ((rc = shrink_paged_failing(&s, err)) != MATE_OK)
			goto done;
		cut = s.pg.nfail > 0 && s.pg.B > 1;
		if (cut && (rc = shrink_paged_select(&s.pg, s.pg.fail, 1, err)) != MATE_OK)
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
		if (s.paged && (rc = shrink_paged_select(&s.pg, s.pg.fail, s.pg.nfail, err)) != MATE_OK)
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
		shrink_paged_report(&s);
	else
		write_report(&s, args);
	shrink_say(&s, "\nreplays as %s: %s", mate_replay_verdict_name(res.verdict), res.message);
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
	shrink_dep_free(&s.init);
	shrink_dep_free(&s.plan);
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
