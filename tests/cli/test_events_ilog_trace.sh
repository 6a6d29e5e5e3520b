#!/bin/sh
# events_ilog_trace.sh: the instruction log of a recorded run equals what mate-trace captured from it, header apart.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir ilogtrace
mkdir -m 700 "$tmp/rt"

# The demo waits for a subscriber before its first event (MATE_MONITOR_WAIT).
MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_MONITOR_WAIT=30 MATE_INSTRUCTION_LOG=$tmp/il_%i.log MATE_DEMO_ROUNDS=3 \
    "$b/examples/mate-demo" 2>"$tmp/demo.err" &
pid=$!
wait_until [ -e "$tmp/rt/$pid.info" ]
check [ -e "$tmp/rt/$pid.info" ] || fail_stop "no endpoint for the demo"
# ends by itself when the demo disconnects
MATE_MONITOR_DIR=$tmp/rt "$b/src/trace/mate-trace" --pid "$pid" -s 60 -o "$tmp/trace.log" \
    2>"$tmp/trace.err" || fail_stop "mate-trace failed: $(cat "$tmp/trace.err")"
check wait $pid || fail_stop "the demo failed: $(cat "$tmp/demo.err")"
cat "$tmp/trace.err"

ev='^ *[0-9]+\.[0-9]{6}s \| #[0-9]+ \| '
grep -E "$ev" "$tmp/il_$pid.log" >"$tmp/il.events"
grep -E "$ev" "$tmp/trace.log" >"$tmp/trace.events"
n=$(wc -l <"$tmp/il.events")
check [ "$n" -gt 100 ] || fail_stop "only $n events in the instruction log"
head -1 "$tmp/il.events" | grep -q '| #0001 | CONNECT ' || fail_stop "the log starts with CONNECT"
tail -1 "$tmp/il.events" | grep -q '| DISCONNECT ' || fail_stop "the log ends with DISCONNECT"
head -1 "$tmp/il_$pid.log" | grep -Eq '^={100}$' || fail_stop "the log has GT's header"
head -1 "$tmp/trace.log" | grep -Eq '^={100}$' || fail_stop "the trace has GT's header"
if ! cmp -s "$tmp/il.events" "$tmp/trace.events"; then
	diff "$tmp/il.events" "$tmp/trace.events" | head -20
	fail_stop "instruction log and trace differ"
fi
echo "$n events, instruction log == trace"
checks_done
