#!/bin/sh
# events_stale.sh: a killed publisher leaves its endpoint behind; mate-trace ignores it, removes it, and captures the live one.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir stale
trap 'kill $live 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/rt"
export MATE_MONITOR_DIR=$tmp/rt
waitfor() {
	wait_until [ -e "$1" ]
	check [ -e "$1" ] || fail_stop "$1 never appeared"
}

killed_demo() {  # a demo killed once its endpoint is there: $dead
	MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_DEMO_SECONDS=30 \
	    "$b/examples/mate-demo" 2>/dev/null &
	dead=$!
	waitfor "$tmp/rt/$dead.info"
	kill -9 $dead
	wait $dead 2>/dev/null
}

killed_demo
check [ -e "$tmp/rt/$dead.info" ] && [ -e "$tmp/rt/$dead.ipc" ] || fail_stop "a killed process leaves its files"

# following only the dead one: said at once, exit 1
"$b/src/trace/mate-trace" --pid $dead -s 0.5 -o "$tmp/none.log" 2>"$tmp/none.err"
rc=$?
check [ $rc -eq 1 ] || fail_stop "mate-trace on a dead pid exits $rc, not 1"
check grep -q "pid $dead: no such process" "$tmp/none.err" || fail_stop "says the pid is gone: $(cat "$tmp/none.err")"
check [ -e "$tmp/rt/$dead.info" ] && fail_stop "the stale endpoint is removed"
check [ -e "$tmp/rt/$dead.ipc" ] && fail_stop "the stale socket is removed"

# a stale endpoint beside a live one: only the live one is captured
killed_demo
MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_DEMO_SECONDS=4 \
    "$b/examples/mate-demo" 2>/dev/null &
live=$!
waitfor "$tmp/rt/$live.info"
check "$b/src/trace/mate-trace" -s 1 -o "$tmp/t.log" 2>"$tmp/t.err" || fail_stop "mate-trace: $(cat "$tmp/t.err")"
cat "$tmp/t.err"
check grep -q "from 1 process " "$tmp/t.err" || fail_stop "one process captured"
check grep -q "pid $live mate-demo" "$tmp/t.err" || fail_stop "the live one captured"
check grep -q "pid $dead " "$tmp/t.err" && fail_stop "the dead one is not attached"
check [ -e "$tmp/rt/$dead.info" ] && fail_stop "the stale endpoint is removed"
check wait $live || fail_stop "the live demo failed"
checks_done
