"""test_doc_examples.py: every shell example of the man pages' EXAMPLES sections and of the
README runs as printed, in one scratch folder per page, with mate's tools first in PATH.

A man page's example is a "$ " line (with its "\\e" continuations); a README example is an
indented line that starts with a command. Each block runs in bash with -e and pipefail, so
every command of every pipeline must succeed; a line the page shows after a command that
looks like a tool's report ("mate-trace: 104232 events in ...", "[1] ... Passed") must match
what the command printed, numbers and names aside. The stand-ins, and nothing else, are:
"./program" and "./my-program" (tests/doc-program: a program recording rmsnorm, mm,
decode and prefill calls through libmate, and a forked child that dies inside a call),
"./train" (tests/record-cuda-prog, the fake CUDA program), and the file names a page
invents for an earlier output (a dump folder's timestamped name, mem-4242.csv, trace.log).
The README's set-up commands (apt-get, autoreconf, configure, make, .ci/run, run-demo.sh,
the peers venv) are the CI's own steps and are not run again here; a terminal UI
(mate-top without -b) is driven by tests/cli/test_events_top_tmux.sh instead."""
import glob
import os
import re
import shutil
import subprocess
import sys

from mate_test import build_path, check, src_path, tmpdir, run_cases

TOOLS = ("mate", "mate-record", "mate-replay", "mate-list-dumps", "mate-trace", "mate-top", "mate-bench",
         "mate-visualize")
SETUP = re.compile(r"^(sudo )?(apt-get|autoreconf|\./configure|make|\.ci/run|"
                   r"examples/run-demo\.sh|tests/peers-venv\.sh)\b")
INTERACTIVE = re.compile(r"^mate-top( -d [\d.]+)?\s*$")
COMMAND = re.compile(r"^([A-Z_][A-Z0-9_]*=\S*\s+)*(mate(-[a-z-]+)?|(build/bin|examples)/mate-demo|"
                     r"\./program|\./my-program|\./train|python3|wait|cat|grep|jq|head)(\s|$)")


def find(name, *dirs):
    for d in dirs:
        p = build_path(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    for p in sorted(glob.glob(build_path("src", "*", name))):
        if os.access(p, os.X_OK):
            return p
    return None


def wrapper(path, target, env=""):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n%sexec %s \"$@\"\n" % (env, target))
    os.chmod(path, 0o755)


def workdir():
    """A scratch folder with bin/ (mate's tools), the stand-ins, tests/fixtures, and the
    files the pages start from: mate_dumps (from ./program at level 10) and trace.log (an
    instruction log of two seconds of the demo)."""
    work = tmpdir()
    # the tools and the demo, where the pages run them: in PATH, and in build/bin/ (a
    # build folder's bin/, as the README builds it)
    demo = find("mate-demo", "bin", "examples")
    for d in ("bin", os.path.join("build", "bin")):
        os.makedirs(os.path.join(work, d))
        for t in TOOLS:
            p = find(t, "bin", ".")
            check(p is not None, "the build has %s" % t)
            if p:
                wrapper(os.path.join(work, d, t), p)
        wrapper(os.path.join(work, d, "mate-demo"), demo)
    prog = build_path("tests", "doc-program")
    # the demo is quick as ./program: MATE_MONITOR_WAIT lets mate-trace attach first
    wrapper(os.path.join(work, "program"), prog)
    wrapper(os.path.join(work, "my-program"), prog)
    wrapper(os.path.join(work, "train"), build_path("tests", "record-cuda-prog"))
    os.mkdir(os.path.join(work, "tests"))
    os.symlink(src_path("tests", "fixtures"), os.path.join(work, "tests", "fixtures"))
    env = environment(work)
    subprocess.run([prog], cwd=work, capture_output=True,
                   env=dict(env, MATE_LOGLEVEL="10", MATE_LOGDEST="/dev/null"), check=True)
    subprocess.run([demo], cwd=work, capture_output=True, check=True,
                   env=dict(env, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
                            MATE_INSTRUCTION_LOG="trace.log", MATE_DEMO_SECONDS="2"))
    return work


def environment(work):
    env = dict(os.environ)
    for v in list(env):
        if v.startswith("MATE_"):
            del env[v]
    # mate's tools, then the Python that runs this test (Debian's, with numpy and torch)
    env["PATH"] = os.pathsep.join([os.path.join(work, "bin"),
                                   os.path.dirname(sys.executable), env["PATH"]])
    env["NO_COLOR"] = "1"
    # the examples' live tools follow "every local publisher": those of this test alone, not
    # another test's or another suite's demo in the user's runtime folder (a capture in a
    # distcheck counted a second suite's demo as its own)
    rt = os.path.join(work, ".mate-runtime")
    os.makedirs(rt, mode=0o700, exist_ok=True)
    env["MATE_MONITOR_DIR"] = rt
    return env


def man_examples(page):
    """The blocks of the EXAMPLES section: lists of (command, [lines shown after it])."""
    text = open(src_path("man", page)).read()
    sect = re.search(r"^\.Sh EXAMPLES\n(.*?)(?=^\.Sh |\Z)", text, re.M | re.S)
    blocks = []
    for body in re.findall(r"^\.Bd -literal[^\n]*\n(.*?)^\.Ed", sect.group(1) if sect else "",
                           re.M | re.S):
        body = body.replace("\\e", "\\").replace("\\(aq", "'").replace("\\-", "-")
        cmds, cont = [], False
        for ln in body.split("\n"):
            if cont:
                cmds[-1][0] += "\n" + ln
            elif ln.startswith("$ "):
                cmds.append([ln[2:], []])
            elif cmds and ln.strip():
                cmds[-1][1].append(ln)
            cont = bool(cmds) and ln.endswith("\\") and not cmds[-1][1]
        if cmds:
            blocks.append(cmds)
    return blocks


def readme_examples():
    """The README's indented blocks, as man_examples gives them."""
    blocks, cur, cmd = [], [], None
    for ln in open(src_path("README.md")).read().split("\n") + [""]:
        if not ln.startswith("    "):
            if cur:
                blocks.append(cur)
            cur, cmd = [], None
            continue
        ln = ln[4:]
        if cmd is not None and (cmd[0].count("'") % 2 == 1 or cmd[0].endswith("\\")):
            cmd[0] += "\n" + ln
        elif COMMAND.match(ln) and not re.match(r"^mate-[a-z-]+:", ln):
            cmd = [ln, []]
            cur.append(cmd)
        elif cmd is not None:
            cmd[1].append(ln)
    return [b for b in blocks if b]


def shape(line):
    """A pattern for a line a page shows: numbers, sizes, dates and names may differ."""
    pat = re.escape(line.strip())
    pat = re.sub(r"\d+(\\\.\d+)?", r"[0-9.]+", pat)
    pat = re.sub(r"(?<=\\\()[0-9.+]*[A-Za-z0-9_.\\+-]*_call[0-9.+]*(?=\\\))", r"[^)]+", pat)
    pat = re.sub(r"pid\\ [0-9.+]+\\ [a-z-]+", r"pid [0-9]+ \\S+", pat)
    pat = re.sub(r"traces/trace_[^ ]*\\\.log", r"traces/trace_\\S+\\.log", pat)
    pat = re.sub(r"\\ in\\ [a-z_]+;", r" in \\S+;", pat)
    return re.compile(pat.replace("1\\ process", "[0-9]+\\ process(es)?")
                      .replace("[0-9.]+\\ process\\b", "[0-9.]+\\ process(es)?"))


def reported(line):
    """Whether a line a page shows after a command is the command's own report."""
    return re.match(r"\s*(mate-[a-z-]+: |\[\d+\] |pid \d+ )", line) is not None


def run_block(where, work, env, cmds, subst):
    """Runs a block's commands in one shell (a program started with & runs on for the next
    ones, $! included), each one's output kept apart, then stops what is left running."""
    script, todo = ["set -o pipefail"], []
    for cmd, shown in cmds:
        text = cmd
        for a, b in subst:
            text = re.sub(a, lambda m: b, text)
        head = text.split("\n", 1)[0].strip()
        if SETUP.match(head):
            continue
        if INTERACTIVE.match(head):
            print("not run here (tests/cli/test_events_top_tmux.sh drives it): %s" % head)
            continue
        n = len(todo)
        todo.append((text, head, shown))
        script += ["{", text, "} > .doc-out%d 2>&1" % n,
                   "rc=$?; echo $rc > .doc-rc%d; [ $rc = 0 ] || exit $rc" % n]
        if text.rstrip().endswith("&") and "MATE_MONITOR=1" in text:
            # a user types the capture once the program has started: its endpoint's .info
            # (a capture run at once, at load 18, ended its second before the demo began)
            script += ['for i in $(seq 600); do ls "$MATE_MONITOR_DIR"/*.info >/dev/null 2>&1 '
                       '&& break; sleep 0.1; done']
    if not todo:
        return
    p = subprocess.Popen(["bash", "-c", "\n".join(script) + "\n"], cwd=work, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        check(False, "%s: the block ran past 180 s: %r" % (where, [t[1] for t in todo]))
    try:
        os.killpg(p.pid, 15)
    except ProcessLookupError:
        pass
    p.wait()
    for n, (text, head, shown) in enumerate(todo):
        rcf, outf = os.path.join(work, ".doc-rc%d" % n), os.path.join(work, ".doc-out%d" % n)
        if not os.path.exists(rcf):
            break
        out = open(outf, errors="replace").read()
        rc = open(rcf).read().strip()
        os.unlink(rcf)
        os.unlink(outf)
        if text.rstrip().endswith("&"):
            continue
        check(rc == "0", "%s: %r exits 0: %s\n%s" % (where, text, rc, out[-1500:]))
        for line in shown:
            if reported(line):
                pat = shape(line)
                check(any(pat.search(o) for o in out.split("\n")),
                      "%s: %r prints a line like %r:\n%s" % (where, head, line.strip(),
                                                             out[-1500:]))


def page(where, blocks, extra=()):
    work = workdir()
    env = environment(work)
    # placeholders, as the shell finds them when the command runs (after the ones before)
    subst = [(r"mate_dumps/20\d{6}_\d{6}_\d{3}_pid\d+_gemm_call\d+",
              "$(ls -d mate_dumps/*_mm_call* | head -n 1)"),
             (r"mem-4242\.csv", "$(ls -t mem-*.csv | head -n 1)")] + list(extra)
    check(len(blocks) > 0, "%s has examples" % where)
    for b in blocks:
        run_block(where, work, env, b, subst)
    shutil.rmtree(work, ignore_errors=True)


def python_example(where):
    """mate.7's "Read a dump in Python", with DIR a dump of ./program (Debian's torch)."""
    text = open(src_path("man", "mate.7")).read()
    m = re.search(r"^\.Bd -literal[^\n]*\n(import torch\n.*?)^\.Ed", text, re.M | re.S)
    check(m is not None, "%s: the Python example" % where)
    if m is None:
        return
    work = workdir()
    dump = sorted(glob.glob(os.path.join(work, "mate_dumps", "*_rmsnorm_call*")))[0]
    code = m.group(1).replace("mate_dumps/DIR", os.path.relpath(dump, work))
    code += "\nassert len(args) == 2, args\n"
    p = subprocess.run(["/usr/bin/python3", "-c", code], cwd=work, capture_output=True,
                       text=True)
    check(p.returncode == 0, "%s: the Python example runs: %s" % (where, p.stderr[-600:]))
    shutil.rmtree(work, ignore_errors=True)


def test_man_pages():
    for man in sorted(os.listdir(src_path("man"))):
        if re.fullmatch(r"[a-z-]+\.[178]", man):
            blocks = man_examples(man)
            if blocks:
                page("%s(%s)" % tuple(man.rsplit(".", 1)), blocks)


def test_readme():
    page("README", readme_examples())


def test_python_example():
    """mate(7)'s Python example, where the system's Python has torch"""
    if os.path.exists("/usr/bin/python3") and subprocess.run(
            ["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0:
        python_example("mate(7)")


run_cases(test_man_pages, test_readme, test_python_example)
