"""test_recorder_inplace.py: a call that writes an argument in place (libmate(3)'s out= pattern, the demo's fused_add_rmsnorm) dumps at level 10 an outputs file holding exactly what it returned, as torch.load reads it and MATE's and FlashInfer's replay compare it (their keys against the return value's), and the post-call values in the in-place file its record names; mate-replay checks both; a dump of the old layout (in-place tensors in outputs.pt) still replays."""
import functools
import glob
import json
import os
import shutil

import torch

from mate_test import build_path, run, check, run_cases, tmpdir

EXAMPLE = build_path("examples", "libmate-example")
DEMO = build_path("examples", "mate-demo")
REPLAY = build_path("src", "replay", "mate-replay")
LIST = build_path("src", "replay", "mate-list-dumps")
work = tmpdir()


def load(path):
    try:
        return torch.load(path, weights_only=True)
    except TypeError:  # a torch without weights_only
        return torch.load(path)


def records(d):
    with open(os.path.join(d, "metadata.jsonl")) as f:
        return [json.loads(l) for l in f]


def replay(d):
    p = run([REPLAY, "--device", "cpu", d], check=False)
    return p.returncode, p.stdout.strip().splitlines()[0] if p.stdout.strip() else p.stderr


def returned_keys(value):
    """The keys FlashInfer's replay_from_dump makes of a return value to
    compare with outputs.pt: a tensor is "result", a tuple's tensors
    "result_<i>", anything else nothing."""
    if isinstance(value, torch.Tensor):
        return {"result"}
    if isinstance(value, (tuple, list)):
        return {"result_%d" % i for i, v in enumerate(value) if isinstance(v, torch.Tensor)}
    return set()


@functools.cache
def test_example():
    """libmate(3)'s example: rmsnorm(x, w, out=y) returns y (once, cached: the cases
    after it change its dump, which it returns: (folder, outputs, in-place tensors))"""
    pt = os.path.join(work, "pt")
    os.mkdir(pt)
    p = run([EXAMPLE], check=False, cwd=pt, env=dict(os.environ, MATE_LOGLEVEL="10", MATE_LOGDEST="/dev/null"))
    check(p.returncode == 0, "libmate-example at level 10: %d %s" % (p.returncode, p.stderr))
    d = glob.glob(os.path.join(pt, "mate_dumps", "*_rmsnorm_call0001"))[0]
    rec = records(d)[-1]
    ti = rec["tensor_info"]
    check(rec["execution_status"] == "completed", "completed")
    check(ti["output_tensor_keys"] == ["result"] and ti["inplace_tensor_keys"] == ["kwarg_out"]
          and ti["inplace_file"] == "inplace.pt", "the record names the in-place file: %r" % ti)
    outs = load(os.path.join(d, "outputs.pt"))
    check(set(outs) == returned_keys(outs["result"]) == {"result"},
          "outputs.pt holds exactly the returned value, as the peers key it: %s" % list(outs))
    inpl = load(os.path.join(d, "inplace.pt"))
    check(list(inpl) == ["kwarg_out"] and torch.equal(inpl["kwarg_out"], outs["result"]),
          "inplace.pt holds out= after the call: %s" % list(inpl))
    check(abs(float(outs["result"][0, 3]) - 1.4606) < 1e-4, "the values: %s" % outs["result"][0])
    check(ti["output_size_bytes"] == 32 and ti["inplace_size_bytes"] == 32
          and ti["total_size_bytes"] == ti["input_size_bytes"] + 64, "sizes: %r" % ti)
    rc, line = replay(d)
    check(rc == 0 and "Passed" in line, "the dump replays: %s" % line)
    p = run([LIST, "-q", d], check=False)
    check("[completed] 3 in, 1 out, 1 in place," in p.stdout, "mate-list-dumps counts it: %s" % p.stdout)
    p = run([LIST, "--details", d], check=False)
    check("  In place: 1\n    kwarg_out: float32 shape (2, 4) stride (4, 1)\n" in p.stdout,
          "--details lists it: %s" % p.stdout)
    return d, outs, inpl


def test_inplace_checked():
    d, outs, inpl = test_example()
    # a changed post-call value is caught through the in-place file
    saved = os.path.join(work, "inplace.pt")
    shutil.copy(os.path.join(d, "inplace.pt"), saved)
    bad = {"kwarg_out": inpl["kwarg_out"].clone()}
    bad["kwarg_out"][1, 2] += 0.5
    torch.save(bad, os.path.join(d, "inplace.pt"))
    rc, line = replay(d)
    check(rc == 1 and "Mismatch: kwarg_out[1, 2]" in line, "a changed in-place tensor: %s" % line)
    # one the record does not list, or a listed one missing, is an error
    torch.save({"kwarg_out": inpl["kwarg_out"], "result": outs["result"]}, os.path.join(d, "inplace.pt"))
    rc, line = replay(d)
    check(rc == 1 and "Error" in line and "'result'" in line, "a stray key in the in-place file: %s" % line)
    os.remove(os.path.join(d, "inplace.pt"))
    rc, line = replay(d)
    check(rc == 1 and "Error" in line and "no inplace.pt" in line, "the in-place file missing: %s" % line)
    shutil.copy(saved, os.path.join(d, "inplace.pt"))


def test_old_layout():
    """the layout of earlier mate versions: in-place tensors in outputs.pt"""
    d, outs, inpl = test_example()
    bad = {"kwarg_out": inpl["kwarg_out"].clone()}
    bad["kwarg_out"][1, 2] += 0.5
    old = os.path.join(work, "old", os.path.basename(d))
    shutil.copytree(d, old)
    os.remove(os.path.join(old, "inplace.pt"))
    torch.save({"result": outs["result"], "kwarg_out": inpl["kwarg_out"]}, os.path.join(old, "outputs.pt"))
    lines = []
    for r in records(d):
        r["tensor_info"].pop("inplace_tensor_keys", None)
        for k in ("inplace_size_bytes", "inplace_size_mb", "inplace_file"):
            r["tensor_info"].pop(k, None)
        if r["execution_status"] == "completed":
            r["tensor_info"]["output_tensor_keys"] = ["result", "kwarg_out"]
            r["tensor_info"]["output_size_bytes"] = 64
        lines.append(json.dumps(r))
    with open(os.path.join(old, "metadata.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    rc, line = replay(old)
    check(rc == 0 and "Passed" in line, "an old-layout dump replays: %s" % line)
    torch.save({"result": outs["result"], "kwarg_out": bad["kwarg_out"]}, os.path.join(old, "outputs.pt"))
    rc, line = replay(old)
    check(rc == 1 and "Mismatch: kwarg_out[1, 2]" in line, "its in-place tensor is still checked: %s" % line)


def test_returns_none():
    """a call that returns None: fused_add_rmsnorm writes input and residual"""
    for st in ("0", "1"):
        root = os.path.join(work, "demo" + st)
        env = dict(os.environ, MATE_LOGLEVEL="10", MATE_LOGDEST="/dev/null", MATE_DUMP_DIR=root,
                   MATE_DUMP_SAFETENSORS=st, MATE_DUMP_INCLUDE="fused_add_rmsnorm",
                   MATE_DEMO_THREADS="1", MATE_DEMO_ROUNDS="1")
        p = run([DEMO], check=False, env=env)
        dirs = glob.glob(os.path.join(root, "*_fused_add_rmsnorm_call*"))
        check(p.returncode == 0 and len(dirs) >= 1, "mate-demo: %d, %d dumps" % (p.returncode, len(dirs)))
        ext = ".safetensors" if st == "1" else ".pt"
        for d in dirs:
            rec = records(d)[-1]
            ti = rec["tensor_info"]
            check(not glob.glob(os.path.join(d, "outputs.*")) and ti["output_tensor_keys"] == []
                  and rec["output_metadata"] == {"result": None},
                  "%s: returned None: no outputs file" % os.path.basename(d))
            check(ti["inplace_tensor_keys"] == ["arg_0", "arg_1"] and ti["inplace_file"] == "inplace" + ext
                  and os.path.exists(os.path.join(d, "inplace" + ext)), "input and residual in place: %r" % ti)
            if st == "0":
                check(sorted(load(os.path.join(d, "inplace.pt"))) == ["arg_0", "arg_1"], "inplace.pt keys")
        p = run([REPLAY, "--device", "cpu", root], check=False)
        check(p.returncode == 0 and "Summary: %d passed, 0 failed" % len(dirs) in p.stdout,
              "they replay: %s" % p.stdout[-300:])
    shutil.rmtree(work)


run_cases(test_example, test_inplace_checked, test_old_layout, test_returns_none)
