"""replay-reference.py: the MATE reference dumps as written (.pt files) list with their tensors' headers and replay through the reference plugin; crashes is a reproduced failure."""
import os

from mate_test import build_path, src_path, run, check, run_cases

FIXTURE = src_path("tests", "fixtures", "mate-reference", "mate_dumps")
LIST = build_path("src", "replay", "mate-list-dumps")
PLUGIN = build_path("tests", ".libs", "plugin-reference.so")
RP = ([build_path("src", "replay", "mate-replay"), "--plugin", PLUGIN] if os.path.exists(PLUGIN)
      else [build_path("tests", "mate-replay-ref")])


def test_details():
    """--details reads every tensor file's header cleanly"""
    p = run([LIST, "--details", FIXTURE], check=False)
    check(p.returncode == 0 and "Problem" not in p.stdout, "--details on .pt: exit 0, no problems: %r" % p.stderr)
    check("    arg_1: float32 shape (32, 8) stride (1, 32)\n" in p.stdout, "the .pt header keeps gemm's strides")
    check("    result: bfloat16 shape (4, 64) stride (64, 1)\n" in p.stdout, "bf16 output listed")


def test_replay():
    names = sorted(d for d in os.listdir(FIXTURE) if d != "session.jsonl")
    # the order they replay in, the calls': MATE's session.jsonl has no_args called before int_ops
    # in the same millisecond (names[6] and names[7] by name)
    names[6:8] = names[7], names[6]
    p = run(RP + [FIXTURE], check=False)
    lines = p.stdout.splitlines()
    print(p.stdout)
    check(p.returncode == 0, "exit 0: passes and the crash reproduced (%d)" % p.returncode)
    for i, n in enumerate(names[:-1]):
        check(any(l.startswith("[%d] " % (i + 1)) and "(%s): Passed" % n in l for l in lines), "%s passes" % n)
    check(any("crashes" in l and "Reproduced the failure: RuntimeError: crashes with code 11" in l for l in lines),
          "crashes reproduced")
    check("Summary: 8 passed, 1 failed (1 reproduced failure)" in lines, "summary")


run_cases(test_details, test_replay)
