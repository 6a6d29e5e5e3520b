# mate-python: peers
"""events_curve.py: MATE_MONITOR_CURVE_SECRET_KEY makes the tcp endpoint a ZeroMQ CURVE server: mate-trace with MATE_MONITOR_CURVE_SERVER_KEY captures, a subscriber without the key (pyzmq, real libzmq) and mate-trace without it get nothing; the ipc endpoint is unchanged."""
import os
import re
import subprocess
import time

import zmq

from mate_test import build_path, check, run_cases, skip, tmpdir


def first_message(sock, url, timeout_ms):
    """The first message sock, subscribed to everything at url, receives within timeout_ms, or None."""
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
    sock.connect(url)
    try:
        return sock.recv()
    except zmq.Again:
        return None


def test_curve():
    d = tmpdir()
    rt = os.path.join(d, "rt")
    os.mkdir(rt, 0o700)
    server_public, server_secret = (k.decode() for k in zmq.curve_keypair())
    env = dict(os.environ, MATE_MONITOR_DIR=rt, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null",
               MATE_MONITOR="tcp:0", MATE_MONITOR_CURVE_SECRET_KEY=server_secret,
               MATE_DEMO_SECONDS="20")
    env.pop("MATE_MONITOR_CURVE_SERVER_KEY", None)
    demo = subprocess.Popen([build_path("examples", "mate-demo")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = demo.stderr.readline()
    m = re.search(r"publishing on (tcp://\S+)", line)
    check(m is not None, "the demo binds tcp with a CURVE key: %r" % line)
    if m is None:
        demo.kill()
        return
    url = m.group(1)

    # a plain subscriber (no CURVE) gets nothing
    ctx = zmq.Context()
    plain = ctx.socket(zmq.SUB)
    got = first_message(plain, url, 1500)
    check(got is None, "a subscriber without CURVE receives nothing: %r" % (got,))
    # a CURVE client with the wrong server key gets nothing either
    wrong = ctx.socket(zmq.SUB)
    wpub, wsec = zmq.curve_keypair()
    wrong.curve_serverkey = zmq.curve_keypair()[0]
    wrong.curve_publickey, wrong.curve_secretkey = wpub, wsec
    got = first_message(wrong, url, 1000)
    check(got is None, "a subscriber with another server key receives nothing: %r" % (got,))
    plain.close(0)    # (one that never reads would hold the publisher back)
    wrong.close(0)

    tenv = dict(os.environ, MATE_MONITOR_DIR=os.path.join(d, "none"))
    tenv.pop("MATE_MONITOR_CURVE_SERVER_KEY", None)
    trace = [build_path("src", "trace", "mate-trace"), "--endpoint", url, "-s", "1", "-o"]
    p = subprocess.run(trace + [os.path.join(d, "no.log")], env=tenv, capture_output=True,
                       text=True)
    check(p.returncode == 1 and "no events captured" in p.stderr,
          "mate-trace without the key captures nothing (exit %d): %s" % (p.returncode, p.stderr))
    tenv["MATE_MONITOR_CURVE_SERVER_KEY"] = server_public
    p = subprocess.run(trace + [os.path.join(d, "yes.log")], env=tenv, capture_output=True,
                       text=True)
    n = re.search(r"(\d+) events in", p.stderr)
    check(p.returncode == 0 and n is not None and int(n.group(1)) > 10,
          "mate-trace with MATE_MONITOR_CURVE_SERVER_KEY captures (exit %d): %s"
          % (p.returncode, p.stderr))
    tenv["MATE_MONITOR_CURVE_SERVER_KEY"] = "not-a-key"
    p = subprocess.run(trace + [os.path.join(d, "bad.log")], env=tenv, capture_output=True,
                       text=True)
    check(p.returncode == 2 and "not a 40-character Z85 CURVE key" in p.stderr,
          "a bad server key is named (exit %d): %s" % (p.returncode, p.stderr))
    # the ipc endpoint (the runtime directory's) is not CURVE: mate-trace finds it as before
    tenv = dict(os.environ, MATE_MONITOR_DIR=rt)
    tenv.pop("MATE_MONITOR_CURVE_SERVER_KEY", None)
    p = subprocess.run([build_path("src", "trace", "mate-trace"), "--pid", str(demo.pid), "-s", "1",
                        "-o", os.path.join(d, "ipc.log")], env=tenv, capture_output=True,
                       text=True)
    check(p.returncode == 0, "the ipc endpoint needs no key (exit %d): %s"
          % (p.returncode, p.stderr))
    ctx.term()
    demo.kill()
    demo.wait()


if __name__ == "__main__":
    if not zmq.has("curve"):
        skip("pyzmq's libzmq has no CURVE")
    run_cases(test_curve)
