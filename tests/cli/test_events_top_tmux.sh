#!/bin/sh
# events_top_tmux.sh: interactive mate-top in tmux: rows appear, s changes the sort key (and r the order), q quits cleanly; at 80x24 and 200x50: the first line whole, rows by name, bars of 18 cells or more, idle shares, a help that hides the table, one letter per op without colour.
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
# waits (up to 10 s) for the screen to match an extended regex
waitscreen() {
	n=0
	while [ $n -lt 100 ]; do
		screen
		grep -Eq "$1" "$tmp/screen" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	fail "the screen never showed /$1/"
}
rows() { grep -Eo '^  worker_[0-9]+' "$tmp/screen" | tr -d ' ' | tr '\n' ' '; }
# target: captures until two looks 0.2 s apart show the same rows (up to 10 s), so that
# the checks read a whole redraw, not one tmux is still taking in
settle() {
	n=0
	tmux -S "$sock" capture-pane -p -t "$1" >"$tmp/screen"
	while [ $n -lt 50 ]; do
		before=$(rows)
		sleep 0.2
		tmux -S "$sock" capture-pane -p -t "$1" >"$tmp/screen"
		[ -n "$before" ] && [ "$(rows)" = "$before" ] && return 0
		n=$((n + 1))
	done
}

MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_SECONDS=20 "$b/examples/mate-demo" 2>/dev/null &
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
settle top
reversed=$(rows)
expect=$(echo $first | tr ' ' '\n' | sed '/^$/d' | tac | tr '\n' ' ')
check [ "$reversed" = "$expect" ] || fail "r reverses the order: '$first' then '$reversed'"
# a smaller terminal: redrawn to fit, rows still there
tmux -S "$sock" resize-window -t top -x 90 -y 12 2>/dev/null
# the redraw at the new size (up to 10 s: a loaded machine), then a look at it
n=0
while [ $n -lt 100 ]; do
	screen
	[ "$(grep -Ec '^  worker_[0-9]+ ' "$tmp/screen")" -eq 3 ] &&
		! grep -Evq '^(mate-top |  WORKER |[0-9]+ mate-demo |  worker_[0-9]+ |  thread [0-9]+ |$)' "$tmp/screen" &&
		break
	sleep 0.1
	n=$((n + 1))
done
check [ "$(grep -Ec '^  worker_[0-9]+ ' "$tmp/screen")" -eq 3 ] || fail "three rows after a resize"
# no line wrapped onto the next: every line is a known kind
grep -Ev '^(mate-top |  WORKER |[0-9]+ mate-demo |  worker_[0-9]+ |  thread [0-9]+ |$)' "$tmp/screen" &&
	fail "lines wrapped after a resize"
tmux -S "$sock" send-keys -t top h
waitscreen 'mate-top keys'
tmux -S "$sock" send-keys -t top x
# any key closes the help (up to 10 s: a sanitizer build on a busy machine)
n=0
while [ $n -lt 100 ]; do
	screen
	grep -q 'mate-top keys' "$tmp/screen" || break
	sleep 0.1
	n=$((n + 1))
done
check grep -q 'mate-top keys' "$tmp/screen" && fail "x did not close the help in 10 s"

tmux -S "$sock" send-keys -t top q
n=0
while [ ! -s "$tmp/exit" ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
check [ -s "$tmp/exit" ] || fail "q did not quit in 20 s"
echo "q quit within $n tenths of a second"
check [ "$(cat "$tmp/exit")" = 0 ] || fail "mate-top exited $(cat "$tmp/exit")"
# NO_COLOR: the bars are drawn with the ops' first letters and dots
tmux -S "$sock" new-window -t top -n plain \
    "NO_COLOR=1 MATE_MONITOR_DIR='$tmp/rt' TERM=screen '$b/src/top/mate-top' --pid $demo -d 0.2; sleep 30"
n=0
while [ $n -lt 100 ]; do
	tmux -S "$sock" capture-pane -p -t top:plain >"$tmp/screen"
	grep -Eq '^  worker_[0-9]+ +\[[a-z]+\.*\]' "$tmp/screen" && break
	sleep 0.1
	n=$((n + 1))
done
check grep -Eq '^  worker_[0-9]+ +\[[a-z]+\.*\]' "$tmp/screen" || fail "NO_COLOR bars of letters and dots"
echo "rows $first; reversed $reversed"

# ---- 80x24 and 200x50, a demo of 11 workers ------------------------------------------
mkdir -m 700 "$tmp/rt2"
MATE_MONITOR_DIR=$tmp/rt2 MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_WORKERS=11 MATE_DEMO_SECONDS=40 "$b/examples/mate-demo" 2>/dev/null &
demo2=$!
# size win env: a window of that size running mate-top on the second demo
topwin() {
	tmux -S "$sock" new-window -t top -n "$2" \
	    "$3 MATE_MONITOR_DIR='$tmp/rt2' TERM=screen-256color '$b/src/top/mate-top' --pid $demo2 -d 0.2; sleep 30"
	tmux -S "$sock" resize-window -t "top:$2" -x "${1%x*}" -y "${1#*x}" 2>/dev/null
}
# from here a failed check is counted and the others still run
miss() { echo "FAIL: $*"; checks_failed; }
# win regex: waits (up to 10 s) for the window's screen to match
waitwin() {
	n=0
	while [ $n -lt 100 ]; do
		tmux -S "$sock" capture-pane -p -t "top:$1" >"$tmp/screen"
		grep -Eq "$2" "$tmp/screen" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	echo "window $1 never showed /$2/"
}
# win line regex: waits (up to 10 s) for one line of the window's screen to match
waitline() {
	n=0
	while [ $n -lt 100 ]; do
		tmux -S "$sock" capture-pane -p -t "top:$1" >"$tmp/screen"
		sed -n "$2p" "$tmp/screen" | grep -Eq "$3" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	echo "window $1 line $2 never showed /$3/"
}
for size in 80x24 200x50; do
	w=w$size
	topwin $size $w ""
	waitwin $w '^  worker_10 .*\[.*%'
	settle "top:$w"
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
n=0
while [ $n -lt 40 ]; do
	tmux -S "$sock" capture-pane -p -t top:plain2 >"$tmp/screen"
	grep -Eo '[a-zA-Z0-9]=[a-z_]+ ' "$tmp/screen" >>"$tmp/letters"
	sleep 0.2
	n=$((n + 1))
done
pairs=$(sort -u "$tmp/letters" | tr '\n' ' ')
check [ "$(sort -u "$tmp/letters" | wc -l)" -ge 4 ] || miss "NO_COLOR: the shares name ops' letters: '$pairs'"
check [ "$(sort -u "$tmp/letters" | cut -c1 | uniq -d)" = "" ] || miss "NO_COLOR: two ops share a letter: $pairs"
check [ "$(sort -u "$tmp/letters" | sed 's/^..//' | sort | uniq -d)" = "" ] || miss "NO_COLOR: an op has two letters: $pairs"
echo "letters: $pairs"
checks_done
