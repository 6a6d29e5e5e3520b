# mate-python: peers
"""test_fi_model_step.py: a small model-like serving step recorded with FlashInfer's real
decorator at level 10 (torch references with FlashInfer's names and signatures) replays with
every call passed: no Unsupported call and no false verdict (issue 21's "done when").

The step, on a paged bf16 KV cache (page size 4, 3 requests, 8 query and 2 KV heads, head
dim 64): a prefill of the prompts (rmsnorm, q/k/v projections by mm_bf16, RoPE by position,
get_batch_indices_positions, append_paged_kv_cache, a paged prefill wrapper planned and run
causally), then two decode steps on one decode wrapper, planned for each (appends of the new
token between the runs), with the MLP (fused_add_rmsnorm, silu_and_mul) and sampling
(top_k_top_p_sampling_from_logits, top_p_renorm_probs) after each; calls on one wrapper
replay in order on one object (self_id). The step is tests/interop/peers/fi_model_step.py's (with
bench/replay-mixed.py)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))

if len(sys.argv) > 1 and sys.argv[1] == "--record":
    import fi_model_step
    fi_model_step.record()
    sys.exit(0)

import functools  # noqa: E402

from mate_test import build_path, check, fi_verdict, run, run_cases, tmpdir  # noqa: E402

REPLAY = build_path("src", "replay", "mate-replay")


@functools.cache
def replayed():
    """The step recorded under FlashInfer's decorator and replayed: (mate-replay's
    CompletedProcess, its verdicts)."""
    TMP = tmpdir()
    root = os.path.join(TMP, "rec")
    env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
               FLASHINFER_LOGDEST=os.path.join(TMP, "log"))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--record"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0, "recording the step under FlashInfer's decorator: %s" % p.stderr[-2000:])
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) \
        if os.path.isdir(root) else []
    check(len(dirs) >= 40, "the step made %d calls" % len(dirs))
    p = run([REPLAY, "--jsonl", root], check=False)
    verdicts = [json.loads(x) for x in p.stdout.splitlines()]
    check(len(verdicts) == len(dirs), "mate-replay replayed %d of %d dumps" % (len(verdicts), len(dirs)))
    return p, verdicts


def test_functions():
    verdicts = replayed()[1]
    functions = sorted({v["function"] for v in verdicts})
    for want in ("rmsnorm", "mm_bf16", "apply_rope_pos_ids", "get_batch_indices_positions",
                 "append_paged_kv_cache", "BatchPrefillWithPagedKVCacheWrapper.plan",
                 "BatchPrefillWithPagedKVCacheWrapper.run", "BatchDecodeWithPagedKVCacheWrapper.plan",
                 "BatchDecodeWithPagedKVCacheWrapper.run", "fused_add_rmsnorm", "silu_and_mul",
                 "top_k_top_p_sampling_from_logits", "top_p_renorm_probs"):
        check(want in functions, "the step recorded %s: %s" % (want, functions))


def test_verdicts():
    p, verdicts = replayed()
    for v in verdicts:
        check(v["verdict"] == fi_verdict(v["function"]), "%s (%s) replays as %s: %s" % (
            v["function"], v["dir"], v["verdict"], v["message"]))
    # the appends and fused_add_rmsnorm write in place: counted apart, not as passed
    check("ran unchecked" in p.stderr, "the summary counts the unchecked calls: %s" % p.stderr[-300:])
    compared = [v for v in verdicts if v["compared"] > 0]
    check(len(compared) >= len(verdicts) - 8,
          "outputs compared in %d of %d calls (the appends and __init__ record none)"
          % (len(compared), len(verdicts)))
    check(p.returncode == 0, "mate-replay exits 0: %d %s" % (p.returncode, p.stderr[-500:]))


run_cases(test_functions, test_verdicts)
