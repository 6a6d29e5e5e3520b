#!/bin/sh
# list-dumps.sh: times mate-list-dumps on 100,000 synthetic dumps against a plain Python version of MATE's list-dumps, in one run.
#
# usage: bench/list-dumps.sh [BUILDDIR] [COUNT]   (BUILDDIR default ., COUNT default 100000)
# The dumps are generated once under $TMPDIR/mate-bench-list-COUNT and kept.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-.}
count=${2:-100000}
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

# MATE's list-dumps logic: every dump directory, the last line of its metadata.jsonl.
cat > "$root.mate_list.py" <<'EOF'
import json, os, sys
root = sys.argv[1]
dumps = []
for name in sorted(os.listdir(root)):
    d = os.path.join(root, name)
    meta = os.path.join(d, "metadata.jsonl")
    if not os.path.isdir(d) or not os.path.exists(meta):
        continue
    with open(meta) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if not lines:
        continue
    rec = json.loads(lines[-1])
    dumps.append((name, rec.get("function_name", "?"), rec.get("execution_status", "unknown")))
print("Found %d dumps in %s:" % (len(dumps), root))
for name, fn, status in dumps:
    print("  %s: %s [%s]" % (name, fn, status))
EOF

now() { date +%s.%N; }
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
printf 'dumps:                      %d\n' "$count"
printf 'mate-list-dumps:            %.3f s  (%.0f dumps/s)\n' "$t_mate" "$(echo "$count / $t_mate" | bc -l)"
printf 'mate-list-dumps --jsonl:    %.3f s\n' "$t_json"
printf 'Python (MATE list-dumps):   %.3f s\n' "$t_py"
printf 'ratio:                      %.1fx faster\n' "$(echo "$t_py / $t_mate" | bc -l)"
rm -f "$root.mate_list.py"
