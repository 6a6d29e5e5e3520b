"""test_record_benchlog.py: mate-record --bench-log at level 1 of an unmodified numpy program:
the interposed cblas_sgemm calls of two shapes give a script of two mate-bench lines, the
profile's two entries (--profile, same run) in the command-line form; an empty name is a
usage error. A second run into the same file adds nothing (each line and the header once);
sh runs every line of the script, goes on past one that fails, sums up and exits 1."""
import functools
import os
import re
import shlex
import subprocess
import sys

from mate_test import build_path, check, need_preload, run, run_cases, tmpdir
from test_bench_log import RAN, profile_lines, script

need_preload()
RECORD = build_path("src", "record", "mate-record")
BENCH = build_path("src", "bench", "mate-bench")
PROG = """
import numpy as np
a = np.ones((256, 128), np.float32); b = np.ones((128, 64), np.float32)
for i in range(5):
    a @ b
np.ones((8, 4), np.float32) @ np.ones((4, 2), np.float32)
"""
env = {k: v for k, v in os.environ.items() if not k.startswith("MATE_")}
work = tmpdir()
bench = os.path.join(work, "bench.sh")
path = dict(env, PATH=os.path.dirname(BENCH) + os.pathsep + env["PATH"])


@functools.cache
def recorded():
    """The script's lines of PROG's run with --profile and --bench-log (checked)."""
    run([RECORD, "-q", "-o", "/dev/null", "--profile", "prof.jsonl", "--bench-log", "bench.sh",
         "--", sys.executable, "-c", PROG], cwd=work, env=env)
    body = script(os.path.join(work, "bench.sh"), "mate-record --bench-log")
    check(len(body) == 2, "one line per shape, 6 calls of 2 shapes: %s" % body)
    return body


def test_script():
    body = recorded()
    words = [shlex.split(x) for x in body]
    check(all(w[:5] == ["mate-bench", "-m", "cblas", "-c", "cblas_sgemm"] for w in words),
          "mate-bench -m cblas -c cblas_sgemm: %s" % words)
    check(sorted(body) == profile_lines(os.path.join(work, "prof.jsonl")),
          "the lines are the profile's entries (--profile) in the command-line form: %s" % body)
    check(any("arg_3=256" in w for w in words), "m by value: %s" % words)
    # alone, --bench-log still has the interposers collect the arguments at level 1
    run([RECORD, "-q", "-o", "/dev/null", "--bench-log", "alone.sh", "--", sys.executable, "-c",
         PROG], cwd=work, env=env)
    alone = script(os.path.join(work, "alone.sh"), "--bench-log alone")
    check(sorted(alone) == sorted(body), "without --profile the same lines: %s" % alone)


def test_second_run():
    """a second run of the same program into the same file: each shape's line once, one header"""
    body = recorded()
    with open(bench) as f:
        before = f.read()
    run([RECORD, "-q", "-o", "/dev/null", "--bench-log", "bench.sh", "--", sys.executable, "-c",
         PROG], cwd=work, env=env)
    with open(bench) as f:
        text = f.read()
    again = script(bench, "a second run")
    check(sorted(again) == sorted(body) and text.count("#!/bin/sh") == 1 and
          text.split("\n").count(RAN) == len(body),
          "a second run adds no line and no header:\n%s" % text)
    check(text == before, "the file is as the first run left it:\n%s\nbefore:\n%s"
          % (text, before))


def test_failing_line():
    """one line fails (a function mate-bench has no handler for): sh runs the others, sums up
    on stderr and exits 1"""
    body = recorded()
    with open(bench) as f:
        text = f.read()
    lines = text.split("\n")
    first = lines.index(body[0])
    lines[first] = body[0].replace(" -c cblas_sgemm ", " -c no_such_function ")
    with open(bench, "w") as f:
        f.write("\n".join(lines))
    p = subprocess.run(["sh", "bench.sh"], cwd=work, env=path, capture_output=True, text=True)
    timed = [x for x in p.stdout.splitlines() if " median " in x]
    check(len(timed) == 1 and "cblas_sgemm" in timed[0],
          "the line after the failing one runs: %r %r" % (p.stdout, p.stderr))
    check("no_such_function" in p.stdout + p.stderr and
          "bench.sh: entry 1 failed (exit status " in p.stderr,
          "the failing entry is named on stderr: %r" % p.stderr)
    check(p.stderr.endswith("bench.sh: 2 of 2 entries ran; 1 failed: see above\n"),
          "the summary counts them: %r" % p.stderr)
    check(p.returncode == 1, "sh bench.sh exits 1 when an entry failed: %d" % p.returncode)
    # the same with every line passing: exit 0, nothing failed
    lines[first] = body[0]
    with open(bench, "w") as f:
        f.write("\n".join(lines))
    p = subprocess.run(["sh", "bench.sh"], cwd=work, env=path, capture_output=True, text=True)
    check(p.returncode == 0 and len(re.findall(" median ", p.stdout)) == 2 and
          p.stderr.endswith("bench.sh: 2 of 2 entries ran; 0 failed\n"),
          "every line passes: exit 0: %d %r %r" % (p.returncode, p.stdout, p.stderr))


def test_empty_name():
    p = run([RECORD, "--bench-log", "", "--", "true"], cwd=work, env=env, check=False)
    check(p.returncode == 2 and "empty file name" in p.stderr, "--bench-log '': usage error: %s"
          % p.stderr)


run_cases(test_script, test_second_run, test_failing_line, test_empty_name)
