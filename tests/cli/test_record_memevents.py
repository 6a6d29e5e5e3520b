"""test_record_memevents.py: a real mate-record run of the fake-CUDA program emits MEM_ALLOC, MEM_FREE and MEM_FAIL live: the instruction log holds them (sizes, pointers, streams as the memory CSV has them), mate-top -b shows current and peak memory per device, and the Perfetto export draws the counter."""
import csv
import functools
import glob
import json
import os
import re
import subprocess

from mate_test import build_path, check, need_preload, record_env, run, run_cases, tmpdir, wait_until

need_preload()
RECORD = build_path("src", "record", "mate-record")
PROG = build_path("tests", "record-cuda-prog")
TOP = build_path("src", "top", "mate-top")
VISUALIZE = build_path("mate-visualize")
work = tmpdir()
env = record_env("MATE_MONITOR", "MATE_INSTRUCTION_LOG", "MATE_MONITOR_DIR", "MATE_MONITOR_WAIT")

EVENT = re.compile(r"^\s*[\d.]+s \| #\d+ \| ")
# what the program allocates (record-cuda-prog.c), the child's 4096 apart
SIZES = [8192, 6144, 12288, 4096, 2304, 8, 3000, 5000, 7000, 2560, 1000, 1001, 1002, 1003, 1004]
HOST = {7000}                      # cudaMallocHost
HELD = 8192 + 6144 + 12288         # still allocated where RECORD_CUDA_HOLD waits
PEAK = HELD + 5000 + 2560          # managed and pitched memory on top (other_allocations)


def size_str(n):
    """GT's size field (mate_ilog_format_size)."""
    if n < 1024:
        return "%dB" % n
    if n < 1024 * 1024:
        return "%.1fKB" % (n / 1024)
    return "%.2fMB" % (n / (1024 * 1024))


def events(path):
    """(event, command, size field, details dict) of every line."""
    out = []
    with open(path) as f:
        for line in f:
            if not EVENT.match(line):
                continue
            fields = [x.strip() for x in line.rstrip("\n").split(" | ")]
            det = dict(kv.split("=", 1) for kv in fields[-1].split() if "=" in kv)
            out.append((fields[2], fields[4], fields[5] if len(fields) > 6 else "", det))
    return out


def num(s):
    return int(s, 16) if s not in ("", "(nil)") else 0


@functools.cache
def recorded():
    """The instruction log of a recorded run (checked): (its path, its MEM_ events, the
    MEM_ALLOCs, the MEM_FAILs)"""
    e = dict(env, MATE_INSTRUCTION_LOG=os.path.join(work, "il_%i.log"))
    p = run([RECORD, "-l", "1", "--memlog", "mem.csv", "-o", "log.txt", "--", PROG], cwd=work, env=e)
    check(p.stdout.startswith("checksum "), "the program ran: %r" % p.stdout)
    logs = sorted(glob.glob(os.path.join(work, "il_*.log")), key=os.path.getsize)
    check(len(logs) >= 1, "an instruction log: %s" % logs)
    il = logs[-1]
    evs = events(il)
    mem = [x for x in evs if x[0].startswith("MEM_")]
    allocs = [x for x in mem if x[0] == "MEM_ALLOC"]
    frees = [x for x in mem if x[0] == "MEM_FREE"]
    fails = [x for x in mem if x[0] == "MEM_FAIL"]
    print("%d events, %d MEM_ALLOC, %d MEM_FREE, %d MEM_FAIL" % (len(evs), len(allocs), len(frees), len(fails)))
    check(len(allocs) == len(SIZES) and len(frees) == len(SIZES) and len(fails) == 1,
          "MEM events: %d allocations, %d frees, %d failures; want %d, %d, 1"
          % (len(allocs), len(frees), len(fails), len(SIZES), len(SIZES)))
    return il, mem, allocs, fails


def test_instruction_log():
    recorded()


def test_sizes():
    il, mem, allocs, fails = recorded()
    # sizes: each event moves its device's in_use by exactly its size, and the
    # size field says so; peak is the running maximum; everything freed at the end
    in_use, peak, sizes, ok, bad = {}, {}, [], True, []
    for ev, cmd, size, d in mem:
        dev = d.get("device", "?")
        before = in_use.get(dev, 0)
        now = int(d.get("in_use", -1))
        delta = now - before if ev == "MEM_ALLOC" else before - now
        if ev == "MEM_ALLOC":
            sizes.append(delta)
        if ev == "MEM_FAIL":
            ok &= delta == 0 and size == size_str(1 << 40)
        elif size != size_str(delta):
            bad.append((ev, size, delta))
        in_use[dev] = now
        peak[dev] = max(peak.get(dev, 0), now)
        ok &= int(d.get("peak", -1)) == peak[dev]
    check(sorted(sizes) == sorted(SIZES), "allocation sizes from in_use: %s" % sorted(sizes))
    check(not bad, "size fields match the bytes: %s" % bad[:5])
    check(ok, "peak= is the running maximum of in_use= on each device; the failure moves nothing")
    check(all(v == 0 for v in in_use.values()) and in_use, "all freed at the end: %s" % in_use)
    check(peak.get("cuda:0") == PEAK and peak.get("host") == 7000, "peaks: %s" % peak)
    check({d["device"] for _, _, _, d in mem} == {"cuda:0", "host"}, "devices cuda:0 and host")
    check(all((d["device"] == "host") == (c in ("cudaMallocHost", "cudaFreeHost")) for _, c, _, d in mem),
          "pinned host memory on device host, the rest on cuda:0")
    check({c for _, c, _, _ in allocs} == {"cudaMalloc", "cudaMallocAsync", "cudaMallocManaged",
                                           "cudaMallocHost", "cudaMallocPitch"},
          "each allocation names its function: %s" % sorted({c for _, c, _, _ in allocs}))
    check(fails and fails[0][1] == "cudaMalloc" and fails[0][3].get("ptr") == "0x0", "the failure: %s" % fails)


def test_pointers_and_streams():
    mem = recorded()[1]
    # pointers and streams as the memory CSV has them (the process's own rows)
    with open(os.path.join(work, "mem.csv")) as f:
        rows = list(csv.DictReader(f))
    act = {"allocate": "MEM_ALLOC", "deallocate": "MEM_FREE", "free": "MEM_FREE",
           "allocate failure": "MEM_FAIL"}
    from_csv = sorted((act[r["Action"]], num(r["Pointer"]), num(r["Stream"])) for r in rows)
    from_log = sorted((ev, num(d["ptr"]), num(d["stream"])) for ev, _, _, d in mem)
    check(from_log == from_csv and len(from_csv) == 2 * len(SIZES) + 1,
          "pointers and streams equal the CSV's (%d rows, %d events)" % (len(from_csv), len(from_log)))
    check(sum(1 for ev, c, _, d in mem if c.endswith("Async") and num(d["stream"]) != 0) == 2,
          "cudaMallocAsync and cudaFreeAsync carry their stream")


def test_perfetto_counter():
    """the Perfetto export draws the counter"""
    il, mem = recorded()[:2]
    out = os.path.join(work, "mem.json")
    run([VISUALIZE, il, "-o", out])
    with open(out) as f:
        doc = json.loads(f.read())
    cs = [x for x in doc["traceEvents"] if x.get("ph") == "C"]
    series = [int(x["args"]["bytes"]) for x in cs if x["name"] == "memory cuda:0"]
    want = [int(d["in_use"]) for _, _, _, d in mem if d["device"] == "cuda:0"]
    check(series == want and len(series) > 10, "the cuda:0 counter follows in_use: %d values" % len(series))
    check(any(x["name"] == "memory host" for x in cs), "a counter for host memory")


def test_top_memory():
    """mate-top -b shows current and peak memory of the running process"""
    rt = os.path.join(work, "rt")
    os.mkdir(rt, 0o700)
    hold = os.path.join(work, "hold")
    e = dict(env, MATE_MONITOR="1", MATE_MONITOR_DIR=rt, MATE_MONITOR_WAIT="30",
             RECORD_CUDA_HOLD=hold)
    prog = subprocess.Popen([RECORD, "-l", "1", "-o", "log2.txt", "--", PROG], cwd=work, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: glob.glob(os.path.join(rt, "*.info")))
        top = run([TOP, "-b", "-n", "6", "-d", "0.5"], env=dict(env, MATE_MONITOR_DIR=rt))
    finally:
        open(hold, "w").close()
        out_, err_ = prog.communicate(timeout=60)
    check(prog.returncode == 0, "the monitored program ran: %s" % err_)
    last = top.stdout.strip().split("\n\n")[-1]
    print(last)
    m = re.search(r"memory cuda:0 (\S+) \(peak (\S+)\)", last)
    check(m is not None and m.groups() == (size_str(HELD), size_str(PEAK)),
          "mate-top -b: cuda:0 %s (peak %s), want %s (peak %s)"
          % ((m.groups() if m else ("nothing", "nothing")) + (size_str(HELD), size_str(PEAK))))
    m = re.search(r"memory host (\S+) \(peak (\S+)\)", last)
    check(m is not None and m.groups() == ("0B", size_str(7000)), "mate-top -b: host 0B (peak 6.8KB)")


run_cases(test_instruction_log, test_sizes, test_pointers_and_streams, test_perfetto_counter, test_top_memory)
