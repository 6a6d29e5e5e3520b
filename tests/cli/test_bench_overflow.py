"""bench_overflow.py: numbers past int64_t: mate-bench refuses an entry whose size or stride is not an integer from 0 to 2^63 - 1 (an empty tensor of shape [0, 1e300], a stride that multiplies past 2^63) as an error, without casting it; a host program's tensors of dimension INT64_MAX pass through MATE_PROFILE and MATE_BENCH_LOG without stopping or changing it. Under --enable-sanitizers (float-cast-overflow, no recovery) an undefined cast would end the program with a report."""
import json
import os
import shlex
import subprocess

from mate_test import build_path, check, run_cases, tmpdir

BENCH = build_path("src", "bench", "mate-bench")
HUGE = build_path("tests", "benchlog-huge")


def bench(args, stdin=None):
    p = subprocess.run([BENCH, "-n", "1"] + args, input=stdin, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


def entry(shape, stride=None):
    t = {"shape": shape, "dtype": "torch.float32", "device": "cpu"}
    if stride is not None:
        t["stride"] = stride
    return json.dumps({"function": "mm", "module": "torch", "scalars": {},
                       "tensors": {"arg_0": t, "arg_1": {"shape": [3, 4], "dtype": "torch.float32",
                                                         "stride": [4, 1], "device": "cpu"}}})


def test_bench_huge_numbers():
    """mate-bench: sizes and strides no int64_t holds"""
    for what, line, words in (
            ("shape [0, 1e300]", entry([0, 1e300], [1, 1]), "dimension 1: its size"),
            ("shape [0, 2^63]", entry([0, 2.0 ** 63]), "dimension 1: its size"),
            ("shape [0, 1e999] (infinity)", entry([0, 1]).replace("[0, 1]", "[0, 1e999]"),
             "dimension 1: its size"),
            ("stride [1e300, 1] of an empty tensor", entry([0, 4], [1e300, 1]),
             "dimension 0: its stride")):
        rc, out = bench([], line + "\n")
        check(rc == 1 and "error: tensor arg_0: " + words + " is not an integer from 0 to 2^63 - 1"
              in out and "runtime error" not in out, "%s: an error, no cast: %d %r" % (what, rc, out))
    # the command-line form makes row-major strides: 2^53 * 2^53 is 2^106 for dimension 0
    rc, out = bench(["-c", "mm", "arg_0=float32[0,9007199254740992,9007199254740992]",
                     "arg_1=float32[3,4]"])
    check(rc != 0 and "dimension 0: its stride is not an integer" in out and "runtime error" not in out,
          "-c with a stride past 2^63: refused: %d %r" % (rc, out))


def test_recorder_huge_tensors():
    """the recorder: tensors of dimension INT64_MAX in the host"""
    work = tmpdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MATE_")}
    env.update(MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null", MATE_PROFILE=os.path.join(work, "p.jsonl"),
               MATE_BENCH_LOG=os.path.join(work, "b.sh"))
    p = subprocess.run([HUGE], capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 0 and p.stdout == "benchlog-huge: 4 calls\n" and "runtime error" not in p.stderr,
          "the host runs on, unchanged: %d %r %r" % (p.returncode, p.stdout, p.stderr[-600:]))
    lines = []
    if os.path.exists(os.path.join(work, "b.sh")):
        with open(os.path.join(work, "b.sh")) as f:
            lines = [l for l in f.read().splitlines() if l.startswith("mate-bench")]
    # (the recorder leaves out a tensor whose byte size no int64_t holds: only the empty one,
    # [0, INT64_MAX], reaches the shape)
    check(len(lines) == 4, "a line per call's shape: %r" % lines)
    big = "9.2233720368547758e+18"   # INT64_MAX, as the double the profile's JSON gives back
    empty = [l for l in lines if " -c empty_huge " in l]
    check(len(empty) == 1 and empty[0].endswith(" 'arg_0=float32[0,%s]@[%s,1]'" % (big, big)),
          "a size no int64_t holds is written as the number it is, as MATE_PROFILE writes it, "
          "and strides past 2^63 are written out: %r" % lines)
    with open(os.path.join(work, "p.jsonl")) as f:
        prof = [json.loads(l) for l in f]
    check([e["tensors"]["arg_0"]["shape"] for e in prof if e["function"] == "empty_huge"] == [[0, 2.0 ** 63]],
          "MATE_PROFILE has the same number: %r" % prof)
    for l in lines:
        rc, out = bench(shlex.split(l)[1:])
        check(rc in (1, 2) and "runtime error" not in out,
              "mate-bench runs or refuses each line, without a cast: %s: %d %r" % (l, rc, out))
    rc, out = bench(shlex.split(empty[0] if empty else "x")[1:])
    check(rc == 2 and "bad tensor spec" in out, "the line of the empty tensor is refused: %d %r" % (rc, out))


run_cases(test_bench_huge_numbers, test_recorder_huge_tensors)
