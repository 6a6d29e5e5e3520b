#!/bin/sh
# events_top_batch.sh: mate-top -b: the first table a script reads holds a whole interval's figures (not zeros, not a climb from zero); every thread that makes calls is a row, busy as the timeline (mate-visualize) measures it (the threads' median and the workers' median within 10 points); --pid ends when the process does; the process line has its CPU and RSS; a write that fails exits 1 with a message.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir topbatch
demo=
trap 'kill $demo 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/rt"
top() { MATE_MONITOR_DIR=$tmp/rt "$b/src/top/mate-top" "$@"; }
# from the comparisons on, a failed check is counted and the others still run
miss() { echo "FAIL: $*"; checks_failed; }

MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" >/dev/null 2>&1 &  # until the trap kills it
demo=$!
wait_until [ -e "$tmp/rt/$demo.info" ]
# ops/s of worker_0 in each table of -b -n N -d 0.5
rates() { top -b -n "$1" -d 0.5 --pid $demo | awk '$3 == "worker_0" { print $5 }'; }
# one run: the first table against the median of the next three, read
# moments later (two separate runs differ by more than 2x on a loaded machine)
# the first figures are the first interval's own: within a factor of four of
# the later ones (the old first table said 0.0). The demo's own rate swings past
# 2x from one second to the next beside busy loops (stress.sh saw 957 then 2080,
# and 2813 then 1307), so the band is 4x and a run that misses is tried again,
# three runs at most: a first table that is wrong is wrong in every run.
within() { awk -v f="${first:-0}" -v l="${later:-0}" 'BEGIN { exit !(f > 0 && l > 0 && f > l / 4 && f < l * 4) }'; }
for attempt in 1 2 3; do
	tables=$(rates 4)
	first=$(echo "$tables" | sed -n 1p)
	later=$(echo "$tables" | sed -n 2,4p | sort -n | sed -n 2p)
	echo "worker_0 ops/s, run $attempt: first table $first, median of the next three $later"
	within && break
done
check [ -n "$first" ] && [ -n "$later" ] || fail "worker_0 in the tables: '$first' '$later'"
check within || fail "the first table's ops/s ($first) is not the truth (about $later), in 3 runs"
busy=$(top -b -n 1 -d 0.5 --pid $demo | awk '$3 ~ /^worker_/ { print $4 }' | tr -d '%' | sort -n | tail -1)
check awk -v b="${busy:-0}" 'BEGIN { exit !(b > 0) }' || fail "the first table shows the workers busy: $busy"

# the process line: CPU share and resident memory from /proc
line=$(top -b -n 2 -d 0.5 --pid $demo | grep -E "^$demo +mate-demo +process " | tail -1)
check echo "$line" | grep -Eq ' process cpu [0-9]+%  rss [0-9.]+[KMG]?B$' ||
	fail "the process line shows cpu and rss: '$line'"
kill $demo 2>/dev/null

# The client threads' rows against the timeline of the same run: mate-top
# showed them at 0% (their calls' work ran on workers) while the timeline drew
# them 94% busy. A run of 5 s recorded both ways, held (MATE_MONITOR_WAIT) until
# mate-top has subscribed; one table of its first 4 s against the timeline of the
# same 4 s (a table of one second against the whole run differed by 20 points for
# a worker on a loaded machine: the two windows, not the two tools). A second
# mate-top --pid follows it and ends by itself when it ends.
MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_MONITOR_WAIT=60 \
    MATE_INSTRUCTION_LOG=$tmp/ilog.txt MATE_DEMO_SECONDS=5 "$b/examples/mate-demo" >/dev/null 2>&1 &
demo=$!
wait_until [ -e "$tmp/rt/$demo.info" ]
top -b -d 4 -n 1 --pid $demo >"$tmp/tables" 2>"$tmp/top4.err" &
top4=$!
top -b -d 1 --pid $demo >/dev/null 2>"$tmp/top.err" &
topp=$!
wait_until eval '! kill -0 $topp 2>/dev/null'
check eval '! kill -0 $topp 2>/dev/null' || { kill $topp; fail "mate-top --pid did not end with its process"; }
wait $topp
rc=$?
check [ $rc -eq 0 ] || fail "mate-top --pid exits $rc when its process ends: $(cat "$tmp/top.err")"
check grep -q '^mate-top: the process followed ended$' "$tmp/top.err" ||
	fail "mate-top --pid says why it ended: $(cat "$tmp/top.err")"
wait $top4
wait $demo
# the window of mate-top's table in the log's clock: from the first event, 4 s
from=$(sed -n 's/^ *\([0-9.]*\)s | #0*1 | .*/\1/p' "$tmp/ilog.txt" | head -1)
to=$(awk -v f="${from:-0}" 'BEGIN { printf "%.6f", f + 4 }')
"$b/mate-visualize" -v --from "${from:-0}" --to "$to" -o "$tmp/t.png" "$tmp/ilog.txt" 2>"$tmp/vis" ||
	fail "mate-visualize: $(cat "$tmp/vis")"
# lane busy shares, "client TID" as mate-top's "thread_TID"
sed -n 's/^mate-visualize: lane [0-9]*: .*, busy \([0-9.]*\)%, [0-9]* spans: \(.*\)$/\2 \1/p' "$tmp/vis" |
	sed 's/^client /thread_/' >"$tmp/lanes"
awk '$3 ~ /^(thread_|worker_)/ { print $3, $4 }' "$tmp/tables" | tr -d % >"$tmp/rows"
echo "timeline $from..$to s: $(tr '\n' ' ' <"$tmp/lanes")"
echo "mate-top's table: $(tr '\n' ' ' <"$tmp/rows") ($(grep -o '[0-9]* dropped' "$tmp/tables"))"
check [ "$(grep -c '^thread_' "$tmp/lanes")" -eq 4 ] || fail "the timeline's four client lanes: $(cat "$tmp/vis")"
# the threads' median and the workers' median, each within 10 points. One row can read
# off on a loaded machine: a publisher that lags has its interval closed at its latest
# event (test_activity's lagging_publisher), so mate-top's 4 s are not quite the
# timeline's (a thread 16 points off, niced beside busy loops, 1.3 s behind)
median() { grep "^$2" "$1" | awk '{ print $2 }' | sort -n | awk '{ v[n++] = $1 } END { if (n) print v[int((n - 1) / 2)] }'; }
for kind in thread_ worker_; do
	want=$(median "$tmp/lanes" $kind)
	got=$(median "$tmp/rows" $kind)
	check [ "$(grep -c "^$kind" "$tmp/rows")" -eq "$(grep -c "^$kind" "$tmp/lanes")" ] &&
		awk -v g="${got:-x}" -v w="${want:-x}" 'BEGIN { d = g - w; exit !(g != "x" && w != "x" && d < 10 && d > -10) }' ||
		miss "the ${kind%_}s: mate-top's median ${got:-none}% busy, the timeline's ${want:-none}%"
done

# a write that fails: exit 1 and a message naming it (ENOSPC from /dev/full)
if [ -w /dev/full ]; then
	top -b -n 1 -d 0.1 >/dev/full 2>"$tmp/err"
	rc=$?
	check [ $rc -eq 1 ] || fail "mate-top -b >/dev/full exits $rc, want 1"
	check grep -q '^mate-top: standard output: No space left on device$' "$tmp/err" ||
		fail "mate-top -b >/dev/full says why: $(cat "$tmp/err")"
fi
checks_done
