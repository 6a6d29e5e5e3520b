#!/bin/sh
# test_recorder_golden.sh: the API log of levels 1, 3, 5 and 10 matches MATE's reference logs byte for byte, once
# timestamps, addresses, process ids and the system-information lines are masked.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
prog="$top_builddir/tests/recorder-golden"
tensors="$top_srcdir/tests/fixtures/recorder/golden-tensors.bin"
ref="$top_srcdir/tests/fixtures/mate-reference"
work=$(mktemp -d "${TMPDIR:-/tmp}/mate-golden.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
. "$top_srcdir/tests/checks.sh"
fail=0

# mask FILE: the parts that differ from run to run or between MATE and mate.
mask() {
	awk '
	BEGIN { for (i = 0; i < 80; i++) rule = rule "=" }
	$0 == rule { rules++; print; if (rules == 2) { print "<system information>" } next }
	rules == 2 { next }
	{ print }' "$1" | sed -E \
	    -e 's/^\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\]/[TIME]/' \
	    -e 's/va_range=\[0x[0-9a-f]+, 0x[0-9a-f]+\)/va_range=[ADDR)/' \
	    -e 's/[0-9]{8}_[0-9]{6}_[0-9]{3}_pid[0-9]+_/STAMP_pidPID_/g'
}

for level in 1 3 5 10; do
	dir="$work/l$level"
	mkdir -p "$dir"
	(cd "$dir" && MATE_LOGLEVEL=$level MATE_LOGDEST="$dir/out.log" "$prog" "$tensors") \
	    2>"$dir/stderr"
	rc=$?
	if check [ $rc -ne 0 ]; then
		echo "FAIL: level $level: recorder-golden exited $rc"; cat "$dir/stderr"; fail=1; checks_failed; continue
	fi
	if check [ ! -s "$dir/out.log" ]; then
		echo "FAIL: level $level: no log written"; fail=1; checks_failed; continue
	fi
	mask "$ref/level$level.log" >"$dir/expected"
	mask "$dir/out.log" >"$dir/actual"
	if check diff -u "$dir/expected" "$dir/actual" >"$dir/diff"; then
		echo "ok: level $level matches level$level.log ($(wc -l <"$dir/out.log") lines)"
	else
		echo "FAIL: level $level differs from level$level.log:"; head -60 "$dir/diff"; fail=1; checks_failed
	fi
	# The system-information block has mate's fixed shape.
	for line in '^mate version: ' '^Backend: ' '^BLAS: '; do
		check grep -q "$line" "$dir/out.log" || { echo "FAIL: level $level: no '$line' line"; fail=1; checks_failed; }
	done
done

# Level 0 writes nothing at all.
dir="$work/l0"
mkdir -p "$dir"
checks_ran
(cd "$dir" && MATE_LOGLEVEL=0 MATE_LOGDEST="$dir/out.log" "$prog" "$tensors") >"$dir/stdout" 2>&1 || { fail=1; checks_failed; }
if check [ -e "$dir/out.log" ] || [ -s "$dir/stdout" ] || [ -e "$dir/mate_dumps" ]; then
	echo "FAIL: level 0 wrote something"; fail=1; checks_failed
else
	echo "ok: level 0 writes nothing"
fi
checks_done
