#!/bin/sh
# events_top_tmux.sh: interactive mate-top in tmux: rows appear, s changes the sort key (and r the order), q quits cleanly; at 80x24 and 200x50: the first line whole, the process's cpu and rss, the client threads busy, rows by name, bars of 18 cells or more, idle shares, a help that hides the table, one letter per op without colour.
set -u
command -v tmux >/dev/null 2>&1 || { echo "SKIP: no tmux"; exit 77; }
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir toptmux
sock=$tmp/tmux.sock
demo2=
trap 'tmux -S "$sock" kill-server 2>/dev/null; kill $demo $demo2 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/rt"
fail() { echo "FAIL: $*"; echo "--- screen:"; cat "$tmp/screen" 2>/dev/null; checks_failed; checks_done; }
screen() { tmux -S "$sock" capture-pane -p -t top >"$tmp/screen"; }
# Every look waits (wait_until, $MATE_TEST_WAIT: 60 s) for the state it checks.
# has regex: the screen matches an extended regex (captured anew)
has() { screen; grep -Eq "$1" "$tmp/screen"; }
waitscreen() { wait_until has "$1" || fail "the screen never showed /$1/"; }
rows() { grep -Eo '^  worker_[0-9]+' "$tmp/screen" | tr -d ' ' | tr '\n' ' '; }
# whole target n: one capture of target holds a complete frame: the first line with its sort
# key, the column heads, and exactly n worker rows each drawn up to its busy share (two equal
# captures are not enough: a frame of one row of eleven is as steady as a whole one)
whole() {
	tmux -S "$sock" capture-pane -p -t "$1" >"$tmp/screen"
	grep -Eq '^mate-top .* sort: ' "$tmp/screen" && grep -q '^  WORKER ' "$tmp/screen" &&
		[ "$(grep -Ec '^  worker_[0-9]+ +\[[^]]*\] +[0-9]+%' "$tmp/screen")" -eq "$2" ] &&
		[ "$(grep -Ec '^  worker_[0-9]+' "$tmp/screen")" -eq "$2" ]
}
# frame target n: waits for a complete frame of n rows; the checks read that capture
frame() { wait_until whole "$1" "$2" || echo "$1 never showed a whole frame of $2 rows"; }

# The demos run until the test is done with them (killed then, or by the trap): a run of
# fixed seconds ended before a loaded machine (CI's stress step, a second CI beside it) had
# shown its frames, and mate-top had no rows left to show.
MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" 2>/dev/null &
demo=$!
tmux -S "$sock" -f /dev/null new-session -d -s top -x 150 -y 30 \
    "MATE_MONITOR_DIR='$tmp/rt' TERM=screen '$b/src/top/mate-top' --pid $demo -d 0.2; echo \$? >'$tmp/exit'; sleep 30" \
    || { echo "SKIP: tmux cannot start a session"; exit 77; }
waitscreen '^  worker_2 '
waitscreen '^  worker_0 .*\['
waitscreen '^  worker_1 '
check grep -q "$demo mate-demo" "$tmp/screen" || fail "the process heads its rows"
check grep -q "sort: worker" "$tmp/screen" || fail "sorted by worker first"
first=$(rows)
[ "$(echo $first | wc -w)" -eq 3 ] || fail "three worker rows: $first"

tmux -S "$sock" send-keys -t top s
waitscreen 'sort: busy'
for k in s s s; do tmux -S "$sock" send-keys -t top $k; sleep 0.1; done
waitscreen 'sort: worker$'
tmux -S "$sock" send-keys -t top r
waitscreen 'sort: worker \(reversed\)'
frame top 3
reversed=$(rows)
expect=$(echo $first | tr ' ' '\n' | sed '/^$/d' | tac | tr '\n' ' ')
check [ "$reversed" = "$expect" ] || fail "r reverses the order: '$first' then '$reversed'"
# a smaller terminal: redrawn to fit, rows still there
tmux -S "$sock" resize-window -t top -x 90 -y 12 2>/dev/null
# the redraw at the new size, then a look at it
fits() {
	screen
	[ "$(grep -Ec '^  worker_[0-9]+ ' "$tmp/screen")" -eq 3 ] &&
		! grep -Evq '^(mate-top |  WORKER |[0-9]+ mate-demo |  worker_[0-9]+ |  thread [0-9]+ |$)' "$tmp/screen"
}
wait_until fits
check [ "$(grep -Ec '^  worker_[0-9]+ ' "$tmp/screen")" -eq 3 ] || fail "three rows after a resize"
# no line wrapped onto the next: every line is a known kind
grep -Ev '^(mate-top |  WORKER |[0-9]+ mate-demo |  worker_[0-9]+ |  thread [0-9]+ |$)' "$tmp/screen" &&
	fail "lines wrapped after a resize"
tmux -S "$sock" send-keys -t top h
waitscreen 'mate-top keys'
tmux -S "$sock" send-keys -t top x
# any key closes the help
wait_until eval '! has "mate-top keys"'
check grep -q 'mate-top keys' "$tmp/screen" && fail "x did not close the help in ${MATE_TEST_WAIT:-60} s"

tmux -S "$sock" send-keys -t top q
wait_until [ -s "$tmp/exit" ]
check [ -s "$tmp/exit" ] || fail "q did not quit in ${MATE_TEST_WAIT:-60} s"
check [ "$(cat "$tmp/exit")" = 0 ] || fail "mate-top exited $(cat "$tmp/exit")"
# NO_COLOR: the bars are drawn with the ops' first letters and dots
tmux -S "$sock" new-window -t top -n plain \
    "NO_COLOR=1 MATE_MONITOR_DIR='$tmp/rt' TERM=screen '$b/src/top/mate-top' --pid $demo -d 0.2; sleep 30"
plain() {
	tmux -S "$sock" capture-pane -p -t top:plain >"$tmp/screen"
	grep -Eq '^  worker_[0-9]+ +\[[a-z]+\.*\]' "$tmp/screen"
}
wait_until plain
check grep -Eq '^  worker_[0-9]+ +\[[a-z]+\.*\]' "$tmp/screen" || fail "NO_COLOR bars of letters and dots"
echo "rows $first; reversed $reversed"
kill $demo 2>/dev/null

# ---- 80x24 and 200x50, a demo of 11 workers ------------------------------------------
mkdir -m 700 "$tmp/rt2"
MATE_MONITOR_DIR=$tmp/rt2 MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_WORKERS=11 MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" 2>/dev/null &
demo2=$!
# size win env: a window of that size running mate-top on the second demo
topwin() {
	tmux -S "$sock" new-window -t top -n "$2" \
	    "$3 MATE_MONITOR_DIR='$tmp/rt2' TERM=screen-256color '$b/src/top/mate-top' --pid $demo2 -d 0.2; sleep 30"
	tmux -S "$sock" resize-window -t "top:$2" -x "${1%x*}" -y "${1#*x}" 2>/dev/null
}
# from here a failed check is counted and the others still run
miss() { echo "FAIL: $*"; checks_failed; }
# win regex: waits for the window's screen to match
winhas() { tmux -S "$sock" capture-pane -p -t "top:$1" >"$tmp/screen"; grep -Eq "$2" "$tmp/screen"; }
waitwin() { wait_until winhas "$1" "$2" || echo "window $1 never showed /$2/"; }
# win line regex: waits for one line of the window's screen to match
linehas() { tmux -S "$sock" capture-pane -p -t "top:$1" >"$tmp/screen"; sed -n "$2p" "$tmp/screen" | grep -Eq "$3"; }
waitline() { wait_until linehas "$1" "$2" "$3" || echo "window $1 line $2 never showed /$3/"; }
for size in 80x24 200x50; do
	w=w$size
	topwin $size $w ""
	frame "top:$w" 11
	head -1 "$tmp/screen" >"$tmp/line1"
	check grep -Eq '^mate-top .* sort: worker$' "$tmp/line1" ||
		miss "$size: the first line is whole, sort key included: $(cat "$tmp/line1")"
	got=$(rows)
	want=$(echo $got | tr ' ' '\n' | sed '/^$/d' | sort -V | tr '\n' ' ')
	check [ "$(echo $got | wc -w)" -eq 11 ] || miss "$size: eleven worker rows: $got"
	check [ "$got" = "$want" ] || miss "$size: sorted by name: '$got', want '$want'"
	bar=$(grep -Eo '^  worker_[0-9]+ +\[[^]]*\]' "$tmp/screen" | head -1 | sed 's/.*\[//; s/\]$//')
	check [ ${#bar} -ge 18 ] || miss "$size: a bar of 18 cells or more: '[$bar]' (${#bar})"
	check [ "$(grep -Ec '^  worker_[0-9]+ .* idle [0-9.]+%$' "$tmp/screen")" -ge 1 ] ||
		miss "$size: the rows end with their idle shares"
	# the demo's four client threads wait in their calls most of the time: busy rows. A
	# frame of them all, waited for: on a loaded machine the publisher drops events past its
	# CPU budget and mate-top forgets the calls whose ends may be among them (CI saw a
	# frame of 100% 100% 100% 1%)
	busy4() {
		tmux -S "$sock" capture-pane -p -t "top:$w" >"$tmp/screen"
		[ "$(grep -Eo '^  thread [0-9]+ +\[[^]]*\] +[0-9]+%' "$tmp/screen" |
		    awk '$NF + 0 >= 50' | wc -l)" -eq 4 ]
	}
	# (the capture that passed is the one checked: a second look can land mid-redraw)
	wait_until busy4
	busy=$?
	check [ $busy -eq 0 ] || miss "$size: four busy client thread rows: $(grep '^  thread' "$tmp/screen")"
	# cpu from the second look at /proc on: waited for
	waitwin $w "^$demo2 mate-demo  cpu [0-9]+%  rss [0-9.]+[KMG]?B  events "
	check grep -Eq "^$demo2 mate-demo  cpu [0-9]+%  rss [0-9.]+[KMG]?B  events " "$tmp/screen" ||
		miss "$size: the process line shows cpu and rss: $(grep "^$demo2 " "$tmp/screen")"
	# reversed, with drops or not: the first line still ends with the sort key
	tmux -S "$sock" send-keys -t "top:$w" r
	waitwin $w 'sort: worker (rev|\(reversed\))'
	head -1 "$tmp/screen" >"$tmp/line1"
	check grep -Eq '^mate-top .* sort: worker (rev|\(reversed\))$' "$tmp/line1" ||
		miss "$size: the first line is whole when reversed: $(cat "$tmp/line1")"
	tmux -S "$sock" send-keys -t "top:$w" h
	# the help's last line, then its line 12 cleared: a capture can land while tmux is
	# still taking in the one redraw, top to bottom
	waitwin $w 'PgUp/PgDn scroll a page'
	waitline $w 12 '^$'
	check grep -q '^  mate-top keys$' "$tmp/screen" || miss "$size: the help hides the table: $(grep 'mate-top keys' "$tmp/screen")"
	check [ "$(sed -n 12p "$tmp/screen")" = "" ] || miss "$size: a blank line under the help"
	tmux -S "$sock" send-keys -t "top:$w" q
done
# without colour: each op has a letter of its own, named in the shares
topwin 200x50 plain2 NO_COLOR=1
waitwin plain2 '^  worker_10 +\[[a-zA-Z0-9]*\.*\]'
# looks until 40 looks have named 4 ops or more (the shares name the ops of the moment)
n=0
sample() {
	tmux -S "$sock" capture-pane -p -t top:plain2 >"$tmp/screen"
	grep -Eo '[a-zA-Z0-9]=[a-z_]+ ' "$tmp/screen" >>"$tmp/letters"
	n=$((n + 1))
	[ $n -ge 40 ] && [ "$(sort -u "$tmp/letters" | wc -l)" -ge 4 ]
}
wait_until sample
pairs=$(sort -u "$tmp/letters" | tr '\n' ' ')
check [ "$(sort -u "$tmp/letters" | wc -l)" -ge 4 ] || miss "NO_COLOR: the shares name ops' letters: '$pairs'"
check [ "$(sort -u "$tmp/letters" | cut -c1 | uniq -d)" = "" ] || miss "NO_COLOR: two ops share a letter: $pairs"
check [ "$(sort -u "$tmp/letters" | sed 's/^..//' | sort | uniq -d)" = "" ] || miss "NO_COLOR: an op has two letters: $pairs"
echo "letters: $pairs"
checks_done
