"""visualize_overview.py: a dense trace of mate's own format reads at a glance: per-column op shares stacked on a white idle band (an idle gap and a 25% vs 75% busy worker show in the picture), two ops in distinct palette colours, no dispatcher lane, single calls as bars in a zoom."""
import functools
import sys

from mate_test import check, run_cases
import gtlog

try:
    from PIL import Image
except ImportError:
    print("SKIP: no PIL (apt-get install python3-pil)")
    sys.exit(77)

IDLE = (0xff, 0xff, 0xff)
# Okabe and Ito's colour-blind-safe set, then Tol's muted darks
PALETTE = [(0x00, 0x72, 0xb2), (0xe6, 0x9f, 0x00), (0x00, 0x9e, 0x73), (0xcc, 0x79, 0xa7),
           (0x56, 0xb4, 0xe9), (0xd5, 0x5e, 0x00), (0xf0, 0xe4, 0x42), (0x33, 0x22, 0x88),
           (0x88, 0x22, 0x55), (0x99, 0x99, 0x33)]


def near(a, b, tol=8):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def dist(a, b):
    return sum(abs(x - y) for x, y in zip(a, b))


# Every 2 ms, 0 to 10 s: client c0 calls and worker w0 works 0.5 ms (25%),
# except from 4 s to 6 s (idle); client c1 calls and w1 works 1.5 ms (75%).
# w0 runs rmsnorm before 5 s, fused_add_rmsnorm after.
@functools.cache
def dense_log():
    """The dense trace, written once: its path."""
    lines, seq = [], [0]

    def ev(t, event, src, cmd, details):
        seq[0] += 1
        lines.append("%10.6fs | #%06d | %-12s | %-27s | %-15s | %10s | %s"
                     % (t, seq[0], event, src, cmd, "1.0KB", details))

    call = 0
    for i in range(5000):
        t = i * 0.002
        for c, w, busy in (("0", "w0", 0.0005), ("1", "w1", 0.0015)):
            if w == "w0" and 4.0 <= t < 6.0:
                continue
            op = "rmsnorm" if w == "w1" or t < 5 else "fused_add_rmsnorm"
            call += 1
            ev(t, "RECV", "CLIENT " + c, op, "call=%d op=%s depth=0" % (call, op))
            ev(t + 0.00001, "WORKER_SEND", "WORKER " + w, op, "call=%d id=%d op=%s worker=%s" % (call, call, op, w))
            ev(t + 0.00001 + busy, "WORKER_RECV", "WORKER " + w, op, "call=%d id=%d op=%s worker=%s success=True"
               % (call, call, op, w))
            ev(t + 0.00002 + busy, "SEND", "CLIENT " + c, op, "call=%d" % call)
    lines.sort(key=lambda s: float(s.split("s |")[0]))
    log = gtlog.tmp("dense.log")
    with open(log, "w") as f:
        f.write("\n".join(lines) + "\n")
    return log


class Picture:
    """A timeline mate-visualize drew (-v) into a PNG: its geometry and pixels."""

    def __init__(self, out, *args):
        p = gtlog.visualize(dense_log(), "-o", out, "-v", *args)
        self.g = gtlog.geometry(p.stderr)
        self.img = Image.open(out).convert("RGB")

    def x_of(self, t):
        g = self.g
        return g["x0"] + (t - g["t0"]) / (g["t1"] - g["t0"]) * (g["x1"] - g["x0"])

    def px(self, t, lane, frac):
        """The pixel at time t, frac of the way down the lane's row."""
        y0, y1 = self.g["lanes"][lane][:2]
        return self.img.getpixel((int(self.x_of(t)), int(y0 + (y1 - y0) * frac)))


def test_overview():
    pic = Picture(gtlog.tmp("overview.png"))
    px = pic.px
    check(sorted(pic.g["lanes"]) == ["client 0", "client 1", "w0", "w1"],
          "mate's own trace: clients and workers, no dispatcher lane: %s" % sorted(pic.g["lanes"]))
    # the band is 0.14 to 0.86 of the lane; shares are stacked from its bottom
    for t in (1.0, 2.0, 3.0):
        c = px(t, "w0", 0.82)
        check(c in PALETTE, "w0 at %g s, bottom of the band: a palette colour, got %s" % (t, c))
        check(near(px(t, "w0", 0.3), IDLE, 4), "w0 25%% busy at %g s: idle above, got %s" % (t, px(t, "w0", 0.3)))
        check(px(t, "w1", 0.5) in PALETTE, "w1 75%% busy at %g s: coloured at mid-band, got %s"
              % (t, px(t, "w1", 0.5)))
        check(near(px(t, "w1", 0.2), IDLE, 4), "w1 at %g s: idle at the top, got %s" % (t, px(t, "w1", 0.2)))
    # the idle gap from 4 s to 6 s is idle-coloured all the way down
    for t in (4.3, 5.0, 5.7):
        for frac in (0.3, 0.6, 0.82):
            check(near(px(t, "w0", frac), IDLE, 4), "w0 idle at %g s (%g): %s" % (t, frac, px(t, "w0", frac)))
    # two ops, two distinct palette colours (they were two hash pinks)
    a, b = px(2.0, "w0", 0.82), px(8.0, "w0", 0.82)
    check(a in PALETTE and b in PALETTE and dist(a, b) > 150,
          "rmsnorm %s and fused_add_rmsnorm %s are distinct palette colours" % (a, b))


def test_zoom():
    """a zoom of 10 ms: single calls are bars, full height, with idle between"""
    px = Picture(gtlog.tmp("zoom.png"), "--from", "2", "--to", "2.01").px
    check(px(2.0043, "w1", 0.3) in PALETTE, "zoom: a w1 call is a full-height bar: %s" % (px(2.0043, "w1", 0.3),))
    check(near(px(2.0018, "w1", 0.3), IDLE, 4), "zoom: idle between w1's calls: %s" % (px(2.0018, "w1", 0.3),))


run_cases(test_overview, test_zoom)
