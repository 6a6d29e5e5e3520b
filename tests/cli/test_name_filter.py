"""test_name_filter.py: one function-name filter: MATE_DUMP_INCLUDE/EXCLUDE (the recorder) and mate-replay's --include/--exclude select the same calls, matching the whole recorded name ("Tensor.softmax", "Class.method") as FlashInfer's _should_dump_function() does; mate-replay used to match a "Tensor." name without its prefix too."""
import ctypes
import functools
import os
import subprocess
import sys

import torch

from mate_test import build_path, run, check, run_cases, tmpdir
from replay_dumps import write_dump

REPLAY = build_path("src", "replay", "mate-replay")
LIBMATE = build_path(".libs", "libmate.so")
work = tmpdir()

# (include, exclude, the functions selected)
PATTERNS = [
    (None, None, ["Tensor.softmax", "rmsnorm"]),
    ("softmax", None, []),
    ("Tensor.softmax", None, ["Tensor.softmax"]),
    ("*softmax", None, ["Tensor.softmax"]),
    (" rmsnorm , softmax ", None, ["rmsnorm"]),
    (None, "softmax", ["Tensor.softmax", "rmsnorm"]),
    (None, "Tensor.*", ["rmsnorm"]),
    ("*", "*norm", ["Tensor.softmax"]),
]

# the recorder: a child process records Tensor.softmax and rmsnorm at level 10
RECORD = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.mate_call_begin.restype = ctypes.c_void_p
lib.mate_call_begin.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
lib.mate_call_int.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
lib.mate_call_end.argtypes = [ctypes.c_void_p]
for name in (b"Tensor.softmax", b"rmsnorm"):
    c = lib.mate_call_begin(name, b"torch", b"(self, dim)")
    lib.mate_call_int(c, 0, None, -1)
    lib.mate_call_end(c)
"""


def recorded(include, exclude=None):
    """The functions the recorder dumps under these patterns."""
    d = os.path.join(work, "rec%d" % len(os.listdir(work)))
    env = dict(os.environ, MATE_LOGLEVEL="10", MATE_DUMP_DIR=d, MATE_LOGDEST="/dev/null")
    env.pop("MATE_DUMP_INCLUDE", None)
    env.pop("MATE_DUMP_EXCLUDE", None)
    if include is not None:
        env["MATE_DUMP_INCLUDE"] = include
    if exclude is not None:
        env["MATE_DUMP_EXCLUDE"] = exclude
    p = subprocess.run([sys.executable, "-c", RECORD, LIBMATE], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "recording under %r/%r: %s" % (include, exclude, p.stderr))
    names = os.listdir(d) if os.path.isdir(d) else []
    return sorted(f for f in ("Tensor.softmax", "rmsnorm") if any("_" + f + "_call" in n for n in names))


@functools.cache
def replay_root():
    """mate-replay's side: the same two calls as dumps."""
    root = os.path.join(work, "dumps")
    os.mkdir(root)
    x = torch.randn(3, 8)
    write_dump(root, 1, "Tensor.softmax", {"arg_0": x, "arg_1": -1}, {"result": torch.softmax(x, -1)},
               fmt="torch", signature="(self, dim, dtype=None)")
    w = torch.randn(8)
    write_dump(root, 2, "rmsnorm", {"arg_0": x, "arg_1": w, "arg_2": 1e-6},
               {"result": x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w}, fmt="torch",
               signature="(input, weight, eps=1e-6, out=None, enable_pdl=None)")
    return root


def replayed(include, exclude=None):
    """The functions mate-replay replays under these patterns."""
    args = [REPLAY, "--device", "cpu", "--jsonl"]
    if include is not None:
        args += ["--include", include]
    if exclude is not None:
        args += ["--exclude", exclude]
    p = run(args + [replay_root()], check=False)
    import json
    return sorted(json.loads(l)["function"] for l in p.stdout.splitlines() if l.startswith("{"))


def test_same_selection():
    """The same selection on both sides, for each pattern; "softmax" and "Tensor.softmax"
    are where they disagreed (mate-replay matched the name without "Tensor.")."""
    for inc, exc, want in PATTERNS:
        got_rec = recorded(inc, exc)
        check(got_rec == want, "recorder include=%r exclude=%r: want %s, got %s" % (inc, exc, want, got_rec))
        got_rep = replayed(inc, exc)
        check(got_rep == want, "mate-replay --include %r --exclude %r: want %s, got %s" % (inc, exc, want, got_rep))


run_cases(test_same_selection)
