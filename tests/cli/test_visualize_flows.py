"""visualize_flows.py: every flow arrow in mate-visualize's Chrome/Perfetto JSON binds to its slices under the rules of Chrome's trace engines, on real logs (GT's, a mate-demo run, one cut off mid-call)."""
import bisect
import collections
import functools
import json
import os
import re
import subprocess

import gtlog
from mate_test import build_path, check, run_cases

FLOW = ("s", "t", "f")


def slices(evs):
    """Every slice as (pid, tid, cat, start, end): X events, and B/E pairs
    matched per thread as a stack (the cat is the B's)."""
    out = []
    open_ = collections.defaultdict(list)
    for e in sorted((e for e in evs if e.get("ph") in ("B", "E")), key=lambda e: e["ts"]):
        k = (e["pid"], e.get("tid"))
        if e["ph"] == "B":
            open_[k].append(e)
        elif open_[k]:
            b = open_[k].pop()
            out.append((b["pid"], b.get("tid"), b.get("cat"), b["ts"], e["ts"]))
    for e in evs:
        if e.get("ph") == "X":
            out.append((e["pid"], e.get("tid"), e.get("cat"), e["ts"], e["ts"] + e.get("dur", 0)))
    return out


def bind(evs):
    """Applies both engines' binding rules. DevTools' trace engine (its
    FlowsHandler) binds a flow event to a non-flow event with the same
    cat, tid, pid and ts. The trace viewer (catapult, the Trace Event
    Format's binding points) binds "s" and "t" to the enclosing slice of
    the same pid, tid and cat, "f" with "bp":"e" likewise and any other
    "f" to the next slice starting at or after its ts. A flow, identified
    by cat, name and id, binds when it has one "s" and one "f" and each of
    its events binds under both rules. @return (bound, unbound) flows."""
    sl = slices(evs)
    starts = {(c, t, p, a) for p, t, c, a, b in sl}
    by_thread = collections.defaultdict(list)
    for p, t, c, a, b in sl:
        by_thread[(p, t, c)].append((a, b))
    # per thread and cat: starts in order, and the latest end among the
    # slices starting at or before each
    index = {}
    for k, v in by_thread.items():
        v.sort()
        ends, m = [], float("-inf")
        for a, b in v:
            m = max(m, b)
            ends.append(m)
        index[k] = ([a for a, b in v], ends)

    def one(e):
        if (e.get("cat"), e.get("tid"), e["pid"], e["ts"]) not in starts:
            return False
        a, ends = index.get((e["pid"], e.get("tid"), e.get("cat")), ([], []))
        ts = e["ts"]
        if e["ph"] == "f" and e.get("bp") != "e":
            return bool(a) and a[-1] >= ts          # a next slice
        i = bisect.bisect_right(a, ts)              # slices starting <= ts
        return i > 0 and ends[i - 1] >= ts          # one of them encloses ts

    groups = collections.defaultdict(list)
    for e in evs:
        if e.get("ph") in FLOW:
            groups[(e.get("cat"), e.get("name"), e.get("id"))].append(e)
    bound = unbound = 0
    for v in groups.values():
        phs = sorted(x["ph"] for x in v if x["ph"] != "t")
        if phs == ["f", "s"] and all(one(x) for x in v):
            bound += 1
        else:
            unbound += 1
    return bound, unbound


def export(log, name):
    """mate-visualize's JSON of log, json.loads'd whole; and its stderr."""
    out = gtlog.tmp(name + ".json")
    p = gtlog.visualize(log, "-o", out)
    with open(out) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        check(False, "%s: not valid JSON: %s" % (name, e))
        return [], p.stderr
    return doc["traceEvents"], p.stderr


def dropped(stderr):
    m = re.search(r"(\d+) flows dropped", stderr)
    return int(m.group(1)) if m else 0


EVENT = re.compile(r"^\s*[\d.]+s \| #\d+ \| (\S+)\s*\|")


def detail(line, key):
    m = re.search(r"(?:^|[ |])" + key + r"=(\S+)", line)
    return m.group(1) if m else None


def expected_flows(lines):
    """From a mate log's lines: works whose call's slice is written (flows),
    and works whose call never ended (dropped)."""
    ev = [(EVENT.match(l).group(1), l) for l in lines if EVENT.match(l)]
    sent = {detail(l, "call") for e, l in ev if e == "SEND"}
    wsend = {detail(l, "id"): detail(l, "call") for e, l in ev if e == "WORKER_SEND"}
    done_ = [wsend[detail(l, "id")] for e, l in ev if e == "WORKER_RECV" and detail(l, "id") in wsend]
    return sum(c in sent for c in done_), sum(c not in sent for c in done_)


def run_demo():
    """A real mate-demo run's instruction log."""
    log = gtlog.tmp("demo_il.log")
    env = dict(os.environ, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
               MATE_INSTRUCTION_LOG=log, MATE_DEMO_ROUNDS="3")
    subprocess.run([build_path("examples", "mate-demo")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return log


demo_log = functools.cache(run_demo)


def test_gt_logs():
    """GT's real logs: flows from each request to its work"""
    for name in ("demo.log", "multiworker4_autoshard.log"):
        evs, err = export(gtlog.fixture(name), name)
        n = sum(1 for e in evs if e.get("ph") == "s")
        bound, unbound = bind(evs)
        check(n > 0 and bound == n and unbound == 0,
              "%s: %d of %d flows bound under Chrome's rules, %d unbound" % (name, bound, n, unbound))


def test_demo():
    """a real mate run: a flow from every call to each piece of its work"""
    log = demo_log()
    with open(log) as f:
        lines = f.read().splitlines()
    want, lost = expected_flows(lines)
    check(want > 20 and lost == 0, "mate-demo: %d works with their call, %d without" % (want, lost))
    evs, err = export(log, "mate-demo")
    bound, unbound = bind(evs)
    check(bound == want and unbound == 0,
          "mate-demo: %d of %d flows bound under Chrome's rules, %d unbound" % (bound, want, unbound))
    check(dropped(err) == 0, "mate-demo: nothing dropped: " + err)


def test_cut_mid_call():
    """cut off mid-call: after the first work past the middle whose call is still open"""
    with open(demo_log()) as f:
        lines = f.read().splitlines()
    ev_lines = [i for i, l in enumerate(lines) if EVENT.match(l)]
    cut = None
    for i in ev_lines[len(ev_lines) // 2:]:
        l = lines[i]
        if EVENT.match(l).group(1) == "WORKER_RECV":
            call = detail(l, "call")
            if not any(EVENT.match(x) and EVENT.match(x).group(1) == "SEND" and detail(x, "call") == call
                       for x in lines[:i]):
                cut = i + 1
                break
    check(cut is not None, "mate-demo: a work ends before its call")
    part = lines[:cut]
    want, lost = expected_flows(part)
    cutlog = gtlog.tmp("cut.log")
    with open(cutlog, "w") as f:
        f.write("\n".join(part) + "\n")
    evs, err = export(cutlog, "cut")
    bound, unbound = bind(evs)
    check(lost >= 1, "the cut log has %d works whose call is still open" % lost)
    check(bound == want and unbound == 0,
          "cut: %d of %d flows bound, %d unbound (a flow start with no slice)" % (bound, want, unbound))
    check(dropped(err) == lost, "cut: %d flows dropped and said so, want %d: %s" % (dropped(err), lost, err))


def test_many_outstanding():
    """more calls with work outstanding than the writer keeps (65536): the
    oldest calls' flows are dropped, counted; every flow written binds"""
    N = 70000
    lines, seq, t = [], [0], [0.0]

    def line(e, src, det):
        seq[0] += 1
        lines.append("%9.6fs | #%04d | %-12s | %-27s | %-15s | %s" % (t[0], seq[0], e, src, "k", det))

    for i in range(1, N + 1):
        t[0] += 1e-5
        line("RECV", "CLIENT 1", "call=%d op=add depth=0" % i)
        line("WORKER_SEND", "WORKER w0", "call=%d id=%d op=add worker=w0" % (i, i))
        line("SEND", "CLIENT 1", "call=%d op=add depth=0 success=True" % i)
    for i in range(1, N + 1):
        t[0] += 1e-6
        line("WORKER_RECV", "WORKER w0", "call=%d id=%d op=add worker=w0 success=True" % (i, i))
    many = gtlog.tmp("many.log")
    with open(many, "w") as f:
        f.write("\n".join(lines) + "\n")
    evs, err = export(many, "many")
    bound, unbound = bind(evs)
    m = re.search(r"(\d+) flows dropped: their call was forgotten", err)
    check(bound == 65536 and unbound == 0, "many: %d flows bound, %d unbound" % (bound, unbound))
    check(m is not None and int(m.group(1)) == N - 65536, "many: the forgotten counted: " + err)


run_cases(test_gt_logs, test_demo, test_cut_mid_call, test_many_outstanding)
