#!/bin/sh
# events_cli.sh: mate-trace and mate-top options, exit statuses and man pages (mandoc -Tlint clean, every option of --help documented).
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
for tool in trace top; do
	bin=$b/src/$tool/mate-$tool
	page=$top_srcdir/man/mate-$tool.1
	check "$bin" --help >/tmp/mate-cli-$$ 2>&1 || fail "mate-$tool --help exits non-zero"
	check grep -q "^Usage: mate-$tool" /tmp/mate-cli-$$ || fail "mate-$tool --help: usage"
	"$bin" --version | grep -q "libmate" || fail "mate-$tool --version names libmate"
	"$bin" --no-such-option >/dev/null 2>&1
	check [ $? -eq 2 ] || fail "mate-$tool: an unknown option exits 2"
	"$bin" extra >/dev/null 2>&1
	check [ $? -eq 2 ] || fail "mate-$tool: an operand exits 2"
	"$bin" --pid x >/dev/null 2>&1
	check [ $? -eq 2 ] || fail "mate-$tool: --pid x exits 2"
	if command -v mandoc >/dev/null 2>&1; then
		out=$(mandoc -Tlint -W warning "$page" 2>&1) || fail "mandoc -Tlint $page: $out"
		text=$(mandoc -Tascii "$page" | col -b)
		for opt in $(grep -Eo -- '--[a-z-]+' /tmp/mate-cli-$$ | sort -u); do
			echo "$text" | grep -q -- "$opt" || fail "mate-$tool.1 does not document $opt"
		done
	fi
done
rm -f /tmp/mate-cli-$$
"$b/src/trace/mate-trace" -s -1 >/dev/null 2>&1
check [ $? -eq 2 ] || fail "mate-trace -s -1 exits 2"
"$b/src/trace/mate-trace" --dir a -o b >/dev/null 2>&1
check [ $? -eq 2 ] || fail "mate-trace --dir with -o exits 2"
"$b/src/top/mate-top" -d 0 >/dev/null 2>&1
check [ $? -eq 2 ] || fail "mate-top -d 0 exits 2"
# nothing to watch: an empty table per refresh, exit 0
checks_tmpdir cli
chmod 700 "$tmp"
out=$(MATE_MONITOR_DIR=$tmp "$b/src/top/mate-top" -n 2 -d 0.05) || fail "mate-top with nothing to watch"
[ "$(echo "$out" | grep -c '^mate-top: ')" -eq 2 ] || fail "mate-top -n 2 prints two tables: $out"
MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.2 -o "$tmp/t.log" 2>/dev/null
check [ $? -eq 1 ] || fail "mate-trace capturing nothing exits 1"
# no header-only log left behind (the README's next mate-visualize would fail on it)
check [ ! -e "$tmp/t.log" ] || fail "mate-trace capturing nothing left $tmp/t.log"
mkdir "$tmp/traces"
MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.2 --dir "$tmp/traces" 2>"$tmp/err"
check [ $? -eq 1 ] || fail "mate-trace --dir capturing nothing exits 1"
check [ -z "$(ls "$tmp/traces")" ] || fail "mate-trace --dir capturing nothing left $(ls "$tmp/traces")"
check grep -q '^mate-trace: no events captured$' "$tmp/err" || fail "it says so: $(cat "$tmp/err")"
# folders --dir made for a capture of nothing go with it; one that was there stays
MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.2 --dir "$tmp/traces/new/deeper" 2>/dev/null
check [ $? -eq 1 ] && [ ! -e "$tmp/traces/new" ] && [ -d "$tmp/traces" ] ||
	fail "mate-trace --dir new/deeper capturing nothing left $(ls -R "$tmp/traces")"
# a file named with -o that was there stays (its header rewritten)
echo old >"$tmp/keep.log"
MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.1 -o "$tmp/keep.log" 2>/dev/null
check [ -e "$tmp/keep.log" ] || fail "mate-trace removed a file it did not create"
# --pid of no process: said at once, exit 1, no file. A pid that just exited can be
# taken again on a busy machine once pids wrap (a CI run starts tens of thousands of
# processes): pid_max itself is never a process's pid.
gone=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
for tool in trace top; do
	# runs of 300 s unless it stops at once: "at once" (60 s) stays clear of a slow
	# (sanitizer) build beside a loaded CI, and of the whole run
	case $tool in trace) opts="-s 300" ;; top) opts="-b -n 300" ;; esac
	start=$(date +%s)
	(cd "$tmp/traces" && MATE_MONITOR_DIR=$tmp "$b/src/$tool/mate-$tool" $opts --pid $gone \
	    >/dev/null 2>"$tmp/err")
	rc=$?
	took=$(($(date +%s) - start))
	check [ $rc -eq 1 ] || fail "mate-$tool --pid $gone (no such process) exits $rc, want 1"
	check grep -q "^mate-$tool: monitor: pid $gone: no such process$" "$tmp/err" ||
		fail "mate-$tool --pid $gone says why: $(cat "$tmp/err")"
	check [ $took -le 60 ] || fail "mate-$tool --pid $gone took $took s to say so"
done
check [ -z "$(ls "$tmp/traces")" ] || fail "mate-trace --pid of no process left $(ls "$tmp/traces")"
# --pid of a process that publishes nothing: one warning, the capture ends with it. The
# process lives until the warning is out (it waits on a FIFO), so that a loaded machine
# slow to start mate-trace cannot make it a process that is already gone.
mkfifo "$tmp/hold"
sh -c 'read x < "$1"' sh "$tmp/hold" &
quiet=$!
MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 300 --pid $quiet -o "$tmp/q.log" 2>"$tmp/err" &
tracer=$!
wait_until grep -q "publishes no events" "$tmp/err"
start=$(date +%s)
echo > "$tmp/hold"
wait $tracer
rc=$?
took=$(($(date +%s) - start))
check [ $rc -eq 1 ] || fail "mate-trace --pid of a silent process exits $rc, want 1"
check [ "$(grep -c "^mate-trace: pid $quiet publishes no events (is it run with MATE_MONITOR=1?); waiting$" \
    "$tmp/err")" -eq 1 ] || fail "one warning about the silent process: $(cat "$tmp/err")"
# it ends with the process, not with its 300 s (60 s: room for a loaded sanitizer run)
check [ $took -le 60 ] || fail "mate-trace --pid of a silent process ran $took s after it exited"
# bad tuning values: one warning each naming the variable, and the program runs on
rt=$(mktemp -d "${TMPDIR:-/tmp}/mate-cli-rt.XXXXXX")
MATE_MONITOR_DIR=$rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_DEMO_SECONDS=0.2 \
    MATE_MONITOR_CPU=lots MATE_MONITOR_WAIT=-1 "$b/examples/mate-demo" >/dev/null 2>"$tmp.err"
check [ $? -eq 0 ] || fail "the demo with bad tuning values exits 0: $(cat "$tmp.err")"
check grep -q "bad MATE_MONITOR_CPU value 'lots' (want a share of one core, 0 for no limit); using 0.1" "$tmp.err" ||
	fail "MATE_MONITOR_CPU=lots is named: $(cat "$tmp.err")"
check grep -q "bad MATE_MONITOR_WAIT value '-1' (want seconds, 0..3600); not waiting" "$tmp.err" ||
	fail "MATE_MONITOR_WAIT=-1 is named: $(cat "$tmp.err")"
# the readers' MATE_MONITOR_LAG_MS: a bad value is named once, the default used
for lag in abc -5 60001 1e9x; do
	MATE_MONITOR_LAG_MS=$lag MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.1 -o "$tmp/t.log" \
	    >/dev/null 2>"$tmp.err"
	[ "$(grep -c "bad MATE_MONITOR_LAG_MS value '$lag' (want milliseconds, 0..60000); using 100" \
	    "$tmp.err")" -eq 1 ] || fail "mate-trace: MATE_MONITOR_LAG_MS=$lag is named once: $(cat "$tmp.err")"
done
MATE_MONITOR_LAG_MS=abc MATE_MONITOR_DIR=$tmp "$b/src/top/mate-top" -n 1 -d 0.05 >/dev/null 2>"$tmp.err" ||
	fail "mate-top with a bad MATE_MONITOR_LAG_MS runs"
grep -q "^mate-top: bad MATE_MONITOR_LAG_MS value 'abc'" "$tmp.err" ||
	fail "mate-top: MATE_MONITOR_LAG_MS=abc is named: $(cat "$tmp.err")"
MATE_MONITOR_LAG_MS=250 MATE_MONITOR_DIR=$tmp "$b/src/trace/mate-trace" -s 0.1 -o "$tmp/t.log" \
    >/dev/null 2>"$tmp.err"
grep -q "MATE_MONITOR_LAG_MS" "$tmp.err" && fail "MATE_MONITOR_LAG_MS=250 is good: $(cat "$tmp.err")"
# --dir never writes over a capture: with files already at this second's names (another
# capture started in the same second, or planted), the capture takes _2 and leaves them
mkdir "$tmp/caps"
MATE_MONITOR_DIR=$rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_DEMO_SECONDS=30 \
    MATE_MONITOR_WAIT=30 "$b/examples/mate-demo" >/dev/null 2>&1 &
demo=$!
now=$(date +%s)
k=0
while [ $k -le 60 ]; do   # the names of the next minute: a slow (sanitizer) start still meets one
	echo "another capture" > "$tmp/caps/trace_$(date -d "@$((now + k))" +%Y%m%d_%H%M%S).log"
	k=$((k + 1))
done
MATE_MONITOR_DIR=$rt "$b/src/trace/mate-trace" --pid $demo -n 20 -s 30 --dir "$tmp/caps" 2>"$tmp.err"
rc=$?
kill $demo 2>/dev/null; wait $demo 2>/dev/null
check [ $rc -eq 0 ] || fail "mate-trace --dir with names taken: exit $rc: $(cat "$tmp.err")"
check [ "$(cat "$tmp"/caps/trace_*[0-9][0-9].log | sort -u)" = "another capture" ] ||
	fail "a capture was written over another: $(head -c 200 "$tmp"/caps/trace_*[0-9][0-9].log)"
check [ "$(ls "$tmp"/caps/trace_*_2.log | wc -l)" -eq 1 ] && grep -q ' | #0001 | ' "$tmp"/caps/trace_*_2.log ||
	fail "the capture is not in a name of its own: $(ls "$tmp/caps")"
# a publisher that starts 4 s into a 12 s capture: its events cover 8 s at most, less
# than 4/5 of it, and the capture says so (a capture that covered 1.3 s of a -s 2 run
# said nothing). The 4 s count from the capture's start (its file appears then), not from
# mate-trace's launch: a loaded sanitizer run took 1.1 s to start it, and a demo started
# 2 s after the launch covered 4.86 s of 6 (CI rehearsal 19). The demo has 8 s to start
# (and its publisher may drop events past its CPU budget: 15,078 of 74,298 in the stress
# step).
rm -f "$rt"/*.info
MATE_MONITOR_DIR=$rt "$b/src/trace/mate-trace" -s 12 -o "$tmp/late.log" 2>"$tmp.err" &
tracer=$!
wait_until [ -e "$tmp/late.log" ]
sleep 4
MATE_MONITOR_DIR=$rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" >/dev/null 2>&1 &
late=$!
wait $tracer
rc=$?
pkill -P $late 2>/dev/null; kill $late 2>/dev/null; wait $late 2>/dev/null
for f in "$rt"/*.info; do [ -e "$f" ] && kill "$(basename "$f" .info)" 2>/dev/null; done
check [ $rc -eq 0 ] || fail "a late publisher's capture: exit $rc: $(cat "$tmp.err")"
check grep -Eq "^  pid [0-9]+ mate-demo: [0-9]+ events, [0-9]+ dropped, [0-9]+ lost, covering [0-9.]+ s\$" "$tmp.err" ||
	fail "the covered time per process: $(cat "$tmp.err")"
check grep -Eq "^mate-trace: pid [0-9]+'s events cover [0-9.]+ s of the 12.00 s capture: it started late" "$tmp.err" ||
	fail "a capture that covers a part of its time says so: $(cat "$tmp.err")"
rm -rf "$tmp" "$tmp.err" "$rt"
checks_done
