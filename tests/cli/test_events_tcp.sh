#!/bin/sh
# events_tcp.sh: MATE_MONITOR=tcp:0 binds loopback on a free port (said on stderr and in the .info file); mate-trace --endpoint captures from it; Ctrl-C keeps the file.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir tcp
trap 'kill $demo 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/rt"
export MATE_MONITOR_DIR=$tmp/rt

MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=tcp:0 MATE_DEMO_SECONDS=8 \
    "$b/examples/mate-demo" 2>"$tmp/demo.err" &
demo=$!
wait_until grep -q "publishing on" "$tmp/demo.err"
url=$(sed -n 's/^mate: monitor: publishing on //p' "$tmp/demo.err")
case $url in
tcp://127.0.0.1:[0-9]*) ;;
*) fail_stop "a loopback tcp endpoint: '$url' ($(cat "$tmp/demo.err"))" ;;
esac
check grep -q "^endpoint=$url\$" "$tmp/rt/$demo.info" || fail_stop "the .info file names $url"
# an empty runtime directory for the tool: only the endpoint reaches the demo
MATE_MONITOR_DIR=$tmp/none "$b/src/trace/mate-trace" --endpoint "$url" -s 1 -o "$tmp/t.log" \
    2>"$tmp/t.err" || fail_stop "mate-trace --endpoint: $(cat "$tmp/t.err")"
cat "$tmp/t.err"
# (drops are counted, not lost, should this machine starve the reader)
check grep -q "pid $demo mate-demo: [0-9]* events, [0-9]* dropped, 0 lost" "$tmp/t.err" || fail_stop "captured over tcp"
# Ctrl-C ends a capture without a time limit and keeps the file
MATE_MONITOR_DIR=$tmp/none "$b/src/trace/mate-trace" --endpoint "$url" -s 0 -o "$tmp/int.log" \
    2>"$tmp/int.err" &
tr=$!
# interrupted once it has written 200 events (a fixed sleep was too short when loaded)
over200() { [ "$(cat "$tmp/int.log" 2>/dev/null | grep -Ec '^ *[0-9]+\.[0-9]{6}s \| #')" -gt 200 ]; }
wait_until over200
kill -INT $tr
check wait $tr || fail_stop "mate-trace interrupted exits non-zero: $(cat "$tmp/int.err")"
n=$(grep -Ec '^ *[0-9]+\.[0-9]{6}s \| #' "$tmp/int.log")
check [ "$n" -gt 200 ] || fail_stop "the interrupted capture kept only $n events"
check grep -q "events in" "$tmp/int.err" || fail_stop "the interrupted capture still sums up"
check wait $demo || fail_stop "the demo failed"
echo "endpoint $url"
checks_done
