"""test_events_announce.py: MATE_MONITOR=tcp:0 says "monitor: publishing on URL" once the
.info file is in place and names URL, so a script that waits for the line can read the file
(the line came first, and such a script found no file about two times in three)."""
import os
import subprocess

from mate_test import build_path, check, run_cases, tmpdir

RUNS = 20


def once():
    """(a line came, the .info file held its endpoint when it came, the line)"""
    rt = os.path.join(tmpdir(), "rt")
    os.mkdir(rt, 0o700)
    env = dict(os.environ, MATE_MONITOR_DIR=rt, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
               MATE_MONITOR="tcp:0", MATE_DEMO_SECONDS="5")
    p = subprocess.Popen([build_path("examples", "mate-demo")], env=env, text=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said, found = None, False
    for line in p.stderr:
        if "monitor: publishing on " in line:
            said = line.split("publishing on ", 1)[1].strip()
            try:
                with open(os.path.join(rt, "%d.info" % p.pid)) as f:
                    found = ("endpoint=%s\n" % said) in f.read()
            except FileNotFoundError:
                pass
            break
    p.terminate()
    p.communicate(timeout=60)
    return said is not None, found, said


def test_info_before_line():
    results = [once() for _ in range(RUNS)]
    check(all(r[0] for r in results), "every run says where it publishes")
    late = sum(1 for r in results if r[0] and not r[1])
    check(late == 0, "the .info file names the endpoint when the line comes: %d of %d runs "
          "found none (%s)" % (late, RUNS, results[0][2]))


run_cases(test_info_before_line)
