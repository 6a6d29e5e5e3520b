# mate-python: peers
"""test_fi_replay_rope.py: FlashInfer's ten RoPE APIs (apply_rope, apply_rope_pos_ids, apply_llama31_rope, apply_llama31_rope_pos_ids, apply_rope_with_cos_sin_cache and their _inplace forms) called on torch references under FlashInfer's real decorator at level 10 replay on mate's CPU kernel as passed (f32, f16, bf16; interleaved and not; partial rotary_dim; GQA; an empty segment; Llama 3.1 smoothing past old_context_len); a changed element, a NaN, a changed in-place tensor and a changed position are each a mismatch that names the place, and a result whose shape in the file differs from its record an error naming the file."""
import functools
import json
import os

from mate_test import FlashinferReplay, check, expect_verdict, flashinfer_main, replay_jsonl, run_cases


def record():
    """The child: FLASHINFER_* are set; calls the decorated torch references."""
    import torch

    from flashinfer_ops21 import ROPE, decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ROPE)
    torch.manual_seed(21)
    nnz = 7
    pos = torch.tensor([0, 1, 2, 40, 41, 1000, 3], dtype=torch.int32)
    for dt in (torch.float32, torch.float16, torch.bfloat16):                 # calls 1-3
        q, k = torch.randn(nnz, 4, 64, dtype=dt), torch.randn(nnz, 2, 64, dtype=dt)
        fi["apply_rope_pos_ids"](q, k, pos)
    indptr = torch.tensor([0, 3, 3, 7], dtype=torch.int32)                    # an empty segment
    offsets = torch.tensor([5, 0, 100], dtype=torch.int32)
    q, k = torch.randn(nnz, 8, 64, dtype=torch.bfloat16), torch.randn(nnz, 1, 64, dtype=torch.bfloat16)
    fi["apply_rope"](q, k, indptr, offsets, rotary_dim=32, interleave=True)   # 4
    fi["apply_rope_inplace"](q.clone(), k.clone(), indptr, offsets, 64, False, 2.0, 5e5)   # 5
    q, k = torch.randn(nnz, 4, 128, dtype=torch.float16), torch.randn(nnz, 4, 128, dtype=torch.float16)
    fi["apply_rope_pos_ids_inplace"](q, k, pos.long(), interleave=True)       # 6
    lpos = torch.tensor([0, 17, 4095, 8191, 9000, 20000, 131071], dtype=torch.int64)
    q, k = torch.randn(nnz, 4, 128), torch.randn(nnz, 2, 128)
    fi["apply_llama31_rope_pos_ids"](q, k, lpos)                              # 7
    fi["apply_llama31_rope_pos_ids_inplace"](q.bfloat16(), k.bfloat16(), lpos, rotary_dim=64)   # 8
    fi["apply_llama31_rope"](q.half(), k.half(), indptr, offsets * 3000)     # 9
    fi["apply_llama31_rope_inplace"](q.clone(), k.clone(), indptr, offsets, interleave=True,
                                     rope_scale=32, old_context_len=4096)     # 10
    rd, hs = 64, 128
    ang = torch.arange(256, dtype=torch.float32)[:, None] * torch.pow(
        torch.tensor(1e-4), torch.arange(0, rd, 2, dtype=torch.float32) / rd)
    cache = torch.cat([ang.cos(), ang.sin()], dim=1)
    cpos = torch.tensor([3, 255, 0, 17, 100, 101, 7], dtype=torch.int64)
    query = torch.randn(nnz, 4 * hs, dtype=torch.bfloat16)
    key = torch.randn(nnz, 2 * hs, dtype=torch.bfloat16)
    fi["apply_rope_with_cos_sin_cache"](cpos, query, key, hs, cache)          # 11
    fi["apply_rope_with_cos_sin_cache"](cpos, query.float(), key.float(), hs, cache, is_neox=False)
    fi["apply_rope_with_cos_sin_cache_inplace"](cpos, query.clone(), key.clone(), hs, cache,
                                                False)                        # 13


flashinfer_main(record)

import torch  # noqa: E402

import flashinfer_ops21 as ref  # noqa: E402
from flashinfer_ops21 import ROPE  # noqa: E402


@functools.cache
def replayed():
    """The 13 calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 13)


def mutated(*args):
    return replayed().mutated(*args)


def test_passes():
    replayed().check_passed(ROPE)


def poke(key, idx, value=None):
    def change(t):
        x = t[key] if key in t else t["result"][int(key[-1])]
        x[idx] = value if value is not None else x[idx] + 1.0
    return change


def test_outputs():
    """a changed element and a NaN of q_rope are mismatches at their index; a changed shape an error"""
    fr = replayed()
    bf16 = fr.find("apply_rope_pos_ids_call0003")
    keys = sorted(torch.load(os.path.join(fr.root, bf16, "outputs.pt"), weights_only=True))
    check(keys == ["result_0", "result_1"] or keys == ["result"], "outputs keys %s" % keys)
    first = keys[0]
    expect_verdict("one element of q_rope", mutated(bf16, poke(first, (5, 2, 9))), "[5, 2, 9]")
    expect_verdict("a NaN in q_rope", mutated(bf16, poke(first, (6, 3, 63), float("nan"))), "[6, 3, 63]")

    def reshape(t):
        t[first] = t[first].reshape(7, 2, 128).clone()

    # the file no longer matches its record's tensor_details: an error naming the file
    expect_verdict("a changed shape", mutated(bf16, reshape), "another shape in the file", "error")


def with_inplace(dump, after):
    """FlashInfer's decorator saves no in-place results: give dump the
    inplace.pt mate's recorder writes (q and k after the call, computed by
    the reference), named in its record, so that replay checks them."""
    d = os.path.join(replayed().root, dump)
    ins = torch.load(os.path.join(d, "inputs.pt"), weights_only=True)
    q, k = after(ins)
    torch.save({"arg_%d" % after.qpos: q, "arg_%d" % (after.qpos + 1): k}, os.path.join(d, "inplace.pt"))
    with open(os.path.join(d, "metadata.jsonl")) as f:
        recs = [json.loads(l) for l in f]
    recs[-1]["tensor_info"]["inplace_tensor_keys"] = ["arg_%d" % after.qpos, "arg_%d" % (after.qpos + 1)]
    recs[-1]["tensor_info"]["inplace_file"] = "inplace.pt"
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))
    v = replay_jsonl(d).get(dump, {})
    check(v.get("verdict") == "passed", "%s with its in-place results: %s %s" % (dump, v.get("verdict"),
                                                                               v.get("message")))


def after_pos_ids(ins):
    return ref.apply_rope_pos_ids(ins["arg_0"], ins["arg_1"], ins["arg_2"], interleave=True)


def after_cache(ins):
    return ref.apply_rope_with_cos_sin_cache(ins["arg_0"], ins["arg_1"], ins["arg_2"], 128,
                                             ins["arg_4"], False)


after_pos_ids.qpos, after_cache.qpos = 0, 1


# Both in-place tensors changed: the report names each, with the first's
# index, its max and mean errors and the share of elements beyond tolerance.
def two_places(t):
    t["arg_0"][1, 2, 3] += 2.0
    t["arg_1"][:2] *= 1.5


def test_inplace():
    """the in-place results mate's recorder writes pass; a change in them is a mismatch naming it"""
    fr = replayed()
    inpl = fr.find("apply_rope_pos_ids_inplace_call0001")
    with_inplace(inpl, after_pos_ids)
    v = mutated(inpl, two_places, "inplace.pt")
    msg = v.get("message") or ""
    check(v.get("verdict") == "mismatch" and v.get("key") == "arg_0" and v.get("first_bad_index") == "[1, 2, 3]"
          and v.get("n_bad") == 1 and abs(v.get("share_bad", 0) - 1 / 3584) < 1e-9 and v.get("mismatched") == 2
          and v.get("mean_abs_err", 0) > 0 and v.get("mean_rel_err", 0) > 0,
          "two in-place tensors changed: %s" % json.dumps(v))
    check("(0.0279%)" in msg and "mean abs err" in msg and "; also arg_1[0, 0, " in msg,
          "the message names both, with the share and the mean errors: %s" % msg)
    expect_verdict("one element of the in-place k", mutated(inpl, poke("arg_1", (4, 3, 100)), "inplace.pt"),
                   "arg_1[4, 3, 100]")
    cache_inpl = fr.find("apply_rope_with_cos_sin_cache_inplace_call0001")
    with_inplace(cache_inpl, after_cache)
    expect_verdict("one element of the in-place query", mutated(cache_inpl, poke("arg_1", (2, 300)), "inplace.pt"),
                   "arg_1[2, 300]")


def shift_pos(t):
    t["arg_2"][3] += 1


def test_changed_position():
    expect_verdict("a changed position", mutated(replayed().find("apply_llama31_rope_pos_ids_call0001"), shift_pos,
                                                 "inputs.pt"), "[3, ")


run_cases(test_passes, test_outputs, test_inplace, test_changed_position)
