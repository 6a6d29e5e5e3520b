# mate-python: peers
"""test_pt_read_torch2.py: every form torch 2.x's torch.save writes reads in libmate, values exact.

The records torch 2.x adds (byteorder, .format_version, .storage_alignment,
.data/serialization_id), entries 64-byte aligned (and 4096 when configured),
_rebuild_tensor_v3 for the dtypes it added (float8, uint16/32/64), files
without CRCs, its own ZIP64 end records (over
65535 entries), views sharing one storage, nested containers; the dtypes mate
has no tensor type for (float4_e2m1fn_x2, bits8/16) refused as such. Each file is
described by tensorfile-tool and compared with what torch.load returns.
"""
import os
import pickletools
import struct
import time
import zipfile

import torch
import torch.serialization as ser
from torch.utils.serialization import config

from mate_test import build_path, check, run, run_cases, tmpdir
from torch_expect import check_read, describe, random_bytes

TMP = tmpdir()
NEW_DTYPES = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
              torch.float8_e5m2fnuz, torch.float8_e8m0fnu, torch.float4_e2m1fn_x2, torch.uint16, torch.uint32,
              torch.uint64]
OLD_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
              torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
              torch.complex64, torch.complex128, torch.complex32]


def entries(path):
    """{name without the root: (data offset, CRC)} of a zip, from its local headers."""
    out = {}
    with open(path, "rb") as f:
        for info in zipfile.ZipFile(path).infolist():
            f.seek(info.header_offset + 26)
            nlen, xlen = struct.unpack("<HH", f.read(4))
            out[info.filename.split("/", 1)[1]] = (info.header_offset + 30 + nlen + xlen, info.CRC)
    return out


def save(name, obj, **kw):
    path = os.path.join(TMP, name + ".pt")
    torch.save(obj, path, **kw)
    return path


def test_records():
    """The default form: its records are there, every entry 64-byte aligned."""
    a = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    path = save("records", {"a": a, "b": torch.ones(3, dtype=torch.complex128)})
    ents = entries(path)
    for rec, want in ((".format_version", b"1"), (".storage_alignment", b"64"), ("byteorder", b"little")):
        got = zipfile.ZipFile(path).read("records/" + rec) if rec in ents else None
        check(got == want, "torch 2.x writes %s = %r (got %r)" % (rec, want, got))
    check(".data/serialization_id" in ents, "torch 2.x writes .data/serialization_id")
    check(all(off % 64 == 0 for off, _ in ents.values()), "torch 2.x aligns entries: %s" % ents)
    check_read("records", path)


def test_dtypes():
    """Every dtype, contiguous and as views; the new ones go out as _rebuild_tensor_v3."""
    obj = {}
    for n, dt in enumerate(OLD_DTYPES + NEW_DTYPES):
        t = random_bytes(dt, (4, 6), n)
        name = str(dt)[6:]
        obj[name] = t
        obj[name + "_t"] = t.t()
        obj[name + "_col"] = t[1:, 3]
    path = save("dtypes", obj)
    pkl = zipfile.ZipFile(path).read("dtypes/data.pkl")
    globals_ = {arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}
    check("torch._utils _rebuild_tensor_v3" in globals_, "torch 2.x emits _rebuild_tensor_v3")
    check("torch.storage UntypedStorage" in globals_, "torch 2.x emits UntypedStorage")
    check_read("dtypes", path)
    # One file per new dtype, so that a dtype libmate lacks is named alone.
    for n, dt in enumerate(NEW_DTYPES):
        t = random_bytes(dt, (3, 5), 100 + n)
        check_read("dtype " + str(dt), save("dt_" + str(dt)[6:], {"x": t, "v": t[:, 1:4:2]}))


def test_unsupported_dtypes():
    """torch 2.x dtypes mate has no tensor type for: refused, naming the dtype."""
    for dt in (torch.bits8, torch.bits16):
        t = torch.zeros(4, dtype=torch.uint8).view(dt)
        got, err = describe(save("unsupported_" + str(dt)[6:], {"x": t}))
        want = "unsupported dtype %s: mate has no such tensor type" % dt
        check(got is None and want in (err or ""), "%s: %s" % (dt, err))


def test_views_and_nesting():
    """Views that share one storage (one record), in nested dicts, lists and tuples."""
    base = torch.arange(64, dtype=torch.int64)
    m = base.view(8, 8)
    obj = {"layers": [{"w": m, "wt": m.t(), "diag": m.diagonal()},
                      ({"slice": base[10:20], "step": base[::7]}, [m[2:5, 1:3], (base[63:],)])],
           "expand": torch.ones(3).expand(4, 3), "scalar": torch.tensor(7, dtype=torch.int16),
           "empty": torch.zeros(0, 4), "none": None, "meta": {"n": 3, "name": "x", "f": 0.25}}
    path = save("views", obj)
    datas = [e for e in entries(path) if e.startswith("data/")]
    check(len(datas) == 4, "views share records: %s" % datas)
    check_read("views", path)
    got, _ = describe(path, False)
    if got is not None:
        ids = []

        def walk(v):
            if v.get("type") == "tensor":
                ids.append((v["dtype"], v["storage"]))
            for item in v.get("items", []):
                for x in (item if isinstance(item, list) else [item]):
                    walk(x)
        walk(got)
        check(len({i for i in ids if i[0] == "int64"}) == 1,
              "libmate gives the int64 views one storage: %s" % ids)


def test_config_forms():
    """torch.save with CRCs off, with another storage alignment, without byteorder."""
    obj = {"x": random_bytes(torch.float64, (7, 3), 1), "y": random_bytes(torch.uint16, (5,), 2)}
    old_crc, old_align = config.save.compute_crc32, config.save.storage_alignment
    try:
        ser.set_crc32_options(False)
        path = save("nocrc", obj)
        check(all(crc == 0 for _, crc in entries(path).values()), "CRCs off: every CRC is 0")
        check_read("nocrc", path)
        ser.set_crc32_options(True)
        config.save.storage_alignment = 4096
        path = save("align4096", obj)
        check(zipfile.ZipFile(path).read("align4096/.storage_alignment") == b"4096",
              ".storage_alignment 4096")
        check(all(off % 4096 == 0 for off, _ in entries(path).values()), "entries 4096-aligned")
        check_read("align4096", path)
    finally:
        ser.set_crc32_options(old_crc)
        config.save.storage_alignment = old_align
    # torch 2.15 still writes byteorder then, last but one, after version
    path = save("nobyteorder", obj, _disable_byteorder_record=True)
    check_read("nobyteorder", path)
    check_read("protocol3", save("protocol3", obj, pickle_protocol=3))


def test_zip64():
    """torch 2.x's own ZIP64: over 65535 entries, it writes the ZIP64 end records."""
    n = 65540
    t0 = time.time()
    path = save("zip64", [torch.tensor([i % 251], dtype=torch.uint8) for i in range(n)])
    with open(path, "rb") as f:
        f.seek(-200, 2)
        tail = f.read()
    check(b"PK\x06\x06" in tail and b"PK\x06\x07" in tail, "torch wrote ZIP64 end records")
    t1 = time.time()
    p = run([build_path("tests", "pt-read-check"), path], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and len(lines) == n, "zip64: %d tensors read: %s" % (len(lines), p.stderr))
    bad = [i for i, line in enumerate(lines) if line != "uint8 [1] [1] 0 1 %d" % (i % 251)]
    check(not bad, "zip64: tensors %s differ" % bad[:5])
    print("zip64: torch.save %.1f s, libmate read %.1f s" % (t1 - t0, time.time() - t1))


run_cases(test_records, test_dtypes, test_unsupported_dtypes, test_views_and_nesting, test_config_forms,
          test_zip64)
