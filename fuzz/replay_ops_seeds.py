"""replay_ops_seeds.py DIR: writes fuzz_replay_ops's seeds into DIR (fuzz/corpus/replay_ops): byte
strings that decode, as fuzz/fuzz_replay_ops.c reads its input, to valid calls of each family (a
decode, paged and ragged prefill wrapper's __init__, plan and run; append_paged_kv_cache, RoPE,
sampling, norms, products, merges). Kept in step with the families and tables of the C file:
MATE_FUZZ_VERBOSE=1 fuzz/fuzz_replay_ops SEED prints each call's verdict."""
import os, struct, sys
out = sys.argv[1]
FAM = ["BatchDecode", "BatchPrefillPaged", "BatchPrefillRagged", "MLA", "SegmentGEMM", "append_paged_kv_cache",
       "append_paged_mla_kv_cache", "get_batch_indices_positions", "top_k_renorm_probs", "top_p_renorm_probs",
       "top_k_mask_logits", "top_k", "sampling_from_probs", "top_k_sampling_from_probs",
       "top_p_sampling_from_probs", "min_p_sampling_from_probs", "top_k_top_p_sampling_from_probs",
       "top_k_top_p_sampling_from_logits", "apply_rope", "apply_rope_inplace", "apply_rope_pos_ids",
       "apply_llama31_rope", "apply_llama31_rope_pos_ids_inplace", "apply_rope_with_cos_sin_cache", "rmsnorm",
       "gemma_fused_add_rmsnorm", "fused_rmsnorm_silu", "silu_and_mul", "gelu_tanh_and_mul", "softmax", "mm", "bmm",
       "mm_bf16", "bmm_fp8", "mm_fp8", "merge_state", "merge_states", "single_decode_with_kv_cache",
       "single_prefill_with_kv_cache", "packbits", "segment_packbits", "cblas_sgemm"]
INTS = [0, 1, 2, 3, 4, 5, 7, 8, 16, 64]
FLOATS = {0: 0, 0.5: 1, 1: 2, -1: 3, 2: 4, 1e-6: 5}
STRS = ["NHD", "HND", "NONE", "ROPE_LLAMA", "log2", "ln", "NH", "HN", "big", "little"]


def T(*shape, ints=None, i64=False):
    b = [0, (len(shape) << 1) | (1 if i64 else 0)] + list(shape)
    n = 1
    for d in shape:
        n *= d
    if ints is not None:
        assert len(ints) == n and all(0 <= x < 12 for x in ints)
        b += ints
    else:
        b += [(i * 37 + 11) % 240 for i in range(n)]
    return b


def O(t=None):
    return [0, 0] if t is None else [0, 1] + t[1:]


def I(*v):
    return T(len(v), ints=list(v))


def N(v):
    return [0, INTS.index(v)]


def F(v):
    return [0, FLOATS[v]]


def B(v):
    return [0, 1 if v else 0]


def S(s):
    return [0, STRS.index(s)]


SELF = [0]
seeds = {}
P16 = 16  # extra: the plan's dtypes float32
seeds["decode"] = ([FAM.index("BatchDecode")] + [0] + SELF + T(8) + S("NHD") +
                   [P16] + SELF + I(0, 1, 2) + I(0, 1) + I(2, 3) + N(2) + N(2) + N(8) + N(4) +
                   [0] + SELF + T(2, 2, 8) + T(2, 2, 4, 2, 8))
seeds["prefill_paged"] = ([FAM.index("BatchPrefillPaged")] + [0] + SELF + T(8) + S("NHD") +
                          [P16] + SELF + I(0, 3, 5) + I(0, 1, 2) + I(0, 1) + I(4, 3) + N(2) + N(2) + N(8) + N(4) + N(8) + O() + O() + B(1) +
                          [0] + SELF + T(5, 2, 8) + T(2, 2, 4, 2, 8))
seeds["prefill_ragged"] = ([FAM.index("BatchPrefillRagged")] + [0] + SELF + T(8) + S("NHD") +
                           [P16] + SELF + I(0, 2, 3) + I(0, 4, 7) + N(2) + N(2) + N(8) + N(8) + O() + O() + B(1) +
                           [0] + SELF + T(3, 2, 8) + T(7, 2, 8) + T(7, 2, 8))
seeds["append"] = ([FAM.index("append_paged_kv_cache")] + [0] + T(3, 2, 8) + T(3, 2, 8) + I(0, 0, 1) + I(3, 4, 1) +
                   T(2, 2, 8, 2, 8) + I(0, 1) + I(0, 1, 2) + I(5, 2) + S("NHD"))
seeds["batch_indices"] = [FAM.index("get_batch_indices_positions"), 0] + I(0, 2, 4) + I(5, 3) + N(4) + O() + O()
seeds["top_k_renorm"] = [FAM.index("top_k_renorm_probs"), 0] + T(3, 8) + N(3)
seeds["rope_pos_ids"] = [FAM.index("apply_rope_pos_ids"), 0] + T(3, 2, 8) + T(3, 1, 8) + I(0, 5, 9) + N(8) + B(0) + F(1) + F(2)
seeds["rope"] = [FAM.index("apply_rope"), 0] + T(3, 2, 8) + T(3, 1, 8) + I(0, 3) + I(4) + N(8) + B(1) + F(1) + F(2)
seeds["rmsnorm"] = [FAM.index("rmsnorm"), 0] + T(4, 8) + T(8) + F(1e-6) + O(T(4, 8))
seeds["mm"] = [FAM.index("mm"), 8] + T(4, 8) + T(8, 3) + [0, 0] + O() + T(4, 3)[1:]
seeds["merge_state"] = [FAM.index("merge_state"), 0] + T(3, 2, 8) + T(3, 2) + T(3, 2, 8) + T(3, 2)
seeds["single_decode"] = [FAM.index("single_decode_with_kv_cache"), 2] + T(4, 8) + T(7, 2, 8) + T(7, 2, 8) + S("NHD") + S("NONE")
seeds["sampling"] = [FAM.index("top_k_top_p_sampling_from_probs"), 0] + T(3, 8) + N(3) + F(0.5) + I(0, 1, 2)
seeds["segment_gemm"] = ([FAM.index("SegmentGEMM"), 0] + SELF + T(8) +
                         [0] + SELF + T(5, 8) + T(2, 8, 4) + N(2) + B(0) + O() + O(I(2, 3)) + O() + O())
for name, b in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes(b))
print(len(seeds), "seeds")
