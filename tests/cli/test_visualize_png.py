"""visualize_png.py: mate-visualize's PNG: size is dpi x inches, bars carry their op's colour at the right rows and times, idle gaps stay visible, the legend is there."""
import functools
import sys

from mate_test import check, run_cases
import gtlog

try:
    from PIL import Image
except ImportError:
    print("SKIP: no PIL (apt-get install python3-pil)")
    sys.exit(77)

# ops take the colour-blind-safe palette in order of first appearance
MATMUL = (0x00, 0x72, 0xb2)
ADD = (0xe6, 0x9f, 0x00)
IDLE = (0xff, 0xff, 0xff)


def near(a, b, tol=8):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def has_colour(img, box, colour):
    x0, y0, x1, y1 = (int(v) for v in box)
    for y in range(y0, y1, 2):
        for x in range(x0, x1, 2):
            if near(img.getpixel((x, y))[:3], colour):
                return True
    return False


@functools.cache
def known_log():
    """gtlog's known log, written once."""
    log = gtlog.tmp("known.log")
    gtlog.mate_known(log)
    return log


class Picture:
    """A timeline mate-visualize drew (-v) into a PNG: its run, geometry and pixels."""

    def __init__(self, log, out, *args):
        self.p = gtlog.visualize(log, "-o", out, "-v", *args)
        self.g = gtlog.geometry(self.p.stderr)
        self.img = Image.open(out).convert("RGB")

    def x_of(self, t):
        g = self.g
        return g["x0"] + (t - g["t0"]) / (g["t1"] - g["t0"]) * (g["x1"] - g["x0"])

    def y_in(self, lane, frac=0.7):
        y0, y1 = self.g["lanes"][lane][:2]
        return y0 + (y1 - y0) * frac

    def px(self, t, lane, frac=0.7):
        return self.img.getpixel((int(self.x_of(t)), int(self.y_in(lane, frac))))


def test_size():
    """the size is dpi x inches, whatever the trace"""
    log = known_log()
    for dpi, w, h in ((150, 16, 10), (100, 8, 5), (72, 11.5, 7.25), (200, 6, 4)):
        out = gtlog.tmp("size.png")
        p = gtlog.visualize(log, "-o", out, "--dpi", str(dpi), "--width", str(w), "--height", str(h))
        img = Image.open(out)
        check(img.size == (round(dpi * w), round(dpi * h)),
              "%g dpi x %g x %g in gave %s" % (dpi, w, h, img.size))
        check("%d x %d pixels" % img.size in p.stderr, "resolution printed: " + p.stderr)


def test_known_picture():
    pic = Picture(known_log(), gtlog.tmp("known.png"))
    p, g, img, px, x_of, y_in = pic.p, pic.g, pic.img, pic.px, pic.x_of, pic.y_in
    check(img.size == (2400, 1500), "default size is 16 x 10 in at 150 dpi: %s" % (img.size,))
    st = gtlog.stats(p.stderr)
    check(st is not None and st["ops"] == 2 and st["calls"] == 2 and st["workers"] == 2,
          "counts: %s" % st)
    check("worker_a" in g["lanes"] and "worker_b" in g["lanes"], "lanes: %s" % g["lanes"])
    # matmul on worker_a from 1 s to 5 s, add on worker_b from 3 s to 9 s
    check(near(px(2.5, "worker_a"), MATMUL), "worker_a at 2.5 s: %s, want matmul" % (px(2.5, "worker_a"),))
    check(near(px(4.6, "worker_a"), MATMUL), "worker_a at 4.6 s: %s" % (px(4.6, "worker_a"),))
    check(near(px(6.5, "worker_b"), ADD), "worker_b at 6.5 s: %s, want add" % (px(6.5, "worker_b"),))
    check(near(px(8.6, "worker_b"), ADD), "worker_b at 8.6 s: %s" % (px(8.6, "worker_b"),))
    # idle gaps are visible: no op colour where nothing runs
    for t, lane in ((6.3, "worker_a"), (8.3, "worker_a"), (2.3, "worker_b")):
        c = px(t, lane)
        check(not near(c, MATMUL, 40) and not near(c, ADD, 40) and min(c) > 200,
              "%s idle at %g s, got %s" % (lane, t, c))
    # utilisation in the margin: worker_a busy 4 of ~8.16 s shown, worker_b 6
    busy_a, busy_b = g["lanes"]["worker_a"][2], g["lanes"]["worker_b"][2]
    check(abs(busy_a - 100 * 4 / 8.0) < 1.0, "worker_a busy %.1f%%" % busy_a)
    check(abs(busy_b - 100 * 6 / 8.0) < 1.0, "worker_b busy %.1f%%" % busy_b)
    # the memory lane and the signal
    check("memory cuda:0" in g["lanes"], "memory lane: %s" % list(g["lanes"]))
    sig = [img.getpixel((int(x_of(7.5)) + dx, int(y_in("worker_a", 0.5)) + dy))
           for dx in (-1, 0, 1) for dy in range(-6, 7)]
    check(any(c[0] > 180 and c[1] < 120 and c[2] < 120 for c in sig), "a red signal line at 7.5 s")
    # the legend shows both ops' colours
    lx0, lx1, ly0, ly1 = g["legend"]
    check(lx0 > g["x1"], "legend right of the plot")
    check(has_colour(img, (lx0, ly0, lx1, ly1), MATMUL), "matmul in the legend")
    check(has_colour(img, (lx0, ly0, lx1, ly1), ADD), "add in the legend")
    # nothing in the title area carries an op colour but the legend's swatches
    check(not has_colour(img, (0, 0, g["x1"], g["y0"] - 2), MATMUL), "no stray matmul above the plot")


def test_zoom():
    """--from/--to zoom: 2 s to 4 s fills the plot with matmul on worker_a"""
    pic = Picture(known_log(), gtlog.tmp("zoom.png"), "--from", "2", "--to", "4")
    g, px = pic.g, pic.px
    check(abs(g["t0"] - 2) < 1e-9 and abs(g["t1"] - 4) < 1e-9, "zoomed range %s..%s" % (g.get("t0"), g.get("t1")))
    for t in (2.05, 2.9, 3.5, 3.95):
        check(near(px(t, "worker_a"), MATMUL), "zoomed worker_a at %g s: %s" % (t, px(t, "worker_a")))
    check(near(px(3.5, "worker_b"), ADD), "zoomed worker_b at 3.5 s")
    check(near(px(2.5, "worker_b"), IDLE, 4), "zoomed worker_b idle at 2.5 s: %s" % (px(2.5, "worker_b"),))


def test_lanes():
    """--lanes keeps matching lanes only"""
    p = gtlog.visualize(known_log(), "-o", gtlog.tmp("lanes.png"), "-v", "--lanes", "worker_b")
    g = gtlog.geometry(p.stderr)
    check(list(g["lanes"]) == ["worker_b"], "--lanes worker_b: %s" % list(g["lanes"]))


def test_dense():
    """a dense trace: 50,000 spans on one lane, 1 ms every 2 ms, render as coverage"""
    lines = []
    for i in range(50000):
        t = i * 0.002
        lines.append("%7.3fs | #%04d | WORKER_SEND  | WORKER dense               | k               | id=%d op=%s"
                     % (t, 2 * i + 1, i, "matmul" if (i // 5000) % 2 == 0 else "add"))
        lines.append("%7.3fs | #%04d | WORKER_RECV  | WORKER dense               | k               | id=%d"
                     % (t + 0.001, 2 * i + 2, i))
    with open(gtlog.tmp("dense.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    pic = Picture(gtlog.tmp("dense.log"), gtlog.tmp("dense.png"))
    g, px = pic.g, pic.px
    st = gtlog.stats(pic.p.stderr)
    check(st["ops"] == 50000, "dense ops %s" % st)
    # 0-10 s is matmul, 10-20 s add, half busy: the lower half of the band
    # (stacked from the bottom) has the op's own colour, the upper half is idle
    c1, c2 = px(5, "dense"), px(15, "dense")
    check(near(c1, MATMUL), "dense matmul region, lower half: %s" % (c1,))
    check(near(c2, ADD), "dense add region, lower half: %s" % (c2,))
    check(abs(g["lanes"]["dense"][2] - 50) < 0.5, "dense lane half busy: %s" % (g["lanes"]["dense"],))
    for t in (5, 15):
        c = px(t, "dense", 0.3)
        check(near(c, IDLE, 4), "half-busy columns are idle above half the band at %g s: %s" % (t, c))


run_cases(test_size, test_known_picture, test_zoom, test_lanes, test_dense)
