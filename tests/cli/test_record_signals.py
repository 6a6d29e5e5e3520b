"""test_record_signals.py: SIGINT and SIGTERM sent to mate-record reach the program; its status comes back."""
import os
import signal
import subprocess

from mate_test import (build_path, check, default_signals, need_preload, record_env, run_cases, tmpdir,
                       wait_until)

need_preload()
RECORD = build_path("src", "record", "mate-record")
work = tmpdir()
env = record_env()


def start(script):
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    # a shell's background jobs start with SIGINT ignored, and ignored
    # signals pass to the program (as nohup wants): start from the defaults
    p = subprocess.Popen([RECORD, "-q", "--", "sh", "-c", script], cwd=work, env=env,
                         preexec_fn=default_signals)
    wait_until(lambda: os.path.exists(ready), step=0.025)
    check(os.path.exists(ready), "the program started")
    return p


def signal_reaches(name):
    """SIGname sent to mate-record reaches the program, trapped and not."""
    sig = getattr(signal, "SIG" + name)
    # trapped: the program sees the signal and exits 7
    p = start("trap 'echo %s > got; exit 7' %s; touch ready; while :; do sleep 0.05; done"
              % (name, name))
    p.send_signal(sig)
    rc = p.wait(timeout=30)
    check(rc == 7, "SIG%s trapped: status %d, expected 7" % (name, rc))
    got = open(os.path.join(work, "got")).read().strip() if os.path.exists(os.path.join(work, "got")) else ""
    check(got == name, "the program got SIG%s (it wrote %r)" % (name, got))
    # not trapped: the program dies of it, mate-record exits 128+N
    p = start("touch ready; while :; do sleep 0.05; done")
    p.send_signal(sig)
    rc = p.wait(timeout=30)
    check(rc == 128 + sig, "SIG%s kills: status %d, expected %d" % (name, rc, 128 + sig))


def test_sigint():
    signal_reaches("INT")


def test_sigterm():
    signal_reaches("TERM")


run_cases(test_sigint, test_sigterm)
