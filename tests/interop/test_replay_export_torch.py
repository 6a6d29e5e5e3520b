# mate-python: peers
"""test_replay_export_torch.py: mate-replay --export of calls recorded by FlashInfer's real decorator (torch's Tensor.mm and Tensor.softmax under MATE's names, FlashInfer's rmsnorm as the peers' torch reference) writes a repro.py that runs on the CPU under the peers' torch 2.x and Debian's torch 1.13 and gives mate-replay's verdict: passed, and a planted wrong output element as the same mismatch at the same index (exit 1); a call named as FlashInfer's own compiles and names what it imports; safetensors dumps load through safetensors; a wrapper's method without its recorded __init__ is refused."""
import os
import py_compile
import re
import shutil
import sys
import types

from mate_test import (build_path, check, find_dump, flashinfer_main, flashinfer_record, replay_jsonl, run,
                       run_cases, src_path, tmpdir)

REPLAY = build_path("src", "replay", "mate-replay")


def record():
    import torch

    from flashinfer_peer import load_api_logging, rmsnorm

    api = load_api_logging()

    def mm(input, mat2):
        return torch.mm(input, mat2)

    def softmax(input, dim, dtype=None):
        return torch.softmax(input, dim, dtype=dtype)

    for f in (mm, softmax):       # the names MATE's decorator gives torch's methods
        f.__module__, f.__name__ = "torch", "Tensor." + f.__name__

    def named(mod):
        """rmsnorm as a function of module mod (the same code)."""
        f = types.FunctionType(rmsnorm.__code__, rmsnorm.__globals__, "rmsnorm", rmsnorm.__defaults__)
        f.__module__ = mod
        return f

    class DemoWrapper:
        def run(self, x):
            return x * 2

    torch.manual_seed(5)
    api.flashinfer_api(mm)(torch.randn(33, 17), torch.randn(17, 9))                        # 1
    api.flashinfer_api(softmax)(torch.randn(6, 40, dtype=torch.bfloat16), -1)              # 2
    x, w = torch.randn(4, 64, dtype=torch.float16), torch.randn(64, dtype=torch.float16)
    api.flashinfer_api(named("flashinfer_peer"))(x, w, eps=1e-5)                           # 3
    api.flashinfer_api(named("flashinfer.norm"))(x, w, 1e-5)                               # 4
    api.flashinfer_api(DemoWrapper.run)(DemoWrapper(), torch.ones(3))                      # 5


flashinfer_main(record)
TMP = tmpdir()
ROOT, DIRS = flashinfer_record(__file__, TMP, 5)
VERDICTS = replay_jsonl(ROOT)
PYTHONS = [("torch 2.x", sys.executable)]
if os.environ.get("PYTHON_TORCH"):
    PYTHONS.append(("torch 1.13", os.environ["PYTHON_TORCH"]))
else:
    print("no PYTHON_TORCH: repro.py runs under the peers' torch only")
ENV = dict(os.environ, PYTHONPATH=src_path("tests", "interop", "peers"), CUDA_VISIBLE_DEVICES="")


def export(dump, name):
    out = os.path.join(TMP, name)
    p = run([REPLAY, "--export", dump, "-o", out], check=False)
    check(p.returncode == 0, "export of %s: exit %d: %s" % (dump, p.returncode, p.stderr))
    return out


def repro(out, python):
    """(exit status, its line) of out/repro.py run from elsewhere."""
    p = run([python, os.path.join(out, "repro.py"), "--device", "cpu"], check=False, cwd="/", env=ENV)
    return p.returncode, (p.stdout.strip() or p.stderr.strip())


def planted(dump, key, idx, delta):
    """A copy of dump with outputs.pt's key[idx] += delta."""
    import torch
    root = os.path.join(TMP, "planted-" + os.path.basename(dump))
    os.makedirs(root)
    copy = os.path.join(root, os.path.basename(dump))
    shutil.copytree(dump, copy)
    t = torch.load(os.path.join(copy, "outputs.pt"), weights_only=True)
    t[key][idx] += delta
    torch.save(t, os.path.join(copy, "outputs.pt"))
    return copy


def test_passed():
    for suffix in ("Tensor.mm_call0001", "Tensor.softmax_call0001", "rmsnorm_call0001"):
        d = find_dump(DIRS, suffix)
        check(VERDICTS[d]["verdict"] == "passed", "%s: mate-replay: %s" % (d, VERDICTS[d]["message"]))
        out = export(os.path.join(ROOT, d), "pass-" + suffix)
        for f in ("repro.py", "README", "inputs.pt", "outputs.pt"):
            check(os.path.isfile(os.path.join(out, f)), "%s has no %s" % (out, f))
        for what, python in PYTHONS:
            rc, line = repro(out, python)
            check(rc == 0 and ": Passed (" in line, "%s under %s: exit %d: %s" % (suffix, what, rc, line))


def test_mismatch():
    import json
    for suffix, idx, delta in (("Tensor.mm_call0001", (20, 5), 0.5),
                               ("Tensor.softmax_call0001", (3, 17), 0.25),
                               ("rmsnorm_call0001", (2, 40), 1.0)):
        d = planted(os.path.join(ROOT, find_dump(DIRS, suffix)), "result", idx, delta)
        p = run([REPLAY, "--jsonl", d], check=False)
        v = json.loads(p.stdout.splitlines()[0])
        where = "[%d, %d]" % idx
        check(v["verdict"] == "mismatch" and v["key"] == "result" and v["first_bad_index"] == where,
              "%s: mate-replay: %s" % (suffix, v["message"]))
        out = export(d, "bad-" + suffix)
        for what, python in PYTHONS:
            rc, line = repro(out, python)
            check(rc == 1 and ": Mismatch: result" + where + ": expected" in line,
                  "%s under %s: exit %d: %s" % (suffix, what, rc, line))
            if suffix.startswith("Tensor.") and what == "torch 2.x":
                # the same message as mate-replay's, word for word (Tensor.mm's with the
                # product's reduction bound, 2 K u (|A| |B|)ij), but for the value got: torch's
                # product and mate's kernel may round differently
                def masked(m):
                    return re.sub(r"got [^ ]+ ", "got _ ", m)
                check(masked(line.split(": Mismatch: ", 1)[-1]) == masked(v["message"]),
                      "repro.py says %s, mate-replay %s" % (line, v["message"]))


def test_flashinfer():
    d = find_dump(DIRS, "rmsnorm_call0002")
    out = export(os.path.join(ROOT, d), "flashinfer")
    if not os.path.isfile(os.path.join(out, "repro.py")):
        check(False, "no repro.py in %s" % out)
        return
    py_compile.compile(os.path.join(out, "repro.py"), doraise=True)
    text = open(os.path.join(out, "repro.py")).read()
    check("MODULE = _s(b'flashinfer.norm')" in text and "NAME = _s(b'rmsnorm')" in text,
          "repro.py does not call flashinfer.norm.rmsnorm")
    p = run([sys.executable, "-c", "import flashinfer.norm"], check=False, env=ENV)
    if p.returncode != 0:   # flashinfer's package wants its kernels (a GPU machine)
        rc, line = repro(out, sys.executable)
        check(rc == 2 and "cannot find flashinfer.norm.rmsnorm" in line,
              "without an importable flashinfer: exit %d: %s" % (rc, line))
    else:
        print("flashinfer imports here: repro.py resolves flashinfer.norm.rmsnorm")


def test_safetensors():
    root, dirs = flashinfer_record(__file__, TMP, 5, fmt="safetensors")
    for suffix in ("Tensor.softmax_call0001", "rmsnorm_call0001"):
        d = os.path.join(root, find_dump(dirs, suffix))
        out = export(d, "st-" + suffix)
        check(os.path.isfile(os.path.join(out, "outputs.safetensors")), "%s: no outputs.safetensors" % out)
        for what, python in PYTHONS:
            if run([python, "-c", "import safetensors.torch"], check=False).returncode != 0:
                print("no safetensors under %s: its repro.py not run" % what)
                continue
            rc, line = repro(out, python)
            check(rc == 0 and ": Passed (" in line, "%s under %s: exit %d: %s" % (suffix, what, rc, line))


def test_wrapper_refused():
    d = find_dump(DIRS, "DemoWrapper.run_call0001")
    out = os.path.join(TMP, "wrapper")
    p = run([REPLAY, "--export", os.path.join(ROOT, d), "-o", out], check=False)
    check(p.returncode == 1 and re.search(r"no \S*DemoWrapper\.__init__ of its object", p.stderr),
          "wrapper method: exit %d: %s" % (p.returncode, p.stderr))
    check(not os.path.exists(out), "a folder was written for a refused export")
    check(not [f for f in os.listdir(TMP) if ".export-" in f], "a temporary folder is left")


run_cases(test_passed, test_mismatch, test_flashinfer, test_safetensors, test_wrapper_refused)
