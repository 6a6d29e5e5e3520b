# mate-python: peers
"""test_fi_replay_norm_silu.py: FlashInfer's fused_rmsnorm_silu (bf16 output, and float8 e4m3fn through out=) called on a torch reference under FlashInfer's real decorator at level 10 replays as passed; a changed element and a NaN are mismatches at their index."""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))


def record():
    import torch

    from flashinfer_ops21 import decorate
    from flashinfer_peer import load_api_logging

    fi = decorate(load_api_logging(), ["fused_rmsnorm_silu"])
    torch.manual_seed(11)
    x, w = torch.randn(9, 160, dtype=torch.bfloat16), torch.randn(160, dtype=torch.bfloat16)
    fi["fused_rmsnorm_silu"](x, w)                                                  # 1
    fi["fused_rmsnorm_silu"](x, w, 1e-5, out=torch.empty(9, 160, dtype=torch.float8_e4m3fn))


if len(sys.argv) > 1 and sys.argv[1] == "--record":
    record()
    sys.exit(0)

import torch  # noqa: E402

from mate_test import (check, done, find_dump, flashinfer_record,  # noqa: E402
                       replay_jsonl, tmpdir)

TMP = tmpdir()
NCALLS = 2

root, dirs = flashinfer_record(__file__, TMP, NCALLS)


def replay(path):
    return replay_jsonl(path)


def find(suffix):
    return find_dump(dirs, suffix)


verdicts = replay(root)
check(sorted(verdicts) == dirs, "mate-replay replayed %d of %d dumps" % (len(verdicts), len(dirs)))
for d, v in sorted(verdicts.items()):
    check(v["verdict"] == "passed", "%s: %s replays as %s: %s" % (d, v["function"], v["verdict"],
                                                                  v["message"]))


def mutated(dump, change, fname="outputs.pt"):
    mroot = os.path.join(TMP, "m%d" % len(os.listdir(TMP)))
    os.makedirs(mroot)
    shutil.copytree(os.path.join(root, dump), os.path.join(mroot, dump))
    path = os.path.join(mroot, dump, fname)
    t = torch.load(path, weights_only=True)
    change(t)
    torch.save(t, path)
    return replay(mroot).get(dump, {})


def expect(what, v, where):
    msg = v.get("message") or ""
    check(v.get("verdict") == "mismatch" and where in msg,
          "%s: replays as %s, expected a mismatch naming %s: %s" % (what, v.get("verdict"), where, msg))


def setitem(key, idx, value):
    def change(t):
        t[key][idx] = value(t[key][idx])
    return change


expect("one element", mutated(find("fused_rmsnorm_silu_call0001"),
       setitem("result", (4, 33), lambda x: x + 0.5)), "result[4, 33]")
expect("a NaN in the fp8 output", mutated(find("fused_rmsnorm_silu_call0002"),
       setitem("result", (8, 159), lambda x: float("nan"))), "result[8, 159]")
done()
