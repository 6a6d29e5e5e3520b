# mate-python: peers
"""test_fi_replay_layernorm.py: FlashInfer's layernorm (bf16 input, float32 gemma and beta, as its kernel takes them; float16 too) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; a changed element and a NaN are mismatches at their index; a gemma shorter than the rows, file and record alike, is an error naming it."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases, set_element


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["layernorm"])
    torch.manual_seed(12)
    x = (torch.randn(7, 192) * 3 + 1.5).bfloat16()
    g, b = torch.randn(192), torch.randn(192)
    fi["layernorm"](x, g, b)                                                        # 1
    fi["layernorm"](x.half(), g, b, 1e-5)


flashinfer_main(record)


@functools.cache
def replayed():
    """The two calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 2)


def test_passes():
    replayed().check_passed(["layernorm"])


def test_changed_element():
    fr = replayed()
    expect_verdict("one element", fr.mutated(fr.find("layernorm_call0001"),
                   set_element("result", (5, 101), lambda x: x + 0.25)), "result[5, 101]")
    expect_verdict("a NaN", fr.mutated(fr.find("layernorm_call0002"),
                   set_element("result", (0, 0), lambda x: float("nan"))), "result[0, 0]")


def test_short_gemma():
    """A consistent lie: gemma of 191 elements in the file and in the record."""
    def short(t):
        t["arg_1"] = t["arg_1"][:191].clone()
    fr = replayed()
    expect_verdict("gemma of 191 elements", fr.lying(fr.find("layernorm_call0001"), short),
                   "gemma: dimension 0 is 191, expected 192", verdict="error")


run_cases(test_passes, test_changed_element, test_short_gemma)
