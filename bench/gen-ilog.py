#!/usr/bin/env python3
"""gen-ilog.py: writes a synthetic instruction log (mate's style with call=/id=/op= ids, or GT's) of N lines, for benchmarks and tests."""
import argparse
import heapq
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "tools"), os.path.join(HERE, "..", "tests")]
from gtlog import gt_line  # noqa: E402  (the line format the visualize tests write too)

OPS = [("matmul", "gemm", 3.0), ("add", "add", 0.4), ("mul", "mul", 0.4),
       ("relu", "relu", 0.3), ("sum", "reduce_sum", 0.6), ("transpose", "transpose", 0.5),
       ("rmsnorm", "rmsnorm", 0.8), ("silu_and_mul", "silu_and_mul", 0.7),
       ("getdata", "memcpy_d2h", 1.5)]


class Writer:
    def __init__(self, out):
        self.out = out
        self.seq = 0
        self.lines = 0

    def line(self, t, event, source, command, size=0, details=""):
        self.seq += 1
        self.out.write(gt_line(self.seq, t, event, source, command, size, details) + "\n")
        self.lines += 1


def header(out, title):
    out.write("=" * 100 + "\n%s\nStarted: 2026-11-21 12:00:00\n" % title + "=" * 100 + "\n\n")
    out.write("Format: <elapsed> | #<seq> | <event_type> | <source> | <command> | <details>\n\n")


def mate_style(w, n, clients, workers, rng, scale):
    """Calls from client threads, work on worker streams, joined by call= and id=."""
    heap = []   # (time, order, fields) of events still to come
    order = 0
    free = [0.0] * workers
    now = [0.5 + 0.001 * c for c in range(clients)]
    mem = [0] * workers
    call = 0
    while w.lines < n:
        c = min(range(clients), key=lambda i: now[i])
        t = now[c]
        while heap and heap[0][0] <= t:
            ev = heapq.heappop(heap)
            w.line(ev[0], *ev[2])
        call += 1
        op, api, cost = OPS[rng.randrange(len(OPS))]
        k = rng.randrange(workers)
        size = int(rng.lognormvariate(10, 2))
        tid = "thread-%d" % c
        w.line(t, "RECV", tid, api, size, "call=%d op=%s depth=0" % (call, op))
        if rng.random() < 0.1:   # a nested call
            w.line(t, "RECV", tid, "launch", 64, "call=%d.1 op=launch depth=1" % call)
            w.line(t, "SEND", tid, "launch", 16, "call=%d.1 status=ok" % call)
        start = max(t, free[k])
        dur = rng.expovariate(1.0) * cost * 3e-5 * scale
        free[k] = start + dur
        wk = "worker_%d" % k
        w.line(t, "WORKER_SEND", wk, api, size, "call=%d id=%d op=%s" % (call, call, op))
        order += 1
        heapq.heappush(heap, (free[k], order, ("WORKER_RECV", wk, api, 64, "call=%d id=%d op=%s" % (call, call, op))))
        if rng.random() < 0.05:
            mem[k] = max(0, mem[k] + rng.choice([1, -1]) * size * 4)
            w.line(t, "MEM_ALLOC", tid, "cudaMalloc", size * 4, "device=cuda:%d in_use=%d call=%d" % (k, mem[k], call))
        w.line(t + 2e-6, "SEND", tid, api, 32, "call=%d status=ok" % call)
        now[c] = t + rng.expovariate(1.0) * 3e-5 * scale
    while heap and w.lines < n + workers * 4:
        ev = heapq.heappop(heap)
        w.line(ev[0], *ev[2])


def gt_style(w, n, workers, rng, scale):
    """GT's sequential dispatcher: RECV, MODIFIER_INJECT, the WorkerBatch reply logged before its send, SEND."""
    t = 0.8
    client = "CLIENT 006b8b4568"
    result = 0
    while w.lines < n:
        op, _, cost = OPS[rng.randrange(5)]
        result += 1
        k = rng.randrange(workers)
        cmd = "BinaryOp" if op in ("add", "mul", "matmul") else "UnaryOp"
        det = "result=%d op=%s left=%d right=%d" % (result, op, result - 1, result - 2)
        w.line(t, "RECV", client, cmd, 100 + rng.randrange(100), det)
        w.line(t, "MODIFIER_INJECT", client, cmd, 0, det)
        t += rng.expovariate(1.0) * cost * 1e-4 * scale
        w.line(t, "WORKER_RECV", "auto_worker_%d" % k, "WorkerBatch", 91, "success=True")
        w.line(t, "WORKER_SEND", "auto_worker_%d" % k, "WorkerBatch", 205, "[1 cmds: Worker%s]" % cmd)
        w.line(t, "SEND", client, cmd, 91, "success=True")
        t += rng.expovariate(1.0) * 2e-5 * scale


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=1000000)
    ap.add_argument("--style", choices=["mate", "gt"], default="mate")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="stretches all durations")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    out = sys.stdout if a.output == "-" else open(a.output, "w", buffering=1 << 20)
    rng = random.Random(a.seed)
    header(out, "mate Instruction Stream (synthetic)")
    w = Writer(out)
    if a.style == "mate":
        mate_style(w, a.lines, a.clients, a.workers, rng, a.scale)
    else:
        gt_style(w, a.lines, a.workers, rng, a.scale)
    out.flush()
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
