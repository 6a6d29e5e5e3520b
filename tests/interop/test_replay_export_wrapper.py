# mate-python: peers
"""test_replay_export_wrapper.py: mate-replay --export of a wrapper's run (FlashInfer's BatchDecodeWithPagedKVCacheWrapper, the peers' torch reference under FlashInfer's real decorator: __init__, plan, run, plan again, run again, another object between) writes a repro.py (and for its second plan) that makes the object again from its recorded __init__, replays its calls before the run in order (the latest plan last), runs it and gives mate-replay's verdict: passed (exit 0), and a planted wrong output element as the same mismatch at the same index (exit 1); the README lists the sequence; a root without the object's plan or __init__ is refused (exit 1, nothing written)."""
import json
import os
import shutil
import sys

from mate_test import (build_path, check, flashinfer_main, flashinfer_record, run, run_cases, src_path,
                       tmpdir)

REPLAY = build_path("src", "replay", "mate-replay")


def record():
    import torch
    from flashinfer_peer import load_api_logging
    from flashinfer_attn_ref import decorate

    fi = decorate(load_api_logging())
    gen = torch.Generator().manual_seed(33)
    ws = torch.empty(1 << 12, dtype=torch.uint8)
    Hq, Hk, D, P = 4, 2, 64, 4

    def table(lens, extra=2):
        counts = [(n + P - 1) // P for n in lens]
        total = sum(counts) + extra
        indptr = torch.tensor([0] + list(torch.cumsum(torch.tensor(counts), 0)), dtype=torch.int32)
        last = torch.tensor([n - (c - 1) * P for n, c in zip(lens, counts)], dtype=torch.int32)
        perm = torch.randperm(total, generator=gen).to(torch.int32)
        return indptr, perm[:int(indptr[-1])].contiguous(), last, total

    w = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, "NHD")                 # 1
    indptr, indices, last, npages = table([5, 9])
    w.plan(indptr, indices, last, Hq, Hk, D, P, q_data_type=torch.float32)   # 2
    kv = torch.randn(npages, 2, P, Hk, D, generator=gen)
    w.run(torch.randn(2, Hq, D, generator=gen), kv)                          # 3
    other = fi["BatchDecodeWithPagedKVCacheWrapper"](ws, "HND")              # 4
    indptr, indices, last, npages = table([7, 2, 11])
    w.plan(indptr, indices, last, Hq, Hk, D, P, q_data_type=torch.float32,   # 5
           logits_soft_cap=2.5)
    kv = torch.randn(npages, 2, P, Hk, D, generator=gen)
    w.run(torch.randn(3, Hq, D, generator=gen), kv, return_lse=True)         # 6
    del other


flashinfer_main(record)
TMP = tmpdir()
ROOT, DIRS = flashinfer_record(__file__, TMP, 6)
ENV = dict(os.environ, PYTHONPATH=src_path("tests", "interop", "peers"), CUDA_VISIBLE_DEVICES="")
RUN = DIRS[5]     # the second run, in call order (the names start with the time)


def verdict(dump):
    """mate-replay --jsonl of dump's whole root: the dump's verdict object."""
    p = run([REPLAY, "--jsonl", os.path.dirname(dump)], check=False)
    vs = {v["dir"]: v for v in map(json.loads, p.stdout.splitlines())}
    return vs.get(os.path.basename(dump), {"verdict": "none", "message": p.stderr})


def export(dump, name):
    out = os.path.join(TMP, name)
    p = run([REPLAY, "--export", dump, "-o", out], check=False)
    check(p.returncode == 0, "export of %s: exit %d: %s" % (dump, p.returncode, p.stderr))
    return out


def repro(out):
    p = run([sys.executable, os.path.join(out, "repro.py"), "--device", "cpu"], check=False,
            cwd="/", env=ENV)
    return p.returncode, (p.stdout.strip() or p.stderr.strip())


def copy_root(name, skip=()):
    """A copy of the recorded root, less the dumps at the indexes in skip."""
    root = os.path.join(TMP, name)
    os.makedirs(root)
    for i, d in enumerate(DIRS):
        if i not in skip:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(root, d))
    for f in os.listdir(ROOT):
        if os.path.isfile(os.path.join(ROOT, f)):
            shutil.copy(os.path.join(ROOT, f), root)
    return root


def test_sequence():
    check(RUN.endswith("BatchDecodeWithPagedKVCacheWrapper.run_call0002"), "dump 6 is %s" % RUN)
    v = verdict(os.path.join(ROOT, RUN))
    check(v["verdict"] == "passed", "mate-replay: %s" % v)
    out = export(os.path.join(ROOT, RUN), "pass")
    if not os.path.isfile(os.path.join(out, "repro.py")):
        return
    text = open(os.path.join(out, "repro.py")).read()
    check("MODULE = _s(b'flashinfer_attn_ref')" in text and
          "CLASS = _s(b'BatchDecodeWithPagedKVCacheWrapper')" in text and "NAME = _s(b'run')" in text,
          "repro.py does not make flashinfer_attn_ref.BatchDecodeWithPagedKVCacheWrapper")
    readme = open(os.path.join(out, "README")).read()
    seq = [l.split()[1:3] for l in readme.splitlines() if l[:5].strip().rstrip(".").isdigit()]
    want = [["__init__", DIRS[0]], ["plan", DIRS[1]], ["run", DIRS[2]], ["plan", DIRS[4]],
            ["run", RUN]]
    check(seq == want, "README's sequence %s, expected %s" % (seq, want))
    for f in ("call1_inputs.pt", "call2_inputs.pt", "call4_inputs.pt", "inputs.pt", "outputs.pt"):
        check(os.path.isfile(os.path.join(out, f)), "%s has no %s" % (out, f))
    rc, line = repro(out)
    check(rc == 0 and ": Passed (" in line, "repro.py: exit %d: %s" % (rc, line))
    out = export(os.path.join(ROOT, DIRS[4]), "plan")     # the second plan: after init, plan, run
    rc, line = repro(out)
    check(rc == 0 and "BatchDecodeWithPagedKVCacheWrapper.plan (" in line and ": Passed (" in line,
          "the plan's repro.py: exit %d: %s" % (rc, line))


def test_mismatch():
    import torch
    root = copy_root("planted")
    path = os.path.join(root, RUN, "outputs.pt")
    t = torch.load(path, weights_only=True)
    key = "result_0" if "result_0" in t else "result"
    t[key][1, 2, 7] += 0.5
    torch.save(t, path)
    v = verdict(os.path.join(root, RUN))
    where = "[1, 2, 7]"
    check(v["verdict"] == "mismatch" and v.get("key") == key and v.get("first_bad_index") == where,
          "mate-replay: %s" % v)
    out = export(os.path.join(root, RUN), "bad")
    rc, line = repro(out)
    check(rc == 1 and ": Mismatch: " + key + where + ": expected" in line,
          "repro.py: exit %d: %s" % (rc, line))


def test_refused():
    for name, skip, what in (("noplan", (1, 4), "no BatchDecodeWithPagedKVCacheWrapper.plan"),
                             ("noinit", (0,), "no BatchDecodeWithPagedKVCacheWrapper.__init__")):
        root = copy_root(name, skip)
        out = os.path.join(TMP, "out-" + name)
        p = run([REPLAY, "--export", os.path.join(root, RUN), "-o", out], check=False)
        check(p.returncode == 1 and p.stderr.startswith("mate-replay: ") and what in p.stderr,
              "%s: exit %d: %s" % (name, p.returncode, p.stderr))
        check(not os.path.exists(out), "%s: a folder was written for a refused export" % name)
    check(not [f for f in os.listdir(TMP) if ".export-" in f], "a temporary folder is left")


run_cases(test_sequence, test_mismatch, test_refused)
