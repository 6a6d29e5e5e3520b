# mate-python: peers
"""test_fi_replay_spec.py: FlashInfer's chain_speculative_sampling called on a torch reference under FlashInfer's real decorator at level 10 replays as passed (float32 and bfloat16 probabilities, int64 drafts, counters given to add to); its draws are random, so it is judged by property: another token the rejection could give still passes, a token it could not give, a changed draft, an emitted count off by one and an accepted count past what the draws allow are mismatches at their index; a draft token past the vocabulary and a target_probs of the wrong shape are errors naming them."""
import functools

from mate_test import FlashinferReplay, check, expect_verdict, flashinfer_main, run_cases


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["chain_speculative_sampling"])
    torch.manual_seed(3)
    B, n, V = 6, 4, 24
    draft = torch.softmax(torch.randn(B, n, V) * 2, -1)
    # the target near the draft: some drafts kept, some rejected
    target = torch.softmax(torch.randn(B, n + 1, V) * 2, -1)
    target[:, :n] = 0.5 * target[:, :n] + 0.5 * draft
    ids = torch.multinomial(draft.reshape(-1, V), 1).reshape(B, n).int()
    fi["chain_speculative_sampling"](draft, ids, target)                                # 1
    fi["chain_speculative_sampling"](draft.bfloat16(), ids.long(), target.bfloat16(),
                                     torch.tensor([2, 0, 1, 5, 0, 3], dtype=torch.int32),
                                     torch.tensor([1, 1, 0, 0, 7, 2], dtype=torch.int32))


flashinfer_main(record)

import torch  # noqa: E402


@functools.cache
def replayed():
    """The two calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 2)


def first():
    return replayed().find("chain_speculative_sampling_call0001")


def mutated(change, fname="outputs.pt"):
    """The verdict of a copy of the first call whose outputs went through
    change(outputs, inputs) (fname "inputs.pt": change(inputs, inputs))."""
    return replayed().mutated(first(), change, fname=fname, inputs=True)


def emitted_rows(t):
    """{row: the drafts kept} of the recorded tokens."""
    out = t["result_0"]
    return {r: int((out[r] != -1).sum()) - 1 for r in range(out.size(0))}


def test_passes():
    replayed().check_passed(["chain_speculative_sampling"])
    t = torch.load("%s/%s/outputs.pt" % (replayed().root, first()), weights_only=True)
    kept = emitted_rows(t)
    check(any(k < 4 for k in kept.values()) and any(k > 0 for k in kept.values()),
          "rows with drafts kept and rejected: %s" % kept)


def rejected_row(t):
    """The first row whose recorded tokens stop at a rejected draft: (row, its place)."""
    for r, k in emitted_rows(t).items():
        if k < t["result_0"].size(1) - 1:
            return r, k
    raise AssertionError("no rejected draft")


def redraw(allowed):
    """A change: the token redrawn at the first rejection becomes another token
    relu(target - draft) > 0 allows (allowed) or forbids."""
    def change(t, ins):
        r, k = rejected_row(t)
        rest = ins["arg_2"][r, k].float() - ins["arg_0"][r, k].float()
        cands = [j for j in range(rest.numel()) if (rest[j] > 0) == allowed and
                 j != int(t["result_0"][r, k])]
        t["result_0"][r, k] = cands[-1]
    return change


def test_redraw():
    """Another token the rejection could give passes, one it could not give does not."""
    expect_verdict("another redraw of positive target - draft", mutated(redraw(True)),
                   verdict="passed")
    v = mutated(redraw(False))
    t = torch.load("%s/%s/outputs.pt" % (replayed().root, first()), weights_only=True)
    r, k = rejected_row(t)
    expect_verdict("a redraw where target <= draft", v, "result_0[%d, %d]" % (r, k))


def test_counts():
    """A kept draft changed, the emitted count off by one, an accepted count past the drafts."""
    def kept_draft(t, ins):
        r = max(emitted_rows(t).items(), key=lambda kv: kv[1])[0]
        t["result_0"][r, 0] = (int(t["result_0"][r, 0]) + 1) % ins["arg_0"].size(2)

    t = torch.load("%s/%s/outputs.pt" % (replayed().root, first()), weights_only=True)
    r = max(emitted_rows(t).items(), key=lambda kv: kv[1])[0]
    expect_verdict("a kept draft changed", mutated(kept_draft), "result_0[%d, 0]" % r)

    def emitted(t, ins):
        t["result_2"][3] += 1
    expect_verdict("an emitted count off by one", mutated(emitted), "result_2[3]")

    def accepted(t, ins):
        t["result_1"][2] = ins["arg_1"].size(1) + 1
    expect_verdict("more accepted than drafts", mutated(accepted), "result_1[2]")


def test_hostile():
    """A draft token past the vocabulary, a target of the wrong shape: errors naming them."""
    def past(t, ins):
        t["arg_1"][1, 2] = 999
    expect_verdict("a draft token past the vocabulary", mutated(past, "inputs.pt"),
                   "draft_token_ids[1, 2] = 999", verdict="error")

    def short(t):
        t["arg_2"] = t["arg_2"][:, :-1].clone()
    expect_verdict("target_probs one row short, file and record alike",
                   replayed().lying(first(), short), "target_probs: (6, 4, 24)", verdict="error")


run_cases(test_passes, test_redraw, test_counts, test_hostile)
