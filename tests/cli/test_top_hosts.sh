#!/bin/sh
# top_hosts.sh: many hosts in one live view: four publishers on four loopback addresses (127.0.0.2-5; two of them pid 1 in pid namespaces of their own, one with its clock 30 s behind by libfaketime), a silent endpoint and one that speaks something else (pyzmq), named in an --endpoints file. mate-top shows the four processes apart with their hosts and all busy, says the other clock, the silent endpoint and the foreign one; mate-trace's capture says host= on each line, has every host's events on one time base, and sums up per host; mate-trace marks the moved clock on that host's first line (clock=), and mate-visualize draws each host's lanes apart and says whose clock was moved; a host whose clock was stepped between two of its processes keeps both on one time base, and both tools say so; a bad --endpoints file is a usage error.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir tophosts
# SIGKILL: unshare --fork ignores SIGTERM, and so does a pid 1 (its --kill-child
# takes the demo with it)
trap 'kill -9 $(cat "$tmp/pids" 2>/dev/null) 2>/dev/null; rm -rf "$tmp"' EXIT
: >"$tmp/pids"

# libfaketime itself (the faketime wrapper would stand between us and the demo's pid)
faketime=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
	[ -e "$f" ] && faketime=$f && break
done
[ -n "$faketime" ] || fail_stop "no libfaketime.so.1 (Debian's faketime, in .ci/packages)"
# a pid namespace of its own where this machine lets us make one (root): two hosts
# whose processes have one pid
ns=
if unshare --pid --fork --kill-child true 2>/dev/null; then
	ns="unshare --pid --fork --kill-child"
else
	echo "note: no pid namespaces here: the processes' pids differ"
fi

# demo H [WRAPPER...]: mate-demo publishing on tcp://127.0.0.H (a free port; H 8a and 8b:
# two on 127.0.0.8), its own runtime folder; its url in $tmp/url.H (300 s at most, should
# the trap not run)
demo() {
	h=$1
	shift
	mkdir -m 700 "$tmp/rt.$h"
	env MATE_MONITOR_DIR="$tmp/rt.$h" MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null \
	    MATE_MONITOR="tcp://127.0.0.${h%[ab]}:0" MATE_DEMO_SECONDS=300 \
	    "$@" "$b/examples/mate-demo" >/dev/null 2>"$tmp/demo.$h.err" &
	echo $! >>"$tmp/pids"
}
demo 2
demo 3 $ns
demo 4 $ns
demo 5 LD_PRELOAD="$faketime" FAKETIME=-30s
published() { grep -q "publishing on" "$tmp/demo.$1.err"; }
for h in 2 3 4 5; do
	wait_until published $h || fail_stop "demo $h publishes: $(cat "$tmp/demo.$h.err")"
	sed -n 's/^mate: monitor: publishing on //p' "$tmp/demo.$h.err" >"$tmp/url.$h"
done
port=$(sed 's/.*://' "$tmp/url.2")
silent="tcp://127.0.0.6:$port"    # nobody listens there
# an endpoint that speaks something else: a ZeroMQ publisher of other frames (pyzmq, from
# the peers' environment)
foreign=
if [ -n "${PYTHON_PEERS:-}" ] && "$PYTHON_PEERS" -c "import zmq" 2>/dev/null; then
	"$PYTHON_PEERS" -c '
import sys, time, zmq
s = zmq.Context().socket(zmq.PUB)
s.bind("tcp://127.0.0.7:*")
print(s.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
for i in range(3000):   # 300 s at most
    s.send(b"{\"hello\": \"not mate\"}")
    s.send(b"\x00\xff binary")
    time.sleep(0.1)
' >"$tmp/url.7" 2>"$tmp/foreign.err" &
	echo $! >>"$tmp/pids"
	has_url7() { [ -s "$tmp/url.7" ]; }
	wait_until has_url7 || fail_stop "the foreign publisher: $(cat "$tmp/foreign.err")"
	foreign=$(cat "$tmp/url.7")
else
	echo "note: no pyzmq (PYTHON_PEERS): no endpoint that speaks something else"
fi
{ echo "# four hosts, one that says nothing, one that speaks something else"
  cat "$tmp/url.2" "$tmp/url.3"; echo
  echo "  $(cat "$tmp/url.4")  "; cat "$tmp/url.5"; echo "$silent"; echo "$foreign"; } >"$tmp/endpoints"
top() { MATE_MONITOR_DIR=$tmp/none "$b/src/top/mate-top" "$@"; }

# One table (the third of -d 1, the others' figures whole) in which all is seen.
table() {
	top -b -n 3 -d 1 --endpoints "$tmp/endpoints" 2>"$tmp/top.err" |
	    awk '/^mate-top: / { t = "" } { t = t $0 "\n" } END { printf "%s", t }' >"$tmp/table"
}
seen() {
	table
	grep -q " 4 processes," "$tmp/table" &&
	    [ "$(grep -c ' process host 127\.0\.0\.[2-5]$' "$tmp/table")" -eq 4 ] &&
	    grep -q "^clock: host 127.0.0.5 " "$tmp/table" && grep -q "^silent: $silent " "$tmp/table"
}
wait_until seen
cat "$tmp/table"
check grep -q " 4 processes," "$tmp/table" || fail "four processes (two of one pid) in one view"
for h in 2 3 4 5; do
	check grep -Eq "^[0-9]+ +mate-demo +process host 127\.0\.0\.$h$" "$tmp/table" ||
		fail "the process of 127.0.0.$h is shown with its host"
done
# every process's workers are busy: the one whose clock is behind too (its events,
# taken as 30 s late, were idle time before)
busy=$(awk '$3 == "worker_0" && $4 + 0 > 0' "$tmp/table" | wc -l)
check [ "$busy" -eq 4 ] || fail "four busy worker_0 rows, one a process: $busy"
off=$(sed -n 's/^clock: host 127\.0\.0\.5 is \([0-9.]*\) s behind this machine; its times are moved by that$/\1/p' "$tmp/table")
check awk -v o="${off:-0}" 'BEGIN { exit !(o >= 28 && o <= 32) }' ||
	fail "127.0.0.5's clock is said to be 30 s behind: '$off'"
check [ "$(grep -c '^clock:' "$tmp/table")" -eq 1 ] || fail "no other host's clock is said to differ"
check grep -q "^silent: $silent (nothing since it was named, [0-9]* s)$" "$tmp/table" ||
	fail "the silent endpoint is named"
if [ -n "$foreign" ]; then
	check grep -q "^not mate's: $foreign sent [0-9]* frames mate-top cannot read$" "$tmp/table" ||
		fail "the endpoint that speaks something else is named"
	check_not_silent() { ! grep -q "^silent: $foreign " "$tmp/table"; }
	check check_not_silent || fail "the endpoint that speaks something else is not silent"
fi

# mate-trace: host= on the lines, one time base, the summary per host
MATE_MONITOR_DIR=$tmp/none "$b/src/trace/mate-trace" -s 3 --endpoints "$tmp/endpoints" \
    -o "$tmp/cap.log" 2>"$tmp/trace.err" || fail_stop "mate-trace: $(cat "$tmp/trace.err")"
cat "$tmp/trace.err"
check grep -q "from 4 processes ->" "$tmp/trace.err" || fail "mate-trace counts four processes"
for h in 2 3 4 5; do
	check grep -Eq "^  pid [0-9]+ on 127\.0\.0\.$h mate-demo: [1-9][0-9]* events" "$tmp/trace.err" ||
		fail "the summary names the process on 127.0.0.$h"
	grep -m1 " host=127\.0\.0\.$h\( \|$\)" "$tmp/cap.log" | sed 's/s |.*//' >>"$tmp/firsts"
done
# every host's first event within 1.5 s of the others': one time base (127.0.0.5's were
# 30 s before the others')
echo "first events:" $(cat "$tmp/firsts")
check awk 'NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
    END { exit !(NR == 4 && hi - lo < 1.5) }' "$tmp/firsts" ||
	fail "the four hosts' first events are on one time base: $(cat "$tmp/firsts")"
check grep -q "^mate-trace: $silent: silent: nothing came from it$" "$tmp/trace.err" ||
	fail "mate-trace names the silent endpoint"
if [ -n "$foreign" ]; then
	check grep -q "^mate-trace: $foreign: [0-9]* frames that are not mate's events (skipped)$" "$tmp/trace.err" ||
		fail "mate-trace names the endpoint that speaks something else"
fi
check grep -q "^  host 127.0.0.5: its clock is [0-9.]* s behind" "$tmp/trace.err" ||
	fail "mate-trace says the other clock"
# and the log says it, for its readers: clock= on 127.0.0.5's first line, on no other
check [ "$(grep -c ' clock=' "$tmp/cap.log")" -eq 1 ] ||
	fail "one line says a clock was moved: $(grep -c ' clock=' "$tmp/cap.log")"
moved=$(grep -m1 ' clock=' "$tmp/cap.log" | sed -n 's/.* host=127\.0\.0\.5 .*clock=+\([0-9.]*\).*/\1/p')
check awk -v c="${moved:-0}" 'BEGIN { exit !(c >= 28 && c <= 32) }' ||
	fail "127.0.0.5's first line says its times were moved by about +30 s: $(grep -m1 ' clock=' "$tmp/cap.log")"

# mate-visualize: each host's lanes its own (two hosts' worker_0, and their threads of one
# id in the pid namespaces, were one lane)
"$b/mate-visualize" "$tmp/cap.log" -f text -o "$tmp/lanes.txt" 2>"$tmp/vis.err" ||
	fail "mate-visualize: $(cat "$tmp/vis.err")"
for h in 2 3 4 5; do
	check grep -Eq " worker +worker_0 @127\.0\.0\.$h$" "$tmp/lanes.txt" ||
		fail "a worker_0 lane of 127.0.0.$h: $(grep worker_0 "$tmp/lanes.txt")"
done
# and says which hosts, that each keeps its order, and whose clock was moved (the
# picture's subtitle is the same line)
check grep -Eq "^4 hosts: 127\.0\.0\.[2-5](, 127\.0\.0\.[2-5]){3}  ·  each host's events in their own order; 127\.0\.0\.5's clock was [0-9.]+ s behind, its times moved by \+[0-9.]+ s$" "$tmp/lanes.txt" ||
	fail "the hosts and the clock moved: $(grep hosts "$tmp/lanes.txt")"

# A host whose clock was stepped between two of its processes (NTP, by hand): the one
# that started on the other clock keeps its own offset, and both are said. Which of the two
# the host's clock is taken from is whichever's frame comes first.
demo 8a
demo 8b LD_PRELOAD="$faketime" FAKETIME=+30s
for h in 8a 8b; do
	wait_until published $h || fail_stop "demo $h publishes: $(cat "$tmp/demo.$h.err")"
	sed -n 's/^mate: monitor: publishing on //p' "$tmp/demo.$h.err" >>"$tmp/endpoints8"
done
MATE_MONITOR_DIR=$tmp/none "$b/src/trace/mate-trace" -s 2 --endpoints "$tmp/endpoints8" \
    -o "$tmp/cap8.log" 2>"$tmp/trace8.err" || fail_stop "mate-trace: $(cat "$tmp/trace8.err")"
cat "$tmp/trace8.err"
for pid in $(sed -n 's/^  pid \([0-9]*\) on 127\.0\.0\.8 .*/\1/p' "$tmp/trace8.err"); do
	grep -m1 " pid=$pid " "$tmp/cap8.log" | sed 's/s |.*//'
done >"$tmp/firsts8"
echo "first events:" $(cat "$tmp/firsts8")
check awk 'NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
    END { exit !(NR == 2 && hi - lo < 1.5) }' "$tmp/firsts8" ||
	fail "the two processes of 127.0.0.8 on one time base: $(cat "$tmp/firsts8")"
moved=$(sed -n 's/^  host 127\.0\.0\.8: its clock moved by [+-]\([0-9.]*\) s since its first process; 1 process started after keeps its own$/\1/p' "$tmp/trace8.err")
check awk -v m="${moved:-0}" 'BEGIN { exit !(m >= 28 && m <= 32) }' ||
	fail "mate-trace says 127.0.0.8's clock moved by 30 s: $(grep 127.0.0.8 "$tmp/trace8.err")"
table8() {
	top -b -n 2 -d 0.5 --endpoints "$tmp/endpoints8" 2>/dev/null |
	    awk '/^mate-top: / { t = "" } { t = t $0 "\n" } END { printf "%s", t }' >"$tmp/table8"
	grep -Eq "^clock: host 127\.0\.0\.8's clock moved by [+-](29|30|31)\.[0-9] s since its first process; 1 process started after keeps its own$" "$tmp/table8"
}
wait_until table8
check table8 || fail "mate-top says 127.0.0.8's clock moved: $(grep clock "$tmp/table8")"

# a bad --endpoints file: a usage error naming the line
printf 'tcp://127.0.0.2:1\nnode7:5555\n' >"$tmp/bad"
check top -b -n 1 --endpoints "$tmp/bad" >/dev/null 2>"$tmp/bad.err"; rc=$?
check [ $rc -eq 2 ] && grep -q "bad:2: 'node7:5555' is not a tcp:// or ipc:// endpoint" "$tmp/bad.err" ||
	fail "a bad line is a usage error ($rc): $(cat "$tmp/bad.err")"
: >"$tmp/empty"
top -b -n 1 --endpoints "$tmp/empty" >/dev/null 2>"$tmp/empty.err"; rc=$?
check [ $rc -eq 2 ] && grep -q "no endpoint in it" "$tmp/empty.err" ||
	fail "an empty file is a usage error ($rc): $(cat "$tmp/empty.err")"
checks_done
