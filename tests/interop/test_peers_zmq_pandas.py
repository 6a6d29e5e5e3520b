# mate-python: peers
"""test_peers_zmq_pandas.py: mate's live stream read by pyzmq's own subscriber, and mate's memory CSV and instruction log read by pandas, as users' scripts read them."""
import io
import json
import os
import re
import subprocess

import pandas as pd
import zmq

from mate_test import build_path, check, run, run_cases, tmpdir, wait_seconds, wait_until

TMP = tmpdir()
ENV = dict(os.environ)
for v in ("MATE_LOGLEVEL", "MATE_MEMLOG", "MATE_MEMLOG_FORMAT", "MATE_DUMP_DIR", "MATE_LOGDEST",
          "MATE_MONITOR", "MATE_INSTRUCTION_LOG"):
    ENV.pop(v, None)


def test_pyzmq_stream():
    """pyzmq: a SUB socket on the demo's ipc endpoint"""
    mondir = os.path.join(TMP, "mon")
    os.makedirs(mondir, mode=0o700)
    demo = subprocess.Popen([build_path("examples", "mate-demo")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(ENV, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null", MATE_MONITOR="1",
                                     MATE_MONITOR_DIR=mondir, MATE_MONITOR_WAIT="10",
                                     MATE_DEMO_SECONDS="1", MATE_DEMO_THREADS="2"))
    endpoint = os.path.join(mondir, "%d.ipc" % demo.pid)
    wait_until(lambda: os.path.exists(endpoint) or demo.poll() is not None, step=0.02)
    check(os.path.exists(endpoint), "the demo's endpoint %s appears" % endpoint)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.RCVTIMEO, int(wait_seconds() * 1000))   # ends at DISCONNECT
    sub.setsockopt(zmq.RCVHWM, 0)   # keep every frame: a full SUB queue drops silently
    sub.connect("ipc://" + endpoint)
    frames = []
    try:
        while True:
            f = json.loads(sub.recv())
            frames.append(f)
            if f.get("event") == "DISCONNECT":
                break
    except zmq.Again:
        pass
    sub.close(0)
    ctx.term()
    demo.wait(timeout=wait_seconds())
    check(demo.returncode == 0, "the demo exits 0: %s" % demo.stderr.read()[-500:])
    events = {f.get("event") for f in frames}
    check(len(frames) > 100 and {"RECV", "SEND", "WORKER_SEND", "WORKER_RECV", "DISCONNECT"} <= events,
          "pyzmq received %d frames, events %s" % (len(frames), sorted(e for e in events if e)))
    keys = {"seq", "timestamp", "event", "client", "command", "details", "size_bytes", "pid", "program"}
    check(all(keys <= set(f) for f in frames), "every frame has GT's keys and mate's: %s" % (frames[:1],))
    seqs = [f["seq"] for f in frames]
    check(seqs == sorted(seqs) and all(f["pid"] == demo.pid for f in frames),
          "seq rises, every frame from pid %d" % demo.pid)


def test_pandas_memory_csv():
    """pandas: the memory CSV as RMM users load it"""
    if not os.path.exists(build_path(".libs", "libmate-preload.so")):
        print("note: no libmate-preload.so (a static-only build): the memory CSV part not run")
    else:
        csv = os.path.join(TMP, "mem.csv")
        run([build_path("src", "record", "mate-record"), "-l", "0", "-q", "--memlog", csv, "--",
             build_path("tests", "record-cuda-prog")], cwd=TMP, env=ENV)
        df = pd.read_csv(csv)
        check(list(df.columns) == ["Thread", "Time", "Action", "Pointer", "Size", "Stream"],
              "pandas reads RMM's columns: %s" % list(df.columns))
        check(set(df["Action"]) <= {"allocate", "free", "allocate failure"} and (df["Action"] == "free").any(),
              "actions: %s" % sorted(set(df["Action"])))
        times = pd.to_datetime(df["Time"], format="%H:%M:%S.%f", errors="coerce")
        check(times.notna().all(), "every Time parses as %%H:%%M:%%S.%%f: %s" % list(df["Time"][:3]))
        check(str(df["Size"].dtype) == "int64" and str(df["Thread"].dtype) == "int64",
              "Size and Thread are integers: %s" % dict(df.dtypes.astype(str)))
        alloc = df[df["Action"] == "allocate"]
        freed = df[df["Action"] == "free"]
        check(set(freed["Pointer"]) <= set(alloc["Pointer"]), "every freed pointer was allocated")


def test_pandas_instruction_log():
    """pandas: an instruction log's events as a table"""
    ilog = os.path.join(TMP, "trace.log")
    run([build_path("examples", "mate-demo")], env=dict(ENV, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
        MATE_INSTRUCTION_LOG=ilog, MATE_DEMO_SECONDS="0.3", MATE_DEMO_THREADS="2"))
    with open(ilog) as f:
        lines = [ln for ln in f if re.match(r"\s*[\d.]+s \| #\d+ \|", ln)]
    t = pd.read_csv(io.StringIO("".join(lines)), sep="|", header=None, skipinitialspace=True,
                    usecols=[0, 1, 2, 3, 4], names=["time", "seq", "event", "source", "command"])
    t["time"] = t["time"].str.strip().str.rstrip("s").astype(float)
    t["event"] = t["event"].str.strip()
    check(len(t) == len(lines) and t["time"].is_monotonic_increasing,
          "pandas reads %d of %d event lines, times rising" % (len(t), len(lines)))
    frac = (t["time"] * 1e6).round() % 1000
    check((frac != 0).mean() > 0.9, "times carry microseconds (%.0f%% not whole ms)" % (100 * (frac != 0).mean()))
    check({"RECV", "SEND"} <= set(t["event"]), "RECV and SEND in the table")


run_cases(test_pyzmq_stream, test_pandas_memory_csv, test_pandas_instruction_log)
