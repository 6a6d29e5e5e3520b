"""test_record_fakecuda.py: mate-record on a CUDA program linked against the test-only fake libcudart/libcublas: the memory CSV, statistics, profile, copies, launches and cuBLAS dumps."""
import csv
import functools
import glob
import json
import os
import re
import struct

import numpy as np

from mate_test import build_path, check, need_preload, read_safetensors, record_env, run, run_cases, tmpdir

need_preload()
RECORD = build_path("src", "record", "mate-record")
PROG = build_path("tests", "record-cuda-prog")
REPLAY = build_path("src", "replay", "mate-replay")
work = tmpdir()
env = record_env()


def rows_of(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def human(b):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return "%d B" % b if unit == "B" else "%.1f %s" % (b, unit)
        b /= 1024.0


def fill(n, seed):
    return np.array([((i * 7 + seed * 13) % 17 - 8) / 4.0 for i in range(n)], dtype=np.float32)


@functools.cache
def level10():
    """mate-record -l 10 with a memory log of the program (checked): its CompletedProcess."""
    p = run([RECORD, "-l", "10", "--safetensors", "-d", "dumps", "--memlog", "mem.csv",
             "-o", "log.txt", "--", PROG], cwd=work, env=env)
    check(p.stdout.startswith("checksum "), "the program ran: %r" % p.stdout)
    return p


def test_memory_csv():
    p = level10()
    rows = rows_of(os.path.join(work, "mem.csv"))
    check(len(rows) > 0 and list(rows[0].keys()) == ["Thread", "Time", "Action", "Pointer", "Size", "Stream"],
          "CSV header")
    allocs = [int(r["Size"]) for r in rows if r["Action"] == "allocate"]
    frees = [int(r["Size"]) for r in rows if r["Action"] == "free"]
    fails = [int(r["Size"]) for r in rows if r["Action"] == "allocate failure"]
    want = [8192, 6144, 12288, 4096, 2304, 8, 3000, 5000, 7000, 2560, 1000, 1001, 1002, 1003, 1004]
    check(sorted(allocs) == sorted(want), "allocation sizes %s, expected %s" % (sorted(allocs), sorted(want)))
    check(sorted(frees) == sorted(want), "every allocation freed with its size: %s" % sorted(frees))
    check(fails == [1 << 40], "the failed allocation: %s" % fails)
    check(len({r["Thread"] for r in rows}) == 2, "two threads in the CSV")
    async_rows = [r for r in rows if r["Size"] == "3000"]
    check(len(async_rows) == 2 and all(r["Stream"] != "0" for r in async_rows),
          "cudaMallocAsync/cudaFreeAsync carry their stream: %s" % async_rows)
    check(all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{6}", r["Time"]) for r in rows), "times HH:MM:SS.ffffff")
    check(all(r["Pointer"].startswith("0x") or r["Action"] == "allocate failure" for r in rows), "pointers in hex")

    # peak of live bytes, from the CSV, against the summary
    live, cur, peak = {}, 0, 0
    for r in rows:
        if r["Action"] == "allocate":
            live[r["Pointer"]] = int(r["Size"])
            cur += int(r["Size"])
            peak = max(peak, cur)
        elif r["Action"] == "free":
            cur -= live.pop(r["Pointer"])
    check(cur == 0, "nothing left allocated")
    check("3 calls recorded in 2 processes; 3 dumps" in p.stderr, "summary counts: %s" % p.stderr)
    check("peak device memory %s" % human(peak) in p.stderr, "summary peak %s: %s" % (human(peak), p.stderr))
    check("16 device allocations, 7 cudaMemcpy (31.5 KiB), 1 kernel launch" in p.stderr,
          "summary of events: %s" % p.stderr)


def test_child_csv():
    """the forked child wrote its own CSV"""
    level10()
    children = [f for f in glob.glob(os.path.join(work, "mem.*.csv"))]
    check(len(children) == 1, "one CSV for the forked child: %s" % children)
    if children:
        crow = rows_of(children[0])
        check([(r["Action"], r["Size"]) for r in crow] == [("allocate", "4096"), ("free", "4096")],
              "the child's rows: %s" % crow)


def test_profile_in_log():
    """the profile, in RMM's format, at the end of the log"""
    level10()
    log = open(os.path.join(work, "log.txt")).read()
    check("Memory Profiling\n================\n" in log, "profile in the log")
    check(re.search(r"\n\s+1\s+0\s+0  cublas:0\(cublasGemmEx\)\n", log) is not None, "cublasGemmEx profile line")
    check(re.search(r"\n\s+6\s+0\s+0  cudart:0\(cudaMemcpy\)\n", log) is not None, "cudaMemcpy profile line")


def cublas_dumps():
    """The cuBLAS dumps' folders."""
    level10()
    return sorted(glob.glob(os.path.join(work, "dumps", "*_call0001")))


def test_cublas_dumps():
    """the cuBLAS dumps: inputs before, C after (the in-place file), as the program computed them"""
    dirs = cublas_dumps()
    names = sorted(re.sub(r".*pid\d+_(.*)_call0001", r"\1", d) for d in dirs)
    check(names == ["cublasGemmEx", "cublasGemmStridedBatchedEx", "cublasSgemm_v2"], "dumps: %s" % names)
    hA = fill(64 * 32, 1) * np.float32(0.5)        # after the saxpy kernel
    hB = fill(32 * 48, 2)
    A = hA.reshape(32, 64).T                        # column major 64x32
    B = hB.reshape(48, 32).T
    C1 = (np.float32(1.5) * (A.astype(np.float64) @ B)).astype(np.float32)
    for d in dirs:
        meta = [json.loads(line) for line in open(os.path.join(d, "metadata.jsonl"))]
        check(meta[-1]["execution_status"] == "completed", "%s completed" % d)
        out = read_safetensors(os.path.join(d, "inplace.safetensors"), arrays=True)  # C after: written in place
        inp = read_safetensors(os.path.join(d, "inputs.safetensors"), arrays=True)
        if d.endswith("cublasSgemm_v2_call0001"):
            details = meta[-1]["tensor_details"]
            check(details["arg_7"]["shape"] == [64, 32] and details["arg_7"]["stride"] == [1, 64],
                  "A is a column-major view: %s" % details["arg_7"])
            check(np.array_equal(inp["arg_7"], A), "A as recorded")
            check(np.array_equal(out["arg_12"], C1), "C after cublasSgemm_v2")
            check(meta[-1]["input_metadata"]["arg_6"] == 1.5, "alpha recorded")
        if d.endswith("cublasGemmEx_call0001"):
            check(inp["arg_7"].dtype == np.float16 and list(inp["arg_7"].shape) == [32, 64],
                  "f16 A stored transposed")
            check(np.array_equal(inp["arg_14"], C1), "C before cublasGemmEx is the previous result")
            check(meta[-1]["input_metadata"]["arg_17"]["name"] == "cublasComputeType_t.CUBLAS_COMPUTE_32F",
                  "compute type recorded")
        if d.endswith("cublasGemmStridedBatchedEx_call0001"):
            check(list(inp["arg_7"].shape) == [3, 8, 8], "batched A: %s" % (inp["arg_7"].shape,))
            check(meta[-1]["input_metadata"]["arg_6"] == 0.5 and meta[-1]["input_metadata"]["arg_15"] == 0.0,
                  "alpha and beta read from device memory")
            hb = fill(8 * 8 * 3, 5).reshape(3, 8, 8)
            want = np.stack([np.float32(0.5) * (hb[i].T @ hb[i]) for i in range(3)])
            check(np.array_equal(out["arg_16"].transpose(0, 2, 1), want), "batched C")


def test_replay_dumps():
    """the dumps replay bit-exactly (the fake cuBLAS computes through the same CBLAS)"""
    dirs = cublas_dumps()
    p = run([REPLAY, "--device", "cpu", os.path.join(work, "dumps")], check=False)
    check(p.returncode == 0, "mate-replay exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    check(p.stdout.count("Passed (bit-exact)") == 3, "three bit-exact replays: %s" % p.stdout)
    # a changed result is caught
    sg = [d for d in dirs if d.endswith("cublasSgemm_v2_call0001")]
    if sg:
        f = os.path.join(sg[0], "inplace.safetensors")
        raw = bytearray(open(f, "rb").read())
        raw[-4:] = struct.pack("<f", struct.unpack("<f", bytes(raw[-4:]))[0] + 1.0)
        open(f, "wb").write(bytes(raw))
        p = run([REPLAY, "--device", "cpu", sg[0]], check=False)
        check(p.returncode == 1 and "Mismatch" in p.stdout, "a changed C is a mismatch: %s" % p.stdout)


def test_memlog_replay():
    """the memory log replays against malloc and the pool"""
    level10()
    p = run([REPLAY, "--memlog", os.path.join(work, "mem.csv")], check=False)
    check(p.returncode == 0, "mate-replay --memlog exit %d: %s" % (p.returncode, p.stderr))
    check("malloc: 30 events" in p.stdout and "pool: 30 events" in p.stdout, "replay lines: %s" % p.stdout)
    check("LOG shows leak" not in p.stdout, "no leak in the program's log")


def test_level3():
    """level 3: copies and the launch by name"""
    p = run([RECORD, "-l", "3", "-o", "log3.txt", "--", PROG], cwd=work, env=env)
    log = open(os.path.join(work, "log3.txt")).read()
    check("MATE API Call: saxpy_kernel" in log, "the kernel launch is named")
    check(re.search(r"count=\n\s+8192\n\s+kind=\n\s+cudaMemcpyKind.cudaMemcpyHostToDevice", log) is not None,
          "cudaMemcpy with its size and kind")
    check("device=cuda:0" in log, "level 3 shows device operands as cuda:0")
    check("11 calls recorded in 2 processes" in p.stderr, "level 3 summary: %s" % p.stderr)


def test_level0():
    """level 0 with a memory log only: the CSV, no API log"""
    p = run([RECORD, "-l", "0", "--memlog", "m0-%i.csv", "-o", "log0.txt", "--", PROG], cwd=work, env=env)
    csvs = glob.glob(os.path.join(work, "m0-*.csv"))
    check(len(csvs) == 2, "per-process CSVs with %%i: %s" % csvs)
    log0 = open(os.path.join(work, "log0.txt")).read() if os.path.exists(os.path.join(work, "log0.txt")) else ""
    check("MATE API Call" not in log0 and "Memory Profiling" in log0, "level 0: profile only")
    check("mate-record: level 0: API calls not logged in 2 processes; peak device memory" in p.stderr and
          "0 calls recorded" not in p.stderr, "level 0 summary: %s" % p.stderr)


run_cases(test_memory_csv, test_child_csv, test_profile_in_log, test_cublas_dumps, test_replay_dumps,
          test_memlog_replay, test_level3, test_level0)
