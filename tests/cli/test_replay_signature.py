"""replay-signature.py: mate-replay binds a call through its recorded function_signature (str(inspect.signature(f)), annotations and all): MATE's `Tensor.softmax` naming of FlashInfer's softmax(logits, temperature) replays as that library function, never as torch's x.softmax(dim); torch's own methods still replay; a signature no handler implements is Unsupported with the reason, never judged."""
import functools
import inspect
import os
import shutil
from typing import Optional, Union

import torch

from mate_test import build_path, run, check, run_cases, tmpdir
from replay_dumps import write_dump

REPLAY = build_path("src", "replay", "mate-replay")
FMT = "torch"
torch.manual_seed(11)
work = tmpdir()
seq = [0]


# The peers' functions, for their signatures as the decorators record them.
def softmax(logits: torch.Tensor, temperature: Optional[Union[torch.Tensor, float]] = None,
            enable_pdl: Optional[bool] = None) -> torch.Tensor:
    """FlashInfer's flashinfer.sampling.softmax."""


def softmax_v2(logits: torch.Tensor, temperature: Optional[Union[torch.Tensor, float]] = None,
               enable_pdl: Optional[bool] = None, *, renorm: Optional[bool] = None) -> torch.Tensor:
    """A later FlashInfer softmax with a parameter mate's handler lacks."""


def user_softmax(x, dim, scale=2.0):
    """A user's own function, named softmax by MATE's decorator."""


def gemm(a, b, out_dtype=torch.float32):
    """MATE's reference gemm (spec fixtures): its default out_dtype is float32."""


def rmsnorm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
            out: Optional[torch.Tensor] = None, enable_pdl: Optional[bool] = None) -> torch.Tensor:
    """FlashInfer's flashinfer.norm.rmsnorm."""


def sig(f):
    return str(inspect.signature(f))


FI_SOFTMAX = sig(softmax)
print("FlashInfer's softmax as recorded:", FI_SOFTMAX)


def case(root, fn, inputs, outputs, signature):
    seq[0] += 1
    return write_dump(root, seq[0], fn, inputs, outputs, fmt=FMT, signature=signature)


def replay(path):
    p = run([REPLAY, "--device", "cpu", path], check=False)
    line = [l for l in p.stdout.splitlines() if l.startswith("[")]
    return p.returncode, line[0] if line else p.stdout + p.stderr


def expect(path, word, rc, what, contains=()):
    got_rc, line = replay(path)
    check(got_rc == rc and ("): " + word) in line and all(c in line for c in contains),
          "%s: want %s (exit %d), got exit %d: %s" % (what, word, rc, got_rc, line))


root = os.path.join(work, "d")
os.mkdir(root)
# the calls' tensors, drawn in one order whatever cases run
x = torch.randn(4, 100)
xh = torch.randn(3, 50).half()
a, b = torch.randn(5, 7), torch.randn(7, 3)
a3, b3 = torch.randn(2, 4, 6), torch.randn(2, 6, 5)
ah, bh = torch.randn(6, 8).half(), torch.randn(8, 4).half()
xr, w = torch.randn(3, 16), torch.randn(16)


# Each case writes its dumps into root once (cached): the whole root's case runs them first.
@functools.cache
def test_flashinfer_softmax():
    """MATE's decorator names softmax(x, 0.7) "Tensor.softmax" (x has a .softmax
    method): FlashInfer's function, temperature positional and by keyword (torch's
    x.softmax(dim) would compute softmax(x): a false mismatch)"""
    d = case(root, "Tensor.softmax", {"arg_0": x, "arg_1": 0.7}, {"result": torch.softmax(x / 0.7, -1)}, FI_SOFTMAX)
    expect(os.path.join(root, d), "Passed", 0, "Tensor.softmax with FlashInfer's signature, temperature positional")
    d = case(root, "Tensor.softmax", {"arg_0": x, "kwarg_temperature": 0.5, "kwarg_enable_pdl": False},
             {"result": torch.softmax(x / 0.5, -1)}, FI_SOFTMAX)
    expect(os.path.join(root, d), "Passed", 0, "Tensor.softmax with FlashInfer's signature, temperature by keyword")


@functools.cache
def test_torch_methods():
    """torch's own methods still replay: Tensor.softmax(self, dim) and Tensor.mm/bmm"""
    d = case(root, "Tensor.softmax", {"arg_0": xh, "arg_1": -1}, {"result": torch.softmax(xh.float(), -1).half()},
             "(self, dim, dtype=None)")
    expect(os.path.join(root, d), "Passed", 0, "Tensor.softmax with torch's method signature")
    d = case(root, "Tensor.mm", {"arg_0": a, "arg_1": b}, {"result": a @ b}, "(self, mat2)")
    expect(os.path.join(root, d), "Passed", 0, "Tensor.mm with torch's method signature")
    d = case(root, "Tensor.bmm", {"arg_0": a3, "kwarg_mat2": b3}, {"result": torch.bmm(a3, b3)},
             "(input, mat2, *, out=None)")
    expect(os.path.join(root, d), "Passed", 0, "Tensor.bmm with torch.bmm's signature, mat2 by keyword")


@functools.cache
def test_unsupported_signatures():
    """a signature no handler implements: Unsupported with the reason, never a verdict
    (the outputs are what torch's x.softmax(dim) gives, so a wrong binding would pass)"""
    d = case(root, "Tensor.softmax", {"arg_0": x, "arg_1": -1}, {"result": torch.softmax(x, -1)}, sig(user_softmax))
    expect(os.path.join(root, d), "Unsupported", 1, "Tensor.softmax(x, dim, scale=2.0)",
           ("no replay handler implements Tensor.softmax(x, dim, scale=2.0)", "no parameter 'input'",
            "softmax(logits, temperature=None, enable_pdl=None): no parameter 'logits'"))
    d = case(root, "Tensor.mm", {"arg_0": a, "arg_1": b}, {"result": a @ b}, "(a, b, transpose_b=True)")
    expect(os.path.join(root, d), "Unsupported", 1, "Tensor.mm with a signature of a parameter mate lacks",
           ("no parameter 'transpose_b'",))
    # a parameter the handler lacks is accepted only while it is None
    d = case(root, "softmax", {"arg_0": x, "kwarg_renorm": True}, {"result": torch.softmax(x, -1)}, sig(softmax_v2))
    expect(os.path.join(root, d), "Unsupported", 1, "softmax(renorm=True)",
           ("the handler takes no argument 'renorm' (True)",))
    d = case(root, "softmax", {"arg_0": x, "arg_1": 2.0}, {"result": torch.softmax(x / 2, -1)}, sig(softmax_v2))
    expect(os.path.join(root, d), "Passed", 0, "softmax(renorm left None)")
    d = case(root, "softmax", {"arg_0": x}, {"result": torch.softmax(x, -1)}, "(logits, temperature=None, [")
    expect(os.path.join(root, d), "Unsupported", 1, "an unreadable signature", ("cannot read the recorded signature",))


@functools.cache
def test_recorded_defaults():
    """the recorded defaults are the call's: MATE's gemm(a, b, out_dtype=torch.float32)
    recorded as mm returns float32 for f16 operands (mm's own default: a's dtype)"""
    d = case(root, "mm", {"arg_0": ah, "arg_1": bh}, {"result": ah.float() @ bh.float()}, sig(gemm))
    expect(os.path.join(root, d), "Passed", 0, "mm with the recorded default out_dtype=torch.float32")
    # FlashInfer's rmsnorm with eps positional and out by keyword
    y = (xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-5) * w)
    d = case(root, "rmsnorm", {"arg_0": xr, "arg_1": w, "arg_2": 1e-5}, {"result": y}, sig(rmsnorm))
    expect(os.path.join(root, d), "Passed", 0, "rmsnorm bound through FlashInfer's signature")
    # arguments that do not bind to their own signature: an error, said so
    d = case(root, "rmsnorm", {"arg_0": xr, "arg_1": w, "arg_2": 1e-5, "kwarg_eps": 1e-5}, {"result": y}, sig(rmsnorm))
    expect(os.path.join(root, d), "Error", 1, "eps given twice", ("multiple values for argument 'eps'",))


def test_whole_root():
    """the whole root: one line per dump, the summary counts the unsupported calls apart"""
    for f in (test_flashinfer_softmax, test_torch_methods, test_unsupported_signatures, test_recorded_defaults):
        f()
    p = run([REPLAY, "--device", "cpu", root], check=False)
    print(p.stdout)
    check(p.returncode == 1, "the root: exit 1 (unsupported calls): %d" % p.returncode)
    check("Summary: 8 passed, 5 failed (1 error, 4 unsupported)" in p.stdout, "summary: %s" % p.stdout[-200:])
    shutil.rmtree(work)


run_cases(test_flashinfer_softmax, test_torch_methods, test_unsupported_signatures, test_recorded_defaults,
          test_whole_root)
