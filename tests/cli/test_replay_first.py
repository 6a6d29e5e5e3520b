"""test_replay_first.py: mate-replay --first on a run recorded by libmate (3 processes, 300 chained calls): a wrong row planted in a middle call is named with its place in the run and the call its input came from; no wrong call; unsupported calls passed over; filters and -j; the hash cache; ambiguous order; tensor files past MATE_MAX_MEMORY (--first, --nonfinite, --shrink, --export); a root of 2,000 processes (--first and --nonfinite find the planted call in bounded memory with 64 file descriptors; their times over it and over 500 processes printed, not bounded)."""
import json
import math
import os
import re
import shutil
import subprocess

import torch

from mate_test import build_path, run, check, tmpdir, run_cases, record_env

RP = build_path("src", "replay", "mate-replay")
LIST = build_path("src", "replay", "mate-list-dumps")
CACHE = ".mate-tensor-hashes"
PROCS, CALLS = 3, 100

work = tmpdir()
clean = os.path.join(work, "clean")
env = record_env()
env.update(MATE_LOGLEVEL="10", MATE_DUMP_DIR=clean, MATE_LOGDEST=os.path.join(work, "log.txt"))
run([build_path("tests", "first-chain"), str(PROCS), str(CALLS)], env=env)


def dumps(root):
    return sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))


def record(root, name):
    with open(os.path.join(root, name, "metadata.jsonl")) as f:
        return json.loads(f.read().splitlines()[-1])


def edit_record(root, name, change):
    path = os.path.join(root, name, "metadata.jsonl")
    with open(path) as f:
        recs = [json.loads(l) for l in f.read().splitlines()]
    with open(path, "w") as f:
        for r in recs:
            change(r)
            f.write(json.dumps(r) + "\n")


NAMES = dumps(clean)
PIDS = sorted({int(re.search(r"_pid(\d+)_", n).group(1)) for n in NAMES})
MID = PIDS[1]


def named(what):
    return [n for n in NAMES if "_pid%d_%s" % (MID, what) in n][0]


# the middle process calls rmsnorm, silu_and_mul, mm, fused_add_rmsnorm (in place), ...
WRONG, FEEDER = named("mm_call0013"), named("silu_and_mul_call0013")   # its 51st and 50th
NORM, FUSED = named("rmsnorm_call0014"), named("fused_add_rmsnorm_call0013")  # 53rd, 52nd


def ms(ts):
    """A record's YYYYMMDD_HHMMSS_mmm as milliseconds (differences only)."""
    import calendar
    import time
    t = time.strptime(ts[:15], "%Y%m%d_%H%M%S")
    return calendar.timegm(t) * 1000 + int(ts[16:19])


# An unsupported call early in the run, in a process of its own: passed over, counted.
first_dump = NAMES[0]
odd = re.sub(r"_pid\d+_rmsnorm_", "_pid1_mystery_op_", first_dump)
shutil.copytree(os.path.join(clean, first_dump), os.path.join(clean, odd))
edit_record(clean, odd, lambda r: r.update(function_name="mystery_op", process_id=1))

# The planted root: one element of one row of the middle process's 51st call's result.
planted = os.path.join(work, "planted")
shutil.copytree(clean, planted)
out_pt = os.path.join(planted, WRONG, "outputs.pt")
outs = torch.load(out_pt)
outs["result"][3, 5] += 0.5
torch.save(outs, out_pt)


def order(root, *opts):
    """The calls in replay order (mate-replay's own --jsonl listing) and their verdicts."""
    p = run([RP, "--jsonl"] + list(opts) + [root], check=False)
    return [json.loads(l) for l in p.stdout.splitlines()]


ORDER = order(planted)
INDEX = {o["dir"]: o["index"] for o in ORDER}
N = len(ORDER)


def grouped(n):
    return "{:,}".format(n)


def test_no_wrong_call():
    p = run([RP, "--first", clean], check=False)
    check(p.returncode == 0, "no wrong call: exit 0 (%d, %r)" % (p.returncode, p.stderr))
    check(p.stdout == "no wrong call among %d replayed (passed over 1 unsupported call)\n" % N,
          "says so: %r" % p.stdout)
    p = run([RP, "--first", "--jsonl", clean], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and len(lines) == 1, "--jsonl: one line, exit 0: %r" % p.stdout)
    o = json.loads(lines[0])
    check(o == {"first": None, "replayed": N, "unsupported_skipped": 1, "ambiguous_order": 0},
          "--jsonl: first null: %r" % o)
    check(not os.path.exists(os.path.join(clean, CACHE)), "nothing hashed, nothing cached")


def test_planted():
    check(N == PROCS * CALLS + 1, "%d calls recorded and one made up" % N)
    bad = [o for o in ORDER if o["verdict"] != "passed"]
    check([o["dir"] for o in bad] == [odd, WRONG], "a plain replay: one unsupported, one "
          "mismatch: %r" % [(o["dir"], o["verdict"]) for o in bad])
    idx, fidx = INDEX[WRONG], INDEX[FEEDER]
    check(idx > CALLS // 2 and idx < N, "the wrong call is in the run's middle, its own process's "
          "51st (%d of %d)" % (idx, N))
    rec = record(planted, WRONG)
    secs = (ms(rec["timestamp"]) - min(ms(record(planted, n)["timestamp"]) for n in dumps(planted))) / 1000
    p = run([RP, "--first", planted], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 1, "a wrong call: exit 1 (%d, %r)" % (p.returncode, p.stderr))
    head = ("first wrong call: call %s of %s, %.3f s into the run, process %d: minilib.mm (%s): "
            "Mismatch: result[3, 5]: " % (grouped(idx), grouped(N), secs, MID, WRONG))
    check(lines and lines[0].startswith(head), "where it stands:\n%r\n%r" % (lines[:1], head))
    check("  its input `a` (arg_0) is `result` of call %s, minilib.silu_and_mul (%s)"
          % (grouped(fidx), FEEDER) in lines, "its producer: %r" % lines)
    check("  its input `b` (arg_1): no earlier call's output holds it" in lines,
          "the weight has none: %r" % lines)
    check("passed over 1 unsupported call before it" in lines, "unsupported counted: %r" % lines)

    p = run([RP, "--first", "--jsonl", planted], check=False)
    js = p.stdout.splitlines()
    check(p.returncode == 1 and len(js) == 1, "--jsonl: one object, exit 1: %r" % p.stdout)
    o = json.loads(js[0])
    want = {"first": idx, "index": idx, "of": N, "process_id": MID, "function": "mm",
            "module": "minilib", "dir": WRONG, "path": os.path.join(planted, WRONG),
            "verdict": "mismatch", "key": "result", "first_bad_index": "[3, 5]",
            "replayed": idx, "unsupported_skipped": 1, "ambiguous_order": 0}
    check({k: o.get(k) for k in want} == want, "--jsonl fields: %r" % o)
    check(abs(o["seconds_into_run"] - secs) < 1e-9, "seconds: %r, %r" % (o["seconds_into_run"], secs))
    check(o["message"] == lines[0].split(": Mismatch: ", 1)[1], "the usual message")
    check(o["calls_read"] == 1 and o["calls_from_cache"] == idx - 1,
          "the second run takes every call's shapes and hashes from the cache and reads only the "
          "producer, to confirm it: %r" % o)
    check(o["producers"] == [
        {"key": "arg_0", "name": "a", "producer_index": fidx, "producer_function": "silu_and_mul",
         "producer_module": "minilib", "producer_dir": FEEDER, "producer_output": "result",
         "in_place": False},
        {"key": "arg_1", "name": "b", "producer_index": None}], "producers: %r" % o["producers"])


def test_in_place():
    root = os.path.join(work, "in-place")
    shutil.copytree(clean, root)
    pt = os.path.join(root, NORM, "outputs.pt")
    outs = torch.load(pt)
    outs["result"][7, 0] = -outs["result"][7, 0]
    torch.save(outs, pt)
    p = run([RP, "--first", root], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 1 and lines and ("process %d: minilib.rmsnorm (%s): Mismatch: result[7, 0]: "
          % (MID, NORM)) in lines[0], "the norm is the first wrong call: %r" % lines)
    check("  its input `input` (arg_0) is `arg_0` (written in place) of call %s, "
          "minilib.fused_add_rmsnorm (%s)" % (grouped(INDEX[FUSED]), FUSED) in lines,
          "its input is what fused_add_rmsnorm left in its argument: %r" % lines)
    check("  its input `weight` (arg_1): no earlier call's output holds it" in lines, "%r" % lines)
    o = json.loads(run([RP, "--first", "--jsonl", root], check=False).stdout)
    check(o["producers"][0] == {"key": "arg_0", "name": "input", "producer_index": INDEX[FUSED],
          "producer_function": "fused_add_rmsnorm", "producer_module": "minilib", "producer_dir": FUSED,
          "producer_output": "arg_0", "in_place": True}, "--jsonl: %r" % o["producers"])


def test_unreadable():
    root = os.path.join(work, "unreadable")
    shutil.copytree(planted, root)
    os.remove(os.path.join(root, WRONG, "inputs.pt"))
    p = run([RP, "--first", root], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 1 and lines and "minilib.mm (%s): Error: " % WRONG in lines[0],
          "a call whose inputs are gone is an error, and the first wrong call: %r" % lines)
    check(len(lines) > 1 and lines[1].startswith("  its inputs cannot be traced: ") and
          "inputs.pt" in lines[1], "and says its inputs cannot be traced: %r" % lines)
    o = json.loads(run([RP, "--first", "--jsonl", root], check=False).stdout)
    check(o["verdict"] == "error" and o["producers"] == [] and "inputs.pt" in o["trace_problem"],
          "--jsonl: %r" % o)


def test_jobs_and_filters():
    one = run([RP, "--first", "--jsonl", planted], check=False).stdout
    for j in ("2", "4", "16"):
        p = run([RP, "--first", "--jsonl", "-j", j, planted], check=False)
        check(p.returncode == 1 and p.stdout == one, "-j %s: the same first call: %r" % (j, p.stdout))
    p = run([RP, "--first", "--exclude", "mm", planted], check=False)
    n = N - PROCS * CALLS // 4
    check(p.returncode == 0 and p.stdout.startswith("no wrong call among %d replayed" % n),
          "--exclude mm leaves no wrong call among %d: %r" % (n, p.stdout))
    p = run([RP, "--first", "--jsonl", "--include", "mm", planted], check=False)
    o = json.loads(p.stdout)
    mms = len([x for x in ORDER if x["function"] == "mm" and x["index"] <= INDEX[WRONG]])
    check(p.returncode == 1 and o["index"] == INDEX[WRONG] and o["replayed"] == mms,
          "--include mm: the same call (its place in the run), %d replayed: %r" % (mms, o))
    check(o["producers"][0]["producer_dir"] == FEEDER,
          "producers are found among all calls, replayed or not: %r" % o["producers"])
    p = run([RP, "--first", "--status", "failed", planted], check=False)
    check(p.returncode == 1 and "no dumps selected" in p.stderr, "nothing selected: exit 1: %r" % p.stderr)
    p = run([RP, "--first", "--rtol", "1", "--atol", "1", planted], check=False)
    check(p.returncode == 0 and p.stdout.startswith("no wrong call"),
          "--rtol/--atol apply: within 1, no wrong call: %r" % p.stdout)


def cache_lines(root):
    with open(os.path.join(root, CACHE)) as f:
        return f.read().splitlines()


def test_cache():
    root = os.path.join(work, "cached")
    shutil.copytree(planted, root, ignore=shutil.ignore_patterns(CACHE))
    o = json.loads(run([RP, "--first", "--jsonl", root], check=False).stdout)
    check(o["calls_read"] >= 1 and o["calls_from_cache"] == 0, "the first run hashes: %r" % o)
    first = run([RP, "--first", root], check=False).stdout
    o = json.loads(run([RP, "--first", "--jsonl", root], check=False).stdout)
    check(o["calls_read"] == 1 and o["calls_from_cache"] == INDEX[WRONG] - 1,
          "the next runs read the shapes and hashes from the cache: %r" % o)
    lines = cache_lines(root)
    check(lines[0] == "# mate tensor hashes 1", "header: %r" % lines[:1])
    mask = os.umask(0)
    os.umask(mask)
    mode = os.stat(os.path.join(root, CACHE)).st_mode & 0o777
    check(mode == 0o644 & ~mask, "the cache is made as libmate makes its files (0644 less the umask "
          "%03o), readable where the dumps are: %03o" % (mask, mode))
    rows = [l.split("\t") for l in lines[1:]]
    hashed = [r for r in rows if r[3] != "-"]
    check(all(len(r) == 5 for r in rows) and FEEDER in [r[0] for r in hashed],
          "one line per output tensor looked at, the producer's hashed: %r" % rows[:5])
    check(all(r[0] in INDEX and INDEX[r[0]] < INDEX[WRONG] for r in rows),
          "only earlier calls' outputs are looked at")
    # `b` has no producer: every earlier call was looked at, by its files' headers
    check(len({r[0] for r in rows}) == INDEX[WRONG] - 1, "every earlier call has its shapes cached")
    check(0 < len(hashed) < N // 4 and all(r[2] == hashed[0][2] for r in hashed),
          "only outputs of `a`'s dtype and shape are read and hashed (%d)" % len(hashed))
    # no reader of the root sees the file
    p = run([LIST, "--jsonl", root])
    check(len(p.stdout.splitlines()) == N, "mate-list-dumps lists the calls only")
    p = run([RP, root], check=False)
    check("Summary: %d passed, 2 failed" % (N - 2) in p.stdout, "a plain replay: %r" % p.stdout[-200:])
    # a second run reads it and says the same
    check(run([RP, "--first", root], check=False).stdout == first, "same answer from the cache")
    # hostile lines are ignored; a lying line (another call's hash) is refuted by the bytes
    feeder = [r for r in hashed if r[0] == FEEDER][0]
    nearer = [r for r in hashed if r[0] != FEEDER and INDEX[r[0]] > INDEX[FEEDER]]
    with open(os.path.join(root, CACHE), "a") as f:
        f.write("x" * 100000 + "\n")
        f.write("%s\tzz\t%s\t%s\tresult\n" % (FEEDER, feeder[2], feeder[3]))
        f.write("%s\t%s\t-\t%s\tresult\n" % (FEEDER, feeder[1], feeder[3]))
        f.write("no tabs here\n\x00\x01\t\t\t\t\n")
        for r in nearer:   # another call's output claims the producer's hash
            f.write("\t".join(r[:3] + [feeder[3], r[4]]) + "\n")
        f.write("%s\t%s" % (FEEDER, feeder[1]))   # torn
    check(run([RP, "--first", root], check=False).stdout == first,
          "the same answer from a hostile cache (%d lying lines)" % len(nearer))
    # a changed file is hashed again
    pt = os.path.join(root, FEEDER, "outputs.pt")
    st = os.stat(pt)
    os.utime(pt, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    check(run([RP, "--first", root], check=False).stdout == first, "the same after a touch")
    stamps = [r[1] for r in (l.split("\t") for l in cache_lines(root)[1:]) if r[0] == FEEDER]
    check(stamps and feeder[1] not in stamps, "the producer's line has its new stamp: %r" % stamps)
    check(not [n for n in os.listdir(root) if n.startswith(CACHE + ".")], "no temporary file left")
    # a root that cannot be written: the answer without a cache
    ro = os.path.join(work, "ro")
    shutil.copytree(planted, ro, ignore=shutil.ignore_patterns(CACHE))
    os.chmod(ro, 0o555)
    try:
        p = run([RP, "--first", ro], check=False)
        check(p.returncode == 1 and p.stdout == first.replace(root, ro) and p.stderr == "",
              "read-only root: same answer, no message: %r" % p.stderr)
        if os.geteuid() != 0:   # root writes anyway
            check(not os.path.exists(os.path.join(ro, CACHE)), "and no cache")
    finally:
        os.chmod(ro, 0o755)


def test_ambiguous():
    root = os.path.join(work, "ambiguous")
    shutil.copytree(planted, root)
    os.remove(os.path.join(root, "session.jsonl"))
    a, b = [n for n in NAMES if "_pid%d_" % PIDS[0] in n][:2]   # its first two calls
    ts = record(root, a)["timestamp"]
    edit_record(root, b, lambda r: r.update(timestamp=ts))
    p = run([RP, root], check=False)
    m = re.search(r"(\d+) calls share a millisecond", p.stderr)
    check(m is not None and int(m.group(1)) >= 2, "a plain replay warns: %r" % p.stderr)
    n = int(m.group(1)) if m else -1
    p = run([RP, "--first", root], check=False)
    check(p.returncode == 1 and ("the order of %d calls is ambiguous (same millisecond and process, "
          "no session.jsonl)" % n) in p.stdout.splitlines(), "--first says so: %r" % p.stdout)
    check("minilib.mm (%s): Mismatch" % WRONG in p.stdout, "and finds the call")
    o = json.loads(run([RP, "--first", "--jsonl", root], check=False).stdout)
    check(o["ambiguous_order"] == n and o["dir"] == WRONG, "--jsonl: ambiguous_order %r" % o)


def measured(args, nofile=64, times=None):
    """Runs args with at most nofile open files: exit status, stdout, stderr, peak RSS (MB);
    appends its wall time (s) to times when given."""
    env = dict(os.environ)
    # a sanitizer build: ASan's quarantine of freed memory (256 MB) is not ours to count
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "quarantine_size_mb=16"]))
    # GNU time's count, not wait4's here: a child forked from this torch-laden Python starts
    # with its resident pages
    p = subprocess.run(["time", "-f", "maxrss %M %e", "sh", "-c", 'ulimit -n %d && exec "$@"' % nofile, "sh"] + args,
                       capture_output=True, text=True, env=env)
    err, _, last = p.stderr.rstrip("\n").rpartition("\n")
    check(last.startswith("maxrss "), "GNU time's line: %r" % last)
    if times is not None and last.startswith("maxrss "):
        times.append(float(last.split()[2]))
    return p.returncode, p.stdout, err, int(last.split()[1]) / 1024 if last.startswith("maxrss ") else -1


def scaling(what, few, times):
    """Prints the wall times of what over few and over procs processes (no bound: CI's
    load decides them), and the ratio: procs / few is linear, its square quadratic."""
    if len(times) == 2:
        print("%s: %d processes %.2f s, %d processes %.2f s: x%.1f for x%d more processes (x%d would be "
              "quadratic)" % (what, few, times[0], MANY, times[1], times[1] / max(times[0], 0.01),
                              MANY // few, (MANY // few) ** 2))


MANY = 2000


def test_thousands_of_processes():
    procs, few = MANY, MANY // 4
    many, fewer = os.path.join(work, "many"), os.path.join(work, "fewer")
    run([build_path("tests", "first-chain"), str(procs), "2"], env=dict(env, MATE_DUMP_DIR=many))
    # a quarter as many, unplanted: --first reads all of it, --nonfinite finds nothing
    run([build_path("tests", "first-chain"), str(few), "2"], env=dict(env, MATE_DUMP_DIR=fewer))
    tf, tn = [], []
    rc, out, _, _ = measured([RP, "--first", "--device", "cpu", fewer], times=tf)
    check(rc == 0 and out.startswith("no wrong call"), "--first over %d processes: exit %d %r" % (few, rc, out[:200]))
    rc, out, _, _ = measured([LIST, "--nonfinite", fewer], times=tn)
    check(rc == 0 and out == "", "--nonfinite over %d processes: exit %d %r" % (few, rc, out[:200]))
    shutil.rmtree(fewer)
    rc, out, _, _ = measured([RP, "--first", "--device", "cpu", many], times=tf)
    check(rc == 0 and out.startswith("no wrong call"), "--first over %d processes: exit %d %r" % (procs, rc, out[:200]))
    scaling("--first", few, tf)
    names = dumps(many)
    pids = sorted({int(re.search(r"_pid(\d+)_", n).group(1)) for n in names})
    check(len(names) == 2 * procs and len(pids) == procs, "%d dumps of %d processes" % (len(names), len(pids)))
    mid, late = pids[procs // 2], pids[procs * 4 // 5]
    wrong = [n for n in names if "_pid%d_silu_and_mul_call0001" % mid in n][0]
    feeder = [n for n in names if "_pid%d_rmsnorm_call0001" % mid in n][0]
    born = [n for n in names if "_pid%d_rmsnorm_call0001" % late in n][0]
    path = os.path.join(many, wrong, "outputs.pt")
    t = torch.load(path)
    t["result"][2, 7] += 0.5
    torch.save(t, path)
    idx = {o["dir"]: o["index"] for o in order(many)}
    # on the CPU: a CUDA build probing for a device maps CUDA's libraries, which are not ours to count
    rc, out, err, rss = measured([RP, "--first", "--device", "cpu", many])
    lines = out.splitlines()
    check(rc == 1 and lines and re.match(r"first wrong call: call %s of %s, [0-9.]+ s into the run, process %d: "
          r"minilib\.silu_and_mul \(%s\): Mismatch: result\[2, 7\]" % (grouped(idx[wrong]), grouped(2 * procs),
          mid, wrong), lines[0]) is not None, "exit %d: %r %r" % (rc, lines[:1], err[-300:]))
    check(any(re.match(r"  its input `input` \(arg_0\) is `result` of call %s, minilib\.rmsnorm \(%s\)$"
                       % (grouped(idx[feeder]), feeder), l) for l in lines), "its producer: %r" % lines)
    check(rss < 96, "--first over %d processes: peak RSS %.0f MB, under 96" % (procs, rss))

    path = os.path.join(many, born, "outputs.pt")
    t = torch.load(path)
    t["result"][1, 3] = math.nan
    torch.save(t, path)
    rc, out, err, rss = measured([LIST, "--nonfinite", many], times=tn)
    scaling("--nonfinite", few, tn)
    check(rc == 1 and out.startswith(born + ":") and "[origin]" in out and len(out.splitlines()) == 1,
          "--nonfinite: exit %d, the one call: %r %r" % (rc, out, err[-300:]))
    check("origin: %s (rmsnorm), call %s of %s" % (born, grouped(idx[born]), grouped(2 * procs)) in err,
          "its place: %r" % err)
    check(rss < 96, "--nonfinite over %d processes: peak RSS %.0f MB, under 96" % (procs, rss))
    shutil.rmtree(many)


def test_memory_limit():
    """Tensor files past MATE_MAX_MEMORY: each tool says so, naming the variable, and writes nothing."""
    e = dict(os.environ, MATE_MAX_MEMORY="1000")
    p = run([RP, "--first", planted], check=False, env=e)
    lines = p.stdout.splitlines()
    check(p.returncode == 1 and lines and lines[0].startswith("first wrong call: call 1 of ") and
          "Error: inputs.pt: pickle: memory limit" in lines[0] and "MATE_MAX_MEMORY" in lines[0],
          "--first stops at the first call it cannot read: %r %r" % (lines[:1], p.stderr))
    p = run([LIST, "--nonfinite", planted], check=False, env=e)
    check(p.returncode == 1 and p.stdout == "" and "memory limit" in p.stderr and
          p.stderr.rstrip().endswith("%d with problems" % N), "--nonfinite: exit %d: %r" % (p.returncode, p.stderr[-300:]))
    for opt in ("--shrink", "--export"):
        out = os.path.join(work, "limit" + opt)
        p = run([RP, opt, os.path.join(planted, WRONG), "-o", out], check=False, env=e)
        check(p.returncode == 2 and "memory limit" in p.stderr and "MATE_MAX_MEMORY" in p.stderr,
              "%s: exit %d: %r" % (opt, p.returncode, p.stderr))
        check(not os.path.exists(out) and not [f for f in os.listdir(work) if f.startswith("limit" + opt)],
              "%s: nothing written" % opt)


def test_usage():
    for extra in (["--bench"], ["--list-ops"]):
        p = run([RP, "--first"] + extra + ([] if extra == ["--list-ops"] else [clean]), check=False)
        check(p.returncode == 2 and "--first" in p.stderr, "--first %s: usage error: %r" % (extra, p.stderr))
    p = run([RP, "--help"])
    check(re.search(r"^      --first +stop at the first wrong call", p.stdout, re.M) is not None,
          "--help names --first")


run_cases(test_no_wrong_call, test_planted, test_in_place, test_unreadable, test_jobs_and_filters,
          test_cache, test_ambiguous, test_thousands_of_processes, test_memory_limit,
          test_usage)
