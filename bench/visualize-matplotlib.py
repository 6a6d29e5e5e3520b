#!/usr/bin/env python3
"""visualize-matplotlib.py: the benchmark's anchor: GT's visualizer's approach (its line regex, WORKER_SEND paired with the worker's next WORKER_RECV, one matplotlib Rectangle per op, a label on wide ones) at mate-visualize's picture size."""
import argparse
import re
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.patches as mpatches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"matmul": "#e74c3c", "add": "#3498db", "sub": "#16a085", "mul": "#9b59b6",
          "div": "#f39c12", "relu": "#27ae60", "sigmoid": "#2980b9", "tanh": "#1abc9c",
          "sum": "#8e44ad", "mean": "#d35400", "transpose": "#229954", "getdata": "#c0392b",
          "allgather": "#ecf0f1", "randn": "#e84393", "freetensor": "#95a5a6", "other": "#7f8c8d"}

LINE = re.compile(r"\s*(?P<timestamp>[\d.]+)s\s*\|\s*#(?P<inst_id>\d+)\s*\|\s*"
                  r"(?P<event>\S+)\s*\|\s*(?P<source>[^|]+?)\s*\|\s*"
                  r"(?P<msg_type>[^|]+?)\s*\|.*?(?P<metadata>op=\w+)?")
OPRE = re.compile(r"op=(\w+)")
WORKER = re.compile(r"worker[_\s]*(\w+)")


def op_type(line, msg):
    m = OPRE.search(line.lower())
    if m:
        return m.group(1)
    msg = msg.lower()
    if "matmul" in msg:
        return "matmul"
    if "binaryop" in msg:
        return "add"
    if "getdata" in msg:
        return "getdata"
    if "freetensor" in msg:
        return "freetensor"
    return "other"


def parse(path):
    ops, workers, pending = [], [], {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            src = m.group("source").strip().lower()
            w = WORKER.search(src)
            if "worker" not in src or not w:
                continue
            worker = "worker_" + w.group(1)
            if worker not in workers:
                workers.append(worker)
            t = float(m.group("timestamp"))
            ev = m.group("event").strip()
            if ev == "WORKER_SEND":
                pending[worker] = (t, op_type(line, m.group("msg_type")))
            elif ev == "WORKER_RECV" and worker in pending:
                start, op = pending.pop(worker)
                ops.append((start, t, op, worker))
    workers.sort()
    return ops, workers


def draw(ops, workers, out, dpi, width, height):
    t0 = min(o[0] for o in ops)
    t1 = max(o[1] for o in ops)
    dur = t1 - t0
    fig, ax = plt.subplots(figsize=(width, height), dpi=dpi)
    for start, end, op, worker in ops:
        y = len(workers) - workers.index(worker) - 1
        w = end - start
        ax.add_patch(mpatches.Rectangle((start, y - 0.35), w, 0.7, facecolor=COLORS.get(op, COLORS["other"]),
                                        edgecolor="black", linewidth=0.3, alpha=0.8))
        if w > dur * 0.01:
            ax.text(start + w / 2, y, op, ha="center", va="center", fontsize=7, fontweight="bold")
    ax.set_ylim(-0.5, len(workers) - 0.5)
    ax.set_xlim(t0 - dur * 0.01, t1 + dur * 0.01)
    ax.set_yticks(range(len(workers)))
    ax.set_yticklabels(list(reversed(workers)))
    ax.set_xlabel("Time (seconds)")
    ax.set_title("GT Operation Timeline (%d ops, %d workers, %.3fs)" % (len(ops), len(workers), dur))
    ax.grid(axis="x", alpha=0.3, linestyle=":", linewidth=0.5)
    present = sorted({o[2] for o in ops})
    ax.legend(handles=[mpatches.Patch(facecolor=COLORS.get(o, COLORS["other"]), label=o) for o in present],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
    plt.tight_layout()
    plt.savefig(out, dpi=dpi, facecolor="white")
    plt.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log")
    ap.add_argument("-o", "--output", default="timeline-matplotlib.png")
    ap.add_argument("--dpi", type=int, default=150)
    ap.add_argument("--width", type=float, default=16)
    ap.add_argument("--height", type=float, default=10)
    a = ap.parse_args()
    ops, workers = parse(a.log)
    if not ops:
        print("no operations found", file=sys.stderr)
        return 1
    draw(ops, workers, a.output, a.dpi, a.width, a.height)
    print("%d ops, %d workers" % (len(ops), len(workers)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
