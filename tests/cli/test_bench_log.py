"""test_bench_log.py: MATE_BENCH_LOG's script of one mate-bench line per distinct call.

The oracle is the command-line form of a profile entry (mate(7), written here from its
specification): the demo (16 client threads) at level 1 with MATE_PROFILE and MATE_BENCH_LOG
gives a script whose lines are the profile's entries in that form, each once; without a
profile (level 3) the lines are the same; level 0 writes no file. tests/doc-program's forked
child writes its own file with %i and shares its parent's without; SIGTERM in the middle of
the demo leaves whole lines; a path that cannot be opened (a missing folder, a FIFO nobody
reads, a symlink planted at a %i name) costs one warning and neither blocks nor redirects;
a partial line an earlier run left, a file-size limit, a name with a newline and a file
planted at a %i name never leave a line that runs other than it reads."""
import functools
import glob
import json
import os
import resource
import shlex
import signal
import string
import subprocess

from mate_test import (build_path, check, default_signals, run, run_cases, tmpdir, wait_for_calls,
                       wait_seconds)

DEMO = build_path("examples", "mate-demo")
BENCH = build_path("src", "bench", "mate-bench")
PROG = build_path("tests", "doc-program")
CALLS = build_path("tests", "benchlog-calls")
SAFE = set(string.ascii_letters + string.digits + "_.,:=@/+-")


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MATE_")}
    e.update({"MATE_LOGDEST": "/dev/null"}, **kw)
    return e


# ---- the oracle: a profile entry in its command-line form ------------------------------

class Raw(str):
    """A JSON number's text as the profile wrote it (cJSON's spelling, kept as-is)."""


def compact(v):
    """A value as cJSON_PrintUnformatted writes it (numbers as the profile spelled them)."""
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(compact(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + compact(x)
                          for k, x in v.items()) + "}"


def word(s):
    """A word as bench-cli.md quotes it."""
    if s and all(c in SAFE for c in s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"


def contiguous(shape):
    """The strides of a row-major tensor of shape."""
    stride, step = [], 1
    for n in reversed(shape):
        stride.insert(0, step)
        step *= max(n, 1)
    return stride


def dims(v):
    return "[" + ",".join(str(int(x)) for x in v) + "]"


def cli_form(raw_line):
    """The mate-bench line of one profile line."""
    e = json.loads(raw_line, parse_float=Raw, parse_int=Raw)
    words = ["mate-bench"]
    if e.get("module") not in (None, "<unknown>"):
        words += ["-m", word(e["module"])]
    words += ["-c", word(e["function"])]
    for key, t in e["tensors"].items():
        shape = [int(x) for x in t["shape"]]
        stride = [int(x) for x in t["stride"]]
        spec = t["dtype"][len("torch."):] if t["dtype"].startswith("torch.") else t["dtype"]
        spec += dims(shape)
        if stride != contiguous(shape):
            spec += "@" + dims(stride)
        if t["device"] != "cpu":
            spec += ":" + t["device"]
        words.append(word(key + "=" + spec))
    for key, v in e["scalars"].items():
        words.append(word(key + "=" + compact(v)))
    return " ".join(words)


def profile_lines(path):
    with open(path) as f:
        return sorted(cli_form(x) for x in f)


# the last line of the header that counts the entries (mate(7)); each entry is then its
# mate-bench line and RAN (an older header: the line alone)
HEAD_END = "trap 'exit 143' TERM"
RAN = "mate_bench_ran $?"


def script(path, what):
    """The bench log's lines after its header, each checked whole."""
    check(os.path.exists(path), "%s: the bench log %s is written" % (what, path))
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    check(text.endswith("\n"), "%s: the file ends with a whole line: %r" % (what, text[-80:]))
    check(lines[0] == "#!/bin/sh" and lines[1].startswith("# "),
          "%s: a script: #!/bin/sh and a comment first: %s" % (what, lines[:2]))
    body = [x for x in lines[2:] if x != ""]
    if HEAD_END in body:
        body = body[body.index(HEAD_END) + 1:]
        check(len(body) % 2 == 0 and all(x == RAN for x in body[1::2]),
              "%s: each line followed by %r: %s" % (what, RAN, body))
        body = body[0::2]
    for x in body:
        ok = True
        try:
            ok = shlex.split(x)[0] == "mate-bench"
        except ValueError:
            ok = False
        check(ok, "%s: a whole mate-bench line: %r" % (what, x))
    return body


# ---- the tests ---------------------------------------------------------------------------

@functools.cache
def test_demo_lines():
    work = tmpdir()
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl",
                                  MATE_BENCH_LOG="bench-%i.sh", MATE_DEMO_THREADS="16"))
    files = glob.glob(os.path.join(work, "bench-*.sh"))
    check(len(files) == 1, "one bench log for one process: %s" % files)
    if not files:
        return None
    body = script(files[0], "the demo")
    want = profile_lines(os.path.join(work, "prof.jsonl"))
    check(len(body) == len(set(body)), "each shape once (16 threads): %d lines, %d distinct"
          % (len(body), len(set(body))))
    check(sorted(body) == want, "the lines are the profile's entries in the command-line form:"
          "\n%s\nwant:\n%s" % ("\n".join(sorted(body)), "\n".join(want)))
    check(any("@[" in x for x in body) and any(" -m minilib " in x for x in body) and
          any("'kwarg_" in x or "'arg_" in x for x in body),
          "strides, the module and quoting appear: %s" % body[:3])
    # the lines come as the shapes first appear, before the exit writes the profile
    check(len(body) >= 4, "the demo's shapes: %d" % len(body))
    return body


def test_runs_as_printed():
    """The demo's bench log is a script that runs as printed (mate-bench in PATH), and each
    line benchmarks the problem of its profile entry: the same key, tensors and scalars."""
    work = tmpdir()
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl",
                                  MATE_BENCH_LOG="bench.sh", MATE_DEMO_THREADS="2"))
    path = dict(os.environ, PATH=os.path.dirname(BENCH) + os.pathsep + os.environ["PATH"])
    entries = {}
    for ln in open(os.path.join(work, "prof.jsonl")):
        e = json.loads(ln)
        entries[e["key"]] = e
    p = subprocess.run(["sh", os.path.join(work, "bench.sh")], cwd=work, env=path,
                       capture_output=True, text=True)
    out = [x for x in p.stdout.splitlines() if x]
    failing = sum(e["failed"] == e["calls"] for e in entries.values())
    check(len(out) == len(entries), "sh bench.sh: a line per shape: %d of %d\n%s"
          % (len(out), len(entries), p.stdout + p.stderr))
    check(sum(" median " in x for x in out) == len(entries) - failing,
          "sh bench.sh: every shape but the demo's failing one timed:\n%s" % p.stdout)
    for ln in script(os.path.join(work, "bench.sh"), "runs as printed"):
        r = subprocess.run(ln + " -n 1 --jsonl", shell=True, cwd=work, env=path,
                           capture_output=True, text=True)
        got = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        e = entries.get(got[0]["key"]) if len(got) == 1 else None
        check(e is not None and got[0]["problem"]["tensors"] == e["tensors"] and
              got[0]["problem"]["scalars"] == e["scalars"] and got[0]["function"] == e["function"],
              "%s: the profile entry's problem, by its key: %s" % (ln, r.stdout + r.stderr))


def test_hostile_values():
    work = tmpdir()
    run([CALLS], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_PROFILE="p.jsonl",
                                   MATE_BENCH_LOG="b.sh"))
    body = script(os.path.join(work, "b.sh"), "benchlog-calls")
    check(sorted(body) == profile_lines(os.path.join(work, "p.jsonl")) and len(body) == 2,
          "two shapes, as the oracle converts the profile:\n%s" % "\n".join(body))
    check("mate-bench -c plain 'arg_0=float32[4]'" in body,
          "no module: no -m; brackets quoted: %s" % body)
    want = ["mate-bench", "-m", "my lib", "-c", 'it\'s a "call"',
            "arg_0=bfloat16[2,3]@[1,2]:cuda:1", "arg_1=float32[]",
            "kwarg_one=float8_e4m3fn[1,3]@[1,1]", "kwarg_empty=int32[0,3]",
            "kwarg_zero=int64[3,0]", 'kwarg_layout="it\'s NHD"', 'kwarg_plain="NHD"',
            "kwarg_scale=0.1", "kwarg_big=3", "kwarg_tiny=1e-300", "kwarg_n=-7",
            "kwarg_causal=true", "kwarg_out=null",
            'kwarg_out_dtype={"type":"torch.dtype","value":"torch.bfloat16"}',
            'kwarg_mode={"type":"enum","name":"Mode.FAST","value":2}']
    other = [shlex.split(x) for x in body if "plain" not in x.split()[2:3]]
    other = [w for w in other if w[:2] == ["mate-bench", "-m"]]
    check(other == [want], "the shell reads the words back:\n%s\n%s" % (other, want))
    check(all("'arg_1=float32[]'" in x or "plain" in x for x in body), "a 0-d tensor: []")


def test_without_profile():
    first = test_demo_lines()
    work = tmpdir()
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="3", MATE_BENCH_LOG="bench.sh"))
    body = script(os.path.join(work, "bench.sh"), "level 3, no profile")
    check(first is not None and sorted(body) == sorted(first),
          "level 3 without MATE_PROFILE gives the same lines: %s" % body)
    check(os.listdir(work) == ["bench.sh"], "no profile is written: %s" % os.listdir(work))
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="0", MATE_BENCH_LOG="b0.sh"))
    check(not os.path.exists(os.path.join(work, "b0.sh")), "level 0 writes no bench log")
    # a second run of the same shapes appends nothing: each line once, one header
    with open(os.path.join(work, "bench.sh")) as f:
        before = f.read()
    run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="bench.sh"))
    with open(os.path.join(work, "bench.sh")) as f:
        text = f.read()
    check(text == before, "a second run of the same shapes appends nothing: %d lines, %d before"
          % (len(text.splitlines()), len(before.splitlines())))


def test_fork():
    work = tmpdir()
    run([PROG, "--fork-exit"], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="b-%i.sh"))
    files = sorted(glob.glob(os.path.join(work, "b-*.sh")), key=os.path.getmtime)
    check(len(files) == 2, "with %%i the forked child writes its own file: %s" % files)
    if len(files) == 2:
        sizes = sorted(len(script(f, "fork %i")) for f in files)
        check(sizes == [1, 4], "the child's one shape, the parent's four: %s" % sizes)
        child = [f for f in files if len(script(f, "fork")) == 1]
        check(child and " -c rmsnorm " in script(child[0], "fork")[0],
              "the child's line is its rmsnorm call")
    run([PROG, "--fork-exit"], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="b.sh"))
    body = script(os.path.join(work, "b.sh"), "fork, shared")
    check(len(body) == 4 and len(set(body)) == 4,
          "without %%i parent and child share the file; the child's shape is its parent's: %s"
          % body)


def test_sigterm():
    work = tmpdir()
    log = os.path.join(work, "log.txt")
    p = subprocess.Popen([DEMO], cwd=work, stdout=subprocess.DEVNULL, preexec_fn=default_signals,
                         env=env(MATE_LOGLEVEL="1", MATE_PROFILE="prof.jsonl", MATE_LOGDEST=log,
                                 MATE_BENCH_LOG="bench.sh", MATE_DEMO_SECONDS="30"))
    check(wait_for_calls(log, 200), "the demo logs 200 calls")
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=wait_seconds())
    check(rc == -signal.SIGTERM, "the demo still dies of SIGTERM: %d" % rc)
    body = script(os.path.join(work, "bench.sh"), "SIGTERM")
    prof = os.path.join(work, "prof.jsonl")
    want = profile_lines(prof) if os.path.exists(prof) else None
    check(want is not None and sorted(body) == want,
          "SIGTERM: the lines are the profile's entries: %s; the profile's: %s" % (body, want))


def test_unopenable():
    work = tmpdir()
    bad = os.path.join(work, "no", "such", "dir", "bench.sh")
    p = run([DEMO], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG=bad), check=False)
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    check(p.returncode == 0, "an unopenable path: the demo runs: %d %s" % (p.returncode, p.stderr))
    check(len(warns) == 1 and warns[0].startswith("mate: cannot open MATE_BENCH_LOG '%s': " % bad),
          "one warning names the path: %s" % warns)
    # a FIFO nobody reads: no hang, one warning
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    p = run(["timeout", "20", DEMO], cwd=work, check=False,
            env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG=fifo, MATE_DEMO_ROUNDS="2"))
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    check(p.returncode == 0, "a FIFO nobody reads: no hang (124: it hung): %d" % p.returncode)
    check(len(warns) == 1 and "no reader" in warns[0], "a FIFO: one warning: %s" % warns)
    # a FIFO with a reader gets the script
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE, text=True)
    run(["timeout", "20", DEMO], cwd=work, check=False,
        env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG=fifo, MATE_DEMO_ROUNDS="2"))
    try:
        got = reader.communicate(timeout=wait_seconds())[0]
    except subprocess.TimeoutExpired:  # nothing opened the FIFO: the reader waits for ever
        reader.kill()
        got = reader.communicate()[0]
    check(got.startswith("#!/bin/sh\n") and "mate-bench" in got, "a read FIFO gets the lines")
    # a symlink planted at a %i name is not followed
    victim = os.path.join(work, "victim")
    with open(victim, "w") as f:
        f.write("victim's own text\n")
    p = run(["sh", "-c", 'ln -s "$1" "b_$$"; exec env MATE_BENCH_LOG="b_%i" "$2"', "sh",
             victim, DEMO], cwd=work, check=False, env=env(MATE_LOGLEVEL="1"))
    with open(victim) as f:
        check(f.read() == "victim's own text\n", "the planted link's target is untouched")
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    check(len(warns) == 1 and "a symbolic link" in warns[0], "the link is refused: %s" % warns)


HEAD = "#!/bin/sh\n# MATE_BENCH_LOG of process 1: a mate-bench line per distinct call\n"
EARLIER = "mate-bench -c earlier 'arg_0=float32[1]'\n"


def read(path):
    with open(path) as f:
        return f.read()


def split(line):
    try:
        return shlex.split(line)
    except ValueError:  # a quote left open: no words sh would agree on
        return [None, None]


def runs_whole(path, want, what):
    """sh runs the script as its lines say: one mate-bench per line (a stand-in that
    writes its words), each with the words shlex reads, and nothing else."""
    work = os.path.dirname(path)
    fake = os.path.join(work, "bin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "mate-bench"), "w") as f:
        f.write('#!/bin/sh\nfor w in "$@"; do printf "%s\\037" "$w"; done >>"$WORDS"\n'
                'echo >>"$WORDS"\n')
    os.chmod(os.path.join(fake, "mate-bench"), 0o755)
    words = os.path.join(work, "words")
    p = subprocess.run(["sh", path], cwd=work, capture_output=True, text=True,
                       env=dict(os.environ, PATH=fake + os.pathsep + os.environ["PATH"],
                                WORDS=words))
    got = [x.split("\037")[:-1] for x in read(words).splitlines()] \
        if os.path.exists(words) else []
    # a header that counts its entries sums up on stderr; an older one says nothing
    summary = "%s: %d of %d entries ran; 0 failed\n" % (path, len(want), len(want))
    counted = RAN in read(path)
    check(p.stderr == (summary if counted else ""), "%s: the summary: %r" % (what, p.stderr))
    check(p.returncode == 0 and
          got == [split(x)[1:] for x in want],
          "%s: sh runs each line as written, and nothing else: rc %d\n%s\nwant\n%s"
          % (what, p.returncode, got, want))


def test_hostile_files():
    """A partial last line an earlier run left is cut off before appending (else a quote it
    opened swallows the next line and a recorded string runs as shell code); a file-size
    limit neither kills the host (SIGXFSZ) nor leaves a partial line; a name with a newline
    gets no line; a file planted at a %i name is appended to only when it is the user's own
    regular file that starts with mate's header."""
    work = tmpdir()
    path = os.path.join(work, "b.sh")
    with open(path, "w") as f:
        f.write(HEAD + EARLIER + "mate-bench -c 'torn")
    p = run([CALLS], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="b.sh"), check=False)
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    check(p.returncode == 0 and len(warns) == 1 and "partial last line (19 bytes)" in warns[0],
          "a torn tail: cut off, one warning: %d %s" % (p.returncode, warns))
    body = script(path, "after a torn line")
    check(read(path).startswith(HEAD + EARLIER) and "torn" not in read(path) and
          len(body) == 3, "the torn line is gone, the others kept: %r" % read(path))
    runs_whole(path, body, "after a torn line")

    # a file-size limit in the middle of the first line: the host lives, no partial line
    work = tmpdir()
    path = os.path.join(work, "b.sh")
    with open(path, "w") as f:
        f.write(HEAD)

    def limit():
        default_signals()
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(HEAD) + 20, len(HEAD) + 20))
    p = subprocess.run([CALLS], cwd=work, capture_output=True, text=True, preexec_fn=limit,
                       env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="b.sh"))
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    check(p.returncode == 0, "a file-size limit: the program lives (-%d: SIGXFSZ): %d"
          % (signal.SIGXFSZ, p.returncode))
    check(len(warns) == 1 and warns[0].startswith("mate: cannot write MATE_BENCH_LOG") and
          "File too large" in warns[0], "one warning says why: %s" % warns)
    check(read(path) == HEAD, "no partial line is left: %r" % read(path))

    # a name with a newline: no line for it, one warning, every other line whole
    work = tmpdir()
    p = run([CALLS, "newline"], cwd=work, env=env(MATE_LOGLEVEL="1", MATE_BENCH_LOG="b.sh"),
            check=False)
    warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
    body = script(os.path.join(work, "b.sh"), "a name with a newline")
    check(len(body) == 2 and "lines" not in read(os.path.join(work, "b.sh")),
          "the call named with a newline has no line: %s" % body)
    check(len(warns) == 1 and "control character" in warns[0], "one warning: %s" % warns)
    runs_whole(os.path.join(work, "b.sh"), body, "a name with a newline")

    # files planted at a %i name (the pid is known: exec): only the user's own mate script
    plants = [("text", "victim's own text\n", None, "not a script mate began"),
              ("empty", "", None, None), ("mine", HEAD, None, None)]
    if os.geteuid() == 0:
        plants.append(("theirs", HEAD, 65534, "not the user's own file"))
    for name, text, uid, refused in plants:
        work = tmpdir()
        p = run(["sh", "-c", 'printf %s "$1" >"b_$$"; chmod 666 "b_$$"; '
                 '[ -z "$2" ] || chown "$2" "b_$$"; exec env MATE_BENCH_LOG="b_%i" "$0"',
                 CALLS, text, "" if uid is None else str(uid)],
                cwd=work, check=False, env=env(MATE_LOGLEVEL="1"))
        files = glob.glob(os.path.join(work, "b_*"))
        warns = [x for x in p.stderr.splitlines() if "BENCH_LOG" in x]
        got = read(files[0]) if len(files) == 1 else None
        check(p.returncode == 0 and len(files) == 1, "%s: the program runs: %d %s"
              % (name, p.returncode, files))
        if refused:
            check(got == text, "%s: the planted file is untouched: %r" % (name, got))
            check(len(warns) == 1 and refused in warns[0] and
                  warns[0].startswith("mate: cannot open MATE_BENCH_LOG"),
                  "%s: refused in one warning: %s" % (name, warns))
        else:
            check(warns == [] and got is not None and got.startswith(text) and
                  len(script(files[0], name)) == 2,
                  "%s: appended to: %s %r" % (name, warns, got))


if __name__ == "__main__":
    run_cases(test_demo_lines, test_runs_as_printed, test_hostile_values, test_without_profile, test_fork,
              test_sigterm, test_unopenable, test_hostile_files)
