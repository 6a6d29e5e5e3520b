# mate-python: peers
"""test_bench_fi_step.py: the model-like serving step of test_fi_model_step.py, recorded with
FlashInfer's real decorator, listed as distinct calls (mate-list-dumps --unique --jsonl) and
benchmarked by mate-bench: every entry runs on made-up inputs with finite outputs (the paged
prefill and decode wrappers' runs on plans made from their shapes), but the wrappers' plans,
reported unsupported."""
import functools
import json
import subprocess

from mate_test import build_path, check, flashinfer_record, run, run_cases, src_path, tmpdir


@functools.cache
def listed():
    """(mate-list-dumps --unique --jsonl of the recorded step, its entries)"""
    tmp = tmpdir()
    root, dirs = flashinfer_record(src_path("tests", "interop", "test_fi_model_step.py"), tmp, 47)
    u = run([build_path("src", "replay", "mate-list-dumps"), "--unique", "--jsonl", root]).stdout
    return u, [json.loads(l) for l in u.splitlines() if l.strip()]


def test_distinct_calls():
    entries = listed()[1]
    check(len(entries) >= 20, "distinct calls: %d" % len(entries))


def test_bench():
    u, entries = listed()
    p = subprocess.run([build_path("src", "bench", "mate-bench"), "-n", "2", "--jsonl"], input=u,
                       capture_output=True, text=True, timeout=600)
    res = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    check(len(res) == len(entries), "one line per entry: %d of %d" % (len(res), len(entries)))
    plans = 0
    for e, r in zip(entries, res):
        check(r["key"] == e["key"], "in order: %s %s" % (r["key"], e["key"]))
        if e["function"].endswith(".plan"):
            plans += 1
            check(r["outcome"] == "unsupported" and "plan is timed with the run" in r["message"],
                  "%s: unsupported: %s" % (e["function"], r))
            continue
        check(r["outcome"] == "ran" and r["nan"] == 0 and r["inf"] == 0 and r["runs"] == 2,
              "%s %s: runs with finite outputs: %s" % (e["function"], e["key"], r))
        if e["function"].startswith(("mm_bf16", "rmsnorm", "fused_add_rmsnorm", "silu_and_mul")):
            check(r["flops"] and r["flops"] > 0 and r["flop_per_s"] > 0, "%s: FLOP/s: %s" % (e["function"], r))
    for fn in ("BatchDecodeWithPagedKVCacheWrapper.run", "BatchPrefillWithPagedKVCacheWrapper.run",
               "append_paged_kv_cache", "get_batch_indices_positions", "apply_rope_pos_ids",
               "top_k_top_p_sampling_from_logits"):
        check(any(r["function"] == fn and r["outcome"] == "ran" for r in res), "%s benchmarked" % fn)
    check(p.returncode == (1 if plans else 0), "exit %d with %d plans" % (p.returncode, plans))
    check(("%d benchmarked, %d unsupported, 0 failed" % (len(entries) - plans, plans)) in p.stderr,
          "summary: %r" % p.stderr[-300:])


run_cases(test_distinct_calls, test_bench)
