/* replay_shrink.h: what replay_shrink.c (slicing rules, cuts, the report, the written dump) and replay_shrink_batch.c (a wrapper's batch cut by request, with its plan) share. */
#ifndef MATE_REPLAY_SHRINK_H_INCLUDED
#define MATE_REPLAY_SHRINK_H_INCLUDED

#include "mate_private.h"
#include "replay_private.h"

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

/* replay_shrink.c */
/* The recorded key of parameter param of a call on args whose recorded signature
 * is recsig (else the handler's, hsig): arg_<i>, or kwarg_<param>. */
void shrink_key_of(const mate_value *args, const char *recsig, const char *hsig, const char *param,
    char *key, size_t len) MATE_HIDDEN;
int shrink_is_result_key(const char *key) MATE_HIDDEN;
/* A contiguous copy of tensor v keeping indices keep[0..nkeep) of n along dim (all,
 * a deep copy, when keep is NULL); NULL with err. */
mate_value *shrink_cut_tensor(const char *key, const mate_value *v, int dim, int64_t n,
    const int64_t *keep, size_t nkeep, mate_error *err) MATE_HIDDEN;
/* n with thousands separators, in buf. */
const char *shrink_grouped(int64_t n, char *buf, size_t len) MATE_HIDDEN;
/* Appends to the report. */
void shrink_say(struct shrink *s, const char *fmt, ...) MATE_PRINTF(2, 3) MATE_HIDDEN;
/* Whether res fails as s->want does. */
int shrink_same_failure(const struct shrink *s, const struct mate_replay_result *res) MATE_HIDDEN;
/* Replays the call on args and exp (which it may write) into *res. */
void shrink_replay_on(struct shrink *s, mate_value *args, const mate_value *exp,
    struct mate_replay_result *res) MATE_HIDDEN;

/* replay_shrink_batch.c */
/* A 1-D int32 or int64 host tensor's elements as int64 (malloc'ed); what names it. */
int shrink_ints_of(const char *what, const mate_value *v, int64_t **out, int64_t *n, mate_dtype *dt,
    mate_error *err) MATE_HIDDEN;
/* A new 1-D tensor of dtype dt (int32 or int64) holding v[0..n). */
mate_value *shrink_new_ints(mate_dtype dt, const int64_t *v, size_t n, mate_error *err) MATE_HIDDEN;
/* The page table, pages and rows of q of the requests keep[0..nkeep). */
int shrink_paged_select(struct paged *pg, const int64_t *keep, size_t nkeep, mate_error *err)
    MATE_HIDDEN;
/* A copy of the plan's or run's dict cut to the kept requests. */
mate_value *shrink_paged_dict(const struct paged *pg, enum role role, const mate_value *dict,
    const mate_value *copy_also, mate_error *err) MATE_HIDDEN;
void shrink_dep_free(struct dep *d) MATE_HIDDEN;
/* The folder that holds path (malloc'ed; "." for a bare name). */
char *shrink_parent_of(const char *path) MATE_HIDDEN;
/* Finds the run's plan and __init__ in its root and reads the plan's page table. */
int shrink_paged_setup(struct shrink *s, mate_error *err) MATE_HIDDEN;
/* Replays __init__, the plan on plan_args and the run on args/exp into *res. */
void shrink_replay_paged(struct shrink *s, mate_value *plan_args, mate_value *args,
    const mate_value *exp, struct mate_replay_result *res) MATE_HIDDEN;
/* Which requests fail alone (s->pg.fail). */
int shrink_paged_failing(struct shrink *s, mate_error *err) MATE_HIDDEN;
void shrink_paged_report(struct shrink *s) MATE_HIDDEN;

#endif
