#!/usr/bin/env python3
"""find_bug_seeds.py: the seeds of fuzz/fuzz_find_bug: small dump roots recorded through
FlashInfer's real decorator (on the torch references of tests/interop/peers), each with one
planted wrong element, packed as fuzz_find_bug reads them.

    find_bug_seeds.py OUTDIR [ROOT...]

records the roots (a paged decode, paged and ragged prefills, an MLA batch, single decode
and prefill by head, rmsnorm, mm, RoPE by indptr) with the peers' Python (torch 2.x, flashinfer-python's logging module)
and writes OUTDIR/NAME.root for each, and one for each ROOT given (a root recorded
elsewhere, for example by libmate, with its .mate-tensor-hashes; or by mate-record: the
BLAS calls of blas.root, planted here too with --plant ROOT). A packed root is, per
file, "PATH\\n", its size (4 bytes, little-endian) and its bytes.

fuzz/corpus/find_bug also keeps inputs the fuzzer found, as regressions: no-self-id.root is
decode.root with the wrapper __init__'s self_id taken out (its state leaked, CI stop 43);
run-no-self-id.root a run whose record has no self_id beside earlier calls that have one
(a NULL self_id compared)."""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "tests", "interop", "peers")


def record(which):
    import torch
    from flashinfer_attn_ref import decorate as decorate_attn
    from flashinfer_peer import decorate as decorate_peer
    from flashinfer_peer import load_api_logging
    from shrink_ref import decorate as decorate_gemm

    api = load_api_logging()
    gen = torch.Generator().manual_seed(34)
    fi = dict(decorate_peer(api), **decorate_attn(api), **decorate_gemm(api))
    if which == "rows":
        fi["rmsnorm"](torch.randn(8, 16, generator=gen), torch.randn(16, generator=gen))
        fi["mm"](torch.randn(4, 8, generator=gen), torch.randn(8, 4, generator=gen))
    elif which == "heads":
        fi["single_decode_with_kv_cache"](torch.randn(4, 8, generator=gen), torch.randn(6, 2, 8, generator=gen),
                                          torch.randn(6, 2, 8, generator=gen))
        fi["single_prefill_with_kv_cache"](torch.randn(3, 4, 8, generator=gen), torch.randn(5, 2, 8, generator=gen),
                                           torch.randn(5, 2, 8, generator=gen), causal=True, return_lse=True)
    elif which == "decode":
        w = fi["BatchDecodeWithPagedKVCacheWrapper"](torch.empty(64, dtype=torch.uint8), "NHD")
        w.plan(torch.tensor([0, 1, 3, 4], dtype=torch.int32), torch.tensor([4, 0, 2, 1], dtype=torch.int32),
               torch.tensor([2, 1, 2], dtype=torch.int32), 4, 2, 8, 2, q_data_type=torch.float32)
        w.run(torch.randn(3, 4, 8, generator=gen), torch.randn(5, 2, 2, 2, 8, generator=gen), return_lse=True)
    elif which == "mla":
        w = fi["BatchMLAPagedAttentionWrapper"](torch.empty(64, dtype=torch.uint8))
        w.plan(torch.tensor([0, 1, 3], dtype=torch.int32), torch.tensor([0, 1, 3], dtype=torch.int32),
               torch.tensor([2, 0, 1], dtype=torch.int32), torch.tensor([2, 3], dtype=torch.int32), 2, 8, 4, 2,
               True, 0.25, torch.float32, torch.float32)
        w.run(torch.randn(3, 2, 8, generator=gen), torch.randn(3, 2, 4, generator=gen),
              torch.randn(3, 2, 8, generator=gen), torch.randn(3, 2, 4, generator=gen), return_lse=True)
    elif which == "rope":
        from flashinfer_ops21 import ROPE
        from flashinfer_ops21 import decorate as decorate_ops21
        rope = decorate_ops21(api, ROPE)
        rope["apply_rope"](torch.randn(5, 2, 8, generator=gen), torch.randn(5, 1, 8, generator=gen),
                           torch.tensor([0, 2, 3, 5], dtype=torch.int32), torch.tensor([0, 4, 9], dtype=torch.int32))
    elif which == "prefill":
        qo = torch.tensor([0, 2, 3, 5], dtype=torch.int32)
        w = fi["BatchPrefillWithPagedKVCacheWrapper"](torch.empty(64, dtype=torch.uint8), "NHD")
        w.plan(qo, torch.tensor([0, 1, 3, 4], dtype=torch.int32), torch.tensor([3, 0, 2, 1], dtype=torch.int32),
               torch.tensor([2, 1, 2], dtype=torch.int32), 4, 2, 8, 2, causal=True, q_data_type=torch.float32)
        w.run(torch.randn(5, 4, 8, generator=gen), torch.randn(4, 2, 2, 2, 8, generator=gen))
        r = fi["BatchPrefillWithRaggedKVCacheWrapper"](torch.empty(64, dtype=torch.uint8), "NHD")
        r.plan(qo, torch.tensor([0, 3, 4, 7], dtype=torch.int32), 4, 2, 8, causal=True,
               q_data_type=torch.float32)
        r.run(torch.randn(5, 4, 8, generator=gen), torch.randn(7, 2, 8, generator=gen),
              torch.randn(7, 2, 8, generator=gen))


def plant(root):
    """Adds 1 to the first element of every result of root's dumps, and of every tensor
    written in place (a BLAS call's C)."""
    import torch
    for d in sorted(os.listdir(root)):
        for name in ("outputs.pt", "inplace.pt"):
            path = os.path.join(root, d, name)
            if not os.path.exists(path):
                continue
            t = torch.load(path, weights_only=True)
            for k in t:
                if k.startswith("result") or name == "inplace.pt":
                    t[k][(0,) * t[k].dim()] += 1
            torch.save(t, path)


def pack(root, out):
    with open(out, "wb") as f:
        for d in sorted(os.listdir(root)):
            p = os.path.join(root, d)
            names = [os.path.join(d, n) for n in sorted(os.listdir(p))] if os.path.isdir(p) else [d]
            for n in names:
                data = open(os.path.join(root, n), "rb").read()
                f.write(n.encode() + b"\n" + struct.pack("<I", len(data)) + data)


def main():
    sys.path.insert(0, PEERS)
    if sys.argv[1:2] == ["--record"]:
        record(sys.argv[2])
        return
    if sys.argv[1:2] == ["--plant"]:
        plant(sys.argv[2])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for which in ("rows", "heads", "decode", "prefill", "mla", "rope"):
            root = os.path.join(tmp, which)
            env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
                       FLASHINFER_LOGDEST=os.path.join(tmp, which + ".log"))
            subprocess.run([sys.executable, os.path.abspath(__file__), "--record", which], env=env, check=True)
            plant(root)
            pack(root, os.path.join(out, which + ".root"))
    for root in sys.argv[2:]:
        pack(root, os.path.join(out, os.path.basename(os.path.normpath(root)) + ".root"))


if __name__ == "__main__":
    main()
