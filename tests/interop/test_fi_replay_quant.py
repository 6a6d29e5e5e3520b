# mate-python: peers
"""test_fi_replay_quant.py: FlashInfer's fp4_quantize (NVFP4 in the 128x4, 8x4 and linear scale layouts, an inverted global scale, a column-major input, MXFP4, a float8_e4m3fn input to NVFP4 and MXFP4), nvfp4_quantize, mxfp4_quantize, mxfp8_quantize (padded to an alignment), silu_and_mul_nvfp4_quantize (silu(gate) * up rounded to the input's dtype, then NVFP4: the three layouts, a 3-D float16 input), mxfp4_dequantize and mxfp4_dequantize_host (a NaN scale), called on torch references (its tests' reference math; for a float8 input, its kernel's) under FlashInfer's real decorator at level 10, replay as passed, compared exactly; a changed code, scale or value is a mismatch at its index; an e2m1 code on the other side of a tie passes and one further does not; scales that do not fit the layout, a block size or row FlashInfer refuses and an unreplayed option are errors or unsupported, naming them."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases, set_element

NAMES = ["fp4_quantize", "nvfp4_quantize", "mxfp4_quantize", "mxfp8_quantize", "mxfp4_dequantize",
         "mxfp4_dequantize_host", "silu_and_mul_nvfp4_quantize"]


def record():
    import torch

    from flashinfer_peer import load_api_logging
    api = load_api_logging()
    from flashinfer.tllm_enums import SfLayout
    from flashinfer_quant import decorate
    import flashinfer_quant as ref

    fi = decorate(api, NAMES)
    torch.manual_seed(39)
    x = (torch.randn(200, 128) * 3).bfloat16()         # 200 rows: the 128x4 layout pads to 256
    gs = (448 * 6 / x.float().abs().amax()).reshape(1)
    fi["fp4_quantize"](x, gs)                                                       # fp4 1
    fi["fp4_quantize"](x.half(), gs, is_sf_swizzled_layout=False)
    fi["fp4_quantize"](x[:48, :64].t().contiguous().t(), 1 / gs, is_sf_8x4_layout=True,
                       is_global_scale_inversed=True)                              # column major
    fi["fp4_quantize"](x, None, sf_vec_size=32, sf_use_ue8m0=True)                 # fp4 4: MXFP4
    fi["nvfp4_quantize"](x, gs, SfLayout.layout_linear)                            # nvfp4 1
    fi["nvfp4_quantize"](x.reshape(2, 100, 128), gs, sfLayout=SfLayout.layout_8x4)
    fi["mxfp4_quantize"](x)                                                         # mxfp4 1
    tie = torch.zeros(1, 64).bfloat16()
    tie[0, 0], tie[0, 1], tie[0, 2] = 6, 0.75, -2.5   # scale 1: 0.75 and -2.5 are midpoints
    fi["mxfp4_quantize"](tie, sfLayout=SfLayout.layout_linear)
    fi["mxfp8_quantize"](x)                                                         # mxfp8 1
    fi["mxfp8_quantize"](x[:, :96].half(), False, 64)                               # K 96 -> 128
    fi["mxfp8_quantize"](x, sf_swizzle_layout=SfLayout.layout_8x4)
    q, sf = ref.mxfp4_quantize(x)
    fi["mxfp4_dequantize"](q, sf)                                                   # dequant 1
    q, sf = ref.mxfp4_quantize(x[:7], sfLayout=SfLayout.layout_linear)
    fi["mxfp4_dequantize"](q, sf, SfLayout.layout_linear)
    fi["mxfp4_dequantize_host"](q, sf)                                              # host 1
    sf16 = torch.randint(100, 150, (7, 8), dtype=torch.uint8)
    sf16[2, 3], sf16[4, 0] = 255, 0                                                 # NaN, 2^-127
    fi["mxfp4_dequantize_host"](q, sf16, 16)
    g = torch.randn(200, 128).bfloat16()                                            # gate, up
    h = torch.nn.functional.silu(g[:, :64].float()) * g[:, 64:].float()
    gs = (448 * 6 / h.abs().amax()).reshape(1)
    fi["silu_and_mul_nvfp4_quantize"](g, gs)                                        # silu 1
    fi["silu_and_mul_nvfp4_quantize"](g, gs, 16, False)                             # linear
    fi["silu_and_mul_nvfp4_quantize"](g[:198].reshape(2, 99, 128).half(), gs, is_sf_8x4_layout=True)
    x8 = (x * 40).to(torch.float8_e4m3fn)                                           # fp8 input
    fi["fp4_quantize"](x8, torch.tensor([2.5]))                                     # fp4 5
    fi["fp4_quantize"](x8[:40], None, 32, True, False)                              # MXFP4, linear


flashinfer_main(record)


@functools.cache
def replayed():
    """The twenty calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 20)


def find(name, n):
    return replayed().find("%s_call%04d" % (name, n))


def xor(key, idx, bits):
    return set_element(key, idx, lambda v: v ^ bits)


def test_passes():
    fr = replayed()
    fr.check_passed(NAMES)
    for d, v in sorted(fr.verdicts.items()):
        expect_verdict(d, v, "bit-exact", verdict="passed")


def test_changed_code():
    """Codes two steps away (never a tie's neighbour) and a scale one step away."""
    fr = replayed()
    expect_verdict("an e2m1 pair", fr.mutated(find("fp4_quantize", 1),
                   xor("result_0", (150, 33), 0x22)), "result_0[150, 33]")
    expect_verdict("an e4m3 scale", fr.mutated(find("fp4_quantize", 1),
                   set_element("result_1", (130, 5), lambda v: v + 1)), "result_1[130, 5]")
    expect_verdict("a padding scale", fr.mutated(find("fp4_quantize", 1),
                   set_element("result_1", (255, 7), lambda v: v + 1)), "result_1[255, 7]")
    expect_verdict("column major, transposed", fr.mutated(find("fp4_quantize", 3),
                   xor("result_0", (20, 40), 0x02)), "result_0[20, 40]")
    expect_verdict("a ue8m0 scale", fr.mutated(find("mxfp4_quantize", 1),
                   set_element("result_1", (3, 2), lambda v: v - 1)), "result_1[3, 2]")
    expect_verdict("linear nvfp4", fr.mutated(find("nvfp4_quantize", 1),
                   xor("result_0", (199, 63), 0x20)), "result_0[199, 63]")
    expect_verdict("an fp8 input's code", fr.mutated(find("fp4_quantize", 5),
                   xor("result_0", (77, 9), 0x22)), "result_0[77, 9]")
    expect_verdict("an fp8 input's scale", fr.mutated(find("fp4_quantize", 5),
                   set_element("result_1", (100, 2), lambda v: v + 1)), "result_1[100, 2]")
    expect_verdict("an fp8 input's ue8m0 scale", fr.mutated(find("fp4_quantize", 6),
                   set_element("result_1", (39, 3), lambda v: v + 1)), "result_1[39, 3]")
    expect_verdict("a silu code", fr.mutated(find("silu_and_mul_nvfp4_quantize", 1),
                   xor("result_0", (150, 20), 0x22)), "result_0[150, 20]")
    expect_verdict("a silu scale", fr.mutated(find("silu_and_mul_nvfp4_quantize", 2),
                   set_element("result_1", (7, 3), lambda v: v + 1)), "result_1[7, 3]")
    expect_verdict("a silu 8x4 padding scale", fr.mutated(find("silu_and_mul_nvfp4_quantize", 3),
                   set_element("result_1", (199, 1), lambda v: v + 1)), "result_1[199, 1]")


def test_changed_fp8():
    import torch
    fr = replayed()
    expect_verdict("an e4m3 element one unit up", fr.mutated(find("mxfp8_quantize", 1),
                   set_element("result_0", (17, 100), lambda v: (v.view(torch.uint8) + 2)
                               .view(torch.float8_e4m3fn))), "result_0[17, 100]")
    expect_verdict("a padded element", fr.mutated(find("mxfp8_quantize", 2),
                   set_element("result_0", (3, 120), lambda v: torch.tensor(1.0)
                               .to(torch.float8_e4m3fn))), "result_0[3, 120]")
    expect_verdict("a dequantized value", fr.mutated(find("mxfp4_dequantize", 2),
                   set_element("result", (6, 60), lambda v: v * 2 + 1)), "result[6, 60]")
    expect_verdict("a host-dequantized value", fr.mutated(find("mxfp4_dequantize_host", 2),
                   set_element("result", (3, 20), lambda v: v * 2 + 1)), "result[3, 20]")
    expect_verdict("a NaN made a number", fr.mutated(find("mxfp4_dequantize_host", 2),
                   set_element("result", (2, 50), lambda v: 1.0)), "result[2, 50]")


def test_ties():
    """0.75 and -2.5 times the scale 1 are midpoints of e2m1 values: the recorded code may be
    either neighbour (FlashInfer's approximate reciprocals), never a third value."""
    fr = replayed()
    d = find("mxfp4_quantize", 2)
    v = fr.mutated(d, set_element("result_0", (0, 0), lambda b: (b & 0x0F) | 0x10))  # 0.75 -> 0.5
    expect_verdict("0.75 as 0.5", v, "", verdict="passed")
    v = fr.mutated(d, set_element("result_0", (0, 1), lambda b: (b & 0xF0) | 0x0D))  # -2.5 -> -3
    expect_verdict("-2.5 as -3", v, "", verdict="passed")
    v = fr.mutated(d, set_element("result_0", (0, 0), lambda b: (b & 0x0F) | 0x30))  # 0.75 -> 1.5
    expect_verdict("0.75 as 1.5", v, "result_0[0, 0]")


def test_hostile():
    import torch
    fr = replayed()
    v = fr.lying(find("mxfp4_dequantize", 2), lambda t: t.update(arg_1=t["arg_1"][:-1].clone()))
    expect_verdict("a scale short", v, "a_sf: 24 scale bytes, expected 28", verdict="error")
    v = fr.lying(find("mxfp4_dequantize", 1), lambda t: None, {"arg_2": 5})
    expect_verdict("no such layout", v, "sfLayout = 5", verdict="error")
    v = fr.lying(find("fp4_quantize", 2), lambda t: None, {"arg_2": 24})
    expect_verdict("sf_vec_size 24", v, "sf_vec_size = 24", verdict="error")
    v = fr.lying(find("nvfp4_quantize", 1), lambda t: t.update(arg_0=t["arg_0"][:, :120].clone()))
    expect_verdict("rows of 120", v, "120 elements a row", verdict="error")
    v = fr.lying(find("mxfp4_dequantize_host", 2), lambda t: None, {"arg_2": 24})
    expect_verdict("group_size 24", v, "with group_size 24 does not cover", verdict="error")
    v = fr.lying(find("nvfp4_quantize", 2), lambda t: None, {"kwarg_do_shuffle": True})
    expect_verdict("do_shuffle", v, "do_shuffle=True", verdict="unsupported")
    v = fr.lying(find("fp4_quantize", 5), lambda t: t.update(arg_0=t["arg_0"].to(torch.float8_e5m2)))
    expect_verdict("a float8_e5m2 input", v, "dtype float8_e5m2", verdict="unsupported")
    v = fr.lying(find("silu_and_mul_nvfp4_quantize", 1),
                 lambda t: t.update(arg_0=t["arg_0"][:, :120].clone()))
    expect_verdict("silu rows of 120", v, "K a positive multiple of 16", verdict="error")
    v = fr.lying(find("silu_and_mul_nvfp4_quantize", 2), lambda t: None, {"arg_2": 32})
    expect_verdict("silu blocks of 32", v, "sf_vec_size can only be 16", verdict="error")


run_cases(test_passes, test_changed_code, test_changed_fp8, test_ties, test_hostile)
