# mate-python: peers
"""test_fi_replay_topk_ragged.py: FlashInfer's top_k_ragged_transform (float32 and bf16 scores, windows shorter than k, row_starts) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; its order is the kernel's own, so another order of a row still passes, while a position outside the top k, a repeated one and a -1 where an index belongs are mismatches at their place; a length past the row and an offset that is not a tensor of the rows are errors naming them."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["top_k_ragged_transform"])
    torch.manual_seed(21)
    x = torch.randn(5, 64)
    offsets = torch.tensor([0, 64, 128, 1000, 7], dtype=torch.int32)
    lengths = torch.tensor([64, 40, 6, 33, 0], dtype=torch.int32)
    fi["top_k_ragged_transform"](x, offsets, lengths, 8)                            # 1
    fi["top_k_ragged_transform"](x.bfloat16(), offsets, lengths - 2 * (lengths > 10).int(), 12,
                                 row_starts=torch.tensor([0, 3, 50, 2, 9], dtype=torch.int32))


flashinfer_main(record)


@functools.cache
def replayed():
    """The two calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 2)


def first():
    return replayed().find("top_k_ragged_transform_call0001")


def mutated(change, dump=None):
    return replayed().mutated(dump or first(), change, inputs=True)


def test_passes():
    replayed().check_passed(["top_k_ragged_transform"])


def test_order():
    """Another order of a row passes."""
    def flip(t, ins):
        t["result"][0] = t["result"][0].flip(0).clone()
        t["result"][1] = t["result"][1].roll(3).clone()
    expect_verdict("rows in another order", mutated(flip), verdict="passed")


def test_wrong_indices():
    """A position outside the top k, one repeated, a -1 where an index belongs."""
    import torch

    def outsider(t, ins):
        row = ins["arg_0"][1, :40]
        t["result"][1, 2] = int(torch.topk(row, 9).indices[8]) + 64
    expect_verdict("the 9th best of row 1", mutated(outsider), "result[1, ")

    def repeated(t, ins):
        t["result"][0, 5] = t["result"][0, 1]
    expect_verdict("a repeated index", mutated(repeated), "result[0, 5]")

    def dropped(t, ins):
        t["result"][2, 3] = -1      # row 2 has 6 positions: they all belong
    expect_verdict("a -1 where an index belongs", mutated(dropped), "result[2, 3]")

    def past(t, ins):
        t["result"][2, 6] = 128 + 6   # -1 after the window's 6 positions
    expect_verdict("an index past the window", mutated(past), "result[2, 6]")


def test_hostile():
    def long(t):
        t["arg_2"][3] = 65
    expect_verdict("a length past the row", replayed().lying(first(), long), "lengths[3] = 65",
                   verdict="error")

    def short(t):
        t["arg_1"] = t["arg_1"][:4].clone()
    expect_verdict("4 offsets for 5 rows", replayed().lying(first(), short),
                   "offsets: 4 elements, 5 needed", verdict="error")


run_cases(test_passes, test_order, test_wrong_indices, test_hostile)
