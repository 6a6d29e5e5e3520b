#!/bin/sh
# replay-many.sh: replays 10,000 small dumps (16x16 float32 gemm, safetensors) and reports dumps per second on 1 thread and on all cores, and their ratio.
#
# usage: bench/replay-many.sh [BUILDDIR] [COUNT] [ROUNDS]   (defaults ., 10000 and 5)
# Uses the reference plugin (make check builds tests/plugin-reference.la), or
# tests/mate-replay-ref in static builds. The dumps are kept under
# $TMPDIR/mate-bench-replay-COUNT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
count=${2:-10000}
rounds=${3:-5}
py=${PYTHON:-python3}
root=${TMPDIR:-/tmp}/mate-bench-replay-$count

if [ -f "$build/tests/.libs/plugin-reference.so" ]; then
	set -- "$build/src/replay/mate-replay" --plugin "$build/tests/.libs/plugin-reference.so"
elif [ -x "$build/tests/mate-replay-ref" ]; then
	set -- "$build/tests/mate-replay-ref"
else
	echo "build the test plugin first: make -C $build check TESTS=" >&2
	exit 2
fi
if [ ! -f "$root/.complete" ]; then
	rm -rf "$root"
	echo "generating $count dumps in $root ..." >&2
	"$py" "$here/gen-dumps.py" "$root" "$count" --tensors
	touch "$root/.complete"
fi

cores=$(nproc 2>/dev/null || echo 2)
[ "$cores" -gt 1 ] || cores=2
# -j 1 and -j $cores in alternate rounds (the load on a shared machine drifts),
# after one untimed run of each; each run's wall and CPU time (user + system)
# and its context switches (a thread that waits for another switches)
"$py" - "$rounds" "$count" "$cores" "$root" "$@" <<'EOF'
import os, statistics, subprocess, sys, time
rounds, count, cores, root = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cmd, out = sys.argv[5:], sys.argv[4] + ".out"


def run(jobs):
    with open(out, "w") as f:
        t = time.monotonic()
        p = subprocess.Popen(cmd + ["-j", str(jobs), root], stdout=f, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t
    with open(out) as f:
        text = f.read()
    if "Summary: %d passed, 0 failed" % count not in text:
        sys.exit("replay did not pass:\n" + "\n".join(text.splitlines()[-3:]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_nvcsw + ru.ru_nivcsw


med = statistics.median
jobs = (1, cores)
for j in jobs:
    run(j)
res = {j: [] for j in jobs}
for _ in range(rounds):
    for j in jobs:
        res[j].append(run(j))
os.unlink(out)
for j in jobs:
    w = [r[0] for r in res[j]]
    print("mate-replay -j %-3d %d dumps in %.3f s: %.0f dumps/s (median of %d, best %.3f s), "
          "CPU %.3f s, %d context switches"
          % (j, count, med(w), count / med(w), rounds, min(w), med(r[1] for r in res[j]),
             med(r[2] for r in res[j])))
one, many = res[1], res[cores]
print("-j %d against -j 1: %.2fx (medians), %.2fx (bests), %.2fx (the rounds' median ratio); "
      "CPU %.2f of -j 1's; load %s (target 1.6x on an idle machine)"
      % (cores, med(r[0] for r in one) / med(r[0] for r in many),
         min(r[0] for r in one) / min(r[0] for r in many),
         med(a[0] / b[0] for a, b in zip(one, many)),
         med(r[1] for r in many) / med(r[1] for r in one),
         open("/proc/loadavg").read().split()[0]))
EOF
