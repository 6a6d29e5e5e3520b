"""flashinfer_quant.py: torch reference functions with the names, signatures and defaults of FlashInfer's block quantization (fp4_quantize, nvfp4_quantize, mxfp4_quantize, mxfp8_quantize, silu_and_mul_nvfp4_quantize, mxfp4_dequantize, mxfp4_dequantize_host), float8 norms (rmsnorm_quant, fused_add_rmsnorm_quant) and block-scaled GEMMs (mm_fp4, mm_mxfp8; issue 39), written from its tests' reference math (tests/test_helpers/utils_fp4.py, tests/utils_fp8.py) and its kernels, for recording under FlashInfer's real decorator. Import after flashinfer_peer.load_api_logging(): the defaults are FlashInfer's own SfLayout."""
import torch

from flashinfer.tllm_enums import SfLayout   # the real enum (it imports only api_logging)


def decorate(api, names):
    """The named reference functions, each wrapped by FlashInfer's real decorator."""
    return {n: api.flashinfer_api(globals()[n]) for n in names}


class _Unset:
    """The default of FlashInfer's nvfp4_4over6= (its _UNSET), with its repr."""
    def __repr__(self):
        return "<nvfp4_4over6 unset: read FLASHINFER_NVFP4_4OVER6*>"


_UNSET = _Unset()


def _e2m1_codes(y):
    """cast_to_fp4's rounding as 4-bit codes: (0.25, 0.75] ... nearest, ties to the even
    code, above 5 to 6 (saturated); the sign bit kept, as cvt.rn.satfinite keeps it."""
    a = y.abs()
    mag = torch.zeros(y.shape, dtype=torch.uint8)
    for b, inclusive in ((0.25, 0), (0.75, 1), (1.25, 0), (1.75, 1), (2.5, 0), (3.5, 1), (5.0, 0)):
        mag += (a >= b if inclusive else a > b).to(torch.uint8)
    return mag | (torch.signbit(y).to(torch.uint8) << 3)


def _swizzle_index(m, c, layout):
    """Where scale (r, k) of m x c lies in layout (SfLayout's value), flat, row-major over
    (r, k): the swizzled index of FlashInfer's tests/utils_fp8.py _swizzle_mxfp8_scales."""
    if layout == 2:
        return torch.arange(m * c)
    pc = (c + 3) // 4 * 4
    r = torch.arange(m)[:, None]
    k = torch.arange(c)[None, :]
    if layout == 0:
        idx = k % 4 + (k // 4) * 512 + (r % 32) * 16 + (r % 128) // 32 * 4 + (r // 128) * 128 * pc
    else:
        idx = (r // 8) * (pc // 4 * 32) + (k // 4) * 32 + (r % 8) * 4 + k % 4
    return idx.reshape(-1)


def _swizzle_sf(scales, layout):
    """(m, c) scale codes laid out, padding zero; flat."""
    m, c = scales.shape
    pr, pc = _sf_padded_shape(m, c, layout)
    out = torch.zeros(pr * pc, dtype=torch.uint8)
    out[_swizzle_index(m, c, layout)] = scales.reshape(-1)
    return out


def _sf_padded_shape(m, c, layout):
    if layout == 2:
        return m, c
    tile = 128 if layout == 0 else 8
    return (m + tile - 1) // tile * tile, (c + 3) // 4 * 4


def _fp4_quant(x, global_scale, block, ue8m0, layout):
    """ref_fp4_quant as codes: scale = global * (max / 6) to e4m3 (ue8m0: rounded up to a
    power of two, global scale unused as the kernel's fp16 path leaves it), elements times
    1 / (scale / global), clamped to 6, e2m1 packed low nibble first."""
    xb = x.reshape(-1, x.size(-1) // block, block).float()
    if x.dtype == torch.float8_e4m3fn:
        return _fp8_fp4_quant(x, xb, global_scale, block, ue8m0, layout)
    vmax = xb.abs().amax(-1, keepdim=True)
    if ue8m0:
        s = vmax * (1 / 6.0)
        s = ((s.view(torch.int32) + 0x007FFFFF) & 0x7F800000).view(torch.float32)
        codes = (s.view(torch.int32) >> 23).to(torch.uint8)
        out_scale = torch.where(s == 0, 0.0, 1.0 / s)
    else:
        g = global_scale.float()
        s = (g * (vmax * (1 / 6.0))).to(torch.float8_e4m3fn)
        codes = s.view(torch.uint8)
        d = s.float() * (1.0 / g)
        out_scale = torch.where(d == 0, 0.0, 1.0 / d)
    return _pack(x, xb, out_scale, codes, block, layout)


def _pack(x, xb, out_scale, codes, block, layout):
    """The values times their block's out_scale as e2m1 codes, packed, and the scale codes
    laid out."""
    k = x.size(-1)
    y = (xb * out_scale).clamp(-6.0, 6.0).reshape(-1, k)
    c = _e2m1_codes(y)
    q = (c[:, 0::2] | (c[:, 1::2] << 4)).reshape(*x.shape[:-1], k // 2)
    sf = _swizzle_sf(codes.reshape(-1, k // block), layout)
    return q, sf.reshape(_sf_padded_shape(xb.size(0), k // block, layout))


def _fp8_fp4_quant(x, xb, global_scale, block, ue8m0, layout):
    """A float8_e4m3fn input, as quantization_utils.cuh's cvt_warp_fp8_to_fp4 does it (no
    FlashInfer test has a reference of its own): the values times 6 / global rounded to
    float16, the scale global * (max / 6) to e4m3 (ue8m0: rounded up to a power of two,
    the global scale used too), the values times global / fp32(scale); a scale that
    rounds to zero zeroes its block, as for the float16 recipe."""
    g = global_scale.float()
    h = (xb * (6.0 * (1.0 / g))).half().float()
    s = g * (h.abs().amax(-1, keepdim=True) * (1 / 6.0))
    if ue8m0:
        up = ((s.view(torch.int32) + 0x007FFFFF) & 0x7F800000).view(torch.float32)
        codes = (up.view(torch.int32) >> 23).clamp(max=254).to(torch.uint8)
        narrow = torch.ldexp(torch.ones(codes.shape), codes.to(torch.int32) - 127)
    else:
        s8 = s.to(torch.float8_e4m3fn)
        codes = s8.view(torch.uint8)
        narrow = s8.float()
    out_scale = torch.where((s == 0) | (narrow == 0), 0.0, g * (1.0 / narrow))
    return _pack(x, h, out_scale, codes, block, layout)


def fp4_quantize(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False,
                 is_sf_swizzled_layout=True, is_sf_8x4_layout=False,
                 is_global_scale_inversed=False, enable_pdl=None, backend="cuda",
                 nvfp4_4over6=_UNSET):
    """flashinfer.fp4_quantize: a column-major input (stride(-2) == 1) quantized as its
    transpose and both outputs transposed back, as FlashInfer does."""
    layout = 2 if not is_sf_swizzled_layout else 1 if is_sf_8x4_layout else 0
    g = global_scale if global_scale is not None else torch.ones(1)
    if is_global_scale_inversed:
        g = 1.0 / g.float()
    col = input.stride(-2) == 1
    x = input.transpose(-2, -1) if col else input
    q, sf = _fp4_quant(x, g, sf_vec_size, sf_use_ue8m0, layout)
    return (q.transpose(-2, -1), sf.transpose(-2, -1)) if col else (q, sf)


def nvfp4_quantize(a, a_global_sf, sfLayout=SfLayout.layout_128x4, do_shuffle=False,
                   sf_vec_size=16, enable_pdl=None, backend="cuda", per_token_activation=False,
                   expanded_idx_to_permuted_idx=None, out_scale=None, nvfp4_4over6=_UNSET):
    return fp4_quantize(a, a_global_sf, sf_vec_size, False, sfLayout != SfLayout.layout_linear,
                        sfLayout == SfLayout.layout_8x4)


def mxfp4_quantize(a, backend="cuda", enable_pdl=None, sfLayout=SfLayout.layout_128x4):
    return fp4_quantize(a, None, 32, True, sfLayout != SfLayout.layout_linear,
                        sfLayout == SfLayout.layout_8x4)


def mxfp4_dequantize(a_fp4, a_sf, sfLayout=SfLayout.layout_128x4):
    """e2m1_and_ufp8sf_scale_to_float's host kernel: each value times its block's ue8m0
    scale (the code as float32 exponent bits) read through the layout."""
    m, k = a_fp4.size(0), a_fp4.size(1) * 2
    c = k // 32
    codes = a_sf.reshape(-1)[_swizzle_index(m, c, int(sfLayout))].to(torch.int32)
    scale = (codes << 23).view(torch.float32).reshape(m, c)
    vals = torch.stack((a_fp4 & 0xF, a_fp4 >> 4), -1).reshape(m, k).to(torch.int64)
    e2m1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    return (e2m1[vals].reshape(m, c, 32) * scale[..., None]).reshape(m, k)


def mxfp4_dequantize_host(weight, scale, group_size=32):
    """fp4Op.cpp's mxfp4_dequantize_host: each e2m1 value (its table's code 8 is +0) times
    2^(code - 127) of its group's byte of scale (n, k / group_size), 0xff NaN."""
    n, k = weight.size(0), weight.size(1) * 2
    vals = torch.stack((weight & 0xF, weight >> 4), -1).reshape(n, k).to(torch.int64)
    lut = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6])
    s = torch.ldexp(torch.ones(scale.shape), scale.to(torch.int32) - 127)
    s = torch.where(scale == 255, torch.tensor(float("nan")), s)
    return lut[vals] * s.repeat_interleave(group_size, -1)


def mxfp8_quantize(input, is_sf_swizzled_layout=True, alignment=32, enable_pdl=None,
                   backend="cuda", sf_swizzle_layout=None):
    """mxfp8_quantize_reference: blocks of 32, scale max / 448 rounded up to a power of two
    (ue8m0), elements times its inverse to float8_e4m3fn; K zero-padded to alignment."""
    layout = int(sf_swizzle_layout) if sf_swizzle_layout is not None else \
        0 if is_sf_swizzled_layout else 2
    x = input.reshape(-1, input.size(-1)).float()
    m, k = x.shape
    pk = (k + alignment - 1) // alignment * alignment
    x = torch.nn.functional.pad(x, (0, pk - k))
    blocks = x.reshape(m, pk // 32, 32)
    bs = blocks.abs().amax(-1) / 448.0
    bits = bs.view(torch.int32)
    e, mant = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    e = (e + ((mant != 0) & ((e != 0) | (mant > 0x400000))).to(e.dtype)).clamp(max=254)
    codes = torch.where(bs > 0, e, 0).to(torch.uint8)
    inv = torch.ldexp(torch.ones_like(bs), 127 - codes.to(torch.int32))
    inv.masked_fill_(codes == 0, 0)
    q = (blocks * inv[..., None]).to(torch.float8_e4m3fn).reshape(*input.shape[:-1], pk)
    return q, _swizzle_sf(codes, layout)


def rmsnorm_quant(out, input, weight, scale, eps=1e-6, enable_pdl=None):
    """norm.cuh's RMSNormQuantKernel: x / sqrt(mean(x^2) + eps) * weight / scale in float32,
    clamped to out's float8 range, into out; returns None."""
    _norm_quant(out, input.float(), weight, scale, eps)


def fused_add_rmsnorm_quant(out, input, residual, weight, scale, eps=1e-6, enable_pdl=None):
    """FusedAddRMSNormQuantKernel: residual += input (rounded to its dtype), the float sum
    normed and quantized into out; returns None."""
    x = input.float() + residual.float()
    residual.copy_(x.to(residual.dtype))
    _norm_quant(out, x, weight, scale, eps)


def _norm_quant(out, x, weight, scale, eps):
    inv = 1.0 / (scale.float() if isinstance(scale, torch.Tensor) else torch.tensor([scale]))
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float() * inv
    m = torch.finfo(out.dtype).max
    out.copy_(y.clamp(-m, m).to(out.dtype))


def silu_and_mul_nvfp4_quantize(input, global_scale, sf_vec_size=16, is_sf_swizzled_layout=True,
                                is_sf_8x4_layout=False, enable_pdl=None, nvfp4_4over6=_UNSET):
    """test_fp4_quantize.py's reference: silu_and_mul(x) (silu(gate) * up in float32, rounded
    once to x's dtype, as the kernel's bfloat2 / half2 product is) quantized by fp4_quantize;
    the leading dimensions flattened into M."""
    k = input.size(-1) // 2
    x = input.reshape(-1, 2 * k).float()
    h = (torch.nn.functional.silu(x[:, :k]) * x[:, k:]).to(input.dtype)
    return fp4_quantize(h, global_scale, sf_vec_size, False, is_sf_swizzled_layout,
                        is_sf_8x4_layout)


def _dequant_operand(q, sf, block, ue8m0, fp4, layout):
    """A GEMM operand (rows, K / 2 bytes of e2m1 pairs, or K float8_e4m3fn) times its block
    scales (sf: the layout's bytes in the quantizer's order), in float32."""
    rows = q.size(0)
    k = q.size(1) * 2 if fp4 else q.size(1)
    codes = sf.view(torch.uint8).reshape(-1)[_swizzle_index(rows, k // block, layout)]
    codes = codes.reshape(rows, k // block)
    if ue8m0:
        s = torch.ldexp(torch.ones(codes.shape), codes.to(torch.int32) - 127)
        s = torch.where(codes == 255, torch.tensor(float("nan")), s)
    else:
        s = codes.view(torch.float8_e4m3fn).float()
    if fp4:
        u = q.view(torch.uint8)
        idx = torch.stack((u & 0xF, u >> 4), -1).reshape(rows, k).to(torch.int64)
        lut = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
        v = lut[idx]
    else:
        v = q.float()
    return v * s.repeat_interleave(block, -1)


def _scaled_mm(da, db, alpha, out_dtype, out):
    """alpha * (da @ db^T) in float32, rounded once (alpha one value or one a row)."""
    r = da @ db.T
    if alpha is not None:
        r = r * (alpha.float().reshape(-1, 1) if alpha.numel() > 1 else alpha.float().reshape(()))
    r = r.to(out_dtype)
    if out is None:
        return r
    out.copy_(r)
    return out


def mm_fp4(a, b, a_descale, b_descale, alpha=None, out_dtype=torch.bfloat16, out=None,
           block_size=16, use_8x4_sf_layout=False, backend="auto", use_nvfp4=True,
           enable_pdl=True):
    """test_unified_gemm_fuzz.py's oracle: both operands dequantized (e2m1 times the e4m3
    scale of 16 values, or the ue8m0 one of 32), a @ b in float, times alpha; b (K/2, N) is
    the (N, K/2) weight transposed and b_descale its 128x4 scales transposed."""
    da = _dequant_operand(a, a_descale, block_size, not use_nvfp4, True, 0)
    db = _dequant_operand(b.T, b_descale.T, block_size, not use_nvfp4, True, 0)
    return _scaled_mm(da, db, alpha, out_dtype, out)


def mm_mxfp8(a, b, a_descale, b_descale, out=None, out_dtype=torch.bfloat16,
             use_8x4_sf_layout=False, backend="auto"):
    """The same for float8_e4m3fn operands with ue8m0 scales of 32: 1-D scales in the
    128x4 layout, 2-D linear ones (a's (M, K/32), b's (K/32, N))."""
    la = 2 if a_descale.dim() == 2 else 0
    lb = 2 if b_descale.dim() == 2 else la
    bs = b_descale.T if b_descale.dim() == 2 else b_descale
    da = _dequant_operand(a, a_descale, 32, True, False, la)
    db = _dequant_operand(b.T, bs, 32, True, False, lb)
    return _scaled_mm(da, db, None, out_dtype, out)
