#!/bin/sh
# test_find_the_bug.sh: the worked example, examples/find-the-bug.sh, as a user runs it: the first wrong call of a recorded run and the call its input came from, the one bad row of 4,096 cut out, a reproducer that mismatches without mate (where torch is), and the call where a NaN was born, not the ones it flowed into.
. "$top_srcdir/tests/checks.sh"
checks_tmpdir find-the-bug

PYTHON=${PYTHON_TORCH:-/nonexistent} bash "$top_srcdir/examples/find-the-bug.sh" \
	--build "$top_builddir" --out "$tmp/out" > "$tmp/log" 2>&1
rc=$?
check [ "$rc" -eq 0 ] || fail_stop "exit $rc: $(cat "$tmp/log")"
o=$tmp/out

# --first: the 5th rmsnorm is call 13 of 24 (rmsnorm, mm, silu_and_mul a layer)
check grep -q '^first wrong call: call 13 of 24, .* process [0-9]*: minilib.rmsnorm ([0-9_]*_pid[0-9]*_rmsnorm_call0005): Mismatch: result\[1731, ' \
	"$o/first.txt" || fail "--first: $(cat "$o/first.txt")"
check grep -q "its input \`input\` (arg_0) is \`result\` of call 12, minilib.silu_and_mul ([0-9_]*_pid[0-9]*_silu_and_mul_call0004)" \
	"$o/first.txt" || fail "--first's producer: $(cat "$o/first.txt")"

# --shrink: the one row
check grep -qx 'row 1,731 of 4,096: the only row that mismatches' "$o/shrink.txt" ||
	fail "--shrink: $(cat "$o/shrink.txt")"
n=$(ls "$o/shrunk" | grep -c _rmsnorm_call0005)
check [ "$n" -eq 1 ] || fail "the shrunk root: $(ls "$o/shrunk")"
check grep -q '"shape": *\[1, *64\]' "$o"/shrunk/*/metadata.jsonl ||
	fail "the shrunk dump's shape: $(head -c 600 "$o"/shrunk/*/metadata.jsonl)"

# --export: repro.py, and where torch is, its verdict without mate
check [ -f "$o/repro/repro.py" ] && [ -f "$o/repro/README" ] || fail "--export: $(ls "$o/repro")"
if [ -n "$PYTHON_TORCH" ]; then
	check grep -q '^rmsnorm (.*): Mismatch: result\[0, 0\]' "$tmp/log" &&
		grep -q '(exit 1: 1 is the mismatch' "$tmp/log" || fail "repro.py: $(cat "$tmp/log")"
else
	echo "# no torch: repro.py not run"
fi

# --nonfinite: the origin is the 5th rmsnorm; the 11 calls after it only passed the NaN on
check grep -q '_rmsnorm_call0005: rmsnorm \[origin\] output result: 1 NaN, 0 +inf, 0 -inf of 262144 float32, first at \[1731, 0\]' \
	"$o/nonfinite.txt" || fail "--nonfinite: $(cat "$o/nonfinite.txt")"
check [ "$(grep -c '\[origin\]' "$o/nonfinite.txt")" -eq 1 ] &&
	[ "$(grep -c '\[passed on\]' "$o/nonfinite.txt")" -eq 11 ] || fail "--nonfinite: $(cat "$o/nonfinite.txt")"

# without the planted bug, nothing is wrong
MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$tmp/clean" "$top_builddir/bin/mate-layers" 2 256 >/dev/null
"$top_builddir/bin/mate-replay" --first "$tmp/clean" > "$tmp/clean.txt" 2>&1
rc=$?
check [ "$rc" -eq 0 ] && grep -q '^no wrong call among 6 replayed' "$tmp/clean.txt" ||
	fail "a run without the bug: exit $rc: $(cat "$tmp/clean.txt")"

# a folder of other files is refused, untouched
mkdir "$tmp/mine" && echo keep > "$tmp/mine/notes"
bash "$top_srcdir/examples/find-the-bug.sh" --build "$top_builddir" --out "$tmp/mine" > "$tmp/log2" 2>&1
rc=$?
check [ "$rc" -eq 2 ] && [ "$(ls "$tmp/mine")" = notes ] || fail "--out of other files: exit $rc"

checks_done
