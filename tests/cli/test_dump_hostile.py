"""dump_hostile.py: mate-list-dumps and mate-replay on hostile dumps: byte counts near 2^63, shapes of 1e300, FIFOs and symbolic links under the dump's file names, records nested deeper than the skim goes, 80,000 tensor keys."""
import json
import os
import subprocess

from mate_test import build_path, check, run_cases, tmpdir

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
TIMEOUT = 20


def record(func, **extra):
    r = {"function_name": func, "module": "__main__", "call_sequence": 1,
         "timestamp": "20261121_125033_783", "process_id": 23322,
         "input_metadata": {}, "output_metadata": {},
         "tensor_info": {"input_tensor_keys": [], "output_tensor_keys": [],
                         "input_size_bytes": 0, "output_size_bytes": 0},
         "tensor_details": {}, "tensor_format": "torch",
         "execution_status": "completed"}
    r.update(extra)
    return r


def make_dump(root, name, rec):
    d = os.path.join(root, name)
    os.makedirs(d)
    if rec is not None:
        with open(os.path.join(d, "metadata.jsonl"), "w") as f:
            f.write(json.dumps(rec) + "\n")
    return d


def tool(args):
    """Runs a tool with a deadline: (returncode, stdout, stderr); returncode
    None when it hung, and a crash (a signal, a sanitizer report) shows."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    check(p.returncode in (0, 1, 2) and "runtime error" not in p.stderr
          and "Sanitizer" not in p.stderr,
          "%s ends cleanly, got %s: %s" % (" ".join(args[:2]), p.returncode, p.stderr[-2000:]))
    return p.returncode, p.stdout, p.stderr


# a record of one input and one output, under files the cases replace
INS = record("fifo", tensor_info={"input_tensor_keys": ["x"], "output_tensor_keys": ["y"],
                                  "input_size_bytes": 4, "output_size_bytes": 4})


def test_byte_counts():
    """input and output byte counts whose sum is past 2^63"""
    root = tmpdir()
    big = record("huge", tensor_info={"input_tensor_keys": [], "output_tensor_keys": [],
                                      "input_size_bytes": 9e18, "output_size_bytes": 9e18})
    sizes = make_dump(root, "20261121_125033_783_pid23322_huge_call0001", big)
    rc, out, err = tool([LIST, sizes])
    check(out == "20261121_125033_783_pid23322_huge_call0001: huge [completed] 0 in, 0 out, ? bytes\n",
          "a sum past 2^63 is shown as unknown: %r" % out)
    rc, out, err = tool([LIST, "--jsonl", sizes])
    o = json.loads(out) if rc is not None and out else {}
    check(o.get("bytes") is None and o.get("input_bytes") == 9000000000000000000
          and "more than 2^63" in (o.get("problem") or ""),
          "--jsonl: bytes null, the problem named: %r" % o)
    rc, out, err = tool([REPLAY, sizes])
    check(rc is not None, "mate-replay reads the record: %s" % err)


def test_huge_dims():
    """tensor_details shapes and strides no int64 holds"""
    dims = record("dims", tensor_info={"input_tensor_keys": ["x"], "output_tensor_keys": [],
                                       "input_size_bytes": 8, "output_size_bytes": 0},
                  tensor_details={"x": {"shape": [1e300, 2, -1e300, 9.3e18], "dtype": "torch.float32",
                                        "stride": [1e300, 1, 2, -9.3e18], "device": "cpu"}})
    root = tmpdir()
    d2 = make_dump(root, "20261121_125033_784_pid23322_dims_call0001", dims)
    rc, out, err = tool([LIST, "-d", d2])
    check("    x: float32 shape (-1, 2, -1, -1) stride (-1, 1, 2, -1)\n" in out,
          "out-of-range dims read as unknown (-1): %r" % out)


def test_fifos():
    """FIFOs under the names a reader opens"""
    froot = tmpdir()
    meta_fifo = make_dump(froot, "20261121_125033_785_pid23322_fifo_call0001", None)
    os.mkfifo(os.path.join(meta_fifo, "metadata.jsonl"))
    in_fifo = make_dump(froot, "20261121_125033_786_pid23322_fifo_call0002", INS)
    os.mkfifo(os.path.join(in_fifo, "inputs.pt"))
    os.mkfifo(os.path.join(in_fifo, "outputs.safetensors"))
    rc, out, err = tool([LIST, froot])
    check(rc == 1, "plain listing ends, exit 1 (problems): %s %r" % (rc, err))
    rc, out, err = tool([LIST, "--jsonl", froot])
    objs = [json.loads(l) for l in out.splitlines()] if rc is not None else []
    by = {o["dir"]: o for o in objs}
    check(len(objs) == 2 and "metadata.jsonl is not a regular file"
          in (by.get(os.path.basename(meta_fifo), {}).get("problem") or ""),
          "--jsonl names the FIFO metadata.jsonl: %r" % objs)
    rc, out, err = tool([LIST, "-d", froot])
    check(rc == 1 and "inputs.pt: not a regular file" in out
          and "outputs.safetensors: not a regular file" in out,
          "-d names the FIFO tensor files: %s %r" % (rc, out))
    rc, out, err = tool([REPLAY, in_fifo])
    check(rc is not None and rc != 0 and "not a regular file" in out + err,
          "mate-replay refuses a FIFO inputs.pt: %s %r %r" % (rc, out, err))
    rc, out, err = tool([REPLAY, meta_fifo])
    check(rc is not None and rc != 0 and "not a regular file" in out + err,
          "mate-replay refuses a FIFO metadata.jsonl: %s %r %r" % (rc, out, err))


def test_folder_and_empty_metadata():
    """a folder and an empty file under the name: the listing reads metadata.jsonl with no
    fstat() before it, so the read itself must tell them apart from a record"""
    droot = tmpdir()
    meta_dir = make_dump(droot, "20261121_125033_787_pid23322_dir_call0001", None)
    os.mkdir(os.path.join(meta_dir, "metadata.jsonl"))
    meta_empty = make_dump(droot, "20261121_125033_788_pid23322_empty_call0001", None)
    open(os.path.join(meta_empty, "metadata.jsonl"), "w").close()
    rc, out, err = tool([LIST, "--jsonl", droot])
    objs = [json.loads(l) for l in out.splitlines()] if rc is not None else []
    by = {o["dir"]: o.get("problem") or "" for o in objs}
    check("metadata.jsonl is not a regular file" in by.get(os.path.basename(meta_dir), "")
          and "metadata.jsonl is empty" in by.get(os.path.basename(meta_empty), ""),
          "a folder and an empty file as metadata.jsonl: %r" % objs)


def test_symlinks():
    """symbolic links under the names a reader opens"""
    # A co-user who can write a shared dump root plants links to a file only the reader
    # may read; no byte of it may reach a listing or a replay (mate(7): regular files only).
    lroot = tmpdir()
    secret = os.path.join(tmpdir(), "secret")
    with open(secret, "w") as f:
        f.write("SECRETPW" * 4 + "\n")
    os.chmod(secret, 0o600)
    ins_link = make_dump(lroot, "20261121_125033_790_pid23322_link_call0001", INS)
    os.symlink(secret, os.path.join(ins_link, "inputs.pt"))
    os.symlink(secret, os.path.join(ins_link, "outputs.safetensors"))
    meta_link = make_dump(lroot, "20261121_125033_791_pid23322_link_call0002", None)
    with open(os.path.join(tmpdir(), "private.jsonl"), "w") as f:
        f.write(json.dumps(record("SECRETFN")) + "\n")
    os.symlink(f.name, os.path.join(meta_link, "metadata.jsonl"))
    leaks = ("53 45 43 52", "SECR", "6291621336146199891", "header length", "bad magic")
    for args in ([LIST, lroot], [LIST, "-d", lroot], [LIST, "--jsonl", lroot],
                 [REPLAY, ins_link], [REPLAY, meta_link]):
        rc, out, err = tool(args)
        name = " ".join([os.path.basename(args[0])] + args[1:-1])
        check(rc is not None and rc != 0, "%s: a problem, exit 1: %s" % (name, rc))
        check(not any(x in out + err for x in leaks),
              "%s: nothing of the link's target is shown: %r %r" % (name, out, err))
        check("not a regular file" in out + err, "%s: the link is named as not a regular "
              "file: %r %r" % (name, out, err))
    rc, out, err = tool([LIST, "-d", lroot])
    check("inputs.pt: not a regular file" in out and "outputs.safetensors: not a regular file"
          in out and "metadata.jsonl is not a regular file" in out,
          "-d names each linked file: %r" % out)


def test_deep_nesting():
    """a record nested deeper than the skim's 128 levels"""
    droot = tmpdir()
    nest = 0
    for _ in range(300):
        nest = [nest]
    deep = record("deep", input_metadata={"x": {"type": "list", "value": nest}})
    line = json.dumps(deep)         # Python writes it
    check(line.count("[") > 300, "the record nests 300 lists")
    make_dump(droot, "20261121_125033_787_pid23322_deep_call0001", deep)
    # past cJSON's 1000 levels (Python's json cannot write that deep): not readable
    deeper = make_dump(droot, "20261121_125033_788_pid23322_deeper_call0001", None)
    with open(os.path.join(deeper, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(record("deeper")).replace('"input_metadata": {}', '"input_metadata": {"x": '
                + "[" * 1100 + "0" + "]" * 1100 + "}") + "\n")
    rc, out, err = tool([LIST, droot])
    lines = out.splitlines()
    check(len(lines) == 2 and lines[0] == "20261121_125033_787_pid23322_deep_call0001: deep "
          "[completed] 0 in, 0 out, 0 bytes", "300 levels read as completed: %r" % lines)
    check(len(lines) == 2 and "[incomplete]" in lines[1], "1100 levels are refused: %r" % lines)
    rc, out, err = tool([LIST, "--jsonl", droot])
    objs = [json.loads(l) for l in out.splitlines()] if rc is not None else []
    check(len(objs) == 2 and objs[0]["status"] == "completed" and objs[0]["problem"] is None,
          "--jsonl: 300 levels completed, no problem: %r" % objs[:1])
    rc, out, err = tool([LIST, "-d", droot])
    check("  Status: completed\n" in out and "Problem: corrupt" not in out.split("\n\n")[0],
          "-d: 300 levels completed: %r" % out[:400])


def test_many_keys():
    """-d on a record of 80,000 tensor keys is not quadratic"""
    # (a walk of every member per key took 11.5 s for 40,000 keys; a search
    # takes well under a second for 80,000, also under the sanitizers)
    kroot = tmpdir()
    keys = ["arg_%d" % i for i in range(80000)]
    make_dump(kroot, "20261121_125033_789_pid23322_keys_call0001",
              record("keys", execution_status="inputs_saved",
                     tensor_info={"input_tensor_keys": keys, "output_tensor_keys": [],
                                  "input_size_bytes": 4 * len(keys), "output_size_bytes": 0},
                     tensor_details={k: {"shape": [1], "dtype": "torch.float32", "stride": [1]}
                                     for k in keys}))
    rc, out, err = tool([LIST, "-d", kroot])
    check(rc is not None and out.count(": float32 shape (1,) stride (1,)\n") == len(keys),
          "80,000 keys listed within %d s: %s %r" % (TIMEOUT, rc, err[-300:]))


run_cases(test_byte_counts, test_huge_dims, test_fifos, test_folder_and_empty_metadata, test_symlinks,
          test_deep_nesting, test_many_keys)
