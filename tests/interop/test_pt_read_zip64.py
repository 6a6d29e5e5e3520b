"""test_pt_read_zip64.py: libmate reads a ZIP64 .pt file over 4 GiB (a record past 4 GiB, one larger than 4 GiB)."""
import os
import shutil
import struct
import time
import zipfile

from mate_test import build_path, check, run, run_cases, tmpdir
from zip64_pt import BIG, BIG_LINE, MARKS, check_line, need_room

CHUNK = 64 << 20


# ---- a pickle the way torch writes it, built by hand ----


def p_int(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    if -2**31 <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    return b"\x8a\x08" + struct.pack("<q", v)


def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_tensor(cls, key, numel, size):
    return (b"ctorch._utils\n_rebuild_tensor_v2\n("
            + b"(" + p_str("storage") + b"ctorch\n" + cls.encode() + b"\n" + p_str(key)
            + p_str("cpu") + p_int(numel) + b"tQ"
            + p_int(0) + b"(" + p_int(size) + b"t" + b"(" + p_int(1) + b"t"
            + b"\x89ccollections\nOrderedDict\n)RtR")


def write_file(path):
    pkl = (b"\x80\x02}(" + p_str("big") + p_tensor("ByteStorage", "0", BIG, BIG)
           + p_str("small") + p_tensor("LongStorage", "1", 5, 5) + b"u.")
    small = struct.pack("<5q", 1, -2, 3, 2**40, -2**63)
    zeros = bytes(CHUNK)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr("big/data.pkl", pkl)
        with z.open("big/data/0", "w", force_zip64=True) as f:
            for start in range(0, BIG, CHUNK):
                n = min(CHUNK, BIG - start)
                marks = [(o - start, v) for o, v in MARKS.items() if start <= o < start + n]
                if marks:
                    chunk = bytearray(zeros[:n])
                    for o, v in marks:
                        chunk[o] = v
                    f.write(chunk)
                else:
                    f.write(zeros if n == CHUNK else zeros[:n])
        z.writestr("big/data/1", small)          # its local header lies past 4 GiB
        z.writestr("big/version", "3\n")
    return small


def test_read_zip64():
    tmp = tmpdir()
    try:
        need_room(tmp)
        path = os.path.join(tmp, "big.pt")
        t0 = time.time()
        small = write_file(path)
        t1 = time.time()
        check(os.path.getsize(path) > BIG, "the file is over 4 GiB")
        p = run([build_path("tests", "pt-read-check"), path], check=False)
        t2 = time.time()
        print("wrote %.1f s, read %.1f s" % (t1 - t0, t2 - t1))
        check(p.returncode == 0, "pt-read-check failed: %s" % p.stderr)
        lines = p.stdout.splitlines()
        want = [BIG_LINE, check_line("int64", small)]
        check(lines == want, "got %r, expected %r" % (lines, want))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


run_cases(test_read_zip64)
