"""replay-hostile.py: hostile tensor files in dumps: mate-list-dumps -d and mate-replay read them with one reader and give one verdict; memory stays under MATE_MAX_MEMORY (issue 19, items 16, 18, 19)."""
import json
import os
import struct
import subprocess

import torch

from mate_test import build_path, check, run_cases, tmpdir
from replay_dumps import write_dump

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
TIME = "/usr/bin/time"


def run(args, env=None):
    """Runs a tool; (exit status, stdout, stderr, peak RSS in KiB or None)."""
    e = dict(os.environ, **(env or {}))
    rss = None
    if os.path.exists(TIME):
        out = os.path.join(tmpdir(), "rss")
        args = [TIME, "-f", "%M", "-o", out] + args
    p = subprocess.run(args, capture_output=True, text=True, env=e)
    if os.path.exists(TIME):
        with open(out) as f:
            rss = int(f.read().split()[-1])
    return p.returncode, p.stdout, p.stderr, rss


def st_file(path, header, data=b"", raw=None):
    """A safetensors file with this header (a dict, or raw JSON text)."""
    h = (raw if raw is not None else json.dumps(header)).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def one_dump(root, seq, fn="hostile_op", fmt="safetensors"):
    """A dump whose record lists arg_0 (float32, [4]); its tensor file is replaced by the caller."""
    name = write_dump(root, seq, fn, {"arg_0": torch.zeros(4)}, status="inputs_saved", fmt=fmt)
    return os.path.join(root, name)


def verdicts(root, env=None):
    """{dump name: (list-dumps problem, replay message)} for every dump of root."""
    rc, out, err, _ = run([LIST, "-d", "--jsonl", root], env)
    problems = {os.path.basename(json.loads(l)["path"]): json.loads(l).get("problem") or ""
                for l in out.splitlines()}
    rc, out, err, _ = run([REPLAY, "--jsonl", root], env)
    msgs = {json.loads(l)["dir"]: (json.loads(l)["verdict"], json.loads(l)["message"])
            for l in out.splitlines()}
    return problems, msgs


def test_rejected_files():
    """item 18: what replay rejects, -d reports, with the same words"""
    root = tmpdir()
    cases = {}
    d = one_dump(root, 1)
    st_file(os.path.join(d, "inputs.safetensors"),
            {"arg_0": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
             "arg_1": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, b"\0" * 24)
    cases[os.path.basename(d)] = "InvalidOffset"
    d = one_dump(root, 2)
    st_file(os.path.join(d, "inputs.safetensors"),
            {"arg_0": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 16)
    cases[os.path.basename(d)] = "unknown dtype"
    d = one_dump(root, 3)
    st_file(os.path.join(d, "inputs.safetensors"), None, b"\0" * 16,
            raw='{"arg_0":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
                '"arg_0":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}')
    cases[os.path.basename(d)] = "duplicate"
    d = one_dump(root, 4)
    st_file(os.path.join(d, "inputs.safetensors"),
            {"__metadata__": {"format": 5}, "arg_0": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
            b"\0" * 16)
    cases[os.path.basename(d)] = "__metadata__"
    d = one_dump(root, 5)
    with open(os.path.join(d, "inputs.safetensors"), "wb") as f:
        f.write(b"\x10\0\0")
    cases[os.path.basename(d)] = "HeaderTooSmall"
    problems, msgs = verdicts(root)
    for name, want in cases.items():
        p, (v, m) = problems.get(name, ""), msgs.get(name, ("?", ""))
        check(want in p and "Input/output error" not in p, "-d on %s: %r lacks %r" % (name, p, want))
        check(v == "error" and want in m, "replay of %s: %s %r lacks %r" % (name, v, m, want))


def test_disagreeing_files():
    """item 19: a tensor file that disagrees with its record is named, by both tools"""
    root = tmpdir()
    cases = {}
    d = one_dump(root, 1, fmt="torch")
    torch.save({"arg_0": torch.zeros(4, dtype=torch.float16)}, os.path.join(d, "inputs.pt"))
    cases[os.path.basename(d)] = "inputs.pt: tensor 'arg_0' is float16 in the file but float32 in the record"
    d = one_dump(root, 2, fmt="torch")
    torch.save({"arg_0": torch.zeros(4), "arg_9": torch.zeros(2)}, os.path.join(d, "inputs.pt"))
    cases[os.path.basename(d)] = "inputs.pt holds 'arg_9', which the record does not list"
    d = one_dump(root, 3, fmt="torch")
    torch.save({"arg_0": torch.zeros(5)}, os.path.join(d, "inputs.pt"))
    cases[os.path.basename(d)] = "inputs.pt: tensor 'arg_0' has another shape in the file than in the record"
    problems, msgs = verdicts(root)
    for name, want in cases.items():
        p, (v, m) = problems.get(name, ""), msgs.get(name, ("?", ""))
        check(want in p, "-d on %s: %r lacks %r" % (name, p, want))
        check(v == "error" and m == want, "replay of %s: %s %r, not %r" % (name, v, m, want))


def test_both_formats():
    """item 18: with inputs.pt and inputs.safetensors both there, both tools read the recorded one"""
    root = tmpdir()
    d = one_dump(root, 1, fmt="safetensors")
    torch.save({"arg_0": torch.zeros(4, dtype=torch.float16)}, os.path.join(d, "inputs.pt"))
    rc, out, err, _ = run([LIST, "-d", "--jsonl", root])
    rec = json.loads(out.splitlines()[0]) if out else {}
    check([t["dtype"] for t in rec.get("tensors", [])] == ["float32"],
          "-d reads inputs.safetensors, the recorded format: %r" % rec.get("tensors"))
    check("both inputs.safetensors and inputs.pt exist; inputs.safetensors, the recorded format, is read"
          in (rec.get("problem") or ""), "-d says which file it reads: %r" % rec.get("problem"))
    problems, msgs = verdicts(root)
    check(list(msgs.values())[0][0] == "unsupported", "replay reads inputs.safetensors too: %r" % msgs)


def test_many_empty_tensors():
    """item 16: a header of many empty tensors stays under the cap"""
    root = tmpdir()
    d = one_dump(root, 1)
    n = 200000
    hdr = {"arg_0": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    hdr.update({"e%07d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [16, 16]} for i in range(n)})
    st_file(os.path.join(d, "inputs.safetensors"), hdr, b"\0" * 16)
    for tool in ([LIST, "-d", root], [REPLAY, root]):
        rc, out, err, rss = run(tool, {"MATE_MAX_MEMORY": "32M"})
        check("memory limit of 32 MiB" in out + err, "%s: no memory limit named: %s %s"
              % (os.path.basename(tool[0]), out[-300:], err[-300:]))
        print("%s on %d empty tensors: peak RSS %s KiB" % (os.path.basename(tool[0]), n, rss))
        check(rss is None or rss < 100 * 1024, "%s peak RSS %s KiB" % (os.path.basename(tool[0]), rss))


def test_stride0_view():
    """a 2^26-element stride-0 view of one float (256 MiB once made whole)"""
    root = tmpdir()
    d = os.path.join(root, write_dump(root, 1, "hostile_op", {"arg_0": torch.zeros(1).expand(1 << 26)},
                                      status="inputs_saved", fmt="torch"))
    print("stride-0 .pt: %d bytes" % os.path.getsize(os.path.join(d, "inputs.pt")))
    rc, out, err, rss = run([REPLAY, root], {"MATE_MAX_MEMORY": "32M"})
    check("memory limit of 32 MiB" in out and rc == 1, "stride-0 view: %d %s %s" % (rc, out, err))
    print("replay of the stride-0 view: peak RSS %s KiB" % rss)
    check(rss is None or rss < 100 * 1024, "stride-0 view: peak RSS %s KiB" % rss)
    rc, out, err, rss = run([REPLAY, "--max-memory", "1G", root])
    check("memory limit" not in out, "--max-memory 1G still refuses: %s" % out)


run_cases(test_rejected_files, test_disagreeing_files, test_both_formats, test_many_empty_tensors,
          test_stride0_view)
