# mate-python: peers
"""test_fi_replay_norm_silu.py: FlashInfer's fused_rmsnorm_silu (bf16 output, and float8 e4m3fn through out=) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; a changed element and a NaN are mismatches at their index."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases, set_element


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["fused_rmsnorm_silu"])
    torch.manual_seed(11)
    x, w = torch.randn(9, 160, dtype=torch.bfloat16), torch.randn(160, dtype=torch.bfloat16)
    fi["fused_rmsnorm_silu"](x, w)                                                  # 1
    fi["fused_rmsnorm_silu"](x, w, 1e-5, out=torch.empty(9, 160, dtype=torch.float8_e4m3fn))


flashinfer_main(record)


@functools.cache
def replayed():
    """The two calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 2)


def test_passes():
    replayed().check_passed()


def test_changed_element():
    fr = replayed()
    expect_verdict("one element", fr.mutated(fr.find("fused_rmsnorm_silu_call0001"),
                   set_element("result", (4, 33), lambda x: x + 0.5)), "result[4, 33]")


def test_nan_in_fp8():
    fr = replayed()
    expect_verdict("a NaN in the fp8 output", fr.mutated(fr.find("fused_rmsnorm_silu_call0002"),
                   set_element("result", (8, 159), lambda x: float("nan"))), "result[8, 159]")


run_cases(test_passes, test_changed_element, test_nan_in_fp8)
