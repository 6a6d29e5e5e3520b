# mate-python: peers
"""test_flashinfer_replays_mate.py: mate's demo dumps (.pt and .safetensors) replay under FlashInfer's own replay_sequence(device="cpu") with no mismatch."""
import contextlib
import io
import json
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))

from flashinfer_peer import load_api_logging  # noqa: E402
from mate_test import build_path, check, run, run_cases, tmpdir  # noqa: E402

DEMO = build_path("examples", "mate-demo")
LIST = build_path("src", "replay", "mate-list-dumps")
TMP = tmpdir()

api = load_api_logging()
logging.getLogger("flashinfer.api_logging").setLevel(logging.CRITICAL)

def demo_replays(fmt, st):
    """The demo's dumps in format fmt (MATE_DUMP_SAFETENSORS=st) replay under FlashInfer's
    replay_sequence with no mismatch."""
    root = os.path.join(TMP, fmt)
    env = dict(os.environ, MATE_LOGLEVEL="10", MATE_DUMP_DIR=root, MATE_LOGDEST="/dev/null",
               MATE_DUMP_SAFETENSORS=st, MATE_DEMO_THREADS="2", MATE_DEMO_ROUNDS="1")
    run([DEMO], env=env)
    status = {d["dir"]: d["status"] for d in map(json.loads, run([LIST, "--jsonl", root]).stdout.splitlines())}
    with contextlib.redirect_stdout(io.StringIO()):
        results = api.replay_sequence(root, device="cpu")
    check(len(results) == len(status) and len(results) > 10,
          "%s: FlashInfer replayed %d of %d dumps" % (fmt, len(results), len(status)))
    funcs = set()
    for r in results:
        name = os.path.basename(r["dump_dir"])
        st_rec = status.get(name)
        func = r.get("metadata", {}).get("function_name")
        funcs.add(func)
        if st_rec == "completed":
            check(r.get("comparison_match") is True and "execution_error" not in r,
                  "%s: %s: FlashInfer's replay: match=%s error=%s"
                  % (fmt, name, r.get("comparison_match"), r.get("execution_error") or r.get("error")))
        elif st_rec == "failed":
            # A recorded failure reproduces: FlashInfer's replay raises too, and never calls it a mismatch.
            check("execution_error" in r and r.get("comparison_match") is not False,
                  "%s: %s: the recorded failure did not reproduce under FlashInfer: %s" % (fmt, name, r))
        else:
            check(False, "%s: %s: unexpected status %s" % (fmt, name, st_rec))
    check({"rmsnorm", "fused_add_rmsnorm", "silu_and_mul", "softmax", "mm"} <= funcs,
          "%s: the demo's functions all replayed: %s" % (fmt, sorted(f for f in funcs if f)))


def test_pt():
    demo_replays("pt", "0")


def test_safetensors():
    demo_replays("safetensors", "1")


run_cases(test_pt, test_safetensors)
