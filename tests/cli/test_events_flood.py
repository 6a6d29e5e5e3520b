# mate-python: peers
"""events_flood.py: a publisher flooding mate-trace over tcp (pyzmq, real libzmq) neither grows mate-trace's memory past its documented bound nor keeps it past its -s deadline."""
import json
import multiprocessing
import os
import subprocess
import time

import zmq

from mate_test import build_path, check, run_cases, tmpdir

SECONDS = 2
RSS_MAX_MB = 400      # ZeroMQ's queue (16384 frames of <= 8 KiB) + 64 MiB held + the program


def flood(url_queue, stop):
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.SNDHWM, 0)       # the publisher keeps all: only the subscriber bounds
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    url_queue.put("tcp://127.0.0.1:%d" % port)
    start, seq, pad = time.time(), 0, "x" * 6000
    while not stop.is_set():
        seq += 1
        frame = json.dumps({"event": "RECV", "client": "c", "command": "op", "details": pad,
                            "seq": seq, "timestamp": time.time() - start, "pid": 4242,
                            "start": start, "program": "flood"})
        try:
            pub.send_string(frame, zmq.NOBLOCK)
        except zmq.Again:
            pass
    pub.close(0)
    ctx.term()


def test_flood():
    d = tmpdir()
    urls, stop = multiprocessing.Queue(), multiprocessing.Event()
    pubp = multiprocessing.Process(target=flood, args=(urls, stop))
    pubp.start()
    url = urls.get(timeout=20)
    time.sleep(0.5)                      # the flood is under way
    env = dict(os.environ, MATE_MONITOR_DIR=os.path.join(d, "none"))
    # a sanitizer build: ASan's quarantine of freed memory (256 MB) is not ours to count
    env["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                 "quarantine_size_mb=16"]))
    t0 = time.monotonic()
    p = subprocess.Popen([build_path("src", "trace", "mate-trace"), "--endpoint", url,
                          "-s", str(SECONDS), "-o", os.path.join(d, "t.log")],
                         stderr=subprocess.PIPE, env=env)
    killer = multiprocessing.Process(target=lambda: (time.sleep(120), os.kill(p.pid, 9)))
    killer.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    killer.terminate()
    stop.set()
    pubp.join(10)
    if pubp.is_alive():
        pubp.kill()
    err = p.stderr.read().decode(errors="replace")
    rss_mb = usage.ru_maxrss / 1024
    print("mate-trace -s %d under a flood: %.2f s, peak RSS %.0f MB" % (SECONDS, wall, rss_mb))
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
          "mate-trace ends by itself and exits 0 (status %d): %s" % (status, err[-300:]))
    # the deadline holds: it ends long before the killer's 120 s, with room for a slow start
    # (a sanitizer build beside a loaded CI takes seconds to start)
    check(wall < SECONDS + 60, "mate-trace -s %d ends within 60 s of it (a loaded or sanitizer build): %.2f s"
          % (SECONDS, wall))
    check(rss_mb < RSS_MAX_MB, "peak RSS under %d MB: %.0f MB" % (RSS_MAX_MB, rss_mb))
    check("pid 4242 flood:" in err, "the flood's events are counted: %s" % err[-300:])


if __name__ == "__main__":
    run_cases(test_flood)
