"""visualize_gt.py: GT's real logs and a log with every quirk of the spec parse and pair as GT means them; several logs merge; malformed lines are counted, reported by line number, and fatal only when nothing parses."""
import os
import re

from mate_test import check, run, run_cases, build_path
import gtlog


def test_demo_log():
    """demo.log, one of the two real GT logs (tests/fixtures/gt-logs)"""
    p = gtlog.visualize(gtlog.fixture("demo.log"), "-o", gtlog.tmp("demo.png"), "-v")
    st = gtlog.stats(p.stderr)
    check(st == {"events": 22, "ops": 4, "calls": 5, "op_types": 3, "lanes": 4, "clients": 2, "workers": 1},
          "demo.log: %s" % st)
    check("malformed" not in p.stderr and "unpaired" not in p.stderr, "demo.log clean: " + p.stderr)
    g = gtlog.geometry(p.stderr)
    check("auto_worker" in g["lanes"] and "client 006b8b4568" in g["lanes"] and "dispatcher" in g["lanes"],
          "demo lanes: %s" % list(g["lanes"]))


def test_multiworker_log():
    """multiworker4_autoshard.log: four workers in natural order, every batch paired"""
    p = gtlog.visualize(gtlog.fixture("multiworker4_autoshard.log"), "-o", gtlog.tmp("mw.png"), "-v")
    st = gtlog.stats(p.stderr)
    check(st is not None and st["events"] == 392 and st["ops"] == 83 and st["workers"] == 4 and st["calls"] == 63,
          "multiworker: %s" % st)
    g = gtlog.geometry(p.stderr)
    order = list(g["lanes"])
    check(order[-4:] == ["auto_worker_0", "auto_worker_1", "auto_worker_2", "auto_worker_3"],
          "workers in natural order, last: %s" % order)
    check(order.index("dispatcher") == order.index("auto_worker_0") - 1, "dispatcher above the workers")
    check("unpaired" not in p.stderr, "every batch paired: " + p.stderr)


def test_quirks():
    """the spec's quirks, written by the test"""
    log = gtlog.tmp("quirks.log")
    q = gtlog.gt_quirks(log)
    with open(log) as f:
        text = f.read()
    check("#10000 |" in text and "\n100.250s |" in text and "\n1234.500s |" in text, "fixture has the quirks")
    check("| MODIFIER_INJECT | " in text and "| WorkerCompileStart |" in text, "overrunning columns")
    p = gtlog.visualize(log, "-o", gtlog.tmp("quirks.png"), "-v")
    st = gtlog.stats(p.stderr)
    check(st is not None and st["events"] == q.events and st["ops"] == q.ops and st["calls"] == q.calls,
          "quirks: %s, want %d events %d ops %d calls" % (st, q.events, q.ops, q.calls))
    check("malformed" not in p.stderr and "unpaired" not in p.stderr, "quirks parse clean: " + p.stderr)
    check(re.search(r"1234\.\d+ s\)", p.stderr) is not None, "times past 1000 s: " + p.stderr)
    g = gtlog.geometry(p.stderr)
    check("gpu_worker_with_a_rather_long_name_0" in g["lanes"], "long worker name kept: %s" % list(g["lanes"]))
    check("client 006b8b4568" in g["lanes"], "CLIENT CLIENT <id> is client <id>")


def test_spec_example():
    """GT's documentation example (ip:port client, unpadded sizes)"""
    p = gtlog.visualize(gtlog.spec_example(gtlog.tmp("spec.log")), "-o", gtlog.tmp("spec.png"), "-v")
    st = gtlog.stats(p.stderr)
    check(st is not None and st["ops"] == 1 and st["calls"] == 1, "spec example: %s" % st)
    g = gtlog.geometry(p.stderr)
    check("client 127.0.0.1:12345" in g["lanes"] and "worker_0" in g["lanes"], "spec lanes %s" % list(g["lanes"]))


def test_merge():
    """several logs merge; stdin is '-'; a log's lanes are prefixed by its name"""
    with open(gtlog.fixture("demo.log")) as f:
        p = run([build_path("mate-visualize"), "-", gtlog.fixture("multiworker4_autoshard.log"),
                 "-o", gtlog.tmp("both.png"), "-v"], stdin=f)
    st = gtlog.stats(p.stderr)
    check(st is not None and st["events"] == 22 + 392 and st["ops"] == 87 and st["workers"] == 5,
          "merged: %s" % st)
    g = gtlog.geometry(p.stderr)
    check("auto_worker" in g["lanes"] and "auto_worker_2" in g["lanes"], "merged lanes %s" % list(g["lanes"]))


def test_concatenated():
    """concatenated logs (a second header mid-file) are one log"""
    cat = gtlog.tmp("cat.log")
    with open(cat, "w") as f:
        f.write(open(gtlog.fixture("demo.log")).read() + open(gtlog.fixture("demo.log")).read())
    p = gtlog.visualize(cat, "-o", gtlog.tmp("cat.png"))
    st = gtlog.stats(p.stderr)
    check(st is not None and st["events"] == 44 and "malformed" not in p.stderr, "concatenated: %s %s" % (st, p.stderr))


def test_malformed():
    """malformed lines: counted, the first five reported with line numbers, not fatal"""
    bad = gtlog.tmp("bad.log")
    lines = open(gtlog.fixture("demo.log")).read().splitlines()
    lines.insert(25, "  0.900s | #0099 | RECV")                       # too few fields
    lines.insert(27, "  1.2.3s | #0100 | RECV | CLIENT x | Cmd")       # bad time
    lines.insert(29, "garbage in the middle")                          # not an event line
    lines.insert(31, "  0.901s | #12a | RECV | CLIENT x | Cmd")        # bad sequence number
    lines.insert(33, "  0.902s | #0101 |  | CLIENT x | Cmd")           # empty event
    lines.insert(35, "  0.903s | #0102 | RECV")                        # a sixth one, only counted
    lines.append("  9.999s | #9999 | RECV | CLIENT " + "x" * 70000 + " | Cmd")   # too long
    with open(bad, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = gtlog.visualize(bad, "-o", gtlog.tmp("bad.png"), check=False)
    check(p.returncode == 0, "malformed lines are not fatal: rc %d" % p.returncode)
    st = gtlog.stats(p.stderr)
    check(st is not None and st["events"] == 22, "the good lines still count: %s" % st)
    reported = re.findall(r"bad\.log:(\d+): malformed line skipped: (.*)", p.stderr)
    check([int(n) for n, _ in reported] == [26, 28, 30, 32, 34], "first five by line number: %s" % reported)
    check([w for _, w in reported][:2] == ["too few fields (need 5, joined by \" | \")", "bad time field"],
          "reasons: %s" % reported)
    check("7 malformed lines skipped in all" in p.stderr, "the count: " + p.stderr)


def test_nothing_parses():
    """nothing parses: fatal, exit 1, says why"""
    junk = gtlog.tmp("junk.log")
    with open(junk, "w") as f:
        f.write("=" * 100 + "\nheader only\n" + "  0.1s | #1 | RECV\n" * 3)
    p = gtlog.visualize(junk, "-o", gtlog.tmp("junk.png"), check=False)
    check(p.returncode == 1, "no events: exit 1, got %d" % p.returncode)
    check("junk.log: no event lines parse" in p.stderr, "says why: " + p.stderr)
    check(not os.path.exists(gtlog.tmp("junk.png")), "no picture written")


run_cases(test_demo_log, test_multiworker_log, test_quirks, test_spec_example, test_merge, test_concatenated, test_malformed, test_nothing_parses)
