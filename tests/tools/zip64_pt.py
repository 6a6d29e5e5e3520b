"""zip64_pt.py: what the two ZIP64 .pt tests share: the storage over 4 GiB with its marks, pt-read-check's checksum, and the room they need."""
import shutil

from mate_test import skip

BIG = (4 << 30) + 4096 + 3              # bytes of the uint8 storage, over 4 GiB
MARKS = {0: 1, (4 << 30) - 1: 2, 4 << 30: 3, BIG - 1: 4, 12345678: 5}


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def need_room(tmp):
    """Skips the test with less than 12 GiB free in tmp or 10 GiB of memory available."""
    if shutil.disk_usage(tmp).free < (12 << 30):
        skip("less than 12 GiB free in %s" % tmp)
    if mem_available() < (10 << 30):
        skip("less than 10 GiB of memory available")


def checksum(marks, nbytes):
    """pt-read-check's sum for a storage of zeros holding marks {offset: byte}."""
    s = 0
    for off, val in marks.items():
        if off < nbytes:
            s += (val << (8 * (off % 8))) * (off // 8 + 1)
    return s % 2**64


def check_line(dtype, raw):
    """pt-read-check's line for a 1-D storage of dtype holding the bytes raw."""
    n = len(raw) // {"int64": 8, "float64": 8}[dtype]
    return "%s [%d] [1] 0 %d %d" % (dtype, n, len(raw), checksum({i: b for i, b in enumerate(raw) if b}, len(raw)))


BIG_LINE = "uint8 [%d] [1] 0 %d %d" % (BIG, BIG, checksum(MARKS, BIG))
