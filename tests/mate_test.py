"""mate_test.py: helpers shared by mate's Python interop tests (paths, running binaries, checks)."""
import os
import subprocess
import sys
import tempfile

TOP_SRCDIR = os.environ.get("top_srcdir", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP_BUILDDIR = os.environ.get("top_builddir", TOP_SRCDIR)

_failures = 0
_checks = 0


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


def check(cond, what):
    """Records one assertion; prints what failed."""
    global _failures, _checks
    _checks += 1
    if not cond:
        _failures += 1
        print("FAIL:", what, file=sys.stderr)


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


def tmpdir():
    return tempfile.mkdtemp(prefix="mate-test-")


def done():
    """Prints the closing line and exits with the status: 1 when a check failed or none ran."""
    if _checks == 0:
        print("0 checks ran", file=sys.stderr)
    print("%d passed, %d failed" % (_checks - _failures, _failures))
    sys.exit(1 if _failures or _checks == 0 else 0)
