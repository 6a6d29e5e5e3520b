#!/bin/bash
# examples/find-the-bug.sh: from a recording to the bug, worked through. A model's forward pass in
# miniature (examples/mate-layers: 8 layers of rmsnorm, mm and silu_and_mul over 4096 tokens)
# runs on a library with a planted bug (MINILIB_FAULT: one row of the 5th rmsnorm comes out
# wrong) and is recorded at level 10; then mate finds the call, the row, and writes a
# reproducer of it (run with torch where python3 has it, PYTHON=... names another); a second
# run whose bug writes a NaN shows where the NaN was born.
#
# usage: examples/find-the-bug.sh [--build DIR] [--out DIR]
#
#   --build DIR   a build of mate (default: build/ in the source tree; examples/run-demo.sh
#                 makes it); its bin/ holds the tools and mate-layers
#   --out DIR     where the recordings and results go: a new or empty folder (default: a new
#                 temporary folder, printed at the end)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
out=
while [ $# -gt 0 ]; do
	case $1 in
	--build|--out)
		[ $# -ge 2 ] || { echo "find-the-bug.sh: $1 needs a folder (see --help)" >&2; exit 2; }
		if [ "$1" = --build ]; then build=$2; else out=$2; fi
		shift ;;
	-h|--help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "find-the-bug.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
bin=$build/bin
if [ ! -x "$bin/mate-layers" ] || [ ! -x "$bin/mate-replay" ]; then
	echo "find-the-bug.sh: no build of mate in $build (make it: examples/run-demo.sh, or --build)" >&2
	exit 2
fi
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/mate-find-the-bug.XXXXXX")
elif [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	echo "find-the-bug.sh: --out $out is not empty: give a new or empty folder" >&2
	exit 2
fi
mkdir -p "$out"
step() { printf '\n==> %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

step "1. record the run; the library's 5th rmsnorm writes row 1731 wrong"
show "MINILIB_FAULT=rmsnorm:5:1731 MATE_LOGLEVEL=10 MATE_DUMP_DIR=$out/dumps mate-layers"
MINILIB_FAULT=rmsnorm:5:1731 MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$out/dumps" \
	"$bin/mate-layers"

step "2. the first wrong call, and where its inputs came from"
show "mate-replay --first $out/dumps"
# exit 1: a wrong call was found, which is what we are after
"$bin/mate-replay" --first "$out/dumps" | tee "$out/first.txt" || [ "${PIPESTATUS[0]}" = 1 ]
bad=$("$bin/mate-replay" --first --jsonl "$out/dumps" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["path"])') || true
[ -n "$bad" ] || { echo "find-the-bug.sh: --first named no call" >&2; exit 1; }

step "3. the smallest slice of that call that still fails"
show "mate-replay --shrink $bad -o $out/shrunk"
"$bin/mate-replay" --shrink "$bad" -o "$out/shrunk" | tee "$out/shrink.txt"
show "mate-replay $out/shrunk"
"$bin/mate-replay" "$out/shrunk" || true

step "4. that call, standalone: a folder to hand to the kernel's author"
small=$(ls -d "$out"/shrunk/*/ | head -1)
show "mate-replay --export ${small%/} -o $out/repro"
"$bin/mate-replay" --export "${small%/}" -o "$out/repro"
ls "$out/repro"
# repro.py imports the recorded module, minilib: for this C library, the torch version of its
# operations in examples/python (a FlashInfer recording's imports flashinfer instead)
py=${PYTHON:-python3}
if "$py" -c 'import torch' 2>/dev/null; then
	show "cd $out/repro && PYTHONPATH=$src/examples/python $py repro.py --device cpu"
	(cd "$out/repro" && PYTHONPATH="$src/examples/python" "$py" repro.py --device cpu) ||
		echo "(exit $?: 1 is the mismatch, reproduced without mate and without the program)"
else
	echo "(no torch for $py here: repro.py would run with PYTHONPATH=$src/examples/python)"
fi

step "5. a NaN this time: where was it born?"
show "MINILIB_FAULT=rmsnorm:5:1731:nan ... mate-layers; mate-list-dumps --nonfinite $out/dumps-nan"
MINILIB_FAULT=rmsnorm:5:1731:nan MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null \
	MATE_DUMP_DIR="$out/dumps-nan" "$bin/mate-layers"
"$bin/mate-list-dumps" --nonfinite "$out/dumps-nan" | cut -c1-160 | tee "$out/nonfinite.txt" ||
	[ "${PIPESTATUS[0]}" = 1 ]

printf '\neverything is in %s\n' "$out"
