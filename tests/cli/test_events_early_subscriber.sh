#!/bin/sh
# test_events_early_subscriber.sh: a subscriber that connects while a process's events
# thread starts, before the thread that started it goes on, gets every event from the
# first (CONNECT and each call). The starting thread's own "nobody listens yet" used to
# come after the events thread's "a subscriber came" and lose every event until the next
# look (CI's stress step: a rank of test_top_ranks never shown). slow-thread-shim.so holds
# the starting thread after pthread_create() until the test has its subscriber connected.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
shim=$b/tests/.libs/slow-thread-shim.so
[ -e "$shim" ] || { echo "SKIP: no $shim (a --disable-shared build)"; exit 77; }
checks_tmpdir early
mkdir -m 700 "$tmp/rt"
export MATE_MONITOR_DIR="$tmp/rt" MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null
cd "$tmp" || fail_stop "cd $tmp"

LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$shim" MATE_TEST_THREAD_HOLD="$tmp/go" RANK=0 WORLD_SIZE=1 MATE_MONITOR=1 \
    MATE_MONITOR_WAIT=120 "$b/tests/rank-prog" 5 2> prog.err &
pid=$!
trap 'kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
# announced (its socket bound, .info written) before its events thread starts
check wait_until [ -e "rt/$pid.info" ] || fail_stop "the process announced itself: $(cat prog.err)"
"$b/src/trace/mate-trace" --pid $pid -o trace.log 2> trace.err &
trace=$!
# the subscriber connects while the starting thread is held: a second is room for it to
# scan the folder (every 0.1 s) and for the events thread to take the subscription; were
# it late, the old code would pass, never the new one fail
sleep 1
touch go
wait $pid || fail "rank-prog failed: $(cat prog.err)"
wait $trace || fail "mate-trace failed: $(cat trace.err)"
check grep -qs "| CONNECT  *| CLIENT $pid .* rank=0 world=1" trace.log ||
	fail "the first event, CONNECT: $(cat trace.err)"
calls=$(grep -c '| RECV  *| CLIENT .*| mm  ' trace.log 2> /dev/null)
check [ "${calls:-0}" -eq 5 ] || fail "each of the 5 steps' mm calls: ${calls:-0}; $(cat trace.err)"
check grep -qs "| DISCONNECT " trace.log || fail "the last event, DISCONNECT"
checks_done
