# mate-python: peers
"""test_fi_plan_dtypes.py: a wrapper's run refuses a q or k whose dtype is not the one its plan
fixed (FlashInfer's _check_cached_qkv_data_type: q_data_type, 'float16' unless given; kv_data_type,
q's unless given; decode's deprecated data_type standing for kv_data_type). Such a call, recorded by
FlashInfer's real decorator as raising ValueError, replays as the same failure ("reproduced
failure"), never as a call that now runs; a plan whose dtypes fit its run still passes. The
references raise as FlashInfer does (tests/interop/peers/flashinfer_attn_ref.py)."""
import functools

from mate_test import FlashinferReplay, check, flashinfer_main, run_cases


def record():
    import torch

    import flashinfer_attn_ref as ref
    from flashinfer_peer import load_api_logging

    fi = ref.decorate(load_api_logging())
    gen = torch.Generator().manual_seed(8)
    ws = torch.empty(16, dtype=torch.uint8)
    i32, f16, bf16, f32 = torch.int32, torch.float16, torch.bfloat16, torch.float32
    indptr, indices, last = (torch.tensor([0, 2, 3], dtype=i32), torch.tensor([0, 1, 2], dtype=i32),
                             torch.tensor([3, 4], dtype=i32))

    def cache(dt):
        return torch.randn(3, 2, 4, 2, 16, generator=gen).to(dt)

    def q(n, dt):
        return torch.randn(n, 4, 16, generator=gen).to(dt)

    def raises(f, *a, **kw):
        try:
            f(*a, **kw)
        except ValueError:
            return
        raise AssertionError("the reference ran what FlashInfer refuses")

    d = fi["BatchDecodeWithPagedKVCacheWrapper"]
    w = d(ws, "NHD")                                        # 1: plan's q_data_type left at float16
    w.plan(indptr, indices, last, 4, 2, 16, 4)
    raises(w.run, q(2, bf16), cache(bf16))
    w = d(ws, "NHD")                                        # 2: q fits, k does not
    w.plan(indptr, indices, last, 4, 2, 16, 4, q_data_type=bf16)
    raises(w.run, q(2, bf16), cache(f16))
    w = d(ws, "NHD")                                        # 3: data_type sets kv, q stays float16
    w.plan(indptr, indices, last, 4, 2, 16, 4, data_type="bfloat16")
    w.run(q(2, f16), cache(bf16))
    qo = torch.tensor([0, 2, 3], dtype=i32)
    w = fi["BatchPrefillWithPagedKVCacheWrapper"](ws, "NHD")  # 4: plan float32, run bfloat16
    w.plan(qo, indptr, indices, last, 4, 2, 16, 4, causal=True, q_data_type=f32)
    raises(w.run, q(3, bf16), cache(bf16))
    w = fi["BatchPrefillWithRaggedKVCacheWrapper"](ws, "NHD")  # 5: plan float16, run float32
    w.plan(qo, torch.tensor([0, 4, 9], dtype=i32), 4, 2, 16)
    raises(w.run, q(3, f32), torch.randn(9, 2, 16, generator=gen), torch.randn(9, 2, 16, generator=gen))


flashinfer_main(record)

REFUSED = (("BatchDecodeWithPagedKVCacheWrapper.run_call0001",
            "the dtype of q bfloat16 does not match the q_data_type float16"),
           ("BatchDecodeWithPagedKVCacheWrapper.run_call0002",
            "the dtype of k float16 does not match the kv_data_type bfloat16"),
           ("BatchPrefillWithPagedKVCacheWrapper.run_call0001",
            "the dtype of q bfloat16 does not match the q_data_type float32"),
           ("BatchPrefillWithRaggedKVCacheWrapper.run_call0001",
            "the dtype of q float32 does not match the q_data_type float16"))


@functools.cache
def replayed():
    """The 15 calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 15)


def test_fitting_plans_pass():
    fr = replayed()
    fr.check_passed(but=[fr.find(s) for s in ("BatchDecodeWithPagedKVCacheWrapper.run_call0001",
                                              "BatchDecodeWithPagedKVCacheWrapper.run_call0002",
                                              "BatchPrefillWithPagedKVCacheWrapper.run_call0001",
                                              "BatchPrefillWithRaggedKVCacheWrapper.run_call0001")])


def test_refused_reproduced():
    fr = replayed()
    for suffix, words in REFUSED:
        v = fr.verdicts.get(fr.find(suffix), {})
        check(v.get("verdict") == "reproduced_failure" and words in (v.get("message") or ""),
              "%s, refused by FlashInfer: %s %s" % (suffix, v.get("verdict"), v.get("message")))


run_cases(test_fitting_plans_pass, test_refused_reproduced)
