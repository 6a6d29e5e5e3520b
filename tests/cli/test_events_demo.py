"""test_events_demo.py: the demo with monitoring on: mate-trace -s 1 captures it without gaps, every line is GT's format (GT's visualizer's regex, GT's own formatting with microsecond times) and parses back through mate's parser; mate-top -b -n 3 lists the demo's workers; the endpoint is removed at exit."""
import os
import re
import subprocess

from gtlog import GT_VISUALIZE
from mate_test import build_path, check, run, run_cases, tmpdir, wait_until

# mate's event lines: GT's layout with microseconds; lines GT's visualizer skips.
MATE_EVENT = re.compile(r"^\s*\d+\.\d{6}s \| #\d+ \| ")
GT_SKIP = re.compile(r"^\s*[\d.]+s\s*\|\s*#\d+")
SIZE = re.compile(r"^\s*\d+(\.\d+)?(B|KB|MB)$")


def gt_format(t, seq, event, source, command, size_field, details):
    """A line as GT's dispatcher writes it (size_field as found: GT rounds), the
    time with six decimals rather than GT's three."""
    word = "WORKER" if "WORKER" in event else "CLIENT"
    s = "%10.6fs | #%04d | %-12s | %s %-20s | %-15s" % (t, seq, event, word, source, command)
    if size_field is not None:
        s += " | %10s" % size_field
    if details:
        s += " | " + details
    return s


PROBLEMS = []


def expect(cond, what):
    """A per-line check: the first few failures are reported by check()."""
    if not cond:
        PROBLEMS.append(what)


def check_line(line, prev):
    """One event line: fields, GT's exact layout; returns (time, seq)."""
    f = line.split(" | ")
    expect(5 <= len(f) <= 7, "5 to 7 fields: %r" % line)
    t = float(f[0].strip()[:-1])
    seq = int(f[1][1:])
    event = f[2].rstrip()
    word, _, source = f[3].partition(" ")
    source = source.rstrip()
    command = f[4].rstrip()
    size_field, details = None, ""
    rest = f[5:]
    if rest and SIZE.match(rest[0]):
        size_field = rest[0].strip()
        rest = rest[1:]
    if rest:
        details = " | ".join(rest)
    expect(word == ("WORKER" if "WORKER" in event else "CLIENT"), "source word: %r" % line)
    expect(gt_format(t, seq, event, source, command, size_field, details) == line,
          "GT's formatting gives the same line: %r" % line)
    if prev is not None:
        expect(seq == prev[1] + 1, "sequence without gaps at %r" % line)
        expect(t >= prev[0], "time never goes back at %r" % line)
    return t, seq


def test_demo_monitored():
    d = tmpdir()
    rt = os.path.join(d, "rt")
    os.mkdir(rt, 0o700)
    # a deep queue: on a loaded machine the reader may be starved for a while; no CPU budget:
    # the demo's 100k events/s are a third of what 0.1 of a core formats on an idle machine,
    # but a loaded one makes each event dearer (test_events_budget checks the budget)
    env = dict(os.environ, MATE_MONITOR_DIR=rt, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
               MATE_MONITOR="1", MATE_DEMO_SECONDS="5", MATE_MONITOR_HWM="400000",
               MATE_MONITOR_CPU="0")
    tools_env = dict(os.environ, MATE_MONITOR_DIR=rt)
    demo = subprocess.Popen([build_path("examples", "mate-demo")], env=env,
                            stderr=subprocess.PIPE, text=True)
    info = os.path.join(rt, "%d.info" % demo.pid)
    wait_until(lambda: os.path.exists(info))
    check(os.path.exists(info), "the demo's endpoint is described in %s" % info)
    check(os.path.exists(os.path.join(rt, "%d.ipc" % demo.pid)), "the ipc endpoint exists")
    check(oct(os.stat(rt).st_mode & 0o777) == oct(0o700), "runtime directory mode 0700")

    # mate-top -b -n 3 alongside mate-trace -s 1 (into a directory it creates)
    top = subprocess.Popen([build_path("src", "top", "mate-top"), "-b", "-n", "3", "-d", "0.3"],
                           env=tools_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    traces = os.path.join(d, "traces", "sub")
    p = run([build_path("src", "trace", "mate-trace"), "-s", "1", "--dir", traces], env=tools_env)
    top_out, top_err = top.communicate(timeout=60)
    check(top.returncode == 0, "mate-top exits 0: %s" % top_err)
    tables = top_out.count("mate-top: ")
    check(tables == 3, "three tables: %d\n%s" % (tables, top_out))
    last = top_out.split("mate-top: ")[-1]
    for w in ("worker_0", "worker_1", "worker_2"):
        check(re.search(r"^%d\s+mate-demo\s+%s\s" % (demo.pid, w), last, re.M) is not None,
              "mate-top lists %s:\n%s" % (w, top_out))
    names = os.listdir(traces)
    check(len(names) == 1 and re.match(r"^trace_\d{8}_\d{6}\.log$", names[0]),
          "one trace_YYYYMMDD_HHMMSS.log: %s" % names)
    m = re.search(r"pid (\d+) mate-demo: (\d+) events, (\d+) dropped, (\d+) lost, covering ([\d.]+) s",
                  p.stderr)
    check(m is not None, "summary names the demo: %r" % p.stderr)
    if m:
        check(int(m.group(1)) == demo.pid, "summary pid")
        check(int(m.group(2)) > 1000, "events captured: %s" % m.group(2))
        # the program time its events cover: the capture's second at most
        check(0 < float(m.group(5)) <= 1.5, "covered time: %s s" % m.group(5))
        check(m.group(3) == "0" and m.group(4) == "0",
              "no gap in the publisher's sequence: %s dropped, %s lost" % (m.group(3), m.group(4)))
    check(re.search(r"events in \d+\.\d+ s from 1 process -> ", p.stderr) is not None,
          "summary line: %r" % p.stderr)
    path = os.path.join(traces, names[0]) if names else None
    lines = open(path).read().split("\n")[:-1] if path else []
    check(len(lines) > 20 and lines[0] == "=" * 100, "GT's header first")
    events = [ln for ln in lines if GT_SKIP.match(ln)]
    check(all(MATE_EVENT.match(ln) for ln in events), "every event line has a time in microseconds")
    longer = [ln for ln in events if len(ln.split(" | ")) > 5]   # GT skips 5-field lines
    gt = [GT_VISUALIZE.match(ln) for ln in longer]
    check(longer and all(m and float(m.group("timestamp")) == float(ln.split("s | ")[0])
                         for m, ln in zip(gt, longer)),
          "GT's visualizer reads every event line with a size or details, time included")
    check(len(events) > 1000, "events in the file: %d" % len(events))
    prev, kinds, workers = None, set(), set()
    for ln in events:
        prev = check_line(ln, prev)
        kinds.add(ln.split(" | ")[2].strip())
        if "WORKER_SEND" in ln:
            workers.add(ln.split(" | ")[3].split()[1])
    check(not PROBLEMS, "every line in GT's format, gapless, in time order: %s" % PROBLEMS[:5])
    check({"RECV", "SEND", "WORKER_SEND", "WORKER_RECV"} <= kinds, "event kinds: %s" % kinds)
    check({"worker_0", "worker_1", "worker_2"} <= workers, "the pool's workers: %s" % workers)

    # mate's own parser reads every line back, and formats it again identically
    r = run([build_path("tests", "ilog-check"), path], check=False)
    check(r.returncode == 0 and "malformed 0" in r.stderr, "mate's parser: %r" % r.stderr)
    check(r.stdout.split("\n")[:-1] == events, "parse + format round trip")

    rc = demo.wait(timeout=60)
    check(rc == 0, "the demo exits 0: %s" % demo.stderr.read())
    check(not os.path.exists(info) and not os.path.exists(os.path.join(rt, "%d.ipc" % demo.pid)),
          "the endpoint is removed at exit")


run_cases(test_demo_monitored)
