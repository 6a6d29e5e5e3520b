"""st-set.py FILE KEY I J DELTA: adds DELTA to element [I, J] of the 2-D F32, F64, F16 or BF16 tensor KEY of a .safetensors file (of a 3-D one: of its first matrix), in place (the tests' planted wrong value; no torch needed)."""
import json
import struct
import sys

path, key, i, j, delta = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])[key]
fmt, size = {"F32": ("<f", 4), "F64": ("<d", 8), "F16": ("<e", 2), "BF16": ("bf", 2)}[h["dtype"]]
at = 8 + n + h["data_offsets"][0] + size * (i * h["shape"][-1] + j)
if fmt == "bf":   # bfloat16: a float32's upper half, rounded to nearest even
    v = struct.unpack("<f", b"\0\0" + bytes(raw[at:at + 2]))[0] + delta
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    raw[at:at + 2] = struct.pack("<H", ((u + 0x7fff + ((u >> 16) & 1)) >> 16) & 0xffff)
else:
    v = struct.unpack(fmt, raw[at:at + size])[0]
    raw[at:at + size] = struct.pack(fmt, v + delta)
open(path, "wb").write(raw)
