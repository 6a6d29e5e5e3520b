/* fuzz_replay_ops.c: libFuzzer target: mate's replay handlers on calls built from the input, family by family (a wrapper's __init__, plan and run on one object; the page, batch-index, sampling, RoPE, norm, product and merge calls; trtllm-gen, XQA and MLA decode, the cascade wrapper; the speculative sampler, layernorm, the top-k transforms and the fused QK norm and RoPE with their keywords; the block quantizers, their dequantizers and float8 norms, silu_and_mul_nvfp4_quantize, a float8 input's fp4_quantize and the block-scaled mm_fp4 and mm_mxfp8), with lying shapes, dtypes, index tables and scalars. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mate.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned
take(struct in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* What a position holds, as the API's signature has it (the input may lie: see arg()). */
enum { K_SELF = 's', K_TENSOR = 'T', K_INTS = 'I', K_INT = 'N', K_FLOAT = 'F', K_BOOL = 'B',
	K_DTYPE = 'D', K_STR = 'S', K_OPTIONAL = 'O' /* None or a tensor */,
	K_LEVELS = 'L' /* a list of index tensors, one per level */,
	K_PAIR = 'P' /* a (k, v) tuple of tensors */,
	K_WIDE = 'W' /* a tensor of dimensions up to 255 (4,096 elements at most) */,
	K_HALF = 'H' /* float16 or bfloat16 rows of a multiple of 16 */,
	K_BYTES = 'U' /* uint8 codes (packed e2m1, scale factors) */,
	K_FP8 = 'E' /* float8_e4m3fn codes shaped as K_BYTES */,
	K_FP8_ROWS = 'Q' /* float8_e4m3fn rows of a multiple of 16 (a quantizer's input) */ };

/* A family: its calls in order (on one object where there are several), each with the kinds
 * of its positional arguments, then after a '|' its keyword arguments ("name=K ...", K a
 * kind). */
struct call {
	const char *fn, *kinds;
};
struct family {
	struct call calls[3];
};

static const struct family families[] = {
	{ { { "BatchDecodeWithPagedKVCacheWrapper.__init__", "sTS" },
	    { "BatchDecodeWithPagedKVCacheWrapper.plan", "sIIINNNN" },
	    { "BatchDecodeWithPagedKVCacheWrapper.run", "sTT" } } },
	{ { { "BatchPrefillWithPagedKVCacheWrapper.__init__", "sTS" },
	    { "BatchPrefillWithPagedKVCacheWrapper.plan", "sIIIINNNNNOOB" },
	    { "BatchPrefillWithPagedKVCacheWrapper.run", "sTT" } } },
	{ { { "BatchPrefillWithRaggedKVCacheWrapper.__init__", "sTS" },
	    { "BatchPrefillWithRaggedKVCacheWrapper.plan", "sIINNNNOOB" },
	    { "BatchPrefillWithRaggedKVCacheWrapper.run", "sTTT" } } },
	{ { { "BatchMLAPagedAttentionWrapper.__init__", "sT" },
	    { "BatchMLAPagedAttentionWrapper.plan", "sIIIINNNNBFDD" },
	    { "BatchMLAPagedAttentionWrapper.run", "sTTTT" } } },
	{ { { "SegmentGEMMWrapper.__init__", "sT" },
	    { "SegmentGEMMWrapper.run", "sTTNBOOOO" } } },
	{ { { "append_paged_kv_cache", "TTIITIIIS" } } },
	{ { { "append_paged_mla_kv_cache", "TTIITTIII" } } },
	{ { { "get_batch_indices_positions", "IINOO" } } },
	{ { { "top_k_renorm_probs", "TN" } } },
	{ { { "top_p_renorm_probs", "TF" } } },
	{ { { "top_k_mask_logits", "TN" } } },
	{ { { "top_k", "TN" } } },
	{ { { "sampling_from_probs", "TI" } } },
	{ { { "top_k_sampling_from_probs", "TNI" } } },
	{ { { "top_p_sampling_from_probs", "TFI" } } },
	{ { { "min_p_sampling_from_probs", "TFI" } } },
	{ { { "top_k_top_p_sampling_from_probs", "TNFI" } } },
	{ { { "top_k_top_p_sampling_from_logits", "TNFI" } } },
	{ { { "apply_rope", "TTIINBFF" } } },
	{ { { "apply_rope_inplace", "TTIINBFF" } } },
	{ { { "apply_rope_pos_ids", "TTINBFF" } } },
	{ { { "apply_llama31_rope", "TTIINBFFFFN" } } },
	{ { { "apply_llama31_rope_pos_ids_inplace", "TTINBFFFFN" } } },
	{ { { "apply_rope_with_cos_sin_cache", "ITTNTB" } } },
	{ { { "rmsnorm", "TTFO" } } },
	{ { { "gemma_fused_add_rmsnorm", "TTTF" } } },
	{ { { "fused_rmsnorm_silu", "TTFO" } } },
	{ { { "silu_and_mul", "TO" } } },
	{ { { "gelu_tanh_and_mul", "TO" } } },
	{ { { "softmax", "TF" } } },
	{ { { "mm", "TTDO" } } },
	{ { { "bmm", "TTDO" } } },
	{ { { "mm_bf16", "TTOBOD" } } },
	{ { { "bmm_fp8", "TTTTDO" } } },
	{ { { "mm_fp8", "TTFDO" } } },
	{ { { "merge_state", "TTTT" } } },
	{ { { "merge_states", "TT" } } },
	{ { { "single_decode_with_kv_cache", "TTTSS" } } },
	{ { { "single_prefill_with_kv_cache", "TTTFFFDOOB" } } },
	{ { { "packbits", "TS" } } },
	{ { { "segment_packbits", "TIS" } } },
	{ { { "cblas_sgemm", "NNNNNNFTNTNFTN" } } },
	/* appended, so that the seeds' family bytes keep their meaning */
	{ { { "trtllm_batch_decode_with_kv_cache", "TTTIINFFN" } } },
	{ { { "trtllm_batch_context_with_kv_cache", "TTTIINNFFNII" } } },
	{ { { "xqa_batch_decode_with_kv_cache", "TPTIINFF" } } },
	{ { { "trtllm_batch_decode_with_kv_cache_mla", "TTTNNNIINNOFF" } } },
	{ { { "merge_state_in_place", "TTTTO" } } },
	{ { { "MultiLevelCascadeAttentionWrapper.__init__", "sNTS" },
	    { "MultiLevelCascadeAttentionWrapper.plan", "sLLLLNNNNB" },
	    { "MultiLevelCascadeAttentionWrapper.run", "sTT" } } },
	{ { { "chain_speculative_sampling", "TIT|maybe_output_accepted_token_num=O "
	    "maybe_output_emitted_draft_token_num=O deterministic=B" } } },
	{ { { "layernorm", "TTTF" } } },
	{ { { "top_k_ragged_transform", "TIINBNBO" } } },
	{ { { "top_k_page_table_transform", "TIINOBNBOO|page_size=N out_raw_indices=O" } } },
	{ { { "fused_qk_rmsnorm_rope", "WWW|"
	    "ppf=N pph=N ppw=N num_frame_channels=N num_height_channels=N num_width_channels=N "
	    "num_heads_q=N num_heads_k=N num_heads_v=N head_dim=N eps=F interleave=B "
	    "output_fp8=B" } } },
	{ { { "fp4_quantize", "HONBBBB" } } },
	{ { { "nvfp4_quantize", "HFNBN" } } },
	{ { { "mxfp4_quantize", "HOON" } } },
	{ { { "mxfp8_quantize", "HBNOON" } } },
	{ { { "mxfp4_dequantize", "UUN" } } },
	{ { { "rmsnorm_quant", "TTTF" } } },
	{ { { "fused_add_rmsnorm_quant", "TTTTF" } } },
	{ { { "mxfp4_dequantize_host", "UUN" } } },
	{ { { "silu_and_mul_nvfp4_quantize", "HFNBB" } } },
	{ { { "mm_fp4", "UUUUODONBSB" } } },
	{ { { "mm_mxfp8", "EEUUODBS" } } },
	{ { { "fp4_quantize", "QONBBBB" } } },
};
#define NFAM (sizeof(families) / sizeof(families[0]))

static const int64_t ints[] = { 0, 1, 2, 3, 4, 5, 7, 8, 16, 64, -1, -5, INT32_MAX, INT32_MIN,
	INT64_MAX, INT64_MIN, (int64_t)1 << 62, (int64_t)1 << 31, 65536, 101, 102, 111, 112 };
static const double floats[] = { 0, 0.5, 1, -1, 2, 1e-6, 1e300, -1e300, NAN, INFINITY, -INFINITY,
	4.9e-324, 3.5, 100, 1e-20, 9.3e18 };
static const char *const strs[] = { "NHD", "HND", "NONE", "ROPE_LLAMA", "log2", "ln", "NH", "HN",
	"big", "little", "bogus", "" };
static const mate_dtype dtypes[] = { MATE_F32, MATE_F16, MATE_BF16, MATE_F64, MATE_I32, MATE_I64,
	MATE_I8, MATE_U8, MATE_BOOL, MATE_F8_E4M3FN, MATE_I16, MATE_F8_E5M2 };
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A tensor of up to 5 dimensions of up to 8 (wide: 255, and 4,096 elements at most): floats
 * (or, for ints, an index table of mostly small numbers and some extreme ones) from the input. */
static mate_value *
tensor_of(struct in *in, int ints_wanted, int wide)
{
	unsigned how = take(in);
	mate_dtype dt = ints_wanted ? ((how & 1) ? MATE_I64 : MATE_I32) : MATE_F32;
	int64_t shape[5], n = 1;
	int nd = (int)((how >> 1) % 6);
	mate_storage *st;
	mate_tensor t;
	mate_error err;
	mate_value *v;

	if ((how >> 4) == 15)   /* a lie: another dtype */
		dt = dtypes[take(in) % N_OF(dtypes)];
	for (int d = 0; d < nd; d++)
		n *= (shape[d] = take(in) % (wide ? 256 : 9));
	if (n > 4096 || mate_tensor_init(&t, dt, nd, shape, NULL, NULL) != MATE_OK ||
	    (st = mate_storage_new((size_t)(n > 0 ? n : 1) * mate_dtype_size(dt), &err)) == NULL)
		return mate_value_none();
	for (int64_t i = 0; i < n; i++) {
		unsigned char *p = (unsigned char *)mate_storage_data(st) + i * (int64_t)mate_dtype_size(dt);
		unsigned b = take(in);

		if (dt == MATE_I32 || dt == MATE_I64) {
			int64_t x = b < 200 ? (int64_t)(b % 12) : ints[b % N_OF(ints)];

			if (dt == MATE_I32) {
				int32_t y = (int32_t)x;
				memcpy(p, &y, 4);
			} else {
				memcpy(p, &x, 8);
			}
		} else if (dt == MATE_F32) {
			float f = b < 240 ? ((float)b - 120) / 16 : (float)floats[b % N_OF(floats)];
			memcpy(p, &f, 4);
		} else {
			memset(p, (int)b, mate_dtype_size(dt));
		}
	}
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	return v;
}

static mate_value *
tensor(struct in *in, int ints_wanted)
{
	return tensor_of(in, ints_wanted, 0);
}

/* A quantizer's input: up to 3 dimensions, the last 16 to 128 (a block multiple), of
 * float16 or bfloat16 values from the input, a few extreme (NaN, infinities); fp8: of
 * float8_e4m3fn codes, any byte (NaN too). */
static mate_value *
half_tensor(struct in *in, int fp8)
{
	unsigned how = take(in);
	mate_dtype dt = fp8 ? MATE_F8_E4M3FN : (how & 1) ? MATE_BF16 : MATE_F16;
	int64_t shape[3], n = 1;
	int nd = 1 + (int)((how >> 1) % 3);
	mate_storage *st;
	mate_tensor t;
	mate_error err;
	mate_value *v;

	for (int d = 0; d < nd; d++)
		n *= (shape[d] = d < nd - 1 ? take(in) % 9 : 16 * (1 + take(in) % 8));
	if (mate_tensor_init(&t, dt, nd, shape, NULL, NULL) != MATE_OK ||
	    (st = mate_storage_new((size_t)(n > 0 ? n : 1) * mate_dtype_size(dt), &err)) == NULL)
		return mate_value_none();
	for (int64_t i = 0; i < n; i++) {
		unsigned b = take(in);
		float f = b < 240 ? ((float)b - 120) / 4 : (float)floats[b % N_OF(floats)];
		uint16_t h = dt == MATE_BF16 ? mate_f32_to_bf16(f) : mate_f32_to_f16(f);

		if (fp8)
			((unsigned char *)mate_storage_data(st))[i] = (unsigned char)b;
		else
			memcpy((unsigned char *)mate_storage_data(st) + i * 2, &h, 2);
	}
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	return v;
}

/* Bytes (dt uint8 or a float8): 1 or 2 dimensions, each small, a multiple of 16 or of 128
 * (a scale layout's tile). */
static mate_value *
bytes_of(struct in *in, mate_dtype dt)
{
	unsigned how = take(in);
	int64_t shape[2], n = 1;
	int nd = 1 + (int)(how & 1);
	mate_storage *st;
	mate_tensor t;
	mate_error err;
	mate_value *v;

	for (int d = 0; d < nd; d++) {
		unsigned c = take(in);

		n *= (shape[d] = (c & 3) == 0 ? c % 9 : (c & 3) == 1 ? 16 * (c % 9) : 128 * (c % 5));
	}
	if (mate_tensor_init(&t, dt, nd, shape, NULL, NULL) != MATE_OK ||
	    (st = mate_storage_new((size_t)(n > 0 ? n : 1), &err)) == NULL)
		return mate_value_none();
	for (int64_t i = 0; i < n; i++)
		((unsigned char *)mate_storage_data(st))[i] = (unsigned char)take(in);
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	return v;
}

static mate_value *
byte_tensor(struct in *in)
{
	return bytes_of(in, MATE_U8);
}

/* The argument of kind k, or (one time in eight) of another kind. */
static mate_value *
arg(struct in *in, int k)
{
	unsigned b = take(in);

	if ((b & 7) == 7 && k != K_SELF)
		k = "TINFBDSLP"[(b >> 3) % 9];
	switch (k) {
	case K_SELF: return mate_value_str("self", 4);
	case K_LEVELS:
	case K_PAIR: {
		mate_value *seq = k == K_LEVELS ? mate_value_list() : mate_value_tuple();
		unsigned n = k == K_LEVELS ? take(in) % 4 : 2;

		for (unsigned i = 0; seq != NULL && i < n; i++)
			mate_value_append(seq, tensor(in, k == K_LEVELS));
		return seq != NULL ? seq : mate_value_none();
	}
	case K_OPTIONAL: return take(in) & 1 ? tensor(in, 0) : mate_value_none();
	case K_TENSOR: return tensor(in, 0);
	case K_WIDE: return tensor_of(in, 0, 1);
	case K_HALF: return half_tensor(in, 0);
	case K_FP8_ROWS: return half_tensor(in, 1);
	case K_BYTES: return byte_tensor(in);
	case K_FP8: return bytes_of(in, MATE_F8_E4M3FN);
	case K_INTS: return tensor(in, 1);
	case K_INT: return mate_value_int(ints[take(in) % N_OF(ints)]);
	case K_FLOAT: return mate_value_float(floats[take(in) % N_OF(floats)]);
	case K_BOOL: return mate_value_bool(take(in) & 1);
	case K_DTYPE: return mate_value_dtype(dtypes[take(in) % N_OF(dtypes)]);
	default: {
		const char *s = strs[take(in) % N_OF(strs)];
		return mate_value_str(s, strlen(s));
	}
	}
}

static mate_replay *replay;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mate_error err;

	(void)argc;
	(void)argv;
	setenv("MATE_MAX_MEMORY", "64M", 1);   /* what a handler makes counts against it */
	if ((replay = mate_replay_new(&err)) == NULL ||
	    mate_replay_set_device(replay, MATE_REPLAY_DEVICE_CPU, &err) != MATE_OK)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	const struct family *f = &families[take(&in) % NFAM];
	static unsigned object;
	char self[32];

	snprintf(self, sizeof(self), "%u", ++object);   /* a new object per input */
	for (int i = 0; i < 3 && f->calls[i].fn != NULL; i++) {
		struct mate_replay_request req = { .function = f->calls[i].fn, .module = "flashinfer",
			.process_id = 1, .self_id = strchr(f->calls[i].fn, '.') ? self : NULL };
		struct mate_replay_result res;
		mate_value *expected = NULL;
		const char *k = f->calls[i].kinds;
		unsigned extra = take(&in);
		char key[64];

		if ((req.args = mate_value_dict()) == NULL)
			return 0;
		for (int pos = 0; k[pos] != '\0' && k[pos] != '|'; pos++) {
			snprintf(key, sizeof(key), "arg_%d", pos);
			mate_value_set_str(req.args, key, arg(&in, k[pos]));
		}
		for (const char *w = strchr(k, '|'); w != NULL && *++w != '\0'; ) {
			const char *eq = strchr(w, '='), *sp;
			if (eq == NULL)
				break;
			snprintf(key, sizeof(key), "kwarg_%.*s", (int)(eq - w), w);
			mate_value_set_str(req.args, key, arg(&in, eq[1]));
			sp = strchr(eq, ' ');   /* the next keyword is past it */
			w = sp != NULL ? sp : eq + strlen(eq) - 1;
		}
		if (extra & 1)      /* an out= of its own shape */
			mate_value_set_str(req.args, "kwarg_out", tensor(&in, 0));
		if (extra & 2)
			mate_value_set_str(req.args, "kwarg_return_lse", mate_value_bool(1));
		if (extra & 4)
			mate_value_set_str(req.args, "kwarg_kv_layout", arg(&in, K_STR));
		if (extra & 16) {   /* a plan's dtypes */
			mate_value_set_str(req.args, "kwarg_q_data_type", mate_value_dtype(MATE_F32));
			mate_value_set_str(req.args, "kwarg_kv_data_type", mate_value_dtype(MATE_F32));
		}
		if ((extra & 8) && strstr(req.function, "_quantize") != NULL) {
			/* a quantizer's recorded (x_q, sf), which it takes rounding ties from */
			expected = mate_value_dict();
			mate_value_set_str(expected, "result_0", byte_tensor(&in));
			mate_value_set_str(expected, "result_1", byte_tensor(&in));
		} else if (extra & 8) {    /* a recorded result to compare with */
			expected = mate_value_dict();
			mate_value_set_str(expected, "result", tensor(&in, 0));
		}
		req.expected = expected;
		mate_replay_execute(replay, &req, &res);
		if (getenv("MATE_FUZZ_VERBOSE") != NULL)   /* what each call came to, for the seeds */
			fprintf(stderr, "%s: %s: %s\n", req.function, mate_replay_verdict_name(res.verdict),
			    res.message);
		mate_value_free(req.args);
		mate_value_free(expected);
	}
	return 0;
}
