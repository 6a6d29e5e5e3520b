# mate-python: peers
"""test_flashinfer_logtext.py: with FlashInfer's identity, libmate's API log at levels 1, 3 and 5 is FlashInfer's decorator's, byte for byte, on the same calls; FLASHINFER_* configure it, from mate_set_identity() and from mate-record --identity."""
import os
import re
import subprocess
import sys

from mate_test import build_path, check, run, run_cases, src_path, tmpdir

GOLDEN = build_path("tests", "recorder-golden")
TENSORS = src_path("tests", "fixtures", "recorder", "golden-tensors.bin")
TWIN = src_path("tests", "interop", "peers", "golden_twin.py")
TMP = tmpdir()
RULE = "=" * 80


def mask(text):
    """Timestamps; the system-information block's lines (each side describes itself);
    FlashInfer's own warning that its CUDA-graph statistics kernel cannot be built here."""
    out, rules = [], 0
    for line in text.split("\n"):
        if line == RULE:
            rules += 1
        elif rules == 2 and len(out) > 2 and not line.startswith("["):
            continue   # inside the system-information block
        if line.startswith("Failed to build api_log_stats kernel"):
            continue
        out.append(re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]", "[TIME]", line))
    return "\n".join(out)


def same_log(level):
    """libmate's API log at level is FlashInfer's decorator's, byte for byte."""
    fi_log, mate_log = os.path.join(TMP, "fi%d.log" % level), os.path.join(TMP, "mate%d.log" % level)
    env = dict(os.environ, FLASHINFER_LOGLEVEL=str(level), FLASHINFER_LOGDEST=fi_log,
               PYTHONPATH=src_path("tests", "interop", "peers"))
    p = subprocess.run([sys.executable, TWIN, TENSORS], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "level %d: FlashInfer's side: %s" % (level, p.stderr[-1500:]))
    env = dict(os.environ, FLASHINFER_LOGLEVEL=str(level), FLASHINFER_LOGDEST=mate_log)
    env.pop("MATE_LOGLEVEL", None)
    p = run([GOLDEN, TENSORS, "FLASHINFER:FlashInfer"], check=False, env=env, cwd=TMP)
    check(p.returncode == 0, "level %d: recorder-golden: %s" % (level, p.stderr))
    with open(fi_log) as f:
        want = mask(f.read())
    with open(mate_log) as f:
        got = f.read()
    check(mask(got) == want, "level %d: mate's log differs from FlashInfer's:\n%s" % (level, "\n".join(
        "%s | %s" % (a, b) for a, b in zip(want.split("\n"), mask(got).split("\n")) if a != b)[:3000]))
    check(got.count("FlashInfer API Call: ") == 9, "level %d: %d calls logged" % (level, got.count("FlashInfer API Call: ")))
    check("FlashInfer API Logging - System Information" in got and "va_range" not in got,
          "level %d: FlashInfer's header title and no va_range" % level)


def test_level1():
    same_log(1)


def test_level3():
    same_log(3)


def test_level5():
    same_log(5)


def test_record_identity():
    """mate-record --identity: an unmodified program, FLASHINFER_* read, the default folder flashinfer_dumps
    (a static-only build, as the sanitizer one, has no preload library: that part is left out)."""
    if not os.path.exists(build_path(".libs", "libmate-preload.so")):
        print("note: no libmate-preload.so (a static-only build): mate-record --identity not run")
    else:
        prog = build_path("tests", "record-blas-prog")
        work = os.path.join(TMP, "record")
        os.makedirs(work)
        env = dict(os.environ, FLASHINFER_DUMP_MAX_COUNT="2")
        env.pop("MATE_LOGLEVEL", None)
        p = run([build_path("src", "record", "mate-record"), "--identity", "FLASHINFER:FlashInfer", "-l", "10",
                 "-o", os.path.join(work, "log"), prog], check=False, env=env, cwd=work)
        check(p.returncode == 0, "mate-record --identity: exit %d: %s" % (p.returncode, p.stderr))
        with open(os.path.join(work, "log")) as f:
            log = f.read()
        check("FlashInfer API Call: cblas_sgemm" in log and "MATE API" not in log, "mate-record --identity: the log's name")
        dumps = sorted(os.listdir(os.path.join(work, "flashinfer_dumps"))) if os.path.isdir(os.path.join(work, "flashinfer_dumps")) else []
        check(len([d for d in dumps if "_call" in d]) == 2,
              "FLASHINFER_DUMP_MAX_COUNT=2 in flashinfer_dumps: %s" % dumps)
        check("FLASHINFER_DUMP_MAX_COUNT=2" in p.stderr, "the limit's warning names FLASHINFER_DUMP_MAX_COUNT: %s" % p.stderr)


run_cases(test_level1, test_level3, test_level5, test_record_identity)
