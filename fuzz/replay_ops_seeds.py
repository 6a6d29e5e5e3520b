"""replay_ops_seeds.py DIR: writes fuzz_replay_ops's seeds into DIR (fuzz/corpus/replay_ops): byte
strings that decode, as fuzz/fuzz_replay_ops.c reads its input, to valid calls of each family (a
decode, paged and ragged prefill wrapper's __init__, plan and run; append_paged_kv_cache, RoPE,
sampling, norms, products, merges; the block quantizers, float8 norms and block-scaled GEMMs). Kept in step with the families and tables of the C file:
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
       "single_prefill_with_kv_cache", "packbits", "segment_packbits", "cblas_sgemm",
       "trtllm_decode", "trtllm_context", "xqa_decode", "trtllm_mla", "merge_state_in_place", "Cascade",
       "chain_speculative_sampling", "layernorm", "top_k_ragged_transform", "top_k_page_table_transform",
       "fused_qk_rmsnorm_rope", "fp4_quantize", "nvfp4_quantize", "mxfp4_quantize", "mxfp8_quantize",
       "mxfp4_dequantize", "rmsnorm_quant", "fused_add_rmsnorm_quant", "mxfp4_dequantize_host",
       "silu_and_mul_nvfp4_quantize", "mm_fp4", "mm_mxfp8", "fp4_quantize_fp8"]
INTS = [0, 1, 2, 3, 4, 5, 7, 8, 16, 64, -1]
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


def TD(dtype, *shape, wide=False):
    """A tensor of another dtype (dtypes[] of the C file: 2 bfloat16), one byte an element."""
    how = {1: 0xF2, 2: 0xF4, 3: 0xF6}[len(shape)]
    n = 1
    for d in shape:
        n *= d
    assert wide or max(shape) <= 8
    return [0, how, dtype] + list(shape) + [(i * 37 + 11) % 240 for i in range(n)]


BF16 = 2


def T2(rows, cols, ints):
    """A 2-D index table (int32)."""
    return T(rows, cols, ints=ints)


def L(*tables):
    """A list of index tensors, one per level."""
    return [0, len(tables)] + [b for t in tables for b in t[1:]]


def P(k, v):
    """A (k, v) tuple."""
    return [0] + k[1:] + v[1:]


def O(t=None):
    return [0, 0] if t is None else [0, 1] + t[1:]


def I(*v):
    return T(len(v), ints=list(v))


def N(v):
    return [0, INTS.index(v)]


def F(v):
    return [0, FLOATS[v]]


def H(rows, cols, bf16=True):
    """A quantizer's input (rows, cols) of float16 or bfloat16, cols a multiple of 16 to 128."""
    assert cols % 16 == 0 and 16 <= cols <= 128 and rows <= 8
    return [0, (1 << 1) | (1 if bf16 else 0), rows, cols // 16 - 1] + \
        [(i * 37 + 11) % 240 for i in range(rows * cols)]


def Q(rows, cols):
    """A quantizer's float8_e4m3fn input (rows, cols): codes below 0x78 (0 to 240, no NaN)."""
    return H(rows, cols)[:4] + [(i * 37 + 11) % 120 for i in range(rows * cols)]


def D(idx):
    """dtypes[idx] of the C file (2: bfloat16, 1: float16)."""
    return [0, idx]


def U(*shape, raw=False):
    """uint8 codes of 1 or 2 dimensions, each below 9, a multiple of 16 (to 128) or of 128
    (to 512); raw: a recorded result (no argument byte)."""
    def dim(x):
        for c in range(256):
            if ((c & 3) == 0 and c % 9 == x) or ((c & 3) == 1 and x % 16 == 0 and c % 9 == x // 16) \
                    or ((c & 3) == 2 and x % 128 == 0 and c % 5 == x // 128):
                return c
        raise ValueError(x)
    n = 1
    for d in shape:
        n *= d
    b = [len(shape) - 1] + [dim(d) for d in shape] + [(i * 53 + 7) % 256 for i in range(n)]
    return b if raw else [0] + b


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
# trtllm-gen and XQA decode: 2 requests, 2 query heads on 1 kv head of 8, pages of 4
seeds["trtllm_decode"] = ([FAM.index("trtllm_decode"), 0] + T(2, 2, 8) + T(3, 2, 1, 4, 8) + T(8) +
                          T2(2, 2, [0, 1, 2, 0]) + I(5, 3) + N(8) + F(0.5) + F(1) + N(-1))
seeds["xqa_decode"] = ([FAM.index("xqa_decode"), 0] + T(2, 2, 8) + P(T(3, 4, 1, 8), T(3, 4, 1, 8)) + T(8) +
                       T2(2, 2, [0, 1, 2, 0]) + I(5, 3) + N(8) + F(0.5) + F(1))
# context: 2 requests of 3 and 2 query rows
seeds["trtllm_context"] = ([FAM.index("trtllm_context"), 0] + T(5, 2, 8) + T(3, 2, 1, 4, 8) + T(8) +
                           T2(2, 2, [0, 1, 2, 0]) + I(5, 3) + N(3) + N(8) + F(0.5) + F(1) + N(2) +
                           I(0, 3, 5) + I(0, 5, 8))
# MLA: nope 4 + rope 4 (the query's 8), kv_lora_rank 4
seeds["trtllm_mla"] = ([FAM.index("trtllm_mla"), 0] + T(2, 1, 2, 8) + T(3, 1, 4, 8) + T(8) + N(4) + N(4) + N(4) +
                       T2(2, 2, [0, 1, 2, 0]) + I(5, 3) + N(8) + N(0) + O() + F(0.5) + F(1))
seeds["merge_in_place"] = ([FAM.index("merge_state_in_place"), 0] + T(3, 2, 8) + T(3, 2) + T(3, 2, 8) + T(3, 2) +
                           O())
# a two-level cascade: a shared prefix of 1 page, then 2 requests' own pages
seeds["cascade"] = ([FAM.index("Cascade"), 0] + SELF + N(2) + T(8) + S("NHD") +
                    [P16] + SELF + L(I(0, 3), I(0, 2, 3)) + L(I(0, 1), I(0, 1, 2)) + L(I(0), I(1, 2)) +
                    L(I(4), I(3, 2)) + N(2) + N(1) + N(8) + N(4) + B(1) +
                    [0] + SELF + T(3, 2, 8) + T(3, 2, 4, 1, 8))
# the speculative sampler: 2 requests, 3 drafts each, a vocabulary of 8
seeds["chain_spec"] = ([FAM.index("chain_speculative_sampling"), 0] + T(2, 3, 8) +
                       T2(2, 3, [1, 2, 3, 4, 5, 6]) + T(2, 4, 8) + O() + O() + B(1))
seeds["layernorm"] = [FAM.index("layernorm"), 0] + TD(BF16, 4, 8) + T(8) + T(8) + F(1e-6)
# ragged top-k: 2 rows of windows (offset, length) in a row of 8, k 3
seeds["topk_ragged"] = ([FAM.index("top_k_ragged_transform"), 0] + T(2, 8) + I(0, 2) + I(8, 5) + N(3) +
                        B(0) + N(0) + B(0) + O())
seeds["topk_page_table"] = ([FAM.index("top_k_page_table_transform"), 0] + T(2, 8) +
                            T2(2, 8, [0, 1, 2, 3, 4, 5, 7, 8, 1, 2, 3, 4, 5, 7, 8, 0]) + I(8, 5) + N(3) +
                            O() + B(0) + N(0) + B(0) + O() + O() + N(1) + O())
# the fused QK norm and RoPE: one frame of 1 x 2 patches, 1 head each of q, k, v of 64
seeds["qk_norm_rope"] = ([FAM.index("fused_qk_rmsnorm_rope"), 0] + TD(BF16, 2, 192, wide=True) +
                         TD(BF16, 64, wide=True) + TD(BF16, 64, wide=True) + N(1) + N(1) + N(2) + N(64) + N(0) + N(0) +
                         N(1) + N(1) + N(1) + N(64) + F(1e-6) + B(1) + B(0))
# the block quantizers: NVFP4 of 4 x 32 bf16 (global scale 1, 128x4 scales), then with a
# recorded (x_q, sf) of its shapes; linear NVFP4 of fp16; MXFP4 in 8x4 tiles; MXFP8 padded to 64
ONE = [0, 0, 136]   # a float32 scalar 1.0
seeds["fp4_quantize"] = ([FAM.index("fp4_quantize"), 0] + H(4, 32) + O(ONE) + N(16) + B(0) + B(1) + B(0) +
                         B(0))
seeds["fp4_quantize_recorded"] = ([FAM.index("fp4_quantize"), 8] + H(4, 32) + O(ONE) + N(16) + B(0) + B(1) +
                                  B(0) + B(0) + U(4, 16, raw=True) + U(128, 4, raw=True))
seeds["nvfp4_quantize"] = [FAM.index("nvfp4_quantize"), 0] + H(3, 64, bf16=False) + F(1) + N(2) + B(0) + N(16)
seeds["mxfp4_quantize"] = [FAM.index("mxfp4_quantize"), 0] + H(5, 64) + O() + O() + N(1)
seeds["mxfp8_quantize"] = ([FAM.index("mxfp8_quantize"), 0] + H(2, 64, bf16=False) + B(1) + N(64) + O() + O() +
                           N(0))
# dequantizers: 4 rows of 32 values (16 bytes), linear scales (one block of 32; two groups of 16)
seeds["mxfp4_dequantize"] = [FAM.index("mxfp4_dequantize"), 0] + U(4, 16) + U(4) + N(2)
seeds["mxfp4_dequantize_host"] = [FAM.index("mxfp4_dequantize_host"), 0] + U(4, 16) + U(4, 2) + N(16)
# float8 norms: out float8_e4m3fn (dtypes[] 9), rows of 8
seeds["rmsnorm_quant"] = [FAM.index("rmsnorm_quant"), 0] + TD(9, 2, 8) + T(2, 8) + T(8) + F(1)
seeds["fused_add_rmsnorm_quant"] = ([FAM.index("fused_add_rmsnorm_quant"), 0] + TD(9, 2, 8) + T(2, 8) +
                                    T(2, 8) + T(8) + F(1))
# silu(gate) * up of 4 rows of 2 x 32, NVFP4 in 128x4 tiles; an NVFP4 product of (4, 32) by
# (32, 16) (128x4 scales, b's transposed) into bfloat16; an MXFP8 one of (4, 128) by (128, 128)
# (1-D 128x4 scales) into float16; NVFP4 of a float8_e4m3fn input
seeds["silu_and_mul_nvfp4_quantize"] = ([FAM.index("silu_and_mul_nvfp4_quantize"), 0] + H(4, 64) + F(1) +
                                        N(16) + B(1) + B(0))
seeds["mm_fp4"] = ([FAM.index("mm_fp4"), 0] + U(4, 16) + U(16, 16) + U(128, 4) + U(4, 128) + O() + D(2) +
                   O() + N(16) + B(0) + S("NHD") + B(1))
seeds["mm_mxfp8"] = ([FAM.index("mm_mxfp8"), 0] + U(4, 128) + U(128, 128) + U(512) + U(512) + O() + D(1) +
                     B(0) + S("NHD"))
seeds["fp4_quantize_fp8"] = ([FAM.index("fp4_quantize_fp8"), 0] + Q(4, 32) + O(ONE) + N(16) + B(0) + B(1) +
                             B(0) + B(0))
for name, b in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes(b))
print(len(seeds), "seeds")
