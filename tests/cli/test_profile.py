"""test_profile.py: MATE_PROFILE's table of distinct calls, against what is on disk.

The demo at level 10 with a profile: every entry is one of `mate-list-dumps --unique
--jsonl`'s groups with the same shape object, key and call count (4 client threads), sorted
by total time. tests/doc-program: level 1 and level 10 profiles have the same keys; level 0
writes none; a forked child that exits writes its own table (PATH.PID without %i) holding
its calls only; SIGTERM and SIGINT in the middle of the demo leave a whole table (and the
program still dies of the signal); no temporary file is left behind, and a FIFO or a file
planted at a temporary name is never opened."""
import glob
import json
import os
import signal
import subprocess

from mate_test import (build_path, check, default_signals, run, run_cases, tmpdir, wait_for_calls,
                       wait_seconds)

DEMO = build_path("examples", "mate-demo")
PROG = build_path("tests", "doc-program")
LIST = build_path("src", "replay", "mate-list-dumps")
SHAPE = ("function", "module", "tensors", "scalars")


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MATE_")}
    e.update({"MATE_LOGDEST": "/dev/null"}, **kw)
    return e


def table(path):
    """The profile's entries; every line must be a whole JSON object."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except ValueError:
                check(False, "%s:%d is not JSON: %r" % (path, n, line[:200]))
    return rows


def no_leftovers(work):
    left = glob.glob(os.path.join(work, "*.tmp.*"))
    check(left == [], "no temporary file is left: %s" % left)


def test_demo_against_dumps():
    work = tmpdir()
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="10", MATE_PROFILE="prof-%i.jsonl"))
    files = glob.glob(os.path.join(work, "prof-*.jsonl"))
    check(len(files) == 1, "one profile for one process: %s" % files)
    if not files:
        return
    prof = table(files[0])
    p = run([LIST, "-q", "--unique", "--jsonl", "mate_dumps"], cwd=work, check=False)
    groups = {g["key"]: g for g in (json.loads(x) for x in p.stdout.splitlines())}
    check(p.returncode == 0 and len(groups) > 0, "--unique lists the dumps: %s" % p.stderr)
    check(len(prof) == len(groups), "as many entries as distinct dumps: %d, %d"
          % (len(prof), len(groups)))
    for e in prof:
        g = groups.get(e["key"])
        check(g is not None, "the dumps have %s %s" % (e["key"], e["function"]))
        if g is None:
            continue
        check(all(e[k] == g[k] for k in SHAPE), "the same shape: %s\n%s" % (e, g))
        check(e["calls"] == g["calls"] and e["failed"] == g["failed"],
              "%s: %d calls (%d failed) in the profile, %d (%d) on disk"
              % (e["function"], e["calls"], e["failed"], g["calls"], g["failed"]))
    check(any(e["tensors"] for e in prof), "tensors are part of the shape")
    check(any(e["failed"] for e in prof), "the demo's failing call is counted as failed")
    totals = [e["total_s"] for e in prof]
    check(totals == sorted(totals, reverse=True), "sorted by total time: %s" % totals)
    check(all(e["max_s"] <= e["total_s"] and e["max_s"] > 0 for e in prof), "max <= total")
    # the plain form: a count, the key and the call per line
    p = run([LIST, "--unique", "mate_dumps"], cwd=work, check=False)
    lines = p.stdout.splitlines()
    check(len(lines) == len(groups) and "distinct call" in p.stderr,
          "--unique prints a line per shape: %s %s" % (lines[:3], p.stderr))
    first = lines[0].split() if lines else []
    top = max(groups.values(), key=lambda g: g["calls"])
    check(first[:2] == [str(top["calls"]), top["key"]], "the most frequent first: %s" % first)
    no_leftovers(work)


def test_levels_and_fork():
    work = tmpdir()
    keys = {}
    for level in ("1", "10"):
        run([PROG], cwd=work, env=env(MATE_LOGLEVEL=level, MATE_PROFILE="p%s.jsonl" % level))
        keys[level] = sorted(e["key"] for e in table(os.path.join(work, "p%s.jsonl" % level)))
    check(keys["1"] == keys["10"] and len(keys["1"]) == 4,
          "level 1 and level 10 see the same 4 shapes: %s" % keys)
    run([PROG], cwd=work, env=env(MATE_LOGLEVEL="0", MATE_PROFILE="p0.jsonl"))
    check(not os.path.exists(os.path.join(work, "p0.jsonl")), "level 0 writes no profile")
    # a forked child that exits normally: its own table, not the parent's counts
    run([PROG, "--fork-exit"], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_PROFILE="pf.jsonl"))
    parent = table(os.path.join(work, "pf.jsonl"))
    kids = glob.glob(os.path.join(work, "pf.jsonl.*"))
    kids = [k for k in kids if ".tmp." not in k]
    check(len(kids) == 1, "the child writes PATH.PID: %s" % os.listdir(work))
    check(sum(e["calls"] for e in parent) == 4, "the parent's 4 calls: %s" % parent)
    if kids:
        child = table(kids[0])
        check([(e["function"], e["calls"]) for e in child] == [("rmsnorm", 1)],
              "the child's one call, none of its parent's: %s" % child)
    no_leftovers(work)


def signalled(sig):
    work = tmpdir()
    log = os.path.join(work, "log.txt")
    p = subprocess.Popen([DEMO], cwd=work, stdout=subprocess.DEVNULL, preexec_fn=default_signals,
                         env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl",
                                 MATE_LOGDEST=log, MATE_DEMO_SECONDS="30"))
    check(wait_for_calls(log, 200), "signal %d: the demo logs 200 calls" % sig)
    p.send_signal(sig)
    rc = p.wait(timeout=wait_seconds())
    check(rc == -sig, "the demo still dies of signal %d: %d" % (sig, rc))
    path = os.path.join(work, "prof.jsonl")
    check(os.path.exists(path), "signal %d: the profile is written" % sig)
    if os.path.exists(path):
        rows = table(path)
        check(len(rows) > 0 and sum(e["calls"] for e in rows) > 100,
              "signal %d: a whole table: %d entries" % (sig, len(rows)))
    no_leftovers(work)


def test_planted():
    """A FIFO or a co-user's file at the temporary name a profile once used (PATH.tmp.PID)
    is never opened: the program exits at once and its table is a new file of its own."""
    work = tmpdir()
    plant = 'mkfifo "prof.jsonl.tmp.$$"; exec "$0"'
    p = run(["timeout", "20", "sh", "-c", plant, PROG], cwd=work, check=False,
            env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl"))
    check(p.returncode == 0, "a FIFO at the temporary name: the program exits (124: it was "
          "held at exit): %d %s" % (p.returncode, p.stderr))
    path = os.path.join(work, "prof.jsonl")
    check(os.path.exists(path) and len(table(path)) == 4, "the profile is written beside it")
    left = glob.glob(os.path.join(work, "*.tmp.*"))
    check(len(left) == 1 and os.path.basename(left[0]).startswith("prof.jsonl.tmp.") and
          os.path.exists(left[0]), "only the planted FIFO is left: %s" % left)
    # a writable file planted at the name: not truncated, written and renamed into place
    work = tmpdir()
    plant = 'echo "a co-user\'s file" >"prof.jsonl.tmp.$$"; chmod 666 "prof.jsonl.tmp.$$"; ' \
            'exec "$0"'
    p = run(["timeout", "20", "sh", "-c", plant, PROG], cwd=work, check=False,
            env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl"))
    left = glob.glob(os.path.join(work, "prof.jsonl.tmp.*"))
    path = os.path.join(work, "prof.jsonl")
    check(p.returncode == 0 and len(left) == 1, "a planted file: it stays, the program "
          "exits: %d %s" % (p.returncode, os.listdir(work)))
    if len(left) == 1 and os.path.exists(path):
        with open(left[0]) as f:
            check(f.read() == "a co-user's file\n", "the planted file is untouched")
        check(os.stat(left[0]).st_ino != os.stat(path).st_ino and
              os.stat(path).st_mode & 0o002 == 0 and len(table(path)) == 4,
              "the profile is a new file, not the planted one renamed: %o"
              % os.stat(path).st_mode)


def test_sigterm():
    signalled(signal.SIGTERM)


def test_sigint():
    signalled(signal.SIGINT)


run_cases(test_demo_against_dumps, test_levels_and_fork, test_planted, test_sigterm, test_sigint)
