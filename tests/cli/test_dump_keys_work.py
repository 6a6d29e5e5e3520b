"""dump_keys_work.py: mate-list-dumps -d and --unique and mate-replay's in-place check do n log n work in a record's tensor keys, not n^2: strcmp calls counted (tests/fakes/strcmp-count-shim.c) on N keys and on N/4."""
import functools
import json
import os
import struct
import subprocess

from mate_test import build_path, check, run_cases, skip, tmpdir

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
SHIM = build_path("tests", ".libs", "strcmp-count-shim.so")
N = 4000
# 4 when the work is linear in the keys, about 4.8 for n log n at these sizes,
# 16 for a walk of every key per key (the old code: 15.9 to 16.0)
MAX_RATIO = 8

if not os.path.exists(SHIM):
    skip("%s was not built: --disable-shared builds (the sanitizer build) make no shared "
         "libraries to preload" % SHIM)


def safetensors(path, keys):
    head = {k: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
            for i, k in enumerate(keys)}
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(4 * len(keys)))


def write(root, rec, files=()):
    d = os.path.join(root, "20261121_125033_783_pid1_keys_call0001")
    os.makedirs(d)
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
    for name, keys in files:
        safetensors(os.path.join(d, name), keys)
    return root


def dumps(n):
    """Two roots of one dump with n tensor keys: a record alone (the tensor
    details are the record's), and a completed call with each key in
    inputs.safetensors and inplace.safetensors."""
    keys = ["arg_%d" % i for i in range(n)]
    details = {k: {"shape": [1], "dtype": "torch.float32", "stride": [1], "device": "cpu"}
               for k in keys}
    info = {"input_tensor_keys": keys, "output_tensor_keys": [], "input_size_bytes": 4 * n,
            "output_size_bytes": 0}
    bare = write(tmpdir(), {"function_name": "keys", "execution_status": "inputs_saved",
                            "timestamp": "20261121_125033_783", "tensor_info": info,
                            "tensor_details": details})
    info = dict(info, inplace_tensor_keys=keys, inplace_size_bytes=4 * n,
                inplace_file="inplace.safetensors")
    files = write(tmpdir(), {"function_name": "keys", "module": "test",
                             "execution_status": "completed", "timestamp": "20261121_125033_783",
                             "tensor_format": "safetensors", "input_metadata": {},
                             "output_metadata": {}, "tensor_info": info,
                             "tensor_details": details},
                  (("inputs.safetensors", keys), ("inplace.safetensors", keys)))
    return bare, files


def strcmps(args):
    """(calls of strcmp in every process the command ran, its exit status, stdout)"""
    out = os.path.join(tmpdir(), "count")
    # after what is preloaded already (ASan's runtime, in CI's shared sanitizer step)
    pre = (os.environ.get("LD_PRELOAD", "") + " " + SHIM).strip()
    env = dict(os.environ, LD_PRELOAD=pre, MATE_TEST_STRCMP_OUT=out)
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    with open(out) as f:
        return sum(int(x) for x in f.read().split()), p.returncode, p.stdout


@functools.cache
def roots():
    """(dumps(N), dumps(N // 4))"""
    return dumps(N), dumps(N // 4)


def n_log_n(what, args, which, expect):
    """args run on N keys and on N/4 read the dump (their output holds expect) with a
    ratio of strcmp calls under MAX_RATIO; which: 0 the bare record, 1 the one with files."""
    big, quarter = roots()
    nb, rc, out = strcmps(args + [big[which]])
    nq, _, _ = strcmps(args + [quarter[which]])
    ratio = nb / max(nq, 1)
    print("%s: %d strcmp calls for %d keys, %d for %d (ratio %.1f)" % (what, nb, N, nq, N // 4, ratio))
    check(expect in out, "%s read the dump (exit %d): %r" % (what, rc, out[-300:]))
    check(ratio < MAX_RATIO, "%s: %d strcmp calls for %d keys, %d for %d: ratio %.1f, "
          "not n log n (< %d)" % (what, nb, N, nq, N // 4, ratio, MAX_RATIO))


def test_list_details():
    n_log_n("-d", [LIST, "-q", "-d"], 0, "arg_%d: float32 shape (1,) stride (1,)" % (N - 1))


def test_list_unique():
    n_log_n("--unique", [LIST, "-q", "--unique"], 0, "arg_%d=float32[1]" % (N - 1))


def test_list_details_files():
    n_log_n("-d on tensor files", [LIST, "-q", "-d"], 1, "Format: safetensors")


def test_replay_inplace():
    n_log_n("mate-replay", [REPLAY], 1, "no replay handler for 'keys'")


run_cases(test_list_details, test_list_unique, test_list_details_files, test_replay_inplace)
