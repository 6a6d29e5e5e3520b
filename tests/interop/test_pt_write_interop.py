"""test_pt_write_interop.py: .pt files written by libmate (through tests/tensorfile-tool) loaded by real
torch: Debian's 1.13, and torch 2.x (tests/torch2/) with weights_only=True, False and mmap=True."""
import collections
import io
import json
import os
import pickle
import pickletools
import random
import struct
import zipfile

import torch

from mate_test import build_path, check, run, run_cases, tmpdir, untyped_storage
from mate_test import storage_bytes as raw

TOOL = build_path("tests", "tensorfile-tool")
TMP = tmpdir()
RNG = random.Random(1234)

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16",
          "int8", "uint8", "bool", "complex64", "complex128"]
if TORCH2:      # the dtypes torch 2.x added that libmate writes (as _rebuild_tensor_v3)
    DTYPES += ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
               "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32", "uint64"]


# ---- spec helpers -------------------------------------------------------------

def s(v):
    return {"type": "str", "value": v}


def i(v):
    return {"type": "int", "value": str(v)}


def d(items, ordered=False):
    return {"type": "dict", "ordered": ordered, "items": [[s(k), v] for k, v in items]}


def storage_bytes(dtype, numel):
    size = torch.empty(0, dtype=getattr(torch, dtype)).element_size() if hasattr(torch, dtype) else 1
    if dtype == "bool":
        return bytes(RNG.randrange(2) for _ in range(numel))
    return bytes(RNG.randrange(256) for _ in range(numel * size))


def tensor(dtype, shape, stride, offset, sid, data=None):
    t = {"type": "tensor", "dtype": dtype, "shape": shape, "stride": stride,
         "offset": offset, "storage": sid}
    if data is not None:
        t["hex"] = data.hex()
    return t


def write(name, root, *flags):
    spec = os.path.join(TMP, name + ".json")
    out = os.path.join(TMP, name + ".pt")
    with open(spec, "w") as f:
        json.dump({"root": root}, f)
    run([TOOL, "write", spec, out] + list(flags))
    return out


MODES = ("weights_only=True", "weights_only=False") + (
    ("mmap=True", "mmap=True calculate_storage_offsets") if TORCH2 else ())


def load_both(path):
    """torch.load with weights_only True and False (and mmap=True under torch 2.x, also with
    its config.load.calculate_storage_offsets, which applies to files with a .format_version:
    libmate writes none); all must agree."""
    got = [torch.load(path, weights_only=True), torch.load(path, weights_only=False)]
    if TORCH2:
        from torch.utils.serialization import config
        got.append(torch.load(path, weights_only=True, mmap=True))
        old = config.load.calculate_storage_offsets
        os.environ["TORCH_SERIALIZATION_DEBUG"] = "1"    # torch checks its offsets then
        try:
            config.load.calculate_storage_offsets = True
            got.append(torch.load(path, weights_only=True, mmap=True))
        finally:
            config.load.calculate_storage_offsets = old
            del os.environ["TORCH_SERIALIZATION_DEBUG"]
    return got


def bits(t):
    """Elements of t reinterpreted as integers, so NaNs compare bit by bit."""
    t = t.reshape(-1)
    if t.is_complex():
        t = torch.view_as_real(t).reshape(-1)
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def expect_tensor(t, dtype, shape, stride, offset, data, what):
    ok = (isinstance(t, torch.Tensor) and t.dtype == getattr(torch, dtype)
          and list(t.shape) == shape and t.stride() == tuple(stride)
          and t.storage_offset() == offset)
    check(ok, "%s: got %s %s stride %s offset %s" % (
        what, getattr(t, "dtype", t), list(getattr(t, "shape", [])),
        t.stride() if ok or isinstance(t, torch.Tensor) else None,
        t.storage_offset() if isinstance(t, torch.Tensor) else None))
    if not ok:
        return
    check(raw(t) == data, "%s: storage bytes differ" % what)
    ref = torch.frombuffer(bytearray(data), dtype=t.dtype) if data else torch.empty(0, dtype=t.dtype)
    ref = ref.as_strided(shape, stride, offset)
    check(torch.equal(bits(t), bits(ref)), "%s: element bits differ" % what)


# ---- tests ----------------------------------------------------------------------

def test_all_dtypes():
    """Every dtype torch 1.13 has, contiguous and as strided views with offsets."""
    items, expect = [], []
    sid = 0
    for dt in DTYPES:
        data = storage_bytes(dt, 24)
        cases = [([2, 3], [3, 1], 0), ([3, 2], [1, 3], 0),      # contiguous, transposed
                 ([2, 2], [6, 2], 5), ([4, 3], [0, 1], 2)]       # offset view, expand-like
        for n, (shape, stride, off) in enumerate(cases):
            key = "%s_%d" % (dt, n)
            items.append((key, tensor(dt, shape, stride, off, sid, data if n == 0 else None)))
            expect.append((key, dt, shape, stride, off, data))
        sid += 1
    path = write("dtypes", d(items))
    for mode, got in zip(MODES, load_both(path)):
        check(list(got.keys()) == [e[0] for e in expect], "%s: keys in order" % mode)
        for key, dt, shape, stride, off, data in expect:
            expect_tensor(got.get(key), dt, shape, stride, off, data, "%s %s" % (mode, key))
        # Views of one storage share it after loading.
        for dt in DTYPES:
            ptrs = {untyped_storage(got["%s_%d" % (dt, n)]).data_ptr() for n in range(4)}
            check(len(ptrs) == 1, "%s %s: the four views share one storage" % (mode, dt))
    # Every entry's data starts on a multiple of 64 bytes, as torch 2.x writes them
    # (its mmap=True loads storages where they lie: a complex128 one at an odd
    # offset crashed torch 2.15).
    with open(path, "rb") as f:
        for info in zipfile.ZipFile(path).infolist():
            f.seek(info.header_offset + 26)
            nlen, xlen = struct.unpack("<HH", f.read(4))
            at = info.header_offset + 30 + nlen + xlen
            check(at % 64 == 0, "%s: data at offset %d, not a multiple of 64" % (info.filename, at))
    names = zipfile.ZipFile(path).namelist()
    want = (["archive/data.pkl", "archive/byteorder"]
            + ["archive/data/%d" % n for n in range(len(DTYPES))] + ["archive/version"])
    check(names == want, "zip entries: %s" % names)


def test_shared_and_special_shapes():
    """Shared storages written once; 0-dim and empty tensors; custom root."""
    a = storage_bytes("float32", 10)
    b = storage_bytes("int64", 1)
    root = d([
        ("x", tensor("float32", [2, 3], [3, 1], 1, 0, a)),
        ("y", tensor("float32", [3], [2], 0, 0)),
        ("scalar", tensor("int64", [], [], 0, 1, b)),
        ("empty", tensor("float16", [0, 3], [3, 1], 0, 2, b"")),
        ("x_again", tensor("float32", [10], [1], 0, 0)),
    ])
    path = write("shared", root, "--root", "my_model")
    names = zipfile.ZipFile(path).namelist()
    check(names == ["my_model/data.pkl", "my_model/byteorder", "my_model/data/0",
                    "my_model/data/1", "my_model/data/2", "my_model/version"],
          "shared: entries %s" % names)
    check(zipfile.ZipFile(path).read("my_model/data/0") == a, "shared: record 0 is the whole storage")
    for mode, got in zip(MODES, load_both(path)):
        expect_tensor(got["x"], "float32", [2, 3], [3, 1], 1, a, mode + " x")
        expect_tensor(got["y"], "float32", [3], [2], 0, a, mode + " y")
        expect_tensor(got["scalar"], "int64", [], [], 0, b, mode + " scalar")
        expect_tensor(got["empty"], "float16", [0, 3], [3, 1], 0, b"", mode + " empty")
        check(untyped_storage(got["x"]).data_ptr() == untyped_storage(got["y"]).data_ptr()
              == untyped_storage(got["x_again"]).data_ptr(), mode + ": x, y, x_again share storage")
        check(got["scalar"].dim() == 0 and got["scalar"].item() == int.from_bytes(b, "little", signed=True),
              mode + ": scalar value")
        got["x_again"][0] = 42.0
        check(got["x"].as_strided((1,), (1,), 0)[0] == 42.0, mode + ": a write through one view shows in the other")


def test_long_root():
    """The longest root folder libmate takes (255 bytes; torch reads 511 of a name and
    refused libmate's files with a root of 1024): entries aligned, loadable."""
    data = storage_bytes("float64", 3)
    path = write("longroot", d([("x", tensor("float64", [3], [1], 0, 0, data))]), "--root", "r" * 255)
    with open(path, "rb") as f:
        for info in zipfile.ZipFile(path).infolist():
            f.seek(info.header_offset + 26)
            nlen, xlen = struct.unpack("<HH", f.read(4))
            check((info.header_offset + 30 + nlen + xlen) % 64 == 0, "long root: %s aligned" % info.filename[255:])
    for mode, got in zip(MODES, load_both(path)):
        expect_tensor(got["x"], "float64", [3], [1], 0, data, mode + " long root x")


def test_plain_values():
    """Nested dicts, lists and tuples of tensors and plain values, weights_only=True."""
    t = storage_bytes("int32", 4)
    root = d([
        ("ints", {"type": "list", "items": [i(v) for v in
                  (0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31, -2**31 - 1,
                   2**40, -2**40, 2**63 - 1, -2**63)]}),
        ("text", {"type": "tuple", "items": [s("plain"), s("h\u00e9 \u4e16\u754c \U0001f600"), s("")]}),
        ("flags", {"type": "list", "items": [{"type": "bool", "value": True},
                                             {"type": "bool", "value": False}, {"type": "none"}]}),
        ("nested", d([("inner", d([("t", tensor("int32", [2, 2], [2, 1], 0, 0, t)),
                                   ("l", {"type": "list", "items": [
                                       {"type": "tuple", "items": [tensor("int32", [4], [1], 0, 0), i(3)]}]})])),
                      ("od", d([("b", i(2)), ("a", i(1))], ordered=True)),
                      ("tuple4", {"type": "tuple", "items": [i(1), i(2), i(3), i(4)]}),
                      ("empty", {"type": "tuple", "items": [{"type": "list", "items": []},
                                                            {"type": "dict", "ordered": False, "items": []},
                                                            {"type": "tuple", "items": []}]})])),
        ("dtype", {"type": "dtype", "value": "float32"}),
        ("enum", {"type": "enum", "name": "Mode.FAST", "value": 1}),
        ("object", {"type": "object", "name": "Foo", "repr": "Foo(x=1)"}),
        ("big_list", {"type": "list", "items": [i(n) for n in range(2500)]}),
        ("big_dict", d([("k%d" % n, i(n)) for n in range(1500)])),
    ])
    path = write("plain", root)
    for mode, got in zip(MODES, load_both(path)):
        check(got["ints"] == [0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31,
                              -2**31 - 1, 2**40, -2**40, 2**63 - 1, -2**63], mode + ": ints %s" % got["ints"])
        check(got["text"] == ("plain", "h\u00e9 \u4e16\u754c \U0001f600", ""), mode + ": text %r" % (got["text"],))
        check(got["flags"] == [True, False, None], mode + ": flags")
        inner = got["nested"]["inner"]
        expect_tensor(inner["t"], "int32", [2, 2], [2, 1], 0, t, mode + " nested t")
        check(isinstance(inner["l"], list) and isinstance(inner["l"][0], tuple)
              and inner["l"][0][1] == 3, mode + ": list of tuple")
        check(untyped_storage(inner["l"][0][0]).data_ptr() == untyped_storage(inner["t"]).data_ptr(),
              mode + ": nested views share storage")
        od = got["nested"]["od"]
        check(type(od) is collections.OrderedDict and list(od.items()) == [("b", 2), ("a", 1)],
              mode + ": OrderedDict %r" % (od,))
        check(got["nested"]["tuple4"] == (1, 2, 3, 4), mode + ": 4-tuple")
        check(got["nested"]["empty"] == ([], {}, ()), mode + ": empty containers")
        check(got["dtype"] is torch.float32, mode + ": dtype value")
        check(got["enum"] == "Mode.FAST" and got["object"] == "Foo(x=1)", mode + ": enum and object as str")
        check(got["big_list"] == list(range(2500)), mode + ": list of 2500")
        check(list(got["big_dict"].items()) == [("k%d" % n, n) for n in range(1500)], mode + ": dict of 1500")


def test_floats_and_bytes():
    """Floats and bytes load with weights_only=False; 1.13's weights_only=True refuses them,
    torch 2.x's (and mmap=True) loads them."""
    for name, value, want in (
            ("floats", {"type": "list", "items": [{"type": "float", "value": v} for v in
                                                  ("0.5", "-1e300", "inf", "-inf", "nan", "5e-324")]},
             [0.5, -1e300, float("inf"), float("-inf"), "nan", 5e-324]),
            ("bytes", {"type": "list", "items": [{"type": "bytes", "hex": h} for h in ("", "00ff80417f")]},
             [b"", b"\x00\xff\x80A\x7f"])):
        path = write(name, d([("v", value)]))
        loads = [("weights_only=False", lambda: torch.load(path, weights_only=False))]
        if TORCH2:
            loads += [("weights_only=True", lambda: torch.load(path, weights_only=True)),
                      ("mmap=True", lambda: torch.load(path, weights_only=True, mmap=True))]
        for mode, load in loads:
            got = load()["v"]
            if name == "floats":
                ok = got[:4] == want[:4] and got[4] != got[4] and got[5] == want[5]
            else:
                ok = got == want
            check(ok, "%s: %s gives %r" % (name, mode, got))
        if TORCH2:
            continue
        try:
            torch.load(path, weights_only=True)
            check(False, "%s: weights_only=True should refuse them (as torch 1.13 does)" % name)
        except pickle.UnpicklingError as e:
            check("weights_only" in str(e).lower() or "Weights only" in str(e),
                  "%s: weights_only=True error: %s" % (name, e))


def test_v3_structure():
    """float8 and uint16 go out as _rebuild_tensor_v3 over an UntypedStorage
    (numel in bytes, dtype GLOBAL last); torch 1.13 cannot load them, so check
    the opcodes with pickletools."""
    data8 = storage_bytes("uint8", 6)
    data16 = storage_bytes("uint8", 14)
    root = d([("f8", tensor("float8_e5m2", [2, 3], [3, 1], 0, 0, data8)),
              ("u16", tensor("uint16", [2, 3], [1, 2], 1, 1, data16)),
              ("f32", tensor("float32", [1], [1], 0, 2, b"\x00\x00\x80\x3f"))])
    path = write("v3", root)
    z = zipfile.ZipFile(path)
    check(z.read("archive/data/0") == data8 and z.read("archive/data/1") == data16, "v3: records")
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read("archive/data.pkl"))]

    def tensor_ops(fn, cls, key, numel, offset, size, stride, dtype):
        seq = [("GLOBAL", "torch._utils " + fn), ("MARK", None), ("MARK", None),
               ("BINUNICODE", "storage"), ("GLOBAL", cls), ("BINUNICODE", key),
               ("BINUNICODE", "cpu"), ("BININT1", numel), ("TUPLE", None), ("BINPERSID", None),
               ("BININT1", offset)]
        for tup in (size, stride):
            seq += [("BININT1", n) for n in tup] + [({1: "TUPLE1", 2: "TUPLE2", 3: "TUPLE3"}[len(tup)], None)]
        seq += [("NEWFALSE", None), ("GLOBAL", "collections OrderedDict"), ("EMPTY_TUPLE", None),
                ("REDUCE", None)]
        if dtype:
            seq.append(("GLOBAL", "torch " + dtype))
        return seq + [("TUPLE", None), ("REDUCE", None)]

    want = [("PROTO", 2), ("EMPTY_DICT", None), ("MARK", None), ("BINUNICODE", "f8")]
    want += tensor_ops("_rebuild_tensor_v3", "torch.storage UntypedStorage", "0", 6, 0, (2, 3), (3, 1),
                       "float8_e5m2")
    want += [("BINUNICODE", "u16")]
    want += tensor_ops("_rebuild_tensor_v3", "torch.storage UntypedStorage", "1", 14, 1, (2, 3), (1, 2),
                       "uint16")
    want += [("BINUNICODE", "f32")]
    want += tensor_ops("_rebuild_tensor_v2", "torch FloatStorage", "2", 1, 0, (1,), (1,), None)
    want += [("SETITEMS", None), ("STOP", None)]
    check(ops == want, "v3: opcodes\n got  %s\n want %s" % (ops, want))

    # --v3 writes every tensor that way, float32 included; numel is in bytes.
    path = write("v3_all", d([("f32", tensor("float32", [2], [1], 1, 0, bytes(12)))]), "--v3")
    ops = [(op.name, arg) for op, arg, _ in
           pickletools.genops(zipfile.ZipFile(path).read("archive/data.pkl"))]
    want = [("PROTO", 2), ("EMPTY_DICT", None), ("BINUNICODE", "f32")]
    want += tensor_ops("_rebuild_tensor_v3", "torch.storage UntypedStorage", "0", 12, 1, (2,), (1,), "float32")
    want += [("SETITEM", None), ("STOP", None)]
    check(ops == want, "--v3: opcodes\n got  %s\n want %s" % (ops, want))

    # What torch 2.x would call: emulate its globals and check the arguments.
    class Emu(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v3"):
                return lambda *a: ("v3",) + a
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            return (module, name)

        def persistent_load(self, pid):
            return pid

    got = Emu(io.BytesIO(zipfile.ZipFile(path).read("archive/data.pkl"))).load()
    check(got == {"f32": ("v3", ("storage", ("torch.storage", "UntypedStorage"), "0", "cpu", 12),
                          1, (2,), (1,), False, collections.OrderedDict(), ("torch", "float32"))},
          "--v3: rebuild arguments %r" % (got,))


run_cases(test_all_dtypes, test_shared_and_special_shapes, test_long_root, test_plain_values,
          test_floats_and_bytes, test_v3_structure)
