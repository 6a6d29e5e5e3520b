"""test_replay_inplace_tuple.py: an argument written in place that is an item of a tuple argument
(append_paged_kv_cache into a (k_cache, v_cache) pair, recorded as arg_4__0 and arg_4__1) is
compared after the call, in mate's old layout (the after-call tensors among the outputs) as in
the in-place file's; a wrong write to either item is a mismatch naming it, not "arg_4__0: not
produced by the replay"."""
import os
import sys

import torch

from mate_test import run_cases, src_path, tmpdir
from replay_dumps import expect_verdicts, write_dump

sys.path.insert(0, src_path("tests", "interop", "peers"))
import flashinfer_attn_ref as attn  # noqa: E402

SIG = ("(append_key, append_value, batch_indices, positions, paged_kv_cache, kv_indices, "
       "kv_indptr, kv_last_page_len, kv_layout='NHD')")


def test_tuple_item_in_place():
    torch.manual_seed(17)
    root = os.path.join(tmpdir(), "dumps")
    os.mkdir(root)
    i32 = torch.int32
    kc, vc = torch.randn(3, 4, 2, 8), torch.randn(3, 4, 2, 8)     # NHD pages of 4 slots, 2 heads
    ak, av = torch.randn(3, 2, 8), torch.randn(3, 2, 8)
    bi, ps = torch.tensor([0, 0, 1], dtype=i32), torch.tensor([4, 5, 0], dtype=i32)
    ind, iptr, last = (torch.tensor([2, 0, 1], dtype=i32), torch.tensor([0, 2, 3], dtype=i32),
                       torch.tensor([2, 1], dtype=i32))
    k2, v2 = kc.clone(), vc.clone()
    attn.append_paged_kv_cache(ak, av, bi, ps, (k2, v2), ind, iptr, last)
    inputs = {"arg_0": ak, "arg_1": av, "arg_2": bi, "arg_3": ps, "arg_4__0": kc, "arg_4__1": vc,
              "arg_4": (None, None), "arg_5": ind, "arg_6": iptr, "arg_7": last}
    want = {}
    for seq, (what, outs, verdict, words) in enumerate((
            ("the pair written as recorded", {"arg_4__0": k2, "arg_4__1": v2}, "passed", ""),
            ("a wrong value in v_cache", {"arg_4__0": k2, "arg_4__1": v2 + (v2 == v2[0, 0, 0, 0]) * 1.0},
             "mismatch", "arg_4__1[0, 0, 0, 0]"))):
        outs = dict(outs, result=None)
        name = write_dump(root, seq + 1, "append_paged_kv_cache", inputs, outs, fmt="torch", signature=SIG)
        want[name] = (what, verdict, words)

    expect_verdicts(root, want)


run_cases(test_tuple_item_in_place)
