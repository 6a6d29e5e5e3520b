"""test_dtype_interop.py: libmate's f32 -> f16/bf16/f8 narrowing against numpy, torch and an exact Fraction reference."""
import functools
import math
import os
import sys
from bisect import bisect_left
from fractions import Fraction

import numpy as np
import torch

from mate_test import build_path, check, run, run_cases

PROG = build_path("tests", "dtype-convert")
SIGN = np.uint32(0x80000000)


def c_encode(bits):
    """Runs dtype-convert encode; returns (f16, bf16, e4m3fn, e5m2) arrays."""
    text = "\n".join("%08x" % b for b in bits.tolist()) + "\n"
    out = run([PROG, "encode"], input=text).stdout.split()
    check(len(out) == 4 * len(bits), "dtype-convert printed %d fields for %d inputs"
          % (len(out), len(bits)))
    vals = np.array([int(x, 16) for x in out], dtype=np.uint32).reshape(-1, 4)
    return vals[:, 0], vals[:, 1], vals[:, 2], vals[:, 3]


def c_decode(fmt, codes):
    text = "\n".join("%x" % c for c in codes) + "\n"
    out = run([PROG, "decode", fmt], input=text).stdout.split()
    return np.array([int(x, 16) for x in out], dtype=np.uint32)


def with_neighbours(b):
    """Bit patterns b, b-1, b+1 (one float below/above, for positive b), and all negated."""
    b = b.astype(np.uint32)
    both = np.concatenate([b, b - 1, b + 1])
    return np.concatenate([both, both | SIGN])


def edge_inputs():
    # every rounding boundary of f16: midpoints between neighbouring codes, +-1 ulp
    codes = np.arange(0, 0x7C00, dtype=np.uint16)
    vals = codes.view(np.float16).astype(np.float64)
    nexts = np.append(vals[1:], 65536.0)
    mids = ((vals + nexts) / 2).astype(np.float32)
    check(np.all(mids.astype(np.float64) == (vals + nexts) / 2), "f16 midpoints are floats")
    f16_edges = with_neighbours(np.concatenate([mids.view(np.uint32),
                                                vals.astype(np.float32).view(np.uint32)]))
    # every rounding boundary of bf16 (the midpoint is the code with 0x8000 below)
    bcodes = np.arange(0, 0x7F80, dtype=np.uint32)
    bf16_edges = with_neighbours(np.concatenate([(bcodes << 16) | 0x8000, bcodes << 16]))
    specials = np.array([0, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7F7FFFFF,
                         0x00000001, 0x007FFFFF, 0x00800000, 0x477FE000, 0x477FEFFF,
                         0x477FF000, 0x47800000, 0x43E00000, 0x43E80000, 0x43F00000,
                         0x47700000, 0x476FFFFF], dtype=np.uint32)
    return np.concatenate([f16_edges, bf16_edges, specials, specials | SIGN])


def random_inputs(rng, n):
    raw = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    # magnitudes spread over the f16/f8 ranges, log-uniform
    mag = np.exp2(rng.uniform(-30, 20, size=n)).astype(np.float32)
    mag = np.where(rng.random(n) < 0.5, -mag, mag).astype(np.float32)
    return np.concatenate([raw, mag.view(np.uint32)])


def nan_ok(inbits, got, exp_mask, man_mask, sign_bit):
    """A NaN input must give a NaN code with the input's sign."""
    is_nan = ((got & exp_mask) == exp_mask) & ((got & man_mask) != 0)
    same_sign = ((inbits >> 31) != 0) == ((got & sign_bit) != 0)
    return is_nan & same_sign


def report(name, bad, inbits, got, want):
    idx = np.flatnonzero(bad)
    check(len(idx) == 0, "%s: %d of %d differ" % (name, len(idx), len(inbits)))
    for i in idx[:5]:
        print("  %s: f32 0x%08x (%r) -> 0x%x, want 0x%x"
              % (name, inbits[i], float(inbits[i:i + 1].view(np.float32)[0]), got[i], want[i]),
              file=sys.stderr)


def check_f16(inbits, got):
    f = inbits.view(np.float32)
    with np.errstate(all="ignore"):
        want = f.astype(np.float16).view(np.uint16).astype(np.uint32)
    nan = np.isnan(f)
    bad = np.where(nan, ~nan_ok(inbits, got, 0x7C00, 0x03FF, 0x8000), got != want)
    report("f32->f16 vs numpy", bad, inbits, got, want)


def check_bf16(inbits, got):
    f = inbits.view(np.float32)
    t = torch.from_numpy(f.copy()).to(torch.bfloat16).view(torch.int16).numpy()
    want = t.view(np.uint16).astype(np.uint32)
    nan = np.isnan(f)
    bad = np.where(nan, ~nan_ok(inbits, got, 0x7F80, 0x007F, 0x8000), got != want)
    report("f32->bf16 vs torch", bad, inbits, got, want)


# ---- exact float8 reference -------------------------------------------------

def f8_table(ebits, mbits, ieee):
    """(value, code) for every non-negative finite code, in increasing order."""
    bias, emax, mmax = 2 ** (ebits - 1) - 1, 2 ** ebits - 1, 2 ** mbits - 1
    out = []
    for code in range(2 ** (ebits + mbits)):
        e, m = code >> mbits, code & mmax
        if (ieee and e == emax) or (not ieee and e == emax and m == mmax):
            continue
        if e == 0:
            v = Fraction(m, 2 ** mbits) * Fraction(2) ** (1 - bias)
        else:
            v = (1 + Fraction(m, 2 ** mbits)) * Fraction(2) ** (e - bias)
        out.append((v, code))
    return out


E4M3 = f8_table(4, 3, False)   # max 448 = 0x7e
E5M2 = f8_table(5, 2, True)    # max 57344 = 0x7b
E4M3_VALS = [v for v, _ in E4M3]
E5M2_VALS = [v for v, _ in E5M2]


def nearest_even(a, vals, table):
    i = bisect_left(vals, a)
    if i < len(vals) and vals[i] == a:
        return table[i][1]
    lo, hi = table[i - 1], table[i]
    dlo, dhi = a - lo[0], hi[0] - a
    if dlo != dhi:
        return lo[1] if dlo < dhi else hi[1]
    return lo[1] if lo[1] % 2 == 0 else hi[1]


def ref_f8(x, inf_code, magnitude):
    """The float8 code of x: NaN -> None, an infinity -> inf_code, else magnitude(|x|)
    (a Fraction) with x's sign."""
    if math.isnan(x):
        return None
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isinf(x):
        return inf_code | sign
    return magnitude(Fraction(abs(x))) | sign


def e4m3fn_magnitude(a):
    """e4m3fn: round to nearest even; no inf, saturate to 448."""
    if a >= E4M3_VALS[-1]:
        return 0x7E
    return nearest_even(a, E4M3_VALS, E4M3)


def e5m2_magnitude(a):
    """e5m2: round to nearest even, IEEE-style overflow to inf."""
    top = E5M2_VALS[-1]                  # 57344, code 0x7b (odd)
    past = top + Fraction(2) ** 13        # 65536: would be code 0x7c, even
    mid = (top + past) / 2
    if a > mid or a == mid:              # the tie goes to the even code: inf
        return 0x7C
    if a > top:
        return 0x7B
    return nearest_even(a, E5M2_VALS, E5M2)


def ref_e4m3fn(x):
    return ref_f8(x, 0x7E, e4m3fn_magnitude)


def ref_e5m2(x):
    return ref_f8(x, 0x7C, e5m2_magnitude)


def f8_inputs():
    vals = []
    for table in (E4M3, E5M2):
        v = [t[0] for t in table]
        nxt = v[1:] + [v[-1] + (v[-1] - v[-2])]
        for a, b in zip(v, nxt):
            vals.append(float(a))
            vals.append(float((a + b) / 2))
    f = np.array(vals, dtype=np.float32)
    check(np.all([Fraction(float(x)) == Fraction(y) for x, y in zip(f, vals)]),
          "f8 midpoints are floats")
    extra = np.array([480, 464, 449, 1e30, 61440, 61439.996, 65536, 2.0 ** -10, 2.0 ** -17,
                      1e-45, 3.0 * 2 ** -11], dtype=np.float32)
    return with_neighbours(np.concatenate([f, extra]).view(np.uint32))


def check_f8(name, ref, inbits, got, is_nan):
    bad_idx, want_all = [], []
    floats = inbits.view(np.float32).tolist()
    for i, b in enumerate(inbits.tolist()):
        w = ref(floats[i])
        g = int(got[i])
        if w is None:
            ok = is_nan(g) and ((g & 0x80) != 0) == ((b >> 31) != 0)
        else:
            ok = g == w
        want_all.append(-1 if w is None else w)
        if not ok:
            bad_idx.append(i)
    check(not bad_idx, "%s: %d of %d differ from the exact reference"
          % (name, len(bad_idx), len(inbits)))
    for i in bad_idx[:5]:
        print("  %s: f32 0x%08x -> 0x%02x, want 0x%02x" % (name, inbits[i], got[i], want_all[i]),
              file=sys.stderr)


def check_decoders():
    codes = np.arange(65536, dtype=np.uint32)
    got = c_decode("f16", codes.tolist())
    want = codes.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    nan = np.isnan(want.view(np.float32))
    bad = np.where(nan, ~np.isnan(got.view(np.float32)), got != want)
    report("f16->f32 vs numpy", bad, codes, got, want)

    got = c_decode("bf16", codes.tolist())
    t = torch.from_numpy(codes.astype(np.uint16).view(np.int16).copy()).view(torch.bfloat16)
    want = t.float().numpy().view(np.uint32)
    nan = np.isnan(want.view(np.float32))
    bad = np.where(nan, ~np.isnan(got.view(np.float32)), got != want)
    report("bf16->f32 vs torch", bad, codes, got, want)

    for fmt, table, ieee in (("e4m3fn", E4M3, False), ("e5m2", E5M2, True)):
        got = c_decode(fmt, list(range(256))).view(np.float32)
        bad = 0
        for code in range(256):
            mag = code & 0x7F
            vals = {c: v for v, c in table}
            g = float(got[code])
            if mag in vals:
                w = float(vals[mag]) * (-1 if code & 0x80 else 1)
                ok = g == w and math.copysign(1, g) == math.copysign(1, w)
            elif ieee and mag == 0x7C:
                ok = math.isinf(g) and (g < 0) == bool(code & 0x80)
            else:
                ok = math.isnan(g)
            bad += not ok
        check(bad == 0, "%s decode: %d of 256 codes wrong" % (fmt, bad))


@functools.cache
def inputs():
    """(the generator after drawing them, the f32 inputs: every edge case and 100,000 random ones)"""
    rng = np.random.default_rng(20261121)
    return rng, np.concatenate([edge_inputs(), random_inputs(rng, 100000)])


def test_f16_bf16():
    inbits = inputs()[1]
    f16, bf16, e4, e5 = c_encode(inbits)
    check_f16(inbits, f16)
    check_bf16(inbits, bf16)


def test_f8():
    """f8 against the Fraction reference: every boundary, plus a random sample"""
    rng, inbits = inputs()
    sample = rng.choice(len(inbits), size=20000, replace=False)
    f8bits = np.concatenate([f8_inputs(), inbits[sample]])
    _, _, e4, e5 = c_encode(f8bits)
    check_f8("f32->e4m3fn", ref_e4m3fn, f8bits, e4, lambda g: (g & 0x7F) == 0x7F)
    check_f8("f32->e5m2", ref_e5m2, f8bits, e5, lambda g: (g & 0x7C) == 0x7C and (g & 3) != 0)
    print("checked %d f16/bf16 inputs and %d f8 inputs" % (len(inbits), len(f8bits)))


def test_decoders():
    check_decoders()


if __name__ == "__main__":
    if not os.path.exists(PROG):
        print("FAIL: %s not built (make check builds it)" % PROG)
        sys.exit(1)
    run_cases(test_f16_bf16, test_f8, test_decoders)
