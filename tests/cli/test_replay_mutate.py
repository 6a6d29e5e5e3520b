"""replay-mutate.py: the MATE reference dumps (as safetensors copies) replay through the reference handlers; mutated outputs are mismatches that name the place; each tolerance rule."""
import functools
import json
import math
import os
import shutil
import sys

import torch

from mate_test import build_path, src_path, run, check, tmpdir, run_cases
from replay_dumps import write_safetensors

FIXTURE = src_path("tests", "fixtures", "mate-reference", "mate_dumps")
PLUGIN = build_path("tests", ".libs", "plugin-reference.so")
RP = ([build_path("src", "replay", "mate-replay"), "--plugin", PLUGIN] if os.path.exists(PLUGIN)
      else [build_path("tests", "mate-replay-ref")])
NAMES = sorted(d for d in os.listdir(FIXTURE) if d != "session.jsonl")
GEMM32, GEMM16, RMS_BF16, RMS_NAN, SILU, CONFIGURE, INT_OPS, NO_ARGS, CRASHES = NAMES
# the order they replay in: the calls' order, which MATE's session.jsonl gives where two share a
# millisecond (no_args was called before int_ops)
ORDER = NAMES[:6] + [NO_ARGS, INT_OPS, CRASHES]


def convert(src, dst):
    """A copy of dump src whose tensor files are safetensors (written by libmate)."""
    shutil.copytree(src, dst)
    for stem in ("inputs", "outputs"):
        pt = os.path.join(dst, stem + ".pt")
        if os.path.exists(pt):
            write_safetensors(os.path.join(dst, stem + ".safetensors"), torch.load(pt))
            os.remove(pt)
    meta = os.path.join(dst, "metadata.jsonl")
    with open(meta) as f:
        text = f.read()
    with open(meta, "w") as f:
        f.write(text.replace('"tensor_format": "torch"', '"tensor_format": "safetensors"'))


work = tmpdir()
REF = {n: torch.load(os.path.join(FIXTURE, n, "outputs.pt")) for n in NAMES
       if os.path.exists(os.path.join(FIXTURE, n, "outputs.pt"))}
g = REF[GEMM32]["result"]


@functools.cache
def converted():
    """The fixture's dumps as safetensors copies: their root."""
    base = os.path.join(work, "fixture")
    os.mkdir(base)
    for n in NAMES:
        convert(os.path.join(FIXTURE, n), os.path.join(base, n))
    shutil.copy(os.path.join(FIXTURE, "session.jsonl"), base)
    return base


def mutated(name, key, change, extra_args=(), root_name=None):
    """Replays a copy of dump `name` whose recorded output `key` was changed; (exit, line, json)."""
    root = os.path.join(work, root_name or ("m-%d" % mutated.count))
    mutated.count += 1
    os.mkdir(root)
    d = os.path.join(root, name)
    shutil.copytree(os.path.join(converted(), name), d)
    outs = {k: v.clone() for k, v in REF[name].items()}
    outs[key] = change(outs[key])
    write_safetensors(os.path.join(d, "outputs.safetensors"), outs)
    p = run(RP + list(extra_args) + [root], check=False)
    j = run(RP + list(extra_args) + ["--jsonl", root], check=False)
    obj = json.loads(j.stdout.splitlines()[0]) if j.stdout else {}
    return p.returncode, p.stdout.splitlines()[0] if p.stdout else "", obj


mutated.count = 0


def setitem(idx, value):
    def f(t):
        t[idx] = value
        return t
    return f


def bump_bits(idx, n):
    """Moves element idx n units in the last place (f16/bf16)."""
    def f(t):
        bits = t.view(torch.int16)
        bits[idx] += n
        return t
    return f


def test_details():
    """--details reads the safetensors headers"""
    base = converted()
    p = run([build_path("src", "replay", "mate-list-dumps"), "--details", base], check=False)
    check(p.returncode == 0 and "Problem" not in p.stdout, "--details on safetensors: clean: %r" % p.stderr)
    check("  Inputs: 2\n    arg_0: float32 shape (16, 32) stride (32, 1)\n"
          "    arg_1: float32 shape (32, 8) stride (8, 1)\n" in p.stdout,
          "safetensors hold contiguous copies: the header's strides")
    check("    result: int64 shape (10,) stride (1,)\n" in p.stdout, "int_ops output from the header")


def test_replay():
    """the reference dumps replay"""
    base = converted()
    p = run(RP + [base], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 0, "passes and a reproduced failure: exit 0 (%d)" % p.returncode)
    for i, n in enumerate(ORDER[:-1]):
        check(any(l.startswith("[%d] " % (i + 1)) and ("(%s): Passed" % n) in l for l in lines),
              "%s passes: %r" % (n, lines))
    check("[9] crashes (%s): Reproduced the failure: RuntimeError: crashes with code 11" % CRASHES in lines,
          "crashes is a reproduced failure: %r" % lines)
    check("Summary: 8 passed, 1 failed (1 reproduced failure)" in lines, "summary: %r" % lines)
    sys.stdout.write("".join(l + "\n" for l in lines))
    p = run(RP + ["--exclude", "crashes", base], check=False)
    check(p.returncode == 0 and "Summary: 8 passed, 0 failed" in p.stdout, "without the crash: exit 0")


def test_one_element():
    """one element beyond tolerance"""
    rc, line, obj = mutated(GEMM32, "result", setitem((3, 5), g[3, 5].item() + 1.0))
    check(rc == 1, "one element: exit 1")
    check(line.startswith("[1] gemm (%s): Mismatch: result[3, 5]: expected %.9g, got %.9g (abs err 1"
                          % (GEMM32, g[3, 5].item() + 1.0, g[3, 5].item())), "one element named: %r" % line)
    check("1 of 128 elements beyond rtol 1e-05, atol 1e-06" in line, "count and tolerance in the line: %r" % line)
    check(obj.get("verdict") == "mismatch" and obj.get("first_bad_index") == "[3, 5]" and obj.get("first_bad") == 29
          and obj.get("n_bad") == 1 and abs(obj.get("max_abs_err", 0) - 1.0) < 1e-4, "jsonl place: %r" % obj)


def test_scaled():
    """a scaled output"""
    rc, line, obj = mutated(GEMM32, "result", lambda t: t * 1.5)
    check(rc == 1 and ": Mismatch: result[" in line, "scaled: mismatch: %r" % line)
    check(obj.get("n_bad", 0) > 100 and obj.get("max_rel_err", 0) > 0.3, "scaled: most elements bad: %r" % obj)


def test_nan():
    """an injected NaN"""
    rc, line, obj = mutated(GEMM32, "result", setitem((2, 1), float("nan")))
    check(rc == 1 and "Mismatch: result[2, 1]: expected nan, got %.9g" % g[2, 1].item() in line, "NaN: %r" % line)
    # counted apart and located, not hidden behind errors of 0
    check("1 of 128 elements beyond rtol 1e-05, atol 1e-06 (0.781%), of them 1 NaN where the other is not "
          "(first at [2, 1]); over the finite elements: max abs err 0," in line, "NaN counted: %r" % line)
    check(obj.get("n_nan") == 1 and obj.get("first_nan_index") == "[2, 1]" and obj.get("n_inf") == 0
          and obj.get("first_inf_index") is None, "NaN in --jsonl: %r" % obj)


def test_shape_and_dtype():
    """a changed shape, a changed dtype in the outputs file alone: the file disagrees with its
    record, which is named, not the result blamed"""
    rc, line, obj = mutated(GEMM32, "result", lambda t: t.reshape(8, 16))
    check(rc == 1 and line.endswith("Error: outputs.safetensors: tensor 'result' has another shape in "
                                    "the file than in the record"), "shape: %r" % line)
    rc, line, obj = mutated(GEMM32, "result", lambda t: t.double())
    check(rc == 1 and line.endswith("Error: outputs.safetensors: tensor 'result' is float64 in the file "
                                    "but float32 in the record"), "dtype: %r" % line)


def test_integers_exact():
    """integers are exact, whatever the tolerance"""
    iv = REF[INT_OPS]["result"]
    rc, line, obj = mutated(INT_OPS, "result", setitem(4, iv[4].item() + 1), ["--rtol", "1", "--atol", "100"])
    check(rc == 1 and "Mismatch: result[4]: expected %d, got %d; 1 of 10 elements differ (exact)"
          % (iv[4].item() + 1, iv[4].item()) in line, "int exact: %r" % line)


def test_f32_tolerance():
    """f32: within rtol 1e-5 passes (not bit-exact), beyond fails, --rtol and --atol widen"""
    x = g[0, 0].item()
    rc, line, obj = mutated(GEMM32, "result", setitem((0, 0), x * (1 + 4e-6)))
    check(rc == 0 and "Passed (max abs err" in line and obj.get("bit_exact") is False, "f32 within rtol: %r" % line)
    rc, line, obj = mutated(GEMM32, "result", setitem((0, 0), x * (1 + 5e-5)))
    check(rc == 1 and "Mismatch: result[0, 0]" in line, "f32 beyond rtol: %r" % line)
    rc, line, obj = mutated(GEMM32, "result", setitem((0, 0), x * (1 + 5e-5)), ["--rtol", "1e-4"])
    check(rc == 0, "--rtol 1e-4 accepts 5e-5: %r" % line)
    rc, line, obj = mutated(GEMM32, "result", setitem((3, 5), g[3, 5].item() + 0.5), ["--atol", "1"])
    check(rc == 0, "--atol 1 accepts 0.5: %r" % line)


def test_f16_ulps():
    """f16 (1e-3): one unit in the last place passes, three do not"""
    rc, line, obj = mutated(GEMM16, "result", bump_bits((1, 1), 1))
    check(rc == 0, "f16 one ulp passes: %r" % line)
    rc, line, obj = mutated(GEMM16, "result", bump_bits((1, 1), 3))
    check(rc == 1 and "Mismatch: result[1, 1]" in line and "rtol 0.001, atol 1e-05" in line, "f16 three ulps: %r" % line)


def test_bf16_ulps():
    """bf16 (8e-3): one unit in the last place passes, four do not"""
    rc, line, obj = mutated(RMS_BF16, "result", bump_bits((2, 7), 1))
    check(rc == 0, "bf16 one ulp passes: %r" % line)
    rc, line, obj = mutated(RMS_BF16, "result", bump_bits((2, 7), 4))
    check(rc == 1 and "Mismatch: result[2, 7]" in line and "rtol 0.008" in line, "bf16 four ulps: %r" % line)


def test_nan_placement():
    """NaN matches NaN in the same place (the recorded NaN rows pass above); elsewhere it does not"""
    r = REF[RMS_NAN]["result"]
    check(bool(torch.isnan(r).any()), "the fixture holds NaN outputs")
    nan_at = tuple(torch.nonzero(torch.isnan(r))[0].tolist())
    fin_at = tuple(torch.nonzero(torch.isfinite(r))[0].tolist())
    rc, line, obj = mutated(RMS_NAN, "result", setitem(nan_at, 1.0))
    check(rc == 1 and "Mismatch: result[%d, %d]: expected 1, got nan" % nan_at in line, "NaN vs number: %r" % line)


def test_infinities_exact():
    """infinities exactly, whatever the tolerance"""
    fin_at = tuple(torch.nonzero(torch.isfinite(REF[RMS_NAN]["result"]))[0].tolist())
    rc, line, obj = mutated(RMS_NAN, "result", setitem(fin_at, float("inf")), ["--atol", "1e30", "--rtol", "10"])
    check(rc == 1 and "Mismatch: result[%d, %d]: expected inf" % fin_at in line, "inf exact: %r" % line)
    check("of them 1 infinity that differs (first at [%d, %d])" % fin_at in line and obj.get("n_inf") == 1
          and obj.get("first_inf_index") == "[%d, %d]" % fin_at, "inf counted: %r %r" % (line, obj))

    shutil.rmtree(work)


run_cases(test_details, test_replay, test_one_element, test_scaled, test_nan, test_shape_and_dtype,
          test_integers_exact, test_f32_tolerance, test_f16_ulps, test_bf16_ulps, test_nan_placement,
          test_infinities_exact)
