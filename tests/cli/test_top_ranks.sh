#!/bin/sh
# test_top_ranks.sh: mate-top's ranks: each process line says its rank ("rank 3/8", from the
# launcher's variables), and a rank out of step is named while the job runs, as
# mate-trace --desync names it ("out of step: rank 3 is at call 12 ..."), in every table
# from then on; 8 ranks that agree get no such line. The ranks are tests/rank-prog, started
# as torchrun starts them, each waiting for the subscriber and, at its end, for a file.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
top=$b/src/top/mate-top
prog=$b/tests/rank-prog
checks_tmpdir top-ranks
mkdir -m 700 "$tmp/rt"
export MATE_MONITOR_DIR="$tmp/rt" MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null
pids=
trap 'for p in $pids; do kill $p 2> /dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || fail_stop "cd $tmp"

# job NAME ARGS...: 8 ranks of rank-prog ARGS hold=go-NAME, then mate-top following them
# (their tables in NAME.out) until they end
job() {
	name=$1
	shift
	pids= flags=
	for r in 0 1 2 3 4 5 6 7; do
		RANK=$r WORLD_SIZE=8 LOCAL_RANK=$r LOCAL_WORLD_SIZE=8 MATE_MONITOR=1 \
		    MATE_MONITOR_WAIT=300 "$prog" "$@" hold="$tmp/go-$name" 2>> "$name.err" &
		pids="$pids $!"
		flags="$flags --pid $!"
	done
	"$top" -b -d 0.3 -n 400 $flags > "$name.out" 2> "$name.top.err" &
	topid=$!
}
# end NAME: lets the ranks end; mate-top ends with them
end() {
	touch "go-$1"
	for p in $pids; do wait "$p" || fail "rank-prog $p failed: $(cat "$1.err")"; done
	pids=
	wait $topid
}

# rank 3 skips step 5's all_reduce: named while every rank still runs (they hold)
job skip 20 skip=3:5
skipped="out of step: rank 3 is at call 12 mm(F32:16x32;F32:32x8) while ranks 0-2,4-7 are at calls 12-14 all_reduce(F32:4096)"
check wait_until grep -q "^out of step: " skip.out || fail "no verdict: $(cat skip.top.err)"
alive=0
for p in $pids; do kill -0 "$p" 2> /dev/null && alive=$((alive + 1)); done
check [ $alive -eq 8 ] || fail "the verdict came after $((8 - alive)) ranks ended"
check grep -qxF "$skipped" skip.out || fail "the verdict: $(grep '^out of step' skip.out | sort -u)"
# its CPU share needs two samples, a table or two after the verdict on a loaded machine
rank3_line() { grep -Eq "^[0-9]+ +rank-prog +process rank 3/8  cpu " skip.out; }
check wait_until rank3_line ||
	fail "rank 3's process line: $(grep ' process ' skip.out | head -3)"
end skip
check [ "$(grep '^out of step' skip.out | sort -u)" = "$skipped" ] ||
	fail "one verdict, in the tables from then on: $(grep '^out of step' skip.out | sort | uniq -c)"
check [ "$(tail -n 2 skip.out | head -n 1)" = "$skipped" ] ||
	fail "the last table still names it: $(tail -n 12 skip.out)"

# 8 ranks that agree: each with its rank, none out of step
ranks_shown() { [ "$(grep -E '^[0-9]+ +rank-prog +process rank [0-7]/8  cpu ' calm.out |
	awk '{ print $5 }' | sort -u | wc -l)" -eq 8 ]; }
none_out() { ! grep -q "^out of step" calm.out; }
job calm 20
# what a failure needs to tell (CI keeps only this log): each rank's pid, whether it
# announced itself and is still there
ranks_state() { for p in $pids; do printf ' %s:%s%s' "$p" "$([ -e "rt/$p.info" ] && echo announced ||
	echo silent)" "$(kill -0 "$p" 2> /dev/null && echo ,running || echo ,ended)"; done; }
check wait_until ranks_shown ||
	fail "the ranks' process lines: $(grep ' process ' calm.out | sort -u -k 5,5); ranks:$(ranks_state); mate-top said: $(cat calm.top.err)"
end calm
check none_out || fail "ranks that agree: $(grep '^out of step' calm.out | sort -u)"
checks_done
