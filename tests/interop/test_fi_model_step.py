# mate-python: peers
"""test_fi_model_step.py: a small model-like serving step recorded with FlashInfer's real
decorator at level 10 (torch references with FlashInfer's names and signatures) replays with
every call passed: no Unsupported call and no false verdict (issue 21's "done when").

The step, on a paged bf16 KV cache (page size 4, 3 requests, 8 query and 2 KV heads, head
dim 64): a prefill of the prompts (rmsnorm, q/k/v projections by mm_bf16, RoPE by position,
get_batch_indices_positions, append_paged_kv_cache, a paged prefill wrapper planned and run
causally), then two decode steps on one decode wrapper planned once (appends of the new
token between the runs), with the MLP (fused_add_rmsnorm, silu_and_mul) and sampling
(top_k_top_p_sampling_from_logits, top_p_renorm_probs) after each; calls on one wrapper
replay in order on one object (self_id)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))

P, B, HQ, HK, D, HIDDEN, VOCAB = 4, 3, 8, 2, 64, 128, 96


def record():
    import torch

    import flashinfer_attn_ref
    import flashinfer_ops21
    import flashinfer_peer

    api = flashinfer_peer.load_api_logging()
    fi = dict(flashinfer_peer.decorate(api))
    fi.update(flashinfer_attn_ref.decorate(api))
    fi.update(flashinfer_ops21.decorate(api, ["mm_bf16", "apply_rope_pos_ids",
                                              "top_k_top_p_sampling_from_logits",
                                              "top_p_renorm_probs"]))
    bf16, i32 = torch.bfloat16, torch.int32
    gen = torch.Generator().manual_seed(2026)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(bf16)

    w_norm = rand(HIDDEN)
    wq, wk, wv = rand(HIDDEN, HQ * D, scale=0.1), rand(HIDDEN, HK * D, scale=0.1), \
        rand(HIDDEN, HK * D, scale=0.1)
    w_up, w_out = rand(HIDDEN, 2 * HIDDEN, scale=0.1), rand(HIDDEN, VOCAB, scale=0.1)
    npages = 12
    cache = torch.zeros(npages, 2, P, HK, D, dtype=bf16)    # (k, v) in one tensor, NHD
    prompt = [5, 3, 7]
    pages = [[0, 1], [2], [3, 4]]
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
    h = rand(sum(prompt), HIDDEN)
    positions = torch.cat([torch.arange(n) for n in prompt]).to(i32)
    q, k, v = project(h, positions)
    append(k, v, prompt, prompt)
    prefill = fi["BatchPrefillWithPagedKVCacheWrapper"](ws, "NHD")
    indptr, indices, last = layout(prompt)
    qo = torch.tensor([0] + prompt, dtype=i32).cumsum(0).to(i32)
    prefill.plan(qo, indptr, indices, last, HQ, HK, D, P, causal=True)
    head(prefill.run(q, cache), h)

    # decode: one token per request, twice
    lens = list(prompt)
    decode = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, "NHD")
    for step in range(2):
        lens = [n + 1 for n in lens]
        if step == 1:      # lengths 7, 5, 9: requests 1 and 2 take a new page
            pages[1].append(5)
            pages[2].append(6)
        h = rand(B, HIDDEN)
        q, k, v = project(h, torch.tensor([n - 1 for n in lens], dtype=i32))
        append(k, v, [1] * B, lens)
        indptr, indices, last = layout(lens)
        decode.plan(indptr, indices, last, HQ, HK, D, P)   # new lengths: a new plan
        head(decode.run(q, cache), h)


if len(sys.argv) > 1 and sys.argv[1] == "--record":
    record()
    sys.exit(0)

from mate_test import build_path, check, done, run, tmpdir  # noqa: E402

REPLAY = build_path("src", "replay", "mate-replay")
TMP = tmpdir()
root = os.path.join(TMP, "rec")
env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
           FLASHINFER_LOGDEST=os.path.join(TMP, "log"))
p = subprocess.run([sys.executable, os.path.abspath(__file__), "--record"], env=env,
                   capture_output=True, text=True)
check(p.returncode == 0, "recording the step under FlashInfer's decorator: %s" % p.stderr[-2000:])
dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) \
    if os.path.isdir(root) else []
check(len(dirs) >= 40, "the step made %d calls" % len(dirs))
p = run([REPLAY, "--jsonl", root], check=False)
verdicts = [json.loads(x) for x in p.stdout.splitlines()]
check(len(verdicts) == len(dirs), "mate-replay replayed %d of %d dumps" % (len(verdicts), len(dirs)))
functions = sorted({v["function"] for v in verdicts})
for want in ("rmsnorm", "mm_bf16", "apply_rope_pos_ids", "get_batch_indices_positions",
             "append_paged_kv_cache", "BatchPrefillWithPagedKVCacheWrapper.plan",
             "BatchPrefillWithPagedKVCacheWrapper.run", "BatchDecodeWithPagedKVCacheWrapper.plan",
             "BatchDecodeWithPagedKVCacheWrapper.run", "fused_add_rmsnorm", "silu_and_mul",
             "top_k_top_p_sampling_from_logits", "top_p_renorm_probs"):
    check(want in functions, "the step recorded %s: %s" % (want, functions))
for v in verdicts:
    check(v["verdict"] == "passed", "%s (%s) replays as %s: %s" % (v["function"], v["dir"],
                                                                  v["verdict"], v["message"]))
compared = [v for v in verdicts if v["compared"] > 0]
check(len(compared) >= len(verdicts) - 8,
      "outputs compared in %d of %d calls (the appends and __init__ record none)"
      % (len(compared), len(verdicts)))
check(p.returncode == 0, "mate-replay exits 0: %d %s" % (p.returncode, p.stderr[-500:]))
done()
