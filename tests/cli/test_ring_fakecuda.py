# mate-python: peers
"""test_ring_fakecuda.py: MATE_RING_ON=fail under mate-record with the test-only fake CUDA runtime and cuBLAS: a cublasGemmEx that returns an error (a recorded call: its record says failed, its inputs saved) and a cudaMemcpy that returns one (at level 10 only counted, not recorded) each have the ring's last calls written into the dump root while the program runs on unchanged; the dumps load in torch 2.x with weights_only=True and mate-replay replays them."""
import glob
import json
import os

import torch

from mate_test import build_path, check, need_preload, record_env, run, run_cases, tmpdir

need_preload()
RECORD = build_path("src", "record", "mate-record")
PROG = build_path("tests", "record-cuda-prog")
REPLAY = build_path("src", "replay", "mate-replay")
KEEP = 4
work = tmpdir()
# the program's own output, unrecorded: what a recorded run must print too
plain = run([PROG], env=record_env()).stdout


def recorded(d, fail, on_fail=True):
    """Runs the program under mate-record into a ring of KEEP calls with RECORD_CUDA_FAIL=fail;
    the CompletedProcess and the dump root."""
    os.makedirs(d)
    env = record_env("MATE_RING_ON")
    env.update(RECORD_CUDA_FAIL=fail, MATE_RING_PATH=os.path.join(d, "ring.%p"), MATE_RING_BYTES="1M")
    if on_fail:
        env["MATE_RING_ON"] = "fail"
    p = run([RECORD, "-l", "10", "--ring", str(KEEP), "-d", "dumps", "-o", "log.txt", "--", PROG],
            cwd=d, env=env, check=False)
    return p, os.path.join(d, "dumps")


def records(dumps):
    """Each dump's last record, by its directory's function name and number."""
    res = {}
    for x in sorted(os.listdir(dumps)) if os.path.isdir(dumps) else []:
        if "_call" in x:
            with open(os.path.join(dumps, x, "metadata.jsonl")) as f:
                res[x.split("_pid", 1)[1].split("_", 1)[1]] = (x, json.loads(f.read().splitlines()[-1]))
    return res


def loads_and_replays(what, dumps, recs):
    """Every tensor file loads in torch 2.x (weights_only=True); mate-replay passes the calls
    that completed and runs the failed one."""
    n = 0
    for x, _ in recs.values():
        for path in glob.glob(os.path.join(dumps, x, "*.pt")):
            t = torch.load(path, weights_only=True)
            n += len(t)
            check(all(isinstance(v, torch.Tensor) for v in t.values()), "%s: %s holds tensors" % (what, path))
    check(n > 0, "%s: tensors were dumped: %d" % (what, n))
    rp = run([REPLAY, "--jsonl", dumps], check=False)
    got = {json.loads(line)["dir"]: json.loads(line)["verdict"] for line in rp.stdout.splitlines()}
    want = {x: "passed" if r["execution_status"] == "completed" else "now_runs" for x, r in recs.values()}
    check(got == want, "%s: mate-replay: %s, expected %s" % (what, got, want))


def failing(fail, said):
    """A recorded run with MATE_RING_ON=fail in which fail fails (the program says said and runs
    on unchanged); its dump root and records."""
    p, dumps = recorded(os.path.join(work, fail), fail)
    check(p.returncode == 0 and p.stdout == plain and said in p.stderr,
          "%s: the program runs on unchanged: %d %r %r" % (fail, p.returncode, p.stdout, p.stderr[-300:]))
    return dumps, records(dumps)


def test_cublas_error():
    dumps, recs = failing("cublas", "cublasGemmEx: status 15")
    check(sorted(recs) == ["cublasGemmEx_call0001", "cublasGemmEx_call0002",
                           "cublasGemmStridedBatchedEx_call0001", "cublasSgemm_v2_call0001"],
          "the failing call and the %d before it: %s" % (KEEP - 1, sorted(recs)))
    x, last = recs.get("cublasGemmEx_call0002", ("", {}))
    check(last.get("execution_status") == "failed" and
          last.get("error") == "cublasGemmEx returned cublasStatus 15" and
          os.path.exists(os.path.join(dumps, x, "inputs.pt")),
          "its record says failed, its inputs saved: %s" % {k: last.get(k) for k in ("execution_status", "error")})
    loads_and_replays("cublas", dumps, recs)


def test_memcpy_error():
    """A copy is only counted at level 10: no record of its own, but its error writes the ring."""
    dumps, recs = failing("memcpy", "cudaMemcpy: error 21")
    check(sorted(recs) == ["cublasGemmEx_call0001", "cublasGemmStridedBatchedEx_call0001",
                           "cublasSgemm_v2_call0001"], "the calls before the failed copy: %s" % sorted(recs))
    check(all(r["execution_status"] == "completed" for _, r in recs.values()), "all completed")
    loads_and_replays("memcpy", dumps, recs)


def test_off():
    for fail in ("cublas", "memcpy"):
        p, dumps = recorded(os.path.join(work, "off-" + fail), fail, on_fail=False)
        check(p.returncode == 0 and records(dumps) == {},
              "%s: without MATE_RING_ON, a run that ends well leaves no dumps: %s" % (fail, records(dumps)))


run_cases(test_cublas_error, test_memcpy_error, test_off)
