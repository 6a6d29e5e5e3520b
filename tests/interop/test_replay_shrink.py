# mate-python: peers
"""test_replay_shrink.py: mate-replay --shrink cuts a recorded call with one planted bad element to the one failing unit: a 4096-row rmsnorm (.pt) to its row, a 256x256x256 mm (.safetensors) and the bf16 and fp8 GEMMs to one row of A and one column of B (K kept), a paged decode of 16 requests to its request with exactly its pages (__init__, plan and run), paged and ragged prefills to a request with its rows of q and its keys, an MLA batch to a request with its rows of q_nope and q_pe and its pages; single decode and prefill to one query head with its KV head; RoPE by indptr and offsets to one request with its tokens and offset, indptr rebuilt (a lying indptr refused); a call that errors (a position past the cos/sin cache) to its one token; a sampler's and top_k's forbidden draw to its row; the cut dumps replay as a mismatch in mate and in FlashInfer's own replay_sequence; a folder that is not empty is refused and left as it was; a call that passes, and an op without a slicing rule, write nothing and say why."""
import contextlib
import io
import json
import logging
import os
import shutil

from mate_test import build_path, case, check, done, flashinfer_main, flashinfer_record, run, tmpdir
from mate_test import load_tensors as load, save_tensors as save

REPLAY = build_path("src", "replay", "mate-replay")
BAD_ROW, BAD_COL, BAD_REQ = 1731, 17, 5


def cumsum(lens):
    """The indptr of lens: [0, l0, l0 + l1, ...] (int32)."""
    import torch
    return torch.tensor([0] + list(torch.cumsum(torch.tensor(lens), 0)), dtype=torch.int32)


def page_table(lens, P, gen, spare):
    """Pages of P for requests of lens keys, shuffled among spare more: (indptr, indices,
    last_page_len, pages in the cache)."""
    import torch
    counts = [(n + P - 1) // P for n in lens]
    total = sum(counts) + spare
    indptr = cumsum(counts)
    perm = torch.randperm(total, generator=gen).to(torch.int32)
    last = torch.tensor([n - (c - 1) * P for n, c in zip(lens, counts)], dtype=torch.int32)
    return indptr, perm[:int(indptr[-1])].contiguous(), last, total


def record():
    """The child: FLASHINFER_* are set; calls the decorated torch references."""
    import torch

    from flashinfer_attn_ref import decorate as decorate_attn
    from flashinfer_peer import decorate as decorate_peer
    from flashinfer_peer import load_api_logging
    from shrink_ref import decorate as decorate_gemm

    api = load_api_logging()
    which = os.environ["SHRINK_CASE"]
    gen = torch.Generator().manual_seed(33)
    if which == "norm":
        fi = decorate_peer(api)
        fi["rmsnorm"](torch.randn(4096, 64, generator=gen), torch.randn(64, generator=gen))
        fi["softmax"](torch.randn(8, 32, generator=gen))                      # passes
        gemm = fi["SegmentGEMMWrapper"](torch.empty(1 << 16, dtype=torch.int8))   # no rule
        gemm.run(torch.randn(6, 8, generator=gen), torch.randn(2, 8, 4, generator=gen), 2, False,
                 seg_lens=torch.tensor([2, 4]))
    elif which == "more":
        from flashinfer_ops21 import ROPE, SAMPLING
        from flashinfer_ops21 import decorate as decorate_ops21
        fi = dict(decorate_peer(api), **decorate_attn(api), **decorate_ops21(api, ROPE + SAMPLING))
        fi["silu_and_mul"](torch.randn(40, 64, generator=gen))
        fi["softmax"](torch.randn(40, 32, generator=gen))
        fi["merge_state"](torch.randn(40, 4, 64, generator=gen), torch.randn(40, 4, generator=gen),
                          torch.randn(40, 4, 64, generator=gen), torch.randn(40, 4, generator=gen))
        fi["apply_rope_pos_ids"](torch.randn(40, 4, 64, generator=gen), torch.randn(40, 2, 64, generator=gen),
                                 torch.arange(40, dtype=torch.int32) * 3)
        probs = torch.softmax(torch.randn(40, 50, generator=gen), -1)
        fi["top_k_renorm_probs"](probs, torch.full((40,), 5, dtype=torch.int32))
        fi["top_k_sampling_from_probs"](probs, torch.full((40,), 5, dtype=torch.int32))
        fi["top_k_sampling_from_probs"](probs, 5, indices=torch.arange(40, dtype=torch.int32))
        fi["top_k"](probs, 5)
    elif which == "rope-indptr":
        from flashinfer_ops21 import ROPE
        from flashinfer_ops21 import decorate as decorate_ops21
        fi = decorate_ops21(api, ROPE)
        indptr = cumsum([1 + 2 * i for i in range(8)])
        offsets = torch.tensor([7 * i for i in range(8)], dtype=torch.int32)
        n = int(indptr[-1])
        fi["apply_rope"](torch.randn(n, 4, 64, generator=gen), torch.randn(n, 2, 64, generator=gen), indptr, offsets)
        fi["apply_llama31_rope"](torch.randn(n, 4, 64, generator=gen), torch.randn(n, 2, 64, generator=gen),
                                 indptr, offsets)
    elif which == "gemm":
        fi = decorate_gemm(api)
        fi["mm"](torch.randn(256, 256, generator=gen), torch.randn(256, 256, generator=gen))
    elif which == "rope-error":
        from flashinfer_ops21 import ROPE
        from flashinfer_ops21 import decorate as decorate_ops21
        fi = decorate_ops21(api, ROPE)
        cache = torch.randn(64, 32, generator=gen)
        fi["apply_rope_with_cos_sin_cache"](torch.arange(40) % 64, torch.randn(40, 2 * 32, generator=gen),
                                            torch.randn(40, 32, generator=gen), 32, cache)
    elif which == "lowp":
        from flashinfer_ops21 import GEMM_BITS
        from flashinfer_ops21 import decorate as decorate_ops21
        fi = decorate_ops21(api, GEMM_BITS)
        bf = torch.bfloat16
        fi["mm_bf16"](torch.randn(32, 16, generator=gen).to(bf), torch.randn(16, 24, generator=gen).to(bf),
                      bias=torch.randn(24, generator=gen).to(bf))
        fi["bmm_bf16"](torch.randn(3, 8, 16, generator=gen).to(bf), torch.randn(3, 16, 12, generator=gen).to(bf))
        e4 = torch.float8_e4m3fn
        fi["bmm_fp8"](torch.randn(2, 8, 16, generator=gen).to(e4), torch.randn(2, 16, 12, generator=gen).to(e4),
                      torch.tensor(0.5), torch.tensor(2.0), bf)
        fi["mm_fp8"](torch.randn(8, 16, generator=gen).to(e4), torch.randn(12, 16, generator=gen).to(e4))
    elif which == "heads":
        fi = decorate_attn(api)
        fi["single_decode_with_kv_cache"](torch.randn(8, 64, generator=gen), torch.randn(40, 2, 64, generator=gen),
                                          torch.randn(40, 2, 64, generator=gen))
        fi["single_prefill_with_kv_cache"](torch.randn(6, 8, 64, generator=gen), torch.randn(10, 2, 64, generator=gen),
                                           torch.randn(10, 2, 64, generator=gen), causal=True, return_lse=True)
        fi["single_decode_with_kv_cache"](torch.randn(8, 64, generator=gen), torch.randn(2, 40, 64, generator=gen),
                                          torch.randn(2, 40, 64, generator=gen), kv_layout="HND")
    elif which == "mla":
        fi = decorate_attn(api)
        qlens, kvlens, P, H, Dc, Dp = [1 + i % 2 for i in range(8)], [3 + 2 * i for i in range(8)], 4, 4, 32, 16
        qo = cumsum(qlens)
        indptr, indices, _, total = page_table(kvlens, P, gen, 2)
        w = fi["BatchMLAPagedAttentionWrapper"](torch.empty(1 << 12, dtype=torch.uint8))
        w.plan(qo, indptr, indices, torch.tensor(kvlens, dtype=torch.int32), H, Dc, Dp, P, True, 0.125,
               torch.float32, torch.float32)
        n = int(qo[-1])
        w.run(torch.randn(n, H, Dc, generator=gen), torch.randn(n, H, Dp, generator=gen),
              torch.randn(total, P, Dc, generator=gen), torch.randn(total, P, Dp, generator=gen), return_lse=True)
    elif which == "prefill":
        fi = decorate_attn(api)
        qlens, kvlens, P, Hq, Hk, D = [1 + i % 3 for i in range(8)], [6 + 2 * i for i in range(8)], 4, 4, 2, 32
        qo = cumsum(qlens)
        indptr, indices, last, total = page_table(kvlens, P, gen, 2)
        w = fi["BatchPrefillWithPagedKVCacheWrapper"](torch.empty(1 << 12, dtype=torch.uint8), "NHD")
        w.plan(qo, indptr, indices, last, Hq, Hk, D, P, causal=True, q_data_type=torch.float32)
        kv = torch.randn(total, 2, P, Hk, D, generator=gen)
        w.run(torch.randn(int(qo[-1]), Hq, D, generator=gen), kv, return_lse=True)
        kvo = cumsum(kvlens)
        r = fi["BatchPrefillWithRaggedKVCacheWrapper"](torch.empty(1 << 12, dtype=torch.uint8), "HND")
        r.plan(qo, kvo, Hq, Hk, D, causal=True, q_data_type=torch.float32)
        r.run(torch.randn(int(qo[-1]), Hq, D, generator=gen), torch.randn(Hk, int(kvo[-1]), D, generator=gen),
              torch.randn(Hk, int(kvo[-1]), D, generator=gen))
    else:
        fi = decorate_attn(api)
        lens, P, Hq, Hk, D = [5 + 3 * i for i in range(16)], 4, 8, 2, 64
        indptr, indices, last, total = page_table(lens, P, gen, 3)
        w = fi["BatchDecodeWithPagedKVCacheWrapper"](torch.empty(1 << 12, dtype=torch.uint8), "NHD")
        w.plan(indptr, indices, last, Hq, Hk, D, P, q_data_type=torch.float32)
        kv = (torch.randn(total, P, Hk, D, generator=gen), torch.randn(total, P, Hk, D, generator=gen))
        w.run(torch.randn(16, Hq, D, generator=gen), kv, return_lse=True)


flashinfer_main(record)

import torch  # noqa: E402
from flashinfer_peer import load_api_logging  # noqa: E402

TMP = tmpdir()
api = load_api_logging()
logging.getLogger("flashinfer.api_logging").setLevel(logging.CRITICAL)


def recorded(which, ncalls, fmt):
    os.environ["SHRINK_CASE"] = which
    os.makedirs(os.path.join(TMP, which))
    root, dirs = flashinfer_record(__file__, os.path.join(TMP, which), ncalls, fmt)
    return root, dirs



def plant(dump, key, idx):
    """Adds 1 to element idx of output key of dump (its outputs file)."""
    path = [os.path.join(dump, f) for f in os.listdir(dump) if f.startswith("outputs.")][0]
    t = load(path)
    t[key][idx] += 1
    save(t, path)


def tensors(dump):
    """Every tensor of dump's files by key: {key: shape}."""
    out = {}
    for f in sorted(os.listdir(dump)):
        if f.split(".")[0] in ("inputs", "outputs", "inplace"):
            out.update({k: tuple(v.shape) for k, v in load(os.path.join(dump, f)).items()})
    return out


def mate_verdicts(root):
    p = run([REPLAY, "--jsonl", root], check=False)
    return {v["function"]: v for v in map(json.loads, p.stdout.splitlines())}


def fi_results(root):
    with contextlib.redirect_stdout(io.StringIO()):
        res = api.replay_sequence(root, device="cpu")
    return {r.get("metadata", {}).get("function_name"): r for r in res}


def shrink(dump, out):
    return run([REPLAY, "--shrink", dump, "-o", out], check=False)


def listing(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


with case("rmsnorm: 4096 rows to the one bad row"):
    root, dirs = recorded("norm", 4, "pt")
    norm = os.path.join(root, [d for d in dirs if d.endswith("_rmsnorm_call0001")][0])
    plant(norm, "result", (BAD_ROW, 9))
    out = os.path.join(TMP, "norm-out")
    p = shrink(norm, out)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
    check("row 1,731 of 4,096: the only row that mismatches" in p.stdout, "report: %s" % p.stdout)
    check(sorted(os.listdir(out)) == sorted([os.path.basename(norm), "session.jsonl"]),
          "the root holds the dump and session.jsonl: %s" % os.listdir(out))
    cut = os.path.join(out, os.path.basename(norm))
    check(sorted(os.listdir(cut)) == ["inputs.pt", "metadata.jsonl", "outputs.pt"],
          "same layout: %s" % os.listdir(cut))
    check(tensors(cut) == {"arg_0": (1, 64), "arg_1": (64,), "result": (1, 64)},
          "one row kept: %s" % tensors(cut))
    rec = json.loads(open(os.path.join(cut, "metadata.jsonl")).read().splitlines()[-1])
    check(rec["tensor_details"]["arg_0"]["shape"] == [1, 64] and
          rec["tensor_info"]["input_size_bytes"] == 2 * 64 * 4 and rec["function_name"] == "rmsnorm",
          "the record's shapes and sizes: %s" % rec["tensor_info"])
    v = mate_verdicts(out).get("rmsnorm", {})
    check(v.get("verdict") == "mismatch" and v.get("first_bad_index") == "[0, 9]",
          "mate-replay: %s" % v)
    r = fi_results(out).get("rmsnorm", {})
    check(r.get("comparison_match") is False and "error" not in r,
          "FlashInfer's replay_sequence: %s" % {k: r.get(k) for k in ("comparison_match", "error")})

with case("a folder that is not empty is refused"):
    before = listing(out)
    p = shrink(norm, out)
    check(p.returncode == 2 and "not empty" in p.stderr and p.stdout == "",
          "exit %d: %s" % (p.returncode, p.stderr))
    check(listing(out) == before, "the folder changed: %s" % listing(out))
    check(not [f for f in os.listdir(TMP) if ".tmp-" in f], "a temporary folder was left")
    empty = os.path.join(TMP, "empty")
    os.mkdir(empty)
    check(shrink(norm, empty + "/").returncode == 0 and len(os.listdir(empty)) == 2,
          "an empty folder, named with a slash, is written")

with case("a call that passes, an op without a rule: nothing written"):
    soft = os.path.join(root, [d for d in dirs if d.endswith("_softmax_call0001")][0])
    nothing = os.path.join(TMP, "nothing")
    p = shrink(soft, nothing)
    check(p.returncode == 1 and "softmax passes on replay" in p.stderr and "nothing to shrink" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(nothing), "written")
    seg = os.path.join(root, [d for d in dirs if "SegmentGEMMWrapper.run" in d][0])
    plant(seg, "result", (1, 2))
    check(mate_verdicts(root).get("SegmentGEMMWrapper.run", {}).get("verdict") == "mismatch",
          "the planted segment GEMM mismatches")
    p = shrink(seg, nothing)
    check(p.returncode == 1 and "SegmentGEMMWrapper.run cannot be sliced: " in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(nothing) and not [f for f in os.listdir(TMP) if ".tmp-" in f], "written")

with case("activation, softmax, merge_state, RoPE, a top-k filter: the bad row or token"):
    root, dirs = recorded("more", 8, "pt")
    for fn, key, unit in (("silu_and_mul", "result", "row"), ("softmax", "result", "row"),
                          ("merge_state", "result_0", "token"), ("apply_rope_pos_ids", "result_1", "token"),
                          ("top_k_renorm_probs", "result", "row")):
        dump = os.path.join(root, [d for d in dirs if d.endswith("_%s_call0001" % fn)][0])
        t = load(os.path.join(dump, "outputs.pt"))[key]
        plant(dump, key, (11,) + (0,) * (t.dim() - 1))
        out = os.path.join(TMP, fn)
        p = shrink(dump, out)
        check(p.returncode == 0 and "%s 11 of 40: the only %s that mismatches" % (unit, unit) in p.stdout,
              "%s: exit %d: %s %s" % (fn, p.returncode, p.stdout, p.stderr))
        shapes = tensors(os.path.join(out, os.path.basename(dump)))
        check(shapes[key][0] == 1, "%s: one %s kept: %s" % (fn, unit, shapes))
        check(mate_verdicts(out).get(fn, {}).get("verdict") == "mismatch", "%s: mate-replay" % fn)
        check(fi_results(out).get(fn, {}).get("comparison_match") is False,
              "%s: FlashInfer's replay_sequence" % fn)

with case("a sampler and top_k: the row whose draw the filter forbids"):
    probs = load(os.path.join(root, [d for d in dirs if d.endswith("_top_k_sampling_from_probs_call0001")][0],
                              "inputs.pt"))["arg_0"]
    outside = int(probs[11].argmin())        # never among a row's top 5
    for fn, key in (("top_k_sampling_from_probs_call0001", "result"), ("top_k_call0001", "result_1")):
        dump = os.path.join(root, [d for d in dirs if d.endswith("_" + fn)][0])
        path = os.path.join(dump, "outputs.pt")
        t = load(path)
        t[key][(11,) + (0,) * (t[key].dim() - 1)] = outside
        save(t, path)
        out = os.path.join(TMP, fn)
        p = shrink(dump, out)
        check(p.returncode == 0 and "row 11 of 40: the only row that mismatches" in p.stdout,
              "%s: exit %d: %s %s" % (fn, p.returncode, p.stdout, p.stderr))
        shapes = tensors(os.path.join(out, os.path.basename(dump)))
        check(shapes["arg_0"] == (1, 50) and shapes[key][0] == 1, "%s: one row kept: %s" % (fn, shapes))
        check(mate_verdicts(out).get(fn.rsplit("_call", 1)[0], {}).get("verdict") == "mismatch",
              "%s: mate-replay" % fn)
    dump = os.path.join(root, [d for d in dirs if d.endswith("_top_k_sampling_from_probs_call0002")][0])
    path = os.path.join(dump, "outputs.pt")
    t = load(path)
    t["result"][11] = outside
    save(t, path)
    nothing = os.path.join(TMP, "nothing-indices")
    p = shrink(dump, nothing)
    check(p.returncode == 1 and "top_k_sampling_from_probs cannot be sliced by row: its indices is given"
          in p.stderr, "with indices: exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(nothing), "written")

with case("mm: 256x256x256 to one row of A and one column of B"):
    root, dirs = recorded("gemm", 1, "safetensors")
    mm = os.path.join(root, dirs[0])
    plant(mm, "result", (3, BAD_COL))
    out = os.path.join(TMP, "gemm-out")
    p = shrink(mm, out)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
    check("row 3 of 256 of a and column 17 of 256 of b (K = 256 kept)" in p.stdout, "report: %s" % p.stdout)
    cut = os.path.join(out, dirs[0])
    check(sorted(os.listdir(cut)) == ["inputs.safetensors", "metadata.jsonl", "outputs.safetensors"],
          "same format: %s" % os.listdir(cut))
    check(tensors(cut) == {"arg_0": (1, 256), "arg_1": (256, 1), "result": (1, 1)},
          "a 1x256 row of A, a 256x1 column of B: %s" % tensors(cut))
    check(mate_verdicts(out).get("mm", {}).get("verdict") == "mismatch", "mate-replay")
    check(fi_results(out).get("mm", {}).get("comparison_match") is False, "FlashInfer's replay_sequence")

with case("paged decode: 16 requests to the one bad request and its pages"):
    root, dirs = recorded("decode", 3, "pt")
    runs = os.path.join(root, [d for d in dirs if ".run_" in d][0])
    plan_in = load(os.path.join(root, [d for d in dirs if ".plan_" in d][0], "inputs.pt"))
    plant(runs, "result_0", (BAD_REQ, 3, 7))
    out = os.path.join(TMP, "decode-out")
    p = shrink(runs, out)
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
    npages = int(plan_in["arg_1"][BAD_REQ + 1] - plan_in["arg_1"][BAD_REQ])
    ntotal = load(os.path.join(runs, "inputs.pt"))["arg_2__0"].shape[0]
    check("request 5 of 16: the only request that mismatches; %d of %d pages" % (npages, ntotal)
          in p.stdout, "report: %s" % p.stdout)
    check(sorted(os.listdir(out)) == sorted(dirs + ["session.jsonl"]), "the root: %s" % os.listdir(out))
    check(len(open(os.path.join(out, "session.jsonl")).read().splitlines()) == 3, "session.jsonl")
    cut_plan = load(os.path.join(out, [d for d in dirs if ".plan_" in d][0], "inputs.pt"))
    check(cut_plan["arg_1"].tolist() == [0, npages] and cut_plan["arg_2"].tolist() == list(range(npages))
          and cut_plan["arg_3"].tolist() == [int(plan_in["arg_3"][BAD_REQ])],
          "the plan's page table rebuilt: %s" % cut_plan)
    orig_run = load(os.path.join(runs, "inputs.pt"))
    cut_run = load(os.path.join(out, os.path.basename(runs), "inputs.pt"))
    pages = plan_in["arg_2"][int(plan_in["arg_1"][BAD_REQ]):int(plan_in["arg_1"][BAD_REQ + 1])].long()
    check(torch.equal(cut_run["arg_1"], orig_run["arg_1"][BAD_REQ:BAD_REQ + 1]), "q's row")
    check(torch.equal(cut_run["arg_2__0"], orig_run["arg_2__0"][pages]) and
          torch.equal(cut_run["arg_2__1"], orig_run["arg_2__1"][pages]), "exactly its pages, in order")
    check(tensors(os.path.join(out, os.path.basename(runs)))["result_0"] == (1, 8, 64), "one request's output")
    v = mate_verdicts(out)
    check([v.get(f, {}).get("verdict") for f in ("BatchDecodeWithPagedKVCacheWrapper.__init__",
          "BatchDecodeWithPagedKVCacheWrapper.plan", "BatchDecodeWithPagedKVCacheWrapper.run")]
          == ["passed", "passed", "mismatch"], "mate-replay: %s" % {k: x["verdict"] for k, x in v.items()})
    r = fi_results(out)
    check([r.get(f, {}).get("comparison_match") for f in ("BatchDecodeWithPagedKVCacheWrapper.__init__",
          "BatchDecodeWithPagedKVCacheWrapper.plan", "BatchDecodeWithPagedKVCacheWrapper.run")]
          == [True, True, False], "FlashInfer's replay_sequence: %s"
          % {k: (x.get("comparison_match"), x.get("error")) for k, x in r.items()})
    shutil.rmtree(out)

with case("MLA: 8 requests to the bad one, its rows of q_nope and q_pe and its pages"):
    mroot, mdirs = recorded("mla", 3, "pt")
    mrun = os.path.join(mroot, [d for d in mdirs if ".run_" in d][0])
    plan_in = load(os.path.join(mroot, [d for d in mdirs if ".plan_" in d][0], "inputs.pt"))
    qo, kvp = plan_in["arg_1"].tolist(), plan_in["arg_2"].tolist()
    plant(mrun, "result_0", (qo[6], 2, 5))
    out = os.path.join(TMP, "mla-out")
    p = shrink(mrun, out)
    orig = load(os.path.join(mrun, "inputs.pt"))
    check(p.returncode == 0 and "request 6 of 8: the only request that mismatches; %d of %d pages of the cache kept, "
          "renumbered; %d of %d rows of q" % (kvp[7] - kvp[6], orig["arg_3"].shape[0], qo[7] - qo[6], qo[-1])
          in p.stdout, "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    cut = load(os.path.join(out, os.path.basename(mrun), "inputs.pt"))
    pages = plan_in["arg_3"][kvp[6]:kvp[7]].long()
    check(torch.equal(cut["arg_1"], orig["arg_1"][qo[6]:qo[7]]) and torch.equal(cut["arg_2"], orig["arg_2"][qo[6]:qo[7]])
          and torch.equal(cut["arg_3"], orig["arg_3"][pages]) and torch.equal(cut["arg_4"], orig["arg_4"][pages]),
          "its rows of q_nope and q_pe, its pages of ckv_cache and kpe_cache")
    cut_plan = load(os.path.join(out, [d for d in mdirs if ".plan_" in d][0], "inputs.pt"))
    check(cut_plan["arg_1"].tolist() == [0, qo[7] - qo[6]] and cut_plan["arg_2"].tolist() == [0, kvp[7] - kvp[6]]
          and cut_plan["arg_3"].tolist() == list(range(kvp[7] - kvp[6]))
          and cut_plan["arg_4"].tolist() == [int(plan_in["arg_4"][6])], "the plan rebuilt: %s" % cut_plan)
    check(mate_verdicts(out).get("BatchMLAPagedAttentionWrapper.run", {}).get("verdict") == "mismatch", "mate-replay")
    r = fi_results(out)
    check(r.get("BatchMLAPagedAttentionWrapper.run", {}).get("comparison_match") is False,
          "FlashInfer's replay_sequence: %s" % {k: (x.get("comparison_match"), x.get("error")) for k, x in r.items()})

with case("a plan whose page is not the cache's: refused before it indexes anything"):
    bad = os.path.join(TMP, "bad-plan")
    shutil.copytree(root, bad)
    path = os.path.join(bad, [d for d in dirs if ".plan_" in d][0], "inputs.pt")
    t = load(path)
    t["arg_2"][2] = 9999
    save(t, path)
    nothing = os.path.join(TMP, "nothing-paged")
    p = shrink(os.path.join(bad, os.path.basename(runs)), nothing)
    check(p.returncode == 2 and "the plan's page 9999 is not one of the cache's %d" % ntotal in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(nothing), "written")
    # a run whose record names no object (fuzz_find_bug: a NULL self_id compared)
    shutil.rmtree(bad)
    shutil.copytree(root, bad)
    meta = os.path.join(bad, os.path.basename(runs), "metadata.jsonl")
    recs = [json.loads(l) for l in open(meta).read().splitlines()]
    for r in recs:
        r.pop("self_id", None)
    open(meta, "w").write("".join(json.dumps(r) + "\n" for r in recs))
    p = shrink(os.path.join(bad, os.path.basename(runs)), nothing)
    check(p.returncode == 1 and p.stderr == "mate-replay: BatchDecodeWithPagedKVCacheWrapper.run cannot be sliced: "
          "its record names no object (self_id) whose plan it runs\n", "no self_id: exit %d: %s"
          % (p.returncode, p.stderr))
    check(not os.path.exists(nothing), "written")

with case("an error: a position past the cos/sin cache, to its one token"):
    root, dirs = recorded("rope-error", 1, "pt")
    dump = os.path.join(root, dirs[0])
    path = os.path.join(dump, "inputs.pt")
    t = load(path)
    t["arg_0"][11] = 9999
    save(t, path)
    out = os.path.join(TMP, "rope-error-out")
    p = shrink(dump, out)
    check(p.returncode == 0 and "token 11 of 40: the only token that fails" in p.stdout and
          "replays as error: " in p.stdout and "position 9999 of token 0 is outside cos_sin_cache's 64 rows"
          in p.stdout, "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    shapes = tensors(os.path.join(out, dirs[0]))
    check(shapes["arg_0"] == (1,) and shapes["arg_1"] == (1, 64) and shapes["arg_4"] == (64, 32),
          "one token and its position, the whole cache: %s" % shapes)
    check(mate_verdicts(out).get("apply_rope_with_cos_sin_cache", {}).get("verdict") == "error", "mate-replay")

with case("RoPE by indptr and offsets: 8 requests to the bad one, its tokens and offset"):
    root, dirs = recorded("rope-indptr", 2, "pt")
    for fn, fname, key, tok in (("apply_rope", "outputs.pt", "result_1", 20),
                                ("apply_llama31_rope", "outputs.pt", "result_0", 40)):
        dump = os.path.join(root, [d for d in dirs if d.endswith("_%s_call0001" % fn)][0])
        orig = load(os.path.join(dump, "inputs.pt"))
        ip = orig["arg_2"].tolist()
        req = max(b for b in range(8) if ip[b] <= tok)
        t = load(os.path.join(dump, fname))
        t[key][tok, 1, 3] += 1
        save(t, os.path.join(dump, fname))
        out = os.path.join(TMP, fn)
        p = shrink(dump, out)
        want = "request %d of 8 (%d of %d rows of q): the only request that mismatches" % (
            req, ip[req + 1] - ip[req], ip[-1])
        check(p.returncode == 0 and want in p.stdout, "%s: exit %d: %s %s" % (fn, p.returncode, p.stdout, p.stderr))
        cutd = os.path.join(out, os.path.basename(dump))
        cut = load(os.path.join(cutd, "inputs.pt"))
        check(torch.equal(cut["arg_0"], orig["arg_0"][ip[req]:ip[req + 1]]) and
              torch.equal(cut["arg_1"], orig["arg_1"][ip[req]:ip[req + 1]]) and
              cut["arg_2"].tolist() == [0, ip[req + 1] - ip[req]] and cut["arg_2"].dtype == torch.int32 and
              cut["arg_3"].tolist() == [7 * req], "%s: its tokens, its indptr rebuilt, its offset: %s"
              % (fn, {k: v.tolist() for k, v in cut.items() if v.dim() == 1}))
        check(tensors(cutd)[key][0] == ip[req + 1] - ip[req], "%s: its outputs cut: %s" % (fn, tensors(cutd)))
        check(mate_verdicts(out).get(fn, {}).get("verdict") == "mismatch", "%s: mate-replay" % fn)
        check(fi_results(out).get(fn, {}).get("comparison_match") is False, "%s: FlashInfer's replay_sequence: %s"
              % (fn, fi_results(out).get(fn)))
    dump = os.path.join(root, [d for d in dirs if d.endswith("_apply_rope_call0001")][0])
    for lie, why in (([0, 3, 2] + ip[3:], "apply_rope: its indptr decreases at 2"),
                     (ip[:-1] + [ip[-1] + 1], "apply_rope: its indptr (9 values, from 0 to %d) does not fit "
                      "the %d rows of its q" % (ip[-1] + 1, ip[-1]))):
        bad = os.path.join(TMP, "bad-indptr")
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(root, bad)
        path = os.path.join(bad, os.path.basename(dump), "inputs.pt")
        t = load(path)
        t["arg_2"] = torch.tensor(lie, dtype=torch.int32)
        save(t, path)
        nothing = os.path.join(TMP, "nothing-rope")
        p = shrink(os.path.join(bad, os.path.basename(dump)), nothing)
        check(p.returncode == 2 and p.stderr == "mate-replay: %s\n" % why, "a lying indptr: exit %d: %s"
              % (p.returncode, p.stderr))
        check(not os.path.exists(nothing), "written")

with case("bf16 and fp8 GEMMs: a row of A and a column of B (with its bias)"):
    root, dirs = recorded("lowp", 4, "pt")
    for fn, idx, want, shapes in (
            ("mm_bf16", (5, 7), "row 5 of 32 of a and column 7 of 24 of b (K = 16 kept)",
             {"arg_0": (1, 16), "arg_1": (16, 1), "kwarg_bias": (1,), "result": (1, 1)}),
            ("bmm_bf16", (2, 3, 4), "batch 2 of 3 of A and row 3 of 8 of A and column 4 of 12 of B (K = 16 kept)",
             {"arg_0": (1, 1, 16), "arg_1": (1, 16, 1), "result": (1, 1, 1)}),
            ("bmm_fp8", (1, 6, 9), "batch 1 of 2 of A and row 6 of 8 of A and column 9 of 12 of B (K = 16 kept)",
             {"arg_0": (1, 1, 16), "arg_1": (1, 16, 1), "arg_2": (), "arg_3": (), "result": (1, 1, 1)}),
            ("mm_fp8", (4, 10), "row 4 of 8 of a and column 10 of 12 of b (K = 16 kept)",
             {"arg_0": (1, 16), "arg_1": (1, 16), "result": (1, 1)})):
        dump = os.path.join(root, [d for d in dirs if d.endswith("_%s_call0001" % fn)][0])
        plant(dump, "result", idx)
        out = os.path.join(TMP, fn)
        p = shrink(dump, out)
        check(p.returncode == 0 and want in p.stdout, "%s: exit %d: %s %s" % (fn, p.returncode, p.stdout, p.stderr))
        got = tensors(os.path.join(out, os.path.basename(dump)))
        check(got == shapes, "%s: the cut tensors: %s" % (fn, got))
        check(mate_verdicts(out).get(fn, {}).get("verdict") == "mismatch", "%s: mate-replay" % fn)
        check(fi_results(out).get(fn, {}).get("comparison_match") is False, "%s: FlashInfer's replay_sequence" % fn)

with case("single decode and prefill: 8 query heads to the bad one and its KV head"):
    root, dirs = recorded("heads", 3, "pt")
    dec, pre, hnd = (os.path.join(root, d) for d in sorted(dirs))
    plant(dec, "result", (5, 3))
    out = os.path.join(TMP, "decode-heads")
    p = shrink(dec, out)
    check(p.returncode == 0 and "head 5 of 8: the only head that mismatches" in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    orig = load(os.path.join(dec, "inputs.pt"))
    cut = load(os.path.join(out, os.path.basename(dec), "inputs.pt"))
    check(torch.equal(cut["arg_0"], orig["arg_0"][5:6]) and torch.equal(cut["arg_1"], orig["arg_1"][:, 1:2])
          and torch.equal(cut["arg_2"], orig["arg_2"][:, 1:2]), "query head 5 with KV head 1 (GQA 4): %s"
          % tensors(os.path.join(out, os.path.basename(dec))))
    check(mate_verdicts(out).get("single_decode_with_kv_cache", {}).get("verdict") == "mismatch", "mate-replay")
    check(fi_results(out).get("single_decode_with_kv_cache", {}).get("comparison_match") is False,
          "FlashInfer's replay_sequence")
    plant(pre, "result_0", (2, 6, 1))
    out = os.path.join(TMP, "prefill-heads")
    p = shrink(pre, out)
    check(p.returncode == 0 and "head 6 of 8: the only head that mismatches" in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    shapes = tensors(os.path.join(out, os.path.basename(pre)))
    check(shapes == {"arg_0": (6, 1, 64), "arg_1": (10, 1, 64), "arg_2": (10, 1, 64), "result_0": (6, 1, 64),
                     "result_1": (6, 1)}, "the output and its lse by head: %s" % shapes)
    check(mate_verdicts(out).get("single_prefill_with_kv_cache", {}).get("verdict") == "mismatch", "mate-replay")
    check(fi_results(out).get("single_prefill_with_kv_cache", {}).get("comparison_match") is False,
          "FlashInfer's replay_sequence")
    plant(hnd, "result", (5, 3))
    nothing = os.path.join(TMP, "nothing-hnd")
    p = shrink(hnd, nothing)
    check(p.returncode == 1 and "cannot be sliced by head: its kv_layout is 'HND', not 'NHD'" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(nothing), "written")

with case("paged and ragged prefill: 8 requests to the bad one, its rows of q and its keys"):
    root, dirs = recorded("prefill", 6, "pt")
    pdirs = sorted(d for d in dirs if "Paged" in d)
    rdirs = sorted(d for d in dirs if "Ragged" in d)
    prun = os.path.join(root, [d for d in pdirs if ".run_" in d][0])
    plan_in = load(os.path.join(root, [d for d in pdirs if ".plan_" in d][0], "inputs.pt"))
    qo = plan_in["arg_1"].tolist()
    plant(prun, "result_0", (qo[6] - 1, 1, 4))
    out = os.path.join(TMP, "prefill-out")
    p = shrink(prun, out)
    npages = int(plan_in["arg_2"][6] - plan_in["arg_2"][5])
    ntotal = load(os.path.join(prun, "inputs.pt"))["arg_2"].shape[0]
    check(p.returncode == 0 and "request 5 of 8: the only request that mismatches; %d of %d pages of the cache "
          "kept, renumbered; %d of %d rows of q" % (npages, ntotal, qo[6] - qo[5], qo[-1]) in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    cut_plan = load(os.path.join(out, [d for d in pdirs if ".plan_" in d][0], "inputs.pt"))
    check(cut_plan["arg_1"].tolist() == [0, qo[6] - qo[5]] and cut_plan["arg_2"].tolist() == [0, npages]
          and cut_plan["arg_3"].tolist() == list(range(npages))
          and cut_plan["arg_4"].tolist() == [int(plan_in["arg_4"][5])], "the plan rebuilt: %s" % cut_plan)
    orig = load(os.path.join(prun, "inputs.pt"))
    cut = load(os.path.join(out, os.path.basename(prun), "inputs.pt"))
    pages = plan_in["arg_3"][int(plan_in["arg_2"][5]):int(plan_in["arg_2"][6])].long()
    check(torch.equal(cut["arg_1"], orig["arg_1"][qo[5]:qo[6]]) and torch.equal(cut["arg_2"], orig["arg_2"][pages]),
          "its rows of q and exactly its pages")
    v = mate_verdicts(out)
    check(v.get("BatchPrefillWithPagedKVCacheWrapper.run", {}).get("verdict") == "mismatch", "mate-replay: %s" % v)
    r = fi_results(out)
    check([r.get("BatchPrefillWithPagedKVCacheWrapper." + f, {}).get("comparison_match")
           for f in ("__init__", "plan", "run")] == [True, True, False], "FlashInfer's replay_sequence: %s"
          % {k: (x.get("comparison_match"), x.get("error")) for k, x in r.items()})

    rrun = os.path.join(root, [d for d in rdirs if ".run_" in d][0])
    rplan = load(os.path.join(root, [d for d in rdirs if ".plan_" in d][0], "inputs.pt"))
    kvo = rplan["arg_2"].tolist()
    plant(rrun, "result", (qo[3], 2, 0))
    out = os.path.join(TMP, "ragged-out")
    p = shrink(rrun, out)
    check(p.returncode == 0 and "request 3 of 8: the only request that mismatches; %d of %d rows of k and v kept; "
          "%d of %d rows of q" % (kvo[4] - kvo[3], kvo[-1], qo[4] - qo[3], qo[-1]) in p.stdout,
          "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    orig = load(os.path.join(rrun, "inputs.pt"))
    cut = load(os.path.join(out, os.path.basename(rrun), "inputs.pt"))
    check(torch.equal(cut["arg_1"], orig["arg_1"][qo[3]:qo[4]]) and
          torch.equal(cut["arg_2"], orig["arg_2"][:, kvo[3]:kvo[4]]) and
          torch.equal(cut["arg_3"], orig["arg_3"][:, kvo[3]:kvo[4]]), "its rows of q, and of k and v (HND)")
    cut_plan = load(os.path.join(out, [d for d in rdirs if ".plan_" in d][0], "inputs.pt"))
    check(cut_plan["arg_1"].tolist() == [0, qo[4] - qo[3]] and cut_plan["arg_2"].tolist() == [0, kvo[4] - kvo[3]],
          "qo_indptr and kv_indptr rebuilt: %s" % cut_plan)
    check(mate_verdicts(out).get("BatchPrefillWithRaggedKVCacheWrapper.run", {}).get("verdict") == "mismatch",
          "mate-replay")
    r = fi_results(out)
    check(r.get("BatchPrefillWithRaggedKVCacheWrapper.run", {}).get("comparison_match") is False,
          "FlashInfer's replay_sequence: %s" % {k: (x.get("comparison_match"), x.get("error")) for k, x in r.items()})

done()
