"""visualize_json.py: mate-visualize's Chrome/Perfetto JSON loads and holds together: every X has a dur, slices on a thread nest, flows pair up, threads and processes are named, memory is a counter; .json.gz is gzip."""
import collections
import functools
import gzip
import json

from mate_test import check, run_cases
import gtlog


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def structure(doc, what):
    """The checks every trace must pass; returns the events."""
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), what + ": traceEvents")
    check(doc.get("displayTimeUnit") == "ns", what + ": displayTimeUnit")
    evs = doc["traceEvents"]
    for e in evs:
        for k in ("name", "ph", "pid"):
            if k not in e:
                check(False, "%s: event without %s: %s" % (what, k, e))
                return evs
    xs = [e for e in evs if e["ph"] == "X"]
    check(all(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0 for e in xs),
          what + ": every X has a dur >= 0")
    check(all("ts" in e and "tid" in e and "cat" in e for e in xs), what + ": X have ts, tid, cat")
    # slices on one thread nest: sorted by start (longest first), each lies
    # inside the enclosing open one or after it
    bad = 0
    by = collections.defaultdict(list)
    for e in xs:
        by[(e["pid"], e["tid"])].append((e["ts"], -e["dur"], e))
    for key, lst in by.items():
        lst.sort(key=lambda v: (v[0], v[1]))
        stack = []
        for ts, ndur, e in lst:
            end = ts - ndur
            while stack and stack[-1] <= ts + 1e-6:
                stack.pop()
            if stack and end > stack[-1] + 1e-6:
                bad += 1
            stack.append(end)
    check(bad == 0, "%s: %d slices overlap without nesting" % (what, bad))
    # flows: each id has one s and one f with the same cat and name
    flows = collections.defaultdict(list)
    for e in evs:
        if e["ph"] in ("s", "f"):
            flows[e["id"]].append(e)
    ok = all(sorted(x["ph"] for x in v) == ["f", "s"] and len({(x["cat"], x["name"]) for x in v}) == 1
             for v in flows.values())
    check(ok, what + ": flow events pair up by id")
    check(all(x.get("bp") == "e" for v in flows.values() for x in v if x["ph"] == "f"),
          what + ": flow ends bind to the enclosing slice")
    # each flow end sits in a slice on its thread at its time
    spans = collections.defaultdict(list)
    for e in xs:
        spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    inside = sum(1 for v in flows.values() for x in v
                 if any(a - 1e-6 <= x["ts"] <= b + 1e-6 for a, b in spans[(x["pid"], x["tid"])]))
    check(inside == 2 * len(flows), "%s: %d of %d flow ends inside a slice" % (what, inside, 2 * len(flows)))
    # named processes and threads
    named = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    check(all(k in named for k in by), what + ": every thread with slices is named")
    check(any(e["ph"] == "M" and e["name"] == "process_name" for e in evs), what + ": process named")
    return evs


@functools.cache
def nested():
    """gtlog's nested log and its trace: (log, its numbers, the trace's path)."""
    log = gtlog.tmp("nested.log")
    g = gtlog.nested(log)
    out = gtlog.tmp("nested.json")
    gtlog.visualize(log, "-o", out)
    return log, g, out


def test_nested():
    """mate-style: nested calls, work joined by id out of order, memory counters"""
    log, g, out = nested()
    evs = structure(load(out), "nested")
    xs = [e for e in evs if e["ph"] == "X"]
    check(sum(e["args"]["kind"] == "call" for e in xs) == g.calls, "calls: %d" % sum(e["args"]["kind"] == "call" for e in xs))
    check(sum(e["args"]["kind"] == "work" for e in xs) == g.ops, "work: %d" % sum(e["args"]["kind"] == "work" for e in xs))
    inner = [e for e in xs if e["name"] == "inner"]
    check(inner and all(e["args"]["depth"] == 1 for e in inner), "inner calls at depth 1")
    k2 = [e for e in xs if e["name"] == "add"]
    check(k2 and all(abs(e["dur"] - 4000) < 1 for e in k2), "id-joined work keeps its own duration (4 ms)")
    k1 = [e for e in xs if e["name"] == "matmul"]
    check(k1 and all(abs(e["dur"] - 6000) < 1 for e in k1), "matmul work 6 ms each")
    flows = [e for e in evs if e["ph"] == "s"]
    check(len(flows) == g.ops, "a flow from its call to each piece of work: %d" % len(flows))
    mem = [e for e in evs if e["ph"] == "C"]
    check(len(mem) == 200 and all("bytes" in e["args"] for e in mem), "memory counters: %d" % len(mem))
    names = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    check({"client thread-0", "stream0", "stream1"} <= names, "thread names %s" % names)


def test_gzip():
    """gzip through zlib: the same events"""
    log, g, out = nested()
    out_gz = gtlog.tmp("nested.json.gz")
    gtlog.visualize(log, "-o", out_gz)
    with open(out_gz, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", "gzip magic")
    check(load(out_gz) == load(out), ".json.gz holds the same trace")


def test_gt_logs():
    """GT's real logs: batches paired, flows from requests, nesting holds"""
    for name, ops in (("demo.log", 4), ("multiworker4_autoshard.log", 83)):
        out = gtlog.tmp(name + ".json")
        gtlog.visualize(gtlog.fixture(name), "--format", "json", "-o", out)
        evs = structure(load(out), name)
        n = sum(1 for e in evs if e["ph"] == "X" and e["args"]["kind"] == "work")
        check(n == ops, "%s: %d work slices, want %d" % (name, n, ops))


def test_quirks_stdin():
    """the spec's quirks fixture, streamed from stdin to stdout"""
    log = gtlog.tmp("quirks.log")
    g = gtlog.gt_quirks(log)
    with open(log) as f:
        p = gtlog.mate_test.run([gtlog.mate_test.build_path("mate-visualize"), "-", "-o", "-", "--format", "json"],
                                stdin=f)
    evs = structure(json.loads(p.stdout), "quirks")
    check(sum(1 for e in evs if e["ph"] == "X" and e["args"]["kind"] == "work") == g.ops, "quirks: work slices")
    check(sum(1 for e in evs if e["ph"] == "X" and e["args"]["kind"] == "call") == g.calls, "quirks: call slices")
    check(any(e["ph"] == "i" and e["name"] == "MODIFIER_INJECT" for e in evs), "injects as instants")


run_cases(test_nested, test_gzip, test_gt_logs, test_quirks_stdin)
