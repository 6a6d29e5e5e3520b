"""test_recorder_values.py: floats and strings are spelled as Python spells them: repr() in the API log,
json.dumps() in the dump records (every record line equals json.dumps(json.loads(line)))."""
import functools
import json
import math
import os
import random
import struct
import sys

from mate_test import build_path, check, run, run_cases, tmpdir


def floats():
    vals = [0.0, -0.0, 0.5, 3.0, 1e-05, 1e-4, 1e16, 1e15, 123456789012345678.0, 0.1, 1 / 3,
            2.5e-308, 5e-324, 1.7976931348623157e308, -1.5, 1e22, 1e-7, 100.0, 9999999999999998.0,
            float("nan"), float("inf"), float("-inf"), 0.30000000000000004, 1e-06, 7.62939453125e-05]
    rnd = random.Random(1234)
    for _ in range(400):
        vals.append(struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0])
        vals.append(rnd.uniform(-1e3, 1e3))
        vals.append(10.0 ** rnd.randint(-30, 30) * rnd.random())
        vals.append(float(rnd.randint(-10**6, 10**6)))
    return vals


STRINGS = ["bf16", "it's", 'say "hi"', "both ' and \"", "back\\slash", "line\nbreak\ttab\r",
           "\x01\x1f\x7f\x1b[0m", "caf\u00e9", "\u4e2d\u6587", "emoji \U0001F600", "nbsp\u00a0x",
           "soft\u00adhyphen", "\u2028sep", "", "   ", "{\"json\": [1, 2]}"]


@functools.cache
def recorded():
    """(the folder of recorder-values' run at level 10 on floats(), STRINGS and int64's
    extremes, the floats)"""
    work = tmpdir()
    fl = floats()
    lines = ["call floats"] + ["f " + v.hex() if math.isfinite(v) else "f " + repr(v) for v in fl]
    lines += ["call strings"] + ["s " + s.encode("utf-8").hex() for s in STRINGS]
    lines += ["call ints", "i 0", "i -9223372036854775808", "i 9223372036854775807"]
    env = dict(os.environ, MATE_LOGLEVEL="10", MATE_LOGDEST=os.path.join(work, "log.txt"),
               MATE_DUMP_DIR=os.path.join(work, "dumps"))
    run([build_path("tests", "recorder-values")], input="\n".join(lines) + "\n", env=env)
    return work, fl


def test_api_log():
    """The API log: the line after "  arg[i]:" is the value at four spaces."""
    work, fl = recorded()
    text = open(os.path.join(work, "log.txt"), encoding="utf-8").read()
    blocks = text.split("MATE API Call: ")[1:]
    check(len(blocks) == 3, "three calls logged, got %d" % len(blocks))
    expected = [[repr(v) for v in fl], [repr(s) for s in STRINGS],
                ["0", "-9223372036854775808", "9223372036854775807"]]
    for block, want in zip(blocks, expected):
        got = []
        ls = block.split("\n")
        for i, l in enumerate(ls):
            if l.startswith("  arg[") and l.endswith("]:"):
                got.append(ls[i + 1][4:])
        check(len(got) == len(want), "%d values logged, want %d" % (len(got), len(want)))
        bad = [(g, w) for g, w in zip(got, want) if g != w]
        check(not bad, "log spelling differs from repr(): %s" % bad[:5])


def test_records():
    """The records: byte-identical to json.dumps of their own parse."""
    work, fl = recorded()
    lines = open(os.path.join(work, "dumps", "session.jsonl"), encoding="ascii").read().splitlines()
    check(len(lines) == 6, "6 records, got %d" % len(lines))
    for line in lines:
        rec = json.loads(line)
        check(json.dumps(rec) == line, "record differs from json.dumps: %s" % line[:200])
    recs = [json.loads(l) for l in lines]
    meta = recs[1]["input_metadata"]
    got = [meta["arg_%d" % i] for i in range(len(fl))]
    bad = [(g, w) for g, w in zip(got, fl)
           if not (g == w and math.copysign(1, g) == math.copysign(1, w)) and not (g != g and w != w)]
    check(not bad, "floats do not round-trip through the record: %s" % bad[:5])
    meta = recs[3]["input_metadata"]
    check([meta["arg_%d" % i] for i in range(len(STRINGS))] == STRINGS, "strings round-trip")
    meta = recs[5]["input_metadata"]
    check([meta["arg_%d" % i] for i in range(3)] == [0, -2**63, 2**63 - 1], "int64 extremes exact")


run_cases(test_api_log, test_records)
