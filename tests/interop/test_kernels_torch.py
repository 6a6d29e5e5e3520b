"""test_kernels_torch.py: every CPU kernel against python3-torch (float64 reference) on random f32, f16 and bf16 inputs; FlashInfer's segment GEMM against its formula."""
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

from mate_test import build_path, check, run, run_cases, tmpdir

DEVICE = os.environ.get("MATE_KERNEL_DEVICE", "cpu")
DRIVER = build_path("tests", "kernel-run")
TMP = tmpdir()

ST = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
      torch.float64: "F64", torch.bool: "BOOL", torch.uint8: "U8", torch.int64: "I64",
      torch.int32: "I32"}
FROM_ST = {v: k for k, v in ST.items()}
# ops.md default tolerances (rtol, atol)
TOL = {torch.float64: (1e-12, 1e-12), torch.float32: (1e-5, 1e-6),
       torch.float16: (1e-3, 1e-5), torch.bfloat16: (8e-3, 1e-5)}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


class F8:
    """An fp8 tensor: raw codes (uint8) and the safetensors dtype name."""

    def __init__(self, codes, name):
        self.codes, self.name = codes, name

    def value(self):
        return f8_decode(self.codes, self.name)


def f8_decode(codes, name):
    """Exact fp8 decoding (e4m3fn: bias 7, no inf; e5m2: bias 15)."""
    c = codes.to(torch.int64)
    mbits, bias = (3, 7) if name == "F8_E4M3" else (2, 15)
    e = (c >> mbits) & ((1 << (7 - mbits)) - 1)
    m = (c & ((1 << mbits) - 1)).double()
    mag = torch.where(e == 0, m * 2.0 ** (1 - bias - mbits),
                      (1 + m / 2 ** mbits) * torch.pow(2.0, (e - bias).double()))
    return torch.where((c & 0x80) != 0, -mag, mag)


def f8_random(shape, name, gen):
    """Random finite codes with magnitudes within [2^-4, 16]."""
    mbits, bias = (3, 7) if name == "F8_E4M3" else (2, 15)
    e = torch.randint(bias - 4, bias + 4, shape, generator=gen)
    m = torch.randint(0, 1 << mbits, shape, generator=gen)
    s = torch.randint(0, 2, shape, generator=gen)
    return F8(((s << 7) | (e << mbits) | m).to(torch.uint8), name)


def raw_bytes(t):
    if isinstance(t, F8):
        return t.codes.contiguous().numpy().tobytes()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def st_write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = raw_bytes(t)
        shape = list(t.codes.shape if isinstance(t, F8) else t.shape)
        header[name] = {"dtype": t.name if isinstance(t, F8) else ST[t.dtype],
                        "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_read(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = bytearray(data[8 + n + b:8 + n + e])
        dt = info["dtype"]
        if dt.startswith("F8"):
            out[name] = F8(torch.frombuffer(buf, dtype=torch.uint8).reshape(info["shape"]), dt)
            continue
        if dt == "BF16":
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buf, dtype=FROM_ST[dt]) if buf else torch.empty(0, dtype=FROM_ST[dt])
        out[name] = t.reshape(info["shape"])
    return out


_runs = [0]


def kernel(name, tensors, **params):
    """Runs the driver; returns (tensors after the run, exit status, stderr)."""
    _runs[0] += 1
    fin = os.path.join(TMP, "in%d.safetensors" % _runs[0])
    fout = os.path.join(TMP, "out%d.safetensors" % _runs[0])
    st_write(fin, tensors)
    args = [DRIVER, "--device", DEVICE, name, fin, fout]
    args += ["%s=%s" % (k.replace("__", "."), v) for k, v in params.items()]
    p = run(args, check=False)
    if p.returncode == 77:
        print("SKIP: no CUDA device")
        sys.exit(77)
    res = st_read(fout) if p.returncode == 0 else None
    for f in (fin, fout):
        if os.path.exists(f):
            os.unlink(f)
    return res, p.returncode, p.stderr


def close(what, got, ref, dtype=None):
    """ops.md's rule: |y - x| <= atol + rtol |x| elementwise, NaN where NaN."""
    dtype = dtype or got.dtype
    rtol, atol = TOL[dtype]
    y, x = got.double(), ref.double()
    if y.shape != x.shape:
        check(False, "%s: shape %s, expected %s" % (what, tuple(y.shape), tuple(x.shape)))
        return
    nan_ok = torch.equal(torch.isnan(y), torch.isnan(x))
    fin = ~torch.isnan(x)
    err = (y[fin] - x[fin]).abs()
    bad = err > atol + rtol * x[fin].abs()
    ok = nan_ok and not bool(bad.any())
    if not ok:
        i = int(torch.nonzero(bad.flatten())[0]) if bad.any() else -1
        check(False, "%s: %d elements off (max abs err %.3g), first at %d: %r vs %r"
              % (what, int(bad.sum()), float(err.max()), i,
                 float(y[fin].flatten()[i]), float(x[fin].flatten()[i])))
    else:
        check(True, what)


def expect_ok(what, res, rc, err):
    check(rc == 0, "%s: exit %d: %s" % (what, rc, err.strip()))
    return rc == 0


gen = torch.Generator().manual_seed(1234)


def randn(*shape, dtype=torch.float32, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def rms_ref(x, w, eps, gemma):
    x = x.double()
    w = w.double() + (1 if gemma else 0)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def test_norms(dt):
    for gemma in (0, 1):
        name = "gemma_rmsnorm" if gemma else "rmsnorm"
        # the kernel sees a (3, 4, 40) permutation of the stored (40, 3, 4)
        x = randn(40, 3, 4, dtype=dt)
        w = randn(40, dtype=dt)
        out = torch.zeros(3, 4, 40, dtype=dt)
        r, rc, e = kernel(name, {"input": x, "weight": w, "out": out}, eps=1e-5,
                          perm__input="1,2,0")
        if expect_ok(name, r, rc, e):
            close("%s %s" % (name, dt), r["out"], rms_ref(x.permute(1, 2, 0), w, 1e-5, gemma).to(dt))
        name = "gemma_fused_add_rmsnorm" if gemma else "fused_add_rmsnorm"
        x = randn(5, 64, dtype=dt)
        res = randn(5, 64, dtype=dt)
        w = randn(64, dtype=dt)
        res = randn(5, 64, dtype=dt, scale=8.0)  # sums that need more bits than dt has
        r, rc, e = kernel(name, {"input": x, "residual": res, "weight": w}, eps=1e-6)
        if expect_ok(name, r, rc, e):
            s = x.double() + res.double()
            close("%s residual %s" % (name, dt), r["residual"], s.to(dt))
            # FlashInfer's kernel (norm.cuh) normalises the float32 sum, not
            # the residual rounded to dt: within tolerance either way, so
            # also count the elements that differ from the rounded reference
            ref = rms_ref(s, w, 1e-6, gemma).to(dt)
            close("%s input %s" % (name, dt), r["input"], ref)
            if dt != torch.float32:
                differ = float((r["input"].double() != ref.double()).double().mean())
                check(differ < 0.02, "%s input %s: %.1f%% of the elements differ from the "
                      "norm of the unrounded sum" % (name, dt, 100 * differ))


def test_norm_eps(dt):
    """eps where it dominates: a row of zeros (0/0 without it), a row of tiny
    values (mean square 1e-6 against eps 1e-5), and eps 4 against a mean square
    of 1. The kernel sees rows 1-4 of a stored (6, 16): a storage offset."""
    H = 16
    x = randn(6, H, dtype=dt)
    x[1] = 0
    x[2] = randn(H, dtype=dt, scale=1e-3)
    for gemma in (0, 1):
        w = randn(H, dtype=dt)
        for eps in (1e-5, 4.0):
            name = "gemma_rmsnorm" if gemma else "rmsnorm"
            r, rc, e = kernel(name, {"input": x, "weight": w, "out": torch.zeros(6, H, dtype=dt)},
                              eps=eps, narrow__input="0,1,4", narrow__out="0,2,4")
            if expect_ok(name, r, rc, e):
                ref = torch.zeros(6, H, dtype=torch.float64)
                ref[2:] = rms_ref(x[1:5], w, eps, gemma)
                close("%s eps=%g zero and tiny rows %s" % (name, eps, dt), r["out"], ref.to(dt))
            # residual x plus input 0 is x again: the same rows, normalized in place
            name = "gemma_fused_add_rmsnorm" if gemma else "fused_add_rmsnorm"
            r, rc, e = kernel(name, {"input": torch.zeros(6, H, dtype=dt), "residual": x,
                                     "weight": w}, eps=eps, narrow__input="0,2,4",
                              narrow__residual="0,1,4")
            if expect_ok(name, r, rc, e):
                ref = torch.zeros(6, H, dtype=torch.float64)
                ref[2:] = rms_ref(x[1:5], w, eps, gemma)
                close("%s eps=%g residual %s" % (name, eps, dt), r["residual"], x)
                close("%s eps=%g zero and tiny rows %s" % (name, eps, dt), r["input"], ref.to(dt))


def test_act(dt):
    refs = {"silu_and_mul": lambda a: torch.nn.functional.silu(a),
            "gelu_and_mul": lambda a: torch.nn.functional.gelu(a),
            "gelu_tanh_and_mul": lambda a: torch.nn.functional.gelu(a, approximate="tanh")}
    for name, f in refs.items():
        # every other element of the last dim: input (2, 3, 2*16) strided by 2
        x = randn(2, 3, 64, dtype=dt, scale=2)
        out = torch.zeros(2, 3, 16, dtype=dt)
        r, rc, e = kernel(name, {"input": x, "out": out}, skip__input=2)
        if expect_ok(name, r, rc, e):
            xv = x[..., ::2].double()
            close("%s %s" % (name, dt), r["out"], (f(xv[..., :16]) * xv[..., 16:]).to(dt))


def test_softmax(dt):
    x = randn(4, 100, dtype=dt, scale=3)
    r, rc, e = kernel("softmax", {"logits": x, "out": torch.zeros(4, 100)}, temperature=0.7)
    if expect_ok("softmax", r, rc, e):
        close("softmax T=0.7 %s" % dt, r["out"], torch.softmax(x.double() / 0.7, -1).float())
    t = torch.tensor([0.5, 1.0, 2.0, 3.5], dtype=torch.float32)
    r, rc, e = kernel("softmax", {"logits": x, "temperature": t, "out": torch.zeros(4, 100)})
    if expect_ok("softmax tensor", r, rc, e):
        close("softmax T tensor %s" % dt, r["out"],
              torch.softmax(x.double() / t.double()[:, None], -1).float())
    # one element for every row, over the scalar's default of 1
    r, rc, e = kernel("softmax", {"logits": x, "temperature": torch.tensor([0.25]),
                                  "out": torch.zeros(4, 100)})
    if expect_ok("softmax one-element tensor", r, rc, e):
        close("softmax T tensor (1) %s" % dt, r["out"], torch.softmax(x.double() / 0.25, -1).float())
    r, rc, e = kernel("softmax", {"logits": x, "out": torch.zeros(4, 100)}, temperature=5.0)
    if expect_ok("softmax", r, rc, e):
        close("softmax T=5 %s" % dt, r["out"], torch.softmax(x.double() / 5.0, -1).float())


def test_mm(dt):
    M, K, N = 33, 48, 20
    s = K ** -0.25
    a = randn(K, M, dtype=dt, scale=s)      # stored transposed: the kernel sees a.t()
    b = randn(K, N, dtype=dt, scale=s)
    for odt in (dt, torch.float32):
        r, rc, e = kernel("mm", {"a": a, "b": b, "out": torch.zeros(M, N, dtype=odt)},
                          perm__a="1,0")
        if expect_ok("mm", r, rc, e):
            close("mm a^T %s -> %s" % (dt, odt), r["out"], (a.double().t() @ b.double()).to(odt))
    # a seen from row 3 of a stored (K + 5, M): a storage offset
    a5 = randn(K + 5, M, dtype=dt, scale=s)
    r, rc, e = kernel("mm", {"a": a5, "b": b, "out": torch.zeros(M, N, dtype=dt)},
                      narrow__a="0,3,%d" % K, perm__a="1,0")
    if expect_ok("mm", r, rc, e):
        close("mm a at an offset %s" % dt, r["out"], (a5.double()[3:3 + K].t() @ b.double()).to(dt))
    # out column major (stored (N, M), seen permuted), b strided by 2
    b2 = randn(K, 2 * N, dtype=dt, scale=s)
    r, rc, e = kernel("mm", {"a": a, "b": b2, "out": torch.zeros(N, M, dtype=dt)},
                      perm__a="1,0", perm__out="1,0", skip__b=1)
    if expect_ok("mm", r, rc, e):
        close("mm col-major out %s" % dt, r["out"].t(), (a.double().t() @ b2.double()[:, ::2]).to(dt))
    B = 3
    a3 = randn(B, M, K, dtype=dt, scale=s)
    b3 = randn(B, N, K, dtype=dt, scale=s)  # the kernel sees b3.transpose(1, 2)
    r, rc, e = kernel("bmm", {"a": a3, "b": b3, "out": torch.zeros(B, M, N, dtype=dt)},
                      perm__b="0,2,1")
    if expect_ok("bmm", r, rc, e):
        close("bmm b^T %s" % dt, r["out"], torch.bmm(a3.double(), b3.double().transpose(1, 2)).to(dt))


def segment_gemm_ref(x, weights, batch_size, column_major, indptr, widx):
    """FlashInfer's SegmentGEMMWrapper.run: segment i's rows of x times its weight; other rows 0."""
    d_out = weights.shape[1] if column_major else weights.shape[2]
    out = torch.zeros(x.shape[0], d_out, dtype=torch.float64)
    for i in range(batch_size):
        s, e = int(indptr[i]), int(indptr[i + 1])
        w = weights[int(widx[i]) if widx is not None else i].double()
        out[s:e] = x[s:e].double() @ (w.t() if column_major else w)
    return out.to(x.dtype)


def test_segment_gemm(dt):
    rows, d_in, d_out, nw = 17, 24, 20, 4
    x = randn(rows, d_in, dtype=dt, scale=d_in ** -0.25)
    lens = torch.tensor([3, 0, 6, 4], dtype=torch.int64)          # segment 1 is empty
    cases = [("lens", {"seg_lens": lens}, 4, torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)])),
             # seg_indptr (int32) wins over seg_lens, starts past row 0 and stops before the end
             ("indptr", {"seg_indptr": torch.tensor([2, 5, 5, 11], dtype=torch.int32),
                         "seg_lens": torch.tensor([9, 9, 9])}, 3, torch.tensor([2, 5, 5, 11]))]
    for cm in (True, False):
        wshape = (nw, d_out, d_in) if cm else (nw, d_in, d_out)
        weights = randn(*wshape, dtype=dt, scale=d_in ** -0.25)
        for form, ints, batch, indptr in cases:
            for widx in (None, torch.tensor([3, 1, 3, 0], dtype=torch.int64)[:batch]):
                what = "segment_gemm %s %s %s%s" % (dt, "col-major" if cm else "row-major", form,
                                                    "" if widx is None else " weight_indices")
                t = dict(ints, x=x, weights=weights, out=torch.zeros(rows, d_out, dtype=dt))
                if widx is not None:
                    t["weight_indices"] = widx
                r, rc, e = kernel("segment_gemm", t, batch_size=batch, column_major=int(cm))
                if expect_ok(what, r, rc, e):
                    close(what, r["out"], segment_gemm_ref(x, weights, batch, cm, indptr, widx))
    # weights seen through a view: stored (nw, d_in, d_out), read column major as (nw, d_out, d_in)
    weights = randn(nw, d_in, d_out, dtype=dt, scale=d_in ** -0.25)
    r, rc, e = kernel("segment_gemm", {"x": x, "weights": weights, "seg_lens": lens,
                                       "out": torch.zeros(rows, d_out, dtype=dt)},
                      batch_size=4, column_major=1, perm__weights="0,2,1")
    if expect_ok("segment_gemm view", r, rc, e):
        close("segment_gemm %s strided weights" % dt, r["out"],
              segment_gemm_ref(x, weights.transpose(1, 2), 4, True, [0, 3, 3, 9, 13], None))


def test_segment_gemm_offsets(dt):
    """x, weights and out seen at storage offsets: rows 2-16 of x, weights 1-3, out from row 1."""
    rows, d_in, d_out = 15, 8, 6
    x = randn(rows + 3, d_in, dtype=dt)
    weights = randn(4, d_in, d_out, dtype=dt)
    lens = torch.tensor([4, 6, 5])
    widx = torch.tensor([2, 0, 1], dtype=torch.int32)
    r, rc, e = kernel("segment_gemm", {"x": x, "weights": weights, "seg_lens": lens,
                                       "weight_indices": widx,
                                       "out": torch.zeros(rows + 1, d_out, dtype=dt)},
                      batch_size=3, narrow__x="0,2,%d" % rows, narrow__weights="0,1,3",
                      narrow__out="0,1,%d" % rows)
    if expect_ok("segment_gemm offsets", r, rc, e):
        ref = torch.zeros(rows + 1, d_out, dtype=dt)
        ref[1:] = segment_gemm_ref(x[2:2 + rows], weights[1:], 3, False, [0, 4, 10, 15], widx)
        close("segment_gemm %s at offsets" % dt, r["out"], ref)


def test_segment_gemm_errors():
    x, w = randn(6, 8), randn(2, 8, 5)
    t = {"x": x, "weights": w, "out": torch.zeros(6, 5), "seg_lens": torch.tensor([2, 4])}
    r, rc, e = kernel("segment_gemm", dict(t, x=x.double(), weights=w.double(),
                                           out=torch.zeros(6, 5, dtype=torch.float64)), batch_size=2)
    check(rc == 1 and e.startswith("-4 ") and "float64" in e, "segment_gemm f64 is unsupported: %d %s" % (rc, e))
    r, rc, e = kernel("segment_gemm", dict(t, weight_indices=torch.tensor([0, 2])), batch_size=2)
    check(rc == 1 and "takes weight 2 of 2" in e, "segment_gemm weight index out of range: %d %s" % (rc, e))
    r, rc, e = kernel("segment_gemm", dict(t, seg_lens=torch.tensor([2, 5])), batch_size=2)
    check(rc == 1 and "segment 1 is rows [2, 7) of x's 6" in e, "segment_gemm segment past x: %d %s" % (rc, e))
    r, rc, e = kernel("segment_gemm", dict(t, seg_lens=torch.tensor([2, 4])), batch_size=3)
    check(rc == 1 and "seg_lens: 2 elements, 3 needed" in e, "segment_gemm short seg_lens: %d %s" % (rc, e))
    t.pop("seg_lens")
    r, rc, e = kernel("segment_gemm", t, batch_size=2)
    check(rc == 1 and "either seg_lens or seg_indptr" in e, "segment_gemm no segments: %d %s" % (rc, e))


def test_fp8(dt):
    Bt, M, K, N = 2, 16, 32, 24
    for an, bn in (("F8_E4M3", "F8_E4M3"), ("F8_E4M3", "F8_E5M2")):
        A = f8_random((Bt, M, K), an, gen)
        Bc = f8_random((Bt, N, K), bn, gen)   # column major B: stored (b, n, k)
        sa, sb = torch.tensor([0.375]), torch.tensor([1.25])
        r, rc, e = kernel("bmm_fp8", {"A": A, "B": Bc, "A_scale": sa, "B_scale": sb,
                                      "out": torch.zeros(Bt, M, N, dtype=dt)}, perm__B="0,2,1")
        if expect_ok("bmm_fp8", r, rc, e):
            ref = torch.bmm(A.value() * 0.375, Bc.value().transpose(1, 2) * 1.25)
            close("bmm_fp8 %s %s -> %s" % (an, bn, dt), r["out"], ref.to(dt))
    a = f8_random((M, K), "F8_E5M2", gen)
    b = f8_random((K, N), "F8_E4M3", gen)
    alpha = torch.tensor(0.0625)
    r, rc, e = kernel("mm_fp8", {"a": a, "b": b, "alpha": alpha, "out": torch.zeros(M, N, dtype=dt)})
    if expect_ok("mm_fp8", r, rc, e):
        close("mm_fp8 -> %s" % dt, r["out"], (0.0625 * (a.value() @ b.value())).to(dt))


def rope(x, pos, scale, theta):
    """Rotate-half RoPE (FlashInfer's ROPE_LLAMA) on x (L, H, D) at positions pos (L)."""
    D = x.shape[-1]
    inv = theta ** (-2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
    ang = (pos.double() / scale)[:, None] * inv[None, :]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def alibi_slopes(H):
    n = 2 ** int(math.floor(math.log2(H)))
    return torch.tensor([2 ** (-8 * (h + 1) / n) if h < n else 2 ** (-4 * ((h - n) * 2 + 1) / n)
                         for h in range(H)], dtype=torch.float64)


def attn_ref(q, k, v, causal=False, pos="NONE", window_left=-1, cap=0, sm_scale=None,
             rope_scale=1.0, rope_theta=1e4, mask=None, q_scale=1.0, k_scale=1.0, v_scale=1.0,
             lse_base_e=0):
    """q (Lq, Hq, D), k/v (Lk, Hk, D): output (Lq, Hq, Dv) and log2 lse (Lq, Hq)
    (natural log with lse_base_e)."""
    q, k, v = q.double(), k.double(), v.double()
    Lq, Hq, D = q.shape
    Lk, Hk = k.shape[:2]
    qpos = torch.arange(Lq) + Lk - Lq
    kpos = torch.arange(Lk)
    if pos == "ROPE_LLAMA":
        q, k = rope(q, qpos, rope_scale, rope_theta), rope(k, kpos, rope_scale, rope_theta)
    g = Hq // Hk
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    z = torch.einsum("qhd,khd->hqk", q, k) * (sm_scale or 1 / math.sqrt(D)) * q_scale * k_scale
    if cap:
        z = cap * torch.tanh(z / cap)
    if pos == "ALIBI":
        z = z + alibi_slopes(Hq)[:, None, None] * (kpos[None, :] - qpos[:, None]).double()[None]
    if mask is not None:
        keep = mask.clone()
    elif causal:
        keep = kpos[None, :] <= qpos[:, None]
    else:
        keep = torch.ones(Lq, Lk, dtype=torch.bool)
    if window_left >= 0:
        keep &= kpos[None, :] >= (qpos[:, None] - window_left)
    z = z.masked_fill(~keep[None], -math.inf)
    o = torch.einsum("hqk,khd->qhd", torch.softmax(z, -1), v) * v_scale
    return o, (torch.logsumexp(z, -1) / (1 if lse_base_e else math.log(2))).t()


def to_hnd(x):
    return x.transpose(0, 1).contiguous()


def test_decode(dt):
    L, Hq, Hk, D = 37, 8, 2, 64
    cases = [dict(), dict(kv_layout="HND", pos_encoding_mode="ROPE_LLAMA", rope_theta=5e5,
                          rope_scale=2.0),
             dict(pos_encoding_mode="ALIBI", logits_soft_cap=30.0), dict(window_left=9, sm_scale=0.3),
             # logits of spread 4 capped at 2; scales away from 1; q at an offset
             dict(logits_soft_cap=2.0, sm_scale=0.5),
             dict(q_scale=1.5, k_scale=0.5, v_scale=3.0, sm_scale=0.2, lse_base_e=1,
                  narrow__q="0,1,%d" % Hq, narrow__k="0,2,%d" % L, narrow__v="0,3,%d" % L)]
    for c in cases:
        at = 3 if "narrow__q" in c else 0   # stored with more rows, seen from row 1, 2, 3
        q = randn(Hq + at, D, dtype=dt)
        k = randn(L + at, Hk, D, dtype=dt)
        v = randn(L + at, Hk, D, dtype=dt)
        hnd = c.get("kv_layout") == "HND"
        t = {"q": q, "k": to_hnd(k) if hnd else k, "v": to_hnd(v) if hnd else v,
             "out": torch.zeros(Hq, D, dtype=dt), "lse": torch.zeros(Hq)}
        r, rc, e = kernel("single_decode_with_kv_cache", t, **c)
        if not expect_ok("decode %s" % c, r, rc, e):
            continue
        if at:
            q, k, v = q[1:1 + Hq], k[2:2 + L], v[3:3 + L]
        o, lse = attn_ref(q[None], k, v, pos=c.get("pos_encoding_mode", "NONE"),
                          window_left=c.get("window_left", -1), cap=c.get("logits_soft_cap", 0),
                          sm_scale=c.get("sm_scale"), rope_scale=c.get("rope_scale", 1.0),
                          rope_theta=c.get("rope_theta", 1e4), q_scale=c.get("q_scale", 1.0),
                          k_scale=c.get("k_scale", 1.0), v_scale=c.get("v_scale", 1.0),
                          lse_base_e=c.get("lse_base_e", 0))
        close("decode %s %s out" % (c, dt), r["out"], o[0].to(dt))
        close("decode %s %s lse" % (c, dt), r["lse"], lse[0].float())


def test_prefill(dt):
    Lq, Lk, Hq, Hk, D = 11, 29, 4, 2, 32
    mask = torch.rand(Lq, Lk, generator=gen) > 0.3
    mask[:, 0] = True
    bits = np.packbits(mask.flatten().numpy(), bitorder="little")
    cases = [dict(causal=1), dict(causal=1, kv_layout="HND"),
             dict(window_left=5, logits_soft_cap=8.0, causal=1),
             dict(custom_mask=True, causal=1), dict(packed=True),
             dict(causal=1, pos_encoding_mode="ROPE_LLAMA"),
             dict(pos_encoding_mode="ALIBI", sm_scale=0.25),
             # a window of 3 without causal, logits of spread 3 capped at 1
             dict(window_left=3, logits_soft_cap=1.0, sm_scale=0.5),
             dict(causal=1, q_scale=0.5, k_scale=3.0, v_scale=0.25, lse_base_e=1)]
    for c in cases:
        c = dict(c)
        use_mask = c.pop("custom_mask", False)
        packed = c.pop("packed", False)
        q = randn(Lq, Hq, D, dtype=dt)
        k = randn(Lk, Hk, D, dtype=dt)
        v = randn(Lk, Hk, D, dtype=dt)
        hnd = c.get("kv_layout") == "HND"
        t = {"q": q, "k": to_hnd(k) if hnd else k, "v": to_hnd(v) if hnd else v,
             "out": torch.zeros(Lq, Hq, D, dtype=dt), "lse": torch.zeros(Lq, Hq)}
        if use_mask:
            t["custom_mask"] = mask
        if packed:
            t["packed_custom_mask"] = torch.from_numpy(bits)
        r, rc, e = kernel("single_prefill_with_kv_cache", t, **c)
        what = "prefill %s%s%s %s" % (c, " mask" if use_mask else "", " packed" if packed else "", dt)
        if not expect_ok(what, r, rc, e):
            continue
        o, lse = attn_ref(q, k, v, causal=c.get("causal", 0), pos=c.get("pos_encoding_mode", "NONE"),
                          window_left=c.get("window_left", -1), cap=c.get("logits_soft_cap", 0),
                          sm_scale=c.get("sm_scale"), q_scale=c.get("q_scale", 1.0),
                          k_scale=c.get("k_scale", 1.0), v_scale=c.get("v_scale", 1.0),
                          lse_base_e=c.get("lse_base_e", 0),
                          mask=mask if (use_mask or packed) else None)
        close(what + " out", r["out"], o.to(dt))
        close(what + " lse", r["lse"], lse.float())


def test_gemm():
    """Recorded BLAS calls: C = alpha op(A) op(B) + beta C, column major, transposed A."""
    m, n, k, lda, ldb, ldc = 13, 7, 9, 12, 10, 15
    for dt, cdt in ((torch.float32, torch.float32), (torch.float64, torch.float64),
                    (torch.float16, torch.float32), (torch.bfloat16, torch.bfloat16)):
        a = randn(m * lda, dtype=dt)     # A stored k x m column major (op = T)
        b = randn(n * ldb, dtype=dt)     # B stored k x n column major
        c = randn(n * ldc, dtype=cdt)
        r, rc, e = kernel("gemm", {"a": a, "b": b, "c": c}, order=102, transa="T", transb="N",
                          m=m, n=n, k=k, alpha=0.5, beta=-2.0, lda=lda, ldb=ldb, ldc=ldc)
        if not expect_ok("gemm %s" % dt, r, rc, e):
            continue
        A = a.double().reshape(m, lda)[:, :k]            # op(A) (m x k)
        Bm = b.double().reshape(n, ldb)[:, :k].t()       # op(B) (k x n)
        C = c.double().reshape(n, ldc).clone()
        C[:, :m] = (0.5 * (A @ Bm) - 2.0 * C[:, :m].t()).t()
        close("gemm %s -> %s" % (dt, cdt), r["c"], C.flatten().to(cdt))


def test_errors():
    x = randn(4, 6)
    r, rc, e = kernel("rmsnorm", {"input": x, "weight": randn(5), "out": torch.zeros(4, 6)})
    check(rc == 1 and "weight: dimension 0 is 5, expected 6" in e, "rmsnorm bad weight: %d %s" % (rc, e))
    q = randn(2, 8)
    k = randn(4, 1, 8)
    r, rc, e = kernel("single_decode_with_kv_cache",
                      {"q": q, "k": k, "v": k, "out": torch.zeros(2, 8)},
                      pos_encoding_mode="ROPE_LLAMA_INTERLEAVED")
    check(rc == 1 and e.startswith("-4 "), "unknown pos mode is unsupported: %d %s" % (rc, e))


def kernels_of(dt):
    """Every kernel's checks in dtype dt."""
    test_norms(dt)
    test_norm_eps(dt)
    test_act(dt)
    test_softmax(dt)
    test_mm(dt)
    test_segment_gemm(dt)
    test_segment_gemm_offsets(dt)
    test_decode(dt)
    test_prefill(dt)


# a case per dtype (the inputs come from one generator, drawn in this order)
def test_float32():
    kernels_of(torch.float32)


def test_float16():
    kernels_of(torch.float16)


def test_bfloat16():
    kernels_of(torch.bfloat16)


def test_fp8_kv():
    for dt in (torch.bfloat16, torch.float16):
        test_fp8(dt)


try:
    run_cases(test_float32, test_float16, test_bfloat16, test_fp8_kv, test_gemm, test_errors,
              test_segment_gemm_errors)
finally:
    shutil.rmtree(TMP, ignore_errors=True)
