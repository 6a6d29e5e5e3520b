"""test_safetensors_interop.py: files libmate writes obey the safetensors rules (spec C1-C3) and read back bit-exactly with numpy."""
import functools
import json
import os
import struct

import numpy as np

from mate_test import build_path, check, run, run_cases, tmpdir

TOOL = build_path("tests", "tensorfile-tool")

# mate dtype name -> (safetensors name, numpy dtype or None for raw bytes, element size)
DTYPES = {
    "bool": ("BOOL", np.bool_, 1),
    "uint8": ("U8", np.uint8, 1),
    "int8": ("I8", np.int8, 1),
    "int16": ("I16", "<i2", 2),
    "uint16": ("U16", "<u2", 2),
    "int32": ("I32", "<i4", 4),
    "uint32": ("U32", "<u4", 4),
    "int64": ("I64", "<i8", 8),
    "uint64": ("U64", "<u8", 8),
    "float16": ("F16", "<f2", 2),
    "bfloat16": ("BF16", None, 2),
    "float32": ("F32", "<f4", 4),
    "float64": ("F64", "<f8", 8),
    "complex64": ("C64", "<c8", 8),
    "float8_e4m3fn": ("F8_E4M3", None, 1),
    "float8_e5m2": ("F8_E5M2", None, 1),
    "float8_e4m3fnuz": ("F8_E4M3FNUZ", None, 1),
    "float8_e5m2fnuz": ("F8_E5M2FNUZ", None, 1),
    "float8_e8m0fnu": ("F8_E8M0", None, 1),
}
# spec C3: rank ascending
RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
        "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
        "C64", "F64", "I64", "U64"]


class Tensor:
    """What the spec asks libmate to write: a strided view of a storage."""

    def __init__(self, name, dtype, shape, storage, sid, stride=None, offset=0):
        self.name, self.dtype, self.shape = name, dtype, list(shape)
        self.storage, self.sid, self.offset = storage, sid, offset
        if stride is None:
            stride, s = [], 1
            for n in reversed(self.shape):
                stride.insert(0, s)
                s *= max(n, 1)
        self.stride = list(stride)

    def contiguous_bytes(self):
        """The view's elements in C order (numpy's as_strided over the storage)."""
        es = DTYPES[self.dtype][2]
        n = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        if n == 0:
            return b""
        elems = np.frombuffer(self.storage, dtype="V%d" % es)
        view = np.lib.stride_tricks.as_strided(
            elems[self.offset:], shape=self.shape, strides=[s * es for s in self.stride])
        return np.ascontiguousarray(view).tobytes()

    def spec(self, first):
        d = {"type": "tensor", "dtype": self.dtype, "shape": self.shape, "stride": self.stride,
             "offset": self.offset, "storage": self.sid, "storage_nbytes": len(self.storage)}
        if first:
            d["hex"] = self.storage.hex()
        return d


def write_with_mate(tensors, metadata, path):
    items, seen = [], set()
    for t in tensors:
        items.append([{"type": "str", "value": t.name}, t.spec(t.sid not in seen)])
        seen.add(t.sid)
    spec = {"root": {"type": "dict", "ordered": False, "items": items},
            "metadata": None if metadata is None else {
                "type": "dict", "ordered": False,
                "items": [[{"type": "str", "value": k}, {"type": "str", "value": v}]
                          for k, v in metadata.items()]}}
    spec_path = path + ".json"
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    run([TOOL, "write", spec_path, path])
    os.unlink(spec_path)


def check_rules(path, tensors, metadata):
    """Spec C1-C3 on the bytes of a file; returns {name: (entry, data bytes)}."""
    with open(path, "rb") as f:
        buf = f.read()
    where = os.path.basename(path)
    n = struct.unpack("<Q", buf[:8])[0]
    check(n <= 100000000 and 8 + n <= len(buf), "%s: header length %d" % (where, n))
    check((8 + n) % 8 == 0, "%s: 8+N=%d not a multiple of 8" % (where, 8 + n))
    raw = buf[8:8 + n]
    text = raw.rstrip(b" ")
    check(len(raw) - len(text) < 8, "%s: more than 7 padding spaces" % where)
    text = text.decode("utf-8")
    hdr = json.loads(text, object_pairs_hook=lambda kv: kv)
    compact = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    check(text == compact, "%s: JSON not compact/raw UTF-8:\n%s\n%s" % (where, text, compact))
    keys = [k for k, _ in hdr]
    if metadata is not None:
        check(keys[:1] == ["__metadata__"], "%s: __metadata__ is not first" % where)
        check(dict(hdr[0][1]) == metadata, "%s: metadata %r" % (where, hdr[0][1]))
        hdr = hdr[1:]
    check("__metadata__" not in [k for k, _ in hdr], "%s: unexpected __metadata__" % where)
    expect = sorted(tensors, key=lambda t: (-RANK.index(DTYPES[t.dtype][0]), t.name.encode("utf-8")))
    check([k for k, _ in hdr] == [t.name for t in expect],
          "%s: order %r, expected %r" % (where, [k for k, _ in hdr], [t.name for t in expect]))
    out, off, data = {}, 0, buf[8 + n:]
    for name, entry in hdr:
        check([k for k, _ in entry] == ["dtype", "shape", "data_offsets"],
              "%s: %s: keys %r" % (where, name, entry))
        e = dict(entry)
        b, end = e["data_offsets"]
        check(b == off and end >= b, "%s: %s: offsets %r, expected to begin at %d" % (where, name, e["data_offsets"], off))
        off = end
        out[name] = (e, data[b:end])
    check(off == len(data), "%s: data is %d bytes, tensors end at %d" % (where, len(data), off))
    return out


def numpy_bits(dtype, raw, shape):
    """The tensor read with numpy, as integers holding each element's bits."""
    st, npdt, es = DTYPES[dtype]
    if st == "BF16":
        # numpy has no bfloat16: shift into the high half of a float32
        f = (np.frombuffer(raw, dtype="<u2").astype("<u4") << 16).view("<f4")
        return f.reshape(shape).view("<u4")
    if npdt is None:  # float8: the raw bytes
        return np.frombuffer(raw, dtype=np.uint8).reshape(shape)
    a = np.frombuffer(raw, dtype=npdt).reshape(shape)
    return a.view({1: np.uint8, 2: "<u2", 4: "<u4", 8: "<u8"}[es] if npdt != "<c8" else "<u8")


def check_file(path, tensors, metadata):
    got = check_rules(path, tensors, metadata)
    for t in tensors:
        if t.name not in got:
            check(False, "%s missing from the header" % t.name)
            continue
        e, raw = got[t.name]
        check(e["dtype"] == DTYPES[t.dtype][0], "%s: dtype %s" % (t.name, e["dtype"]))
        check(e["shape"] == t.shape, "%s: shape %r, expected %r" % (t.name, e["shape"], t.shape))
        want = t.contiguous_bytes()
        mine = numpy_bits(t.dtype, raw, t.shape)
        ref = numpy_bits(t.dtype, want, t.shape)
        check(mine.shape == ref.shape and np.array_equal(mine, ref),
              "%s (%s %r): data differs" % (t.name, t.dtype, t.shape))
    # ... and libmate reads its own file back: same order, tensors and metadata
    desc = json.loads(run([TOOL, "describe", path]).stdout)
    items = desc["root"]["items"]
    check([k["value"] for k, _ in items] == list(got), "describe: order differs from the file")
    by_name = {t.name: t for t in tensors}
    for k, v in items:
        t = by_name.get(k["value"])
        check(t is not None and v["dtype"] == t.dtype and v["shape"] == t.shape
              and v["stride"] == Tensor(t.name, t.dtype, t.shape, b"", 0).stride and v["offset"] == 0
              and bytes.fromhex(v["hex"]) == t.contiguous_bytes(),
              "describe: %s differs: %r" % (k["value"], v))
    want_meta = None if metadata is None else [[k, v] for k, v in metadata.items()]
    got_meta = desc["metadata"] and [[k["value"], v["value"]] for k, v in desc["metadata"]["items"]]
    check(got_meta == want_meta, "describe: metadata %r, expected %r" % (got_meta, want_meta))


def random_tensors(rng, count):
    out = []
    names = set()
    for i in range(count):
        dtype = list(DTYPES)[rng.integers(len(DTYPES))]
        es = DTYPES[dtype][2]
        ndim = int(rng.integers(0, 4))
        shape = [int(rng.integers(0, 5)) if rng.random() < 0.1 else int(rng.integers(1, 6))
                 for _ in range(ndim)]
        name = "".join(rng.choice(list("abAB._09\u00e9")) for _ in range(int(rng.integers(1, 5))))
        if name in names:
            continue
        names.add(name)
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if ndim == 2 and rng.random() < 0.4:
            # a transposed view of a fresh storage
            storage = rng.bytes(numel * es)
            stride = [1, shape[0]]
            out.append(Tensor(name, dtype, shape, storage, i, stride))
        elif rng.random() < 0.3:
            off = int(rng.integers(0, 4))
            storage = rng.bytes((numel + off + 2) * es)
            out.append(Tensor(name, dtype, shape, storage, i, None, off))
        else:
            out.append(Tensor(name, dtype, shape, rng.bytes(numel * es), i))
    return out


RNG = np.random.default_rng(1234)   # the dtypes' bytes, then the random dicts'


@functools.cache
def folder():
    return tmpdir()


def test_dtypes():
    """one of each dtype, special values for the floating types"""
    d = folder()
    special = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 65504.0, 1e-8, 3.0e38],
                       dtype="<f4")
    tensors = [Tensor("t_" + dt, dt, [2, 3], RNG.bytes(6 * DTYPES[dt][2]), i)
               for i, dt in enumerate(DTYPES)]
    tensors.append(Tensor("specials.f32", "float32", [10], special.tobytes(), 100))
    bf = (special.view("<u4") >> 16).astype("<u2")
    tensors.append(Tensor("specials.bf16", "bfloat16", [10], bf.tobytes(), 101))
    path = os.path.join(d, "dtypes.safetensors")
    write_with_mate(tensors, {"format": "pt"}, path)
    check_file(path, tensors, {"format": "pt"})
    # bf16 read by numpy's shift agrees with torch's own bfloat16 conversion
    try:
        import torch
        got = check_rules(path, tensors, {"format": "pt"})["specials.bf16"][1]
        t = torch.frombuffer(bytearray(got), dtype=torch.bfloat16).float().numpy()
        check(np.array_equal(t.view("<u4"), numpy_bits("bfloat16", got, [10]).ravel()),
              "bf16: torch and numpy disagree")
    except ImportError:
        pass


def test_views():
    """views, shared storage, scalars, zero-size, awkward names and metadata"""
    d = folder()
    base = np.arange(24, dtype="<f4").tobytes()
    tensors = [
        Tensor("w", "float32", [4, 6], base, 0),
        Tensor("w.T", "float32", [6, 4], base, 0, [1, 6]),          # shares w's storage
        Tensor("w.row2", "float32", [6], base, 0, [1], 12),          # storage offset
        Tensor("w.col", "float32", [4], base, 0, [6], 5),            # strided
        Tensor("bcast", "float32", [3, 4], base, 0, [0, 1], 2),      # stride 0
        Tensor("scalar", "float64", [], struct.pack("<d", 2.5), 1),
        Tensor("empty", "int64", [0, 7], b"", 2),
        Tensor("quote\"back\\slash\nnl\ttab\x01ctl", "uint8", [1], b"\x07", 3),
        Tensor("\u00fcnic\u00f8de \u6f22\u5b57 \U0001F600", "int16", [2], b"\x01\x02\x03\x04", 4),
        Tensor("", "bool", [2], b"\x00\x01", 5),
    ]
    meta = {"k\"ey": "v\\al\nue", "\u00e9": "\U0001F600", "empty": ""}
    path = os.path.join(d, "views.safetensors")
    write_with_mate(tensors, meta, path)
    check_file(path, tensors, meta)


def test_empty():
    """no tensors; metadata only"""
    d = folder()
    path = os.path.join(d, "empty.safetensors")
    write_with_mate([], None, path)
    check_file(path, [], None)
    with open(path, "rb") as f:
        check(f.read() == b"\x08" + b"\x00" * 7 + b"{}      ", "empty file bytes")
    write_with_mate([], {"a": "b"}, path)
    check_file(path, [], {"a": "b"})


def test_random():
    """random dicts"""
    d = folder()
    for r in range(6):
        tensors = random_tensors(RNG, 25)
        meta = None if r % 2 else {"round": str(r)}
        path = os.path.join(d, "random%d.safetensors" % r)
        write_with_mate(tensors, meta, path)
        check_file(path, tensors, meta)


run_cases(test_dtypes, test_views, test_empty, test_random)
