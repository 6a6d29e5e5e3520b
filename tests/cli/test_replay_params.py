"""test_replay_params.py: every recorded parameter of the norm, Llama 3.1 RoPE and KV append
handlers changes the verdict, in a test that needs no PyPI peer (Debian's torch will do).
Each call is written twice with FlashInfer's signature: once with outputs computed as the
parameter says (it must pass) and once with outputs computed with the parameter's default
(it must be a mismatch), on data where the two differ: a handler that drops eps, Llama 3.1's
high_freq_factor, low_freq_factor or old_context_len, or an HND cache's layout (with as many
heads as slots in a page, so the shapes cannot tell the layouts apart) fails one of them."""
import os
import sys

import torch

from mate_test import run_cases, src_path, tmpdir
from replay_dumps import expect_verdicts, write_dump

sys.path.insert(0, src_path("tests", "interop", "peers"))
import flashinfer_attn_ref as attn  # noqa: E402
import flashinfer_ops21 as ops  # noqa: E402
from flashinfer_peer import _rms  # noqa: E402

SIG_RMS = "(input, weight, eps=1e-06, out=None, enable_pdl=None)"
SIG_ADD = "(input, residual, weight, eps=1e-06, enable_pdl=None)"
SIG_L31 = ("(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=8, "
           "rope_theta=500000.0, low_freq_factor=1, high_freq_factor=4, old_context_len=8192)")
SIG_L31_POS = ("(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=8, "
               "rope_theta=500000.0, low_freq_factor=1, high_freq_factor=4, old_context_len=8192)")
SIG_APPEND = ("(append_key, append_value, batch_indices, positions, paged_kv_cache, kv_indices, "
              "kv_indptr, kv_last_page_len, kv_layout='NHD')")
torch.manual_seed(13)
root = os.path.join(tmpdir(), "dumps")
os.mkdir(root)
want = {}
seq = [0]


def pair(what, fn, sig, inputs, right, default):
    """fn(inputs) written with outputs right (passed) and with default's (a mismatch)."""
    for outputs, verdict in ((right, "passed"), (default, "mismatch")):
        seq[0] += 1
        name = write_dump(root, seq[0], fn, inputs, outputs, fmt="torch", signature=sig)
        want[name] = ("%s (%s)" % (what, verdict), verdict, "")


def test_params_change_verdicts():
    """Each parameter's pair of calls, replayed at once."""
    # eps: small inputs, where eps is most of the mean square
    x, w = torch.randn(4, 64) * 1e-2, torch.randn(64)
    for fn, gemma in (("rmsnorm", False), ("gemma_rmsnorm", True)):
        pair(fn + " eps=0.1", fn, SIG_RMS, {"arg_0": x, "arg_1": w, "kwarg_eps": 0.1},
             {"result": _rms(x, w, 0.1, gemma)}, {"result": _rms(x, w, 1e-6, gemma)})
    r = torch.randn(4, 64) * 1e-2
    for fn, gemma in (("fused_add_rmsnorm", False), ("gemma_fused_add_rmsnorm", True)):
        # written in place: input (the normed sum) and residual (the sum), as mate's old layout
        # keeps them among the outputs
        pair(fn + " eps=0.1", fn, SIG_ADD, {"arg_0": x, "arg_1": r, "arg_2": w, "arg_3": 0.1},
             {"result": None, "arg_0": _rms(x + r, w, 0.1, gemma), "arg_1": x + r},
             {"result": None, "arg_0": _rms(x + r, w, 1e-6, gemma), "arg_1": x + r})

    # Llama 3.1 RoPE: each of its factors, on positions past old_context_len
    q, k = torch.randn(5, 2, 64), torch.randn(5, 1, 64)
    pos = torch.tensor([3, 700, 1500, 3000, 6000], dtype=torch.int32)
    for factor, val in (("low_freq_factor", 0.5), ("high_freq_factor", 2.0), ("old_context_len", 1024)):
        kw = {"low_freq_factor": 1, "high_freq_factor": 4, "old_context_len": 8192}
        kw[factor] = val
        qr, kr = ops.apply_llama31_rope_pos_ids(q, k, pos, **kw)
        qd, kd = ops.apply_llama31_rope_pos_ids(q, k, pos)
        pair("apply_llama31_rope_pos_ids %s=%s" % (factor, val), "apply_llama31_rope_pos_ids", SIG_L31_POS,
             {"arg_0": q, "arg_1": k, "arg_2": pos, "kwarg_" + factor: val},
             {"result_0": qr, "result_1": kr}, {"result_0": qd, "result_1": kd})
    # in place, with indptr and offsets: the written q and k are compared
    indptr, offsets = torch.tensor([0, 2, 5], dtype=torch.int32), torch.tensor([900, 2500], dtype=torch.int32)
    qr, kr = ops.apply_llama31_rope(q, k, indptr, offsets, old_context_len=2048, high_freq_factor=2.0)
    qd, kd = ops.apply_llama31_rope(q, k, indptr, offsets)
    pair("apply_llama31_rope_inplace old_context_len=2048", "apply_llama31_rope_inplace", SIG_L31,
         {"arg_0": q, "arg_1": k, "arg_2": indptr, "arg_3": offsets, "kwarg_old_context_len": 2048,
          "kwarg_high_freq_factor": 2.0},
         {"result": None, "arg_0": qr, "arg_1": kr}, {"result": None, "arg_0": qd, "arg_1": kd})

    # append_paged_kv_cache, HND, 4 heads in pages of 4 slots
    H, P, D = 4, 4, 8
    cache = torch.randn(3, 2, H, P, D)               # HND: (pages, 2, heads, slots, dim)
    ak, av = torch.randn(5, H, D), torch.randn(5, H, D)
    bi, ps = torch.tensor([0, 0, 0, 1, 1], dtype=torch.int32), torch.tensor([0, 1, 2, 0, 1], dtype=torch.int32)
    ind, iptr, last = (torch.tensor([2, 0, 1], dtype=torch.int32), torch.tensor([0, 1, 3], dtype=torch.int32),
                       torch.tensor([3, 2], dtype=torch.int32))
    hnd, nhd = cache.clone(), cache.clone()
    attn.append_paged_kv_cache(ak, av, bi, ps, hnd, ind, iptr, last, "HND")
    attn.append_paged_kv_cache(ak, av, bi, ps, nhd, ind, iptr, last, "NHD")   # the same storage read as NHD
    pair("append_paged_kv_cache HND with heads == page size", "append_paged_kv_cache", SIG_APPEND,
         {"arg_0": ak, "arg_1": av, "arg_2": bi, "arg_3": ps, "arg_4": cache, "arg_5": ind, "arg_6": iptr,
          "arg_7": last, "arg_8": "HND"},
         {"result": None, "arg_4": hnd}, {"result": None, "arg_4": nhd})

    expect_verdicts(root, want)


run_cases(test_params_change_verdicts)
