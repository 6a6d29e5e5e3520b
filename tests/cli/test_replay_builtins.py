"""replay-builtins.py: mate's built-in handlers replay FlashInfer-style calls of every ops.md operation (arguments by position and keyword, out=, in place, return_lse, the BLAS call), with references from torch."""
import json
import math
import os
import shutil

import torch

from mate_test import build_path, run, check, tmpdir, run_cases
from replay_dumps import write_dump

REPLAY = build_path("src", "replay", "mate-replay")
torch.manual_seed(7)
FMT = "torch"  # .pt keeps strides: transposed operands
work = tmpdir()
root = os.path.join(work, "dumps")
os.mkdir(root)
expect = {}   # dump name -> verdict word
seq = [0]


def dump(fn, inputs, outputs, verdict="Passed", **kw):
    seq[0] += 1
    name = write_dump(root, seq[0], fn, inputs, outputs, fmt=FMT, **kw)
    expect[name] = verdict
    return name


def rms(x, w, eps, gemma=False):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (w.float() + (1 if gemma else 0))
    return y.to(x.dtype)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def test_builtins():
    """Every call written below, replayed at once; the verdicts, the bounds' lines and -j 2."""
    print("tensor files:", FMT)
    # ---- normalisation ---------------------------------------------------------------
    x, w = rnd(4, 64), rnd(64)
    dump("rmsnorm", {"arg_0": x, "arg_1": w}, {"result": rms(x, w, 1e-6)})
    x, w = rnd(3, 128, dtype=torch.bfloat16), rnd(128, dtype=torch.bfloat16)
    dump("rmsnorm", {"arg_0": x, "arg_1": w, "kwarg_eps": 1e-5}, {"result": rms(x, w, 1e-5)})
    x, w = rnd(2, 3, 32, dtype=torch.float16), rnd(32, dtype=torch.float16)
    out = torch.zeros_like(x)
    y = rms(x, w, 1e-6)
    dump("rmsnorm", {"kwarg_input": x, "kwarg_weight": w, "kwarg_out": out, "kwarg_enable_pdl": False},
         {"result": y, "kwarg_out": y})                       # out= written and returned
    x, w = rnd(4, 64), rnd(64)
    dump("gemma_rmsnorm", {"arg_0": x, "arg_1": w, "arg_2": 1e-5}, {"result": rms(x, w, 1e-5, gemma=True)})
    for fn, gemma in (("fused_add_rmsnorm", False), ("gemma_fused_add_rmsnorm", True)):
        x, r, w = rnd(4, 64, dtype=torch.float16), rnd(4, 64, dtype=torch.float16), rnd(64, dtype=torch.float16)
        r2 = (r.float() + x.float()).to(torch.float16)
        dump(fn, {"arg_0": x, "arg_1": r, "arg_2": w}, {"result": None, "arg_0": rms(r2, w, 1e-6, gemma), "arg_1": r2})

    # ---- activations and softmax --------------------------------------------------------
    acts = {
        "silu_and_mul": lambda a: a / (1 + torch.exp(-a)),
        "gelu_and_mul": lambda a: 0.5 * a * (1 + torch.erf(a / math.sqrt(2))),
        "gelu_tanh_and_mul": lambda a: 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))),
    }
    for (fn, act), dt in zip(acts.items(), (torch.float16, torch.float32, torch.bfloat16)):
        x = rnd(2, 3, 256, dtype=dt)
        xf = x.float()
        dump(fn, {"arg_0": x}, {"result": (act(xf[..., :128]) * xf[..., 128:]).to(dt)})
    x = rnd(4, 100)
    dump("softmax", {"arg_0": x, "kwarg_temperature": 0.7}, {"result": torch.softmax(x / 0.7, -1)})
    t = torch.tensor([0.5, 1.0, 2.0, 4.0])
    dump("softmax", {"arg_0": x, "arg_1": t}, {"result": torch.softmax(x / t[:, None], -1)})
    xh = rnd(3, 50, dtype=torch.float16)
    dump("Tensor.softmax", {"arg_0": xh, "arg_1": -1}, {"result": torch.softmax(xh.float(), -1).half()})

    # ---- matrix products ------------------------------------------------------------------
    a, b = rnd(33, 17), rnd(9, 17).t()                        # b transposed (kept so in .pt)
    dump("mm", {"arg_0": a, "arg_1": b}, {"result": a @ b})
    a, b = rnd(2, 8, 16, dtype=torch.float16), rnd(2, 16, 4, dtype=torch.float16)
    dump("bmm", {"arg_0": a, "arg_1": b, "kwarg_out_dtype": torch.float32},
         {"result": torch.bmm(a.float(), b.float())})
    a, b = rnd(5, 7), rnd(7, 3)
    dump("Tensor.mm", {"arg_0": a, "arg_1": b}, {"result": a @ b})

    # ---- attention ------------------------------------------------------------------------

    def attend(q, k, v, s, cap=None, keep=None):
        """q (Hq, D); k, v (L, Hk, D): softmax over L, GQA."""
        hq, hk = q.shape[0], k.shape[1]
        outs, lses = [], []
        for h in range(hq):
            kv = h // (hq // hk)
            z = (k[:, kv].float() @ q[h].float()) * s
            if cap:
                z = cap * torch.tanh(z / cap)
            if keep is not None:
                z = z.masked_fill(~keep, float("-inf"))
            outs.append(torch.softmax(z, -1) @ v[:, kv].float())
            lses.append(torch.logsumexp(z, -1) * math.log2(math.e))
        return torch.stack(outs), torch.stack(lses)

    q, k, v = rnd(8, 64, dtype=torch.float16), rnd(37, 2, 64, dtype=torch.float16), rnd(37, 2, 64, dtype=torch.float16)
    o, lse = attend(q, k, v, 1 / 8, cap=30.0)
    dump("single_decode_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v, "kwarg_logits_soft_cap": 30.0,
                                          "kwarg_return_lse": True, "kwarg_use_tensor_cores": True},
         {"result_0": o.half(), "result_1": lse})
    q, k, v = rnd(4, 32), rnd(4, 20, 32), rnd(4, 20, 32)     # HND, one kv head per query head
    o, _ = attend(q, k.transpose(0, 1), v.transpose(0, 1), 0.3)
    dump("single_decode_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v, "arg_3": "HND", "kwarg_sm_scale": 0.3},
         {"result": o})
    dump("single_decode_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v, "arg_3": "HND",
                                          "kwarg_pos_encoding_mode": "ROPE_LLAMA_INTERLEAVED"},
         {"result": o}, verdict="Unsupported")

    def prefill(q, k, v, causal=False, keep=None):
        lq, lk = q.shape[0], k.shape[0]
        rows_o, rows_l = [], []
        for i in range(lq):
            m = keep[i] if keep is not None else (torch.arange(lk) <= i + (lk - lq) if causal else None)
            o_i, l_i = attend(q[i], k, v, 1 / math.sqrt(q.shape[-1]), keep=m)
            rows_o.append(o_i)
            rows_l.append(l_i)
        return torch.stack(rows_o), torch.stack(rows_l)

    q, k, v = rnd(5, 4, 32), rnd(9, 2, 32), rnd(9, 2, 32)
    o, lse = prefill(q, k, v, causal=True)
    dump("single_prefill_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v, "kwarg_causal": True,
                                           "kwarg_return_lse": True, "kwarg_backend": "fa2"},
         {"result_0": o, "result_1": lse})
    keep = torch.rand(5, 9) > 0.3
    keep[:, 0] = True
    o, _ = prefill(q, k, v, keep=keep)
    dump("single_prefill_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v, "kwarg_custom_mask": keep,
                                           "kwarg_causal": True},
         {"result": o})

    # ---- a recorded BLAS call: C = alpha A B^T + beta C, row major ------------------------------
    A, B, C = rnd(6, 4), rnd(5, 4), rnd(6, 5)
    dump("cblas_sgemm", {"arg_0": 101, "arg_1": 111, "arg_2": 112, "arg_3": 6, "arg_4": 5, "arg_5": 4,
                         "arg_6": 1.5, "arg_7": A, "arg_8": 4, "arg_9": B, "arg_10": 4, "arg_11": 0.5,
                         "arg_12": C, "arg_13": 5},
         {"result": None, "arg_12": 1.5 * A @ B.t() + 0.5 * C})

    # ---- a wrong recording is a mismatch ----------------------------------------------------------
    x, w = rnd(4, 64), rnd(64)
    bad = dump("rmsnorm", {"arg_0": x, "arg_1": w}, {"result": rms(x, w, 1e-6) * 1.1}, verdict="Mismatch")

    # ---- a long float32 reduction: another summation order is as right --------------------------
    # recorded as the exact product rounded once (what a different order of the 4096-term sums,
    # or float64 accumulation, gives): off by more than float32's rtol 1e-5 in most elements,
    # well within the bound 2 K u (|A| |B|)ij of two float32 sums; one element moved by 10 is
    # still caught
    a, b = rnd(8, 4096), rnd(4096, 8)
    exact = (a.double() @ b.double()).float()
    long_mm = dump("Tensor.mm", {"arg_0": a, "arg_1": b}, {"result": exact})
    moved = exact.clone()
    moved[3, 5] += 10
    long_mm_bad = dump("Tensor.mm", {"arg_0": a, "arg_1": b}, {"result": moved}, verdict="Mismatch")

    # the other reductions (issue 31): an attention over 8192 keys, merge_states of 16 states and
    # a 16384-wide norm, recorded as float64 results rounded once, are compared within the bound of
    # their K-term sums (2 K u M; a norm's 2 K u |y|), which the line names; one attention output
    # moved by 0.5 is still caught
    qa, ka, va = rnd(4, 64), rnd(8192, 1, 64), rnd(8192, 1, 64)
    z = (ka[:, 0].double() @ qa.double().t()) / 8
    o = (torch.softmax(z, 0).t() @ va[:, 0].double()).float()
    lse = (torch.logsumexp(z, 0) * math.log2(math.e)).float()
    long_attn = dump("single_decode_with_kv_cache", {"arg_0": qa, "arg_1": ka, "arg_2": va, "kwarg_return_lse": True},
                     {"result_0": o, "result_1": lse})
    o_moved = o.clone()
    o_moved[1, 7] += 0.5
    long_attn_bad = dump("single_decode_with_kv_cache", {"arg_0": qa, "arg_1": ka, "arg_2": va,
                                                         "kwarg_return_lse": True},
                         {"result_0": o_moved, "result_1": lse}, verdict="Mismatch")
    vs, ss = rnd(64, 16, 4, 64), rnd(64, 16, 4) * 4
    wgt = torch.softmax(ss.double() * math.log(2), 1)
    long_merge = dump("merge_states", {"arg_0": vs, "arg_1": ss},
                      {"result_0": (wgt[..., None] * vs.double()).sum(1).float(),
                       "result_1": (torch.logsumexp(ss.double() * math.log(2), 1) / math.log(2)).float()})
    xn, wn = rnd(4, 16384) * 3, rnd(16384)
    long_norm = dump("rmsnorm", {"arg_0": xn, "arg_1": wn},
                     {"result": (xn.double() * torch.rsqrt(xn.double().pow(2).mean(-1, keepdim=True) + 1e-6) *
                                 wn.double()).float()})

    # ---- a record that contradicts the replay is a mismatch -----------------------------------------
    # outputs lost: completed, with no output keys and no outputs file
    lost = dump("rmsnorm", {"arg_0": x, "arg_1": w}, {}, verdict="Mismatch")
    # a recorded None where the call returns a tuple (o, lse)
    none_for_tuple = dump("single_prefill_with_kv_cache", {"arg_0": q, "arg_1": k, "arg_2": v,
                                                           "kwarg_return_lse": True}, {"result": None},
                          verdict="Mismatch")
    # in place, recorded as FlashInfer's decorator records it (the None return alone): it ran,
    # and nothing it wrote can be checked, so it is not a pass
    x, r, w = rnd(4, 64, dtype=torch.float16), rnd(4, 64, dtype=torch.float16), rnd(64, dtype=torch.float16)
    unchecked = dump("fused_add_rmsnorm", {"arg_0": x, "arg_1": r, "arg_2": w}, {"result": None},
                     verdict="Ran, unchecked")

    p = run([REPLAY, "--device", "cpu", root], check=False)
    lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
    check(p.returncode == 1, "exit 1 (a planted mismatch and an unsupported mode): %d" % p.returncode)
    check(len(lines) == len(expect), "one line per dump: %d of %d" % (len(lines), len(expect)))
    for line in lines:
        name = line.split("(", 1)[1].split(")", 1)[0]
        want = expect.get(name, "?")
        check(line.split("): ", 1)[1].startswith(want), "%s: want %s, got %s" % (name, want, line))
    print(p.stdout)
    npass = sum(1 for v in expect.values() if v == "Passed")
    check("Summary: %d passed, 6 failed (5 mismatches, 1 unsupported), 1 ran unchecked" % npass in p.stdout,
          "summary")
    line = [l for l in lines if long_mm in l]
    check(line and "within the reduction bound 2 K u (|A| |B|)ij (K 4096)" in line[0], "long f32 sum: %r" % line)
    p1 = run([REPLAY, "--jsonl", os.path.join(root, long_mm)], check=False)
    obj = json.loads(p1.stdout) if p1.stdout else {}
    check(obj.get("verdict") == "passed" and obj.get("reduction_k") == 4096 and 0 < obj.get("bound_ratio", 0) < 1,
          "long f32 sum in --jsonl: %r" % obj)
    line = [l for l in lines if long_mm_bad in l]
    check(line and "Mismatch: result[3, 5]: " in line[0] and " 1 of 64 elements beyond rtol 1e-05, atol 1e-06 plus "
          "the reduction bound" in line[0], "one element moved: %r" % line)
    for name, form, kk in ((long_attn, "2 K u M", 8192), (long_merge, "2 K u M", 16), (long_norm, "2 K u |y|", 16384)):
        line = [l for l in lines if name in l]
        check(line and "Passed" in line[0] and "within the reduction bound %s (K %d)" % (form, kk) in line[0],
              "long f32 reduction: %r" % line)
    line = [l for l in lines if long_attn_bad in l]
    check(line and "Mismatch: result_0[1, 7]: " in line[0] and " 1 of 256 elements beyond rtol 1e-05, atol 1e-06 "
          "plus the reduction bound 2 K u M (K 8192)" in line[0], "an attention output moved: %r" % line)
    line = [l for l in lines if unchecked in l]
    check(line and line[0].endswith("Ran, unchecked: only its None return was recorded to compare; its in-place "
                                    "writes, if any, were not recorded"), "in place, unrecorded: %r" % line)
    # alone: not a failure (exit 0), not a pass
    p1 = run([REPLAY, os.path.join(root, unchecked)], check=False)
    check(p1.returncode == 0 and "Summary: 0 passed, 0 failed, 1 ran unchecked" in p1.stdout,
          "unchecked alone: exit %d %r" % (p1.returncode, p1.stdout))
    p1 = run([REPLAY, "--jsonl", os.path.join(root, unchecked)], check=False)
    obj = json.loads(p1.stdout) if p1.stdout else {}
    check(p1.returncode == 0 and obj.get("verdict") == "unchecked" and obj.get("compared") == 1
          and "Summary: 0 passed, 0 failed, 1 ran unchecked" in p1.stderr, "--jsonl: %r %r" % (obj, p1.stderr))
    mism = [l for l in lines if bad in l]
    check(mism and "Mismatch: result[0, 0]" in mism[0], "the mismatch names the element: %r" % mism)
    mism = [l for l in lines if lost in l]
    check(mism and mism[0].endswith("Mismatch: the record has no outputs but the replay returned result "
                                    "(a tensor): the record lost its outputs"), "outputs lost: %r" % mism)
    mism = [l for l in lines if none_for_tuple in l]
    check(mism and mism[0].endswith("Mismatch: result: the record says the call returned None, the replay "
                                    "returned result_0, result_1 (a tuple of 2)"), "None for a tuple: %r" % mism)

    # -j 2 gives the same lines
    p2 = run([REPLAY, "-j", "2", root], check=False)
    check(p2.stdout == p.stdout, "-j 2 prints as -j 1")
    shutil.rmtree(work)


run_cases(test_builtins)
