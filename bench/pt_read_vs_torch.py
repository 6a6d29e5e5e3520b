"""pt_read_vs_torch.py: compares libmate's .pt reader with torch.load on about 1 GiB.

usage: python3 bench/pt_read_vs_torch.py BUILDDIR [RUNS]
Writes (in a temporary directory) a .pt file holding one 512 MiB tensor,
100 tensors of 5 MiB and 10,000 of 4 KiB, then prints the best and median
time of torch.load and of BUILDDIR/bench/bench_pt_read, and their ratio.
Needs python3-torch (Debian's /usr/bin/python3) and `make bench`.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = tempfile.mkdtemp(prefix="mate-bench-")
    try:
        path = os.path.join(tmp, "bench.pt")
        obj = {"big": torch.ones(512 << 20, dtype=torch.uint8),
               "mid": [torch.full((5 << 20,), i, dtype=torch.uint8) for i in range(100)],
               "small": [torch.full((4096,), i % 256, dtype=torch.uint8) for i in range(10000)]}
        torch.save(obj, path)
        del obj
        times = []
        for _ in range(runs):
            t0 = time.time()
            torch.load(path)
            times.append(time.time() - t0)
        times.sort()
        print("torch.load: best %.3f s, median %.3f s" % (times[0], times[runs // 2]))
        out = subprocess.run([os.path.join(build, "bench", "bench_pt_read"), path, str(runs)],
                             capture_output=True, text=True, check=True).stdout
        print("libmate:    " + out.split(": ", 1)[1].strip())
        best = float(out.split("best ")[1].split(" s")[0])
        median = float(out.split("median ")[1].split(" s")[0])
        print("speedup: best %.2fx, median %.2fx" % (times[0] / best, times[runs // 2] / median))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
