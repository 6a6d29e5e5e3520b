#!/usr/bin/env python3
"""replay-mixed.py: dumps per second over a mixed FlashInfer recording, mate-replay against
FlashInfer's own replayer in the same run.

usage: PYTHON_PEERS bench/replay-mixed.py BUILD_DIR [--steps 60] [--repeat 3] [--jobs 2]

The recording is tests/interop/peers/fi_model_step.py's serving step (a paged prefill, then --steps
decode steps: rmsnorm, mm_bf16, RoPE, KV-cache appends, the paged wrappers' __init__, plan
and run, fused_add_rmsnorm, silu_and_mul, sampling), made through FlashInfer's real decorator
at level 10 on torch references with FlashInfer's names, as .pt dumps.

The anchor is FlashInfer's replay_sequence(root, device="cpu") from its api_logging.py on
the same dumps: the replayer FlashInfer ships, doing the same work (load each dump, call the
function, carry the wrappers' state by self_id, compare the outputs), here calling the same
torch references that made the recording. Its time is taken inside its process, after the
imports; mate-replay's is the whole process, start to exit. Each is the best of --repeat.
Prints both rates and the ratio, with mate-replay on one thread (-j 1) and on --jobs."""
import argparse
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "tests", "interop", "peers")
sys.path.insert(0, PEERS)


def record(a):
    import fi_model_step
    fi_model_step.record(decode_steps=a.steps)


def flashinfer_replay(a):
    """FlashInfer's replay_sequence over the root: its best time, and its verdicts."""
    import torch
    from flashinfer_peer import load_api_logging
    api = load_api_logging()
    logging.getLogger("flashinfer.api_logging").setLevel(logging.CRITICAL)
    best, results = float("inf"), []
    for _ in range(a.repeat):
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            results = api.replay_sequence(a.root, device="cpu")
            best = min(best, time.perf_counter() - t0)
    bad = [r for r in results if "error" in r or "execution_error" in r]
    matched = sum(1 for r in results if r.get("comparison_match") is True)
    print(json.dumps({"seconds": best, "dumps": len(results), "matched": matched,
                      "errors": len(bad), "threads": torch.get_num_threads()}))


def mate_replay(a, build, jobs):
    """mate-replay's best wall time over the root on jobs threads; every verdict must pass
    (or, for a call in place, run unchecked)."""
    replay = os.path.join(build, "src", "replay", "mate-replay")
    best = float("inf")
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        p = subprocess.run([replay, "--jsonl", "-j", str(jobs), a.root], capture_output=True,
                           text=True)
        best = min(best, time.perf_counter() - t0)
        verdicts = [json.loads(x) for x in p.stdout.splitlines()]
        # the appends and fused_add_rmsnorm write in place, which FlashInfer's
        # decorator does not record: they run "unchecked"
        failed = [v for v in verdicts if v["verdict"] not in ("passed", "unchecked")]
        if p.returncode != 0 or failed:
            sys.exit("replay-mixed: mate-replay exits %d; %d of %d calls not passed: %s" % (
                p.returncode, len(failed), len(verdicts), failed[:1] or p.stderr[-500:]))
    return best, len(verdicts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build", nargs="?")
    p.add_argument("--steps", type=int, default=60, help="decode steps after the prefill")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--record", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--flashinfer-replay", dest="root", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.record:
        return record(a)
    if a.root:
        return flashinfer_replay(a)
    if a.build is None:
        p.error("BUILD_DIR is required")
    me = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory() as tmp:
        a.root = os.path.join(tmp, "rec")
        env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=a.root,
                   FLASHINFER_DUMP_SAFETENSORS="0", FLASHINFER_LOGDEST=os.path.join(tmp, "log"))
        r = subprocess.run([sys.executable, me, "--record", "--steps", str(a.steps)], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("replay-mixed: recording failed: " + r.stderr[-2000:])
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLASHINFER_")}
        r = subprocess.run([sys.executable, me, "--flashinfer-replay", a.root, "--repeat",
                            str(a.repeat)], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("replay-mixed: FlashInfer's replay failed: " + r.stderr[-2000:])
        fi = json.loads(r.stdout.strip().splitlines()[-1])
        one, n = mate_replay(a, a.build, 1)
        many, _ = mate_replay(a, a.build, a.jobs)
        funcs = {}
        for d in os.listdir(a.root):
            if not os.path.isdir(os.path.join(a.root, d)):
                continue
            f = d.split("_", 4)[-1].rsplit("_call", 1)[0]
            funcs[f] = funcs.get(f, 0) + 1
    if n != fi["dumps"]:
        sys.exit("replay-mixed: mate-replay replayed %d dumps, FlashInfer %d" % (n, fi["dumps"]))
    print("mixed recording: %d dumps (%d decode steps), %d functions" % (n, a.steps, len(funcs)))
    print("FlashInfer replay_sequence (cpu, %d torch threads): %.3f s, %.0f dumps/s "
          "(%d matched, %d errors)" % (fi["threads"], fi["seconds"], n / fi["seconds"],
                                       fi["matched"], fi["errors"]))
    print("mate-replay -j 1: %.3f s, %.0f dumps/s  ratio %.1fx" % (
        one, n / one, fi["seconds"] / one))
    print("mate-replay -j %d: %.3f s, %.0f dumps/s  ratio %.1fx" % (
        a.jobs, many, n / many, fi["seconds"] / many))


if __name__ == "__main__":
    main()
