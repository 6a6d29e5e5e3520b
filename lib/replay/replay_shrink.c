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
	char key[96];               /* the recorded argument's key ("arg_0", "kwarg_out"), or "" */
};

struct stage {
	char unit[32];              /* "row", "column", ...; a kept note: its name ("K") */
	int note;                   /* "=NAME:PARAM.DIM": reported as kept, cuts nothing */
	struct cut cuts[MAX_CUTS];
	int ncuts;
	/* what the shrink chose */
	int64_t n;                  /* units before the cut */
	int64_t *fail;              /* the units that fail alone */
	size_t nfail;
	const int64_t *keep;        /* what is kept: fail[0], all of fail, or NULL (all) */
	size_t nkeep;
};

struct shrink {
	mate_replay *r;
	const char *dump;
	mate_dump *d;
	const struct mate_dump_info *info;
	struct mate_replay_request req;   /* the call as recorded */
	struct mate_replay_result want;   /* how it fails */
	struct stage st[MAX_STAGES];
	int nst;
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

/* The recorded key of parameter param: arg_<i> when the call passed it by
 * position, else kwarg_<param> (which may be absent). */
static void
param_key(const struct shrink *s, const char *handler_sig, const char *param, char *key, size_t len)
{
	int pos = param_position(s->req.signature, param);
	char k[96];

	if (pos < 0 && (s->req.signature == NULL || strcmp(s->req.signature, "<unavailable>") == 0))
		pos = param_position(handler_sig, param);
	snprintf(k, sizeof(k), "arg_%d", pos);
	if (pos < 0 || mate_value_lookup(s->req.args, k) == NULL)
		snprintf(k, sizeof(k), "kwarg_%.80s", param);
	snprintf(key, len, "%s", k);
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
			c->dim = atoi(num);
			if (strcmp(c->param, "result") != 0)
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
static mate_value *
cut_dict(const struct stage *st, const mate_value *dict, int64_t n, const int64_t *keep,
    size_t nkeep, const mate_value *copy_also, mate_error *err)
{
	mate_value *out = mate_value_dict();

	if (out == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < mate_value_len(dict); i++) {
		const char *key = mate_value_get_str(mate_value_key(dict, i), NULL);
		const mate_value *v = mate_value_item(dict, i);
		const struct cut *c = st != NULL ? cut_for(st, key) : NULL;
		mate_value *nv;

		if (mate_value_kind_of(v) == MATE_V_TENSOR && c != NULL &&
		    mate_value_get_tensor(v)->ndim > 0)
			nv = cut_tensor(key, v, c->dim, n, keep, nkeep, err);
		else if (mate_value_kind_of(v) == MATE_V_TENSOR && copy_also != NULL &&
		    mate_value_lookup(copy_also, key) != NULL)
			nv = cut_tensor(key, v, 0, 0, NULL, 0, err);
		else if ((nv = mate_value_copy(v)) == NULL)
			mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		if (nv == NULL || mate_value_set_str(out, key, nv) != MATE_OK) {
			mate_value_free(out);
			return NULL;
		}
	}
	return out;
}

/* How many units st cuts: the size of its first cut's tensor along its dim. */
static int
stage_units(const struct shrink *s, const struct stage *st, const mate_value *args,
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
	return MATE_OK;
}

/* ---- replaying a slice ----------------------------------------------------------- */

/* Whether res fails as s->want does: the same verdict and, for a mismatch, the
 * same output. */
static int
same_failure(const struct shrink *s, const struct mate_replay_result *res)
{
	if (res->verdict != s->want.verdict)
		return 0;
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
apply_stage(const struct stage *st, mate_value **args, mate_value **exp, mate_error *err)
{
	mate_value *na, *ne = NULL;

	if (st->keep == NULL)
		return MATE_OK;
	if ((na = cut_dict(st, *args, st->n, st->keep, st->nkeep, NULL, err)) == NULL ||
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
		    (exp != NULL && (e = cut_dict(st, exp, st->n, &u, 1, NULL, err)) == NULL)) {
			mate_value_free(a);
			return err->code == MATE_ERR_UNSUPPORTED ? mate_set_error(err, MATE_ERR_UNSUPPORTED,
			    "%s cannot be sliced: %s", s->info->function, err->message) : err->code;
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

static void
set_number(cJSON *o, const char *key, double v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, key) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
}

/* One tensor file of the dump (stem "inputs", "outputs", "inplace"), cut by every
 * stage into dir; its bytes into *bytes. MATE_OK also when there is none. */
static int
write_file(struct shrink *s, const char *stem, const char *dir, cJSON *rec, int64_t *bytes,
    mate_error *err)
{
	const char *ext = strcmp(s->info->format ? s->info->format : "", "safetensors") == 0 ?
	    ".safetensors" : ".pt";
	char name[64];
	char *src, *dst;
	mate_value *t;
	cJSON *details = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
	cJSON *inmeta = cJSON_GetObjectItemCaseSensitive(rec, "input_metadata");
	int rc = MATE_OK;
	struct stat sb;

	*bytes = 0;
	snprintf(name, sizeof(name), "%s%s", stem, ext);
	if ((src = join(s->dump, name)) == NULL || (dst = join(dir, name)) == NULL) {
		free(src);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	if (lstat(src, &sb) != 0) {
		free(src);
		free(dst);
		return MATE_OK;
	}
	if ((t = mate_dump_read_tensors(src, 1, err)) == NULL) {
		free(src);
		free(dst);
		return err->code;
	}
	for (int i = 0; i < s->nst && rc == MATE_OK; i++) {
		mate_value *nt;

		if (s->st[i].note || s->st[i].keep == NULL)
			continue;
		if ((nt = cut_dict(&s->st[i], t, s->st[i].n, s->st[i].keep, s->st[i].nkeep, NULL,
		    err)) == NULL)
			rc = err->code;
		else {
			mate_value_free(t);
			t = nt;
		}
	}
	for (size_t i = 0; rc == MATE_OK && i < mate_value_len(t); i++) {
		const char *key = mate_value_get_str(mate_value_key(t, i), NULL);
		const mate_value *v = mate_value_item(t, i);

		if (mate_value_kind_of(v) != MATE_V_TENSOR)
			continue;
		set_json_shape(cJSON_GetObjectItemCaseSensitive(details, key), mate_value_get_tensor(v));
		set_json_shape(cJSON_GetObjectItemCaseSensitive(inmeta, key), mate_value_get_tensor(v));
		*bytes += mate_tensor_nbytes(mate_value_get_tensor(v));
	}
	if (rc == MATE_OK)
		rc = strcmp(ext, ".pt") == 0 ? mate_pt_write(dst, t, NULL, err) :
		    mate_safetensors_write(dst, t, NULL, err);
	mate_value_free(t);
	free(src);
	free(dst);
	return rc;
}

static int
write_text(const char *path, const char *text, mate_error *err)
{
	FILE *f = fopen(path, "wx");
	int bad;

	if (f == NULL)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	bad = fputs(text, f) < 0;
	if (fclose(f) != 0 || bad)
		return mate_set_error(err, MATE_ERR_IO, "%s: cannot write", path);
	return MATE_OK;
}

/* Writes the cut dump into root/<the dump's name> (and root/session.jsonl when the
 * dump's root has one). */
static int
write_dump(struct shrink *s, const char *root, const char *final_root, mate_error *err)
{
	cJSON *rec = cJSON_Duplicate(mate_dump_record(s->d), 1);
	cJSON *info;
	char *dir = join(root, s->info->name), *final = join(final_root, s->info->name);
	char *text = NULL, *line = NULL, *path = NULL, *parent = NULL, *session = NULL;
	int64_t in = 0, out = 0, inpl = 0;
	int rc = MATE_OK;
	size_t n;
	struct stat sb;

	if (rec == NULL || dir == NULL || final == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	if (mkdir(dir, 0777) != 0) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
		goto done;
	}
	if ((rc = write_file(s, "inputs", dir, rec, &in, err)) != MATE_OK ||
	    (rc = write_file(s, "outputs", dir, rec, &out, err)) != MATE_OK ||
	    (rc = write_file(s, "inplace", dir, rec, &inpl, err)) != MATE_OK)
		goto done;
	if ((info = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info")) != NULL) {
		set_number(info, "input_size_bytes", (double)in);
		set_number(info, "input_size_mb", (double)in / (1024.0 * 1024.0));
		set_number(info, "output_size_bytes", (double)out);
		set_number(info, "output_size_mb", (double)out / (1024.0 * 1024.0));
		set_number(info, "inplace_size_bytes", (double)inpl);
		set_number(info, "inplace_size_mb", (double)inpl / (1024.0 * 1024.0));
		set_number(info, "total_size_bytes", (double)(in + out + inpl));
		set_number(info, "total_size_mb", (double)(in + out + inpl) / (1024.0 * 1024.0));
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
	if ((rc = write_text(path, line, err)) != MATE_OK)
		goto done;
	/* session.jsonl beside the dump: the new root gets one with its one record */
	if ((parent = strdup(s->dump)) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	n = strlen(parent);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = '\0';
	while (n > 0 && parent[n - 1] != '/')
		n--;
	parent[n] = '\0';
	if ((session = join(n > 0 ? parent : ".", "session.jsonl")) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	if (stat(session, &sb) == 0 && S_ISREG(sb.st_mode)) {
		free(path);
		if ((path = join(root, "session.jsonl")) == NULL)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		else
			rc = write_text(path, line, err);
	}
done:
	cJSON_Delete(rec);
	cJSON_free(text);
	free(line);
	free(path);
	free(parent);
	free(session);
	free(dir);
	free(final);
	return rc;
}

/* Removes the temporary root: its dump's files, the dump, session.jsonl, itself. */
static void
remove_tree(const char *root, const char *name)
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

/* Writes the dump as the stages now keep it into a temporary root beside outdir,
 * replays it from there; on the same failure renames it to outdir (*ok 1). */
static int
write_and_check(struct shrink *s, const char *outdir, int *ok, struct mate_replay_result *res,
    mate_error *err)
{
	char *tmp = malloc(strlen(outdir) + 16), *dir;
	int rc;

	*ok = 0;
	if (tmp == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	snprintf(tmp, strlen(outdir) + 16, "%s.tmp-XXXXXX", outdir);
	if (mkdtemp(tmp) == NULL) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	if ((rc = write_dump(s, tmp, outdir, err)) == MATE_OK) {
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
		remove_tree(tmp, s->info->name);
	free(tmp);
	return rc;
}

/* ---- the shrink ------------------------------------------------------------------- */

int
mate_replay_shrink(mate_replay *r, const char *dump, const char *outdir, char *report,
    size_t reportlen, mate_error *err)
{
	struct shrink s;
	mate_value *args = NULL, *exp = NULL, *cargs = NULL, *cexp = NULL;
	const char *rule, *hsig;
	struct mate_replay_result res;
	int rc, ok, cut = 0;

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
	s.req.function = s.info->function;
	s.req.module = s.info->module;
	s.req.signature = mate_dump_signature(s.d);
	s.req.self_id = s.info->self_id;
	s.req.process_id = s.info->process_id;
	s.req.args = args;
	s.req.expected = exp;
	s.req.recorded_error = s.info->status == MATE_DUMP_FAILED ?
	    (s.info->error ? s.info->error : "failed") : NULL;
	/* how the call fails, on a copy (a call may write its arguments) */
	if ((cargs = cut_dict(NULL, args, 0, NULL, 0, args, err)) == NULL) {
		rc = err->code;
		goto done;
	}
	replay_on(&s, cargs, exp, &s.want);
	mate_value_free(cargs);
	cargs = NULL;
	if (s.want.verdict != MATE_REPLAY_MISMATCH && s.want.verdict != MATE_REPLAY_ERROR) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s %s on replay (%s): nothing to shrink",
		    s.info->function, s.want.verdict == MATE_REPLAY_UNSUPPORTED ? "is unsupported" :
		    s.want.verdict == MATE_REPLAY_PASSED ? "passes" : mate_replay_verdict_name(s.want.verdict),
		    s.want.message);
		goto done;
	}
	if (s.info->self_id != NULL) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: a call on an object "
		    "(self_id %s) depends on the calls before it", s.info->function, s.info->self_id);
		goto done;
	}
	if ((rule = mate_replay_slice_rule(r, &s.req, &hsig)) == NULL) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its handler states "
		    "no slicing rule (its inputs are not rows, tokens or requests that fail alone)",
		    s.info->function);
		goto done;
	}
	if ((rc = parse_rule(&s, rule, hsig, err)) != MATE_OK)
		goto done;
	/* each stage in turn, on what the stages before it kept */
	if ((cargs = mate_value_copy(args)) == NULL || (exp != NULL && (cexp = mate_value_copy(exp)) == NULL)) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < s.nst; i++) {
		struct stage *st = &s.st[i];

		if (st->note)
			continue;
		if ((rc = find_failing(&s, st, cargs, cexp, err)) != MATE_OK)
			goto done;
		if (st->nfail == 0)
			continue;
		st->keep = st->fail;
		st->nkeep = 1;
		cut = 1;
		if ((rc = apply_stage(st, &cargs, &cexp, err)) != MATE_OK)
			goto done;
	}
	if (!cut) {
		rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "the failure of %s does not survive "
		    "slicing: no %s of it fails alone", s.info->function, s.st[0].unit);
		goto done;
	}
	if ((rc = write_and_check(&s, outdir, &ok, &res, err)) != MATE_OK)
		goto done;
	if (!ok) {  /* then every unit that fails alone */
		for (int i = 0; i < s.nst; i++)
			if (s.st[i].keep != NULL)
				s.st[i].nkeep = s.st[i].nfail;
		if ((rc = write_and_check(&s, outdir, &ok, &res, err)) != MATE_OK)
			goto done;
		if (!ok) {
			rc = mate_set_error(err, MATE_ERR_UNSUPPORTED, "the failure of %s does not survive "
			    "slicing: the cut dump replays as %s (%s)", s.info->function,
			    mate_replay_verdict_name(res.verdict), res.message);
			goto done;
		}
	}
	write_report(&s, args);
	say(&s, "\nreplays as %s: %s", mate_replay_verdict_name(res.verdict), res.message);
	rc = MATE_OK;
done:
	for (int i = 0; i < s.nst; i++)
		free(s.st[i].fail);
	mate_value_free(cargs);
	mate_value_free(cexp);
	mate_value_free(args);
	mate_value_free(exp);
	mate_dump_free(s.d);
	return rc;
}
