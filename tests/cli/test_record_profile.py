"""test_record_profile.py: the memory-profile examples of the README and mate-record(1) run as printed (the fake CUDA program for ./train): RMM's report with a row per intercepted call and one for what was allocated outside any call, at level 0; the replay line after each; an -o that cannot be opened sends the report to stderr."""
import csv
import glob
import os
import re
import shlex

from mate_test import build_path, check, need_preload, record_env, run, run_cases, src_path, tmpdir

need_preload()
TOOLS = {"mate-record": build_path("src", "record", "mate-record"),
         "mate-replay": build_path("src", "replay", "mate-replay")}
PROG = build_path("tests", "record-cuda-prog")
env = record_env()


def examples(text, prefix):
    """The mate-record --memlog example and the mate-replay line after it."""
    lines = [ln[len(prefix):].strip() for ln in text.split("\n") if ln.startswith(prefix)]
    for i, ln in enumerate(lines):
        if ln.startswith("mate-record ") and "--memlog" in ln:
            return ln, lines[i + 1] if i + 1 < len(lines) else ""
    return None, None


def argv(line, subst):
    for a, b in subst.items():
        line = line.replace(a, b)
    words = shlex.split(line)
    return [TOOLS.get(words[0], words[0])] + words[1:]


def profile_rows(text):
    """The report's rows: (ncalls, peak, total, name)."""
    head = "ncalls     memory_peak    memory_total  filename:lineno(function)\n"
    check("Memory Profiling\n================\n" in text and head in text, "RMM's report: %r" % text[:300])
    rows = []
    for ln in text.split(head, 1)[-1].split("\n"):
        m = re.fullmatch(r"\s*([\d,]+)\s+([\d,]+)\s+([\d,]+)  (.+)", ln)
        if m is None:
            break
        rows.append(tuple(int(x.replace(",", "")) for x in m.groups()[:3]) + (m.group(4),))
    return rows


def csv_figures(path):
    """Peak of the bytes in use and the total allocated, from the memory log."""
    cur = peak = total = 0
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["Action"] == "allocate":
                cur += int(r["Size"])
                total += int(r["Size"])
                peak = max(peak, cur)
            elif r["Action"] in ("free", "deallocate"):
                cur -= int(r["Size"])
    return peak, total


def doc_rows(text, indent):
    """The rows of the report shown in a page: (ncalls, peak, total, name)."""
    head = indent + "ncalls     memory_peak    memory_total  filename:lineno(function)\n"
    if head not in text:
        return []
    rows = []
    for ln in text.split(head, 1)[1].split("\n"):
        m = re.fullmatch(re.escape(indent) + r"\s*([\d,]+)\s+([\d,]+)\s+([\d,]+)  (.+)", ln)
        if m is None:
            break
        rows.append(tuple(int(x.replace(",", "")) for x in m.groups()[:3]) + (m.group(4),))
    return rows


def try_example(where, record_line, replay_line, shown):
    work = tmpdir()
    check(record_line is not None and "-l 0" in record_line, "%s has the example: %r" % (where, record_line))
    if record_line is None:
        return
    p = run(argv(record_line, {"./train": PROG}), cwd=work, env=env, check=False)
    check(p.returncode == 0, "%s: %s exits 0: %d %s" % (where, record_line, p.returncode, p.stderr))
    out = re.search(r"-o (\S+)", record_line).group(1)
    text = open(os.path.join(work, out)).read() if os.path.exists(os.path.join(work, out)) else ""
    check("MATE API Call" not in text, "%s: level 0 logs no call" % where)
    rows = profile_rows(text)
    by_name = {r[3]: r for r in rows}
    check(len(rows) >= 7, "%s: the report has rows: %s" % (where, rows))
    check(by_name.get("cudart:0(cudaMemcpy)", (0,))[0] == 6, "%s: 6 cudaMemcpy: %s" % (where, rows))
    for call in ("cublasSgemm_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx"):
        check(by_name.get("cublas:0(%s)" % call, (0,))[0] == 1, "%s: one %s: %s" % (where, call, rows))
    check(by_name.get("cuda_kernel:0(cudaLaunchKernel)", (0,))[0] == 1, "%s: one launch" % where)
    check(shown == rows, "%s shows the report it prints:\n%s\n%s" % (where, shown, rows))
    # the program allocates between its calls only: all of it is the outside row
    csvs = sorted(glob.glob(os.path.join(work, "mem*.csv")), key=os.path.getsize)
    check(len(csvs) in (1, 2), "%s: the memory logs: %s" % (where, csvs))
    if csvs:
        peak, total = csv_figures(csvs[-1])
        check(by_name.get("<outside any call>") == (1, peak, total, "<outside any call>"),
              "%s: outside any call: peak %d, total %d: %s" % (where, peak, total, rows))
        check(rows and rows[0][3] == "<outside any call>", "%s: ordered by peak" % where)
        name = os.path.basename(csvs[-1])
        words = replay_line.split()
        subst = {w: name for w in words if w.endswith(".csv")}
        q = run(argv(replay_line, subst), cwd=work, env=env, check=False)
        check(q.returncode == 0 and "malloc:" in q.stdout and "pool:" in q.stdout,
              "%s: %s: %d %s %s" % (where, replay_line, q.returncode, q.stdout, q.stderr))


def test_unopenable_logdest():
    """-o naming a file that cannot be opened: one warning, and the report on stderr, as the
    log does (mate.7), not lost."""
    work = tmpdir()
    bad = os.path.join(work, "no", "such", "dir", "profile.txt")
    p = run([TOOLS["mate-record"], "-l", "0", "--memlog", "mem.csv", "-o", bad, PROG],
            cwd=work, env=env, check=False)
    check(p.returncode == 0, "unopenable -o: exit 0: %d %s" % (p.returncode, p.stderr))
    check("cannot open MATE_LOGDEST" in p.stderr and bad in p.stderr,
          "unopenable -o: the warning names the file: %r" % p.stderr[-500:])
    check(len(profile_rows(p.stderr)) >= 7, "unopenable -o: the report is on stderr: %r" % p.stderr[-500:])


def test_readme_command():
    """the README shows the commands and leaves the table to mate-record(1)"""
    readme = open(src_path("README.md")).read()
    check("--memlog mem.csv -o profile.txt -- ./train" in readme and "mate-record(1)" in readme,
          "the README's memory-profile command, pointing at mate-record(1)")


def test_man_example():
    page = open(src_path("man", "mate-record.1")).read()
    try_example("mate-record(1)", *examples(page, "$ "), doc_rows(page, ""))


run_cases(test_unopenable_logdest, test_readme_command, test_man_example)
