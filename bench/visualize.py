#!/usr/bin/env python3
"""visualize.py: benchmarks mate-visualize: a 1,000,000-line log to PNG (wall time, peak RSS) against the matplotlib anchor in the same run, and peak RSS on 10,000,000 lines."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAILED = []  # commands that failed: their times are no figures, and the run exits 1


def measure(cmd, stdin=None):
    """Runs cmd; returns (wall seconds, peak RSS in MiB, exit status, CPU seconds)."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print("%s failed (%d): %s" % (cmd[0], p.returncode, err), file=sys.stderr)
        FAILED.append(cmd)
    return wall, ru.ru_maxrss / 1024.0, p.returncode, ru.ru_utime + ru.ru_stime


def generate(path, lines, python):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    t = time.monotonic()
    subprocess.check_call([python, os.path.join(HERE, "gen-ilog.py"), "--lines", str(lines),
                           "--workers", "4", "--clients", "2", "-o", path])
    print("  generated %s (%d lines, %.0f MB) in %.0f s" % (os.path.basename(path), lines,
          os.path.getsize(path) / 1e6, time.monotonic() - t))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.getcwd(), help="build directory holding mate-visualize")
    ap.add_argument("--dir", default=None, help="where the logs go (default: a temporary directory)")
    ap.add_argument("--lines", type=int, default=1000000)
    ap.add_argument("--big-lines", type=int, default=10000000, help="0 skips the big run")
    ap.add_argument("--python", default="/usr/bin/python3", help="Python with matplotlib")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    mv = os.path.join(a.build, "mate-visualize")
    d = a.dir or tempfile.mkdtemp(prefix="mate-bench-vis-")
    os.makedirs(d, exist_ok=True)
    print("bench/visualize: mate-visualize vs GT's approach in matplotlib (16 x 10 in, 150 dpi)")
    log = os.path.join(d, "bench-%d.log" % a.lines)
    generate(log, a.lines, a.python)

    runs = [measure([mv, "-q", log, "-o", os.path.join(d, "mate.png")]) for _ in range(a.repeat)]
    mate_wall = min(r[0] for r in runs)
    mate_cpu = min(r[3] for r in runs)
    mate_rss = max(r[1] for r in runs)
    print("  mate-visualize, %d lines -> PNG: %.3f s wall, %.3f s CPU (best of %d), peak RSS %.1f MiB"
          % (a.lines, mate_wall, mate_cpu, a.repeat, mate_rss))
    anchor = measure([a.python, os.path.join(HERE, "visualize-matplotlib.py"), log,
                      "-o", os.path.join(d, "matplotlib.png")])
    print("  matplotlib anchor, same log -> PNG: %.3f s wall, %.3f s CPU, peak RSS %.1f MiB"
          % (anchor[0], anchor[3], anchor[1]))
    ratio = anchor[0] / mate_wall if mate_wall > 0 else float("inf")
    cratio = anchor[3] / mate_cpu if mate_cpu > 0 else float("inf")
    print("  speed-up: %.1fx wall, %.1fx CPU (target >= 20x) %s"
          % (ratio, cratio, "ok" if min(ratio, cratio) >= 20 else "BELOW TARGET"))
    j = measure([mv, "-q", log, "-o", os.path.join(d, "mate.json.gz")])  # noqa
    print("  mate-visualize, %d lines -> .json.gz: %.3f s, peak RSS %.1f MiB" % (a.lines, j[0], j[1]))

    if a.big_lines > 0:
        big = os.path.join(d, "bench-%d.log" % a.big_lines)
        generate(big, a.big_lines, a.python)
        # against reading the file (cat to /dev/null), in alternate rounds
        runs, reads = [], []
        for _ in range(a.repeat):
            reads.append(measure(["cat", big]))
            runs.append(measure([mv, "-q", big, "-o", os.path.join(d, "big.png")]))
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[3] for r in runs)
        rss = max(r[1] for r in runs)
        rc = max(r[2] for r in runs)
        rwall = statistics.median(r[0] for r in reads)
        rcpu = statistics.median(r[3] for r in reads)
        print("  mate-visualize, %d lines -> PNG: %.3f s wall (best %.3f), %.3f s CPU (best %.3f),"
              " medians of %d; peak RSS %.1f MiB (target <= 300 MiB) %s"
              % (a.big_lines, wall, min(r[0] for r in runs), cpu, min(r[3] for r in runs),
                 a.repeat, rss, "ok" if rss <= 300 and rc == 0 else "ABOVE TARGET"))
        print("  reading the file (cat): %.3f s wall, %.3f s CPU: mate-visualize %.1fx its wall"
              " time, %.1fx its CPU; target 3 s wall for 10 M lines; load %s"
              % (rwall, rcpu, wall / rwall if rwall > 0 else float("inf"),
                 cpu / rcpu if rcpu > 0 else float("inf"), open("/proc/loadavg").read().split()[0]))
        with open(big) as f:
            wall, rss, rc, cpu = measure([mv, "-q", "-", "-o", os.path.join(d, "big-stdin.png")], stdin=f)
        print("  the same from stdin: %.3f s wall, peak RSS %.1f MiB" % (wall, rss))
        wall, rss, rc, cpu = measure([mv, "-q", big, "-o", os.path.join(d, "big.json.gz")])
        print("  mate-visualize, %d lines -> .json.gz: %.3f s wall, peak RSS %.1f MiB" % (a.big_lines, wall, rss))
    if not a.dir:
        print("  logs and pictures left in %s" % d)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
