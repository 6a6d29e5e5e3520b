/* replay_ops_info.c: the dtypes and devices each of mate's built-in replay handlers implements, for mate-replay --list-ops and its man page. */
#include "mate_private.h"
#include "replay_private.h"

#include <string.h>

/* Ops on the kernel table run on the CPU, and on CUDA in a CUDA build. */
#define BOTH "cpu, cuda"
#define FLOATS "float32, float16, bfloat16, float64"

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
	{ "mm_bf16", "bfloat16 -> bfloat16, float16, float32", "cpu" },
	{ "bmm_bf16", "bfloat16 -> bfloat16, float16, float32", "cpu" },
	{ "packbits", "bool, integers -> uint8", "cpu" },
	{ "segment_packbits", "bool, integers -> uint8, int32", "cpu" },
	{ "fused_rmsnorm_silu", "bfloat16 -> bfloat16, float8_e4m3fn", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchDecodeWithPagedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", "cpu" },
	{ "BatchPrefillWithPagedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchPrefillWithPagedKVCacheWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchPrefillWithPagedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", "cpu" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.__init__", "any", "cpu" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.plan", "int32 indptr", "cpu" },
	{ "BatchPrefillWithRaggedKVCacheWrapper.run", "float32, float16, bfloat16; NHD, HND", "cpu" },
	{ "BatchMLAPagedAttentionWrapper.__init__", "any", "cpu" },
	{ "BatchMLAPagedAttentionWrapper.plan", "int32 indptr and indices", "cpu" },
	{ "BatchMLAPagedAttentionWrapper.run", "float32, float16, bfloat16", "cpu" },
	{ "merge_state", "float32, float16, bfloat16; float32 LSE", "cpu" },
	{ "merge_states", "float32, float16, bfloat16; float32 LSE", "cpu" },
	{ "append_paged_kv_cache", "float32, float16, bfloat16; NHD, HND", "cpu" },
	{ "append_paged_mla_kv_cache", "float32, float16, bfloat16", "cpu" },
	{ "get_batch_indices_positions", "int32", "cpu" },
	{ "cblas_sgemm", "float32", "cpu" },
	{ "cblas_dgemm", "float64", "cpu" },
	{ "sgemm_", "float32", "cpu" },
	{ "dgemm_", "float64", "cpu" },
	{ "cublasSgemm_v2", "float32", BOTH },
	{ "cublasSgemm", "float32", BOTH },
	{ "cublasGemmEx", "float32, float16, bfloat16", BOTH },
	{ "cublasGemmStridedBatchedEx", "float32, float16, bfloat16", BOTH },
};

const char *
mate_replay_builtin_info(const char *name, const char **devices)
{
	for (size_t i = 0; i < sizeof(info) / sizeof(info[0]); i++)
		if (strcmp(info[i].name, name) == 0) {
			*devices = info[i].devices;
			return info[i].dtypes;
		}
	*devices = NULL;
	return NULL;
}
