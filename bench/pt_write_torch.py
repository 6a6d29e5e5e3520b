"""pt_write_torch.py: torch.save throughput on pt_write_bench's cases, to compare with mate_pt_write.

usage: python3 bench/pt_write_torch.py [DIR] [REPEATS]   (the Python that has torch)
"""
import os
import sys
import time

import torch

CASES = [("1 x 512 MiB", 1, 512 << 20), ("100 x 5 MiB", 100, 5 << 20), ("10000 x 4 KiB", 10000, 4096)]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    path = os.path.join(out_dir, "pt_write_torch.%d.pt" % os.getpid())
    print("%-14s %12s" % ("case", "torch.save"))
    for name, count, nbytes in CASES:
        d = {"layer.%d.weight" % i: torch.full((nbytes // 4,), float(i)) for i in range(count)}
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            torch.save(d, path)
            best = min(best, time.perf_counter() - t)
            os.unlink(path)
        print("%-14s %7.2f GB/s" % (name, count * nbytes / best / 1e9))


main()
