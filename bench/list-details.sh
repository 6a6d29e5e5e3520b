#!/bin/sh
# list-details.sh: times mate-list-dumps -d and --unique, and mate-replay's loading of an in-place dump, on one record of N tensor keys and of N/4, in one run.
#
# usage: bench/list-details.sh [BUILDDIR] [N]   (BUILDDIR default ., N default 40000)
# The ratio of each pair of times is 4 when the tool is linear in the keys,
# 16 when quadratic; the anchor is the plain listing (the skim) of the same
# record. -d and --unique read a record without tensor files (the record's
# tensor_details); "-d, files" and mate-replay a completed call whose N keys
# are each in inputs.safetensors and inplace.safetensors (its function has
# no handler: the time is the loading and checking of the files against the
# record). A tool that fails is not timed: a usage error would look fast.
set -eu
build=${1:-.}
n=${2:-40000}
list="$build/src/replay/mate-list-dumps"
replay="$build/src/replay/mate-replay"
py=${PYTHON:-python3}
root=$(mktemp -d "${TMPDIR:-/tmp}/mate-bench-details-XXXXXX")
trap 'rm -rf "$root"' EXIT

[ -x "$list" ] && [ -x "$replay" ] || { echo "no $list: build first (make)" >&2; exit 2; }
"$py" - "$root" "$n" <<'PYEOF'
import json, os, struct, sys
root, n = sys.argv[1], int(sys.argv[2])

def safetensors(path, keys):
    head = {k: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
            for i, k in enumerate(keys)}
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(4 * len(keys)))

for k, tag in ((n, "big"), (n // 4, "quarter")):
    keys = ["arg_%d" % i for i in range(k)]
    details = {x: {"shape": [1], "dtype": "torch.float32", "stride": [1], "device": "cpu"}
               for x in keys}
    d = os.path.join(root, tag, "20261121_125033_783_pid1_%s_call0001" % tag)
    os.makedirs(d)
    rec = {"function_name": tag, "execution_status": "inputs_saved",
           "timestamp": "20261121_125033_783",
           "tensor_info": {"input_tensor_keys": keys, "output_tensor_keys": [],
                           "input_size_bytes": 4 * k, "output_size_bytes": 0},
           "tensor_details": details}
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
    d = os.path.join(root, tag + "-inplace", "20261121_125033_783_pid1_%s_call0001" % tag)
    os.makedirs(d)
    rec = {"function_name": tag, "module": "bench", "execution_status": "completed",
           "timestamp": "20261121_125033_783", "tensor_format": "safetensors",
           "input_metadata": {}, "output_metadata": {},
           "tensor_info": {"input_tensor_keys": keys, "output_tensor_keys": [],
                           "inplace_tensor_keys": keys, "input_size_bytes": 4 * k,
                           "output_size_bytes": 0, "inplace_size_bytes": 4 * k,
                           "inplace_file": "inplace.safetensors"},
           "tensor_details": details}
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write(json.dumps(rec) + "\n")
    safetensors(os.path.join(d, "inputs.safetensors"), keys)
    safetensors(os.path.join(d, "inplace.safetensors"), keys)
PYEOF

now() { date +%s.%N; }
# best of three
best() {
	b=
	for i in 1 2 3; do
		t0=$(now); "$@" > /dev/null 2>&1 || [ $? -eq 1 ] || { echo "failed: $*" >&2; exit 2; }
		t1=$(now)
		t=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}
# row WHAT BIG QUARTER
row() {
	[ -n "$2" ] && [ -n "$3" ] || exit 2   # best() said which command failed
	printf '%-28s %.3f s and %.3f s, ratio %.1f, %.1fx the anchor\n' "$1" "$2" "$3" \
	    "$(echo "$2 / $3" | bc -l)" "$(echo "$2 / $t_plain" | bc -l)"
}

t_plain=$(best "$list" -q "$root/big")
printf 'keys:                        %d and %d  (load %s)\n' "$n" "$((n / 4))" "$(cut -d' ' -f1 /proc/loadavg)"
printf 'plain listing (anchor):      %.3f s\n' "$t_plain"
row 'mate-list-dumps -d:' "$(best "$list" -q -d "$root/big")" "$(best "$list" -q -d "$root/quarter")"
row 'mate-list-dumps --unique:' "$(best "$list" -q --unique "$root/big")" \
    "$(best "$list" -q --unique "$root/quarter")"
row 'mate-list-dumps -d, files:' "$(best "$list" -q -d "$root/big-inplace")" \
    "$(best "$list" -q -d "$root/quarter-inplace")"
row 'mate-replay, in place:' "$(best "$replay" "$root/big-inplace")" \
    "$(best "$replay" "$root/quarter-inplace")"
echo 'ratio 4: linear in the keys; 16: quadratic'
