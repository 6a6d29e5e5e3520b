# mate-python: peers
"""test_flashinfer_attn_trtllm.py: FlashInfer's trtllm_batch_decode_with_kv_cache, trtllm_batch_context_with_kv_cache, xqa_batch_decode_with_kv_cache and trtllm_batch_decode_with_kv_cache_mla (576 = 512 + 64 and smaller latent heads, q_len 1 and 2, cum_seq_lens_q, an e4m3 query and cache, a (pages, 1, P, D) or (pages, P, D) cache, a natural-log LSE), and calls with FlashInfer 0.7.4's longer signatures, called through FlashInfer's real decorator at level 10 on the torch references of peers/flashinfer_trtllm_ref.py (f32, f16, bf16, an e4m3 cache; HND and NHD; one tensor (pages, 1 or 2, ...) or a (k, v) tuple; GQA; shuffled block tables with unused tails; bmm1/bmm2 scales as floats, tensors and bmm1_scale_log2; window_left; sinks; q_len_per_req and cum_seq_lens_q; causal and not; out=, out_dtype=, return_lse and lse=), replay on mate's CPU kernels as passed in .pt and safetensors; a changed element of an output or an LSE is a Mismatch naming it; a block table entry outside the cache, seq_lens past a block table row or negative, or cum_seq_lens_q short of the query, is an Error naming it; what mate does not replay (XQA's spec-decoding, a decode mask, NVFP4 scale factors, sparse MLA) is Unsupported naming the argument."""
import os
import shutil

from mate_test import check, done, flashinfer_main, flashinfer_record, replay_jsonl, tmpdir
from mate_test import load_tensors as load, save_tensors as save


def record():
    """The child: FLASHINFER_* are set; calls the decorated torch references."""
    import inspect
    import math

    import flashinfer_trtllm_ref as trtllm_ref
    import torch
    from flashinfer_peer import load_api_logging
    from flashinfer_trtllm_ref import decorate

    fi = decorate(load_api_logging())
    gen = torch.Generator().manual_seed(39)
    ws = torch.empty(1 << 12, dtype=torch.uint8)
    f32, f16, bf16, e4m3 = torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn

    def tables(lens, P, extra_cols=1):
        """Shuffled pages for kv lengths lens: block_tables (batch, max pages + extra_cols),
        the unused entries -1 or a valid page, and the number of pages."""
        counts = [(n + P - 1) // P for n in lens]
        npages = sum(counts) + 3
        perm = torch.randperm(npages, generator=gen).to(torch.int32)
        bt = torch.full((len(lens), max(counts + [0]) + extra_cols), -1, dtype=torch.int32)
        i = 0
        for b, n in enumerate(counts):
            bt[b, :n] = perm[i:i + n]
            i += n
        bt[0, -1] = perm[-1]  # an unused entry that is a page: never read
        return bt, npages

    def kv(npages, P, H, D, dt, lay, form):
        shape = (npages, P, H, D) if lay == "NHD" else (npages, H, P, D)
        if form == "tuple":
            return (torch.randn(shape, generator=gen).to(dt), torch.randn(shape, generator=gen).to(dt))
        return torch.randn((npages, 2 if form == "two" else 1) + shape[1:], generator=gen).to(dt)

    def seq(lens):
        return torch.tensor(lens, dtype=torch.int32)

    # decode: (q dtype, kv dtype, layout, cache form, Hq, Hk, D, P, kv lens, q rows per request, kw)
    decode = [
        (bf16, bf16, "HND", "two", 8, 2, 128, 16, [33, 1, 17], 1,
         {"bmm1_scale": 1 / math.sqrt(128), "return_lse": True}),
        (f16, f16, "NHD", "tuple", 4, 4, 64, 4, [9, 4], 1,
         {"bmm1_scale": torch.tensor(0.1), "bmm2_scale": 0.5, "window_left": 3,
          "sinks": torch.rand(4, generator=gen) * 5, "out": True}),
        (bf16, e4m3, "HND", "tuple", 8, 1, 64, 8, [20, 5], 1,
         {"bmm1_scale": 0.125 * 0.7, "bmm2_scale": 1.3, "out_dtype": bf16}),
        (f32, f32, "HND", "two", 4, 2, 64, 1, [7, 3], 3, {"bmm1_scale": 0.2}),
        (bf16, bf16, "NHD", "one", 8, 2, 64, 4, [6, 10], 1,
         {"bmm1_scale": 9.0, "bmm1_scale_log2": torch.tensor([0.15 * math.log2(math.e)]),
          "lse": True}),
    ]
    for qdt, kdt, lay, form, Hq, Hk, D, P, lens, ql, kw in decode:
        bt, npages = tables(lens, P)
        q = torch.randn(len(lens) * ql, Hq, D, generator=gen).to(qdt)
        if kw.pop("out", False):
            kw["out"] = torch.empty(q.shape, dtype=qdt)
        if kw.pop("lse", False):
            kw["lse"] = torch.empty(q.shape[:2], dtype=f32)
        fi["trtllm_batch_decode_with_kv_cache"](q, kv(npages, P, Hk, D, kdt, lay, form), ws, bt,
                                                seq(lens), max(lens), kv_layout=lay,
                                                q_len_per_req=ql, **kw)
    # variable query rows: cum_seq_lens_q with q_len_per_req=None
    bt, npages = tables([5, 9, 3], 4)
    fi["trtllm_batch_decode_with_kv_cache"](
        torch.randn(6, 4, 64, generator=gen).to(bf16), kv(npages, 4, 2, 64, bf16, "HND", "two"),
        ws, bt, seq([5, 9, 3]), 9, 0.125, 1.0, q_len_per_req=None, max_q_len=3,
        cum_seq_lens_q=torch.tensor([0, 1, 4, 6], dtype=torch.int32))

    # context: (dtype, layout, cache form, Hq, Hk, D, P, q lens, kv lens, kw)
    context = [
        (bf16, "HND", "two", 8, 2, 128, 4, [3, 0, 5], [10, 4, 5], {"return_lse": True}),
        (f16, "NHD", "tuple", 4, 4, 64, 8, [4, 2], [4, 9], {"causal": False, "out": True,
                                                          "sinks": torch.randn(4, generator=gen)}),
        (f32, "HND", "two", 8, 1, 64, 1, [2, 3], [6, 3], {"window_left": 2, "out_dtype": f32}),
    ]
    for dt, lay, form, Hq, Hk, D, P, qlens, lens, kw in context:
        bt, npages = tables(lens, P)
        q = torch.randn(sum(qlens), Hq, D, generator=gen).to(dt)
        if kw.pop("out", False):
            kw["out"] = torch.empty(q.shape, dtype=dt)
        cq = torch.tensor([0] + qlens, dtype=torch.int32).cumsum(0).to(torch.int32)
        ckv = torch.tensor([0] + [(n + P - 1) // P for n in lens], dtype=torch.int32).cumsum(0)
        fi["trtllm_batch_context_with_kv_cache"](q, kv(npages, P, Hk, D, dt, lay, form), ws, bt,
                                                 seq(lens), max(qlens), max(lens),
                                                 1 / math.sqrt(D), 0.8, len(lens), cq,
                                                 ckv.to(torch.int32), kv_layout=lay, **kw)

    # xqa: (q dtype, kv dtype, layout, Hq, Hk, D, P, kv lens, kw)
    xqa = [
        (bf16, bf16, "NHD", 8, 2, 128, 16, [40, 2, 17], {"sinks": torch.rand(8, generator=gen),
                                                         "window_left": 5}),
        (f16, e4m3, "HND", 4, 1, 64, 4, [9, 12], {"bmm2_scale": 0.6, "o_scale": 0.5}),
    ]
    for qdt, kdt, lay, Hq, Hk, D, P, lens, kw in xqa:
        bt, npages = tables(lens, P)
        fi["xqa_batch_decode_with_kv_cache"](torch.randn(len(lens), Hq, D, generator=gen).to(qdt),
                                             kv(npages, P, Hk, D, kdt, lay, "tuple"), ws, bt,
                                             seq(lens), max(lens), 1 / math.sqrt(D),
                                             kv_layout=lay, **kw)

    # what mate does not replay: XQA's speculative decoding, a decode mask, NVFP4 scale factors
    bt, npages = tables([6, 6], 4)
    cache = kv(npages, 4, 2, 64, bf16, "NHD", "tuple")
    fi["xqa_batch_decode_with_kv_cache"](torch.randn(4, 4, 64, generator=gen).to(bf16), cache, ws,
                                         bt, seq([6, 6]), 6, 0.125, q_len_per_req=2)
    fi["trtllm_batch_decode_with_kv_cache"](torch.randn(4, 4, 64, generator=gen).to(bf16), cache,
                                            ws, bt, seq([6, 6]), 6, 0.125, kv_layout="NHD",
                                            q_len_per_req=2,
                                            mask=torch.ones(4, 2, dtype=torch.int16))
    fi["trtllm_batch_context_with_kv_cache"](
        torch.randn(2, 4, 64, generator=gen).to(bf16), cache, ws, bt, seq([6, 6]), 1, 6, 0.125,
        1.0, 2, torch.tensor([0, 1, 2], dtype=torch.int32), torch.tensor([0, 2, 4], dtype=torch.int32),
        kv_layout="NHD", kv_cache_sf=(torch.ones(1), torch.ones(1)))

    # MLA: (dtype, query shape, (nope, rank, rope), page size, cache (pages, 1, P, D), kv lens, kw)
    mla = [
        (bf16, (2, 1, 16, 576), (128, 512, 64), 32, True, [40, 70],
         {"bmm1_scale": 1 / math.sqrt(192), "return_lse": True}),
        (bf16, (2, 2, 8, 96), (64, 64, 32), 16, False, [5, 30],
         {"bmm1_scale": 0.1, "bmm2_scale": 0.5, "sinks": torch.rand(8, generator=gen), "out": True}),
        (bf16, (4, 8, 96), (64, 64, 32), 16, True, [9, 20],
         {"bmm1_scale": 0.1, "cum_seq_lens_q": torch.tensor([0, 1, 4], dtype=torch.int32),
          "max_q_len": 3, "lse": True, "return_lse": True, "return_lse_base": "basee"}),
        (e4m3, (2, 1, 8, 96), (64, 64, 32), 16, True, [17, 3], {"bmm1_scale": 0.05, "bmm2_scale": 0.8}),
        (bf16, (2, 1, 8, 96), (64, 64, 32), 16, True, [4, 4], {"sparse_mla_top_k": 8}),
    ]
    for dt, qshape, (nope, rank, rope), P, four, lens, kw in mla:
        bt, npages = tables(lens, P)
        q = (torch.randn(qshape, generator=gen) * (0.5 if dt == e4m3 else 1)).to(dt)
        lat = torch.randn((npages, P, rank + rope), generator=gen).to(dt)
        if kw.pop("out", False):
            kw["out"] = torch.empty(*qshape[:-1], rank, dtype=bf16)
        if kw.pop("lse", False):
            kw["lse"] = torch.empty(q.shape[0], q.shape[1], dtype=f32)
        fi["trtllm_batch_decode_with_kv_cache_mla"](q, lat.unsqueeze(1) if four else lat, ws, nope, rank,
                                                    rope, bt, seq(lens), max(lens), **kw)

    # FlashInfer 0.7.4's signatures, on the same references: their added parameters bind to
    # the handlers' (sparse_top_k at its default and length_aware_schedule, a schedule, pass;
    # window_right=-1 is the default; sparse_top_k=4 is Unsupported)
    def newer(name, extra):
        ref = getattr(trtllm_ref, name)

        def f(*args, **kw):
            for k in extra:
                kw.pop(k, None)
            return ref(*args, **kw)
        sig = inspect.signature(ref)
        more = [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v)
                for k, v in extra.items()]
        f.__signature__ = sig.replace(parameters=list(sig.parameters.values()) + more)
        f.__name__ = f.__qualname__ = name
        return load_api_logging().flashinfer_api(f)

    dec = newer("trtllm_batch_decode_with_kv_cache", {"sparse_top_k": 0, "length_aware_schedule": False})
    ctx = newer("trtllm_batch_context_with_kv_cache", {"window_right": -1, "variable_window_token_starts": None,
                                                       "variable_window_token_ends": None})
    bt, npages = tables([7, 12], 4)
    cache = kv(npages, 4, 2, 64, bf16, "HND", "two")
    dec(torch.randn(2, 8, 64, generator=gen).to(bf16), cache, ws, bt, seq([7, 12]), 12, 0.125,
        sparse_top_k=0, length_aware_schedule=True)
    ctx(torch.randn(5, 8, 64, generator=gen).to(bf16), cache, ws, bt, seq([7, 12]), 3, 12, 0.125, 1.0, 2,
        torch.tensor([0, 2, 5], dtype=torch.int32), torch.tensor([0, 2, 5], dtype=torch.int32),
        window_right=-1)
    dec(torch.randn(2, 8, 64, generator=gen).to(bf16), cache, ws, bt, seq([7, 12]), 12, 0.125,
        sparse_top_k=4)


UNSUPPORTED = {"xqa_batch_decode_with_kv_cache_call0003": "q_len_per_req=2",
               "trtllm_batch_decode_with_kv_cache_call0007": "mask is not replayed",
               "trtllm_batch_context_with_kv_cache_call0004": "kv_cache_sf is not replayed",
               "trtllm_batch_decode_with_kv_cache_mla_call0005": "sparse_mla_top_k is not replayed",
               "trtllm_batch_decode_with_kv_cache_call0009": "sparse_top_k is not replayed"}

flashinfer_main(record)

TMP = tmpdir()


def changed(root, d, fname, change):
    """The verdict of dump d of root replayed alone after change(dict of fname's tensors)."""
    mroot = os.path.join(TMP, "m%d" % len(os.listdir(TMP)))
    shutil.copytree(os.path.join(root, d), os.path.join(mroot, d))
    path = os.path.join(mroot, d, fname)
    t = load(path)
    change(t)
    save(t, path)
    return replay_jsonl(mroot).get(d, {})


for fmt in ("pt", "safetensors"):
    root, dirs = flashinfer_record(__file__, TMP, 22, fmt)
    verdicts = replay_jsonl(root)
    check(sorted(verdicts) == dirs, "%s: mate-replay replayed %d of %d dumps" % (fmt, len(verdicts), len(dirs)))
    for d in dirs:
        v = verdicts.get(d, {})
        why = [w for s, w in UNSUPPORTED.items() if d.endswith(s)]
        if why:
            check(v.get("verdict") == "unsupported" and why[0] in v.get("message", ""),
                  "%s: %s replays as %s (want unsupported, %s): %s" % (fmt, d, v.get("verdict"), why[0],
                                                                      v.get("message")))
            continue
        check(v.get("verdict") == "passed" and v.get("compared", 0) >= 1,
              "%s: %s replays as %s (%s compared): %s" % (fmt, d, v.get("verdict"), v.get("compared"),
                                                         v.get("message")))
    funcs = {v["function"] for v in verdicts.values() if v["verdict"] == "passed"}
    check(funcs == {"trtllm_batch_decode_with_kv_cache", "trtllm_batch_context_with_kv_cache",
                    "xqa_batch_decode_with_kv_cache", "trtllm_batch_decode_with_kv_cache_mla"},
          "%s: functions passed: %s" % (fmt, sorted(funcs)))

    # one element of each function's output, and of a returned LSE: a Mismatch naming it
    ext = "." + fmt

    def bump(key, idx):
        def change(t):
            t[key][idx] += 1.0 + t[key][idx].abs()
        return change

    for suffix, key, idx in [("trtllm_batch_decode_with_kv_cache_call0001", "result_0", (1, 3, 7)),
                             ("trtllm_batch_decode_with_kv_cache_call0001", "result_1", (2, 5)),
                             ("trtllm_batch_decode_with_kv_cache_call0002", "result", (1, 2, 60)),
                             ("trtllm_batch_decode_with_kv_cache_call0004", "result", (5, 1, 0)),
                             ("trtllm_batch_context_with_kv_cache_call0001", "result_0", (7, 6, 100)),
                             ("trtllm_batch_context_with_kv_cache_call0002", "result", (0, 3, 1)),
                             ("xqa_batch_decode_with_kv_cache_call0001", "result", (0, 7, 127)),
                             ("xqa_batch_decode_with_kv_cache_call0002", "result", (1, 0, 9)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0001", "result_0", (1, 0, 9, 300)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0001", "result_1", (1, 7)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0002", "result", (1, 1, 4, 63)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0003", "result_0", (3, 5, 10)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0003", "result_1", (2, 6)),
                             ("trtllm_batch_decode_with_kv_cache_mla_call0004", "result", (0, 0, 7, 33))]:
        d = [x for x in dirs if x.endswith(suffix)][0]
        v = changed(root, d, "outputs" + ext, bump(key, idx))
        where = "[%s]" % ", ".join(map(str, idx))
        check(v.get("verdict") == "mismatch" and v.get("first_bad_index") == where,
              "%s: %s: %s%s changed replays as %s at %s: %s" % (fmt, d, key, where, v.get("verdict"),
                                                              v.get("first_bad_index"), v.get("message")))

    # recorded numbers that do not fit the cache: an Error naming them, no kernel run
    d = [x for x in dirs if x.endswith("trtllm_batch_decode_with_kv_cache_call0001")][0]

    def far_page(t):
        t["arg_3"][1, 0] = 1000000

    v = changed(root, d, "inputs" + ext, far_page)
    check(v.get("verdict") == "error" and "block_tables[1][0] = 1000000 is not a page" in v.get("message", ""),
          "%s: a page outside the cache replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

    def long_seq(t):
        t["arg_4"][2] = 1000

    v = changed(root, d, "inputs" + ext, long_seq)
    check(v.get("verdict") == "error" and "request 2: seq_lens 1000" in v.get("message", ""),
          "%s: seq_lens past the block table replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

    def negative_seq(t):
        t["arg_4"][0] = -1

    v = changed(root, d, "inputs" + ext, negative_seq)
    check(v.get("verdict") == "error" and "request 0: seq_lens -1 for 1 query rows" in v.get("message", ""),
          "%s: a negative seq_lens replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

    d = [x for x in dirs if x.endswith("trtllm_batch_decode_with_kv_cache_call0006")][0]

    def short_cu(t):
        t["kwarg_cum_seq_lens_q"][3] = 5

    v = changed(root, d, "inputs" + ext, short_cu)
    check(v.get("verdict") == "error" and "cum_seq_lens_q ends at 5, the query has 6 rows" in v.get("message", ""),
          "%s: cum_seq_lens_q short of the query replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

    d = [x for x in dirs if x.endswith("trtllm_batch_decode_with_kv_cache_mla_call0002")][0]

    def mla_far_page(t):
        t["arg_6"][1, 1] = -3

    v = changed(root, d, "inputs" + ext, mla_far_page)
    check(v.get("verdict") == "error" and "block_tables[1][1] = -3 is not a page" in v.get("message", ""),
          "%s: MLA: a page outside the cache replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

done()
