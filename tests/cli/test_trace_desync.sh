#!/bin/sh
# trace_desync.sh: mate-trace --desync names the rank out of step among 8 ranks of a made-up
# data-parallel job (tests/rank-prog, recorded through libmate, launched with torchrun's
# variables): a rank that changes a shape or skips a call, named with its call and the
# others', from the ranks' instruction logs, from a mate-trace capture and live (while the
# ranks still run); a rank that stalls; nothing for 8 ranks that agree, rank 0's own calls
# included; a warning, no verdict, for two processes claiming one rank or a rank that is no
# number. The rank is in the CONNECT line (rank= world= local_rank=). A capture to standard
# output shows each event while the process runs.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
trace=$b/src/trace/mate-trace
prog=$b/tests/rank-prog
checks_tmpdir trace-desync
mkdir -m 700 "$tmp/rt"
export MATE_MONITOR_DIR="$tmp/rt" MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null
pids=
trap 'for p in $pids; do kill $p 2> /dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || fail_stop "cd $tmp"

# ranks NAME ARGS...: 8 ranks as torchrun starts them, each with its log NAME-R.log
ranks() {
	name=$1
	shift
	pids= flags=
	for r in 0 1 2 3 4 5 6 7; do
		RANK=$r WORLD_SIZE=8 LOCAL_RANK=$r LOCAL_WORLD_SIZE=8 GROUP_RANK=0 \
			MATE_INSTRUCTION_LOG=$tmp/$name-$r.log "$prog" "$@" 2>> "$name.err" &
		pids="$pids $!"
		flags="$flags --pid $!"
	done
}
wait_ranks() {
	for p in $pids; do wait "$p" || fail "rank-prog $p failed: $(cat "$1.err")"; done
	pids=
}
live() {  # NAME ARGS...: the ranks wait for mate-trace --desync, which follows them
	name=$1
	shift
	MATE_MONITOR=1 MATE_MONITOR_WAIT=300 ranks "$name" "$@"
	"$trace" --desync $flags > "$name.out" 2> "$name.trace.err" &
	tr=$!
}

# (a) from the instruction logs: rank 6's all_reduce of step 7 takes another shape; rank 0's
# log_metrics (a group of one) shifts its call numbers
ranks shape 20 shape=6:7
wait_ranks shape
"$trace" --desync shape-*.log > out 2> err
rc=$?
check [ $rc -eq 1 ] && [ "$(cat out)" = "rank 6 is at call 16 all_reduce(F32:2048) while ranks 0-5,7 are at calls 16-19 all_reduce(F32:4096)" ] ||
	fail "a shape: exit $rc, $(cat out err)"
check grep -q '| CONNECT .* pid=[0-9]* level=1 rank=6 world=8 local_rank=6$' shape-6.log ||
	fail "rank 6's CONNECT: $(grep CONNECT shape-6.log)"
check grep -q '| RECV .* call=1 op=mm depth=0 args=F32:16x32;F32:32x8$' shape-6.log ||
	fail "the args of mm: $(grep -m 1 RECV shape-6.log)"

# a difference past what args= shows: the hash that ends a cut list tells it
ranks wide 6 wide=2:4
wait_ranks wide
"$trace" --desync wide-*.log > out 2> err
rc=$?
v=$(cat out)
f='F32:4096;F32:4096;F32:4096;F32:4096;F32:4096;F32:4096;F32:4096'
check [ $rc -eq 1 ] && expr "$v" : "rank 2 is at call 15 concat($f~\([0-9a-f]\{8\}\)) while ranks 0-1,3-7 are at calls 15-17 concat($f~[0-9a-f]\{8\})\$" > /dev/null &&
	[ "$(echo "$v" | sed 's/.*concat(\([^)]*\)).*concat(\([^)]*\)).*/\1/')" != "$(echo "$v" | sed 's/.*concat(\([^)]*\)).*concat(\([^)]*\)).*/\2/')" ] ||
	fail "a long list: exit $rc, $v $(cat err)"
check grep -q "args=$f~[0-9a-f]\{8\}\$" wide-0.log || fail "a cut list: $(grep -m 1 concat wide-0.log)"

# (b) 8 ranks that agree: nothing said, exit 0
ranks agree 20
wait_ranks agree
"$trace" --desync agree-*.log > out 2> err
rc=$?
check [ $rc -eq 0 ] && [ ! -s out ] && [ ! -s err ] || fail "ranks that agree: exit $rc, $(cat out err)"

# (c) live: rank 3 skips step 5's all_reduce; named while every rank still runs (they hold
# until told), the same from a capture of mate-trace
skipped="rank 3 is at call 12 mm(F32:16x32;F32:32x8) while ranks 0-2,4-7 are at calls 12-14 all_reduce(F32:4096)"
live skip 20 skip=3:5 hold="$tmp/go-skip"
check wait_until grep -q . skip.out || fail "no verdict live: $(cat skip.trace.err)"
check [ "$(cat skip.out)" = "$skipped" ] || fail "live: $(cat skip.out skip.trace.err)"
alive=0
for p in $pids; do kill -0 "$p" 2> /dev/null && alive=$((alive + 1)); done
check [ $alive -eq 8 ] || fail "the verdict came after $((8 - alive)) ranks ended"
touch go-skip
wait_ranks skip
wait $tr
check [ $? -eq 1 ] && [ "$(cat skip.out)" = "$skipped" ] ||
	fail "live, at the end: $(cat skip.out skip.trace.err)"
"$trace" --desync skip-*.log > out 2> err
check [ $? -eq 1 ] && [ "$(cat out)" = "$skipped" ] || fail "its logs: $(cat out err)"
MATE_MONITOR=1 MATE_MONITOR_WAIT=300 ranks cap 20 skip=3:5
"$trace" -q -s 0 $flags -o cap.log 2> err || fail "capture: $(cat err)"
wait_ranks cap
"$trace" --desync cap.log > out 2> err
check [ $? -eq 1 ] && [ "$(cat out)" = "$skipped" ] || fail "a capture: $(cat out err)"

# (c2) 8 ranks of 2,000 steps that exit at once, with a backlog of live events: the capture
# has every rank's whole stream (DISCONNECT last) and names rank 3's skip at step 1,000 (a
# capture that stopped reading when the processes went away kept a few thousand events of
# each and named rank 0 as ended short, as certain)
MATE_MONITOR=1 MATE_MONITOR_WAIT=300 ranks burst 2000 skip=3:1000
"$trace" -s 0 $flags -o burst.log 2> burst.trace.err || fail "capture: $(cat burst.trace.err)"
wait_ranks burst
check [ "$(grep -c '| DISCONNECT ' burst.log)" -eq 8 ] ||
	fail "every rank's DISCONNECT in the capture: $(grep -c '| DISCONNECT ' burst.log); $(cat burst.trace.err)"
"$trace" --desync burst.log > out 2> err
check [ $? -eq 1 ] && [ "$(cat out)" = "rank 3 is at call 2002 mm(F32:16x32;F32:32x8) while ranks 0-2,4-7 are at calls 2002-2336 all_reduce(F32:4096)" ] ||
	fail "the burst's verdict: $(cat out err)"

# (d) live, 8 ranks that agree: nothing
live calm 20
wait_ranks calm
wait $tr
check [ $? -eq 0 ] && [ ! -s calm.out ] && [ ! -s calm.trace.err ] ||
	fail "live, ranks that agree: $(cat calm.out calm.trace.err)"

# (e) live: rank 5 stops before step 10 while the others go on (until told)
live stall 20 stall=5:10:"$tmp/go-stall"
check wait_until grep -q . stall.out || fail "no stall named: $(cat stall.trace.err)"
touch go-stall
wait_ranks stall
wait $tr
check [ $? -eq 1 ] && expr "$(cat stall.out)" : 'rank 5 made no call for [0-9.]* s after its call 20 (the other ranks'"'"' median gap: [0-9.e-]* s)$' > /dev/null ||
	fail "a stall: $(cat stall.out stall.trace.err)"

# (e2) a rank that ends short: certain where its log says it ended (DISCONNECT: it exited
# early), not where its log stops without one (killed, or its last events lost: a live
# stream cut at exit gave a certain false verdict)
for r in 0 1 2 3 4 5 6 7; do
	steps=20
	[ $r -eq 3 ] && steps=15
	RANK=$r WORLD_SIZE=8 LOCAL_RANK=$r MATE_INSTRUCTION_LOG=$tmp/short-$r.log "$prog" $steps 2>> short.err ||
		fail "rank-prog, rank $r: $(cat short.err)"
done
"$trace" --desync short-*.log > out 2> err
check [ $? -eq 1 ] && [ "$(cat out)" = "rank 3 is at its end after call 30 while ranks 0-2,4-7 are at calls 31-36 mm(F32:16x32;F32:32x8)" ] ||
	fail "a rank that exited early: $(cat out err)"
grep -v DISCONNECT short-3.log > cut-3.log
for r in 0 1 2 4 5 6 7; do cp short-$r.log cut-$r.log; done
"$trace" --desync cut-*.log > out 2> err
check [ $? -eq 1 ] && [ "$(cat out)" = "rank 3 is at its end after call 30 while ranks 0-2,4-7 are at calls 31-36 mm(F32:16x32;F32:32x8) (not certain: its events stopped without its DISCONNECT, and the last may be lost)" ] ||
	fail "a rank whose log stops: $(cat out err)"

# (f) two processes claim rank 3: said, and no verdict on it
ranks twice 20
RANK=3 WORLD_SIZE=8 MATE_INSTRUCTION_LOG=$tmp/twice-extra.log "$prog" 20 skip=3:2 2>> twice.err
wait_ranks twice
"$trace" --desync twice-*.log > out 2> err
check [ $? -eq 0 ] && [ ! -s out ] && grep -q "rank 3 is claimed by pids [0-9]* and [0-9]*: not compared" err ||
	fail "rank 3 twice: $(cat out err)"

# (g) a rank that is no number: the process says so and has no rank; its calls are not compared
RANK=x WORLD_SIZE=8 MATE_INSTRUCTION_LOG=$tmp/norank.log "$prog" 3 2> err
check grep -q "bad RANK value 'x'" err || fail "RANK=x: $(cat err)"
check [ "$(grep -c ' rank=' norank.log)" -eq 0 ] || fail "RANK=x gave a rank"
"$trace" --desync norank.log agree-1.log agree-2.log > out 2> err
check [ $? -eq 0 ] && [ ! -s out ] && grep -q "[0-9]* calls of processes with no rank" err ||
	fail "no rank: $(cat out err)"
RANK=9 WORLD_SIZE=8 MATE_INSTRUCTION_LOG=$tmp/nine.log "$prog" 1 2> err
check grep -q "RANK=9 is not below WORLD_SIZE=8" err || fail "RANK=9 of 8: $(cat err)"
"$trace" --desync > /dev/null 2>&1 -o x.log
check [ $? -eq 2 ] || fail "--desync -o"
"$trace" --desync --pid 1 agree-1.log > /dev/null 2>&1
check [ $? -eq 2 ] || fail "--desync --pid with logs"
"$trace" --desync nosuch.log > /dev/null 2> err
check [ $? -eq 2 ] && grep -q nosuch err || fail "a missing log: $(cat err)"

# (h) a capture read as it grows (mate-trace -o - | grep ...): each event reaches the output
# while the process still runs, not when the capture ends. The rank holds at its end until
# the test has seen its first call in the capture (the old mate-trace kept it buffered)
RANK=0 WORLD_SIZE=1 MATE_MONITOR=1 MATE_MONITOR_WAIT=300 "$prog" 3 hold=$tmp/grown 2> grow.err &
p=$!
pids=$p
"$trace" -s 0 --pid $p -o - > grow.log 2> grow.trace.err &
tr=$!
wait_until grep -q "| RECV .* all_reduce " grow.log
check grep -q "| RECV .* all_reduce " grow.log ||
	fail "the capture's lines reach standard output while the process runs: $(cat grow.log grow.trace.err)"
touch "$tmp/grown"
wait "$p"
wait "$tr" || fail "mate-trace -o -: $(cat grow.trace.err)"
pids=
check [ "$(grep -c '| SEND ' grow.log)" -eq 7 ] || fail "the whole capture: $(cat grow.log)"
checks_done
