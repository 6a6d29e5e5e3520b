# mate-python: peers
"""test_fi_call_order.py: calls of one process in one millisecond replay in the order they
were made, which session.jsonl gives and folder names cannot. A decode wrapper recorded by
FlashInfer's real decorator as plan(P1), run, plan(P2), run, with the first run and the
second plan put in one millisecond (their folders and records renamed as a fast machine
names them): "run" sorts after "plan" by name, so a replay in name order runs the first
run on P2, a false mismatch. With session.jsonl every call passes; without it mate-replay
says that the order of those calls is not known."""
import json
import os
import shutil
import subprocess

import functools

from mate_test import (build_path, check, flashinfer_main, flashinfer_record, run, run_cases, tmpdir,
                       wait_seconds)


def record():
    import torch

    import flashinfer_attn_ref as ref
    from flashinfer_peer import load_api_logging

    fi = ref.decorate(load_api_logging())
    gen = torch.Generator().manual_seed(2)
    kv = torch.randn(6, 2, 4, 2, 16, generator=gen).to(torch.bfloat16)   # 6 pages of 4, NHD
    q = torch.randn(2, 4, 16, generator=gen).to(torch.bfloat16)
    w = fi["BatchDecodeWithPagedKVCacheWrapper"](torch.empty(16, dtype=torch.uint8), "NHD")
    i32 = torch.int32
    w.plan(torch.tensor([0, 3, 6], dtype=i32), torch.arange(6, dtype=i32), torch.tensor([4, 2], dtype=i32),
           4, 2, 16, 4, q_data_type="bfloat16")
    w.run(q, kv)
    # P2: other pages, other lengths: a run on P2 gives another result
    w.plan(torch.tensor([0, 1, 3], dtype=i32), torch.tensor([5, 1, 0], dtype=i32),
           torch.tensor([1, 3], dtype=i32), 4, 2, 16, 4, q_data_type="bfloat16")
    w.run(q, kv)


flashinfer_main(record)

REPLAY = build_path("src", "replay", "mate-replay")


@functools.cache
def recorded():
    """The calls recorded, the first run renamed into the second plan's millisecond:
    (tmp, root, the run's folder, the plan's), or None when they are not there (checked)."""
    tmp = tmpdir()
    root, dirs = flashinfer_record(__file__, tmp, 5)   # __init__, plan, run, plan, run
    run1 = [d for d in dirs if d.endswith(".run_call0001")]
    plan2 = [d for d in dirs if d.endswith(".plan_call0002")]
    check(len(run1) == 1 and len(plan2) == 1, "the first run and the second plan: %s" % dirs)
    if not (len(run1) == 1 and len(plan2) == 1):
        return None
    run1, plan2 = run1[0], plan2[0]
    # one millisecond for both: the first run's folder and records take the plan's timestamp
    ts = plan2[:19]
    new = ts + run1[19:]
    if new != run1:
        os.rename(os.path.join(root, run1), os.path.join(root, new))
        for path in (os.path.join(root, "session.jsonl"), os.path.join(root, new, "metadata.jsonl")):
            with open(path) as f:
                lines = [json.loads(ln) for ln in f if ln.strip()]
            for r in lines:
                if str(r.get("dump_dir", "")).endswith(run1):
                    r["dump_dir"] = r["dump_dir"][:-len(run1)] + new
                    r["timestamp"] = ts
            with open(path, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in lines))
        run1 = new
    check(sorted([run1, plan2])[0] == plan2, "by name the plan comes first: %s %s" % (plan2, run1))
    return tmp, root, run1, plan2


def replay(path):
    p = run([REPLAY, "--device", "cpu", "--jsonl", path], check=False)
    return {v["dir"]: v for v in map(json.loads, p.stdout.splitlines())}, p.stderr


@functools.cache
def bare_root():
    """A copy of the root without session.jsonl."""
    tmp, root = recorded()[:2]
    bare = os.path.join(tmp, "bare")
    shutil.copytree(root, bare)
    os.unlink(os.path.join(bare, "session.jsonl"))
    return bare


def test_session_order():
    if recorded() is None:
        return
    verdicts, err = replay(recorded()[1])
    check(len(verdicts) == 5 and all(v["verdict"] == "passed" for v in verdicts.values()),
          "in session.jsonl's order every call passes: %s" %
          ["%s %s %s" % (d[24:], v["verdict"], v["message"][:80]) for d, v in sorted(verdicts.items())])
    check("no session.jsonl" not in err, "no word of an unknown order: %r" % err)


def test_unknown_order():
    """without session.jsonl the order is not known: mate-replay says so, naming the calls"""
    if recorded() is None:
        return
    run1, plan2 = recorded()[2:]
    verdicts, err = replay(bare_root())
    check("2 calls share a millisecond with another call of their process and no session.jsonl "
          "gives their order" in err and plan2 in err and run1 in err,
          "the unknown order is named: %r" % err)


def test_planted_session():
    """a session.jsonl that is a FIFO or a link (a co-user's plant in a shared root) is not read:
    no block, no order taken from elsewhere"""
    if recorded() is None:
        return
    tmp, root = recorded()[:2]
    for kind in ("fifo", "link"):
        planted = os.path.join(tmp, kind)
        shutil.copytree(bare_root(), planted)
        s = os.path.join(planted, "session.jsonl")
        if kind == "fifo":
            os.mkfifo(s)
        else:
            os.symlink(os.path.join(root, "session.jsonl"), s)
        try:
            p = subprocess.run([REPLAY, "--device", "cpu", "--jsonl", planted], capture_output=True,
                               text=True, timeout=wait_seconds())
            check("no session.jsonl gives their order" in p.stderr,
                  "a %s session.jsonl is not read: %r" % (kind, p.stderr))
        except subprocess.TimeoutExpired:
            check(False, "a %s session.jsonl blocks mate-replay" % kind)


run_cases(test_session_order, test_unknown_order, test_planted_session)
