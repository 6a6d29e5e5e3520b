#!/bin/sh
# list-details.sh: times mate-list-dumps -d on one record of N tensor keys (no tensor files: the record's tensor_details) and of N/4, in one run.
#
# usage: bench/list-details.sh [BUILDDIR] [N]   (BUILDDIR default ., N default 40000)
# The ratio of the two times is 4 when -d is linear in the keys, 16 when
# quadratic; the anchor is the plain listing (the skim) of the same record.
set -eu
build=${1:-.}
n=${2:-40000}
list="$build/src/replay/mate-list-dumps"
py=${PYTHON:-python3}
root=$(mktemp -d "${TMPDIR:-/tmp}/mate-bench-details-XXXXXX")
trap 'rm -rf "$root"' EXIT

[ -x "$list" ] || { echo "no $list: build first (make)" >&2; exit 2; }
"$py" - "$root" "$n" <<'PYEOF'
import json, os, sys
root, n = sys.argv[1], int(sys.argv[2])
for k, tag in ((n, "big"), (n // 4, "quarter")):
    d = os.path.join(root, tag, "20261121_125033_783_pid1_%s_call0001" % tag)
    os.makedirs(d)
    keys = ["arg_%d" % i for i in range(k)]
    rec = {"function_name": tag, "execution_status": "inputs_saved",
           "timestamp": "20261121_125033_783",
           "tensor_info": {"input_tensor_keys": keys, "output_tensor_keys": [],
                           "input_size_bytes": 4 * k, "output_size_bytes": 0},
           "tensor_details": {x: {"shape": [1], "dtype": "torch.float32", "stride": [1]}
                              for x in keys}}
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
PYEOF

now() { date +%s.%N; }
# best of three
best() {
	b=
	for i in 1 2 3; do
		t0=$(now); "$@" > /dev/null 2>&1 || true; t1=$(now)
		t=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}

t_big=$(best "$list" -q -d "$root/big")
t_quarter=$(best "$list" -q -d "$root/quarter")
t_plain=$(best "$list" -q "$root/big")
printf 'keys:                       %d and %d  (load %s)\n' "$n" "$((n / 4))" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'mate-list-dumps -d:         %.3f s and %.3f s\n' "$t_big" "$t_quarter"
printf 'ratio %d / %d keys:     %.1f  (4 linear, 16 quadratic)\n' "$n" "$((n / 4))" \
    "$(echo "$t_big / $t_quarter" | bc -l)"
printf 'plain listing (anchor):     %.3f s: -d is %.1fx that\n' "$t_plain" \
    "$(echo "$t_big / $t_plain" | bc -l)"
