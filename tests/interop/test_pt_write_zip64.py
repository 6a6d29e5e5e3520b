# mate-python: peers
"""test_pt_write_zip64.py: a .pt over 4 GiB that libmate writes loads in torch 2.x with mmap=True.

A uint8 storage of 4 GiB + 4099 bytes (data/0), then two small ones whose
entries start past 4 GiB: their offsets and the central directory need ZIP64
fields, which libmate writes after moving every entry to a 64-byte boundary.
Python's zipfile, libmate's reader and torch.load(mmap=True, weights_only=True)
must each find every record, values exact.
"""
import json
import os
import shutil
import struct
import time
import zipfile

import torch

from mate_test import build_path, check, run, run_cases, tmpdir
from zip64_pt import BIG, BIG_LINE, MARKS, check_line, need_room

SMALL = struct.pack("<5q", 1, -2, 3, 2**40, -2**63)
AFTER = struct.pack("<3d", 0.5, -1.25, 1e300)


def test_write_zip64():
    tmp = tmpdir()
    try:
        need_room(tmp)
        spec = {"root": {"type": "dict", "ordered": False, "items": [
            [{"type": "str", "value": "big"},
             {"type": "tensor", "dtype": "uint8", "shape": [str(BIG)], "stride": [1], "offset": 0,
              "storage": 0, "zeros": str(BIG), "marks": [[str(k), v] for k, v in MARKS.items()]}],
            [{"type": "str", "value": "small"},
             {"type": "tensor", "dtype": "int64", "shape": [5], "stride": [1], "offset": 0,
              "storage": 1, "hex": SMALL.hex()}],
            [{"type": "str", "value": "after"},
             {"type": "tensor", "dtype": "float64", "shape": [3], "stride": [1], "offset": 0,
              "storage": 2, "hex": AFTER.hex()}]]}}
        path = os.path.join(tmp, "big.pt")
        with open(path + ".json", "w") as f:
            json.dump(spec, f)
        t0 = time.time()
        run([build_path("tests", "tensorfile-tool"), "write", path + ".json", path])
        t1 = time.time()
        check(os.path.getsize(path) > BIG, "the file is over 4 GiB")

        z = zipfile.ZipFile(path)
        with open(path, "rb") as f:
            for info in z.infolist():
                f.seek(info.header_offset)
                head = f.read(30)
                nlen, xlen = struct.unpack("<HH", head[26:30])
                at = info.header_offset + 30 + nlen + xlen
                check(head[:4] == b"PK\x03\x04", "%s: a local header at %d" % (info.filename, info.header_offset))
                check(at % 64 == 0, "%s: data at %d, not 64-byte aligned" % (info.filename, at))
        offsets = {i.filename: i.header_offset for i in z.infolist()}
        check(offsets["archive/data/1"] > 1 << 32 and offsets["archive/data/2"] > 1 << 32,
              "small records past 4 GiB: %s" % offsets)
        check(z.read("archive/data/1") == SMALL and z.read("archive/data/2") == AFTER,
              "zipfile reads the records past 4 GiB (their CRCs checked)")
        check(z.read("archive/version") == b"3\n", "zipfile reads the last record")

        p = run([build_path("tests", "pt-read-check"), path], check=False)
        t2 = time.time()
        check(p.returncode == 0, "pt-read-check failed: %s" % p.stderr)
        lines = p.stdout.splitlines()
        want = [BIG_LINE, check_line("int64", SMALL), check_line("float64", AFTER)]
        check(sorted(lines) == sorted(want), "libmate: got %r, expected %r" % (lines, want))

        got = torch.load(path, mmap=True, weights_only=True)
        big = got["big"]
        check(big.dtype == torch.uint8 and big.shape == (BIG,), "torch: big %s %s" % (big.dtype, big.shape))
        for off, val in MARKS.items():
            check(int(big[off]) == val, "torch: big[%d] = %d, expected %d" % (off, int(big[off]), val))
        check(int(big[1 << 20]) == 0 and int(big[(4 << 30) + 1]) == 0, "torch: zeros elsewhere")
        check(got["small"].tolist() == list(struct.unpack("<5q", SMALL)), "torch: small %s" % got["small"])
        check(got["after"].tolist() == list(struct.unpack("<3d", AFTER)), "torch: after %s" % got["after"])
        print("write %.1f s, libmate read %.1f s, torch mmap load %.1f s"
              % (t1 - t0, t2 - t1, time.time() - t2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


run_cases(test_write_zip64)
