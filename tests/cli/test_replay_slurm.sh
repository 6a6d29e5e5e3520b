#!/bin/sh
# replay_slurm.sh: a Slurm job array replays a root in 4 shares (mate-replay --shard
# $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT, as mate-replay(1) shows it) and mate-replay
# --merge of the shares equals one process replaying the root, byte for byte after sorting.
# The test runs its own single-node Slurm: munged, slurmctld and slurmd as the current user on
# 127.0.0.1, on free ports, with their key, config, state, spool and logs in its temporary
# folder, and stops them on exit. It skips (77) only where the daemons cannot start, saying why.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
replay=$b/src/replay/mate-replay
PATH=$PATH:/usr/sbin:/sbin
for cmd in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
	checks_need $cmd "no $cmd (Debian's slurm-wlm and munge)"
done
checks_need python3 "no python3 to find free ports"
checks_tmpdir replay-slurm
# Only this test's cluster: no setting of a Slurm the test may run under reaches the commands.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\|SBATCH_[A-Za-z0-9_]*\|SQUEUE_[A-Za-z0-9_]*\|SINFO_[A-Za-z0-9_]*\|SCONTROL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
export SLURM_CONF="$tmp/slurm.conf"
ctld= slurmd= job=
stop() {
	[ -n "$job" ] && scancel "$job" 2> /dev/null &&
		MATE_TEST_WAIT=30 wait_until job_gone > /dev/null 2>&1
	for p in $slurmd $ctld; do kill "$p" 2> /dev/null; done
	for p in $slurmd $ctld; do wait "$p" 2> /dev/null; done
	[ -s "$tmp/munge/pid" ] && kill "$(cat "$tmp/munge/pid")" 2> /dev/null
	rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 1' INT TERM HUP
skip() {
	echo "SKIP: $*"
	exit 77
}
logtail() {  # FILE: its last lines that say what went wrong
	grep -v 'pmix\|MPI: Cannot create context' "$1" 2> /dev/null | grep -i 'error\|fatal' |
		tail -n 3
}
job_gone() {  # no task of $job pending or running any more
	q=$(squeue -h -r -j "$job" -o %i 2> /dev/null) && [ -z "$q" ]
}

MATE_LOGLEVEL=10 MATE_DUMP_DIR="$tmp/dumps" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
	MATE_DEMO_ROUNDS=1 "$b/examples/mate-demo" > /dev/null 2>&1 || fail_stop "mate-demo failed"
cd "$tmp" || fail_stop "cd $tmp"
mkdir -p munge state spool/node log || fail_stop "mkdir in $tmp"
chmod 755 munge

# munged: its own key, socket, seed and log (--force: it refuses root otherwise)
dd if=/dev/urandom of=munge/key bs=1024 count=1 2> /dev/null && chmod 600 munge/key ||
	fail_stop "the munge key"
munged --force --socket="$tmp/munge/socket" --key-file="$tmp/munge/key" \
	--pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/log/munged.log" \
	> log/munged.out 2>&1 ||
	skip "munged cannot start: $(tail -n 2 log/munged.out log/munged.log 2> /dev/null)"
wait_until [ -S munge/socket ] || skip "munged made no socket: $(tail -n 2 log/munged.log)"

free_ports() {  # two TCP ports free on 127.0.0.1 now
	python3 -c 'import socket
s = [socket.socket() for i in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])'
}
write_conf() {  # CTLD_PORT SLURMD_PORT
	cat > slurm.conf <<-EOF
	ClusterName=mate
	SlurmctldHost=localhost(127.0.0.1)
	SlurmctldPort=$1
	SlurmdPort=$2
	SlurmUser=$(id -un)
	SlurmdUser=$(id -un)
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$tmp/munge/socket
	StateSaveLocation=$tmp/state
	SlurmdSpoolDir=$tmp/spool/%n
	SlurmctldPidFile=$tmp/slurmctld.pid
	SlurmdPidFile=$tmp/slurmd.pid
	SlurmctldLogFile=$tmp/log/slurmctld.log
	SlurmdLogFile=$tmp/log/slurmd.log
	PlugStackConfig=$tmp/plugstack.conf
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SwitchType=switch/none
	MpiDefault=none
	JobCompType=jobcomp/none
	AccountingStorageType=accounting_storage/none
	JobAcctGatherType=jobacct_gather/none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	SlurmdParameters=config_overrides
	ReturnToService=2
	TmpFS=$tmp
	MailProg=/bin/true
	NodeName=node NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
	PartitionName=mate Nodes=node Default=YES MaxTime=INFINITE State=UP
	EOF
	: > plugstack.conf
}
node_up() {  # the node takes jobs, or a daemon has ended
	[ "$(sinfo -h -N -n node -o %t 2> /dev/null)" = idle ] || ! kill -0 "$ctld" 2> /dev/null ||
		! kill -0 "$slurmd" 2> /dev/null
}
# slurmctld and slurmd, in the foreground as this shell's children; a port taken between
# free_ports and the daemon's bind is tried again with two others
for attempt in 1 2 3; do
	ports=$(free_ports) || skip "no free port on 127.0.0.1"
	write_conf $ports
	slurmctld -D -c -f "$SLURM_CONF" > log/slurmctld.out 2>&1 &
	ctld=$!
	slurmd -D -N node -f "$SLURM_CONF" > log/slurmd.out 2>&1 &
	slurmd=$!
	MATE_TEST_WAIT=120 wait_until node_up
	kill -0 "$ctld" 2> /dev/null && kill -0 "$slurmd" 2> /dev/null && break
	why="slurmctld: $(logtail log/slurmctld.log; logtail log/slurmctld.out)
slurmd: $(logtail log/slurmd.log; logtail log/slurmd.out)"
	for p in $slurmd $ctld; do kill "$p" 2> /dev/null; wait "$p" 2> /dev/null; done
	ctld= slurmd=
	case $why in
	*"Address already in use"*) ;;
	*) skip "slurmctld or slurmd cannot start here: $why" ;;
	esac
done
[ -n "$ctld" ] || skip "slurmctld or slurmd cannot start here: $why"
check [ "$(sinfo -h -N -n node -o %t)" = idle ] ||
	fail_stop "the node never took jobs: $(sinfo -N; logtail log/slurmd.log; logtail log/slurmctld.log)"

# the job array of mate-replay(1)'s example, waited for as there (sbatch --wait), in the
# background so that a cluster that stops running it fails the test instead of hanging it
sbatch --wait --parsable --array=0-3 --output=slurm-%A_%a.out --wrap "$replay --jsonl \
	--shard \$SLURM_ARRAY_TASK_ID/\$SLURM_ARRAY_TASK_COUNT \
	dumps > part-\$SLURM_ARRAY_TASK_ID.jsonl" > sbatch.out 2> sbatch.err &
sb=$!
wait_until sh -c "[ -s sbatch.out ] || ! kill -0 $sb 2> /dev/null"
[ -s sbatch.out ] || fail_stop "sbatch: $(cat sbatch.err)"
job=$(head -n 1 sbatch.out)
MATE_TEST_WAIT=900 wait_until sh -c "! kill -0 $sb 2> /dev/null" ||
	fail_stop "job $job still running: $(squeue -r; logtail log/slurmd.log)"
wait "$sb"
rc=$?
check [ "$rc" -eq 0 ] || fail "sbatch --wait exits $rc: $(cat sbatch.err slurm-*.out | head -5)"
# every task ran on this cluster as a task of the array, and exited 0
states=$(scontrol -o show job "$job" | sed -n 's/.*ArrayTaskId=\([0-9]*\) .*JobState=\([A-Z]*\) .*ExitCode=\([0-9:]*\) .*/\1 \2 \3/p' | sort)
check [ "$states" = "0 COMPLETED 0:0
1 COMPLETED 0:0
2 COMPLETED 0:0
3 COMPLETED 0:0" ] || fail "the array's tasks: $states"
for k in 0 1 2 3; do
	check grep -q "^{\"shard\":\"$k/4\",\"roots\":\[\"$tmp/dumps\"\]" part-$k.jsonl ||
		fail "task $k wrote no closing line of share $k/4: $(tail -n 1 part-$k.jsonl)"
done

# the merged shares against one process replaying the root
strip() { sed 's/"seconds":[^,}]*,\{0,1\}//' "$@"; }  # the one figure that is a time
"$replay" dumps > one.txt 2> one.err
one_rc=$?
"$replay" --jsonl dumps > one.jsonl 2> /dev/null
"$replay" --merge part-*.jsonl > merged.txt 2> merged.err
rc=$?
check [ "$rc" -eq "$one_rc" ] && [ "$rc" -eq 0 ] ||
	fail "--merge exits $rc, one process $one_rc: $(cat merged.err)"
sort one.txt > a; sort merged.txt > b
check cmp -s a b || fail "merged text, sorted: $(diff a b | head -5)"
check cmp -s one.err merged.err || fail "summary: $(cat merged.err), one process $(cat one.err)"
"$replay" --merge --jsonl part-*.jsonl > merged.jsonl 2> /dev/null
strip one.jsonl | sort > a; strip merged.jsonl | sort > b
check [ -s a ] && cmp -s a b || fail "merged JSON lines, sorted: $(diff a b | head -5)"
check [ "$(wc -l < merged.jsonl)" -ge 10 ] || fail "$(wc -l < merged.jsonl) calls replayed"
checks_done
