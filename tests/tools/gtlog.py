"""gtlog.py: writes instruction logs for the mate-visualize tests: GT's format with every quirk of the spec, and small mate-style logs with known spans."""
import atexit
import os
import re
import shutil

import mate_test

# What GT's dispatcher writes (spec section 1): every GT-style line we write must match.
GT_EVENT = re.compile(r"^\s*\d+\.\d{3}s \| #\d+ \| ")
# The line rule of GT's own visualizer (gt/scripts/visualize.py, TimelineVisualizer._parse_log,
# used with re.match): any number of decimals in the time; a command field must be followed
# by '|', so GT skips 5-field lines.
GT_VISUALIZE = re.compile(
    r"\s*(?P<timestamp>[\d.]+)s\s*\|\s*#(?P<inst_id>\d+)\s*\|\s*"
    r"(?P<event>\S+)\s*\|\s*(?P<source>[^|]+?)\s*\|\s*"
    r"(?P<msg_type>[^|]+?)\s*\|.*?(?P<metadata>op=\w+)?")


def size_str(n):
    """GT's size field: nB below 1 KiB, x.xKB below 1 MiB, else x.xxMB."""
    if n <= 0:
        return ""
    if n < 1024:
        return "%dB" % n
    if n < 1024 * 1024:
        return "%.1fKB" % (n / 1024)
    return "%.2fMB" % (n / (1024 * 1024))


def gt_line(seq, t, event, source, command, size=0, details=""):
    """One event line, exactly as GT's dispatcher formats it (also bench/gen-ilog.py's)."""
    word = "WORKER" if "WORKER" in event else "CLIENT"
    s = "%7.3fs | #%04d | %-12s | %s %-20s | %-15s" % (t, seq, event, word, source, command)
    if size > 0:
        s += " | %10s" % size_str(size)
    if details:
        s += " | " + details
    return s


class Log:
    """Lines in GT's format, in order, counting what a reader should find."""

    def __init__(self):
        self.lines = []
        self.seq = 0
        self.events = 0
        self.calls = 0       # RECV..SEND pairs, counted at their SEND
        self.ops = 0         # WORKER_SEND..WORKER_RECV pairs, counted at their WORKER_RECV

    def header(self, title="GT2 Dispatcher Instruction Stream"):
        self.lines += ["=" * 100, title, "Started: 2026-11-21 12:50:16", "=" * 100, "",
                       "This log records all instructions flowing through the dispatcher:",
                       "  - Client commands (RECV/SEND)", "",
                       "Format: <elapsed> | #<seq> | <event_type> | <source> | <command> | <details>",
                       "", "Column Details:",
                       "  elapsed  = Seconds since dispatcher start (with millisecond precision)", ""]

    def ev(self, t, event, source, command, size=0, details=""):
        """One event line (gt_line)."""
        self.seq += 1
        self.events += 1
        if event == "SEND":
            self.calls += 1
        elif event == "WORKER_RECV":
            self.ops += 1
        s = gt_line(self.seq, t, event, source, command, size, details)
        assert GT_EVENT.match(s), s
        self.lines.append(s)

    def write(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        return path


def gt_quirks(path):
    """A GT log with every quirk the spec lists; returns the Log (counts)."""
    g = Log()
    g.header()
    cl = "CLIENT 006b8b4568"          # written CLIENT CLIENT <hex>: the word twice
    wk = "gpu_worker_with_a_rather_long_name_0"   # overruns the source column
    g.ev(0.101, "RECV", "CLIENT 006b8b4567", "RegisterWorker", 90, "worker_id=" + wk)
    g.ev(0.101, "SEND", "CLIENT 006b8b4567", "RegisterWorker", 91, "success=True")
    # a batch: WORKER_RECV logged before its WORKER_SEND, same millisecond
    g.ev(0.150, "RECV", cl, "CreateTensor", 284, "tensor_id=0 shape=(256, 128)")
    g.ev(0.151, "MODIFIER_INJECT", cl, "CreateTensor", 0, "tensor_id=0 shape=(256, 128)")
    g.ev(0.153, "WORKER_RECV", wk, "WorkerBatch", 91, "success=True")
    g.ev(0.153, "WORKER_SEND", wk, "WorkerBatch", 40243, "[2 cmds: WorkerCreateTensor, WorkerBinaryOp]")
    g.ev(0.153, "SEND", cl, "CreateTensor", 91, "success=True")
    # compile commands: send then receive; WorkerCompileStart overruns the command column
    g.ev(0.200, "RECV", cl, "CompileStart", 80, "signal=layer1")
    g.ev(0.200, "WORKER_SEND", wk, "WorkerCompileStart", 88, "signal=layer1")
    g.ev(0.201, "WORKER_RECV", wk, "WorkerCompileStart", 91, "success=True")
    g.ev(0.201, "SEND", cl, "CompileStart", 91, "success=True")
    # GetData: send then receive, a 4.00MB reply
    g.ev(0.250, "RECV", cl, "GetData", 69, "tensor_id=0")
    g.ev(0.250, "MODIFIER_INJECT", cl, "GetData", 0, "tensor_id=0")
    g.ev(0.251, "WORKER_SEND", wk, "WorkerGetData", 88, "tensor=006b8b4568_0")
    g.ev(0.262, "WORKER_RECV", wk, "WorkerGetData", 4194304, "success=True")
    g.ev(0.263, "SEND", cl, "GetData", 4194304, "success=True")
    # a failure shows as success=False; a 5-field line (no size, no details)
    g.ev(0.300, "RECV", cl, "BinaryOp", 107, "result=2 op=matmul left=0 right=1")
    g.ev(0.300, "MODIFIER_INJECT", cl, "BinaryOp")
    g.ev(0.305, "WORKER_RECV", wk, "WorkerBatch", 91, "success=False")
    g.ev(0.305, "WORKER_SEND", wk, "WorkerBatch", 191, "[3 cmds: WorkerBinaryOp, WorkerUnaryOp, ... (+1 more)]")
    g.ev(0.306, "SEND", cl, "BinaryOp", 91, "success=False")
    # enough lines for sequence numbers past four digits, times past 100 s
    t = 0.4
    i = 0
    while g.seq < 10020:
        op = ("relu", "sum", "add", "matmul")[i % 4]
        cmd = "UnaryOp" if op in ("relu", "sum") else "BinaryOp"
        w = "auto_worker_%d" % (i % 3)
        g.ev(t, "RECV", cl, cmd, 160, "result=%d op=%s input=%d" % (i + 3, op, i + 2))
        g.ev(t, "MODIFIER_INJECT", cl, cmd, 0, "result=%d op=%s input=%d" % (i + 3, op, i + 2))
        t += 0.004
        g.ev(t, "WORKER_RECV", w, "WorkerBatch", 91, "success=True")
        g.ev(t, "WORKER_SEND", w, "WorkerBatch", 206, "[1 cmds: Worker%s]" % cmd)
        g.ev(t, "SEND", cl, cmd, 91, "success=True")
        t += 0.007 + (i % 7) * 0.001
        i += 1
    # from 100 s on the time has no leading space; then past 1000 s
    for t in (100.25, 999.999, 1000.001, 1234.5):
        g.ev(t, "RECV", cl, "FreeTensor", 72, "tensor_id=%d" % int(t))
        g.ev(t, "WORKER_SEND", wk, "WorkerFreeTensor", 131, "tensor=%d" % int(t))
        g.ev(t + 0.001, "WORKER_RECV", wk, "WorkerFreeTensor", 91, "success=True")
        g.ev(t + 0.001, "SEND", cl, "FreeTensor", 91, "success=True")
    g.write(path)
    return g


def spec_example(path):
    """The four lines of GT's documentation (spec section 1), verbatim."""
    text = """  0.123s | #0042 | RECV         | CLIENT 127.0.0.1:12345 | BinaryOp        | 123KB | result=42 op=add
  0.125s | #0043 | WORKER_SEND  | WORKER worker_0        | WorkerBinaryOp  | 123KB | op=add
  0.127s | #0044 | WORKER_RECV  | WORKER worker_0        | WorkerResponse  | 45B   | success=True
  0.128s | #0045 | SEND         | CLIENT 127.0.0.1:12345 | BinaryOp        | 45B   | success=True
"""
    with open(path, "w") as f:
        f.write(text)
    return path


def mate_known(path):
    """A mate-style log with known spans: matmul on worker_a 1.0-5.0 s, add on
    worker_b 3.0-9.0 s, a signal at 7.5 s, device memory on cuda:0."""
    g = Log()
    g.header("mate Instruction Stream")
    g.ev(1.000, "RECV", "thread-1", "gemm", 4096, "call=1 op=matmul depth=0")
    g.ev(1.000, "WORKER_SEND", "worker_a", "gemm_kernel", 4096, "call=1 id=1 op=matmul")
    g.ev(1.000, "MEM_ALLOC", "thread-1", "cudaMalloc", 1048576, "device=cuda:0 in_use=1048576 call=1")
    g.ev(1.002, "SEND", "thread-1", "gemm", 64, "call=1 status=ok")
    g.ev(3.000, "RECV", "thread-1", "add", 2048, "call=2 op=add depth=0")
    g.ev(3.000, "WORKER_SEND", "worker_b", "add_kernel", 2048, "call=2 id=2 op=add")
    g.ev(3.001, "SEND", "thread-1", "add", 64, "call=2 status=ok")
    g.ev(5.000, "WORKER_RECV", "worker_a", "gemm_kernel", 64, "call=1 id=1 op=matmul")
    g.ev(5.000, "MEM_FREE", "thread-1", "cudaFree", 1048576, "device=cuda:0 in_use=0")
    g.ev(7.500, "SIGNAL", "thread-1", "checkpoint", 0, "signal=checkpoint")
    g.ev(9.000, "WORKER_RECV", "worker_b", "add_kernel", 64, "call=2 id=2 op=add")
    assert (g.calls, g.ops) == (2, 2)
    g.write(path)
    return g


def nested(path, n=200):
    """mate-style: nested calls (depth), work joined by id out of order."""
    g = Log()
    g.header("mate Instruction Stream")
    t = 0.0
    for i in range(n):
        c = "call=%d" % (i + 1)
        g.ev(t, "RECV", "thread-0", "outer", 100, c + " op=outer depth=0")
        g.ev(t + 0.001, "RECV", "thread-0", "inner", 100, c + ".1 op=inner depth=1")
        g.ev(t + 0.002, "WORKER_SEND", "stream%d" % (i % 2), "k1", 10, c + " id=%da op=matmul" % i)
        g.ev(t + 0.002, "WORKER_SEND", "stream%d" % (i % 2), "k2", 10, c + " id=%db op=add" % i)
        g.ev(t + 0.003, "SEND", "thread-0", "inner", 10, c + ".1")
        g.ev(t + 0.004, "MEM_ALLOC", "thread-0", "cudaMalloc", 4096, "device=cuda:0 in_use=%d" % (4096 * (i % 9)))
        # the second piece of work finishes first: ids keep them apart
        g.ev(t + 0.006, "WORKER_RECV", "stream%d" % (i % 2), "k2", 10, c + " id=%db op=add" % i)
        g.ev(t + 0.008, "WORKER_RECV", "stream%d" % (i % 2), "k1", 10, c + " id=%da op=matmul" % i)
        g.ev(t + 0.009, "SEND", "thread-0", "outer", 10, c)
        t += 0.010
    g.write(path)
    return g


def visualize(*args, check=True):
    """Runs mate-visualize; returns the CompletedProcess."""
    return mate_test.run([mate_test.build_path("mate-visualize")] + list(args), check=check)


def stats(stderr):
    """Numbers from mate-visualize's summary line."""
    m = re.search(r"(\d+) events?, (\d+) ops? and (\d+) calls? of (\d+) op types?, (\d+) lanes? "
                  r"\((\d+) clients?, (\d+) workers?\)", stderr)
    if not m:
        return None
    keys = ("events", "ops", "calls", "op_types", "lanes", "clients", "workers")
    return dict(zip(keys, map(int, m.groups())))


def geometry(stderr):
    """Plot, legend and lane rows from mate-visualize --verbose."""
    g = {"lanes": {}}
    m = re.search(r"plot: x ([\d.]+) to ([\d.]+), y ([\d.]+) to ([\d.]+) px; time (-?[\d.]+) to (-?[\d.]+) s", stderr)
    if m:
        g["x0"], g["x1"], g["y0"], g["y1"], g["t0"], g["t1"] = map(float, m.groups())
    m = re.search(r"legend: x ([\d.]+) to ([\d.]+), y ([\d.]+) to ([\d.]+) px", stderr)
    if m:
        g["legend"] = tuple(map(float, m.groups()))
    for m in re.finditer(r"lane \d+: y ([\d.]+) to ([\d.]+) px, busy ([\d.]+)%, (\d+) spans: (.*)", stderr):
        g["lanes"][m.group(5)] = (float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4)))
    return g


def fixture(name):
    """A real GT log from tests/fixtures/gt-logs/."""
    return mate_test.src_path("tests", "fixtures", "gt-logs", name)


_tmp = []


def tmp(name):
    """A path in this test's scratch directory (removed at exit unless
    MATE_KEEP_TMP is set)."""
    if not _tmp:
        _tmp.append(mate_test.tmpdir())
        if not os.environ.get("MATE_KEEP_TMP"):
            atexit.register(shutil.rmtree, _tmp[0], True)
    return os.path.join(_tmp[0], name)
