"""list_nonfinite.py: mate-list-dumps --nonfinite on recorded runs (tests/nf-chain: libmate's recording API, each call's output the next call's input) in which one call in the middle makes NaN and infinities with finite inputs: that call is the origin, the calls that received them are listed as passing them on; counts and first indices as torch.load's tensors count them; .pt (stored and deflated) and safetensors, float32/64, bfloat16, float16, float8, a transposed view, tensors over several 1 MiB chunks; truncated and missing files are named and the scan goes on."""
import json
import os
import shutil
import subprocess
import zipfile

from mate_test import build_path, case, check, record_env, run, run_cases, tmpdir

LIST = build_path("src", "replay", "mate-list-dumps")
CHAIN = build_path("tests", "nf-chain")


def record(dtype, calls, plant, fmt="pt", rows=64, cols=16, transpose=False, nan_at=None):
    """A root of `calls` recorded chain_step calls; call `plant` makes NaN at [12, 3],
    +inf at [20, 5], -inf at [30, 7] (and NaN at nan_at). @return the root and its
    dumps in call order."""
    root = os.path.join(tmpdir(), "dumps")
    env = record_env()
    env.update(MATE_LOGLEVEL="10", MATE_DUMP_DIR=root, MATE_LOGDEST="/dev/null",
               MATE_DUMP_SAFETENSORS="1" if fmt == "safetensors" else "0")
    if nan_at is not None:
        env["NF_CHAIN_NAN_AT"] = "%d,%d" % nan_at
    args = [CHAIN, dtype, str(calls), str(plant), str(rows), str(cols)]
    run(args + (["transpose"] if transpose else []), env=env)
    dirs = sorted(d for d in os.listdir(root) if "_call" in d)
    dirs.sort(key=lambda d: int(d.rsplit("_call", 1)[1]))
    check(len(dirs) == calls, "%d dumps recorded, %d expected" % (len(dirs), calls))
    return root, [os.path.join(root, d) for d in dirs]


def scan(root, *opts):
    return subprocess.run([LIST, "--nonfinite", *opts, root], capture_output=True, text=True)


def lines_by_call(out):
    """{call number: line} of the text listing."""
    res = {}
    for line in out.splitlines():
        name = line.split(":", 1)[0]
        res[int(name.rsplit("_call", 1)[1])] = line
    return res


def torch_counts(path, key):
    """NaN, +inf, -inf and the first non-finite index of a tensor as torch.load reads it."""
    import torch
    t = torch.load(path)[key]
    f = t.double()
    bad = ~torch.isfinite(f)
    nz = bad.nonzero().tolist()
    return (int(torch.isnan(f).sum()), int((f == float("inf")).sum()),
            int((f == float("-inf")).sum()), nz[0] if nz else None)


def check_chain(dtype, fmt, calls=7, plant=3, transpose=False, infs=True):
    root, dumps = record(dtype, calls, plant, fmt, transpose=transpose)
    p = scan(root)
    check(p.returncode == 1, "%s %s: exit %d (1 expected): %s" % (dtype, fmt, p.returncode, p.stderr))
    by = lines_by_call(p.stdout)
    check(sorted(by) == list(range(plant, calls + 1)),
          "%s %s: calls %s listed, %d..%d expected:\n%s" % (dtype, fmt, sorted(by), plant, calls, p.stdout))
    ninf = "1 +inf, 1 -inf" if infs else "0 +inf, 0 -inf"
    origin = by.get(plant, "")
    kind = "output result" if plant % 2 else "inplace kwarg_out"
    want = "chain_step [origin] %s: 1 NaN, %s of 1024 %s, first at [12, 3]" % (kind, ninf, dtype)
    check(origin.endswith(want), "%s %s: origin line\n  %s\nwants\n  %s" % (dtype, fmt, origin, want))
    check(all("[origin]" not in by[k] and "[passed on]" in by[k] for k in by if k != plant),
          "%s %s: the later calls pass it on:\n%s" % (dtype, fmt, p.stdout))
    later = by.get(plant + 1, "")
    first = "[3, 12]" if transpose else "[12, 3]"
    check(("input arg_0: 1 NaN, %s of 1024 %s, first at %s" % (ninf, dtype, first)) in later,
          "%s %s: call %d's input: %s" % (dtype, fmt, plant + 1, later))
    check("origin: %s (chain_step), call %d of %d" % (os.path.basename(dumps[plant - 1]), plant, calls)
          in p.stderr, "%s %s: summary: %s" % (dtype, fmt, p.stderr))
    check("%d calls with NaN or infinite outputs" % (calls - plant + 1) in p.stderr,
          "%s %s: summary counts: %s" % (dtype, fmt, p.stderr))
    return root, dumps


def test_float32_pt_and_safetensors():
    for fmt in ("pt", "safetensors"):
        check_chain("float32", fmt)


def test_half_types():
    for dtype in ("bfloat16", "float16"):
        for fmt in ("pt", "safetensors"):
            check_chain(dtype, fmt, calls=6, plant=4)


def test_float8_and_float64():
    for fmt in ("pt", "safetensors"):
        check_chain("float8_e4m3fn", fmt, infs=False)   # no infinity: +-inf saturate to 448
        check_chain("float8_e5m2", fmt)
        check_chain("float64", fmt, calls=5, plant=2)


def test_transposed_view():
    """Call plant+1 reads a transposed view of call plant's output: the .pt keeps the
    view (strides (1, 16) over the [64, 16] storage), whose first NaN is at [3, 12]."""
    for fmt in ("pt", "safetensors"):
        root, dumps = check_chain("float32", fmt, transpose=True)
        if fmt == "pt":
            import torch
            t = torch.load(os.path.join(dumps[3], "inputs.pt"))["arg_0"]
            check(t.stride() == (1, 16), "the recorded input is the view: stride %s" % (t.stride(),))


def test_counts_as_torch_reads_them():
    """Every listed tensor's counts and first index against torch.load's tensor."""
    root, dumps = record("bfloat16", 5, 2, transpose=True)
    for line in scan(root, "--jsonl").stdout.splitlines():
        o = json.loads(line)
        for t in o["tensors"]:
            stem = {"input": "inputs", "output": "outputs", "inplace": "inplace"}[t["kind"]]
            got = (t["nan"], t["posinf"], t["neginf"], t["first_index"])
            want = torch_counts(os.path.join(o["path"], stem + ".pt"), t["key"])
            check(got == want, "%s %s: mate %s, torch %s" % (o["dir"], t["key"], got, want))


def test_jsonl():
    root, dumps = record("float32", 6, 3)
    p = scan(root, "--jsonl")
    objs = [json.loads(line) for line in p.stdout.splitlines()]
    check(p.returncode == 1 and len(objs) == 4, "4 objects, exit 1: %d, %s" % (p.returncode, p.stdout))
    check([o["origin"] for o in objs] == [True, False, False, False], "origin flags: %s" % objs)
    o = objs[0]
    check(o["dir"] == os.path.basename(dumps[2]) and o["order"] == 3 and o["inputs_finite"] is True
          and o["problem"] is None, "the origin's object: %s" % o)
    check(o["tensors"] == [{"key": "result", "kind": "output", "dtype": "float32", "shape": [64, 16],
                            "numel": 1024, "nan": 1, "posinf": 1, "neginf": 1,
                            "first_index": [12, 3]}], "the origin's tensors: %s" % o["tensors"])
    check(all(x["inputs_finite"] is False for x in objs[1:]), "later calls' inputs: %s" % objs)
    check(objs[1]["tensors"][0]["kind"] == "input" and objs[1]["tensors"][-1]["kind"] == "inplace",
          "call 4: its input, then its in-place output: %s" % objs[1]["tensors"])
    check("origin: %s" % o["dir"] in p.stderr, "the summary on stderr: %s" % p.stderr)


def test_clean_run():
    root, dumps = record("bfloat16", 5, 0)
    p = scan(root)
    check(p.returncode == 0 and p.stdout == "", "clean: exit %d, %r" % (p.returncode, p.stdout))
    check("5 dumps in %s: 0 calls with NaN or infinite outputs" % root in p.stderr, p.stderr)
    p = scan(root, "-q", "--jsonl")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "", "-q: %r %r" % (p.stdout, p.stderr))


def test_chunks():
    """Tensors of 2 MiB (two chunks), a NaN in the second: counted, first index right."""
    for fmt in ("pt", "safetensors"):
        root, dumps = record("float32", 4, 2, fmt, rows=1024, cols=512, nan_at=(1000, 511))
        p = scan(root, "--jsonl")
        objs = [json.loads(line) for line in p.stdout.splitlines()]
        t = objs[0]["tensors"][0] if objs else {}
        check(objs and objs[0]["origin"] and t.get("nan") == 2 and t.get("first_index") == [12, 3]
              and t.get("numel") == 1024 * 512, "%s: %s" % (fmt, t))
    # one NaN alone, the last element of a 2.3 MiB tensor (its third chunk); [12, 3] etc.
    # fall outside a [300000, 2] tensor
    for fmt in ("pt", "safetensors"):
        root, dumps = record("float32", 3, 2, fmt, rows=300000, cols=2, nan_at=(299999, 1))
        objs = [json.loads(line) for line in scan(root, "--jsonl").stdout.splitlines()]
        t = objs[0]["tensors"][0] if objs else {}
        check(len(objs) == 2 and objs[0]["origin"] and t.get("nan") == 1 and
              t.get("posinf") == 0 and t.get("first_index") == [299999, 1],
              "%s: the last chunk's NaN: %s" % (fmt, objs))


def test_odd_sizes():
    """111 elements, the NaN the last: found past the vector pass's whole steps and words."""
    for dtype in ("float16", "bfloat16", "float8_e5m2", "float8_e4m3fn", "float32", "float64"):
        for fmt in ("pt", "safetensors"):
            root, dumps = record(dtype, 3, 2, fmt, rows=37, cols=3, nan_at=(36, 2))
            objs = [json.loads(line) for line in scan(root, "--jsonl").stdout.splitlines()]
            t = objs[0]["tensors"][0] if objs else {}
            check(len(objs) == 2 and objs[0]["origin"] and t.get("nan") == 1 and
                  t.get("numel") == 111 and t.get("first_index") == [36, 2],
                  "%s %s: %s" % (dtype, fmt, objs))


def deflate(path):
    """Rewrites a .pt with every entry deflated (libarchive's path)."""
    with zipfile.ZipFile(path) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)


def test_deflated_pt():
    root, dumps = record("float16", 5, 3, transpose=True)
    for d in dumps:
        for f in os.listdir(d):
            if f.endswith(".pt"):
                deflate(os.path.join(d, f))
    with zipfile.ZipFile(os.path.join(dumps[2], "outputs.pt")) as z:
        check(all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist()), "deflated")
    p = scan(root)
    by = lines_by_call(p.stdout)
    check(p.returncode == 1 and sorted(by) == [3, 4, 5] and "[origin]" in by[3], p.stdout + p.stderr)
    check("input arg_0: 1 NaN, 1 +inf, 1 -inf of 1024 float16, first at [3, 12]" in by.get(4, ""),
          "view of a deflated storage: %s" % by.get(4))


def test_truncated_and_missing():
    for fmt, why in (("pt", "zip: no end of central directory record (truncated file?)"),
                     ("safetensors", "MetadataIncompleteBuffer")):
        root, dumps = record("float32", 7, 3, fmt)
        ext = "." + fmt
        out5 = os.path.join(dumps[4], "outputs" + ext)
        os.truncate(out5, os.path.getsize(out5) // 2)
        os.remove(os.path.join(dumps[5], "inplace" + ext))
        p = scan(root)
        by = lines_by_call(p.stdout)
        check(p.returncode == 1, "%s: exit %d" % (fmt, p.returncode))
        check("%s: outputs%s: %s" % (dumps[4], ext, why) in p.stderr,
              "%s: the truncated file named:\n%s" % (fmt, p.stderr))
        check("%s: no inplace.pt or inplace.safetensors" % dumps[5] in p.stderr,
              "%s: the missing file named:\n%s" % (fmt, p.stderr))
        check(sorted(by) == [3, 4, 7] and "[origin]" in by[3] and "origin: %s" %
              os.path.basename(dumps[2]) in p.stderr and "; 2 with problems" in p.stderr,
              "%s: the scan goes on:\n%s%s" % (fmt, p.stdout, p.stderr))
        # the origin's inputs unreadable: it cannot be told from a call that passed one on
        inp = os.path.join(dumps[2], "inputs" + ext)
        os.truncate(inp, 10)
        p = scan(root)
        by = lines_by_call(p.stdout)
        check("[inputs unread]" in by.get(3, "") and "[origin]" not in p.stdout and
              "no origin: the first non-finite values are inputs of %s" % os.path.basename(dumps[3])
              in p.stderr, "%s: unread inputs:\n%s%s" % (fmt, p.stdout, p.stderr))


def test_usage():
    p = subprocess.run([LIST, "--nonfinite", "-d", tmpdir()], capture_output=True, text=True)
    check(p.returncode == 2 and "--nonfinite cannot be combined" in p.stderr, p.stderr)
    p = subprocess.run([LIST, "--help"], capture_output=True, text=True)
    check("--nonfinite" in p.stdout, "--help names it")
    p = scan(os.path.join(tmpdir(), "none"))
    check(p.returncode == 2, "missing root: exit %d" % p.returncode)


run_cases(test_float32_pt_and_safetensors, test_half_types, test_float8_and_float64,
          test_transposed_view, test_counts_as_torch_reads_them, test_jsonl, test_clean_run,
          test_chunks, test_odd_sizes, test_deflated_pt, test_truncated_and_missing, test_usage)
