"""visualize_svg.py: mate-visualize's SVG and PDF: well-formed, sized in inches, the SVG's text carries the lane labels and op names."""
import functools
import re
import xml.etree.ElementTree as ET

from mate_test import check, run_cases
import gtlog


@functools.cache
def known_log():
    """gtlog's known log, written once."""
    log = gtlog.tmp("known.log")
    gtlog.mate_known(log)
    return log


def test_svg():
    log = known_log()
    out = gtlog.tmp("known.svg")
    p = gtlog.visualize(log, "-o", out, "--width", "12", "--height", "6")
    check("wrote %s" % out in p.stderr, "summary names the file: " + p.stderr)
    with open(out) as f:
        svg = f.read()
    root = ET.fromstring(svg)
    check(root.tag.endswith("svg"), "root element is svg: " + root.tag)
    check(root.get("width") in ("864pt", "864") and root.get("height") in ("432pt", "432"),
          "12 x 6 in is 864 x 432 pt: %s x %s" % (root.get("width"), root.get("height")))
    words = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    for w in ("worker_a", "worker_b", "client thread-1", "dispatcher", "memory cuda:0",
              "matmul", "add", "mate timeline: known.log", "busy", "ops"):
        check(w in words, "SVG text has %r" % w)
    # the bars are there as filled shapes in the ops' colours
    check(re.search(r"rgb\(90\.588235%,29\.803922%,23\.529412%\)|#e74c3c", svg, re.I) is not None,
          "a matmul-coloured fill")
    check(len(svg) < 2000000, "SVG stays small: %d bytes" % len(svg))


def test_pdf():
    """--format wins over the name; PDF starts like one"""
    out = gtlog.tmp("known.out")
    gtlog.visualize(known_log(), "-o", out, "--format", "pdf")
    with open(out, "rb") as f:
        pdf = f.read()
    check(pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-64:], "a complete PDF")
    check(re.search(rb"/MediaBox \[ ?0 0 1152 720 ?\]", pdf) is not None, "16 x 10 in page")


def test_gt_svg():
    """a GT log as SVG: its worker and client lanes, op names from the requests"""
    out = gtlog.tmp("mw.svg")
    gtlog.visualize(gtlog.fixture("multiworker4_autoshard.log"), "-o", out)
    root = ET.parse(out).getroot()
    words = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    for w in ("auto_worker_0", "auto_worker_3", "client 006b8b456b", "matmul", "randn", "relu", "sum"):
        check(w in words, "GT SVG text has %r" % w)


run_cases(test_svg, test_pdf, test_gt_svg)
