#!/usr/bin/env python3
# mate-python: peers
"""test_fi_coverage.py: mate-replay --coverage and --list-ops's coverage line against the FlashInfer installed in the peers' venv (or MATE_FLASHINFER's, the newest release in CI): the APIs its sources decorate with @flashinfer_api, as Python's own parser (ast) finds them in the same files and named as FlashInfer's real decorator names their calls (Class.method for a "Wrapper" class, else the bare name: checked by calling it), each marked as replaying or not by the handlers --list-ops lists; the summary's counts; python3 on PATH finds the package without importing it; a package of our own with classes, nested classes, async and multi-line decorators; no FlashInfer: --list-ops as before, --coverage exits 1."""
import ast
import importlib.util
import os
import subprocess
import sys

from mate_test import build_path, check, run, run_cases, src_path, tmpdir

RP = build_path("src", "replay", "mate-replay")
SPEC = importlib.util.find_spec("flashinfer")   # located, not imported (no GPU here)
FOUND = SPEC.submodule_search_locations[0] if SPEC and SPEC.submodule_search_locations else None
# the folder that holds the package under test: MATE_FLASHINFER's (CI's newest), else the venv's
HOLDER = os.environ.get("MATE_FLASHINFER") or (os.path.dirname(FOUND) if FOUND else None)
PKG = os.path.join(HOLDER, "flashinfer") if HOLDER else None

# how FlashInfer's decorator names a method's calls, asked of the real decorator below
WRAPPED = ("Wrapper", "MoELayer")


def call_name(cls, name):
    return cls + "." + name if cls and (WRAPPED[0] in cls or cls == WRAPPED[1]) else name


def decorated(pkg):
    """The qualified names Python's parser finds decorated with flashinfer_api in pkg."""
    names = set()

    def visit(node, cls):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                decs = [d.func if isinstance(d, ast.Call) else d for d in child.decorator_list]
                if any(isinstance(d, ast.Name) and d.id == "flashinfer_api" for d in decs):
                    names.add(call_name(cls, child.name) if not isinstance(child, ast.ClassDef)
                              else child.name)
                if isinstance(child, ast.ClassDef):
                    visit(child, child.name)
    for root, dirs, files in os.walk(pkg):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        for f in files:
            if f.endswith(".py") and not os.path.islink(os.path.join(root, f)):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    try:
                        visit(ast.parse(fh.read()), "")
                    except SyntaxError:
                        pass
    return names


def coverage(env_more, *args):
    env = dict(os.environ, **env_more)
    return run([RP, "--coverage"] + list(args), check=False, env=env)


def handlers():
    return {line.split("\t")[0] for line in run([RP, "--list-ops"], env=dict(os.environ, MATE_FLASHINFER="none")).stdout.splitlines()}


def test_decorator_names():
    """The naming rule the checks below expect, asked of FlashInfer's real decorator."""
    d = tmpdir()
    log = os.path.join(d, "log")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from flashinfer_peer import load_api_logging\n"
            "api = load_api_logging()\n"
            "class PagedWrapper:\n    @api.flashinfer_api\n    def run(self, x): return x\n"
            "class Plain:\n    @api.flashinfer_api\n    def step(self, x): return x\n"
            "PagedWrapper().run(1); Plain().step(2)\n" % src_path("tests", "interop", "peers"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, FLASHINFER_LOGLEVEL="1", FLASHINFER_LOGDEST=log))
    text = open(log).read() if os.path.exists(log) else ""
    names = [x.split("API Call: ", 1)[1].strip() for x in text.splitlines() if "API Call: " in x]
    check(p.returncode == 0 and names == [call_name("PagedWrapper", "run"), call_name("Plain", "step")],
          "FlashInfer's decorator names the calls %s: %s %s" % (names, p.stderr[-500:], text[-300:]))


def test_installed():
    check(PKG is not None and os.path.isdir(PKG), "a flashinfer package to read: %s" % PKG)
    if PKG is None:
        return
    p = coverage({"MATE_FLASHINFER": HOLDER})
    check(p.returncode == 0, "--coverage exits 0: %d %s" % (p.returncode, p.stderr))
    got = dict(line.split("\t") for line in p.stdout.splitlines())
    want = decorated(PKG)
    check(set(got) == want, "the decorated APIs as Python's parser finds them: %d of %d; only mate's: %s; "
          "only ast's: %s" % (len(got), len(want), sorted(set(got) - want)[:5], sorted(want - set(got))[:5]))
    ops = handlers()
    wrong = [n for n, v in got.items() if (v == "replays") != (n in ops)]
    check(not wrong, "each marked as --list-ops has a handler for it: %s" % wrong[:5])
    for name, v in (("rmsnorm", "replays"), ("BatchDecodeWithPagedKVCacheWrapper.run", "replays"),
                    ("BatchDecodeWithPagedKVCacheWrapper.workspace_size", "-")):
        check(got.get(name) == v, "%s: %r, want %r" % (name, got.get(name), v))
    yes = sum(v == "replays" for v in got.values())
    line = [x for x in p.stderr.splitlines() if "decorates" in x]
    check(len(line) == 1 and (" decorates %d APIs (" % len(got)) in line[0] and
          (": %d replay here, %d do not" % (yes, len(got) - yes)) in line[0],
          "the summary's counts (%d, %d): %s" % (len(got), yes, p.stderr))
    js = coverage({"MATE_FLASHINFER": HOLDER}, "--jsonl")
    check(js.stdout.count('"replays":true') == yes and js.stdout.count("\n") == len(got),
          "--jsonl: one object per API, %d replaying" % yes)


def test_python3_on_path():
    """Without MATE_FLASHINFER, python3 on PATH locates the package."""
    if FOUND is None:
        return
    d = tmpdir()
    with open(os.path.join(d, "python3"), "w") as f:   # this interpreter, its venv's packages
        f.write("#!/bin/sh\nexec '%s' \"$@\"\n" % sys.executable)
    os.chmod(os.path.join(d, "python3"), 0o755)
    env = dict(os.environ, PATH=d + ":" + os.environ["PATH"])
    env.pop("MATE_FLASHINFER", None)
    p = subprocess.run([RP, "--list-ops"], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and ("(%s)" % FOUND) in p.stderr,
          "--list-ops names the package python3 finds: %s" % p.stderr)
    plain = run([RP, "--list-ops"], env=dict(os.environ, MATE_FLASHINFER="none"))
    check(p.stdout == plain.stdout and plain.stderr == "",
          "--list-ops's standard output is the handlers', as without FlashInfer")


def test_own_package():
    holder = tmpdir()
    d = os.path.join(holder, "flashinfer")
    os.makedirs(os.path.join(d, "sub"))
    os.makedirs(os.path.join(d, "__pycache__"))
    with open(os.path.join(d, "__init__.py"), "w") as f:
        f.write("""from .api_logging import flashinfer_api
# @flashinfer_api in a comment
@flashinfer_api
def rmsnorm(x):
    pass

class OuterWrapper:
    @flashinfer_api
    def run(self):
        pass

    class Inner:
        @flashinfer_api(
            trace=None,
        )
        @staticmethod
        def step():
            pass

    @flashinfer_api
    async def later(self):
        pass

class Helper:
    @flashinfer_api
    def compute(self):
        pass

def plain():
    '''An example in a docstring is not code:

       @flashinfer_api(trace=my_op_trace)
       def my_op(x):
           ...
    '''
    pass

@flashinfer_api
class Whole:
    def __init__(self):
        pass
""")
    with open(os.path.join(d, "sub", "more.py"), "w") as f:
        f.write("@flashinfer_api(trace=t)\ndef unreplayed_gemm(a, b):\n    pass\n")
    with open(os.path.join(d, "__pycache__", "old.py"), "w") as f:
        f.write("@flashinfer_api\ndef stale():\n    pass\n")
    p = coverage({"MATE_FLASHINFER": holder})
    got = dict(line.split("\t") for line in p.stdout.splitlines())
    want = {"rmsnorm": "replays", "OuterWrapper.run": "-", "step": "-", "OuterWrapper.later": "-",
            "compute": "-", "Whole": "-", "unreplayed_gemm": "-"}
    check(got == want, "our package's decorated names: %s" % got)
    check(decorated(d) == set(want), "and Python's parser agrees: %s" % sorted(decorated(d)))
    check("decorates 7 APIs (" in p.stderr and ": 1 replay here, 6 do not" in p.stderr,
          "its summary: %s" % p.stderr)


def test_none():
    p = run([RP, "--list-ops"], env=dict(os.environ, MATE_FLASHINFER="none"))
    check(p.returncode == 0 and p.stderr == "" and "rmsnorm\t" in p.stdout,
          "no FlashInfer: --list-ops as before, nothing on standard error")
    c = coverage({"MATE_FLASHINFER": "none"})
    check(c.returncode == 1 and c.stdout == "" and "--coverage: no FlashInfer here" in c.stderr,
          "--coverage without FlashInfer exits 1 and says why: %d %s" % (c.returncode, c.stderr))
    empty = tmpdir()
    c = coverage({"MATE_FLASHINFER": empty})
    check(c.returncode == 1 and c.stdout == "" and "holds no flashinfer package" in c.stderr,
          "a folder without the package says so: %s" % c.stderr)
    os.makedirs(os.path.join(empty, "flashinfer"))
    c = coverage({"MATE_FLASHINFER": empty})
    check(c.returncode == 0 and c.stdout == "" and "no function decorated" in c.stderr,
          "a package with no decorated function says so: %s" % c.stderr)


run_cases(test_decorator_names, test_installed, test_python3_on_path, test_own_package, test_none)
