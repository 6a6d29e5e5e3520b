"""visualize_usec.py: a 100 us call in a log written by mate's own formatter (ilog-check writes every event back through it) keeps its microseconds: the PNG timeline draws it a tenth as wide as a 1 ms call, pixel for pixel, and the Perfetto JSON gives it dur 100."""
import functools
import json
import sys

from mate_test import build_path, check, run, run_cases
import gtlog

try:
    from PIL import Image
except ImportError:
    print("SKIP: no PIL (apt-get install python3-pil)")
    sys.exit(77)

# A 100 us matmul at 1 s, a 1 ms add at 1.002 s, on one client thread.
SOURCE = """\
  1.000000s | #0001 | RECV         | CLIENT thread-1             | gemm            |      4.0KB | call=1 op=matmul depth=0
  1.000100s | #0002 | SEND         | CLIENT thread-1             | gemm            |        64B | call=1 success=True
  1.002000s | #0003 | RECV         | CLIENT thread-1             | add             |      4.0KB | call=2 op=add depth=0
  1.003000s | #0004 | SEND         | CLIENT thread-1             | add             |        64B | call=2 success=True
"""


@functools.cache
def mate_log():
    """SOURCE written back by mate's formatter (ilog-check): the log's path."""
    src = gtlog.tmp("source.log")
    with open(src, "w") as f:
        f.write(SOURCE)
    p = run([build_path("tests", "ilog-check"), src])
    log = gtlog.tmp("mate.log")
    with open(log, "w") as f:
        f.write(p.stdout)
    check(p.stdout.split("\n")[1].startswith("  1.000100s | #0002 |"),
          "mate writes the time with microseconds: %r" % p.stdout.split("\n")[1])
    return log


def runs(img, g, y):
    """Runs [x0, x1) of coloured pixels (a bar's fill or frame; not the grey
    background, grid or axis) along row y of img, whose geometry is g."""
    out, start = [], None
    for x in range(int(g["x0"]), int(g["x1"]) + 1):
        r, gg, b = img.getpixel((x, y))
        coloured = max(r, gg, b) - min(r, gg, b) > 60
        if coloured and start is None:
            start = x
        elif not coloured and start is not None:
            out.append((start, x))
            start = None
    if start is not None:
        out.append((start, int(g["x1"]) + 1))
    return out


def test_png_widths():
    log = mate_log()
    out = gtlog.tmp("usec.png")
    p = gtlog.visualize(log, "-o", out, "--from", "0.9995", "--to", "1.0035", "-v")
    g = gtlog.geometry(p.stderr)
    img = Image.open(out).convert("RGB")
    y0, y1 = g["lanes"]["client thread-1"][:2]
    row = int(y0 + (y1 - y0) * 0.3)   # through both bars, above the label

    def x_of(t):
        return g["x0"] + (t - g["t0"]) / (g["t1"] - g["t0"]) * (g["x1"] - g["x0"])

    bars = runs(img, g, row)
    per_ms = x_of(1.001) - x_of(1.0)
    check(len(bars) == 2, "two bars along the client's lane: %s" % bars)
    if len(bars) == 2:
        w100, w1000 = bars[0][1] - bars[0][0], bars[1][1] - bars[1][0]
        print("1 ms = %.1f px; the 100 us call %d px, the 1 ms call %d px" % (per_ms, w100, w1000))
        check(abs(w100 - per_ms / 10) <= 2, "the 100 us call is %d px wide, want %.1f" % (w100, per_ms / 10))
        check(abs(w1000 - per_ms) <= 2, "the 1 ms call is %d px wide, want %.1f" % (w1000, per_ms))
        check(abs(w1000 / max(w100, 1) - 10) <= 0.6, "widths in the ratio 1:10: %d / %d" % (w1000, w100))
        check(abs(bars[0][0] - x_of(1.0)) <= 2 and abs(bars[1][0] - x_of(1.002)) <= 2,
              "bars start at 1.000 and 1.002 s: %s" % bars)


def test_perfetto_usec():
    """the Perfetto export: ts and dur in microseconds"""
    out = gtlog.tmp("usec.json")
    gtlog.visualize(mate_log(), "-o", out, "-q")
    slices = sorted((e["name"], e["ts"], e["dur"]) for e in json.load(open(out))["traceEvents"] if e["ph"] == "X")
    check(slices == [("add", 1002000.0, 1000.0), ("matmul", 1000000.0, 100.0)],
          "Perfetto slices of 100 us and 1 ms: %s" % slices)


run_cases(test_png_widths, test_perfetto_usec)
