# mate-python: peers
"""test_safetensors_peers.py: libmate's .safetensors against the safetensors library itself.

mate's files load with safetensors.torch.load_file and safetensors.numpy.load_file
(and safe_open's metadata); files the library writes (safetensors.torch.save_file
and safetensors.numpy.save_file: every dtype each has, __metadata__, empty and
0-dim tensors) read in libmate with exact bytes; and of a set of hostile files,
libmate refuses exactly those the library refuses, but for the gaps KNOWN_GAPS names.
"""
import json
import os
import struct

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch
from safetensors import safe_open

from mate_test import build_path, check, run, run_cases, tmpdir
from torch_expect import random_bytes

TOOL = build_path("tests", "tensorfile-tool")
TMP = tmpdir()
VERBOSE = os.environ.get("MATE_TEST_VERBOSE") == "1"

# torch dtype -> (mate dtype name, safetensors name); every dtype safetensors.torch saves
TORCH = {
    torch.float64: ("float64", "F64"), torch.float32: ("float32", "F32"),
    torch.float16: ("float16", "F16"), torch.bfloat16: ("bfloat16", "BF16"),
    torch.int64: ("int64", "I64"), torch.int32: ("int32", "I32"), torch.int16: ("int16", "I16"),
    torch.int8: ("int8", "I8"), torch.uint8: ("uint8", "U8"), torch.bool: ("bool", "BOOL"),
    torch.uint16: ("uint16", "U16"), torch.uint32: ("uint32", "U32"),
    torch.uint64: ("uint64", "U64"), torch.complex64: ("complex64", "C64"),
    torch.float8_e4m3fn: ("float8_e4m3fn", "F8_E4M3"), torch.float8_e5m2: ("float8_e5m2", "F8_E5M2"),
    torch.float8_e4m3fnuz: ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
    torch.float8_e5m2fnuz: ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
    torch.float8_e8m0fnu: ("float8_e8m0fnu", "F8_E8M0"),
}
# What the library takes and libmate refuses, on purpose: {hostile case: libmate's message}.
# More than MATE_MAX_DIMS (32) dimensions: mate's tensor holds 32. A tensor name twice: the
# library keeps the last (serde's map) and drops the first unseen; mate refuses the file,
# by choice (spec tensor-files.md, C4).
KNOWN_GAPS = {"many_dims": "mate supports 32", "duplicate_key_same": "duplicate tensor name 'a'"}
# numpy dtype -> mate dtype name; every dtype safetensors.numpy has
NUMPY = {np.float64: "float64", np.float32: "float32", np.float16: "float16",
         np.int64: "int64", np.uint64: "uint64", np.int32: "int32", np.uint32: "uint32",
         np.int16: "int16", np.uint16: "uint16", np.int8: "int8", np.uint8: "uint8",
         np.bool_: "bool", np.complex64: "complex64"}


def describe(path):
    """libmate's reading: (root, metadata) as JSON, or (None, error)."""
    p = run([TOOL, "describe", path], check=False)
    if p.returncode != 0:
        return None, p.stderr.strip()
    j = json.loads(p.stdout)
    return j, None


def tensors_of(j):
    """{name: (dtype, shape, bytes)} from tensorfile-tool's JSON (a safetensors root is a dict)."""
    out = {}
    for k, v in j["root"]["items"]:
        data = bytes.fromhex(v.get("hex", ""))
        out[k["value"]] = (v["dtype"], [int(x) for x in v["shape"]], data)
    return out


def metadata_of(j):
    m = j.get("metadata")
    if m is None:
        return None
    return {k["value"]: v["value"] for k, v in m["items"]}


def check_read(what, path, want, meta):
    """Checks that libmate reads the safetensors.<what> file path as want
    {name: (dtype, shape, bytes)}, with the metadata meta."""
    j, err = describe(path)
    check(j is not None, "safetensors.%s file: libmate failed: %s" % (what, err))
    if j is None:
        return
    got = tensors_of(j)
    for k, w in want.items():
        check(got.get(k) == w, "%s file %s: got %r, expected %r" % (what, k, got.get(k, ("-",))[:2], w[:2]))
    check(set(got) == set(want), "%s file: names %s" % (what, sorted(set(got) ^ set(want))))
    check(metadata_of(j) == meta, "%s file: metadata %r, expected %r" % (what, metadata_of(j), meta))


def tbytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


# ---- the library writes, libmate reads ----------------------------------------

def test_read_torch_files():
    """safetensors.torch.save_file: every dtype, empty and 0-dim tensors, __metadata__."""
    obj, want = {}, {}
    for n, (dt, (name, _)) in enumerate(TORCH.items()):
        for suffix, shape in (("", (3, 4)), ("_empty", (2, 0)), ("_row", (1, 6))):
            t = random_bytes(dt, shape, n)
            obj[name + suffix] = t
            want[name + suffix] = (name, list(shape), tbytes(t))
        t = random_bytes(dt, (), 50 + n)
        obj[name + "_scalar"] = t
        want[name + "_scalar"] = (name, [], tbytes(t))
    meta = {"format": "pt", "note": "h\u00e9 \u4e16\u754c", "empty": ""}
    path = os.path.join(TMP, "lib_torch.safetensors")
    safetensors.torch.save_file(obj, path, metadata=meta)
    check_read("torch", path, want, meta)


def test_float4():
    """safetensors.torch writes float4_e2m1fn_x2 as F4, its last dimension counting values
    (twice the bytes): libmate reads torch's shape and bytes, and what libmate writes the
    library loads as the same tensor."""
    t = random_bytes(torch.float4_e2m1fn_x2, (2, 3), 61)
    empty = torch.empty(4, 0, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    path = os.path.join(TMP, "lib_f4.safetensors")
    safetensors.torch.save_file({"x": t, "e": empty}, path)
    header = json.loads(open(path, "rb").read()[8:][:struct.unpack("<Q", open(path, "rb").read(8))[0]])
    check(header["x"]["dtype"] == "F4" and header["x"]["shape"] == [2, 6], "the library's F4: %s" % header)
    check_read("torch F4", path, {"x": ("float4_e2m1fn_x2", [2, 3], tbytes(t)),
                                  "e": ("float4_e2m1fn_x2", [4, 0], b"")}, None)
    out = os.path.join(TMP, "mate_f4.safetensors")
    mate_write(out, [("x", "float4_e2m1fn_x2", [2, 3], [3, 1], 0, tbytes(t)),
                     ("y", "float4_e2m1fn_x2", [3, 2], [1, 3], 0, tbytes(t))], None)
    got = safetensors.torch.load_file(out)
    check(got["x"].dtype == torch.float4_e2m1fn_x2 and list(got["x"].shape) == [2, 3] and
          tbytes(got["x"]) == tbytes(t), "the library loads libmate's F4: %r" % (got["x"],))
    check(list(got["y"].shape) == [3, 2] and tbytes(got["y"]) == tbytes(t.view(torch.uint8).t()),
          "a strided float4 view written contiguous: %r" % (got["y"].view(torch.uint8),))


def test_read_numpy_files():
    """safetensors.numpy.save_file: every numpy dtype it has, with and without metadata."""
    rng = np.random.default_rng(7)
    obj, want = {}, {}
    for n, (npdt, name) in enumerate(NUMPY.items()):
        size = np.dtype(npdt).itemsize
        for suffix, shape in (("", (2, 5)), ("_empty", (0,)), ("_scalar", ())):
            count = int(np.prod(shape))
            raw = rng.integers(0, 256, count * size, dtype=np.uint8)
            if npdt is np.bool_:
                raw &= 1
            a = raw.view(npdt).reshape(shape)
            obj[name + suffix] = a
            want[name + suffix] = (name, list(shape), a.tobytes())
    for meta in (None, {"k": "v"}):
        path = os.path.join(TMP, "lib_numpy.safetensors")
        safetensors.numpy.save_file(obj, path, metadata=meta)
        check_read("numpy", path, want, meta)


# ---- libmate writes, the library reads ----------------------------------------

def mate_write(path, tensors, metadata):
    """tensors: [(name, mate dtype, shape, stride, offset, storage bytes)]: views libmate writes."""
    items = []
    for sid, (name, dtype, shape, stride, offset, storage) in enumerate(tensors):
        items.append([{"type": "str", "value": name},
                      {"type": "tensor", "dtype": dtype, "shape": shape, "stride": stride,
                       "offset": offset, "storage": sid, "hex": storage.hex()}])
    spec = {"root": {"type": "dict", "ordered": False, "items": items},
            "metadata": None if metadata is None else {
                "type": "dict", "ordered": False,
                "items": [[{"type": "str", "value": k}, {"type": "str", "value": v}]
                          for k, v in metadata.items()]}}
    with open(path + ".json", "w") as f:
        json.dump(spec, f)
    run([TOOL, "write", path + ".json", path])


def test_library_loads_mate():
    """Every dtype libmate writes, as contiguous and strided views, loads with both loaders."""
    tensors, want = [], {}
    for n, (dt, (name, _)) in enumerate(TORCH.items()):
        t = random_bytes(dt, (4, 6), 200 + n)
        storage = tbytes(t)
        tensors.append((name, name, [4, 6], [6, 1], 0, storage))
        want[name] = t
        tensors.append((name + "_t", name, [6, 4], [1, 6], 0, storage))
        want[name + "_t"] = t.t()
        tensors.append((name + "_sub", name, [2, 2], [6, 2], 7, storage))
        want[name + "_sub"] = t.as_strided((2, 2), (6, 2), 7)
        tensors.append((name + "_empty", name, [0, 3], [3, 1], 0, b""))
        want[name + "_empty"] = torch.empty((0, 3), dtype=dt)
        tensors.append((name + "_scalar", name, [], [], 5, storage))
        want[name + "_scalar"] = t.reshape(-1)[5].clone()
    meta = {"format": "pt", "who": "mate"}
    path = os.path.join(TMP, "mate.safetensors")
    mate_write(path, tensors, meta)
    got = safetensors.torch.load_file(path)
    check(set(got) == set(want), "torch.load_file: names %s" % sorted(set(got) ^ set(want)))
    for k, w in want.items():
        g = got.get(k)
        ok = g is not None and g.dtype == w.dtype and g.shape == w.shape and tbytes(g) == tbytes(w)
        check(ok, "torch.load_file %s: %s %s" % (k, getattr(g, "dtype", None), getattr(g, "shape", None)))
    with safe_open(path, framework="pt") as f:
        check(f.metadata() == meta, "safe_open metadata %r" % f.metadata())
    # safetensors.numpy: its dtypes only (it has no bfloat16, float8, float4)
    np_names = set(NUMPY.values())
    np_tensors = [t for t in tensors if t[1] in np_names]
    path = os.path.join(TMP, "mate_np.safetensors")
    mate_write(path, np_tensors, None)
    got = safetensors.numpy.load_file(path)
    check(set(got) == {t[0] for t in np_tensors}, "numpy.load_file: names")
    for name, *_ in np_tensors:
        g, w = got.get(name), want[name]
        ok = (g is not None and str(g.dtype) == {"bool": "bool"}.get(w.dtype, str(w.dtype)[6:])
              and list(g.shape) == list(w.shape) and g.tobytes() == tbytes(w))
        check(ok, "numpy.load_file %s: %s %s" % (name, getattr(g, "dtype", None), getattr(g, "shape", None)))


# ---- hostile files: libmate refuses what the library refuses -----------------

def raw_file(name, header, data=b"", hlen=None):
    """A file of an 8-byte length (hlen, else the header's), header bytes, data."""
    if not isinstance(header, bytes):
        header = json.dumps(header, separators=(",", ":")).encode()
    path = os.path.join(TMP, "hostile_%s.safetensors" % name)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header) if hlen is None else hlen) + header + data)
    return path


def library_refuses(path):
    """Whether the library refuses the file: opening it, its metadata or any tensor (torch)."""
    try:
        with safe_open(path, framework="pt") as f:
            f.metadata()
            for k in f.keys():
                f.get_tensor(k)
        safetensors.torch.load_file(path)
        return None
    except Exception as e:      # the library raises several types
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:100] if str(e) else "")


def t(dtype, shape, offsets):
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


HOSTILE = [
    # (name, header, data, hlen)
    ("valid", {"a": t("F32", [2], [0, 8])}, bytes(8), None),
    ("valid_padded", b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}   ', b"x", None),
    ("valid_empty", {}, b"", None),
    ("valid_meta_only", {"__metadata__": {"a": "b"}}, b"", None),
    ("extra_field", {"a": dict(t("U8", [1], [0, 1]), extra=1)}, b"x", None),
    ("short_file", b"", b"", 100),
    ("tiny_file", None, None, None),
    ("hlen_past_end", {"a": t("U8", [1], [0, 1])}, b"x", 1000),
    ("hlen_huge", {"a": t("U8", [1], [0, 1])}, b"x", 100000001),
    ("hlen_zero", b"", b"", 0),
    ("not_json", b"{not json}", b"", None),
    ("not_object", b"[1,2]", b"", None),
    ("bad_utf8", b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x", None),
    ("bom", b'\xef\xbb\xbf{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x", None),
    ("nul_padding", b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\0\0', b"x", None),
    ("pretty", b'{\n  "a": {\n    "dtype": "U8",\n    "shape": [1],\n    "data_offsets": [0, 1]\n  }\n}\n',
     b"x", None),
    ("key_order", {"b": t("U8", [1], [1, 2]), "a": t("U8", [1], [0, 1])}, b"xy", None),
    ("leading_space", b' {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x", None),
    ("trailing_garbage", b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}x', b"x", None),
    ("overlap", {"a": t("U8", [8], [0, 8]), "b": t("U8", [8], [4, 12])}, bytes(12), None),
    ("gap", {"a": t("U8", [4], [0, 4]), "b": t("U8", [4], [8, 12])}, bytes(12), None),
    ("past_end", {"a": t("U8", [8], [0, 8])}, bytes(4), None),
    ("data_left_over", {"a": t("U8", [4], [0, 4])}, bytes(8), None),
    ("begin_after_end", {"a": t("U8", [0], [4, 0])}, bytes(4), None),
    ("size_mismatch", {"a": t("F32", [3], [0, 8])}, bytes(8), None),
    ("shape_overflow", {"a": t("U8", [2**32, 2**32, 0], [0, 0])}, b"", None),
    ("negative_dim", b'{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}', b"", None),
    ("float_dim", b'{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', b"x", None),
    ("offsets_three", {"a": t("U8", [1], [0, 1, 1])}, b"x", None),
    ("duplicate_key", b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                      b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy", None),
    ("duplicate_key_same", b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                           b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x", None),
    ("duplicate_metadata", b'{"__metadata__":{"a":"b"},"__metadata__":{"a":"c"}}', b"", None),
    ("unknown_dtype", {"a": t("F128", [1], [0, 16])}, bytes(16), None),
    ("lowercase_dtype", {"a": t("f32", [1], [0, 4])}, bytes(4), None),
    ("dtype_not_string", {"a": t(7, [1], [0, 1])}, b"x", None),
    ("missing_dtype", {"a": {"shape": [1], "data_offsets": [0, 1]}}, b"x", None),
    ("missing_offsets", {"a": {"dtype": "U8", "shape": [1]}}, b"x", None),
    ("metadata_int", {"__metadata__": {"a": 1}}, b"", None),
    ("metadata_null", {"__metadata__": {"a": None}}, b"", None),
    ("metadata_nested", {"__metadata__": {"a": {"b": "c"}}}, b"", None),
    ("metadata_not_object", {"__metadata__": "x"}, b"", None),
    ("metadata_null_whole", {"__metadata__": None}, b"", None),
    ("tensor_not_object", {"a": [1]}, b"", None),
    ("f4_odd", {"a": t("F4", [3], [0, 2])}, bytes(2), None),
    ("f4_pairs", {"a": t("F4", [2, 4], [0, 4])}, bytes(4), None),
    ("f4_odd_last_dim", {"a": t("F4", [2, 3], [0, 3])}, bytes(3), None),
    ("f6", {"a": t("F6_E3M2", [4], [0, 3])}, bytes(3), None),
    ("many_dims", {"a": t("U8", [1] * 40, [0, 1])}, b"x", None),
]


def test_hostile():
    """Each hostile file: libmate refuses it exactly when the library does."""
    agree = 0
    for name, header, data, hlen in HOSTILE:
        if header is None:
            path = os.path.join(TMP, "hostile_tiny.safetensors")
            with open(path, "wb") as f:
                f.write(b"\x05\x00\x00")
        else:
            path = raw_file(name, header, data, hlen)
        lib = library_refuses(path)
        j, err = describe(path)
        mate = err if j is None else None
        said = "the library %s, libmate %s" % (
            "refuses (%s)" % lib if lib else "accepts", "refuses (%s)" % mate if mate else "accepts")
        if VERBOSE:
            print("%-20s %s" % (name, said))
        if name in KNOWN_GAPS:
            check(lib is None and mate is not None and KNOWN_GAPS[name] in mate,
                  "%s (a known gap): %s" % (name, said))
            continue
        same = (lib is None) == (mate is None)
        agree += same
        check(same, "%s: %s" % (name, said))
    print("hostile files: libmate and safetensors %s agree on %d of %d (%d known gaps)"
          % (safetensors.__version__, agree, len(HOSTILE) - len(KNOWN_GAPS), len(KNOWN_GAPS)))


run_cases(test_read_torch_files, test_float4, test_read_numpy_files, test_library_loads_mate,
          test_hostile)
