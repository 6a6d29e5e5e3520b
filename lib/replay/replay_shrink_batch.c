/* replay_shrink_batch.c: mate-replay --shrink of a batch wrapper's run (paged decode, paged and ragged prefill, MLA): its requests cut with the plan that describes them (indptrs, page indices and lengths rebuilt, exactly the kept pages of the cache, renumbered), replayed with its __init__ and plan. */
#include "replay_shrink.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a paged batch: requests, with their pages ----------------------------------- */

/* A 1-D int32 or int64 host tensor's elements as int64 (malloc'ed). */
int
shrink_ints_of(const char *what, const mate_value *v, int64_t **out, int64_t *n, mate_dtype *dt,
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

mate_value *
shrink_new_ints(mate_dtype dt, const int64_t *v, size_t n, mate_error *err)
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
int
shrink_paged_select(struct paged *pg, const int64_t *keep, size_t nkeep, mate_error *err)
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
		return shrink_new_ints(pg->dt_indptr, pg->new_indptr, pg->nkeep + 1, err);
	if (role == R_PLAN && pg->kind != B_DECODE && strcmp(key, pg->k_qo) == 0)
		return shrink_new_ints(pg->dt_qo, pg->new_qo, pg->nkeep + 1, err);
	if (role == R_PLAN && pg->kind != B_RAGGED && strcmp(key, pg->k_indices) == 0)
		return shrink_new_ints(pg->dt_indices, pg->new_indices, pg->npk, err);
	if (role == R_PLAN && pg->kind != B_RAGGED && strcmp(key, pg->k_last) == 0)
		return shrink_new_ints(pg->dt_last, pg->new_last, pg->nkeep, err);
	if (role == R_RUN && k == MATE_V_TENSOR && (strcmp(key, pg->k_q) == 0 ||
	    strcmp(key, pg->k_q2) == 0 || strcmp(key, pg->k_out) == 0 || strcmp(key, pg->k_lse) == 0 ||
	    shrink_is_result_key(key)))
		return shrink_cut_tensor(key, v, 0, pg->nq, pg->qrows, pg->nqk, err);
	if (role == R_RUN && k == MATE_V_TENSOR && pg->kind == B_RAGGED &&
	    (strcmp(key, pg->k_k) == 0 || strcmp(key, pg->k_v) == 0))
		return shrink_cut_tensor(key, v, pg->kv_dim, pg->npages, pg->pages, pg->npk, err);
	if (role == R_RUN && k == MATE_V_TENSOR && pg->kind != B_RAGGED &&
	    (strcmp(key, pg->k_kv) == 0 || strcmp(key, pg->k_kv2) == 0 || has_prefix_key(key, pg->k_kv)))
		return shrink_cut_tensor(key, v, 0, pg->npages, pg->pages, pg->npk, err);
	if (role == R_RUN && pg->kind != B_RAGGED && (k == MATE_V_TUPLE || k == MATE_V_LIST) &&
	    strcmp(key, pg->k_kv) == 0) {
		mate_value *seq = k == MATE_V_TUPLE ? mate_value_tuple() : mate_value_list();

		for (size_t i = 0; seq != NULL && i < mate_value_len(v); i++) {
			const mate_value *it = mate_value_item(v, i);
			mate_value *ni = mate_value_kind_of(it) == MATE_V_TENSOR ?
			    shrink_cut_tensor(key, it, 0, pg->npages, pg->pages, pg->npk, err) : mate_value_copy(it);

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
		return shrink_cut_tensor(key, v, 0, 0, NULL, 0, err);
	return mate_value_copy(v);
}

/* A copy of the plan's or run's dict cut to the kept requests; the tensors under
 * copy_also's keys copied whole. */
mate_value *
shrink_paged_dict(const struct paged *pg, enum role role, const mate_value *dict,
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

void
shrink_dep_free(struct dep *d)
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
char *
shrink_parent_of(const char *path)
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
int
shrink_paged_setup(struct shrink *s, mate_error *err)
{
	struct paged *pg = &s->pg;
	char *root = shrink_parent_of(s->dump), prefix[256];
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
	if (s->info->self_id == NULL) {  /* no object: no plan of its own to find */
		free(root);
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its record names "
		    "no object (self_id) whose plan it runs", s->info->function);
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

		shrink_key_of(s->plan.args, s->plan.req.signature, NULL, nm[0], pg->k_indptr,
		    sizeof(pg->k_indptr));
		if (nm[1] != NULL) {
			shrink_key_of(s->plan.args, s->plan.req.signature, NULL, nm[1], pg->k_indices,
			    sizeof(pg->k_indices));
			shrink_key_of(s->plan.args, s->plan.req.signature, NULL, nm[2], pg->k_last,
			    sizeof(pg->k_last));
		}
		if (nm[3] != NULL)
			shrink_key_of(s->plan.args, s->plan.req.signature, NULL, nm[3], pg->k_qo,
			    sizeof(pg->k_qo));
		shrink_key_of(s->req.args, s->req.signature, NULL, pg->kind == B_MLA ? "q_nope" : "q", pg->k_q,
		    sizeof(pg->k_q));
		shrink_key_of(s->req.args, s->req.signature, NULL, pg->kind == B_MLA ? "ckv_cache" :
		    "paged_kv_cache", pg->k_kv, sizeof(pg->k_kv));
		if (pg->kind == B_MLA) {
			shrink_key_of(s->req.args, s->req.signature, NULL, "q_pe", pg->k_q2, sizeof(pg->k_q2));
			shrink_key_of(s->req.args, s->req.signature, NULL, "kpe_cache", pg->k_kv2,
			    sizeof(pg->k_kv2));
		}
		shrink_key_of(s->req.args, s->req.signature, NULL, "k", pg->k_k, sizeof(pg->k_k));
		shrink_key_of(s->req.args, s->req.signature, NULL, "v", pg->k_v, sizeof(pg->k_v));
		shrink_key_of(s->req.args, s->req.signature, NULL, "out", pg->k_out, sizeof(pg->k_out));
		shrink_key_of(s->req.args, s->req.signature, NULL, "lse", pg->k_lse, sizeof(pg->k_lse));
		/* an lse of (heads, tokens) is not cut by q's rows */
		shrink_key_of(s->req.args, s->req.signature, NULL, "lse_layout", k_lay, sizeof(k_lay));
		lay = mate_value_lookup(s->req.args, k_lay);
		if (mate_value_kind_of(lay) == MATE_V_STR && (ls = mate_value_get_str(lay, NULL)) != NULL &&
		    strcmp(ls, "NH") != 0)
			return mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s cannot be sliced: its lse_layout "
			    "'%s' puts the tokens in the second dimension", s->info->function, ls);
		/* a ragged k and v of HND layout: (heads, tokens, dim) */
		shrink_key_of(s->init.args, s->init.req.signature, NULL, "kv_layout", k_layout, sizeof(k_layout));
		lay = mate_value_lookup(s->init.args, k_layout);
		pg->kv_dim = mate_value_kind_of(lay) == MATE_V_STR &&
		    (ls = mate_value_get_str(lay, NULL)) != NULL && strcmp(ls, "HND") == 0;
	}
	if ((rc = shrink_ints_of(pg->kind == B_RAGGED ? "the plan's kv_indptr" : "the plan's indptr",
	    mate_value_lookup(s->plan.args, pg->k_indptr), &pg->indptr, &nptr, &pg->dt_indptr,
	    err)) != MATE_OK)
		return rc;
	if (pg->kind != B_RAGGED &&
	    ((rc = shrink_ints_of("the plan's indices", mate_value_lookup(s->plan.args,
	    pg->k_indices), &pg->indices, &nind, &pg->dt_indices, err)) != MATE_OK ||
	    (rc = shrink_ints_of(pg->kind == B_MLA ? "the plan's kv_len_arr" :
	    "the plan's last_page_len", mate_value_lookup(s->plan.args, pg->k_last), &pg->last,
	    &nlast, &pg->dt_last, err)) != MATE_OK))
		return rc;
	if (pg->kind != B_DECODE && (rc = shrink_ints_of("the plan's qo_indptr",
	    mate_value_lookup(s->plan.args, pg->k_qo), &pg->qo, &nqo, &pg->dt_qo, err)) != MATE_OK)
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
void
shrink_replay_paged(struct shrink *s, mate_value *plan_args, mate_value *args,
    const mate_value *exp, struct mate_replay_result *res)
{
	struct mate_replay_request req = s->plan.req;

	mate_replay_execute(s->r, &s->init.req, res);
	req.args = plan_args;
	mate_replay_execute(s->r, &req, res);
	shrink_replay_on(s, args, exp, res);
}

/* Which requests fail alone. */
int
shrink_paged_failing(struct shrink *s, mate_error *err)
{
	struct paged *pg = &s->pg;

	if ((pg->fail = calloc((size_t)(pg->B > 0 ? pg->B : 1), sizeof(int64_t))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (int64_t u = 0; u < pg->B; u++) {
		struct mate_replay_result res;
		mate_value *pa = NULL, *a = NULL, *e = NULL;
		int rc;

		if ((rc = shrink_paged_select(pg, &u, 1, err)) != MATE_OK ||
		    (pa = shrink_paged_dict(pg, R_PLAN, s->plan.args, NULL, err)) == NULL ||
		    (a = shrink_paged_dict(pg, R_RUN, s->req.args, s->req.expected, err)) == NULL ||
		    (s->req.expected != NULL &&
		    (e = shrink_paged_dict(pg, R_RUN, s->req.expected, NULL, err)) == NULL)) {
			mate_value_free(pa);
			mate_value_free(a);
			return rc != MATE_OK ? rc : err->code;
		}
		shrink_replay_paged(s, pa, a, e, &res);
		if (shrink_same_failure(s, &res))
			pg->fail[pg->nfail++] = u;
		mate_value_free(pa);
		mate_value_free(a);
		mate_value_free(e);
	}
	return MATE_OK;
}

void
shrink_paged_report(struct shrink *s)
{
	const struct paged *pg = &s->pg;
	char b1[32], b2[32];
	const char *verb = s->want.verdict == MATE_REPLAY_MISMATCH ? "mismatch" : "fail";

	s->report[0] = '\0';
	shrink_say(s, "request%s ", pg->nkeep > 1 ? "s" : "");
	for (size_t k = 0; k < pg->nkeep; k++)
		shrink_say(s, "%s%s", k ? ", " : "", shrink_grouped(pg->keep[k], b1, sizeof(b1)));
	shrink_say(s, " of %s: ", shrink_grouped(pg->B, b2, sizeof(b2)));
	if (pg->nfail == 1)
		shrink_say(s, "the only request that %ses", verb);
	else
		shrink_say(s, "%s of %s requests %s", shrink_grouped((int64_t)pg->nfail, b1, sizeof(b1)),
		    shrink_grouped(pg->B, b2, sizeof(b2)), verb);
	if (pg->kind == B_RAGGED)
		shrink_say(s, "; %s of %s rows of k and v kept",
		    shrink_grouped((int64_t)pg->npk, b1, sizeof(b1)),
		    shrink_grouped(pg->npages, b2, sizeof(b2)));
	else
		shrink_say(s, "; %s of %s pages of the cache kept, renumbered",
		    shrink_grouped((int64_t)pg->npk, b1, sizeof(b1)),
		    shrink_grouped(pg->npages, b2, sizeof(b2)));
	if (pg->kind != B_DECODE)
		shrink_say(s, "; %s of %s rows of q", shrink_grouped((int64_t)pg->nqk, b1, sizeof(b1)),
		    shrink_grouped(pg->nq, b2, sizeof(b2)));
}
