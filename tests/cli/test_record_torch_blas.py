"""test_record_torch_blas.py: a PyTorch CPU program (torch 2.x: its own MKL, not the OpenBLAS mate replays on) recorded at level 10 under mate-record replays as Passed within the product's reduction bound, a planted error still fails, and the exported repro.c says the same as mate-replay."""
# mate-python: peers
import functools
import glob
import os
import subprocess
import sys

from mate_test import build_path, check, need_preload, record_env, run, run_cases, src_path, tmpdir

need_preload()
RECORD = build_path("src", "record", "mate-record")
REPLAY = build_path("src", "replay", "mate-replay")
SET = src_path("tests", "tools", "st-set.py")
work = tmpdir()
env = record_env()

# x @ w1 and h @ w2 as the user wrote them: Fortran sgemm_ calls (K 512 and 1024)
PROGRAM = """
import torch
torch.manual_seed(0)
x, w1, w2 = torch.randn(64, 512), torch.randn(512, 1024), torch.randn(1024, 512)
for i in range(2):
    y = (x @ w1) @ w2
print("sum %.3f" % float(y.sum()))
"""


@functools.cache
def record(fmt):
    """Records PROGRAM at level 10 into work/FMT (once): mate-replay's run of it, the dumps."""
    args = [RECORD, "-q", "-l", "10", "-d", fmt, "-o", "/dev/null"]
    if fmt == "safetensors":
        args.append("--safetensors")
    run(args + ["--", sys.executable, "-c", PROGRAM], cwd=work, env=env)
    dumps = sorted(glob.glob(os.path.join(work, fmt, "*_sgemm__call*")))
    check(len(dumps) == 4, "%s: four sgemm_ dumps: %s" % (fmt, dumps))
    p = run([REPLAY, os.path.join(work, fmt)], check=False)
    return p, dumps


def test_mkl_products_pass():
    """torch's MKL sums in another order than OpenBLAS: every call Passes within its bound"""
    for fmt in ("pt", "safetensors"):
        p, _ = record(fmt)
        check(p.returncode == 0 and "4 passed, 0 failed" in p.stdout,
              "%s: mate-replay exit %d: %s%s" % (fmt, p.returncode, p.stdout, p.stderr))
        within = p.stdout.count("within the reduction bound 2 K u s (|A| |B|)ij (K ")
        exact = p.stdout.count("Passed (bit-exact)")
        check(within + exact == 4 and within >= 1,
              "%s: each call bit-exact or within the bound, one at least not bit-exact "
              "(another BLAS): %s" % (fmt, p.stdout))


def test_planted_error_fails():
    """a real error in C (one element off by 1.0) is still a Mismatch, named, beyond the bound"""
    _, dumps = record("safetensors")
    bad = os.path.join(work, "bad")
    os.makedirs(bad, exist_ok=True)
    d = os.path.join(bad, os.path.basename(dumps[0]))
    run(["cp", "-r", dumps[0], d])
    run([sys.executable, SET, os.path.join(d, "inplace.safetensors"), "arg_11", "3", "5", "1.0"])
    p = run([REPLAY, bad], check=False)
    check(p.returncode == 1, "exit 1 for the planted error: %d %s" % (p.returncode, p.stdout))
    check("Mismatch: arg_11[3, 5]:" in p.stdout and "1 of " in p.stdout and
          "plus the reduction bound 2 K u s (|A| |B|)ij (K 512)" in p.stdout,
          "the planted element named, alone, beyond the bound: %s" % p.stdout)


def test_export_agrees():
    """--export's repro.c (OpenBLAS, the recorded buffers) prints mate-replay's line"""
    d = record("safetensors")[1][1]
    want = run([REPLAY, d]).stdout
    want = [l[l.index("] ") + 2:] for l in want.splitlines() if l.startswith("[1] ")]
    ex = os.path.join(work, "ex")
    run([REPLAY, "--export", d, "-o", ex])
    m = subprocess.run(["make", "-s"], cwd=ex, capture_output=True, text=True)
    check(m.returncode == 0, "make in the export: %s%s" % (m.stdout, m.stderr))
    got = run([os.path.join(ex, "repro")], cwd=ex, check=False)
    check(got.returncode == 0 and [got.stdout.strip()] == want,
          "repro says %r (exit %d), mate-replay %r" % (got.stdout, got.returncode, want))


run_cases(test_mkl_products_pass, test_planted_error_fails, test_export_agrees)
