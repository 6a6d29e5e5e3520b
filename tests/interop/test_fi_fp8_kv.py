# mate-python: peers
"""test_fi_fp8_kv.py: FlashInfer's paged attention wrappers on fp8 KV caches (float8_e4m3fn
and float8_e5m2, one tensor or a (k, v) tuple, NHD and HND, with k_scale and v_scale; q and
the output in bf16 or f16), decode and causal paged prefill, called through FlashInfer's real
decorator at level 10 on the torch references of peers/flashinfer_attn_ref.py, replay on
mate's CPU kernels as passed; a changed output element is a Mismatch naming it."""
import functools
import os

from mate_test import FlashinferReplay, check, flashinfer_main, replay_jsonl, run_cases


def record():
    import torch
    from flashinfer_attn_ref import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging())
    gen = torch.Generator().manual_seed(8)
    ws = torch.empty(1 << 12, dtype=torch.uint8)
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2

    def paged(lens, P):
        counts = [(n + P - 1) // P for n in lens]
        total = sum(counts) + 2
        perm = torch.randperm(total, generator=gen).to(torch.int32)
        indptr = torch.tensor([0] + counts, dtype=torch.int32).cumsum(0).to(torch.int32)
        last = torch.tensor([n - (c - 1) * P if c else 0 for n, c in zip(lens, counts)],
                            dtype=torch.int32)
        return indptr, perm[:int(indptr[-1])].contiguous(), last, total

    def kv(npages, P, H, D, dt, lay, single):
        shape = (npages, P, H, D) if lay == "NHD" else (npages, H, P, D)
        if single:
            return (torch.randn((npages, 2) + shape[1:], generator=gen) * 2).to(dt)
        return ((torch.randn(shape, generator=gen) * 2).to(dt),
                (torch.randn(shape, generator=gen) * 2).to(dt))

    # decode: (q dtype, kv dtype, layout, Hq, Hk, D, P, kv lens, one tensor, run kw)
    for qdt, kdt, lay, Hq, Hk, D, P, lens, single, rkw in [
            (torch.bfloat16, e4m3, "NHD", 8, 2, 128, 16, [33, 1, 17], True,
             {"k_scale": 0.5, "v_scale": 1.5, "return_lse": True}),
            (torch.float16, e5m2, "HND", 4, 4, 64, 4, [9, 4], False, {"k_scale": 0.25}),
            (torch.bfloat16, e4m3, "HND", 8, 1, 64, 1, [5, 3], False, {"v_scale": 0.75})]:
        w = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, lay)
        indptr, indices, last, npages = paged(lens, P)
        w.plan(indptr, indices, last, Hq, Hk, D, P, q_data_type=qdt, kv_data_type=kdt)
        w.run(torch.randn(len(lens), Hq, D, generator=gen).to(qdt),
              kv(npages, P, Hk, D, kdt, lay, single), **rkw)
    # paged prefill, causal
    for qdt, kdt, lay, qlens, lens in [(torch.bfloat16, e4m3, "NHD", [3, 0, 2], [10, 4, 2]),
                                       (torch.float16, e5m2, "HND", [1, 4], [7, 4])]:
        w = fi["BatchPrefillWithPagedKVCacheWrapper"](ws, lay)
        indptr, indices, last, npages = paged(lens, 4)
        qo = torch.tensor([0] + qlens, dtype=torch.int32).cumsum(0).to(torch.int32)
        w.plan(qo, indptr, indices, last, 8, 2, 64, 4, causal=True, q_data_type=qdt,
               kv_data_type=kdt)
        w.run(torch.randn(sum(qlens), 8, 64, generator=gen).to(qdt),
              kv(npages, 4, 2, 64, kdt, lay, False), k_scale=0.5, v_scale=2.0, return_lse=True)


flashinfer_main(record)

import torch  # noqa: E402

@functools.cache
def replayed():
    """The 15 calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 15)


def test_passes():
    fr = replayed()
    fr.check_passed()
    runs = [d for d in fr.dirs if ".run_call" in d]
    check(len(runs) == 5, "5 runs recorded: %s" % runs)
    for d in runs:
        check(fr.verdicts.get(d, {}).get("compared", 0) >= 1, "%s: no output compared" % d)


def test_changed_output():
    """A changed output element of the first decode run is a Mismatch that names it (replayed
    with the whole recording: the run needs its wrapper's plan)."""
    fr = replayed()
    d = fr.find("BatchDecodeWithPagedKVCacheWrapper.run_call0001")
    path = os.path.join(fr.root, d, "outputs.pt")
    outs = torch.load(path, weights_only=True)
    key = sorted(outs)[0]
    outs[key].view(-1)[5] += 1.0 + outs[key].view(-1)[5].abs()
    torch.save(outs, path)
    v = replay_jsonl(fr.root).get(d, {})
    check(v.get("verdict") == "mismatch" and v.get("first_bad_index") == "[0, 0, 5]",
          "a changed output element: %s at %s: %s" % (v.get("verdict"), v.get("first_bad_index"),
                                                       v.get("message")))


run_cases(test_passes, test_changed_output)
