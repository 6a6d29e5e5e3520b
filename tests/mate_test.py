"""mate_test.py: helpers shared by mate's Python interop tests (paths, running binaries, checks)."""
import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOP_SRCDIR = os.environ.get("top_srcdir", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP_BUILDDIR = os.environ.get("top_builddir", TOP_SRCDIR)

_failures = 0
_checks = 0
_case = None


def build_path(*parts):
    """A path in the build tree (programs, libraries)."""
    return os.path.join(TOP_BUILDDIR, *parts)


def src_path(*parts):
    """A path in the source tree (fixtures, scripts)."""
    return os.path.join(TOP_SRCDIR, *parts)


def run(args, check=True, **kw):
    """Runs a program and returns the CompletedProcess (text mode)."""
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout: %s\nstderr: %s"
                             % (args, p.returncode, p.stdout, p.stderr))
    return p


def skip(why):
    """Ends the test as skipped (77), saying what is missing."""
    print("SKIP:", why)
    sys.exit(77)


def need_preload():
    """Skips the test where the build has no libmate-preload.so (a static-only
    build); @return its path."""
    path = build_path(".libs", "libmate-preload.so")
    if not os.path.exists(path):
        skip("no libmate-preload.so (a static-only build)")
    return path


def record_env(*more):
    """os.environ less the variables that steer the recorder (level, memory log,
    dump folder, log destination) and the names in more."""
    env = dict(os.environ)
    for v in ("MATE_LOGLEVEL", "MATE_MEMLOG", "MATE_MEMLOG_FORMAT", "MATE_DUMP_DIR", "MATE_LOGDEST") + more:
        env.pop(v, None)
    return env


def check(cond, what):
    """Records one assertion; prints what failed, after the name of the case it is in."""
    global _failures, _checks
    _checks += 1
    if not cond:
        _failures += 1
        print("FAIL:", "%s: %s" % (_case, what) if _case else what, file=sys.stderr)


@contextlib.contextmanager
def case(name):
    """with case("name"): the checks inside are the case's; a failure, or an
    exception that ends the case, names it."""
    global _case
    outer, _case = _case, name
    try:
        yield
    except BaseException:
        print("case %s stopped by an exception:" % name, file=sys.stderr)
        raise
    finally:
        _case = outer


def run_cases(*funcs):
    """Runs each function as a case named after it less a test_ prefix, in
    order, or only those named on the command line (-l lists them); then
    done(). An unknown name exits 2 before any case runs."""
    names = [f.__name__[5:] if f.__name__.startswith("test_") else f.__name__ for f in funcs]
    args = sys.argv[1:]
    if args == ["-l"]:
        print("\n".join(names))
        sys.exit(0)
    for a in args:
        if a not in names:
            print("%s: no case named \"%s\" (-l lists them)" % (os.path.basename(sys.argv[0]), a),
                  file=sys.stderr)
            sys.exit(2)
    for name, f in zip(names, funcs):
        if not args or name in args:
            print("case", name, file=sys.stderr)
            with case(name):
                f()
    done()


def untyped_storage(t):
    """The byte storage behind tensor t (torch 2.x's untyped_storage, 1.13's storage().untyped())."""
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def storage_bytes(t):
    """The whole storage behind tensor t, as bytes."""
    import torch
    st = untyped_storage(t)
    base = torch.empty(0, dtype=torch.uint8)
    base.set_(st, 0, (st.nbytes(),), (1,))
    return base.numpy().tobytes()


_tmpdirs = []


def _remove_tmpdirs():
    # A failed test keeps its folders for a look (their paths are in its log).
    if _failures == 0:
        for d in _tmpdirs:
            shutil.rmtree(d, ignore_errors=True)


def default_signals():
    """A preexec_fn: the child starts with SIGINT and SIGTERM at their defaults. A shell's
    background jobs (a CI script, a stress loop) start with SIGINT ignored, and ignored
    signals pass to the programs they run: a test that signals its child must not inherit
    that."""
    import signal
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def wait_seconds():
    """How long a test waits for a state before it fails: $MATE_TEST_WAIT seconds, 60 by
    default (long enough for a sanitizer build on a loaded machine)."""
    try:
        return float(os.environ.get("MATE_TEST_WAIT", "60"))
    except ValueError:
        return 60.0


def wait_until(pred, timeout=None, step=0.05):
    """Calls pred() every step seconds until it returns something true, and returns
    that, or pred()'s last answer after timeout seconds (wait_seconds() by default).
    Every test that depends on time waits for the state it checks, never a fixed time."""
    end = time.monotonic() + (wait_seconds() if timeout is None else timeout)
    while True:
        got = pred()
        if got or time.monotonic() >= end:
            return got
        time.sleep(step)


def wait_for_calls(log, n, timeout=None):
    """Waits until the level 1 log names n calls: the recorder is up and the program
    is in the middle of its work (a fixed sleep is too short on a loaded machine)."""
    def named():
        try:
            with open(log, errors="replace") as f:
                return f.read().count("API Call") >= n
        except FileNotFoundError:
            return False
    return wait_until(named, timeout)


def tmpdir():
    """A new temporary folder, removed when the test ends without a failure."""
    d = tempfile.mkdtemp(prefix="mate-test-")
    if not _tmpdirs:
        atexit.register(_remove_tmpdirs)
    _tmpdirs.append(d)
    return d


def read_safetensors(path, arrays=False):
    """A .safetensors file read by hand, without the safetensors package:
    {name: (dtype, shape, bytes)}, or {name: numpy array} with arrays=True."""
    import json
    import struct
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    body = raw[8 + n:]
    out = {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
           for k, v in header.items()}
    if arrays:
        import numpy as np
        dt = {"F16": np.float16, "F32": np.float32, "F64": np.float64}
        out = {k: np.frombuffer(b, dtype=dt[d]).reshape(shape) for k, (d, shape, b) in out.items()}
    return out


def done():
    """Prints the closing line and exits with the status: 1 when a check failed or none ran."""
    if _checks == 0:
        print("0 checks ran", file=sys.stderr)
    print("%d passed, %d failed" % (_checks - _failures, _failures))
    sys.exit(1 if _failures or _checks == 0 else 0)


# ---- FlashInfer replay tests: record with FlashInfer's real decorator, replay with mate ----

def flashinfer_main(record):
    """The top of a FlashInfer replay test: puts tests/interop/peers on the path;
    run as `script --record` (the child flashinfer_record starts), calls record()
    and exits."""
    sys.path.insert(0, src_path("tests", "interop", "peers"))
    if sys.argv[1:2] == ["--record"]:
        record()
        sys.exit(0)


def flashinfer_record(script, tmp, ncalls, fmt=None):
    """Runs `script --record` with FLASHINFER_LOGLEVEL=10 dumping .pt files into tmp/rec,
    or with fmt ("pt" or "safetensors") files of that format into tmp/FMT (the failures
    named after it); checks that it exits 0 and wrote ncalls dumps.
    @return (root, sorted dump names)."""
    root = os.path.join(tmp, fmt or "rec")
    env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
               FLASHINFER_DUMP_SAFETENSORS="1" if fmt == "safetensors" else "0",
               FLASHINFER_LOGDEST=os.path.join(tmp, fmt + ".log" if fmt else "log"))
    p = subprocess.run([sys.executable, os.path.abspath(script), "--record"], env=env,
                       capture_output=True, text=True)
    what = fmt + ": " if fmt else ""
    check(p.returncode == 0, "%srecording under FlashInfer's decorator: %s" % (what, p.stderr[-3000:]))
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))) \
        if os.path.isdir(root) else []
    check(len(dirs) == ncalls, "%sFlashInfer wrote %d dumps, expected %d" % (what, len(dirs), ncalls))
    return root, dirs


def load_tensors(path):
    """The tensors of a dump's .pt or .safetensors file, as torch's and safetensors' own
    loaders read them (the peers' Python)."""
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        return load_file(path)
    import torch
    return torch.load(path, weights_only=True)


def save_tensors(t, path):
    """Writes the dict t back as path's format (load_tensors())."""
    if path.endswith(".safetensors"):
        from safetensors.torch import save_file
        save_file(t, path)
    else:
        import torch
        torch.save(t, path)


def replay_jsonl(path):
    """mate-replay --jsonl of path: {dump name: its verdict object}."""
    import json
    p = run([build_path("src", "replay", "mate-replay"), "--jsonl", path], check=False)
    return {v["dir"]: v for v in map(json.loads, p.stdout.splitlines())}


# FlashInfer's functions that write their tensor arguments in place and
# return None (with the *_inplace RoPE forms): its decorator records no
# tensors after the call, so mate-replay runs them "unchecked".
FI_IN_PLACE = ("fused_add_rmsnorm", "gemma_fused_add_rmsnorm", "append_paged_kv_cache",
               "append_paged_mla_kv_cache", "rmsnorm_quant", "fused_add_rmsnorm_quant")


def fi_verdict(function):
    """The verdict a good dump of function recorded by FlashInfer's decorator replays as."""
    return "unchecked" if function in FI_IN_PLACE or function.endswith("_inplace") or \
        function.endswith("_in_place") else "passed"


def find_dump(dirs, suffix):
    """The one dump whose name ends _pidN_<suffix> (checked), else the first."""
    import re
    hit = [d for d in dirs if re.search(r"_pid\d+_" + suffix + "$", d)]
    check(len(hit) == 1, "one dump ending %s: %s" % (suffix, hit))
    return hit[0] if hit else dirs[0]


class FlashinferReplay:
    """The calls of script recorded under FlashInfer's decorator (flashinfer_record)
    and replayed once by mate-replay: root, dirs and verdicts; copies of a dump
    changed and replayed again by mutated()."""

    def __init__(self, script, ncalls):
        self.tmp = tmpdir()
        self.root, self.dirs = flashinfer_record(script, self.tmp, ncalls)
        self.verdicts = replay_jsonl(self.root)
        check(sorted(self.verdicts) == self.dirs,
              "mate-replay replayed %d of %d dumps" % (len(self.verdicts), len(self.dirs)))

    def check_passed(self, functions=None, but=()):
        """Checks that every dump but those in but replayed as passed (or, for
        a call in place, unchecked: fi_verdict()) and, given functions, that
        the dumps are of those functions."""
        for d, v in sorted(self.verdicts.items()):
            if d not in but:
                check(v["verdict"] == fi_verdict(v["function"]),
                      "%s: %s replays as %s: %s" % (d, v["function"], v["verdict"], v["message"]))
        if functions is not None:
            funcs = {v["function"] for v in self.verdicts.values()}
            check(funcs == set(functions), "functions replayed: %s" % sorted(funcs))

    def find(self, suffix):
        """The one dump whose name ends _pidN_<suffix> (find_dump)."""
        return find_dump(self.dirs, suffix)

    def mutated(self, dump, change, fname="outputs.pt", inputs=False):
        """The verdict of a copy of dump whose fname tensors went through
        change(dict), or change(dict, the dump's inputs) with inputs=True."""
        import shutil
        import torch
        mroot = os.path.join(self.tmp, "m%d" % len(os.listdir(self.tmp)))
        os.makedirs(mroot)
        shutil.copytree(os.path.join(self.root, dump), os.path.join(mroot, dump))
        path = os.path.join(mroot, dump, fname)
        t = torch.load(path, weights_only=True)
        if inputs:
            change(t, torch.load(os.path.join(mroot, dump, "inputs.pt"), weights_only=True))
        else:
            change(t)
        torch.save(t, path)
        return replay_jsonl(mroot).get(dump, {})

    def lying(self, dump, change, meta=None):
        """The verdict of a copy of dump whose input tensors went through change(dict)
        and whose record's tensor_details say the same: a hostile dump that lies
        consistently (its shapes pass the reader's checks against the record); meta,
        {key: value}, changes the record's other arguments (input_metadata)."""
        import json
        import shutil
        import torch
        d = os.path.join(self.tmp, "l%d" % len(os.listdir(self.tmp)), dump)
        shutil.copytree(os.path.join(self.root, dump), d)
        t = torch.load(os.path.join(d, "inputs.pt"), weights_only=True)
        change(t)
        torch.save(t, os.path.join(d, "inputs.pt"))
        with open(os.path.join(d, "metadata.jsonl")) as f:
            recs = [json.loads(line) for line in f]
        for r in recs:
            for key, v in t.items():
                if key in r.get("tensor_details", {}):
                    r["tensor_details"][key].update(shape=list(v.shape), stride=list(v.stride()),
                                                    dtype=str(v.dtype))
            if "input_metadata" in r:
                r["input_metadata"].update(meta or {})
        with open(os.path.join(d, "metadata.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in recs)
        return replay_jsonl(os.path.dirname(d)).get(dump, {})


def set_element(key, idx, value):
    """A change for FlashinferReplay.mutated(): t[key][idx] = value(t[key][idx])."""
    def change(t):
        t[key][idx] = value(t[key][idx])
    return change


def expect_verdict(what, v, where="", verdict="mismatch"):
    """Checks that verdict object v is verdict with a message naming where."""
    msg = v.get("message") or ""
    check(v.get("verdict") == verdict and where in msg,
          "%s: replays as %s, expected %s naming %s: %s" % (what, v.get("verdict"), verdict, where, msg))
