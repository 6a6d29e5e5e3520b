"""bench_overflow.py: numbers past int64_t: mate-bench refuses an entry whose size or stride is not an integer from 0 to 2^63 - 1 (an empty tensor of shape [0, 1e300], a stride that multiplies past 2^63) as an error, without casting it. Under --enable-sanitizers (float-cast-overflow, no recovery) an undefined cast would end the program with a report."""
import json
import subprocess

from mate_test import build_path, check, done

BENCH = build_path("src", "bench", "mate-bench")


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


# ---- mate-bench: sizes and strides no int64_t holds ----------------------------------------
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

done()
