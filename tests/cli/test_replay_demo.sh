#!/bin/sh
# replay-demo.sh: every call the demo workload records (.safetensors and .pt) lists and replays: the completed ones pass, the deliberate failures reproduce.
set -u
b=$top_builddir
demo=$b/examples/mate-demo
[ -x "$demo" ] || { echo "FAIL: examples/mate-demo not built (make builds it)"; exit 1; }
. "$top_srcdir/tests/checks.sh"
checks_tmpdir replay-demo
fail=0
no() { echo "FAIL: $*"; fail=1; checks_failed; }

formats="safetensors pt"
for fmt in $formats; do
	st=0
	[ "$fmt" = safetensors ] && st=1
	check env MATE_LOGLEVEL=10 MATE_DUMP_SAFETENSORS=$st MATE_DUMP_DIR="$tmp/$fmt" MATE_LOGDEST=/dev/null \
		MATE_DEMO_THREADS=2 MATE_DEMO_ROUNDS=1 "$demo" >/dev/null 2>&1 || no "$fmt: mate-demo failed"
	n=$("$b/src/replay/mate-list-dumps" -q "$tmp/$fmt" | wc -l)
	nfail=$("$b/src/replay/mate-list-dumps" -q "$tmp/$fmt" | grep -c '\[failed\]')
	ncomp=$("$b/src/replay/mate-list-dumps" -q "$tmp/$fmt" | grep -c '\[completed\]')
	check [ "$n" -gt 10 ] && [ "$nfail" -ge 1 ] && [ $((nfail + ncomp)) -eq "$n" ] ||
		no "$fmt: $n dumps, $ncomp completed, $nfail failed"
	out=$("$b/src/replay/mate-replay" -j 2 "$tmp/$fmt")
	rc=$?
	echo "$out" | tail -1
	check [ $rc -eq 0 ] || no "$fmt: passes and the deliberate failures reproduced exit 0, got $rc"
	checks_ran
	echo "$out" | grep -q "^Summary: $ncomp passed, $nfail failed ($nfail reproduced failure" ||
		no "$fmt: summary: $(echo "$out" | tail -1)"
	check [ "$(echo "$out" | grep -c ': Passed')" -eq "$ncomp" ] || no "$fmt: not every completed call passed"
	out=$("$b/src/replay/mate-replay" --status completed "$tmp/$fmt")
	rc=$?
	check [ $rc -eq 0 ] && echo "$out" | grep -q "^Summary: $ncomp passed, 0 failed$" ||
		no "$fmt: --status completed: exit $rc, $(echo "$out" | tail -1)"
done
echo "the demo's calls replay ($formats)"
checks_done
