#!/usr/bin/env python3
"""gen-dumps.py: writes N synthetic dump directories (MATE's layout) for the list and replay benchmarks.

usage: gen-dumps.py ROOT N [--tensors]

Without --tensors each dump holds only metadata.jsonl (an inputs_saved record
and a completed one, as MATE writes them, about 1 KiB each; every 50th dump
stops at inputs_saved). With --tensors each is a small gemm(a, b) call: a
(16, 16) and b (16, 16) float32 in inputs.safetensors and the product in
outputs.safetensors, replayable by the reference plugin (tests/fakes/plugin-reference.c).
Plain Python, no third-party modules.
"""
import json
import os
import random
import struct
import sys


def safetensors(path, tensors):
    """Writes {name: (shape, list of float)} as float32 safetensors."""
    header, blobs, off = {}, [], 0
    for name, (shape, vals) in tensors.items():
        raw = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def gemm_tensors(rng, n=16):
    a = [f32(rng.uniform(-1, 1)) for _ in range(n * n)]
    b = [f32(rng.uniform(-1, 1)) for _ in range(n * n)]
    c = []
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc = f32(acc + f32(a[i * n + k] * b[k * n + j]))
            c.append(acc)
    return a, b, c


def record(i, name, fn, status, tensors):
    n = 16
    rec = {
        "function_name": fn, "module": "__main__", "call_sequence": i + 1, "timestamp": name[:19],
        "process_id": 4242, "input_metadata": {}, "output_metadata": {},
        "tensor_info": {"input_tensor_keys": ["arg_0", "arg_1"], "output_tensor_keys": [],
                        "input_size_bytes": 2 * n * n * 4, "input_size_mb": 2 * n * n * 4 / 2**20},
        "tensor_details": {k: {"shape": [n, n], "dtype": "torch.float32", "stride": [n, 1], "device": "cpu"}
                           for k in ("arg_0", "arg_1")},
        "tensor_format": "safetensors" if tensors else "torch",
        "function_signature": "(a, b, out_dtype=torch.float32)",
        "versions": {"torch": "1.13.0a0", "python": "3.11.2", "mate": "<unavailable>"},
        "execution_status": "inputs_saved", "dump_dir": "mate_dumps/" + name,
    }
    lines = [json.dumps(rec)]
    if status == "completed":
        rec = dict(rec, execution_status="completed")
        rec["tensor_info"] = dict(rec["tensor_info"], output_tensor_keys=["result"],
                                  output_size_bytes=n * n * 4, output_size_mb=n * n * 4 / 2**20,
                                  total_size_bytes=3 * n * n * 4, total_size_mb=3 * n * n * 4 / 2**20)
        rec["tensor_details"] = dict(rec["tensor_details"],
                                     result={"shape": [n, n], "dtype": "torch.float32", "stride": [n, 1],
                                             "device": "cpu"})
        lines.append(json.dumps(rec))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root, count, tensors = sys.argv[1], int(sys.argv[2]), "--tensors" in sys.argv
    rng = random.Random(1)
    os.makedirs(root, exist_ok=True)
    for i in range(count):
        ms = i % 1000
        sec = (i // 1000) % 60
        minute = (i // 60000) % 60
        fn = "gemm" if tensors else ("gemm", "rmsnorm", "silu_and_mul", "Tensor.softmax")[i % 4]
        name = "20260101_12%02d%02d_%03d_pid4242_%s_call%04d" % (minute, sec, ms, fn, i + 1)
        status = "inputs_saved" if (not tensors and i % 50 == 49) else "completed"
        d = os.path.join(root, name)
        os.mkdir(d)
        with open(os.path.join(d, "metadata.jsonl"), "w") as f:
            f.write(record(i, name, fn, status, tensors))
        if tensors:
            a, b, c = gemm_tensors(rng)
            safetensors(os.path.join(d, "inputs.safetensors"), {"arg_0": ([16, 16], a), "arg_1": ([16, 16], b)})
            safetensors(os.path.join(d, "outputs.safetensors"), {"result": ([16, 16], c)})


if __name__ == "__main__":
    main()
