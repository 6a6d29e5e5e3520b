"""test_pt_read_interop.py: libmate reads real torch.save output (1.13, and 2.x through tests/torch2/) bit-exactly, compared through tensorfile-tool describe."""
import collections
import io
import os
import zipfile

import torch

from mate_test import check, run_cases, tmpdir
from torch_expect import Expect, check_read, describe, same

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
          torch.complex64, torch.complex128]


def roundtrip(name, obj, path=None, **save_args):
    """torch.save(obj), read it with libmate, compare with torch.load's view."""
    path = path or os.path.join(TMP, name + ".pt")
    torch.save(obj, path, **save_args)
    check_read(name, path, weights_only=False)


def values(dt):
    torch.manual_seed(DTYPES.index(dt))
    if dt == torch.bool:
        return torch.rand(5, 7) > 0.5
    if dt.is_complex:
        t = torch.randn(5, 7, dtype=dt)
        t[0, 0] = complex(float("nan"), float("-inf"))
        return t
    if dt.is_floating_point:
        t = torch.randn(5, 7).to(dt)
        t[0, :4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0]).to(dt)
        return t
    info = torch.iinfo(dt)
    t = torch.randint(info.min, info.max, (5, 7), dtype=dt)
    t[0, 0], t[0, 1] = info.min, info.max
    return t


def test_dtypes():
    for dt in DTYPES:
        roundtrip("dtype_" + str(dt)[6:], {"x": values(dt), "col": values(dt)[:, 2]})


def test_views():
    a = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    roundtrip("views", {
        "a": a, "t": a.t(), "slice": a.view(-1)[5:9], "step": a[:, ::2],
        "expand": torch.ones(3).expand(4, 3), "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3), "empty_view": a.view(-1)[20:],
        "shared_again": a[1:3, 1:], "other": torch.arange(3)})
    big = torch.arange(1 << 20, dtype=torch.int32)
    roundtrip("large", [big, big[::3]])


def test_modules():
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2),
                            torch.nn.BatchNorm1d(2))
    roundtrip("state_dict", m.state_dict())
    p = torch.nn.Parameter(torch.randn(3, 2))
    roundtrip("parameter", {"p": p, "plain": p.data, "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False)})


def test_plain_values():
    obj = {
        "ints": [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, 2**31, -2**31, -2**31 - 1,
                 2**63 - 1, -2**63],
        "floats": [0.0, -0.0, 1.5, 1e300, -1e-300, float("inf"), float("-inf"), float("nan"), 0.1],
        "strings": ["", "ascii", "h\u00e9llo", "\u4e2d\u6587", "\U0001f600", "x" * 300],
        "none": None, "bools": (True, False),
        "nested": {"a": [1, (2, 3, {"b": [None]})], 7: "int key", (1, 2): "tuple key"},
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4, 5)],
        "bytes": [b"", b"\x00\xff\x80abc", bytes(range(256))],
        "dtypes": [torch.float16, torch.bfloat16, torch.int64, torch.bool],
        "devices": [torch.device("cpu"), torch.device("cuda", 1)],
        "size": torch.Size([2, 3]),
        "ordered": collections.OrderedDict([("z", 1), ("a", 2)]),
        "many": list(range(2500)),
        "set": {3, 1, 200, 7},
        "t": torch.arange(4),
    }
    roundtrip("plain", obj)
    roundtrip("protocol3", obj, pickle_protocol=3)
    roundtrip("list_of_tensors", [torch.full((2,), i, dtype=torch.int16) for i in range(1200)])
    roundtrip("tensor_only", torch.arange(6).reshape(2, 3))


def test_roots():
    roundtrip("model.v2", {"x": torch.ones(2)}, path=os.path.join(TMP, "model.v2.pt"))
    roundtrip("utf8 root", {"x": torch.ones(2)}, path=os.path.join(TMP, "\u043c\u043e\u0434\u0435\u043b\u044c.pt"))
    buf = io.BytesIO()
    torch.save({"x": torch.ones(2)}, buf)
    path = os.path.join(TMP, "fileobj.pt")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    check_read("file object (root archive)", path, weights_only=False)


def rewrite(src, dst, compression=zipfile.ZIP_STORED, stream=False, crc_zero=False):
    """Copies a torch zip entry by entry with Python's zipfile."""
    zin = zipfile.ZipFile(src)
    out = open(dst, "wb")

    class Unseekable:
        def write(self, b):
            return out.write(b)

        def flush(self):
            out.flush()

    zout = zipfile.ZipFile(Unseekable() if stream else out, "w", compression)
    for info in zin.infolist():
        zout.writestr(info.filename, zin.read(info.filename))
    zout.close()
    out.close()
    if crc_zero:
        data = bytearray(open(dst, "rb").read())
        i = data.find(b"PK\x01\x02")
        while i >= 0:
            data[i + 16:i + 20] = b"\0\0\0\0"
            i = data.find(b"PK\x01\x02", i + 4)
        i = data.find(b"PK\x03\x04")
        while i >= 0:
            data[i + 14:i + 18] = b"\0\0\0\0"
            i = data.find(b"PK\x03\x04", i + 4)
        open(dst, "wb").write(bytes(data))


def test_zip_variants():
    src = os.path.join(TMP, "variants.pt")
    torch.save({"a": torch.arange(100, dtype=torch.float64), "b": [1, "two"]}, src)
    for name, kw in [("deflate", {"compression": zipfile.ZIP_DEFLATED}),
                     ("descriptors", {"stream": True}),
                     ("crc0", {"crc_zero": True})]:
        dst = os.path.join(TMP, name + ".pt")
        rewrite(src, dst, **kw)
        ref = torch.load(src, weights_only=False)
        got, err = describe(dst)
        check(got is not None, "%s: libmate failed: %s" % (name, err))
        if got is not None:
            diff = same(got, Expect()(ref))
            check(diff is None, "%s: %s" % (name, diff))


def test_rejects():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    path = os.path.join(TMP, "evil.pt")
    torch.save({"x": Evil()}, path)
    got, err = describe(path)
    check(got is None and "is not allowed" in (err or "") and "system" in err,
          "os.system pickle: %s" % err)
    path = os.path.join(TMP, "legacy.pt")
    torch.save({"x": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    got, err = describe(path)
    check(got is None and "legacy torch.save format (pre-1.6) is not supported" in (err or ""),
          "legacy: %s" % err)
    path = os.path.join(TMP, "script.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path)
    got, err = describe(path)
    check(got is None and "TorchScript" in (err or ""), "TorchScript: %s" % err)
    path = os.path.join(TMP, "proto4.pt")
    torch.save({"x": torch.ones(2)}, path, pickle_protocol=4)
    got, err = describe(path)
    check(got is None and "opcode 0x93" in (err or ""), "protocol 4: %s" % err)


TMP = tmpdir()
run_cases(test_dtypes, test_views, test_modules, test_plain_values, test_roots, test_zip_variants,
          test_rejects)
