"""test_pt_read_zip64.py: libmate reads a ZIP64 .pt file over 4 GiB (a record past 4 GiB, one larger than 4 GiB)."""
import os
import shutil
import struct
import sys
import time
import zipfile

from mate_test import build_path, check, done, run, tmpdir

BIG = (4 << 30) + 4096 + 3              # bytes of the uint8 storage, over 4 GiB
CHUNK = 64 << 20
MARKS = {0: 1, (4 << 30) - 1: 2, 4 << 30: 3, BIG - 1: 4, 12345678: 5}


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


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


def checksum(marks, nbytes):
    """pt-read-check's sum for a storage of zeros holding marks {offset: byte}."""
    s = 0
    for off, val in marks.items():
        if off < nbytes:
            s += (val << (8 * (off % 8))) * (off // 8 + 1)
    return s % 2**64


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


def main():
    tmp = tmpdir()
    try:
        if shutil.disk_usage(tmp).free < (12 << 30):
            skip("less than 12 GiB free in %s" % tmp)
        if mem_available() < (10 << 30):
            skip("less than 10 GiB of memory available")
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
        want = ["uint8 [%d] [1] 0 %d %d" % (BIG, BIG, checksum(MARKS, BIG)),
                "int64 [5] [1] 0 40 %d" % checksum({i: b for i, b in enumerate(small) if b}, 40)]
        check(lines == want, "got %r, expected %r" % (lines, want))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done()


main()
