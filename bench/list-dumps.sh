#!/bin/sh
# list-dumps.sh: times mate-list-dumps on 100,000 synthetic dumps against a plain Python version of MATE's list-dumps, in one run.
#
# usage: bench/list-dumps.sh [BUILDDIR] [COUNT] [ROUNDS]   (defaults ., 100000 and 5)
# The dumps are generated once under $TMPDIR/mate-bench-list-COUNT and kept.
# Then the floor, bench/list-floor (`make bench`: one openat, pread and close
# a dump, nothing parsed), and mate-list-dumps in ROUNDS alternating rounds:
# the listing's wall and CPU time as fractions of the floor's (target 0.8).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
count=${2:-100000}
rounds=${3:-5}
list="$build/src/replay/mate-list-dumps"
py=${PYTHON:-python3}
root=${TMPDIR:-/tmp}/mate-bench-list-$count

[ -x "$list" ] || { echo "no $list: build first (make)" >&2; exit 2; }
if [ ! -f "$root/.complete" ]; then
	rm -rf "$root"
	echo "generating $count dumps in $root ..." >&2
	"$py" "$here/gen-dumps.py" "$root" "$count"
	touch "$root/.complete"
fi

# MATE's list-dumps logic in plain Python (its CLI without click's colours):
# pathlib, each directory holding metadata.jsonl, sorted, every line read, the
# last one parsed.
cat > "$root.mate_list.py" <<'EOF'
import json, sys
from pathlib import Path
root = Path(sys.argv[1])
dumps = sorted(d for d in root.iterdir() if d.is_dir() and (d / "metadata.jsonl").exists())
print("Found %d dumps in %s:" % (len(dumps), root))
for d in dumps:
    try:
        with open(d / "metadata.jsonl") as f:
            lines = f.readlines()
        if lines:
            rec = json.loads(lines[-1])
            print("  %s: %s [%s]" % (d.name, rec.get("function_name", "unknown"),
                                     rec.get("execution_status", "unknown")))
    except Exception as e:
        print("  %s: Error reading metadata - %s" % (d.name, e))
EOF

now() { date +%s.%N; }
# CPU seconds (user + system) of one run
cpu() {
	/usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{ print $1 + $2 }'
}
# best of three, warm cache (each tool runs once first)
best() {
	"$@" > /dev/null 2>&1
	b=
	for i in 1 2 3; do
		t0=$(now); "$@" > /dev/null 2>&1; t1=$(now)
		t=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}

lines=$("$list" -q "$root" | wc -l)
[ "$lines" -eq "$count" ] || { echo "mate-list-dumps listed $lines of $count dumps" >&2; exit 1; }
t_mate=$(best "$list" -q "$root")
t_json=$(best "$list" -q --jsonl "$root")
t_py=$(best "$py" "$root.mate_list.py" "$root")
c_mate=$(cpu "$list" -q "$root" 2>/dev/null || echo 0)
c_py=$(cpu "$py" "$root.mate_list.py" "$root" 2>/dev/null || echo 0)
printf 'dumps:                      %d  (%s CPUs, load %s)\n' "$count" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'mate-list-dumps:            %.3f s  (%.0f dumps/s)\n' "$t_mate" "$(echo "$count / $t_mate" | bc -l)"
printf 'mate-list-dumps --jsonl:    %.3f s\n' "$t_json"
printf 'Python (MATE list-dumps):   %.3f s\n' "$t_py"
printf 'ratio:                      %.1fx faster (wall time)\n' "$(echo "$t_py / $t_mate" | bc -l)"
if [ -x /usr/bin/time ]; then
	# a few dumps can take mate less than the 0.01 s time(1) measures
	printf 'CPU time (user+sys):        mate %.2f s, Python %.2f s: %s less\n' "$c_mate" "$c_py" \
	    "$(awk -v p="$c_py" -v m="$c_mate" 'BEGIN { if (m > 0) printf "%.1fx", p / m; else print "n/a" }')"
fi
rm -f "$root.mate_list.py"

floor="$build/bench/list-floor"
[ -x "$floor" ] || { echo "no $floor: make bench" >&2; exit 2; }
"$py" - "$rounds" "$floor" "$list" "$root" <<'EOF'
import os, statistics, subprocess, sys, time
rounds, floor, mate, root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def run(cmd):
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("%s failed" % cmd[0])
    return time.monotonic() - t, ru.ru_utime + ru.ru_stime


med = statistics.median
sides = {"floor": [floor, root], "mate": [mate, "-q", root]}
res = {k: [] for k in sides}
for k in sides:   # warm
    run(sides[k])
for _ in range(rounds):
    for k in sides:
        res[k].append(run(sides[k]))
for k, name in (("floor", "floor (open/read/close)"), ("mate", "mate-list-dumps -q")):
    print("%-26s  %.3f s wall (best %.3f), %.3f s CPU (best %.3f), medians of %d"
          % (name + ":", med(r[0] for r in res[k]), min(r[0] for r in res[k]),
             med(r[1] for r in res[k]), min(r[1] for r in res[k]), rounds))
cpu = med(f[1] / m[1] for f, m in zip(res["floor"], res["mate"]) if m[1] > 0) \
    if any(m[1] > 0 for m in res["mate"]) else float("nan")
print("against the floor:          %.2f in CPU time, %.2f in wall time (medians of the rounds' "
      "ratios; target 0.8; load %s)"
      % (cpu, med(f[0] / m[0] for f, m in zip(res["floor"], res["mate"])),
         open("/proc/loadavg").read().split()[0]))
EOF
