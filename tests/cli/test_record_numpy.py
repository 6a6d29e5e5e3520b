"""test_record_numpy.py: an unmodified numpy program recorded at level 10 under mate-record replays bit-exactly (the README's example), and runs exactly as it does unrecorded."""
import functools
import glob
import json
import os
import re
import sys

import numpy as np

from mate_test import build_path, check, need_preload, read_safetensors, record_env, run, run_cases, tmpdir

need_preload()
RECORD = build_path("src", "record", "mate-record")
REPLAY = build_path("src", "replay", "mate-replay")
PY = os.environ.get("PYTHON_TORCH") or sys.executable
work = tmpdir()
env = record_env()

# The README's example program, with its results saved for the comparison.
PROGRAM = """
import numpy as np
rng = np.random.default_rng(7)
a = rng.standard_normal((256, 128), dtype=np.float32)
b = rng.standard_normal((128, 64), dtype=np.float32)
c = a @ b                                  # cblas_sgemm
d = a.T @ a[:, :32]                        # a transposed operand
e = a[10:50, 3:40] @ b[3:40, 5:9]          # views: leading dimensions wider than the rows
f = np.dot(rng.standard_normal((40, 30)), rng.standard_normal((30, 20)))   # cblas_dgemm
np.savez(OUT, c=c, d=d, e=e, f=f)
print("sum", float(c.sum()) + float(d.sum()) + float(e.sum()) + float(f.sum()))
"""


def program(out):
    return PROGRAM.replace("OUT", repr(out))


@functools.cache
def plain():
    """The program run without the recorder."""
    return run([PY, "-c", program(os.path.join(work, "plain.npz"))], cwd=work, env=env)


def test_safetensors_dumps():
    """level 10, safetensors dumps"""
    plain_run = plain()
    p = run([RECORD, "-l", "10", "--safetensors", "-d", "dumps", "-o", "log.txt", "--", PY, "-c",
             program(os.path.join(work, "rec.npz"))], cwd=work, env=env)
    check(p.stdout == plain_run.stdout, "the program prints the same: %r vs %r" % (p.stdout, plain_run.stdout))
    check("Warning" not in p.stderr, "no warning from numpy (floating-point flags kept): %s" % p.stderr)
    x, y = np.load(os.path.join(work, "plain.npz")), np.load(os.path.join(work, "rec.npz"))
    for k in "cdef":
        check(np.array_equal(x[k], y[k]), "result %s identical with and without the recorder" % k)
    check("4 calls recorded in 1 process; 4 dumps" in p.stderr, "summary: %s" % p.stderr)

    dirs = sorted(glob.glob(os.path.join(work, "dumps", "*_call*")))
    names = sorted(re.sub(r".*pid\d+_(.*)_call\d+", r"\1", d) for d in dirs)
    check(names == ["cblas_dgemm", "cblas_sgemm", "cblas_sgemm", "cblas_sgemm"], "dumps: %s" % names)
    outs = {}
    for d in dirs:
        rec = [json.loads(l) for l in open(os.path.join(d, "metadata.jsonl"))][-1]
        out = read_safetensors(os.path.join(d, "inplace.safetensors"), arrays=True)["arg_12"]  # C, written in place
        outs[(rec["function_name"], out.shape)] = out
        check(rec["execution_status"] == "completed", "%s completed" % d)
        check(not glob.glob(os.path.join(d, "outputs.*")) and rec["tensor_info"]["output_tensor_keys"] == []
              and rec["tensor_info"]["inplace_tensor_keys"] == ["arg_12"],
              "%s: the call returns nothing: no outputs file, C in the in-place file" % d)
    check(np.array_equal(outs.get(("cblas_sgemm", (256, 64))), y["c"]), "the recorded C is numpy's c")
    check(np.array_equal(outs.get(("cblas_dgemm", (40, 20))), y["f"]), "the recorded C is numpy's f")
    ev = [o for (fn, shape), o in outs.items() if shape == (40, 4)]
    check(len(ev) == 1 and np.array_equal(ev[0], y["e"]), "the view product")

    p = run([REPLAY, os.path.join(work, "dumps")], check=False)
    check(p.returncode == 0, "mate-replay exit %d: %s%s" % (p.returncode, p.stdout, p.stderr))
    check(p.stdout.count("Passed (bit-exact)") == 4, "four bit-exact replays: %s" % p.stdout)


def test_pt_dumps():
    """level 10, .pt dumps (torch.save's format, strides kept)"""
    p = run([RECORD, "-q", "-l", "10", "-d", "ptdumps", "-o", "/dev/null", "--", PY, "-c",
             program(os.path.join(work, "rec2.npz"))], cwd=work, env=env)
    check(len(glob.glob(os.path.join(work, "ptdumps", "*", "inputs.pt"))) == 4, "four .pt dumps")
    p = run([REPLAY, os.path.join(work, "ptdumps")], check=False)
    check(p.returncode == 0 and p.stdout.count("Passed (bit-exact)") == 4,
          ".pt dumps replay bit-exactly: %s%s" % (p.stdout, p.stderr))


def test_level1():
    """level 1: names only, on stdout by default, after the program's own output is unchanged"""
    plain_run = plain()
    p = run([RECORD, "-l", "1", "-o", "stderr", "--", PY, "-c", program(os.path.join(work, "rec3.npz"))],
            cwd=work, env=env)
    check(p.stdout == plain_run.stdout, "level 1 leaves stdout alone")
    check(p.stderr.count("MATE API Call: cblas_sgemm") == 3 and p.stderr.count("MATE API Call: cblas_dgemm") == 1,
          "level-1 names: %s" % p.stderr)


run_cases(test_safetensors_dumps, test_pt_dumps, test_level1)
