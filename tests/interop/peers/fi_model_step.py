"""fi_model_step.py: a small model-like serving step on FlashInfer's APIs (torch references
wrapped by FlashInfer's real decorator), shared by tests/test_fi_model_step.py and
bench/replay-mixed.py.

The step, on a paged bf16 KV cache (page size 4, 3 requests, 8 query and 2 KV heads, head
dim 64): a prefill of the prompts (rmsnorm, q/k/v projections by mm_bf16, RoPE by position,
get_batch_indices_positions, append_paged_kv_cache, a paged prefill wrapper planned and run
causally), then decode steps on one decode wrapper (appends of the new token between the
runs, a new plan for the new lengths), with the MLP (fused_add_rmsnorm, silu_and_mul) and
sampling (top_k_top_p_sampling_from_logits, top_p_renorm_probs) after each run; each request
takes a new page when its last one is full."""
import torch

import flashinfer_attn_ref
import flashinfer_ops21
import flashinfer_peer

P, B, HQ, HK, D, HIDDEN, VOCAB = 4, 3, 8, 2, 64, 128, 96
PROMPT = [5, 3, 7]


def decorated():
    """The references the step calls, each wrapped by FlashInfer's real decorator."""
    api = flashinfer_peer.load_api_logging()
    fi = dict(flashinfer_peer.decorate(api))
    fi.update(flashinfer_attn_ref.decorate(api))
    fi.update(flashinfer_ops21.decorate(api, ["mm_bf16", "apply_rope_pos_ids",
                                              "top_k_top_p_sampling_from_logits",
                                              "top_p_renorm_probs"]))
    return fi


def record(decode_steps=2, seed=2026, fi=None):
    """Runs the prefill and decode_steps decode steps through the decorated references (the
    decorator records them when FLASHINFER_LOGLEVEL is set)."""
    fi = fi if fi is not None else decorated()
    bf16, i32 = torch.bfloat16, torch.int32
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(bf16)

    w_norm = rand(HIDDEN)
    wq, wk, wv = rand(HIDDEN, HQ * D, scale=0.1), rand(HIDDEN, HK * D, scale=0.1), \
        rand(HIDDEN, HK * D, scale=0.1)
    w_up, w_out = rand(HIDDEN, 2 * HIDDEN, scale=0.1), rand(HIDDEN, VOCAB, scale=0.1)
    npages = sum((n + decode_steps + P - 1) // P for n in PROMPT) + 2
    cache = torch.zeros(npages, 2, P, HK, D, dtype=bf16)    # (k, v) in one tensor, NHD
    pages = [[0, 1], [2], [3, 4]]
    free = [5]
    ws = torch.empty(1 << 12, dtype=torch.uint8)

    def layout(lens):
        indptr = torch.tensor([0] + [len(p) for p in pages], dtype=i32).cumsum(0).to(i32)
        indices = torch.tensor(sum(pages, []), dtype=i32)
        last = torch.tensor([n - (len(p) - 1) * P for n, p in zip(lens, pages)], dtype=i32)
        return indptr, indices, last

    def project(h, positions):
        x = fi["rmsnorm"](h, w_norm)
        q = fi["mm_bf16"](x, wq).reshape(-1, HQ, D)
        k = fi["mm_bf16"](x, wk).reshape(-1, HK, D)
        v = fi["mm_bf16"](x, wv).reshape(-1, HK, D)
        q, k = fi["apply_rope_pos_ids"](q, k, positions)
        return q, k, v

    def append(k, v, new, lens):
        append_indptr = torch.tensor([0] + new, dtype=i32).cumsum(0).to(i32)
        bi, pos = fi["get_batch_indices_positions"](append_indptr, torch.tensor(lens, dtype=i32),
                                                    int(sum(new)))
        indptr, indices, last = layout(lens)
        fi["append_paged_kv_cache"](k, v, bi, pos, cache, indices, indptr, last)
        return pos

    def head(o, h):
        r = h.clone()
        x = o.reshape(-1, HQ * D)[:, :HIDDEN].contiguous()
        fi["fused_add_rmsnorm"](x, r, w_norm)
        up = fi["mm_bf16"](x, w_up)
        act = fi["silu_and_mul"](up)
        logits = fi["mm_bf16"](act, w_out).float()
        fi["top_k_top_p_sampling_from_logits"](logits, 8, 0.9)
        fi["top_p_renorm_probs"](torch.softmax(logits, -1), 0.8)

    # prefill: the prompts
    h = rand(sum(PROMPT), HIDDEN)
    positions = torch.cat([torch.arange(n) for n in PROMPT]).to(i32)
    q, k, v = project(h, positions)
    append(k, v, PROMPT, PROMPT)
    prefill = fi["BatchPrefillWithPagedKVCacheWrapper"](ws, "NHD")
    indptr, indices, last = layout(PROMPT)
    qo = torch.tensor([0] + PROMPT, dtype=i32).cumsum(0).to(i32)
    prefill.plan(qo, indptr, indices, last, HQ, HK, D, P, causal=True, q_data_type=q.dtype)
    head(prefill.run(q, cache), h)

    # decode: one token per request a step
    lens = list(PROMPT)
    decode = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, "NHD")
    for _ in range(decode_steps):
        lens = [n + 1 for n in lens]
        for b, n in enumerate(lens):   # with 2 steps: requests 1 and 2 take pages 5 and 6
            if n > len(pages[b]) * P:
                pages[b].append(free[0])
                free[0] += 1
        h = rand(B, HIDDEN)
        q, k, v = project(h, torch.tensor([n - 1 for n in lens], dtype=i32))
        append(k, v, [1] * B, lens)
        indptr, indices, last = layout(lens)
        decode.plan(indptr, indices, last, HQ, HK, D, P, q_data_type=q.dtype)   # new lengths: a new plan
        head(decode.run(q, cache), h)
