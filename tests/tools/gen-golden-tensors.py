"""gen-golden-tensors.py: extracts the tensors of MATE's reference dumps into tests/fixtures/recorder/golden-tensors.bin.

Run once with the Python that has torch (the output is committed):
    python3 tests/tools/gen-golden-tensors.py
The blob holds, for each tensor in the order recorder-golden reads them, a
little-endian u64 byte count and the tensor's storage bytes (storage order,
so the transposed gemm operand keeps its strides).
"""
import os
import struct
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DUMPS = os.path.join(HERE, "..", "fixtures", "mate-reference", "mate_dumps")
ORDER = [
    ("gemm_call0001", ["inputs:arg_0", "inputs:arg_1", "outputs:result"]),
    ("gemm_call0002", ["inputs:arg_0", "inputs:arg_1", "outputs:result"]),
    ("rmsnorm_call0001", ["inputs:arg_0", "inputs:arg_1", "outputs:result"]),
    ("rmsnorm_call0002", ["inputs:arg_0", "inputs:arg_1", "outputs:result"]),
    ("silu_and_mul_call0001", ["inputs:arg_0", "outputs:result"]),
    ("int_ops_call0001", ["inputs:arg_0", "inputs:arg_1", "outputs:result"]),
    ("crashes_call0001", ["inputs:arg_0"]),
]


def main():
    out = bytearray()
    for suffix, keys in ORDER:
        d = [x for x in os.listdir(DUMPS) if x.endswith(suffix)][0]
        for spec in keys:
            which, key = spec.split(":")
            t = torch.load(os.path.join(DUMPS, d, which + ".pt"), weights_only=True)[key]
            st = t.storage()
            raw = bytes(st.untyped()) if hasattr(st, "untyped") else bytes(st._untyped())
            out += struct.pack("<Q", len(raw)) + raw
    path = os.path.join(HERE, "..", "fixtures", "recorder", "golden-tensors.bin")
    with open(path, "wb") as f:
        f.write(out)
    print("wrote", path, len(out), "bytes")


if __name__ == "__main__":
    main()
