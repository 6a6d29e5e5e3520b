#!/usr/bin/env python3
"""desync-latency.py: how soon live `mate-trace --desync` and mate-top's ranks view name the rank
out of step (issue 38: within one second of the divergence), against the anchor of the same
run: how soon the live stream shows the divergent call at all (a third subscriber,
`mate-trace -o -`, reading it).

usage: python3 bench/desync-latency.py [--rounds 5] [--ranks 8] [--pace-us 5000] [--at 300]
    (from the build directory, or with top_builddir set)

Each round starts RANKS processes of tests/rank-prog (recorded through libmate, live events on,
torchrun's variables), a step every PACE microseconds (mm, all_reduce; rank 0 a log_metrics
every third step), started together a second after the subscribers; rank 3's all_reduce of
step AT takes another shape, and that rank writes the CLOCK_MONOTONIC time just before it
(mark=). The subscribers follow the ranks by pid; their
lines are stamped with time.monotonic() (the same clock) as they arrive on the pipes. The times
are from the divergence to: the divergent call's line in the capture (the anchor), the
verdict's line of --desync, and mate-top's first table (-b -d 0.25) that says it. The ratios
are over the anchor's: what matching the ranks adds to the stream's own delay (the monitor
holds events a short while to merge them in time order, --desync checks four times a second,
and mate-top says it at its next refresh)."""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("top_builddir", os.getcwd())


def path(*p):
    return os.path.join(BUILD, *p)


def reader(pipe, hits, pred):
    """Stamps the first line matching pred; reads on to the end."""
    for line in pipe:
        if "t" not in hits and pred(line):
            hits["t"] = time.monotonic()
            hits["line"] = line.rstrip("\n")
    pipe.close()


def one_round(args, tmp):
    rt = os.path.join(tmp, "rt")
    os.mkdir(rt, 0o700)
    mark, gate = os.path.join(tmp, "mark"), os.path.join(tmp, "go")
    env = dict(os.environ, MATE_MONITOR_DIR=rt, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null")
    ranks = []
    steps = args.at + max(200, int(1.5e6 / args.pace_us))   # on for 1.5 s after it at least
    for r in range(args.ranks):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(args.ranks), LOCAL_RANK=str(r),
                 MATE_MONITOR="1", MATE_MONITOR_WAIT="60")
        ranks.append(subprocess.Popen(
            [path("tests", "rank-prog"), str(steps), "shape=3:%d" % args.at,
             "pace=%d" % args.pace_us, "mark=" + mark, "start=" + gate], env=e,
            stderr=subprocess.DEVNULL))
    follow = []
    for p in ranks:
        follow += ["--pid", str(p.pid)]
    trace = path("src", "trace", "mate-trace")
    cap = subprocess.Popen([trace, "-s", "0", "-q", "-o", "-"] + follow, env=env,
                           stdout=subprocess.PIPE, text=True)
    des = subprocess.Popen([trace, "--desync"] + follow, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    top = subprocess.Popen([path("src", "top", "mate-top"), "-b", "-d", "0.25", "--linger", "0"]
                           + follow, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    seen, named, topped = {}, {}, {}
    threads = [
        threading.Thread(target=reader, args=(cap.stdout, seen,
                         lambda l: "| RECV " in l and "all_reduce" in l and "F32:2048" in l)),
        threading.Thread(target=reader, args=(des.stdout, named, lambda l: "rank 3 " in l)),
        threading.Thread(target=reader, args=(top.stdout, topped,
                         lambda l: l.startswith("out of step: rank 3 "))),
    ]
    for t in threads:
        t.start()
    # the three subscribers connect while the ranks wait at their start (events on: each has
    # published its CONNECT already); the divergence comes AT steps after
    time.sleep(1.0)
    open(gate, "w").close()
    ok = True
    for p in ranks:
        ok &= p.wait(timeout=300) == 0
    for p in (cap, des, top):
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=30)
    for t in threads:
        t.join()
    if not ok or not os.path.exists(mark) or not all("t" in h for h in (seen, named, topped)):
        sys.exit("desync-latency: a round failed: ranks ok %s, mark %s, seen %r, named %r, "
                 "mate-top %r" % (ok, os.path.exists(mark), seen.get("line"), named.get("line"),
                                  topped.get("line")))
    with open(mark) as f:
        t_div = float(f.read())
    return seen["t"] - t_div, named["t"] - t_div, topped["t"] - t_div, named["line"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--pace-us", type=int, default=5000)
    ap.add_argument("--at", type=int, default=300)
    args = ap.parse_args()
    if args.ranks < 4 or args.rounds < 1 or args.pace_us < 0 or args.at < 1:
        ap.error("--ranks 4 or more, --rounds 1 or more, --at 1 or more")
    for p in (path("tests", "rank-prog"), path("src", "trace", "mate-trace")):
        if not os.access(p, os.X_OK):
            sys.exit("desync-latency: no %s (make check TESTS= builds it)" % p)
    seen, named, topped = [], [], []
    for i in range(args.rounds):
        tmp = tempfile.mkdtemp(prefix="mate-desync-bench.")
        try:
            s, n, t, line = one_round(args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        seen.append(s)
        named.append(n)
        topped.append(t)
        if i == 0:
            print("verdict: " + line)
    load = os.getloadavg()[0]
    print("desync latency: %d ranks, a step every %.1f ms, rank 3's all_reduce changed at "
          "step %d; %d round%s, load %.1f" % (args.ranks, args.pace_us / 1000, args.at,
                                              args.rounds, "" if args.rounds == 1 else "s", load))
    print("  %-44s %8s %8s" % ("seconds after the divergence", "min", "median"))
    print("  %-44s %8.3f %8.3f" % ("the call seen live (mate-trace -o -, anchor)", min(seen),
                                   statistics.median(seen)))
    print("  %-44s %8.3f %8.3f" % ("the rank named (mate-trace --desync)", min(named),
                                   statistics.median(named)))
    print("  %-44s %8.3f %8.3f" % ("the rank shown (mate-top -b -d 0.25)", min(topped),
                                   statistics.median(topped)))
    for what, got in (("named", named), ("shown", topped)):
        ratios = [n / s if s > 0 else float("inf") for s, n in zip(seen, got)]
        print("  %-44s %8.2f %8.2f" % ("ratio %s / seen" % what, min(ratios),
                                       statistics.median(ratios)))
    for what, got in (("named", named), ("shown", topped)):
        print("%s within 1 s of the divergence in %d of %d rounds (worst %.3f s)" %
              (what, sum(n <= 1.0 for n in got), len(got), max(got)))


if __name__ == "__main__":
    main()
