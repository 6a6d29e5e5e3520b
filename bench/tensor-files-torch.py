"""tensor-files-torch.py: the torch.save/torch.load half of bench/tensor-files.sh.

Run with the Python that has torch (Debian's /usr/bin/python3); takes the same
--small, --dir, --repeat, --cold and --fsync options as bench/tensor-files and
prints the same kind of lines (RESULT torch pt write|read CASE BYTES MEDIAN MIN,
FILESIZE, CHECKSUM). The tensors are bit-identical to the C program's: element
i of the workload is (lowbias32(i) >> 8) * 2^-23 - 1, one storage per tensor,
saved as one dict name -> tensor per case. Page-cache handling matches the C
program: the target is removed before each timed torch.save, which ends when
torch.save returns (--fsync: after fsync); the file is then fsync'ed untimed
and, before each timed torch.load, read through once (or dropped, --cold).
Right before each timed operation the process touches and frees 1.25 times the
payload (--no-prefault: not), as the C program does: see bench/tensor-files.c.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

KiB, MiB = 1 << 10, 1 << 20
FULL = [("big", 1, 512 * MiB), ("medium", 100, 5 * MiB), ("small", 10000, 4 * KiB)]
SMALL = [("big", 1, 32 * MiB), ("medium", 100, 256 * KiB), ("small", 1000, 4 * KiB)]
CHUNK = 4 * MiB


def lowbias32(x):
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def fill(n, first):
    out = np.empty(n, dtype=np.float32)
    step = 1 << 22
    for a in range(0, n, step):
        b = min(n, a + step)
        idx = np.arange(first + a, first + b, dtype=np.uint64).astype(np.uint32)
        h = lowbias32(idx) >> np.uint32(8)
        out[a:b] = h.astype(np.float32) * np.float32(2.0 ** -23) - np.float32(1.0)
    return out


def tensor_name(case, count, k):
    return "%s.weight" % case if count == 1 else "%s.%d.weight" % (case, k)


def make_case(case, count, nbytes, first):
    """dict name -> tensor, each with its own storage, and the u32 word sum."""
    n = nbytes // 4
    d, checksum = {}, 0
    for k in range(count):
        a = fill(n, first + k * n)
        checksum += int(a.view(np.uint32).sum(dtype=np.uint64))
        d[tensor_name(case, count, k)] = torch.from_numpy(a).reshape(n // 1024, 1024)
    return d, checksum


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def prepare_read(path, cold):
    fd = os.open(path, os.O_RDONLY)
    if cold:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    else:
        while os.read(fd, CHUNK):
            pass
    os.close(fd)


def prefault(nbytes, opts):
    """Touches and frees nbytes, so the next operation gets host-backed pages."""
    if not opts.no_prefault:
        a = np.ones(nbytes, dtype=np.uint8)
        del a


def prefault_write(nbytes, opts):
    """prefault(), then a scratch file of nbytes written in the folder and
    unlinked unsynced: the page cache a write takes is backed too."""
    prefault(nbytes, opts)
    if not opts.no_prefault:
        path = os.path.join(opts.dir, "prefault.scratch")
        zeros = bytes(CHUNK)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for off in range(0, nbytes, CHUNK):
            os.write(fd, zeros[:min(CHUNK, nbytes - off)])
        os.close(fd)
        remove(path)


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def run_case(case, d, payload, opts):
    path = os.path.join(opts.dir, "torch-%s.pt" % case)
    wt, rt, fsize = [], [], -1
    for r in range(opts.repeat):
        remove(path)
        prefault_write(payload * 5 // 4, opts)
        t0 = time.perf_counter()
        torch.save(d, path)
        if opts.fsync:
            fsync_path(path)
        wt.append(time.perf_counter() - t0)
        fsync_path(path)
        fsize = os.path.getsize(path)
        prepare_read(path, opts.cold)
        prefault(payload * 5 // 4, opts)
        t0 = time.perf_counter()
        got = torch.load(path)
        rt.append(time.perf_counter() - t0)
        if r == 0 and not same(d, got):
            sys.exit("torch.load of %s gave different tensors" % path)
        del got
        remove(path)
    print("FILESIZE torch pt %s %d" % (case, fsize))
    for op, t in (("write", wt), ("read", rt)):
        print("RESULT torch pt %s %s %d %.6f %.6f" % (op, case, payload, statistics.median(t),
                                                      min(t)))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--dir", default=".")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--fsync", action="store_true")
    ap.add_argument("--no-prefault", action="store_true")
    opts = ap.parse_args()
    if opts.repeat < 1:
        ap.error("--repeat must be at least 1")
    first = 0
    for case, count, nbytes in (SMALL if opts.small else FULL):
        d, checksum = make_case(case, count, nbytes, first)
        print("CHECKSUM %s %d" % (case, checksum))
        run_case(case, d, count * nbytes, opts)
        del d
        first += count * (nbytes // 4)
    print("TORCH %s" % torch.__version__)


if __name__ == "__main__":
    main()
