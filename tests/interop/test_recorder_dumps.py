"""test_recorder_dumps.py: the level-10 dumps of recorder-golden against MATE's reference dumps.

Every record parses with json.loads and equals json.dumps of its parse; records have MATE's keys in
MATE's order and the same values, apart from run-specific ones (timestamp, process_id, dump_dir,
versions), the structured form mate writes for containers, and mate's extra "failed" record.
torch.load(weights_only=True) returns the reference tensors
under MATE's keys with their strides; with MATE_DUMP_SAFETENSORS=1 the .safetensors files hold
contiguous copies of them."""
import ast
import functools
import json
import os
import re

from mate_test import build_path, check, read_safetensors, run, run_cases, src_path, tmpdir

REF = src_path("tests", "fixtures", "mate-reference", "mate_dumps")
NAME = re.compile(r"^(\d{8}_\d{6}_\d{3})_pid(\d+)_(.+)_call(\d{4,})$")


def structured(v):
    """Both container forms (MATE's repr string, FlashInfer's items) as Python values."""
    if isinstance(v, dict) and v.get("type") in ("list", "tuple", "dict"):
        if "value" in v:
            return ast.literal_eval(v["value"])
        if v["type"] == "dict":
            return {structured(i["key"]): structured(i["value"]) for i in v["items"]}
        items = [structured(i) for i in v["items"]]
        return tuple(items) if v["type"] == "tuple" else items
    return v


def compare(mine, ref, where):
    check(list(mine) == list(ref), "%s: keys %s, MATE has %s" % (where, list(mine), list(ref)))
    for key in ref:
        a, b = mine.get(key), ref[key]
        if key in ("timestamp", "process_id", "dump_dir", "versions"):
            continue
        if key in ("input_metadata", "output_metadata"):
            check(list(a) == list(b), "%s.%s keys %s != %s" % (where, key, list(a), list(b)))
            for k in b:
                check(structured(a.get(k)) == structured(b[k]),
                      "%s.%s.%s: %r != %r" % (where, key, k, a.get(k), b[k]))
        elif key in ("tensor_info", "tensor_details"):
            check(list(a) == list(b), "%s.%s keys %s != %s" % (where, key, list(a), list(b)))
            check(a == b, "%s.%s: %r != %r" % (where, key, a, b))
        else:
            check(a == b, "%s.%s: %r != %r" % (where, key, a, b))


def load_lines(path):
    lines = open(path, encoding="ascii").read().splitlines()
    recs = []
    for line in lines:
        rec = json.loads(line)
        check(json.dumps(rec) == line, "%s: line is not json.dumps' spelling" % path)
        recs.append(rec)
    return recs


def pairs(root):
    """(mine, MATE's) dump directories of the same function and call number."""
    key = lambda d: NAME.match(d).group(3, 4)
    ref = {key(d): d for d in os.listdir(REF) if NAME.match(d)}
    return [(d, ref[key(d)]) for d in sorted(os.listdir(root)) if NAME.match(d) and key(d) in ref]


def check_tensors(root):
    import torch
    for m, r in pairs(root):
        for f in ("inputs.pt", "outputs.pt"):
            rp, mp = os.path.join(REF, r, f), os.path.join(root, m, f)
            check(os.path.exists(rp) == os.path.exists(mp), "%s/%s present as in MATE's dump" % (m, f))
            if not os.path.exists(rp) or not os.path.exists(mp):
                continue
            a = torch.load(mp, weights_only=True)
            b = torch.load(rp, weights_only=True)
            check(list(a) == list(b), "%s/%s keys %s != %s" % (m, f, list(a), list(b)))
            for k in b:
                if k not in a:
                    continue
                x, y = a[k], b[k]
                same = (x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride()
                        and torch.equal(x.contiguous().view(torch.uint8) if x.dtype != torch.bool else x,
                                        y.contiguous().view(torch.uint8) if y.dtype != torch.bool else y))
                check(same, "%s/%s[%s]: %s %s %s != %s %s %s" % (m, f, k, x.dtype, tuple(x.shape),
                      x.stride(), y.dtype, tuple(y.shape), y.stride()))


ST_DTYPES = {"F32": "torch.float32", "F16": "torch.float16", "BF16": "torch.bfloat16",
             "I32": "torch.int32", "I64": "torch.int64"}


def test_safetensors():
    """MATE_DUMP_SAFETENSORS=1: contiguous copies of the reference tensors."""
    import torch
    work = tmpdir()
    p = run([build_path("tests", "recorder-golden"),
             src_path("tests", "fixtures", "recorder", "golden-tensors.bin")],
            cwd=work, env=dict(os.environ, MATE_LOGLEVEL="10", MATE_LOGDEST="stderr",
                               MATE_DUMP_SAFETENSORS="1"))
    root = os.path.join(work, "mate_dumps")
    recs = load_lines(os.path.join(root, "session.jsonl"))
    check(all(r["tensor_format"] == "safetensors" for r in recs), "tensor_format is safetensors")
    for m, r in pairs(root):
        check(not os.path.exists(os.path.join(root, m, "inputs.pt")), "%s: no .pt file" % m)
        for kind in ("inputs", "outputs"):
            rp, mp = os.path.join(REF, r, kind + ".pt"), os.path.join(root, m, kind + ".safetensors")
            check(os.path.exists(rp) == os.path.exists(mp), "%s/%s.safetensors as MATE's %s.pt" % (m, kind, kind))
            if not os.path.exists(rp) or not os.path.exists(mp):
                continue
            got, want = read_safetensors(mp), torch.load(rp, weights_only=True)
            # safetensors orders tensors canonically (by alignment, then name)
            check(sorted(got) == sorted(want), "%s/%s keys %s != %s" % (m, kind, list(got), list(want)))
            for k, t in want.items():
                dt, shape, data = got.get(k, (None, None, b""))
                ok = (ST_DTYPES.get(dt) == str(t.dtype) and shape == list(t.shape)
                      and data == bytes(t.contiguous().view(torch.uint8).numpy()))
                check(ok, "%s/%s.safetensors[%s] differs from MATE's tensor" % (m, kind, k))


@functools.cache
def golden():
    """recorder-golden's dumps at level 10: their root."""
    work = tmpdir()
    run([build_path("tests", "recorder-golden"),
         src_path("tests", "fixtures", "recorder", "golden-tensors.bin")],
        cwd=work, env=dict(os.environ, MATE_LOGLEVEL="10", MATE_LOGDEST="stderr"))
    return os.path.join(work, "mate_dumps")


def test_records():
    root = golden()
    mine = load_lines(os.path.join(root, "session.jsonl"))
    ref = [json.loads(l) for l in open(os.path.join(REF, "session.jsonl"))]
    check(len(mine) == len(ref) + 1, "%d records, MATE wrote %d (+1 failed)" % (len(mine), len(ref)))
    for i, (a, b) in enumerate(zip(mine, ref)):
        compare(a, b, "record %d (%s)" % (i, b["function_name"]))
    last = mine[-1]
    check(last["execution_status"] == "failed" and last["function_name"] == "crashes",
          "the failing call ends with a failed record")
    check(list(last)[-3:] == ["execution_status", "error", "dump_dir"], "error after execution_status")

    # Directory names, call counters, per-dump metadata.jsonl = the session's lines.
    dirs = sorted(d for d in os.listdir(root) if d != "session.jsonl")
    ref_dirs = sorted(d for d in os.listdir(REF) if d != "session.jsonl")
    check(len(dirs) == 9, "9 dump directories, got %d" % len(dirs))
    key = lambda d: NAME.match(d).group(3, 4)
    check(sorted(map(key, dirs)) == sorted(map(key, ref_dirs)), "function and call numbers as MATE's")
    for d in dirs:
        m = NAME.match(d)
        check(m is not None and int(m.group(2)) == mine[0]["process_id"], "name of %s" % d)
        recs = load_lines(os.path.join(root, d, "metadata.jsonl"))
        check(recs == [r for r in mine if r["dump_dir"] == "mate_dumps/" + d],
              "%s/metadata.jsonl holds its session records" % d)
        check(recs[0]["timestamp"] == m.group(1), "%s: timestamp of the name" % d)


def test_tensors():
    check_tensors(golden())


run_cases(test_records, test_tensors, test_safetensors)
