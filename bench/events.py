#!/usr/bin/env python3
"""events.py: benchmarks of live events (make bench first): level-1 call rate with monitoring (events-overhead), mate-trace's capture rate with drops, mate-top's CPU use at -d 0.1 (batch and, with tmux, interactive).

usage: python3 bench/events.py [--rounds 30] [--flood 3] [--top-n 40]   (from the build directory)
--rounds: events-overhead's rounds (each runs every mode for 0.6 s); --flood: the seconds of
events mate-trace captures; --top-n: mate-top's refreshes at -d 0.1 (the demo runs for both
mate-top runs and 4 s more)."""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("top_builddir", os.getcwd())


def path(*p):
    return os.path.join(BUILD, *p)


def cpu_of(cmd, env, capture=True):
    """Runs cmd; returns (user+sys seconds, wall seconds, CompletedProcess)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=capture, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall, p


def wait_for(f, secs=10):
    t = time.monotonic() + secs
    while not os.path.exists(f) and time.monotonic() < t:
        time.sleep(0.02)
    return os.path.exists(f)


def capture_rate(rt, env, secs):
    pub_env = dict(env, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null", MATE_MONITOR="1",
                   MATE_MONITOR_WAIT="10")
    pub = subprocess.Popen([path("bench", "events-overhead"), "--flood", str(secs)], env=pub_env,
                           stderr=subprocess.PIPE, text=True)
    wait_for(os.path.join(rt, "%d.info" % pub.pid))
    cpu, wall, p = cpu_of([path("src", "trace", "mate-trace"), "--pid", str(pub.pid), "-s", "0",
                           "-o", "/dev/null"], env)
    _, pub_err = pub.communicate()
    m = re.search(r"(\d+) events in ([\d.]+) s", p.stderr)
    d = re.search(r"(\d+) events, (\d+) dropped, (\d+) lost", p.stderr)
    print("mate-trace capture: %s" % pub_err.strip())
    if m and d:
        n, secs = int(m.group(1)), float(m.group(2))
        print("  captured %d events in %.2f s: %.0f events/s, %s dropped by the publisher, "
              "%s lost; mate-trace CPU %.0f%%" % (n, secs, n / secs, d.group(2), d.group(3),
                                                   100 * cpu / wall))
    else:
        print("  mate-trace said: %s" % p.stderr)


def top_cpu(rt, env, n):
    demo_env = dict(env, MATE_LOGLEVEL="1", MATE_LOGDEST="/dev/null", MATE_MONITOR="1",
                    MATE_DEMO_SECONDS=str(4 + 2 * n // 10))
    demo = subprocess.Popen([path("examples", "mate-demo")], env=demo_env,
                            stderr=subprocess.DEVNULL)
    wait_for(os.path.join(rt, "%d.info" % demo.pid))
    time.sleep(0.5)
    cpu, wall, p = cpu_of([path("src", "top", "mate-top"), "-b", "-d", "0.1", "-n", str(n)], env)
    events = re.findall(r"(\d+) events", p.stdout)
    print("mate-top -b -d 0.1 against the demo: CPU %.1f%% over %.1f s (%s events seen)"
          % (100 * cpu / wall, wall, events[-1] if events else "?"))
    if shutil.which("tmux"):
        d = tempfile.mkdtemp(prefix="mate-bench-")
        sock, out = os.path.join(d, "sock"), os.path.join(d, "cpu")
        cmd = "%s %s --rusage-to %s %s -d 0.1 -n %d" % (
            sys.executable, os.path.abspath(__file__), out, path("src", "top", "mate-top"), n)
        subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "160",
                        "-y", "40", "env MATE_MONITOR_DIR=%s TERM=screen %s" % (rt, cmd)])
        wait_for(out, 20)
        time.sleep(0.2)
        subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL)
        if os.path.exists(out):
            cpu, wall = map(float, open(out).read().split())
            print("mate-top -d 0.1 on a 160x40 screen (tmux): CPU %.1f%% over %.1f s"
                  % (100 * cpu / wall, wall))
        shutil.rmtree(d, ignore_errors=True)
    demo.wait()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--rusage-to":
        cpu, wall, _ = cpu_of(sys.argv[3:], os.environ, capture=False)
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write("%f %f\n" % (cpu, wall))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--flood", type=float, default=3)
    ap.add_argument("--top-n", type=int, default=40)
    a = ap.parse_args()
    rt = tempfile.mkdtemp(prefix="mate-bench-rt-")
    env = dict(os.environ, MATE_MONITOR_DIR=rt)
    print("machine: %d CPUs, load %.1f" % (os.cpu_count(), os.getloadavg()[0]))
    subprocess.run([path("bench", "events-overhead"), str(a.rounds)], env=env, check=True)
    subprocess.run([path("bench", "events-overhead"), "--single-threaded", str(a.rounds)], env=env,
                   check=True)
    capture_rate(rt, env, a.flood)
    top_cpu(rt, env, a.top_n)
    shutil.rmtree(rt, ignore_errors=True)


main()
