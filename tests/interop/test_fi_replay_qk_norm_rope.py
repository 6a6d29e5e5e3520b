# mate-python: peers
"""test_fi_replay_qk_norm_rope.py: FlashInfer's fused_qk_rmsnorm_rope (bf16 qkv as tokens and as batch x seq_len; interleaved and NeoX RoPE; YaRN; no norm with float8 e4m3 out, scaled) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; a changed element of Q, K or V is a mismatch at its index; a head_dim the kernel has no form for and heads that do not fill qkv are errors naming them."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases, set_element

DIMS = dict(ppf=2, pph=3, ppw=4, num_frame_channels=16, num_height_channels=24,
            num_width_channels=24, num_heads_q=2, num_heads_k=1, num_heads_v=1, head_dim=64)


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["fused_qk_rmsnorm_rope"])
    torch.manual_seed(23)
    qkv = torch.randn(48, 256).bfloat16()
    qw, kw = (torch.rand(128) + 0.5).bfloat16(), (torch.rand(64) + 0.5).bfloat16()
    fi["fused_qk_rmsnorm_rope"](qkv, qw, kw, **DIMS)                                # 1
    fi["fused_qk_rmsnorm_rope"](qkv.reshape(2, 24, 256), qw, kw, **DIMS, interleave=False,
                                factor=2.0, low=1.0, high=6.0, attention_factor=1.2)
    fi["fused_qk_rmsnorm_rope"](qkv, qw, kw, **DIMS, is_qk_norm=False, output_fp8=True,  # 3
                                output_quant_scale=4.0, v_quant_scale=0.5)


flashinfer_main(record)


@functools.cache
def replayed():
    """The three calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 3)


def find(n):
    return replayed().find("fused_qk_rmsnorm_rope_call%04d" % n)


def test_passes():
    replayed().check_passed(["fused_qk_rmsnorm_rope"])


def test_changed_element():
    fr = replayed()
    expect_verdict("one element of Q", fr.mutated(find(1), set_element(
        "result_0", (30, 1, 17), lambda x: x + 0.25)), "result_0[30, 1, 17]")
    expect_verdict("one element of K, NeoX", fr.mutated(find(2), set_element(
        "result_1", (1, 5, 0, 40), lambda x: x * 2 + 1)), "result_1[1, 5, 0, 40]")
    expect_verdict("one element of V in fp8", fr.mutated(find(3), set_element(
        "result_2", (47, 0, 63), lambda x: x.float() * 4 + 1)), "result_2[47, 0, 63]")


def test_hostile():
    fr = replayed()
    v = fr.lying(find(1), lambda t: None, {"kwarg_head_dim": 100})
    expect_verdict("head_dim 100", v, "head_dim = 100", verdict="error")
    v = fr.lying(find(1), lambda t: None, {"kwarg_num_heads_v": 2})
    expect_verdict("one V head more than qkv holds", v, "qkv: (48, 256)", verdict="error")


run_cases(test_passes, test_changed_element, test_hostile)
