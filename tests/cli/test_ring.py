# mate-python: peers
"""test_ring.py: the flight recorder (MATE_RING at level 10): a chain of calls recorded by libmate (first-chain) into a ring kept in a shared memory file; 50 kill -9 at random instants, and each time mate-list-dumps --ring writes the last N calls as dumps that torch 2.x loads with weights_only=True, that mate-replay passes (the call killed inside it: inputs saved), and whose chained tensors match from call to call (no torn or misread entry); a fatal signal inside a call (SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL) has the helper write the last calls and the program still dies by it; 16 threads racing an abort() and kill -9 (every tensor holds its call's values); MATE_RING_ON=fail writes it when a call fails; mate_ring_flush() and SIGUSR2 (`mate ring PID`) write the last calls while the program runs on; a run that ends well leaves no ring, one that exits with another status writes the last calls into its dump root; a forked child keeps its own; a planted file is never written over; bad MATE_RING values, a ring path that cannot be made, truncated, damaged and foreign ring files, and a folder that is not empty."""
import glob
import json
import os
import random
import signal
import subprocess
import tempfile
import time

import torch

from mate_test import build_path, check, record_env, run, run_cases, tmpdir

CHAIN = build_path("tests", "first-chain")
LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
KEEP = 6
# `mate VERB` finds mate-VERB beside it (here only mate itself) or in PATH
MATE = build_path("src", "mate", "mate")
MATE_ENV = dict(os.environ, PATH=os.path.dirname(LIST) + os.pathsep + os.environ.get("PATH", ""))
work = tmpdir()


def env_for(d, **more):
    e = record_env()
    e.update(MATE_LOGLEVEL="10", MATE_RING=str(KEEP), MATE_RING_BYTES="1M",
             MATE_RING_PATH=os.path.join(d, "ring.%p"), MATE_DUMP_DIR=os.path.join(d, "dumps"),
             MATE_LOGDEST=os.path.join(d, "log.txt"))
    e.update(more)
    return e


def started(args, d, **env):
    """Starts args recording into d's ring; (the process, its ring's path or None) once the
    ring is there (the recording child's, for first-chain)."""
    p = subprocess.Popen(args, env=env_for(d, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not glob.glob(os.path.join(d, "ring.*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    rings = glob.glob(os.path.join(d, "ring.*"))
    return p, rings[0] if len(rings) == 1 else None


def calls_logged(d):
    """The calls begun so far, by d's log (level 10 into a ring logs each call's name)."""
    try:
        with open(os.path.join(d, "log.txt")) as f:
            return f.read().count("MATE API Call:")
    except FileNotFoundError:
        return 0


def convert(ring, out, verb=False):
    if verb:   # the same through `mate ring FILE -o DIR`
        return run([MATE, "ring", ring, "-o", out], check=False, env=MATE_ENV)
    return run([LIST, "--ring", ring, "-o", out], check=False)


def calls_of(out):
    """The dumps of out in call order (session.jsonl), each (dir, record)."""
    res = []
    with open(os.path.join(out, "session.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["execution_status"] == "inputs_saved" or not res or res[-1][1]["dump_dir"] != r["dump_dir"]:
                res.append((os.path.basename(r["dump_dir"]), r))
            else:
                res[-1] = (res[-1][0], r)
    return res


def tensors(out, d, stem):
    path = os.path.join(out, d, stem + ".pt")
    return torch.load(path, weights_only=True) if os.path.exists(path) else {}


# first-chain's chain: rmsnorm(x) -> y; silu_and_mul(y) -> h; mm(h, b) -> x;
# fused_add_rmsnorm(x, r, w) writes x in place; rmsnorm(x) ...
def chained(out, calls):
    """Pairs (what, ok) for each consecutive pair of kept calls of the chain."""
    pairs = []
    for (d1, r1), (d2, r2) in zip(calls, calls[1:]):
        if r1["execution_status"] != "completed":
            continue
        f1, f2 = r1["function_name"], r2["function_name"]
        prev = tensors(out, d1, "inplace" if f1 == "fused_add_rmsnorm" else "outputs")
        nxt = tensors(out, d2, "inputs")
        given = prev.get("arg_0" if f1 == "fused_add_rmsnorm" else "result")
        if given is not None and "arg_0" in nxt:
            pairs.append(("%s -> %s" % (d1, d2), torch.equal(given, nxt["arg_0"])))
    return pairs


def test_kill_9_trials():
    rng = random.Random(34)
    torn_total = checked = 0
    for trial in range(50):
        d = os.path.join(work, "kill%02d" % trial)
        os.makedirs(d)
        # the child that calls: first-chain forks one process per chain
        p, _ = started([CHAIN, "1", "1000000000"], d)
        # a kill before the first call ended would leave an empty ring: wait (however loaded
        # the machine) for the second call's log line, then a random instant later
        deadline = time.monotonic() + 60
        while calls_logged(d) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.3))
        rings = glob.glob(os.path.join(d, "ring.*"))
        check(len(rings) == 1, "trial %d: one ring: %s" % (trial, rings))
        if len(rings) != 1:
            p.kill()
            p.wait()
            continue
        child = int(rings[0].rsplit(".", 1)[1])
        os.kill(child, signal.SIGKILL)
        p.wait()
        out = os.path.join(d, "out")
        c = convert(rings[0], out, verb=trial % 2 == 1)
        check(c.returncode == 0, "trial %d: --ring: exit %d: %s" % (trial, c.returncode, c.stderr))
        if trial == 0:   # the level-10 banner says where the calls go
            with open(os.path.join(d, "log.txt")) as f:
                head = f.read(4096)
            check("RING mode (MATE_RING=%d): only the last %d calls are kept, in memory" % (KEEP, KEEP)
                  in head, "the banner names the ring: %r" % head[:1500])
        torn_total += int(c.stderr.split("torn entr")[0].rsplit(" ", 2)[-2]) if "torn entr" in c.stderr else 0
        calls = calls_of(out)
        check(0 < len(calls) <= KEEP, "trial %d: %d calls written, at most %d" % (trial, len(calls), KEEP))
        states = [r["execution_status"] for _, r in calls]
        check(all(s == "completed" for s in states[:-1]) and states[-1] in ("completed", "inputs_saved"),
              "trial %d: every call but the last returned: %s" % (trial, states))
        for dd, _ in calls:
            for stem in ("inputs", "outputs", "inplace"):
                tensors(out, dd, stem)          # torch 2.x, weights_only=True: raises on anything else
        rp = run([REPLAY, "--jsonl", out], check=False)
        verdicts = [json.loads(l)["verdict"] for l in rp.stdout.splitlines()]
        want = ["passed"] * (len(calls) - 1) + ["passed" if states[-1] == "completed" else "now_runs"]
        check(verdicts == want, "trial %d: mate-replay: %s, expected %s" % (trial, verdicts, want))
        for what, ok in chained(out, calls):
            checked += 1
            check(ok, "trial %d: a chained tensor differs: %s" % (trial, what))
    check(checked > 100, "the chain was compared across %d pairs of calls" % checked)
    print("50 kill -9 trials: %d chained pairs compared, %d torn entries skipped" % (checked, torn_total))


def test_oom_kill():
    """A simulated OOM kill: cgroup v2 has no memory controller on the machine this was written
    on (no memory.max to set), so the test does to the process what the OOM killer does: a
    SIGKILL while it allocates heavily (first-chain's FIRST_CHAIN_HOG thread allocates and
    touches up to 512 MiB while the calls go on; the kill comes once the process holds 256 MiB).
    The last calls come back whole, torch loads them, mate-replay replays them, and the chained
    tensors match from call to call."""
    d = os.path.join(work, "oom")
    os.makedirs(d)
    p, ring = started([CHAIN, "1", "1000000000"], d, FIRST_CHAIN_HOG="1")
    child = int(ring.rsplit(".", 1)[1]) if ring else None

    def rss_kib():
        try:
            with open("/proc/%d/status" % child) as f:
                return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])
        except (OSError, StopIteration, ValueError, TypeError):
            return -1

    deadline = time.monotonic() + 60
    while (rss_kib() < 256 << 10 or calls_logged(d) < 2) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    big = rss_kib()
    if child is not None:
        os.kill(child, signal.SIGKILL)
    p.wait()
    check(big >= 256 << 10, "killed while allocating: %d KiB resident" % big)
    out = os.path.join(d, "out")
    c = convert(ring, out) if ring else None
    check(c is not None and c.returncode == 0, "the ring is read: %s" % (c and c.stderr))
    calls = calls_of(out) if c is not None and c.returncode == 0 else []
    states = [r["execution_status"] for _, r in calls]
    check(0 < len(calls) <= KEEP and all(s == "completed" for s in states[:-1]) and
          states[-1] in ("completed", "inputs_saved"), "the last calls, every one but the last returned: %s"
          % states)
    for x, _ in calls:
        for stem in ("inputs", "outputs", "inplace"):
            tensors(out, x, stem)          # torch 2.x, weights_only=True: raises on anything else
    rp = run([REPLAY, "--jsonl", out], check=False)
    verdicts = [json.loads(line)["verdict"] for line in rp.stdout.splitlines()]
    want = ["passed"] * (len(calls) - 1) + ["passed" if states and states[-1] == "completed" else "now_runs"]
    check(calls and verdicts == want, "mate-replay: %s, expected %s" % (verdicts, want))
    for what, ok in chained(out, calls):
        check(ok, "a chained tensor differs: %s" % what)


def test_killed_while_making_the_ring():
    """kill -9 in the first milliseconds, while the ring is being made: either no ring, or one
    whose head is whole (it is named only once written), never a file that is not a ring."""
    rng = random.Random(7)
    seen = 0
    # a 128 MiB ring in shared memory takes tens of milliseconds to make (its pages are
    # taken first), which the kills aim at; each left ring is removed at once
    shm = tempfile.mkdtemp(prefix="mate-test-ring-", dir="/dev/shm") \
        if os.access("/dev/shm", os.W_OK) else None
    for trial in range(30):
        d = os.path.join(work, "early%02d" % trial)
        os.makedirs(d)
        rings = os.path.join(shm or d, "ring%02d" % trial)
        # its own process group: the kill takes the recording child too
        p = subprocess.Popen([CHAIN, "1", "1000000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env_for(d, MATE_RING_BYTES="128M", MATE_RING_PATH=rings + ".%p"),
                             start_new_session=True)
        time.sleep(rng.uniform(0.0, 0.15))
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        for ring in glob.glob(rings + ".*"):
            seen += 1
            c = convert(ring, os.path.join(d, "out"))
            os.unlink(ring)
            check("not a ring file" not in c.stderr and c.returncode in (0, 1),
                  "trial %d: a ring named before its head was written: %d %s" % (trial, c.returncode, c.stderr))
    if shm:
        os.rmdir(shm)
    print("30 early kills: %d rings left, each whole" % seen)


def test_clean_exit_leaves_nothing():
    d = os.path.join(work, "clean")
    os.makedirs(d)
    # nf-chain calls in its own process and returns from main
    p = run([build_path("tests", "nf-chain"), "float32", "20", "0"], env=env_for(d), check=False)
    check(p.returncode == 0, "exit 0: %s" % p.stderr)
    check(glob.glob(os.path.join(d, "ring.*")) == [], "no ring left: %s" % os.listdir(d))
    check(not os.path.exists(os.path.join(d, "dumps")) or os.listdir(os.path.join(d, "dumps")) == [],
          "nothing dumped")


def test_error_exit_writes_dumps():
    d = os.path.join(work, "exit3")
    os.makedirs(d)
    p = run([build_path("tests", "nf-chain"), "float32", "20", "0"], env=env_for(d, NF_CHAIN_EXIT="3"),
            check=False)
    dumps = os.path.join(d, "dumps")
    check(p.returncode == 3, "the program's own exit status: %d" % p.returncode)
    check(glob.glob(os.path.join(d, "ring.*")) == [], "the ring is gone once written: %s" % os.listdir(d))
    log = open(os.path.join(d, "log.txt")).read() + p.stderr
    check("exit status 3: the ring's last %d calls written to %s" % (KEEP, dumps) in log,
          "says so: %r" % log[-300:])
    names = sorted(x for x in os.listdir(dumps) if "_call" in x)
    check([int(x.rsplit("_call", 1)[1]) for x in names] == list(range(20 - KEEP + 1, 21)),
          "the last %d calls, as level 10 names them: %s" % (KEEP, names))
    # nf-chain's chain_step (no replay handler): y = x * 0.5 + 1, returned or written into out=
    for x in names:
        ins, outs = tensors(dumps, x, "inputs"), {**tensors(dumps, x, "outputs"), **tensors(dumps, x, "inplace")}
        y = outs.get("result", outs.get("kwarg_out"))
        check(y is not None and torch.equal(y, ins["arg_0"] * 0.5 + 1), "%s: y = x * 0.5 + 1: %s" % (x, sorted(outs)))
    check(len(open(os.path.join(dumps, "session.jsonl")).read().splitlines()) == 2 * KEEP,
          "session.jsonl: two records a call")


def same(a, b):
    """The same values (NaN where NaN), shape and dtype."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)


def test_records_as_level_10():
    """The ring keeps a record's fields, not its text: the records mate-list-dumps writes from
    it are level 10's, key for key (timestamp, process id and dump_dir aside), and so are the
    directory names and the tensor files: returned and in-place outputs, a failed call, a
    transposed (strided) input, both formats."""
    for fmt in ("pt", "safetensors"):
        got = {}
        for how in ("ring", "disk"):
            d = os.path.join(work, "as10-%s-%s" % (fmt, how))
            os.makedirs(d)
            more = dict(NF_CHAIN_EXIT="3", NF_CHAIN_FAIL_AT="19", MATE_DUMP_SAFETENSORS="1" if fmt != "pt" else "0")
            e = env_for(d, **more)
            if how == "disk":
                del e["MATE_RING"]
            p = run([build_path("tests", "nf-chain"), "float32", "20", "14", "64", "16", "transpose"], env=e,
                    check=False)
            check(p.returncode == 3, "%s %s: exit 3: %r" % (fmt, how, p.stderr[-300:]))
            dumps = os.path.join(d, "dumps")
            res = {}
            for x in os.listdir(dumps):
                if "_call" not in x:
                    continue
                # STAMP_pidPID_NAME_callNNNN: the name and number
                key = x.split("_pid", 1)[1].split("_", 1)[1]
                with open(os.path.join(dumps, x, "metadata.jsonl")) as f:
                    recs = [json.loads(line) for line in f]
                for r in recs:
                    check(r.pop("dump_dir") == os.path.join(dumps, x), "%s %s: dump_dir %s" % (fmt, how, x))
                    r.pop("timestamp")
                    r.pop("process_id")
                files = {}
                for stem in ("inputs", "outputs", "inplace"):
                    path = os.path.join(dumps, x, stem + "." + fmt)
                    if not os.path.exists(path):
                        continue
                    if fmt == "pt":
                        files[stem] = torch.load(path, weights_only=True)
                    else:
                        from safetensors.torch import load_file
                        files[stem] = load_file(path)
                res[key] = (recs, files)
            got[how] = res
        ring, disk = got["ring"], got["disk"]
        check(len(ring) == KEEP and set(ring) <= set(disk), "%s: the ring's %d calls among level 10's: %s"
              % (fmt, KEEP, sorted(ring)))
        for key in sorted(ring):
            if key not in disk:
                continue
            (rr, rf), (dr, df) = ring[key], disk[key]
            check(rr == dr, "%s %s: the records are level 10's:\n%s\n%s" % (fmt, key, rr, dr))
            check(sorted(rf) == sorted(df) and all(sorted(rf[s]) == sorted(df[s]) and
                  all(same(rf[s][k], df[s][k]) for k in rf[s]) for s in rf),
                  "%s %s: the tensor files are level 10's: %s %s" % (fmt, key, sorted(rf), sorted(df)))
        statuses = sorted(r[-1]["execution_status"] for r, _ in ring.values())
        check(statuses.count("failed") == 1 and statuses.count("completed") == KEEP - 1,
              "%s: a failed call among them: %s" % (fmt, statuses))


def test_on_fail():
    """MATE_RING_ON=fail: a recorded call that fails writes the ring; the program runs on."""
    d = os.path.join(work, "onfail")
    os.makedirs(d)
    nf = build_path("tests", "nf-chain")
    p = run([nf, "float32", "20", "0"], env=env_for(d, MATE_RING_ON="fail", NF_CHAIN_FAIL_AT="12"), check=False)
    dumps = os.path.join(d, "dumps")
    names = sorted(x for x in os.listdir(dumps) if "_call" in x) if os.path.isdir(dumps) else []
    check(p.returncode == 0 and [int(x.rsplit("_call", 1)[1]) for x in names] == list(range(12 - KEEP + 1, 13)),
          "the failing call 12 and the %d before it: %s %r" % (KEEP - 1, names, p.stderr[-300:]))
    last = json.loads(open(os.path.join(dumps, names[-1], "metadata.jsonl")).read().splitlines()[-1]) \
        if names else {}
    check(last.get("execution_status") == "failed" and last.get("error") == "chain_step: failing on purpose",
          "its record: %s" % {k: last.get(k) for k in ("execution_status", "error")})
    d = os.path.join(work, "onfail-off")
    os.makedirs(d)
    p = run([nf, "float32", "20", "0"], env=env_for(d, NF_CHAIN_FAIL_AT="12"), check=False)
    check(p.returncode == 0 and not os.path.exists(os.path.join(d, "dumps")), "without MATE_RING_ON: nothing")


def test_fatal_signals():
    """A call that dies inside by each fatal signal: libmate's handler has the helper
    (mate-list-dumps --into) write the last calls, then the program dies by that signal."""
    for how, sig in (("segv", signal.SIGSEGV), ("abort", signal.SIGABRT), ("fpe", signal.SIGFPE),
                     ("bus", signal.SIGBUS), ("ill", signal.SIGILL)):
        d = os.path.join(work, "die-" + how)
        os.makedirs(d)
        p = run([build_path("tests", "nf-chain"), "float32", "20", "0"],
                env=env_for(d, NF_CHAIN_DIE_AT="9:" + how, MATE_RING_HELPER=LIST), check=False)
        # the action the program had: in a sanitizer build, ASan's own report, then its abort
        asan = "AddressSanitizer" in p.stderr
        check(p.returncode == -sig or (asan and p.returncode == -signal.SIGABRT),
              "%s: the program dies by its signal: %d %r" % (how, p.returncode, p.stderr[-300:]))
        check(p.stdout == "", "%s: nothing on the program's output: %r" % (how, p.stdout))
        check(glob.glob(os.path.join(d, "ring.*")) == [], "%s: the ring is gone once written" % how)
        dumps = os.path.join(d, "dumps")
        names = sorted(x for x in os.listdir(dumps) if "_call" in x) if os.path.isdir(dumps) else []
        check([int(x.rsplit("_call", 1)[1]) for x in names] == list(range(9 - KEEP + 1, 10)),
              "%s: the last %d calls up to the one it died in: %s" % (how, KEEP, names))
        states = [json.loads(open(os.path.join(dumps, x, "metadata.jsonl")).read().splitlines()[-1])
                  ["execution_status"] for x in names]
        check(states == ["completed"] * (KEEP - 1) + ["inputs_saved"], "%s: %s" % (how, states))
        if names:
            x = tensors(dumps, names[-1], "inputs")["arg_0"]
            prev = {**tensors(dumps, names[-2], "outputs"), **tensors(dumps, names[-2], "inplace")}
            check(torch.equal(x, prev.get("result", prev.get("kwarg_out"))),
                  "%s: the call it died in has its input, the previous call's output" % how)
    d = os.path.join(work, "die-nohelper")
    os.makedirs(d)
    p = run([build_path("tests", "nf-chain"), "float32", "20", "0"],
            env=env_for(d, NF_CHAIN_DIE_AT="9:segv", MATE_RING_HELPER=os.path.join(d, "missing")), check=False)
    rings = glob.glob(os.path.join(d, "ring.*"))
    check(p.returncode in (-signal.SIGSEGV, -signal.SIGABRT) and len(rings) == 1 and
          "fatal signal: the ring of the last calls is in %s" % rings[0] in p.stderr,
          "no helper: the ring stays and the message names it: %d %r" % (p.returncode, p.stderr[-300:]))


def test_flush():
    """mate_ring_flush() in the program, and the user's SIGUSR2 to a running one."""
    d = os.path.join(work, "flush")
    os.makedirs(d)
    nf = build_path("tests", "nf-chain")
    p = run([nf, "float32", "20", "0"], env=env_for(d, NF_CHAIN_FLUSH_AT="10"), check=False)
    dumps = os.path.join(d, "dumps")
    names = sorted(x for x in os.listdir(dumps) if "_call" in x) if os.path.isdir(dumps) else []
    check(p.returncode == 0 and p.stderr == "" and
          [int(x.rsplit("_call", 1)[1]) for x in names] == list(range(10 - KEEP + 1, 11)),
          "mate_ring_flush() after call 10: calls %d-10 written: %s %r" % (10 - KEEP + 1, names, p.stderr))
    check(glob.glob(os.path.join(d, "ring.*")) == [], "the run ended well: no ring left")
    p = run([nf, "float32", "5", "0"], env=env_for(d, MATE_RING="", NF_CHAIN_FLUSH_AT="2"), check=False)
    check("mate_ring_flush: this process keeps no ring" in p.stderr, "without a ring: %r" % p.stderr)

    d = os.path.join(work, "usr2")
    os.makedirs(d)
    dumps = os.path.join(d, "dumps")
    pp, ring = started([CHAIN, "1", "1000000000"], d, MATE_RING_HELPER=LIST)
    time.sleep(0.1)
    child = int(ring.rsplit(".", 1)[1])
    asked = run([MATE, "ring", str(child)], check=False, env=MATE_ENV)
    check(asked.returncode == 0 and "asked process %d" % child in asked.stdout, "mate ring PID: %s %s"
          % (asked.stdout, asked.stderr))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        written = sorted(x for x in os.listdir(dumps) if "_call" in x) if os.path.isdir(dumps) else []
        if len(written) >= KEEP and os.path.exists(os.path.join(dumps, "session.jsonl")):
            lines = open(os.path.join(dumps, "session.jsonl")).read().splitlines()
            if len(lines) >= 2 * KEEP - 1:
                break
        time.sleep(0.05)
    alive = pp.poll() is None
    os.kill(child, signal.SIGKILL)
    pp.wait()
    check(alive, "SIGUSR2 leaves the program running")
    check(len(written) == KEEP, "SIGUSR2: the last %d calls written: %s" % (KEEP, written))
    check(os.path.exists(ring), "the ring of a live process stays")
    rp = run([REPLAY, "--jsonl", dumps], check=False)
    verdicts = [json.loads(l)["verdict"] for l in rp.stdout.splitlines()]
    check(len(verdicts) == KEEP and all(v in ("passed", "now_runs") for v in verdicts),
          "they replay: %s" % verdicts)


def test_threads_race_the_crash():
    """16 threads recording when the main thread aborts (or two threads at once), and when the
    process is killed."""
    rt = build_path("tests", "ring-threads")
    # abort2: two threads abort at once, the second signal while the first one's helper writes
    for how in ("abort", "abort2"):
        d = os.path.join(work, "threads-" + how)
        os.makedirs(d, exist_ok=True)
        dumps = os.path.join(d, "dumps")
        p = run([rt, "run", dumps, "300", how], env=env_for(d, MATE_RING="64", MATE_RING_BYTES="4M",
                                                          MATE_RING_HELPER=LIST), check=False)
        asan = "AddressSanitizer" in p.stderr
        check(p.returncode == -signal.SIGABRT or asan, "%s: %d %r" % (how, p.returncode, p.stderr[-300:]))
        # the program ended only once the helper had written the ring (and removed it)
        check(not glob.glob(os.path.join(d, "ring.*")), "%s: the ring was still being written when "
              "the program ended: %s" % (how, glob.glob(os.path.join(d, "ring.*"))))
        n = len([x for x in os.listdir(dumps) if "_call" in x]) if os.path.isdir(dumps) else 0
        c = run([rt, "check", dumps], check=False)
        check(n == 64 and c.returncode == 0, "%s: the last 64 calls of 16 threads, each tensor its "
              "call's values: %d dumps: %s %s" % (how, n, c.stdout, c.stderr[-500:]))
    rng = random.Random(16)
    for trial in range(10):
        d = os.path.join(work, "threads-kill%d" % trial)
        os.makedirs(d)
        pp, _ = started([rt, "run", os.path.join(d, "dumps"), "100000", "wait"], d, MATE_RING="64",
                        MATE_RING_BYTES="4M")
        time.sleep(rng.uniform(0.05, 0.3))
        pp.kill()
        pp.wait()
        rings = glob.glob(os.path.join(d, "ring.*"))
        out = os.path.join(d, "out")
        cv = convert(rings[0], out) if len(rings) == 1 else None
        c = run([rt, "check", out], check=False) if cv is not None and cv.returncode == 0 else None
        check(c is not None and c.returncode == 0, "kill %d: the ring's calls hold together: %s %s"
              % (trial, cv and cv.stderr, c and c.stderr[-500:]))


def test_fork_and_planted():
    d = os.path.join(work, "fork")
    os.makedirs(d)
    e = env_for(d, MATE_RING_PATH=os.path.join(d, "ring"))
    planted = os.path.join(d, "ring")
    with open(planted, "w") as f:
        f.write("someone else's\n")
    p = subprocess.Popen([CHAIN, "2", "1000000000"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while len(glob.glob(planted + ".*")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    children = [int(x) for x in subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                                text=True).stdout.split()]
    for c in children:
        os.kill(c, signal.SIGKILL)
    p.wait()
    check(open(planted).read() == "someone else's\n", "the planted file is untouched")
    rings = sorted(glob.glob(planted + ".*"))
    check(len(rings) == 2 and len(children) == 2, "a ring per forked process, beside the planted file: %s" % rings)
    pids = set()
    for i, r in enumerate(rings):
        out = os.path.join(d, "out%d" % i)
        c = convert(r, out)
        check(c.returncode == 0, "--ring %s: %s" % (r, c.stderr))
        pids |= {rec["process_id"] for _, rec in calls_of(out)}
    check(pids == set(children), "each ring holds its own process's calls: %s vs %s" % (pids, children))


def test_bad_settings():
    for value, want in (("abc", "MATE_RING=abc is not a number of calls"), ("0", "MATE_RING=0 is not"),
                        ("-3", "MATE_RING=-3 is not")):
        d = os.path.join(work, "bad" + value)
        os.makedirs(d)
        p = run([CHAIN, "1", "5"], env=env_for(d, MATE_RING=value), check=False)
        log = open(os.path.join(d, "log.txt")).read() + p.stderr
        check(p.returncode == 0 and log.count(want) == 1, "MATE_RING=%s: exit %d, warned once: %r"
              % (value, p.returncode, log[-400:]))
        check(glob.glob(os.path.join(d, "ring*")) == [], "no ring")
    d = os.path.join(work, "nopath")
    os.makedirs(d)
    p = run([CHAIN, "1", "5"], env=env_for(d, MATE_RING_PATH=os.path.join(d, "no", "such", "ring")), check=False)
    log = open(os.path.join(d, "log.txt")).read() + p.stderr
    check(p.returncode == 0 and log.count("MATE_RING: cannot make") == 1 and "No such file or directory" in log,
          "a ring that cannot be made: exit %d, one warning: %r" % (p.returncode, log[-400:]))
    d = os.path.join(work, "full")
    os.makedirs(d)
    fs = os.statvfs(d)
    if fs.f_bavail * fs.f_frsize >= 1 << 40:   # a 1 TiB ring would fit: not a full disk here
        print("full: skipped, more than 1 TiB free in %s" % d)
        return
    p = run([CHAIN, "1", "5"], env=env_for(d, MATE_RING_BYTES="1024G"), check=False)
    log = open(os.path.join(d, "log.txt")).read() + p.stderr
    check(p.returncode == 0 and log.count("MATE_RING: cannot make room for") == 1 and
          glob.glob(os.path.join(d, "ring*")) == [],
          "a ring larger than the free space (a full /dev/shm): refused before any is taken, one "
          "warning, no file, the program runs: %d %r"
          % (p.returncode, log[-400:]))


def test_bad_rings():
    d = os.path.join(work, "rings")
    os.makedirs(d)
    p, ring = started([CHAIN, "1", "1000000000"], d)
    time.sleep(0.1)
    os.kill(int(ring.rsplit(".", 1)[1]), signal.SIGKILL)
    p.wait()
    data = open(ring, "rb").read()
    cases = {"truncated": data[:len(data) // 2], "foreign": b"MATERNG9" + data[8:],
             "not-a-ring": b"hello" * 1000, "head-damaged": data[:40] + b"\xff" + data[41:]}
    for name, content in cases.items():
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(content)
        out = os.path.join(d, "out-" + name)
        c = convert(path, out)
        want = {"truncated": "truncated or damaged", "foreign": "a ring of another version",
                "not-a-ring": "not a ring file", "head-damaged": "truncated or damaged"}[name]
        check(c.returncode == 2 and want in c.stderr, "%s: exit %d: %s" % (name, c.returncode, c.stderr))
        check(not os.path.exists(out) and not glob.glob(out + ".tmp-*"), "%s: nothing written" % name)
    # a torn middle: every entry whose bytes were changed is skipped, the rest kept
    torn = bytearray(data)
    for off in range(4096 + 1000, len(torn), 50000):
        torn[off] ^= 0xff
    path = os.path.join(d, "torn")
    open(path, "wb").write(bytes(torn))
    c = convert(path, os.path.join(d, "out-torn"))
    check(c.returncode == 0 and "torn entr" in c.stderr, "changed entries are skipped as torn: %s" % c.stderr)
    rp = run([REPLAY, "--jsonl", os.path.join(d, "out-torn")], check=False)
    check(all(json.loads(l)["verdict"] in ("passed", "now_runs") for l in rp.stdout.splitlines()),
          "what is kept replays: %s" % rp.stdout[-500:])
    os.makedirs(os.path.join(d, "full"))
    open(os.path.join(d, "full", "x"), "w").close()
    c = convert(ring, os.path.join(d, "full"))
    check(c.returncode == 2 and "not empty" in c.stderr and os.listdir(os.path.join(d, "full")) == ["x"],
          "a folder that is not empty is refused: %s" % c.stderr)
    c = run([LIST, "--ring", ring], check=False)
    check(c.returncode == 2 and "--ring FILE goes with one of -o DIR or --into ROOT" in c.stderr, "usage: %s" % c.stderr)


run_cases(test_records_as_level_10, test_kill_9_trials, test_oom_kill, test_killed_while_making_the_ring, test_clean_exit_leaves_nothing, test_error_exit_writes_dumps, test_fatal_signals,
          test_flush, test_on_fail, test_threads_race_the_crash, test_fork_and_planted, test_bad_settings,
          test_bad_rings)
