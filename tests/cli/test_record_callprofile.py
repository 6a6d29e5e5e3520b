"""test_record_callprofile.py: mate-record --profile at level 1 of an unmodified numpy program:
the interposed cblas_sgemm calls are grouped by shape (the operands' shapes, the sizes and
flags by value) with their count, and the entry's key is the one `mate-list-dumps --unique`
gives the same call dumped at level 10."""
import functools
import json
import os
import sys

from mate_test import build_path, check, need_preload, run, run_cases, tmpdir

need_preload()
RECORD = build_path("src", "record", "mate-record")
LIST = build_path("src", "replay", "mate-list-dumps")
PROG = """
import numpy as np
a = np.ones((256, 128), np.float32); b = np.ones((128, 64), np.float32)
for i in range(%d):
    a @ b
np.ones((8, 4), np.float32) @ np.ones((4, 2), np.float32)
"""
env = {k: v for k, v in os.environ.items() if not k.startswith("MATE_")}


@functools.cache
def profiled():
    """(the folder, the rows of the profile of PROG's 6 calls)"""
    work = tmpdir()
    run([RECORD, "-q", "-o", "/dev/null", "--profile", "prof.jsonl", "--", sys.executable, "-c",
         PROG % 5], cwd=work, env=env)
    return work, [json.loads(x) for x in open(os.path.join(work, "prof.jsonl"))]


def test_grouped_by_shape():
    rows = profiled()[1]
    calls = sorted((r["function"], r["calls"]) for r in rows)
    check(calls == [("cblas_sgemm", 1), ("cblas_sgemm", 5)], "two shapes, 5 and 1 calls: %s" % calls)
    big = [r for r in rows if r["calls"] == 5]
    shapes = sorted(t["shape"] for t in big[0]["tensors"].values()) if big else []
    check(shapes == [[128, 64], [256, 64], [256, 128]], "the operands' shapes: %s" % shapes)
    check(big and big[0]["scalars"].get("arg_3") == 256, "m by value: %s" % (big[0] if big else None))


def test_keys_of_dumps():
    work, rows = profiled()
    run([RECORD, "-q", "-l", "10", "-o", "/dev/null", "-d", "dumps", "--", sys.executable, "-c",
         PROG % 1], cwd=work, env=env)
    p = run([LIST, "-q", "--unique", "--jsonl", "dumps"], cwd=work)
    disk = sorted((json.loads(x)["key"], json.loads(x)["calls"]) for x in p.stdout.splitlines())
    check(sorted(r["key"] for r in rows) == [k for k, _ in disk],
          "the profile's keys are the dumps': %s %s" % ([r["key"] for r in rows], disk))


run_cases(test_grouped_by_shape, test_keys_of_dumps)
