# mate-python: peers
"""test_fi_replay_topk_page_table.py: FlashInfer's top_k_page_table_transform (pages of one score and of four, row_to_batch, row_starts and page_table_row_starts, a page table repeating pages, bf16 scores, out=) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; another order of a row passes, a page entry outside the top k and a -1 where an index belongs are mismatches at their place; a row_to_batch past the page table and page_table_row_starts running past it are errors naming them."""
import functools

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, run_cases


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["top_k_page_table_transform"])
    torch.manual_seed(22)
    x = torch.randn(4, 48)
    table = torch.randint(0, 500, (4, 48), dtype=torch.int32)
    table[1, 10:20] = 7                                  # one page many times
    lengths = torch.tensor([48, 30, 5, 0], dtype=torch.int32)
    fi["top_k_page_table_transform"](x, table, lengths, 6,
                                     torch.tensor([0, 1, 1, 2], dtype=torch.int32))     # 1
    fi["top_k_page_table_transform"](x.bfloat16(), table[:, :12].clone(),
                                     torch.tensor([40, 20, 3, 9], dtype=torch.int32), 10,
                                     row_starts=torch.tensor([0, 8, 40, 1], dtype=torch.int32),
                                     page_table_row_starts=torch.tensor([0, 2, 0, 1],
                                                                        dtype=torch.int32),
                                     page_size=4,
                                     out=torch.empty(4, 10, dtype=torch.int32))


flashinfer_main(record)


@functools.cache
def replayed():
    """The two calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 2)


def find(n):
    return replayed().find("top_k_page_table_transform_call%04d" % n)


def mutated(n, change):
    return replayed().mutated(find(n), change, inputs=True)


def test_passes():
    replayed().check_passed(["top_k_page_table_transform"])


def test_order():
    def flip(t, ins):
        t["result"][0] = t["result"][0].flip(0).clone()
        t["result"][1] = t["result"][1].roll(2).clone()
    expect_verdict("rows in another order", mutated(1, flip), verdict="passed")
    expect_verdict("pages of four in another order", mutated(2, flip), verdict="passed")


def test_wrong_indices():
    import torch

    def outsider(t, ins):
        pos = int(torch.topk(ins["arg_0"][0], 7).indices[6])
        t["result"][0, 3] = int(ins["arg_1"][0, pos])
    expect_verdict("the 7th best of row 0", mutated(1, outsider), "result[0, 3]")

    def dropped(t, ins):
        t["result"][2, 1] = -1      # row 2 has 5 positions: they all belong
    expect_verdict("a -1 where an index belongs", mutated(1, dropped), "result[2, 1]")

    def offset(t, ins):
        t["result"][1, 4] += 1      # the next score position of a page of four
    expect_verdict("a position one past in its page", mutated(2, offset), "result[1, ")


def test_hostile():
    def batch(t):
        t["arg_4"][2] = 4
    expect_verdict("row_to_batch past the table", replayed().lying(find(1), batch),
                   "row_to_batch[2] = 4", verdict="error")

    def starts(t):
        t["kwarg_page_table_row_starts"][1] = 9
    expect_verdict("page_table_row_starts past the table", replayed().lying(find(2), starts),
                   "page_table_row_starts[1] = 9", verdict="error")


run_cases(test_passes, test_order, test_wrong_indices, test_hostile)
