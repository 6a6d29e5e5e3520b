# mate-python: peers
"""test_fi_replay_quant_gemm.py: FlashInfer's block-scaled GEMMs mm_fp4 (NVFP4 with a global alpha, float16 into out=, a per-row alpha, MXFP4 without one, the float4_e2m1fn_x2 and float8_e4m3fn dtypes) and mm_mxfp8 (128x4 and linear scales), called on torch references (its tests' reference math) under FlashInfer's real decorator at level 10, replay as passed within the reduction bound of their dequantized operands; a changed output element is a mismatch at its index; scales that do not fit, a K that does not match, a block size FlashInfer refuses and trtllm's shuffled weight are errors or unsupported, naming them."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases, set_element

NAMES = ["mm_fp4", "mm_mxfp8"]


def record():
    import torch

    from flashinfer_peer import load_api_logging
    api = load_api_logging()
    from flashinfer.tllm_enums import SfLayout
    from flashinfer_quant import decorate
    import flashinfer_quant as ref

    fi = decorate(api, NAMES)
    torch.manual_seed(39)
    x = torch.randn(200, 256).bfloat16()                  # 200 rows: the 128x4 layout pads to 256
    w = torch.randn(144, 256).bfloat16()                  # N 144: padded to 256 too
    gx = (448 * 6 / x.float().abs().amax()).reshape(1)
    gw = (448 * 6 / w.float().abs().amax()).reshape(1)
    xq, xs = ref.nvfp4_quantize(x, gx)
    wq, ws = ref.nvfp4_quantize(w, gw)
    alpha = (1 / (gx * gw)).reshape(())
    fi["mm_fp4"](xq, wq.T, xs, ws.T, alpha)                                        # fp4 1
    out = torch.empty(200, 144, dtype=torch.float16)
    fi["mm_fp4"](xq, wq.T, xs, ws.T, alpha, torch.float16, out)                    # into out=
    rows = torch.rand(200) * alpha + alpha / 2                                     # per-token alpha
    fi["mm_fp4"](xq.view(torch.float4_e2m1fn_x2), wq.T.view(torch.float4_e2m1fn_x2),
                 xs.view(torch.float8_e4m3fn), ws.T, rows, backend="cute-dsl")
    mq, ms = ref.mxfp4_quantize(x[:33])
    nq, ns = ref.mxfp4_quantize(w)
    fi["mm_fp4"](mq, nq.T, ms, ns.T, None, block_size=32, use_nvfp4=False)         # fp4 4: MXFP4
    aq, asf = ref.mxfp8_quantize(x[:40])
    bq, bsf = ref.mxfp8_quantize(w[:128])
    fi["mm_mxfp8"](aq, bq.T, asf, bsf)                                             # mxfp8 1
    aq, asf = ref.mxfp8_quantize(x[:40], False)
    bq, bsf = ref.mxfp8_quantize(w[:128], False)
    fi["mm_mxfp8"](aq, bq.T, asf.reshape(40, 8), bsf.reshape(128, 8).T,
                   out_dtype=torch.float16)                                        # linear


flashinfer_main(record)


@functools.cache
def replayed():
    """The six calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 6)


def find(name, n):
    return replayed().find("%s_call%04d" % (name, n))


def test_passes():
    fr = replayed()
    fr.check_passed(NAMES)


def bump(v):
    return v * 1.25 + 0.5


def test_changed_output():
    fr = replayed()
    expect_verdict("an NVFP4 product", fr.mutated(find("mm_fp4", 1),
                   set_element("result", (150, 140), bump)), "result[150, 140]")
    expect_verdict("a float16 product into out=", fr.mutated(find("mm_fp4", 2),
                   set_element("result", (0, 0), bump)), "result[0, 0]")
    expect_verdict("a per-token product", fr.mutated(find("mm_fp4", 3),
                   set_element("result", (199, 3), bump)), "result[199, 3]")
    expect_verdict("an MXFP4 product", fr.mutated(find("mm_fp4", 4),
                   set_element("result", (32, 100), bump)), "result[32, 100]")
    expect_verdict("an MXFP8 product", fr.mutated(find("mm_mxfp8", 1),
                   set_element("result", (39, 127), bump)), "result[39, 127]")
    expect_verdict("linear MXFP8 scales", fr.mutated(find("mm_mxfp8", 2),
                   set_element("result", (7, 8), bump)), "result[7, 8]")


def ulp_up(v):
    import torch
    return (v.view(torch.int16) + 1).view(torch.bfloat16)


def test_bound():
    """A product is not compared bit for bit: one bfloat16 unit in the last place passes,
    within the reduction bound it names."""
    v = replayed().mutated(find("mm_fp4", 1), set_element("result", (5, 5), ulp_up))
    expect_verdict("one ulp", v, "reduction bound 2 K u s (|A| |B|)ij (K 256)", verdict="passed")


def test_hostile():
    fr = replayed()
    v = fr.lying(find("mm_fp4", 1), lambda t: t.update(arg_3=t["arg_3"][:-4].clone()))
    expect_verdict("b_descale short", v, "b_descale is (12, 256), expected (16, 256)",
                   verdict="error")
    v = fr.lying(find("mm_fp4", 1), lambda t: t.update(arg_1=t["arg_1"][:120].clone()))
    expect_verdict("K mismatch", v, "K dimension mismatch", verdict="error")
    v = fr.lying(find("mm_fp4", 4), lambda t: None, {"kwarg_block_size": 16})
    expect_verdict("mxfp4 in blocks of 16", v, "mxfp4 only supports block_size = 32",
                   verdict="error")
    v = fr.lying(find("mm_fp4", 1), lambda t: None, {"kwarg_backend": "trtllm"})
    expect_verdict("trtllm", v, "shuffle_matrix_a", verdict="unsupported")
    v = fr.lying(find("mm_mxfp8", 1), lambda t: t.update(arg_2=t["arg_2"][:-1].clone()))
    expect_verdict("a_descale short", v, "scale", verdict="error")
    v = fr.lying(find("mm_mxfp8", 2), lambda t: t.update(arg_2=t["arg_2"][:, :7].clone()))
    expect_verdict("linear a_descale narrow", v, "a_descale is (40, 7), expected (40, 8)",
                   verdict="error")


run_cases(test_passes, test_changed_output, test_bound, test_hostile)
