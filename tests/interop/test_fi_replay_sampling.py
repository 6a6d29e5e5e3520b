# mate-python: peers
"""test_fi_replay_sampling.py: FlashInfer's sampling APIs called on torch references under FlashInfer's real decorator at level 10 replay as passed: top_k_renorm_probs, top_p_renorm_probs and top_k_mask_logits recomputed (scalar and per-row int32/float32 parameters), top_k and the seven random samplers checked by property; another allowed draw (or another order of an unsorted top_k) still passes, a forbidden token is a mismatch at its index, as are a changed element and a NaN of a filter's result."""
import functools
import os

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases


def record():
    import torch

    from flashinfer_ops21 import SAMPLING, decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), SAMPLING)
    torch.manual_seed(5)
    B, V = 6, 50
    logits = torch.randn(B, V) * 3
    probs = torch.softmax(logits, -1)
    ks = torch.tensor([1, 5, 50, 0, 3, 10], dtype=torch.int32)
    ps = torch.tensor([0.5, 0.9, 1.0, 0.1, 0.7, 0.95], dtype=torch.float32)
    fi["top_k_renorm_probs"](probs, 7)                                     # 1
    fi["top_k_renorm_probs"](probs, ks)
    fi["top_p_renorm_probs"](probs, 0.8)                                   # 3
    fi["top_p_renorm_probs"](probs, ps)
    fi["top_k_mask_logits"](logits, 4)                                     # 5
    fi["top_k_mask_logits"](logits.bfloat16(), ks)
    fi["top_k"](logits, 8)                                                 # 7
    fi["top_k"](logits.half(), 5, sorted=True)
    idx = torch.tensor([5, 0, 0, 2], dtype=torch.int64)
    fi["sampling_from_probs"](probs)                                       # 9
    fi["sampling_from_probs"](probs, idx)
    fi["sampling_from_logits"](logits, deterministic=False)               # 11
    fi["top_k_sampling_from_probs"](probs, 3)
    fi["top_k_sampling_from_probs"](probs, ks)                            # 13
    fi["top_p_sampling_from_probs"](probs, 0.3)
    fi["top_p_sampling_from_probs"](probs, ps[:4], idx)                   # 15
    fi["min_p_sampling_from_probs"](probs, 0.2)
    fi["top_k_top_p_sampling_from_probs"](probs, 4, 0.6)                  # 17
    fi["top_k_top_p_sampling_from_probs"](probs, ks, ps, filter_apply_order="joint")
    fi["top_k_top_p_sampling_from_logits"](logits, 5, 0.5)                # 19


flashinfer_main(record)

import torch  # noqa: E402

from flashinfer_ops21 import SAMPLING  # noqa: E402


@functools.cache
def replayed():
    """The 19 calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 19)


def mutated(dump, change):
    """The verdict of a copy of dump whose outputs went through change(outputs, inputs)."""
    return replayed().mutated(dump, change, inputs=True)


def test_passes():
    replayed().check_passed(SAMPLING)


def bump(t, ins):
    t["result"][3, 11] += 0.25


def nan(t, ins):
    t["result"][4, 0] = float("nan")


def test_filter_result():
    """A filter's result: one element, a NaN."""
    renorm = replayed().find("top_k_renorm_probs_call0002")
    expect_verdict("one element of top_k_renorm_probs", mutated(renorm, bump), "result[3, 11]")
    expect_verdict("a NaN in top_k_renorm_probs", mutated(renorm, nan), "result[4, 0]")


def redraw(allowed_of):
    def change(t, ins):
        s = t["result"]
        for i in range(s.numel()):
            ok = allowed_of(ins, i)
            others = [j for j in ok if j != int(s[i])]
            if others:
                s[i] = others[-1]
    return change


def top_k3(ins, i):
    return torch.topk(ins["arg_0"][i], 3).indices.tolist()


def forbid(row, tok):
    def change(t, ins):
        t["result"][row] = tok
    return change


def test_sampler_draws():
    """A sampler: another allowed draw passes, a forbidden token does not."""
    root, find = replayed().root, replayed().find
    tk = find("top_k_sampling_from_probs_call0001")
    expect_verdict("another draw inside top_k=3", mutated(tk, redraw(top_k3)), verdict="passed")
    probs = torch.load(os.path.join(root, tk, "inputs.pt"), weights_only=True)["arg_0"]
    fourth = int(torch.topk(probs[2], 4).indices[3])
    expect_verdict("the 4th most likely token under top_k=3", mutated(tk, forbid(2, fourth)), "result[2]")
    expect_verdict("a token past the vocabulary", mutated(tk, forbid(0, 50)), "result[0]")
    tp = find("top_p_sampling_from_probs_call0001")
    least = int(torch.argmin(probs[1]))
    expect_verdict("the least likely token under top_p=0.3", mutated(tp, forbid(1, least)), "result[1]")
    mp = find("min_p_sampling_from_probs_call0001")
    expect_verdict("the least likely token under min_p=0.2", mutated(mp, forbid(1, least)), "result[1]")
    tkp = find("top_k_top_p_sampling_from_probs_call0002")     # per-row k = [1, 5, 50, 0, 3, 10]
    second = int(torch.topk(probs[0], 2).indices[1])
    expect_verdict("a second token where top_k is 1", mutated(tkp, forbid(0, second)), "result[0]")


def reorder(t, ins):
    t["result_0"] = t["result_0"].flip(-1).clone()
    t["result_1"] = t["result_1"].flip(-1).clone()


def outsider(t, ins):
    x = ins["arg_0"]
    out = int(torch.topk(x[2], 9).indices[8])
    t["result_1"][2, 4] = out
    t["result_0"][2, 4] = x[2, out]


def test_top_k_order():
    """top_k: another order of an unsorted top-k passes; a token outside it does not."""
    tk7 = replayed().find("top_k_call0001")
    expect_verdict("an unsorted top_k in another order", mutated(tk7, reorder), verdict="passed")
    expect_verdict("a token outside the top 8", mutated(tk7, outsider), "result_1[2, ")


run_cases(test_passes, test_filter_result, test_sampler_draws, test_top_k_order)
