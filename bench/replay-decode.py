#!/usr/bin/env python3
"""replay-decode.py: one decode step of BatchDecodeWithPagedKVCacheWrapper recorded
through FlashInfer's real decorator (level 10), replayed by mate-replay on the CPU
kernels, against the torch reference of tests/interop/peers/flashinfer_attn_ref.py timed in
the same run on the same inputs.

usage: PYTHON_PEERS bench/replay-decode.py BUILD_DIR [--batch 64] [--kv 4096]
           [--qo-heads 32] [--kv-heads 8] [--head-dim 128] [--page 16] [--repeat 3]
           [--device cpu|cuda]

Prints the reference's time, the replayed run's time (the handler, as mate-replay
reports it in "seconds") and the whole mate-replay process's (loading the dumps
too), each the best of --repeat, and the ratios reference / replay. With --device
cuda (tests/gpu.sh on a GPU machine) the reference runs in torch on the GPU and
mate-replay on its CUDA kernels (--device cuda), the same inputs on the same GPU."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interop", "peers"))


def inputs(a):
    import torch
    gen = torch.Generator().manual_seed(1)
    P = a.page
    per = (a.kv + P - 1) // P
    npages = a.batch * per
    cpu = {"device": "cpu"}
    indptr = torch.arange(0, npages + 1, per, dtype=torch.int32, **cpu)
    indices = torch.randperm(npages, generator=gen, **cpu).to(torch.int32)
    last = torch.full((a.batch,), a.kv - (per - 1) * P, dtype=torch.int32, **cpu)
    kv = torch.randn(npages, 2, P, a.kv_heads, a.head_dim, generator=gen, **cpu).to(torch.bfloat16)
    q = torch.randn(a.batch, a.qo_heads, a.head_dim, generator=gen, **cpu).to(torch.bfloat16)
    return [t.to(a.device) for t in (indptr, indices, last, kv, q)]


def child(a):
    """Times the reference undecorated, then records one step through the decorator."""
    import torch
    from flashinfer_peer import load_api_logging
    import flashinfer_attn_ref as ref

    indptr, indices, last, kv, q = inputs(a)
    if a.device != "cpu":
        torch.set_default_device(a.device)  # the reference's own tensors (aranges, masks)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    ws = torch.empty(1 << 12, dtype=torch.uint8)
    w = ref.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
    w.plan(indptr, indices, last, a.qo_heads, a.kv_heads, a.head_dim, a.page,
           q_data_type=q.dtype)
    w.run(q, kv)  # warm-up: on the GPU, the first call loads the kernels
    sync()
    best = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        w.run(q, kv)
        sync()
        best = min(best, time.perf_counter() - t0)
    fi = ref.decorate(load_api_logging())
    w = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, "NHD")
    w.plan(indptr, indices, last, a.qo_heads, a.kv_heads, a.head_dim, a.page,
           q_data_type=q.dtype)
    w.run(q, kv)
    print(json.dumps({"reference_s": best, "threads": torch.get_num_threads()}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--kv", type=int, default=4096)
    p.add_argument("--qo-heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--page", type=int, default=16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--child", action="store_true")
    a = p.parse_args()
    if a.child:
        return child(a)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "dumps")
        env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
                   FLASHINFER_DUMP_SAFETENSORS="1", FLASHINFER_DUMP_MAX_SIZE_GB="64",
                   FLASHINFER_LOGDEST=os.path.join(tmp, "log"))
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"] + sys.argv[1:],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("replay-decode: recording failed: " + r.stderr[-2000:])
        ref = json.loads(r.stdout.strip().splitlines()[-1])
        replay = os.path.join(a.build, "src", "replay", "mate-replay")
        run_s = wall_s = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            out = subprocess.run([replay, "--device", a.device, "--jsonl", root], capture_output=True,
                                 text=True).stdout
            wall_s = min(wall_s, time.perf_counter() - t0)
            for v in map(json.loads, out.splitlines()):
                if v["function"].endswith(".run"):
                    if v["verdict"] != "passed":
                        sys.exit("replay-decode: the run replays as %s: %s" % (v["verdict"], v["message"]))
                    run_s = min(run_s, v["seconds"])
    print("decode step: batch %d, %d keys each, %d/%d heads, dim %d, pages of %d, bf16" % (
        a.batch, a.kv, a.qo_heads, a.kv_heads, a.head_dim, a.page))
    where = "on the GPU" if a.device == "cuda" else "%d threads" % ref["threads"]
    print("torch reference (%s): %.3f s" % (where, ref["reference_s"]))
    print("mate-replay run (%s kernels): %.3f s  ratio %.1fx" % (
        "CUDA" if a.device == "cuda" else "CPU", run_s, ref["reference_s"] / run_s))
    print("mate-replay process (load + replay of 3 dumps): %.3f s  ratio %.1fx" % (
        wall_s, ref["reference_s"] / wall_s))


if __name__ == "__main__":
    main()
