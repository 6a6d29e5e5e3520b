"""events_hostile_name.py: a publisher whose program name is 40 control characters and "end": mate-trace captures its events and names it whole (escaped six times over, the name once filled the frame's tail and was cut), with '?' for each control character (never raw on a terminal)."""
import os
import re
import subprocess

from mate_test import build_path, check, run, run_cases, tmpdir, wait_until

NAME = "\x1b" * 40 + "end"


def test_hostile_name():
    d = tmpdir()
    rt = os.path.join(d, "rt")
    os.mkdir(rt, 0o700)
    demo = build_path("examples", ".libs", "mate-demo")
    env = dict(os.environ, MATE_MONITOR_DIR=rt, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
               MATE_MONITOR="1", MATE_DEMO_SECONDS="3")
    if not os.path.exists(demo):
        demo = build_path("examples", "mate-demo")   # a static build: no libtool wrapper
    else:
        env["LD_LIBRARY_PATH"] = build_path(".libs") + ":" + env.get("LD_LIBRARY_PATH", "")
    # argv[0] is the program's name in the stream
    p = subprocess.Popen([NAME], executable=demo, env=env, stderr=subprocess.PIPE, text=True)
    info = os.path.join(rt, "%d.info" % p.pid)
    wait_until(lambda: os.path.exists(info))
    check(os.path.exists(info), "the publisher's endpoint is described")
    r = run([build_path("src", "trace", "mate-trace"), "-s", "1", "--pid", str(p.pid), "-o",
             os.path.join(d, "t.log")], env=dict(os.environ, MATE_MONITOR_DIR=rt))
    m = re.search(r"pid %d (.*): (\d+) events, (\d+) dropped, (\d+) lost" % p.pid, r.stderr)
    check(m is not None, "the summary names the publisher: %r" % r.stderr)
    if m:
        check(m.group(1) == "?" * 40 + "end", "the name, whole and harmless: %r" % m.group(1))
        check(int(m.group(2)) > 1000, "its events were captured: %s" % m.group(2))
    check("\x1b" not in r.stderr, "no control character reaches the terminal")
    check(p.wait(timeout=60) == 0, "the publisher exits 0")


run_cases(test_hostile_name)
