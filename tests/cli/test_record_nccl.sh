#!/bin/sh
# test_record_nccl.sh: mate-record interposes NCCL (tests/nccl-prog, one rank of a made-up job,
# linked against the test-only fake libnccl.so.2): (a) the log names each call with its count,
# datatype, op, root, peer and communicator (an id every rank of it shares); (b) 8 ranks
# launched with torchrun's variables, one skipping an ncclAllReduce or changing its count:
# mate-trace --desync names that rank and call from their instruction logs, and 8 ranks that
# agree give nothing; (c) without launcher variables the rank comes from ncclCommInitRank: a
# RANK event in the log, and live, the publisher's frames and .info file from then on; (d) the
# program's results are the same recorded or not, and level 0 records nothing; (e) against
# the real libnccl.so.2 of the PyPI peers (without a GPU: ncclGetUniqueId, a failing
# ncclCommInitRank).
. "$top_srcdir/tests/tools/record-common.sh"
PROG="$top_builddir/tests/nccl-prog"
TRACE="$top_builddir/src/trace/mate-trace"
mkdir -m 700 "$WORK/rt"
export MATE_MONITOR_DIR="$WORK/rt"
pids=
trap 'for p in $pids; do kill $p 2> /dev/null; done; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 99

# ranks NAME ARGS...: 8 ranks of nccl-prog under mate-record at level 1, as torchrun starts
# them, each with its instruction log NAME-R.log
ranks() {
	name=$1
	shift
	for r in 0 1 2 3 4 5 6 7; do
		RANK=$r WORLD_SIZE=8 LOCAL_RANK=$r LOCAL_WORLD_SIZE=8 \
			MATE_INSTRUCTION_LOG=$WORK/$name-$r.log "$RECORD" -q -l 1 -o /dev/null -- \
			"$PROG" "$@" > "$name-$r.out" 2>> "$name.err" &
		pids="$pids $!"
	done
	wait_ranks "$name"
}
wait_ranks() {
	for p in $pids; do wait "$p" || fail "nccl-prog $p failed: $(cat "$1.err")"; done
	pids=
}

# (a) the log text at level 3: every call by name with its arguments
"$RECORD" -l 3 -o l3-0.txt -- "$PROG" -r 0 -n 4 2 > l3.out 2> l3.err
expect_status 0 $? "level 3"
"$RECORD" -l 3 -o l3-1.txt -- "$PROG" -r 1 -n 4 2 > /dev/null 2>&1
for f in ncclCommInitRank ncclBroadcast ncclCommCount ncclCommUserRank ncclAllReduce \
    ncclGroupStart ncclSend ncclRecv ncclGroupEnd ncclAllGather ncclReduceScatter ncclReduce \
    ncclCommDestroy; do
	check grep -q "MATE API Call: $f\$" l3-0.txt || fail "no $f in the log"
done
check [ "$(grep -c 'MATE API Call: ncclAllReduce$' l3-0.txt)" -eq 2 ] || fail "two ncclAllReduce"
check grep -q '18 calls recorded in 1 process' l3.err || fail "the summary: $(cat l3.err)"
# call NAME: the log's first record of NAME, its lines joined by '|'
call() {
	awk -v f="MATE API Call: $2" '$0 ~ f"$" { on = 1 } on { printf "%s|", $0 }
	    on && /^Output value:/ { exit }' "$1" | tr -s ' '
}
ar=$(call l3-0.txt ncclAllReduce)
check expr "$ar" : '.*|Keyword input arguments:| sendbuff=| Tensor(| shape=(4096,)| stride=(1,)| dtype=torch.float32| device=cuda:0|.*| recvbuff=| Tensor(| shape=(4096,)|.*| count=| 4096| datatype=| ncclDataType_t.ncclFloat32 (value=7)| op=| ncclRedOp_t.ncclSum (value=0)| comm=| <ncclComm_t [0-9a-f]\{8\}>| stream=| 0x0|Output value:|$' > /dev/null ||
	fail "ncclAllReduce's arguments: $ar"
bc=$(call l3-0.txt ncclBroadcast)
check expr "$bc" : '.*dtype=torch.bfloat16.*| count=| 256| datatype=| ncclDataType_t.ncclBfloat16 (value=9)| root=| 0| comm=' > /dev/null ||
	fail "ncclBroadcast's arguments: $bc"
rs=$(call l3-0.txt ncclReduceScatter)
check expr "$rs" : '.*| sendbuff=| Tensor(| shape=(1024,).*| recvbuff=| Tensor(| shape=(256,).*| recvcount=| 256| datatype=| ncclDataType_t.ncclFloat32 (value=7)| op=| ncclRedOp_t.ncclAvg (value=4)| comm=' > /dev/null ||
	fail "ncclReduceScatter's arguments (its send buffer holds 4 ranks' shares): $rs"
ag=$(call l3-0.txt ncclAllGather)
check expr "$ag" : '.*| sendbuff=| Tensor(| shape=(1024,).*| recvbuff=| Tensor(| shape=(4096,).*| sendcount=| 1024|' > /dev/null ||
	fail "ncclAllGather's arguments: $ag"
rd=$(call l3-0.txt ncclReduce)
check expr "$rd" : '.*dtype=torch.float64.*| count=| 64| datatype=| ncclDataType_t.ncclFloat64 (value=8)| op=| ncclRedOp_t.ncclMax (value=2)| root=| 0| comm=' > /dev/null ||
	fail "ncclReduce's arguments: $rd"
sd=$(call l3-0.txt ncclSend)
check expr "$sd" : '.*dtype=torch.float16.*| count=| 512| datatype=| ncclDataType_t.ncclFloat16 (value=6)| peer=| 1| comm=' > /dev/null ||
	fail "ncclSend's arguments: $sd"
rv=$(call l3-0.txt ncclRecv)
check expr "$rv" : '.*| recvbuff=| Tensor(.*| count=| 512| datatype=| ncclDataType_t.ncclFloat16 (value=6)| peer=| 3| comm=' > /dev/null ||
	fail "ncclRecv's arguments: $rv"
init=$(call l3-0.txt ncclCommInitRank)
check expr "$init" : '.*| nranks=| 4| commId=| <ncclUniqueId [0-9a-f]\{8\}>| rank=| 0|Output value:' > /dev/null ||
	fail "ncclCommInitRank's arguments: $init"
# the communicator's id: the same in every call of a rank, in both ranks, and its commId's
ids0=$(grep -o '<ncclComm_t [0-9a-f]*>' l3-0.txt | sort -u)
ids1=$(grep -o '<ncclComm_t [0-9a-f]*>' l3-1.txt | sort -u)
uid=$(grep -o '<ncclUniqueId [0-9a-f]*>' l3-0.txt | sed 's/.* \(.*\)>/\1/')
check [ "$(echo "$ids0" | wc -l)" -eq 1 ] && [ "$ids0" = "$ids1" ] &&
	[ "$ids0" = "<ncclComm_t $uid>" ] || fail "the communicator's ids: $ids0 / $ids1 / $uid"
# level 5: the buffers' addresses alone (their data is not read: that would wait on the
# stream, on the other ranks), no warning
"$RECORD" -l 5 -o l5.txt -- "$PROG" -r 0 -n 4 1 > l5.out 2> l5.err
expect_status 0 $? "level 5"
ar5=$(call l5.txt ncclAllReduce)
check expr "$ar5" : '.*| sendbuff=| 0x[0-9a-f]*| recvbuff=| 0x[0-9a-f]*| count=| 4096| datatype=| ncclDataType_t.ncclFloat32 (value=7)| op=' > /dev/null &&
	! grep -q 'mate:' l5.err || fail "level 5: $ar5 $(cat l5.err)"
# level 10: nothing dumped (nothing of NCCL replays), the program's output its own
"$RECORD" -l 10 -d d10 -o l10.txt -- "$PROG" -r 0 -n 4 1 > l10.out 2> l10.err
expect_status 0 $? "level 10"
check cmp -s l10.out l5.out && [ -z "$(ls d10 2> /dev/null | grep nccl)" ] &&
	grep -q '0 calls recorded' l10.err || fail "level 10: $(ls d10) $(cat l10.err)"

# (b) rank 5 leaves out step 3's ncclAllReduce: named with its call and the others'
ranks skip 6 skip=5:3
"$TRACE" --desync skip-*.log > out 2> err
rc=$?
check [ $rc -eq 1 ] && [ "$(cat out)" = "rank 5 is at call 20 ncclGroupStart() while ranks 0-4,6-7 are at call 20 ncclAllReduce(F32:4096;F32:4096)" ] ||
	fail "a skipped ncclAllReduce: exit $rc, $(cat out err)"
check grep -q '| RECV .* ncclAllReduce .* call=20 op=ncclAllReduce depth=0 args=F32:4096;F32:4096$' skip-0.log ||
	fail "the args of ncclAllReduce: $(grep -m 1 'RECV.*ncclAllReduce' skip-0.log)"
# rank 2's ncclAllReduce of step 4 takes 2048 elements
ranks count 6 count=2:4
"$TRACE" --desync count-*.log > out 2> err
rc=$?
check [ $rc -eq 1 ] && [ "$(cat out)" = "rank 2 is at call 25 ncclAllReduce(F32:2048;F32:2048) while ranks 0-1,3-7 are at call 25 ncclAllReduce(F32:4096;F32:4096)" ] ||
	fail "a changed count: exit $rc, $(cat out err)"
# 8 ranks that agree: nothing said, exit 0
ranks agree 6
"$TRACE" --desync agree-*.log > out 2> err
rc=$?
check [ $rc -eq 0 ] && [ ! -s out ] && [ ! -s err ] || fail "ranks that agree: exit $rc, $(cat out err)"

# (c) no launcher variables: the rank from ncclCommInitRank, in a RANK event after it...
for r in 0 1 2 3 4 5 6 7; do
	MATE_INSTRUCTION_LOG=$WORK/nr-$r.log "$RECORD" -q -l 1 -o /dev/null -- \
		"$PROG" -r $r -n 8 6 count=6:2 > /dev/null 2>> nr.err &
	pids="$pids $!"
done
wait_ranks nr
check grep -q "| CONNECT .* pid=[0-9]* level=1\$" nr-6.log &&
	grep -q "| RANK .* ncclCommInitRank | pid=[0-9]* rank=6 world=8\$" nr-6.log ||
	fail "rank 6's CONNECT and RANK: $(grep 'CONNECT\|RANK' nr-6.log)"
"$TRACE" --desync nr-*.log > out 2> err
rc=$?
check [ $rc -eq 1 ] && grep -q '^mate-trace: 8 calls of processes with no rank (.*, and no ncclCommInitRank yet) not compared$' err &&
	[ "$(cat out)" = "rank 6 is at call 14 ncclAllReduce(F32:2048;F32:2048) while ranks 0-5,7 are at call 14 ncclAllReduce(F32:4096;F32:4096)" ] ||
	fail "ranks from ncclCommInitRank: exit $rc, $(cat out err)"
# ... a launcher's rank stays: RANK=1 beside -r 4 gives no RANK event
RANK=1 WORLD_SIZE=8 MATE_INSTRUCTION_LOG=$WORK/both.log "$RECORD" -q -l 1 -o /dev/null -- \
	"$PROG" -r 4 -n 8 1 > /dev/null 2>&1
check grep -q '| CONNECT .* rank=1 world=8$' both.log && ! grep -q '| RANK ' both.log ||
	fail "a launcher's rank and ncclCommInitRank's: $(grep 'CONNECT\|RANK' both.log)"
# ... and live: two ranks publish, and call ncclGetUniqueId; once its events went out with no
# rank in their frames (the instruction logs have them), they go on; once they hold (their
# calls made), their .info files say the rank, and a capture of them has it (mate-trace takes
# the rank of a frame after the first)
for r in 0 1; do
	MATE_MONITOR=1 MATE_MONITOR_WAIT=300 MATE_INSTRUCTION_LOG=$WORK/live-$r.log \
		"$RECORD" -q -l 1 -o /dev/null -- \
		"$PROG" -r $r -n 2 2 init="$WORK/init" hold="$WORK/go" > live-$r.out 2>> live.err &
	pids="$pids $!"
done
infos() { [ "$(ls rt/*.info 2> /dev/null | wc -l)" -eq 2 ]; }
held() { [ "$(cat live-0.out live-1.out | grep -c checksum)" -eq 2 ]; }
unique() { [ "$(cat live-0.log live-1.log 2> /dev/null | grep -c '| SEND .* ncclGetUniqueId ')" -eq 2 ]; }
said() { [ "$(grep -h '^rank=\|^world=' rt/*.info | sort | tr '\n' ' ')" = "rank=0 rank=1 world=2 world=2 " ]; }
if check wait_until infos; then
	flags=$(sed -n 's/^pid=/--pid /p' rt/*.info)
	# shellcheck disable=SC2086
	"$TRACE" -q -s 0 $flags -o cap.log 2> cap.err &
	tr=$!
	check wait_until unique || fail "no ncclGetUniqueId: $(cat live.err cap.err)"
	touch init
	check wait_until held || fail "the live ranks did not run: $(cat live.err cap.err)"
	check wait_until said || fail "the .info files: $(cat rt/*.info)"
	touch go
	wait_ranks live
	wait $tr
	check grep -q "| RECV .* ncclAllReduce .* depth=0 args=F32:4096;F32:4096 pid=[0-9]* rank=1\$" cap.log &&
		grep -q "| RECV .* ncclCommDestroy .* rank=0\$" cap.log ||
		fail "the capture carries the ranks: $(grep -m 3 '| RECV ' cap.log) $(cat cap.err)"
else
	fail "no .info files: $(cat live.err)"
	touch init go
	wait_ranks live
fi

# (d) the results are the program's own; level 0 records nothing
plain=$("$PROG" -r 3 -n 8 4) || fail "the program fails on its own"
for l in 0 1 3 5; do
	out=$("$RECORD" -l $l -o lv$l.txt -- "$PROG" -r 3 -n 8 4 2> lv$l.err)
	check [ "$out" = "$plain" ] || fail "level $l: the program printed '$out', not '$plain'"
done
check [ ! -e lv0.txt ] && grep -q 'level 0: API calls not logged' lv0.err ||
	fail "level 0 recorded: $(cat lv0.txt lv0.err)"
check [ "$(grep -c 'MATE API Call: nccl' lv1.txt)" -eq 28 ] || fail "level 1: $(cat lv1.txt)"
MATE_INSTRUCTION_LOG=$WORK/lv0.log "$RECORD" -q -l 0 -- "$PROG" -r 3 -n 8 4 > /dev/null 2>&1
check [ ! -s lv0.log ] || fail "level 0 wrote events: $(cat lv0.log)"

# (e) the real libnccl.so.2, the peers' (PyPI's nvidia-nccl, torch's): its ncclGetUniqueId
# works without a GPU, its ncclCommInitRank fails with no device visible; recorded, both reach
# it (the 128-byte id passed by value), the failure is in the call's event, no rank is taken
# from it, and the program says and exits what it does alone
real=
[ -n "$PYTHON_PEERS" ] && real=$("$PYTHON_PEERS" -c 'import os, nvidia.nccl as n
print(os.path.join(list(n.__path__)[0], "lib"))' 2> /dev/null)
if [ -n "$real" ] && [ -f "$real/libnccl.so.2" ]; then
	touch init
	CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH=$real "$PROG" -r 0 -n 2 1 init="$WORK/init" \
		> real.out 2> real.err
	rc=$?
	check [ $rc -eq 1 ] && grep -q 'ncclCommInitRank: ncclResult 1$' real.err ||
		fail "the real NCCL alone: exit $rc, $(cat real.err)"
	CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH=$real MATE_INSTRUCTION_LOG=$WORK/real.log \
		"$RECORD" -q -l 1 -o /dev/null -- "$PROG" -r 0 -n 2 1 init="$WORK/init" \
		> rreal.out 2> rreal.err
	expect_status $rc $? "the real NCCL recorded"
	check cmp -s real.out rreal.out && cmp -s real.err rreal.err ||
		fail "the real NCCL recorded says: $(cat rreal.out rreal.err)"
	check grep -q '| SEND .* op=ncclGetUniqueId depth=0 success=True$' real.log &&
		grep -q '| SEND .* op=ncclCommInitRank depth=0 success=False error=ncclCommInitRank returned ncclUnhandledCudaError (1)$' real.log &&
		! grep -q '| RANK ' real.log || fail "the real NCCL's events: $(grep '| [A-Z]* *| CLIENT' real.log)"
else
	echo "note: no libnccl.so.2 in the peers (PYTHON_PEERS=$PYTHON_PEERS): the real NCCL's case not run"
fi
finish
