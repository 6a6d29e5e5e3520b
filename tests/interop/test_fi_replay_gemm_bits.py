# mate-python: peers
"""test_fi_replay_gemm_bits.py: FlashInfer's mm_bf16 (with and without bias, out=), bmm_bf16, mm_fp8 (alpha, the unprocessed (n, k) weight) and bmm_fp8 (A_scale, B_scale, column-major B), packbits and segment_packbits (both bit orders, an empty segment) called on torch references under FlashInfer's real decorator at level 10 replay as passed; mm_fp8's shuffled trtllm weight is unsupported with the reason; a changed element, a NaN, a scale, alpha and a shape are mismatches that name the place."""
import functools

from mate_test import FlashinferReplay, check, expect_verdict, flashinfer_main, run_cases, set_element


def record():
    import torch

    from flashinfer_ops21 import GEMM_BITS, decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), GEMM_BITS)
    torch.manual_seed(3)
    bf = torch.bfloat16
    a, w = torch.randn(6, 32, dtype=bf), torch.randn(40, 32, dtype=bf)
    fi["mm_bf16"](a, w.t())                                               # 1: column-major b
    fi["mm_bf16"](a, w.t(), bias=torch.randn(40, dtype=bf))               # 2
    fi["mm_bf16"](a, w.t(), out=torch.empty(6, 40, dtype=torch.float16),
                  out_dtype=torch.float16)                                # 3
    fi["bmm_bf16"](torch.randn(3, 5, 16, dtype=bf), torch.randn(3, 24, 16, dtype=bf).transpose(1, 2))
    e4 = torch.float8_e4m3fn
    a8, w8 = torch.randn(5, 64).to(e4), torch.randn(24, 64).to(e4)
    fi["mm_fp8"](a8, w8, torch.tensor(0.25), backend="cublas")            # 5
    try:
        fi["mm_fp8"](a8, torch.randn(1, 24, 64).to(e4), torch.tensor(1.0))    # 6: trtllm layout
    except NotImplementedError:
        pass
    A8 = torch.randn(2, 4, 64).to(e4)
    B8 = torch.randn(2, 16, 64).to(torch.float8_e5m2).transpose(1, 2)     # (b, k, n) column major
    fi["bmm_fp8"](A8, B8, torch.tensor(0.5), torch.tensor(2.0), bf)       # 7
    bits = torch.rand(37) > 0.5
    fi["packbits"](bits)                                                  # 8
    fi["packbits"](bits, "little")
    fi["segment_packbits"](bits, torch.tensor([0, 9, 9, 30, 37], dtype=torch.int32))   # 10
    fi["segment_packbits"](bits, torch.tensor([0, 16, 37]), bitorder="little")


flashinfer_main(record)

from flashinfer_ops21 import GEMM_BITS  # noqa: E402


@functools.cache
def replayed():
    """The 11 calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 11)


def test_passes():
    """every call passes but mm_fp8 on the shuffled trtllm weight, unsupported"""
    fr = replayed()
    trtllm = fr.find("mm_fp8_call0002")
    fr.check_passed(GEMM_BITS, but=(trtllm,))
    v = fr.verdicts.get(trtllm, {})
    check(v.get("verdict") == "unsupported" and "prepare_low_latency_gemm_weights" in (v.get("message") or ""),
          "mm_fp8 on the shuffled weight: %s %s" % (v.get("verdict"), v.get("message")))


def test_mutations():
    fr = replayed()
    find = fr.find
    expect_verdict("one element of mm_bf16 with bias", fr.mutated(find("mm_bf16_call0002"),
                   set_element("result", (4, 33), lambda x: x + 0.5)), "result[4, 33]")
    expect_verdict("a NaN in bmm_bf16", fr.mutated(find("bmm_bf16_call0001"),
                   set_element("result", (2, 3, 20), lambda x: float("nan"))), "result[2, 3, 20]")
    expect_verdict("A_scale of bmm_fp8 doubled", fr.mutated(find("bmm_fp8_call0001"),
                   set_element("arg_2", (), lambda x: x * 2), "inputs.pt"), "result[")
    expect_verdict("alpha of mm_fp8 changed", fr.mutated(find("mm_fp8_call0001"),
                   set_element("arg_2", (), lambda x: x * 0.5), "inputs.pt"), "result[")


def reshape(t):
    t["result"] = t["result"].reshape(40, 6).clone()


def test_changed_shape():
    """the file no longer matches its record's tensor_details: an error naming the file"""
    fr = replayed()
    expect_verdict("a changed shape", fr.mutated(fr.find("mm_bf16_call0001"), reshape), "another shape in the file",
                   "error")


def test_packbits_mutations():
    fr = replayed()
    expect_verdict("one bit of packbits", fr.mutated(fr.find("packbits_call0002"),
                   set_element("result", 2, lambda x: x ^ 4)), "result[2]")
    expect_verdict("new_indptr of segment_packbits", fr.mutated(fr.find("segment_packbits_call0001"),
                   set_element("result_1", 3, lambda x: x + 1)), "result_1[3]")


run_cases(test_passes, test_mutations, test_changed_shape, test_packbits_mutations)
