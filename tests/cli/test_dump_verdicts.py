"""dump_verdicts.py: mate-list-dumps -d and mate-replay say the same of a damaged dump (a .pt whose central records cross their tensors' local headers, a deflate stream that does not inflate, an in-place file the record does not list or that holds no argument): both exit 1 with the same words."""
import json
import os
import struct
import subprocess
import zipfile

from mate_test import build_path, check, run, run_cases, tmpdir

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
TOOL = build_path("tests", "tensorfile-tool")
KEYS = ["arg_0", "arg_1"]


def write_pt(path, keys):
    """A .pt of float32[4] tensors, one storage each, by libmate's writer."""
    items = [[{"type": "str", "value": k},
              {"type": "tensor", "dtype": "float32", "shape": [4], "stride": [1], "offset": 0,
               "storage": i, "storage_nbytes": 16, "hex": (bytes([i + 1]) * 16).hex()}]
             for i, k in enumerate(keys)]
    with open(path + ".json", "w") as f:
        json.dump({"root": {"type": "dict", "ordered": False, "items": items}, "metadata": None}, f)
    run([TOOL, "write", path + ".json", path])
    os.remove(path + ".json")


def central(b):
    """{name: offset of its central directory header}"""
    eocd = b.rindex(b"PK\x05\x06")
    count, _, at = struct.unpack_from("<HII", b, eocd + 10)
    out = {}
    for _ in range(count):
        nlen, xlen, clen = struct.unpack_from("<HHH", b, at + 28)
        out[b[at + 46:at + 46 + nlen].decode()] = at
        at += 46 + nlen + xlen + clen
    return out


def crossed(path):
    """data/0's and data/1's central records point at each other's local header."""
    b = bytearray(open(path, "rb").read())
    e = central(b)
    a, c = e["archive/data/0"] + 42, e["archive/data/1"] + 42
    b[a:a + 4], b[c:c + 4] = b[c:c + 4], b[a:a + 4]
    open(path, "wb").write(b)


def bad_deflate(path):
    """Every entry deflated (zipfile's), data/0's stream starting with a block of
    the reserved type 3."""
    with zipfile.ZipFile(path) as z:
        entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    b = bytearray(open(path, "rb").read())
    lfh = struct.unpack_from("<I", b, central(b)["archive/data/0"] + 42)[0]
    nlen, xlen = struct.unpack_from("<HH", b, lfh + 26)
    b[lfh + 30 + nlen + xlen] = 0x07
    open(path, "wb").write(b)


def dump(damage=None, inplace=None, inplace_keys=("arg_0",)):
    """A root of one completed call of a function without a replay handler
    (an intact dump replays as Unsupported, after its files were read)."""
    root = tmpdir()
    d = os.path.join(root, "20261121_125033_783_pid1_nohandler_call0001")
    os.makedirs(d)
    info = {"input_tensor_keys": KEYS, "output_tensor_keys": [], "input_size_bytes": 32,
            "output_size_bytes": 0}
    info.update(inplace or {})
    rec = {"function_name": "nohandler", "module": "test", "execution_status": "completed",
           "timestamp": "20261121_125033_783", "tensor_format": "torch", "input_metadata": {},
           "output_metadata": {}, "tensor_info": info,
           "tensor_details": {k: {"shape": [4], "dtype": "torch.float32", "stride": [1],
                                  "device": "cpu"} for k in KEYS}}
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
    write_pt(os.path.join(d, "inputs.pt"), KEYS)
    if damage is not None:
        damage(os.path.join(d, "inputs.pt"))
    if inplace is not None:
        write_pt(os.path.join(d, "inplace.pt"), list(inplace_keys))
    return root


def verdicts(root):
    """(-d's exit status, its Problem, mate-replay's exit status, its Error)"""
    p = subprocess.run([LIST, "-q", "-d", root], capture_output=True, text=True, timeout=60)
    problem = [l[len("  Problem: "):] for l in p.stdout.splitlines() if l.startswith("  Problem: ")]
    r = subprocess.run([REPLAY, root], capture_output=True, text=True, timeout=60)
    line = r.stdout.splitlines()[0] if r.stdout else ""
    error = line.split(": Error: ", 1)[1] if ": Error: " in line else None
    return p.returncode, problem[0] if problem else None, r.returncode, error, line


def damaged(what, root, words):
    """-d and mate-replay both exit 1 naming what is wrong with the dump at root in words."""
    rc, problem, rrc, error, line = verdicts(root)
    check(rc == 1 and problem is not None and words in problem,
          "%s: -d exits 1 naming it: %d, %r" % (what, rc, problem))
    check(rrc == 1 and error is not None and words in error,
          "%s: mate-replay's Error names it: %d, %r" % (what, rrc, line))
    check(problem == error, "%s: the same words: -d %r, replay %r" % (what, problem, error))


def test_intact():
    rc, problem, rrc, error, line = verdicts(dump(inplace={"inplace_tensor_keys": ["arg_0"],
                                                           "inplace_file": "inplace.pt"}))
    check(rc == 0 and problem is None and "Unsupported" in line,
          "an intact in-place dump: -d exit %d, %r; replay %r" % (rc, problem, line))


def test_crossed_headers():
    damaged("crossed local headers", dump(crossed), "names another entry")


def test_bad_deflate():
    damaged("a bad deflate stream", dump(bad_deflate), "archive/data/0: ")


def test_inplace_unlisted():
    damaged("an in-place file without its key list", dump(inplace={"inplace_file": "inplace.pt"}),
            "inplace.pt holds 'arg_0', which the record does not list")


def test_inplace_not_argument():
    damaged("an in-place tensor that is no argument's",
            dump(inplace={"inplace_tensor_keys": ["result"], "inplace_file": "inplace.pt"},
                 inplace_keys=("result",)), "inplace.pt holds 'result', which is not an argument's")


run_cases(test_intact, test_crossed_headers, test_bad_deflate, test_inplace_unlisted, test_inplace_not_argument)
