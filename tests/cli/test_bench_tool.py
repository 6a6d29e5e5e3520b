"""test_bench_tool.py: mate-bench on every built-in op's problem (its made-up inputs are valid: the
call runs and leaves no NaN), on the demo's MATE_PROFILE (with --compare: the recorded mean beside
the median, their ratio and why they differ), the -c form against the JSON form of
the same entries, unsupported entries, and hostile input (malformed JSON, bad specs, huge shapes)."""
import functools
import json
import os
import re
import shlex
import subprocess

from mate_test import build_path, run, check, tmpdir, run_cases
from test_bench_log import contiguous, word

BENCH = build_path("src", "bench", "mate-bench")
REPLAY = build_path("src", "replay", "mate-replay")
DEMO = build_path("examples", "mate-demo")
# outputs that are -inf by design: masked logits
MASKS = {"top_k_mask_logits"}


def command_line(e):
    """An entry's command-line form, as bench-cli.md specifies it."""
    words = ["mate-bench"]
    if e.get("module") not in (None, "<unknown>"):  # a call without a module: no -m
        words += ["-m", e["module"]]
    words += ["-c", e["function"]]
    for k, t in e.get("tensors", {}).items():
        spec = "%s[%s]" % (t["dtype"].replace("torch.", ""), ",".join(map(str, t["shape"])))
        if t.get("stride") is not None and t["stride"] != contiguous(t["shape"]):
            spec += "@[%s]" % ",".join(map(str, t["stride"]))
        if t.get("device", "cpu") != "cpu":
            spec += ":" + t["device"]
        words.append(k + "=" + spec)
    for k, v in e.get("scalars", {}).items():
        words.append(k + "=" + json.dumps(v, separators=(",", ":")))
    return " ".join(word(w) for w in words)


def bench(args, **kw):
    return subprocess.run([BENCH] + args, capture_output=True, text=True, timeout=300, **kw)


def bench_line(line, extra):
    """Runs a printed `mate-bench ...` line as the shell would."""
    argv = shlex.split(line)
    check(argv[0] == "mate-bench", "a mate-bench line: %s" % line)
    return bench(argv[1:] + extra)


def jsonl(p):
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


tmp = tmpdir()


def test_every_op():
    """1. every op mate-replay lists either has a problem whose inputs are valid (the call runs, no
    NaN, no infinity but in masks) or is reported unsupported with a reason"""
    ops = sorted({l.split()[0] for l in run([REPLAY, "--list-ops"]).stdout.splitlines() if l.strip()})
    check(len(ops) >= 60, "mate-replay --list-ops lists the built-in ops: %d" % len(ops))
    ran = unsupported = 0
    for op in ops:
        p = bench(["--example", op])
        if p.returncode != 0:
            unsupported += 1
            check(p.returncode == 1 and p.stdout.startswith(op + ": unsupported: ") and
                  len(p.stdout) > len(op) + 30, "%s: a reason why not: %r" % (op, p.stdout))
            continue
        q = bench_line(p.stdout.strip(), ["-n", "2", "--jsonl"])
        r = jsonl(q)
        ok = q.returncode == 0 and len(r) == 1 and r[0]["outcome"] == "ran"
        check(ok, "%s: its problem runs: %s %s" % (op, q.stdout, q.stderr))
        if not ok:
            continue
        ran += 1
        r = r[0]
        check(r["function"] == op and r["runs"] == 2 and 0 < r["min_s"] <= r["median_s"] <= r["max_s"] and
              r["bytes"] > 0, "%s: timed twice: %s" % (op, r))
        check(r["nan"] == 0 and (r["inf"] == 0 or op in MASKS), "%s: finite outputs: %s" % (op, r))
        # the same problem from the JSON form (stdin) gives the same key and problem
        s = bench(["-n", "1", "--jsonl"], input=json.dumps(r["problem"]) + "\n")
        t = jsonl(s)
        check(s.returncode == 0 and len(t) == 1 and t[0]["key"] == r["key"] and
              t[0]["problem"] == r["problem"], "%s: JSON and -c forms agree: %s" % (op, s.stdout))
        check(command_line(r["problem"]) == " ".join(word(w) for w in shlex.split(p.stdout.strip())),
              "%s: --example prints bench-cli.md's form: %s / %s" % (op, command_line(r["problem"]), p.stdout))
    check(ran >= 60, "problems that run: %d (unsupported %d)" % (ran, unsupported))
    for op in ["mm", "rmsnorm", "single_decode_with_kv_cache", "append_paged_kv_cache",
               "apply_rope_with_cos_sin_cache", "top_k_top_p_sampling_from_probs", "segment_packbits",
               "SegmentGEMMWrapper.run", "get_batch_indices_positions", "cblas_sgemm", "cublasGemmEx",
               "BatchDecodeWithPagedKVCacheWrapper.run", "BatchPrefillWithPagedKVCacheWrapper.run",
               "BatchPrefillWithRaggedKVCacheWrapper.run"]:
        check(bench(["--example", op]).returncode == 0, "%s has a problem" % op)


def test_flops():
    """FLOP/s where the op defines them: mm is 2 M N K"""
    p = bench(["-c", "mm", "arg_0=float32[16,32]", "arg_1=float32[32,24]", "--jsonl", "-n", "3"])
    r = jsonl(p)[0]
    check(r["flops"] == 2 * 16 * 32 * 24 and r["flop_per_s"] > 0, "mm's FLOPs: %s" % r)
    p = bench(["-c", "mm", "arg_0=float32[16,32]", "arg_1=float32[32,24]"])
    check(re.search(r"^mm \[[0-9a-f]{16}\]: median .* over 10 runs after 2 warm-up; [0-9.e+-]+ GFLOP/s, "
                    r"[0-9.e+-]+ GB/s$", p.stdout, re.M) is not None, "the text line: %r" % p.stdout)


@functools.cache
def demo_profile():
    """The demo's profile (checked): (its path, its entries)."""
    prof = os.path.join(tmp, "prof.jsonl")
    env = dict(os.environ, MATE_LOGLEVEL="1", MATE_PROFILE=prof, MATE_LOGDEST="/dev/null",
               MATE_DEMO_THREADS="2", MATE_DEMO_ROUNDS="1")
    subprocess.run([DEMO], env=env, capture_output=True)
    entries = [json.loads(l) for l in open(prof)]
    check(len(entries) >= 5, "the demo's profile: %d entries" % len(entries))
    return prof, entries


def test_demo_profile():
    """2. the demo's profile: every entry benchmarks, but the call the demo makes fail on purpose; each
    entry's command-line form is the same problem"""
    prof, entries = demo_profile()
    p = bench(["-n", "2", "--jsonl", prof])
    res = jsonl(p)
    check(len(res) == len(entries), "one line per entry: %d of %d" % (len(res), len(entries)))
    for e, r in zip(entries, res):
        check(r["key"] == e["key"] and r["function"] == e["function"], "in order: %s" % r)
        want = "error" if e["failed"] == e["calls"] else "ran"
        check(r["outcome"] == want, "%s %s: %s (recorded %d of %d failed)" %
              (e["function"], e["key"], r, e["failed"], e["calls"]))
        c = bench_line(command_line(e), ["-n", "1", "--jsonl"])
        t = jsonl(c)
        check(len(t) == 1 and t[0]["problem"] == r["problem"] and t[0]["outcome"] == r["outcome"],
              "%s: -c form is the same problem: %s vs %s" % (command_line(e), t, r["problem"]))
        check(len(t) == 1 and t[0]["key"] == e["key"],
              "%s: -c form has the profile's key %s: %s" % (command_line(e), e["key"], t))
    failing = sum(e["failed"] == e["calls"] for e in entries)
    check(p.returncode == (1 if failing else 0), "exit status with %d failing: %d" % (failing, p.returncode))
    check(("%d benchmarked, 0 unsupported, %d failed" % (len(entries) - failing, failing)) in p.stderr,
          "the summary: %r" % p.stderr)


def test_compare():
    """--compare: each entry's recorded mean (the profile's mean_s, calls, max_s) beside its median,
    their ratio, and why they differ: the demo's calls go through queues to worker threads, so a
    recorded mean over twice the median is said to be the whole call, not the kernel"""
    prof, entries = demo_profile()
    p = bench(["-n", "2", "--jsonl", "--compare", prof])
    res = jsonl(p)
    failing = sum(e["failed"] == e["calls"] for e in entries)
    check(len(res) == len(entries), "--compare: one line per entry: %d" % len(res))
    for e, r in zip(entries, res):
        check(r.get("recorded_mean_s") == e["mean_s"] and r.get("recorded_max_s") == e["max_s"] and
              r.get("recorded_calls") == e["calls"], "--compare: the recorded figures: %s" % r)
        if r["outcome"] != "ran":
            continue
        ratio = e["mean_s"] / r["median_s"]
        check(abs(r["recorded_over_bench"] - ratio) <= 1e-9 * ratio, "--compare: the ratio: %s" % r)
        check(("recorded %.3gx slower" % ratio in r["why"]) == (ratio > 2),
              "--compare: 'recorded slower' exactly when over 2x (%.3g): %r" % (ratio, r["why"]))
    p = bench(["-n", "2", "--compare", prof])
    lines = [l for l in p.stdout.splitlines() if "median" in l]
    check(len(lines) == len(res) - failing and
          all(re.search(r"; recorded mean \S+ \S+ over \d+ calls? \(max \S+ \S+\): [0-9.e+]+x the median", l)
              for l in lines), "--compare text: %r" % lines[:2])
    check(bench(["--compare", "-c", "mm", "arg_0=float32[2,2]", "arg_1=float32[2,2]"]).returncode == 2,
          "--compare with -c is a usage error")


def test_unsupported():
    """3. unsupported entries: counted, said why, exit 1; the others still run"""
    entries = demo_profile()[1]
    lines = [json.dumps({"function": "no_such_op", "module": "x", "tensors": {}, "scalars": {}}),
             json.dumps({"function": "BatchMLAPagedAttentionWrapper.run", "tensors": {
                 "arg_1": {"shape": [4, 8, 64], "dtype": "torch.float16", "stride": [512, 64, 1],
                           "device": "cuda:0"}}, "scalars": {}}),
             json.dumps({"function": "BatchDecodeWithPagedKVCacheWrapper.run", "tensors": {
                 "arg_1": {"shape": [4, 8, 64], "dtype": "torch.float16", "stride": [512, 64, 1],
                           "device": "cuda:0"}}, "scalars": {}}),
             json.dumps(entries[0])]
    p = bench(["-n", "1"], input="\n".join(lines) + "\n")
    out = p.stdout.splitlines()
    check(p.returncode == 1 and len(out) == 4, "unsupported: exit 1, four lines: %d %r" % (p.returncode, out))
    check("no_such_op in x" in out[0] and ": unsupported: no replay handler" in out[0], out[0])
    check(": unsupported: a wrapper's plan is timed with the run" in out[1], out[1])
    check(": unsupported: BatchDecodeWithPagedKVCacheWrapper: no plan could be made" in out[2], out[2])
    check(" median " in out[3], out[3])
    check("1 benchmarked, 3 unsupported, 0 failed" in p.stderr, p.stderr)


def test_hostile_input():
    """4. hostile input: each bad line is one error line, the run carries on; bounded memory"""
    entries = demo_profile()[1]
    bad = ["{not json", "[1, 2]", '{"function": 3}', json.dumps({"function": "mm", "tensors": {
        "arg_0": {"shape": [1 << 40, 1 << 20], "dtype": "torch.float32", "stride": [1 << 20, 1]}}}),
        json.dumps({"function": "mm", "tensors": {"arg_0": {"shape": [4, -1], "dtype": "torch.float32"}}}),
        json.dumps({"function": "mm", "tensors": {"arg_0": {"shape": [4], "dtype": "torch.nope"}}}),
        json.dumps({"function": "mm", "tensors": {"arg_0": {"shape": [4, 4], "dtype": "torch.float32",
                                                             "stride": [1 << 50, 1]}}}),
        json.dumps({"function": "mm", "tensors": {"arg_0": {"shape": [1] * 40, "dtype": "torch.float32"}}}),
        json.dumps(entries[0])]
    p = bench(["-n", "1"], input="\n".join(bad) + "\n")
    out = p.stdout.splitlines()
    check(p.returncode == 1 and len(out) == len(bad), "bad lines: exit 1, a line each: %d %r %s" %
          (p.returncode, out, p.stderr[-500:]))
    check(all(": error: " in l for l in out[:-1]) and " median " in out[-1], "errors then a run: %r" % out)
    check("memory limit" in out[3] and "memory limit" in out[6], "huge shapes name the limit: %r" % out)
    check("<stdin>:1: error: not a JSON object" in out[0], out[0])


def test_memory_sum():
    """tensors each within the limit but past it together: an error, nothing allocated past it"""
    p = bench(["-c", "mm", "arg_0=float32[512,512]", "arg_1=float32[512,512]", "--max-memory", "1536K"])
    check(p.returncode == 1 and "memory limit of 1 MiB together" in p.stdout, "the sum: %r" % p.stdout)
    # ... and nothing is made before the sum is checked: two tensors of 64 MiB under a 64 MiB limit
    # are refused at a peak RSS far below one of them (the old code made and cleared the first)
    tfile = os.path.join(tmpdir(), "time")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tfile, BENCH, "-c", "mm", "arg_0=float32[4096,4096]",
                        "arg_1=float32[4096,4096]", "--max-memory", "64M"], capture_output=True, text=True)
    with open(tfile) as f:
        peak = int(f.read().split()[-1])
    print("two 64 MiB tensors under a 64 MiB limit: peak RSS %d KiB" % peak)
    check(p.returncode == 1 and "memory limit of 64 MiB together" in p.stdout and peak < 48 * 1024,
          "two 64 MiB tensors: exit %d, peak %d KiB: %r" % (p.returncode, peak, p.stdout))
    p = bench(["-c", "mm", "arg_0=float32[512,512]", "arg_1=float32[512,512]", "--max-memory", "3M", "-n", "1"])
    check(p.returncode == 0, "within the limit: %r %r" % (p.stdout, p.stderr))


def test_empty_shapes():
    """empty shapes where the synthesis divides: a line each, no crash"""
    for words in [["-c", "BatchDecodeWithPagedKVCacheWrapper.run", "arg_1=float32[0,8,64]",
                   "arg_2=float32[0,2,16,2,64]"],
                  ["-c", "BatchPrefillWithPagedKVCacheWrapper.run", "arg_1=float32[0,8,64]",
                   "arg_2=float32[4,2,16,2,64]"],
                  ["-c", "append_paged_kv_cache", "arg_0=float32[6,2,64]", "arg_1=float32[6,2,64]",
                   "arg_2=int32[6]", "arg_3=int32[6]", "arg_4=float32[0,2,4,2,64]", "arg_5=int32[6]",
                   "arg_6=int32[3]", "arg_7=int32[2]"],
                  ["-c", "top_k_renorm_probs", "arg_0=float32[4,0]", "arg_1=int32[4]"],
                  ["-c", "segment_packbits", "arg_0=bool[0]", "arg_1=int32[0]"]]:
        p = bench(words + ["-n", "1"])
        check(p.returncode in (0, 1) and len(p.stdout.splitlines()) == 1, "%s: %d %r %r" %
              (words, p.returncode, p.stdout, p.stderr[-300:]))


def test_bad_spec():
    """the -c form: a bad spec is a usage error"""
    for words in [["arg_0=float32[4,"], ["arg_0=float32[4]@[1,1]"], ["noequals"],
                  ["arg_0=float32[4]", "arg_0=float32[4]"], ["arg_0=float32[99999999999,99999999]"]]:
        p = bench(["-c", "mm"] + words)
        check(p.returncode == 2 and p.stdout == "" and p.stderr.startswith("mate-bench: -c mm: "),
              "%s: usage error: %d %r" % (words, p.returncode, p.stderr))


def test_string_scalar():
    """a string that is not JSON is a string scalar; a tensor spec keeps its device"""
    p = bench(["-c", "rmsnorm", "arg_0=float32[8,64]:cuda:0", "arg_1=float32[64]", "kwarg_x=NHD", "--jsonl", "-n", "1"])
    r = jsonl(p)
    check(p.returncode == 0 and r[0]["problem"]["scalars"] == {"kwarg_x": "NHD"} and
          r[0]["problem"]["tensors"]["arg_0"]["device"] == "cuda:0", "string scalar, device: %s" % p.stdout)


def test_device_cuda():
    """--device cuda: runs where there is a device, else exit 2 saying so"""
    p = bench(["--device", "cuda", "-n", "1", "-c", "mm", "arg_0=float32[16,32]", "arg_1=float32[32,24]"])
    check((p.returncode == 0 and " median " in p.stdout) or
          (p.returncode == 2 and p.stdout == "" and p.stderr.startswith("mate-bench: --device: ")),
          "--device cuda: %d %r %r" % (p.returncode, p.stdout, p.stderr))


def test_scalar_objects():
    """scalars as the profile writes them: a dtype object, and a list, in both forms"""
    dt = '{"type":"torch.dtype","value":"torch.float32"}'
    p = bench(["-c", "mm_bf16", "arg_0=bfloat16[16,32]", "arg_1=bfloat16[32,24]", "kwarg_out_dtype=" + dt,
               "kwarg_l=[1,2]", "--jsonl", "-n", "1"])
    r = jsonl(p)
    check(p.returncode == 0 and r[0]["outcome"] == "ran" and
          r[0]["problem"]["scalars"] == {"kwarg_out_dtype": json.loads(dt), "kwarg_l": [1, 2]},
          "a dtype object scalar: %s %s" % (p.stdout, p.stderr))
    q = bench(["--jsonl", "-n", "1"], input=json.dumps(r[0]["problem"]) + "\n") if r else p
    check(jsonl(q) and jsonl(q)[0]["problem"] == r[0]["problem"] and jsonl(q)[0]["outcome"] == "ran",
          "the same from JSON: %s" % q.stdout)
    check(command_line(r[0]["problem"]).count("'kwarg_out_dtype={\"type\":\"torch.dtype\"") == 1,
          "quoted as bench-cli.md says: %s" % command_line(r[0]["problem"]))


def test_usage():
    """usage"""
    for args in [["-n", "0"], ["--device", "tpu"], ["-m", "x"], ["--bogus"]]:
        check(bench(args).returncode == 2, "%s is a usage error" % args)
    check(bench(["/nonexistent/profile.jsonl"]).returncode == 2, "a missing file is exit 2")
    p = bench([], input="")
    check(p.returncode == 1 and "no entry" in p.stderr, "no entries: exit 1: %r" % p.stderr)
    p = bench(["--help"])
    check(p.returncode == 0 and "Usage:" in p.stdout, "--help")


run_cases(test_every_op, test_flops, test_demo_profile, test_compare, test_unsupported, test_hostile_input,
          test_memory_sum, test_empty_shapes, test_bad_spec, test_string_scalar, test_device_cuda,
          test_scalar_objects, test_usage)
