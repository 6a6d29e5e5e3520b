"""test_memlog_rmm.py: the memory CSV of a real mate-record run (the fake CUDA runtime) read by RMM's REPLAY_BENCH rules (rmm_log_parser.py): RMM's spelling by default, the documentation page's with --memlog-format epoch, both read back by mate-replay --memlog."""
import datetime
import functools
import os
import re

from mate_test import build_path, check, need_preload, record_env, run, run_cases, tmpdir
from rmm_log_parser import RmmError, parse_csv

need_preload()
RECORD = build_path("src", "record", "mate-record")
REPLAY = build_path("src", "replay", "mate-replay")
PROG = build_path("tests", "record-cuda-prog")
work = tmpdir()
env = record_env()
SIZES = sorted([8192, 6144, 12288, 4096, 2304, 8, 3000, 5000, 7000, 2560, 1000, 1001, 1002, 1003, 1004])


def record(csv, *opts, **kw):
    e = dict(env, **kw)
    p = run([RECORD, "-l", "0", "-q", "--memlog", csv] + list(opts) + ["--", PROG], cwd=work, env=e)
    return p, open(os.path.join(work, csv), "rb").read()


def rmm(data):
    try:
        return parse_csv(data), None
    except RmmError as e:
        return None, str(e)


def replayed(csv):
    p = run([REPLAY, "--memlog", os.path.join(work, csv), "--allocator", "malloc"], check=False)
    return p.returncode, p.stdout + p.stderr


def seconds_of_day(hms):
    """HH:MM:SS.ffffff in seconds; None for another form."""
    if not re.fullmatch(r"\d\d:\d\d:\d\d\.\d{6}", hms):
        return None
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


@functools.cache
def test_rmm_spelling():
    """the default: what RMM's logging_resource_adaptor writes (once, cached: the epoch
    case compares with its replay, which it returns)"""
    before = datetime.datetime.now()
    p, data = record("rmm.csv")
    after = datetime.datetime.now()
    events, err = rmm(data)
    check(err is None, "RMM's parser reads mate's CSV: %s" % err)
    lines = data.decode().split("\n")
    check(lines[0] == "Thread,Time,Action,Pointer,Size,Stream" and lines[-1] == "",
          "RMM's header, rows ending in \\n: %r" % lines[:2])
    rows = [ln.split(",") for ln in lines[1:-1]]
    check(all(len(r) == 6 for r in rows), "six cells a row")
    check(all(re.fullmatch(r"[1-9]\d*", r[0]) for r in rows), "Thread: a decimal OS thread id")
    check(all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{6}", r[1]) for r in rows),
          "Time: HH:MM:SS.ffffff: %s" % [r[1] for r in rows[:3]])
    # local wall-clock time of day, as spdlog's %H:%M:%S.%f prints it
    lo = seconds_of_day(before.strftime("%H:%M:%S.%f")) - 1
    hi = seconds_of_day(after.strftime("%H:%M:%S.%f")) + 1
    t = [seconds_of_day(r[1]) for r in rows]
    check(all(x is not None and ((lo <= x <= hi) if lo <= hi else (x >= lo or x <= hi)) for x in t),
          "times within the run, local time: %s not in [%s, %s]" % (t[:3], lo, hi))
    check(sorted({r[2] for r in rows}) == ["allocate", "allocate failure", "free"],
          "actions allocate, free, allocate failure: %s" % sorted({r[2] for r in rows}))
    fails = [r for r in rows if r[2] == "allocate failure"]
    check([(r[3], r[4]) for r in fails] == [("(nil)", str(1 << 40))],
          "a failure's pointer is printf's %%p of NULL: %s" % fails)
    check(all(re.fullmatch(r"0x[0-9a-f]+", r[3]) for r in rows if r[2] != "allocate failure"),
          "pointers as %p prints them")
    check(all(r[5] == "0" or re.fullmatch(r"0x[0-9a-f]+", r[5]) for r in rows),
          "streams as an ostream prints a cudaStream_t in hex: 0 or 0x...")
    other = [r[5] for r in rows if r[5] != "0"]
    check(len(other) == 2, "the async pair alone on its own stream: %s" % other[:4])

    if events:
        check(sorted(e[2] for e in events if e[1] == "allocate") == SIZES, "allocation sizes as RMM reads them")
        check(sorted(e[2] for e in events if e[1] == "free") == SIZES, "free sizes as RMM reads them")
        live = {}
        for e in events:
            if e[1] == "allocate":
                live[e[3]] = e[2]
            elif e[1] == "free":
                check(live.pop(e[3], None) == e[2], "free of a live pointer of that size: %s" % (e,))
        check(not live, "every pointer freed, by RMM's reading")
        check(len({e[0] for e in events}) == 2, "two threads by RMM's reading")
    code, out = replayed("rmm.csv")
    check(code == 0 and "events" in out, "mate-replay --memlog reads RMM's spelling: %d %s" % (code, out))
    return out


def test_epoch_spelling():
    """--memlog-format epoch: the spelling of RMM's documentation page"""
    out = test_rmm_spelling()
    p, data = record("epoch.csv", "--memlog-format", "epoch")
    rows = [ln.split(",") for ln in data.decode().split("\n")[1:-1]]
    check(all(re.fullmatch(r"\d{10}\.\d{6}", r[1]) for r in rows), "epoch seconds.microseconds")
    check(sorted({r[2] for r in rows}) == ["allocate", "allocate failure", "deallocate"],
          "actions allocate, deallocate, allocate failure")
    check(all(r[3].startswith("0x") and r[5].startswith("0x") for r in rows), "0x pointers and streams")
    events, err = rmm(data)
    check(err == "Invalid action string.", "RMM's parser refuses the documentation's spelling: %s" % err)
    code, out2 = replayed("epoch.csv")
    check(code == 0, "mate-replay --memlog reads the epoch spelling: %d %s" % (code, out2))
    n_rmm = re.search(r"(\d+) events", out)
    n_epoch = re.search(r"(\d+) events", out2)
    check(n_rmm and n_epoch and n_rmm.group(1) == n_epoch.group(1),
          "both spellings replay the same events: %s / %s" % (out.strip(), out2.strip()))


def test_format_variable():
    """the variable does the same; a bad value warns and keeps RMM's spelling"""
    p, data = record("env.csv", MATE_MEMLOG_FORMAT="epoch")
    check(b",deallocate," in data, "MATE_MEMLOG_FORMAT=epoch")
    p, data = record("bad.csv", MATE_MEMLOG_FORMAT="csv2")
    check(b",free," in data and "bad MATE_MEMLOG_FORMAT value 'csv2'" in p.stderr,
          "a bad MATE_MEMLOG_FORMAT warns and writes rmm: %s" % p.stderr)
    p = run([RECORD, "--memlog", "x.csv", "--memlog-format", "csv2", "--", PROG], cwd=work, env=env,
            check=False)
    check(p.returncode == 2 and "--memlog-format" in p.stderr, "a bad --memlog-format is a usage error")


def test_parser_is_rmms():
    """the parser is RMM's, not ours: what RMM itself writes passes, its known faults show"""
    rmm_own = (b"Thread,Time,Action,Pointer,Size,Stream\n"
               b"140573312345856,14:21:43.123456,allocate,0x7f8a40000000,1024,0\n"
               b"140573312345856,14:21:43.200001,allocate failure,(nil),99999999999,0\n"
               b"140573312345856,14:21:43.345678,free,0x7f8a40000000,1024,0\n")
    events, err = rmm(rmm_own)
    check(err is None and [e[1] for e in events] == ["allocate", "allocate failure", "free"],
          "RMM's own rows pass: %s" % err)
    with open(os.path.join(work, "own.csv"), "wb") as f:
        f.write(rmm_own)
    code, out = replayed("own.csv")
    check(code == 0, "mate-replay --memlog reads RMM's own rows: %s" % out)
    # stoul reads a stream "0x7f00" as 0 and "7f00" as 7 (refused: not a default stream)
    check(rmm(rmm_own.replace(b",1024,0\n", b",1024,0x7f00\n"))[1] is None, "stoul('0x7f00') is 0")
    check(rmm(rmm_own.replace(b",1024,0\n", b",1024,7f00\n"))[1] == "Non-default streams not currently supported.",
          "stoul('7f00') is 7")
    check(rmm(rmm_own.replace(b",1024,0\n", b",1024,ff\n"))[1] == "stoul", "stoul('ff') throws")
    check(rmm(rmm_own.replace(b"Stream", b"Strm"))[1] == "column not found: Stream", "columns by name")


run_cases(test_rmm_spelling, test_epoch_spelling, test_format_variable, test_parser_is_rmms)
