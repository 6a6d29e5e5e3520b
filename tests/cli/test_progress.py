"""test_progress.py: long work shows its progress on a terminal and nowhere else: mate-list-dumps listing, reading (-d) and scanning (--nonfinite) a root of 200 dumps; mate-bench over a profile file; mate-visualize reading a 100,000-line log (bytes read of the file's size); mate-replay with standard error on a pseudo-terminal draws "mate-replay: replayed N/TOTAL (P%), R/s" lines (redrawn with a carriage return, erased at the end, none inside its own output lines), with standard output on the same terminal or a pipe; nothing with standard error on a pipe, and nothing with -q. MATE_PROGRESS_AFTER=0 draws from the first step."""
import os
import pty
import subprocess
import sys

from mate_test import build_path, check, run_cases, src_path, tmpdir

REPLAY = build_path("src", "replay", "mate-replay")
LIST = build_path("src", "replay", "mate-list-dumps")
BENCH = build_path("src", "bench", "mate-bench")
VISUALIZE = build_path("mate-visualize")
work = tmpdir()
root = os.path.join(work, "root")
subprocess.run([sys.executable, src_path("bench", "gen-dumps.py"), root, "200"], check=True,
               stdout=subprocess.DEVNULL)
ENV = dict(os.environ, MATE_PROGRESS_AFTER="0")


def on_pty(args, stdout_too=False):
    """Runs args with stderr (and stdout, when stdout_too) on a new pseudo-terminal; returns
    (what the terminal got, what stdout got, exit status)."""
    master, slave = pty.openpty()
    outfile = open(os.path.join(work, "stdout"), "w+b")   # a file: no pipe to fill while we read
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=slave,
                         stdout=slave if stdout_too else outfile, env=ENV)
    os.close(slave)
    term = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        term += chunk
    p.wait()
    os.close(master)
    outfile.seek(0)
    out = outfile.read()
    outfile.close()
    return term.decode(errors="replace"), out.decode(errors="replace"), p.returncode


def test_replay_progress_on_a_terminal():
    term, out, rc = on_pty([REPLAY, "--jsonl", root])
    check("\r\x1b[Kmate-replay: replayed " in term and "/200 (" in term and "/s" in term,
          "a progress line on the terminal: %r" % term[:300])
    last = term.rfind("mate-replay: replayed ")
    check(last >= 0 and "\r\x1b[K" in term[last:term.find("Summary", last)],
          "the last progress line is erased before the summary: %r" % term[-300:])
    check(out.count("\n") == 200 and "\r" not in out, "stdout holds the 200 JSON lines alone")
    # the text form on the same terminal: every result line whole, after an erase
    term, _, rc = on_pty([REPLAY, root], stdout_too=True)
    lines = [l for l in term.replace("\r\x1b[K", "\n").split("\n") if l.startswith("[")]
    check(len(lines) == 200 and all("] " in l and "replayed" not in l for l in lines),
          "200 whole result lines among the progress lines: %d %r" % (len(lines), lines[:2]))


def test_no_progress_off_a_terminal():
    p = subprocess.run([REPLAY, "--jsonl", root], capture_output=True, text=True, env=ENV)
    check("replayed" not in p.stderr and "\r" not in p.stderr,
          "no progress with stderr on a pipe: %r" % p.stderr[:300])
    term, _, _ = on_pty([REPLAY, "-q", "--jsonl", root])
    # (the terminal itself ends lines with \r\n: the erase sequence is what a progress line has)
    check("replayed" not in term and "\x1b[K" not in term, "none with -q: %r" % term[:300])


def test_visualize_progress():
    log = os.path.join(work, "big.log")
    subprocess.run([sys.executable, src_path("bench", "gen-ilog.py"), "--lines", "100000", "-o", log],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    size = "{:,}".format(os.path.getsize(log))
    term, _, rc = on_pty([VISUALIZE, log, "-o", os.path.join(work, "big.png")])
    check(rc == 0 and "\r\x1b[Kmate-visualize: read bytes of " in term and "/%s (" % size in term,
          "a progress line of the bytes read: %d %r" % (rc, term[:300]))
    last = term.rfind("read bytes of ")
    check(last >= 0 and "\r\x1b[K" in term[last:term.find("wrote", last)],
          "erased before the summary: %r" % term[-300:])
    p = subprocess.run([VISUALIZE, log, "-o", os.path.join(work, "big2.png")], capture_output=True,
                       text=True, env=ENV)
    check(p.returncode == 0 and "read bytes" not in p.stderr, "none on a pipe: %r" % p.stderr[:300])


def test_list_dumps_progress():
    """mate-list-dumps: the listing (-d: reading every tensor file's header) and --nonfinite
    (every tensor read) show dumps done of the root's on a terminal, erased before the summary;
    nothing on a pipe or with -q."""
    for args, word in (([], "listed"), (["-d"], "read"), (["--nonfinite"], "scanned")):
        term, out, rc = on_pty([LIST] + args + [root])
        check("\r\x1b[Kmate-list-dumps: %s " % word in term and "/200 (" in term,
              "%s: a progress line: %r" % (args, term[:300]))
        last = term.rfind("mate-list-dumps: %s " % word)
        check(last >= 0 and "\r\x1b[K" in term[last:], "%s: erased at the end: %r" % (args, term[-300:]))
        check("\r" not in out, "%s: stdout has no progress: %r" % (args, out[:200]))
        p = subprocess.run([LIST] + args + [root], capture_output=True, text=True, env=ENV)
        check(word + " " not in p.stderr and "\r" not in p.stderr,
              "%s: none on a pipe: %r" % (args, p.stderr[:300]))
        term, _, _ = on_pty([LIST, "-q"] + args + [root])
        check("\x1b[K" not in term, "%s: none with -q: %r" % (args, term[:300]))


def test_bench_progress():
    """mate-bench over a profile file: entries benchmarked of the file's, each result line
    whole; none for a pipe on stdin (no total), on a pipe, or with -q."""
    prof = os.path.join(work, "profile.jsonl")
    with open(prof, "w") as f:
        subprocess.run([LIST, "-q", "--unique", "--jsonl", root], stdout=f, check=True)
    entries = sum(1 for l in open(prof) if l.strip())
    check(entries >= 2, "a profile of several entries: %d" % entries)
    term, _, rc = on_pty([BENCH, "-n", "1", prof], stdout_too=True)
    check("\r\x1b[Kmate-bench: benchmarked " in term and "/%d (" % entries in term,
          "a progress line of the entries: %r" % term[:400])
    lines = [l for l in term.replace("\r\x1b[K", "\n").split("\n") if " [" in l and "]: " in l]
    check(len(lines) == entries and all("benchmarked" not in l for l in lines),
          "%d whole result lines: %d %r" % (entries, len(lines), lines[:2]))
    p = subprocess.run([BENCH, "-n", "1", prof], capture_output=True, text=True, env=ENV)
    check("benchmarked " not in p.stderr.replace(" benchmarked,", ""), "none on a pipe: %r" % p.stderr[:300])
    term, _, _ = on_pty([BENCH, "-q", "-n", "1", prof])
    check("\x1b[K" not in term, "none with -q: %r" % term[:300])


run_cases(test_replay_progress_on_a_terminal, test_no_progress_off_a_terminal, test_visualize_progress,
          test_list_dumps_progress, test_bench_progress)
