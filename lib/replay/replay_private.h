/* replay_private.h: Python signatures for replay (replay_bind.c): parsed parameter lists, matching and binding (never installed). */
#ifndef MATE_REPLAY_PRIVATE_H_INCLUDED
#define MATE_REPLAY_PRIVATE_H_INCLUDED

#include "mate_replay.h"
#include "dump_private.h"

/* inspect.Parameter's kinds. */
enum mate_param_kind {
	MATE_PARAM_POSITIONAL_ONLY,
	MATE_PARAM_POSITIONAL_OR_KEYWORD,
	MATE_PARAM_VAR_POSITIONAL,
	MATE_PARAM_KEYWORD_ONLY,
	MATE_PARAM_VAR_KEYWORD
};

struct mate_sig_param {
	const char *name;
	int kind;                 /* enum mate_param_kind */
	const char *def;          /* the default's text ("None", "1e-06"); NULL: required */
};

/* A parameter list; annotations are dropped. */
struct mate_sig {
	struct mate_arena arena;
	struct mate_sig_param *p;
	size_t n;
};

/* Parses text as str(inspect.signature(f)) writes it ("(a, b: int = 3, *,
 * c=None) -> T"; annotations and defaults may hold brackets, quotes and
 * commas). @return the list (mate_sig_free()) or NULL with err. */
struct mate_sig *mate_sig_parse(const char *text, mate_error *err) MATE_HIDDEN;
void mate_sig_free(struct mate_sig *s) MATE_HIDDEN;
const struct mate_sig_param *mate_sig_find(const struct mate_sig *s, const char *name) MATE_HIDDEN;
/* "(a, b=3, *, c=None)" into buf (cut with "..." when long). */
void mate_sig_format(const struct mate_sig *s, char *buf, size_t len) MATE_HIDDEN;
/* Whether a handler of signature h implements calls of the recorded
 * signature rec: h's required parameters are all in rec, and each of rec's
 * parameters is in h, or defaults to None, or is keyword-only with a
 * default (a call must then leave it None or at that default).
 * When not, why says which parameter is wanting. */
int mate_sig_implements(const struct mate_sig *h, const struct mate_sig *rec, char *why, size_t len) MATE_HIDDEN;
/* Binds a call's arguments (a dict of arg_<i> and kwarg_<name>) to s as
 * inspect.Signature.bind does, then fills the defaults (one whose text
 * cannot be read as a Python literal is left out). @return a dict of
 * parameter name to value (var-positional: a tuple, var-keyword: a dict),
 * or NULL with err (MATE_ERR_ARGUMENT: they do not bind). */
mate_value *mate_sig_bind(const struct mate_sig *s, const mate_value *args, mate_error *err) MATE_HIDDEN;
/* The arguments a handler of signature h reads, from bound (mate_sig_bind()
 * through the recorded rec): "arg_<i>" for each parameter at position i of
 * h that may be passed by position and "kwarg_<name>" for each that may be
 * passed by keyword. A parameter of rec that h lacks may be None or, when
 * keyword-only, its recorded default (newer peers add such parameters:
 * each so left is named in note, "NAME=VALUE, its default, ignored").
 * MATE_ERR_UNSUPPORTED (why says which) when one that h lacks has another
 * value, or a recorded default h needs cannot be read. */
int mate_sig_arguments(const struct mate_sig *h, const struct mate_sig *rec, const mate_value *bound,
    mate_value **out, char *why, size_t len, char *note, size_t notelen) MATE_HIDDEN;

/* The call's receiver as "<process_id>:<self_id>", or NULL when it has no
 * self_id (for handlers' messages). */
const char *mate_replay_call_object(const mate_replay_call *c) MATE_HIDDEN;
/* The recorded output `key` ("result", "result_<i>") of the call being
 * replayed, or NULL: for handlers that check a recorded result by its
 * properties (random samplers) rather than recompute it. Borrowed. */
const mate_value *mate_replay_call_recorded(const mate_replay_call *c, const char *key) MATE_HIDDEN;
/* The call is the matrix product of a and b (arguments of the call, [M, K]
 * by [K, N] or batched): its tensor outputs are compared within the error
 * bound of the product's reduction (mate_replay_compare_reduction()). */
void mate_replay_set_reduction(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b) MATE_HIDDEN;
/* The call is a GEMM, alpha op(a) op(b) + beta C, of the stored matrices a and b
 * (arguments of the call, each [rows, cols] as the library holds it, op() a transpose
 * where ta/tb): C is compared within 2 K u s (|op(a)| |op(b)|)ij, s = |alpha| (K + 2) / K
 * (alpha 0 counts as 1), twice that plus 2 K u |expected|ij where beta is not 0 (|beta C|
 * is at most |expected| + |alpha| (|A| |B|)). Operands of another rank set nothing.
 * mate-replay --export's repro.c computes the same bound (replay_export.c). */
void mate_replay_set_reduction_gemm(mate_replay_call *c, const mate_tensor *a, int ta,
    const mate_tensor *b, int tb, double alpha, double beta) MATE_HIDDEN;
/* The GEMM set above was made with products of unit roundoff u, coarser than its
 * operands' (cuBLAS's TF32, FP16 or BF16 compute types): its bound takes that u. */
void mate_replay_set_reduction_unit(mate_replay_call *c, double u) MATE_HIDDEN;
/* Keeps v (ownership moves) until the call has been compared: scratch that a bound set
 * above points at (a block-scaled GEMM's dequantized operands). Returns v, or NULL
 * with the call failed when v is NULL or memory is short (v freed). */
mate_value *mate_replay_hold(mate_replay_call *c, mate_value *v) MATE_HIDDEN;
/* The call's floating outputs are compared bit for bit (NaN matching NaN) unless the
 * user set a tolerance: a deterministic rounding (quantization) has no error to allow. */
void mate_replay_set_exact(mate_replay_call *c) MATE_HIDDEN;
/* The call's floating outputs are sums of at most k terms (an attention's
 * over its keys, a norm's over its row) whose magnitudes add up to at most
 * magnitude, plus the output itself where relative: compared within
 * 2 k u (magnitude + |expected| where relative), u the unit roundoff of acc
 * (float64's, else float32's); a magnitude that is not finite sets nothing. */
void mate_replay_set_reduction_sum(mate_replay_call *c, int64_t k, double magnitude, int relative,
    mate_dtype acc) MATE_HIDDEN;
/* The largest finite |element| of a host floating tensor; NaN for any other. */
double mate_replay_max_abs(const mate_tensor *t) MATE_HIDDEN;
/* The largest sum of |elements| along the last dimension of a host floating tensor (a
 * row's); NaN for any other (replay_ops_common.c). */
double mate_replay_max_row_l1(const mate_tensor *t) MATE_HIDDEN;
/* After a kernel: returns result (ownership moves; NULL: None) as the
 * call's value, or frees it and fails the call with the kernel's error. */
int mate_replay_kernel_done(mate_replay_call *c, int rc, const mate_error *err, mate_value *result) MATE_HIDDEN;
/* The dtypes a built-in handler of that name implements (and in *devices
 * where it runs, in *signature the signature of a handler that reads its
 * arguments as recorded, else NULL), or NULL when it is not one of mate's
 * (replay_ops_info.c). */
const char *mate_replay_builtin_info(const char *name, const char **devices,
    const char **signature) MATE_HIDDEN;

/* ---- the built-in handlers (replay_ops_common.c) ---------------------------- */
struct mate_kernels;
/* The kernels the call runs on: CUDA's for a call replayed on the device,
 * else the CPU's. */
const struct mate_kernels *mate_replay_kernels(const mate_replay_call *c) MATE_HIDDEN;
/* The shape of a @ b for nd-D operands (2: mm, 3: bmm) into shape[nd]: a's
 * leading dimensions, b's last; fails the call when an operand is not nd-D. */
int mate_replay_mm_shape(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b, int nd,
    int64_t *shape) MATE_HIDDEN;
/* mate_replay_kernel_done() for a call that returns (v1, v2): a tuple of
 * both; v1 alone when v2 is NULL; on a kernel error both are freed. */
int mate_replay_kernel_done_pair(mate_replay_call *c, int rc, const mate_error *err,
    mate_value *v1, mate_value *v2) MATE_HIDDEN;
/* Sets the comparison bound of an attention's outputs (mate_replay_set_reduction_sum()):
 * sums over at most kv_len keys of softmax(q k^T scale) v (scores q.k plus q2.k2 where
 * q2 is not NULL, MLA's rotary part), from the largest |v| and |k| and a query row's
 * sum of |q|; nothing for tensors not on the host. */
struct mate_attn_params;
void mate_replay_attention_bound(mate_replay_call *c, int64_t kv_len, const mate_tensor *q,
    const mate_tensor *k, const mate_tensor *q2, const mate_tensor *k2, const mate_tensor *v,
    const struct mate_attn_params *p) MATE_HIDDEN;
/* The out=-style argument (pos, name) when given, shared with the call (written and
 * returned): it must have exactly the result's shape and, unless any_dtype, dtype dt
 * (FlashInfer's check_shape_dtype_device, torch's out=), else the call fails naming both;
 * without one, a new tensor of dt and shape. The one check every handler's outputs pass. */
int mate_replay_output(mate_replay_call *c, int pos, const char *name, mate_dtype dt, int any_dtype,
    int ndim, const int64_t *shape, mate_value **outv) MATE_HIDDEN;
/* What the attention handlers (replay_ops_attn.c, replay_ops_trtllm.c) share. */
/* A 1-D integer host tensor argument as a malloc'ed int64 array of *n elements (NULL and 0
 * when absent and optional); the call fails on another tensor. */
int mate_replay_arg_ints(mate_replay_call *c, int pos, const char *name, int optional,
    int64_t **out, int64_t *n) MATE_HIDDEN;
/* The same of a tensor t (an item of a list argument), named name in the message. */
int mate_replay_tensor_ints(mate_replay_call *c, const mate_tensor *t, const char *name,
    int64_t **out, int64_t *n) MATE_HIDDEN;
/* Arguments the handler does not read must be absent or None: positional ones past maxpos,
 * keyword ones not named in known (NULL-terminated); else Unsupported naming it. */
int mate_replay_only_known(mate_replay_call *c, int maxpos, const char *const *known) MATE_HIDDEN;
/* A string argument (default def) that must be one of allowed (NULL-terminated): its index
 * in *which; another value is Unsupported. */
int mate_replay_arg_choice(mate_replay_call *c, int pos, const char *name, const char *def,
    const char *const *allowed, int *which) MATE_HIDDEN;
/* p[0..n) must be a non-empty, non-decreasing offset array from 0; else the call fails
 * naming what. */
int mate_replay_check_indptr(mate_replay_call *c, const char *what, const int64_t *p,
    int64_t n) MATE_HIDDEN;
/* The K and V caches of a paged cache argument: a (k_cache, v_cache) tuple or one tensor
 * (pages, 2, ...) whose dim 1 selects K or V; with one_ok also (pages, 1, ...), K and V
 * the same entries (FlashInfer's trtllm functions). */
int mate_replay_split_cache(mate_replay_call *c, int pos, const char *name, int one_ok,
    mate_tensor *k, mate_tensor *v) MATE_HIDDEN;
/* A handler table: name, signature, handler, its ctx, and how mate-replay
 * --shrink cuts its calls (replay_shrink.c): NULL, a call that cannot be
 * sliced, or stages separated by ';', each "UNIT:PARAM.DIM PARAM.DIM ...":
 * the tensors that hold the units along DIM (negative: from the end), the
 * first naming how many there are; PARAM is a parameter of the signature
 * or "result" (every tensor the call returns); an argument written in place
 * is cut in the recorded outputs too. A stage "=NAME:PARAM.DIM" cuts
 * nothing and is reported as kept (a GEMM's K). PARAM "result_N": the Nth
 * returned tensor alone (name it before "result"). "PARAM.DIM/": grouped, unit u
 * of n is index u / (n / size) (a GQA query head's KV head). "?PARAM=VALUE": the
 * stage cuts only where that string argument is absent or VALUE ("None": only
 * where it is absent or None), else the call cannot be sliced. "#PARAM": the
 * units are the segments of that indptr (a 1-D int tensor from 0 up), which a
 * cut rebuilds; "PARAM.DIM+": cut by segment, unit u the indices
 * indptr[u]..indptr[u+1] along DIM (name it first: its size bounds indptr). "@paged": a decode wrapper's run, cut by request with its
 * plan (indptr, indices, last_page_len rebuilt) and exactly its pages of the
 * cache; "@prefill": a paged prefill's, its rows of q by qo_indptr too;
 * "@ragged": a ragged prefill's, rows of q and of k and v by qo_indptr and
 * kv_indptr; "@mla": an MLA wrapper's, its rows of q_nope and q_pe and its
 * pages of ckv_cache and kpe_cache (kv_indptr, kv_indices, kv_len_arr rebuilt). */
struct mate_replay_op_def {
	const char *name, *sig;
	mate_replay_handler fn;
	intptr_t ctx;
	const char *slice;
};
/* Slicing rules of the built-in ops. */
#define MATE_SLICE_ROWS "row:input.0 out.0 result.0"
#define MATE_SLICE_MM(a, b) "row:" a ".0 out.0 result.0;column:" b ".1 out.1 result.1;=K:" a ".1"
#define MATE_SLICE_BMM(a, b) "batch:" a ".0 " b ".0 out.0 result.0;row:" a ".1 out.1 " \
	"result.1;column:" b ".2 out.2 result.2;=K:" a ".2"
/* Sets the slicing rule (a static string) of the handler registered last on r. */
void mate_replay_set_slice(mate_replay *r, const char *slice) MATE_HIDDEN;
/* The slicing rule of the handler req goes to (NULL: none, or no handler), and in
 * *sigtext the signature that handler states (NULL: any). */
const char *mate_replay_slice_rule(mate_replay *r, const struct mate_replay_request *req,
    const char **sigtext) MATE_HIDDEN;
/* Registers the n handlers of ops on r; stops at the first failure. */
int mate_replay_register_ops(mate_replay *r, const struct mate_replay_op_def *ops, size_t n,
    mate_error *err) MATE_HIDDEN;
/* mate_replay_execute(), handing the call's outputs (a dict; NULL when it failed) to
 * *outputs when that is not NULL (mate-bench checks them). */
int mate_replay_execute_outputs(mate_replay *r, const struct mate_replay_request *req,
    struct mate_replay_result *res, mate_value **outputs) MATE_HIDDEN;
/* The timed runs mate_replay_set_bench() asked for. */
int mate_replay_get_bench(const mate_replay *r) MATE_HIDDEN;

#endif /* MATE_REPLAY_PRIVATE_H_INCLUDED */
