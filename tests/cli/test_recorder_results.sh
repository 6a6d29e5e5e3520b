#!/bin/sh
# test_recorder_results.sh: a recorder never changes results: mate-demo's results (a checksum of every
# output array) and exit status are the same without recording and at levels 1, 3, 5 and 10, and its
# level-10 dumps are whole (tests/dump-check).
: "${top_builddir:=.}"
demo="$top_builddir/examples/mate-demo"
. "$top_srcdir/tests/checks.sh"
checks_tmpdir results
fail=0
export MATE_DEMO_CHECKSUM=1 MATE_DEMO_THREADS=3 MATE_DEMO_ROUNDS=2

MATE_LOGLEVEL=0 "$demo" > "$tmp/ref" 2> "$tmp/err"
rc0=$?
echo "level 0: exit status $rc0, $(cat "$tmp/ref")"
if check [ "$rc0" -ne 0 ] || ! grep -q 'results checksum' "$tmp/ref"; then
	echo "FAIL: the demo does not run without recording"; cat "$tmp/err"; exit 1
fi
for run in 1 3 5 10:safetensors 10:pt; do
	level=${run%%:*}
	st=1
	[ "$run" = 10:pt ] && st=0
	rm -rf "$tmp/dumps"
	MATE_LOGLEVEL=$level MATE_LOGDEST="$tmp/log" MATE_DUMP_DIR="$tmp/dumps" MATE_DUMP_SAFETENSORS=$st \
		"$demo" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	echo "level $run: exit status $rc, $(cat "$tmp/out")"
	if check [ "$rc" -ne "$rc0" ] || ! cmp -s "$tmp/ref" "$tmp/out"; then
		echo "FAIL: level $run changed the results or the exit status"; sed 's/^/  /' "$tmp/err"; fail=1; checks_failed
	fi
	[ "$level" = 10 ] && checks_ran && checks_ran
	if [ "$level" = 10 ] && ! "$top_builddir/tests/dump-check" "$tmp/dumps"; then
		echo "FAIL: the level-10 dumps are not whole"; fail=1; checks_failed
	fi
	ext=safetensors
	[ "$run" = 10:pt ] && ext=pt
	if [ "$level" = 10 ] && ! ls "$tmp"/dumps/*/inputs.$ext >/dev/null 2>&1; then
		echo "FAIL: level $run dumped no inputs.$ext"; sed 's/^/  /' "$tmp/err"; fail=1; checks_failed
	fi
done
checks_done
