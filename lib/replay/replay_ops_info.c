/* replay_ops_info.c: the dtypes and devices each of mate's built-in replay handlers implements, for mate-replay --list-ops and its man page. */
#include "mate_private.h"
#include "replay_private.h"

#include <string.h>

/* Ops on the kernel table run on the CPU, and on CUDA in a CUDA build. */
#define BOTH "cpu, cuda"
#define FLOATS "float32, float16, bfloat16, float64"
/* FlashInfer's trtllm-gen and XQA functions (replay_ops_trtllm.c): sinks on the CPU only */
#define TRTLLM_DTYPES "float32, float16, bfloat16, float8 caches; NHD, HND; sinks on cpu"

/* FlashInfer 0.7.2's signatures of the wrappers' methods (str(inspect.signature)
 * without the annotations). They take *args or **kwargs, so their handlers
 * read the arguments as recorded, by these positions and names, rather than
 * binding them through a registered signature. */
#define SIG_DECODE_INIT \
	"(self, float_workspace_buffer, kv_layout='NHD', use_cuda_graph=False, " \
	"use_tensor_cores=False, paged_kv_indptr_buffer=None, paged_kv_indices_buffer=None, " \
	"paged_kv_last_page_len_buffer=None, backend='auto', jit_args=None)"
#define SIG_DECODE_PLAN \
	"(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, " \
	"page_size, *deprecated_positional_args, **kwargs)"
#define SIG_DECODE_RUN \
	"(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None, v_scale=None, " \
	"out=None, lse=None, return_lse=False, enable_pdl=None, window_left=None, " \
	"sinks=None, q_len_per_req=None, skip_softmax_threshold_scale_factor=None, " \
	"kv_cache_sf=None)"
#define SIG_PAGED_INIT \
	"(self, float_workspace_buffer, kv_layout='NHD', use_cuda_graph=False, " \
	"qo_indptr_buf=None, paged_kv_indptr_buf=None, paged_kv_indices_buf=None, " \
	"paged_kv_last_page_len_buf=None, custom_mask_buf=None, mask_indptr_buf=None, " \
	"backend='auto', jit_args=None, jit_kwargs=None, variant_owns_mask=False)"
#define SIG_PAGED_PLAN \
	"(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, " \
	"num_qo_heads, num_kv_heads, head_dim_qk, page_size, head_dim_vo=None, " \
	"custom_mask=None, packed_custom_mask=None, causal=False, pos_encoding_mode='NONE', " \
	"use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, logits_soft_cap=None, " \
	"rope_scale=None, rope_theta=None, q_data_type='float16', kv_data_type=None, " \
	"o_data_type=None, non_blocking=True, prefix_len_ptr=None, " \
	"token_pos_in_items_ptr=None, token_pos_in_items_len=0, max_item_len_ptr=None, " \
	"seq_lens=None, seq_lens_q=None, block_tables=None, max_token_per_sequence=None, " \
	"max_sequence_kv=None, fixed_split_size=None, disable_split_kv=False, " \
	"uniform_q_len=None)"
#define SIG_PAGED_RUN \
	"(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None, v_scale=None, " \
	"out=None, lse=None, return_lse=False, lse_base='log2', lse_layout='NH', " \
	"enable_pdl=None, window_left=None, sinks=None, kv_cache_sf=None, " \
	"skip_softmax_threshold_scale_factor=None, use_fp16_softmax=None, " \
	"uses_spcompress=None)"
#define SIG_RAGGED_INIT \
	"(self, float_workspace_buffer, kv_layout='NHD', use_cuda_graph=False, " \
	"qo_indptr_buf=None, kv_indptr_buf=None, custom_mask_buf=None, mask_indptr_buf=None, " \
	"backend='auto', jit_args=None, jit_kwargs=None, variant_owns_mask=False)"
#define SIG_RAGGED_PLAN \
	"(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk, " \
	"head_dim_vo=None, custom_mask=None, packed_custom_mask=None, causal=False, " \
	"pos_encoding_mode='NONE', use_fp16_qk_reduction=False, window_left=-1, " \
	"logits_soft_cap=None, sm_scale=None, rope_scale=None, rope_theta=None, " \
	"q_data_type='float16', kv_data_type=None, o_data_type=None, non_blocking=True, " \
	"prefix_len_ptr=None, token_pos_in_items_ptr=None, token_pos_in_items_len=0, " \
	"max_item_len_ptr=None, fixed_split_size=None, disable_split_kv=False, " \
	"seq_lens=None, seq_lens_q=None, max_token_per_sequence=None, max_sequence_kv=None, " \
	"v_indptr=None, o_indptr=None, uniform_q_len=None)"
#define SIG_RAGGED_RUN \
	"(self, q, k, v, *args, q_scale=None, k_scale=None, v_scale=None, o_scale=None, " \
	"out=None, lse=None, return_lse=False, lse_base='log2', lse_layout='NH', " \
	"enable_pdl=None, kv_cache_sf=None)"
#define SIG_MLA_INIT \
	"(self, float_workspace_buffer, use_cuda_graph=False, qo_indptr=None, " \
	"kv_indptr=None, kv_indices=None, kv_len_arr=None, backend='auto')"
#define SIG_MLA_PLAN \
	"(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv, " \
	"head_dim_kpe, page_size, causal, sm_scale, q_data_type, kv_data_type, " \
	"use_profiler=False, *, query_layout='split', kv_cache_layout='split', " \
	"lse_mode='none', output_dtype=None, output_scale='none', scale_mode='default', " \
	"skip_softmax=False, enable_pdl=None, use_sinks=False)"
#define SIG_MLA_RUN \
	"(self, q_nope=None, q_pe=None, ckv_cache=None, kpe_cache=None, out=None, lse=None, " \
	"return_lse=False, profiler_buffer=None, kv_len=None, page_table=None, " \
	"return_lse_base_on_e=False, o_scale=None, *, query=None, kv_cache=None, " \
	"ckv_scale=None, ckv_scale_arr=None, kpe_scale=None, sinks=None, " \
	"skip_softmax_threshold_scale_factor=None, bmm1_scale=None, bmm2_scale=None)"

static const struct {
	const char *name, *dtypes, *devices;
} info[] = {
	{ "rmsnorm", FLOATS, BOTH },
	{ "gemma_rmsnorm", FLOATS, BOTH },
	{ "fused_add_rmsnorm", FLOATS, BOTH },
	{ "gemma_fused_add_rmsnorm", FLOATS, BOTH },
	{ "silu_and_mul", FLOATS, BOTH },
	{ "gelu_and_mul", FLOATS, BOTH },
	{ "gelu_tanh_and_mul", FLOATS, BOTH },
	{ "softmax", FLOATS " -> float32", BOTH },
	{ "Tensor.softmax", FLOATS, BOTH },
	{ "mm", FLOATS, BOTH },
	{ "bmm", FLOATS, BOTH },
	{ "Tensor.mm", FLOATS, BOTH },
	{ "Tensor.bmm", FLOATS, BOTH },
	{ "bmm_fp8", "float8_e4m3fn, float8_e5m2 -> bfloat16, float16", BOTH },
	{ "mm_fp8", "float8_e4m3fn, float8_e5m2, b (n, k) -> bfloat16", BOTH },
	{ "single_decode_with_kv_cache", "float32, float16, bfloat16", BOTH },
	{ "single_prefill_with_kv_cache", "float32, float16, bfloat16", BOTH },
	{ "SegmentGEMMWrapper.__init__", "any", "cpu" },
	{ "SegmentGEMMWrapper.run", "float32, float16, bfloat16", BOTH },
	{ "apply_rope", "float32, float16, bfloat16", "cpu" },
	{ "apply_rope_inplace", "float32, float16, bfloat16", "cpu" },
	{ "apply_rope_pos_ids", "float32, float16, bfloat16", "cpu" },
	{ "apply_rope_pos_ids_inplace", "float32, float16, bfloat16", "cpu" },
	{ "apply_llama31_rope", "float32, float16, bfloat16", "cpu" },
	{ "apply_llama31_rope_inplace", "float32, float16, bfloat16", "cpu" },
	{ "apply_llama31_rope_pos_ids", "float32, float16, bfloat16", "cpu" },
	{ "apply_llama31_rope_pos_ids_inplace", "float32, float16, bfloat16", "cpu" },
	{ "apply_rope_with_cos_sin_cache", "float32, float16, bfloat16; cache float32", "cpu" },
	{ "apply_rope_with_cos_sin_cache_inplace", "float32, float16, bfloat16; cache float32", "cpu" },
	{ "top_k_renorm_probs", FLOATS "; top_k int or int32 per row", "cpu" },
	{ "top_p_renorm_probs", FLOATS "; top_p float or float32 per row", "cpu" },
	{ "top_k_mask_logits", FLOATS "; top_k int or int32 per row", "cpu" },
	{ "top_k", FLOATS " -> values, int64 indices (checked)", "cpu" },
	{ "sampling_from_probs", FLOATS " -> int32 (checked)", "cpu" },
	{ "sampling_from_logits", FLOATS " -> int32 (checked)", "cpu" },
	{ "top_k_sampling_from_probs", FLOATS " -> int32 (checked)", "cpu" },
	{ "top_p_sampling_from_probs", FLOATS " -> int32 (checked)", "cpu" },
	{ "min_p_sampling_from_probs", FLOATS " -> int32 (checked)", "cpu" },
	{ "top_k_top_p_sampling_from_probs", FLOATS " -> int32 (checked)", "cpu" },
	{ "top_k_top_p_sampling_from_logits", FLOATS " -> int32 (checked)", "cpu" },
	{ "top_k_page_table_transform", "float32, float16, bfloat16; int32 -> int32 (checked)", "cpu" },
	{ "top_k_ragged_transform", "float32, float16, bfloat16; int32 -> int32 (checked)", "cpu" },
	{ "chain_speculative_sampling", FLOATS "; integer tokens -> int32 (checked)", "cpu" },
	{ "mm_bf16", "bfloat16 -> bfloat16, float16, float32", BOTH },
	{ "bmm_bf16", "bfloat16 -> bfloat16, float16, float32", BOTH },
	{ "packbits", "bool, integers -> uint8", "cpu" },
	{ "segment_packbits", "bool, integers -> uint8, int32", "cpu" },
	{ "fused_rmsnorm_silu", "bfloat16 -> bfloat16, float8_e4m3fn", "cpu" },
	{ "fused_qk_rmsnorm_rope", "bfloat16 -> bfloat16, float8_e4m3fn", "cpu" },
	{ "layernorm", FLOATS "; gemma, beta any float", "cpu" },
	{ "fp4_quantize", "float16, bfloat16, float8_e4m3fn -> uint8 (e2m1 pairs; e4m3 or ue8m0 "
	    "scales)", "cpu" },
	{ "nvfp4_quantize", "float16, bfloat16, float8_e4m3fn -> uint8 (e2m1 pairs; e4m3 scales)",
	    "cpu" },
	{ "mxfp4_quantize", "float16, bfloat16 -> uint8 (e2m1 pairs; ue8m0 scales)", "cpu" },
	{ "mxfp8_quantize", "float16, bfloat16 -> float8_e4m3fn; ue8m0 scales", "cpu" },
	{ "mxfp4_dequantize", "uint8 (e2m1 pairs; ue8m0 scales) -> float32", "cpu" },
	{ "mxfp4_dequantize_host", "uint8 (e2m1 pairs; ue8m0 scales) -> float32", "cpu" },
	{ "rmsnorm_quant", FLOATS " -> float8_e4m3fn, float8_e5m2", "cpu" },
	{ "fused_add_rmsnorm_quant", FLOATS " -> float8_e4m3fn, float8_e5m2", "cpu" },
	{ "silu_and_mul_nvfp4_quantize", "float16, bfloat16 -> uint8 (e2m1 pairs; e4m3 scales)",
	    "cpu" },
	{ "mm_fp4", "uint8, float4_e2m1fn_x2 (e4m3 or ue8m0 scales) -> bfloat16, float16", "cpu" },
	{ "mm_mxfp8", "float8_e4m3fn (ue8m0 scales) -> bfloat16, float16", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", BOTH },
	{ "BatchPrefillWithPagedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchPrefillWithPagedKVCacheWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchPrefillWithPagedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", BOTH },
	{ "BatchPrefillWithRaggedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.plan", "int32 indptr", "cpu" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", BOTH },
	{ "BatchMLAPagedAttentionWrapper.__init__", "any", "cpu" },
	{ "BatchMLAPagedAttentionWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchMLAPagedAttentionWrapper.run", "float32, float16, bfloat16", "cpu" },
	{ "MultiLevelCascadeAttentionWrapper.__init__", "any", "cpu" },
	{ "MultiLevelCascadeAttentionWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "MultiLevelCascadeAttentionWrapper.run", "float32, float16, bfloat16; NHD, HND", BOTH },
	{ "merge_state", "float32, float16, bfloat16; float32 LSE", "cpu" },
	{ "merge_states", "float32, float16, bfloat16; float32 LSE", "cpu" },
	{ "merge_state_in_place", "float32, float16, bfloat16; float32 LSE; bool mask", "cpu" },
	{ "append_paged_kv_cache", "float32, float16, bfloat16; NHD, HND", "cpu" },
	{ "append_paged_mla_kv_cache", "float32, float16, bfloat16", "cpu" },
	{ "get_batch_indices_positions", "int32", "cpu" },
	{ "trtllm_batch_decode_with_kv_cache", TRTLLM_DTYPES, BOTH },
	{ "trtllm_batch_context_with_kv_cache", TRTLLM_DTYPES, BOTH },
	{ "xqa_batch_decode_with_kv_cache", TRTLLM_DTYPES, BOTH },
	{ "trtllm_batch_decode_with_kv_cache_mla", "bfloat16, float8_e4m3fn -> bfloat16", "cpu" },
	{ "cblas_sgemm", "float32", "cpu" },
	{ "cblas_dgemm", "float64", "cpu" },
	{ "sgemm_", "float32", "cpu" },
	{ "dgemm_", "float64", "cpu" },
	{ "cublasSgemm_v2", "float32", BOTH },
	{ "cublasSgemm", "float32", BOTH },
	{ "cublasGemmEx", "float32, float16, bfloat16", BOTH },
	{ "cublasGemmStridedBatchedEx", "float32, float16, bfloat16", BOTH },
};

#define SIG_CASCADE_INIT \
	"(self, num_levels, float_workspace_buffer, kv_layout='NHD', use_cuda_graph=False, " \
	"qo_indptr_buf_arr=None, paged_kv_indptr_buf_arr=None, paged_kv_indices_buf_arr=None, " \
	"paged_kv_last_page_len_buf_arr=None)"
#define SIG_CASCADE_PLAN \
	"(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr, " \
	"paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, causal=False, " \
	"pos_encoding_mode='NONE', use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, " \
	"logits_soft_cap=None, rope_scale=None, rope_theta=None, q_data_type='float16', " \
	"kv_data_type=None)"
#define SIG_CASCADE_RUN "(self, q, paged_kv_cache)"

/* The signatures of the handlers registered without one (replay_ops_attn.c). */
static const struct {
	const char *name, *sig;
} sigs[] = {
	{ "BatchDecodeWithPagedKVCacheWrapper.__init__", SIG_DECODE_INIT },
	{ "BatchDecodeWithPagedKVCacheWrapper.plan", SIG_DECODE_PLAN },
	{ "BatchDecodeWithPagedKVCacheWrapper.run", SIG_DECODE_RUN },
	{ "BatchPrefillWithPagedKVCacheWrapper.__init__", SIG_PAGED_INIT },
	{ "BatchPrefillWithPagedKVCacheWrapper.plan", SIG_PAGED_PLAN },
	{ "BatchPrefillWithPagedKVCacheWrapper.run", SIG_PAGED_RUN },
	{ "BatchPrefillWithRaggedKVCacheWrapper.__init__", SIG_RAGGED_INIT },
	{ "BatchPrefillWithRaggedKVCacheWrapper.plan", SIG_RAGGED_PLAN },
	{ "BatchPrefillWithRaggedKVCacheWrapper.run", SIG_RAGGED_RUN },
	{ "BatchMLAPagedAttentionWrapper.__init__", SIG_MLA_INIT },
	{ "BatchMLAPagedAttentionWrapper.plan", SIG_MLA_PLAN },
	{ "BatchMLAPagedAttentionWrapper.run", SIG_MLA_RUN },
	{ "MultiLevelCascadeAttentionWrapper.__init__", SIG_CASCADE_INIT },
	{ "MultiLevelCascadeAttentionWrapper.plan", SIG_CASCADE_PLAN },
	{ "MultiLevelCascadeAttentionWrapper.run", SIG_CASCADE_RUN },
};

const char *
mate_replay_builtin_info(const char *name, const char **devices, const char **signature)
{
	*devices = *signature = NULL;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(sigs[i].name, name) == 0)
			*signature = sigs[i].sig;
	for (size_t i = 0; i < sizeof(info) / sizeof(info[0]); i++)
		if (strcmp(info[i].name, name) == 0) {
			*devices = info[i].devices;
			return info[i].dtypes;
		}
	return NULL;
}
