# mate-python: peers
"""test_flashinfer_attn_cascade.py: FlashInfer's MultiLevelCascadeAttentionWrapper (__init__, plan, run), called through FlashInfer's real decorator at level 10 on the torch reference of peers/flashinfer_attn_ref.py (FlashInfer's own run: a paged prefill per level, the last causal, the others merged into it with merge_state_in_place): 1, 2 and 3 levels, a shared prefix over every query row, groups, unique pages; f32, f16, bf16; NHD and HND; one tensor or a (k, v) tuple; GQA; causal, sm_scale, window_left, soft cap; two runs of one plan; replay on mate's CPU kernels as passed in .pt and safetensors; a changed element of a run's output is a Mismatch naming it; a level's page outside the cache is an Error naming it and the level's list; on the old code every call is Unsupported."""
import os
import shutil

from mate_test import check, done, flashinfer_main, flashinfer_record, replay_jsonl, tmpdir
from mate_test import load_tensors as load, save_tensors as save


def record():
    """The child: FLASHINFER_* are set; calls the decorated torch reference."""
    import torch
    from flashinfer_attn_ref import MultiLevelCascadeAttentionWrapper
    from flashinfer_peer import load_api_logging

    api = load_api_logging()
    for m in ("__init__", "plan", "run"):
        setattr(MultiLevelCascadeAttentionWrapper, m,
                api.flashinfer_api(getattr(MultiLevelCascadeAttentionWrapper, m)))
    gen = torch.Generator().manual_seed(40)
    ws = torch.empty(1 << 12, dtype=torch.uint8)
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16

    def i32(x):
        return torch.tensor(x, dtype=torch.int32)

    def cache(npages, P, H, D, dt, lay, single):
        shape = (npages, P, H, D) if lay == "NHD" else (npages, H, P, D)
        if single:
            return torch.randn((npages, 2) + shape[1:], generator=gen).to(dt)
        return (torch.randn(shape, generator=gen).to(dt), torch.randn(shape, generator=gen).to(dt))

    # (levels, dtype, layout, one tensor, Hq, Hk, D, P, pages, rows, tables per level, plan kw,
    # runs) where a level's table is (qo_indptr, kv_indptr, kv_indices, last_page_len)
    cases = [
        # decode: a shared prefix of 3 pages for all 3 requests, then a page or two each
        (2, f16, "NHD", True, 8, 2, 64, 4, 9, 3,
         [([0, 3], [0, 3], [4, 0, 7], [2]),
          ([0, 1, 2, 3], [0, 1, 3, 4], [2, 5, 8, 1], [3, 4, 1])], {}, 2),
        # prefill: all 5 rows share 2 pages, rows [0, 2) and [2, 5) a page each, then their own
        (3, bf16, "HND", False, 4, 4, 128, 2, 10, 5,
         [([0, 5], [0, 2], [9, 3], [2]),
          ([0, 2, 5], [0, 1, 2], [0, 6], [2, 1]),
          ([0, 2, 5], [0, 2, 4], [1, 4, 8, 2], [1, 2])],
         {"causal": True, "sm_scale": 0.1, "q_data_type": bf16}, 1),
        # one level: a paged prefill through the cascade wrapper
        (1, f32, "NHD", False, 8, 1, 64, 4, 5, 4,
         [([0, 1, 4], [0, 2, 5], [0, 3, 1, 4, 2], [3, 1])],
         {"causal": True, "window_left": 3, "logits_soft_cap": 5.0, "q_data_type": f32}, 1),
    ]
    for n, dt, lay, single, Hq, Hk, D, P, pages, rows, tables, kw, runs in cases:
        w = MultiLevelCascadeAttentionWrapper(n, ws, lay)
        w.plan(*[[i32(t[j]) for t in tables] for j in range(4)], Hq, Hk, D, P, **kw)
        kv = cache(pages, P, Hk, D, dt, lay, single)
        for _ in range(runs):
            w.run(torch.randn(rows, Hq, D, generator=gen).to(dt), kv)


flashinfer_main(record)

TMP = tmpdir()


for fmt in ("pt", "safetensors"):
    ext = "." + fmt
    root, dirs = flashinfer_record(__file__, TMP, 10, fmt)
    verdicts = replay_jsonl(root)
    check(sorted(verdicts) == dirs, "%s: mate-replay replayed %d of %d dumps" % (fmt, len(verdicts), len(dirs)))
    for d in dirs:
        v = verdicts.get(d, {})
        check(v.get("verdict") == "passed", "%s: %s replays as %s: %s" % (fmt, d, v.get("verdict"),
                                                                          v.get("message")))
    runs = [d for d in dirs if ".run_call" in d]
    check(len(runs) == 4 and all(verdicts.get(d, {}).get("compared", 0) >= 1 for d in runs),
          "%s: 4 runs compared: %s" % (fmt, runs))

    # one element of each run's output: a Mismatch at its index (replayed with the whole
    # recording, each run needing its object's plan)
    mroot = os.path.join(TMP, fmt + "-mutated")
    shutil.copytree(root, mroot)
    want = {}
    for d in runs:
        path = os.path.join(mroot, d, "outputs" + ext)
        t = load(path)
        r = t["result"]
        idx = tuple(s // 2 for s in r.shape)
        r[idx] += 1.0 + r[idx].abs()
        save(t, path)
        want[d] = "[%s]" % ", ".join(map(str, idx))
    mv = replay_jsonl(mroot)
    for d, where in want.items():
        v = mv.get(d, {})
        check(v.get("verdict") == "mismatch" and v.get("first_bad_index") == where,
              "%s: %s's output changed at %s replays as %s at %s: %s" % (
                  fmt, d, where, v.get("verdict"), v.get("first_bad_index"), v.get("message")))
    others = [d for d in dirs if d not in want and mv.get(d, {}).get("verdict") != "passed"]
    check(not others, "%s: other verdicts changed: %s" % (fmt, others))

    # a page outside the cache in the second level of the first plan: its run is an Error
    broot = os.path.join(TMP, fmt + "-badpage")
    shutil.copytree(root, broot)
    plan = [d for d in dirs if ".plan_call" in d][0]
    path = os.path.join(broot, plan, "inputs" + ext)
    t = load(path)
    keys = sorted(k for k in t if k.startswith("arg_3"))
    check(len(keys) == 2, "%s: the plan's paged_kv_indices_arr in the file: %s" % (fmt, sorted(t)))
    t[keys[-1]][0] = 1000000
    save(t, path)
    bv = replay_jsonl(broot)
    v = bv.get(runs[0], {})
    check(v.get("verdict") == "error" and "page 1000000 of a cache of" in v.get("message", ""),
          "%s: a page outside the cache replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

done()
