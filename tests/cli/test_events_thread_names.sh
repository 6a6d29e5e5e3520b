#!/bin/sh
# events_thread_names.sh: a thread the program named (pthread_setname_np) is named where its calls show: the RECV lines' thread= detail, mate-visualize's lanes (picture, text, Perfetto), mate-top's rows; threads left with the process's name add nothing.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir threadnames
demo=
trap 'kill $demo 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/rt"

# the demo naming its client threads client-0..3, recorded to a log and live at once
MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_THREAD_NAMES=1 MATE_INSTRUCTION_LOG=$tmp/named.log MATE_DEMO_SECONDS=3 \
    "$b/examples/mate-demo" >/dev/null 2>&1 &
demo=$!
wait_until [ -e "$tmp/rt/$demo.info" ]
MATE_MONITOR_DIR=$tmp/rt "$b/src/top/mate-top" -b -d 0.5 --pid $demo >"$tmp/top" 2>&1
wait $demo
# each client thread's RECV lines (depth 0) name it, one name per thread id
sed -n 's/^.* | RECV  *| CLIENT \([0-9]*\) .* depth=0 thread=\([^ ]*\)\( args=[^ ]*\)\{0,1\}$/\1 \2/p' "$tmp/named.log" |
	sort -u >"$tmp/pairs"
check [ "$(awk '{ print $2 }' "$tmp/pairs" | sort -u | tr '\n' ' ')" = "client-0 client-1 client-2 client-3 " ] ||
	fail "the four names: $(cat "$tmp/pairs")"
check [ "$(awk '{ print $1 }' "$tmp/pairs" | uniq -d)" = "" ] && [ "$(wc -l <"$tmp/pairs")" -eq 4 ] ||
	fail "one name per thread: $(cat "$tmp/pairs")"
check [ "$(grep -c ' | RECV .* depth=0\( args=[^ ]*\)\{0,1\}$' "$tmp/named.log")" -eq 0 ] || fail "a client call without its thread's name"
# the timeline's lanes: "client NAME (TID)"
"$b/mate-visualize" -v -o "$tmp/t.png" "$tmp/named.log" 2>"$tmp/vis" || fail "mate-visualize: $(cat "$tmp/vis")"
while read -r tid name; do
	check grep -q "spans: client $name ($tid)\$" "$tmp/vis" || fail "lane of $name ($tid): $(grep lane "$tmp/vis")"
	check grep -Eq "^\\S+ +mate-demo +thread_${name}_\\($tid\\) " "$tmp/top" ||
		fail "mate-top's row of $name ($tid): $(grep thread "$tmp/top" | head -4)"
done <"$tmp/pairs"
"$b/mate-visualize" -f text -o - "$tmp/named.log" 2>/dev/null | grep -q ' client  *client client-0 (' ||
	fail "the text summary's lane names"
"$b/mate-visualize" -f json -o "$tmp/t.json" "$tmp/named.log" 2>/dev/null
check grep -q '"thread_name".*"client client-0 (' "$tmp/t.json" || fail "Perfetto's thread names: $(grep -o '"thread_name"[^}]*}' "$tmp/t.json" | head -3)"

# threads with the process's name: no thread= at all, lanes by id
MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_INSTRUCTION_LOG=$tmp/plain.log MATE_DEMO_ROUNDS=1 \
    "$b/examples/mate-demo" >/dev/null 2>&1
check grep -q ' thread=' "$tmp/plain.log" && fail "thread= for threads the program did not name"
check [ "$(grep -c ' | RECV ' "$tmp/plain.log")" -gt 8 ] || fail "the plain run's calls"
checks_done
