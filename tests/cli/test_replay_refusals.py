"""test_replay_refusals.py: calls FlashInfer refuses replay as the same failure. mm_bf16 and
bmm_bf16 check what FlashInfer checks (_check_mm_bf16_problem_size): bfloat16 operands and
bias, an out= of the result's shape and out_dtype. A recorded failure of such a call is a
reproduced failure naming the reason (it "now ran" before), a completed record of one is an
error (FlashInfer could not have made it), and the calls it accepts still pass."""
import os

import torch

from mate_test import run_cases, tmpdir
from replay_dumps import expect_verdicts, write_dump

SIG_MM = "(a, b, bias=None, pdl=False, out=None, out_dtype=torch.bfloat16, backend='cudnn')"
SIG_BMM = "(A, B, out=None, out_dtype=torch.bfloat16, backend='cudnn')"
torch.manual_seed(11)
root = os.path.join(tmpdir(), "dumps")
os.mkdir(root)
bf, h = torch.bfloat16, torch.float16
a, w = torch.randn(6, 32).to(bf), torch.randn(32, 40).to(bf)
want = {}   # dump -> (verdict, words in the message)
seq = [0]


def dump(fn, inputs, outputs, verdict, words="", error=None):
    seq[0] += 1
    sig = SIG_BMM if fn == "bmm_bf16" else SIG_MM
    if error is None:
        name = write_dump(root, seq[0], fn, inputs, outputs, fmt="torch", signature=sig)
    else:
        name = write_dump(root, seq[0], fn, inputs, None, status="failed", fmt="torch", signature=sig,
                          extra={"error": "ValueError: " + error})
    want[name] = (name, verdict, words)


def test_refused_calls():
    ref = (a.double() @ w.double()).to(bf)
    dump("mm_bf16", {"arg_0": a, "arg_1": w}, {"result": ref}, "passed")
    msg = "First tensor has unsupported dtype torch.float16. Only bfloat16 is supported."
    dump("mm_bf16", {"arg_0": a.to(h), "arg_1": w}, None, "reproduced_failure",
         "First tensor has unsupported dtype float16. Only bfloat16 is supported.", error=msg)
    dump("mm_bf16", {"arg_0": a, "arg_1": w.to(h)}, None, "reproduced_failure",
         "Second tensor has unsupported dtype float16", error="Second tensor ...")
    dump("mm_bf16", {"arg_0": a, "arg_1": w, "kwarg_bias": torch.randn(40)}, None, "reproduced_failure",
         "Bias tensor has unsupported dtype float32", error="Bias tensor ...")
    dump("mm_bf16", {"arg_0": a, "arg_1": w, "kwarg_out": torch.empty(6, 41, dtype=bf)}, None,
         "reproduced_failure", "Output shape mismatch. Expected [6, 40], got [6, 41].", error="Output shape ...")
    dump("mm_bf16", {"arg_0": a, "arg_1": w, "kwarg_out": torch.empty(6, 40)}, None,
         "reproduced_failure", "Output dtype mismatch. Expected bfloat16, got float32.", error="Output dtype ...")
    dump("bmm_bf16", {"arg_0": a.reshape(2, 3, 32).to(h), "arg_1": w.expand(2, 32, 40).contiguous()}, None,
         "reproduced_failure", "First tensor has unsupported dtype float16", error="First tensor ...")
    # a completed record of a call FlashInfer refuses was not made by FlashInfer: an error, no pass
    dump("mm_bf16", {"arg_0": a.to(h), "arg_1": w.to(h)}, {"result": (a.double() @ w.double()).to(bf)}, "error",
         "First tensor has unsupported dtype float16")
    # out= in the asked dtype is accepted
    out = torch.empty(6, 40, dtype=h)
    dump("mm_bf16", {"arg_0": a, "arg_1": w, "kwarg_out": out, "kwarg_out_dtype": h},
         {"result": (a.double() @ w.double()).to(h)}, "passed")

    expect_verdicts(root, want)


run_cases(test_refused_calls)
