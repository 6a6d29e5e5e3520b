#!/bin/sh
# test_record_exit.sh: mate-record's exit status, signal propagation and forwarding, usage errors, and level 0.
. "$top_srcdir/tests/tools/record-common.sh"

cd "$WORK" || exit 99

# the program's status, 128+N for signal N
"$RECORD" -q -- sh -c 'exit 3'
expect_status 3 $? "exit 3"
"$RECORD" -q -- sh -c 'kill -TERM $$'
expect_status 143 $? "killed by SIGTERM"
"$RECORD" -q -- sh -c 'kill -SEGV $$'
expect_status 139 $? "killed by SIGSEGV"
"$RECORD" -q -- true
expect_status 0 $? "true"
"$RECORD" -q -- /nonexistent/program 2>err.txt
expect_status 127 $? "missing program"
check grep -q 'nonexistent/program' err.txt || fail "no message for a missing program"

# an untrapped SIGTERM sent to mate-record kills the program: 128+N
# (SIGINT, ignored by background jobs of a shell, is tested from Python)
"$RECORD" -q -- sh -c 'touch ready.txt; while :; do sleep 0.05; done' &
pid=$!
wait_until [ -f ready.txt ]
kill -TERM $pid
wait $pid
expect_status 143 $? "forwarded SIGTERM kills the program"

# usage errors exit 2 and name the problem; --help exits 0
"$RECORD" 2>err.txt
expect_status 2 $? "no program"
check grep -q 'no program to run' err.txt || fail "no 'no program to run' message"
"$RECORD" -l abc -- true 2>err.txt
expect_status 2 $? "bad level"
check grep -q -- '--level' err.txt || fail "bad level not named"
"$RECORD" --bogus -- true 2>/dev/null
expect_status 2 $? "unknown option"
"$RECORD" --help >out.txt
expect_status 0 $? "--help"
check grep -q -- '--memlog' out.txt || fail "--help lacks --memlog"

# the summary line goes to stderr, the program's output is left alone
"$RECORD" -l 1 -- sh -c 'echo hello' >out.txt 2>err.txt
expect_status 0 $? "summary run"
check [ "$(cat out.txt)" = "hello" ] || fail "stdout changed: $(cat out.txt)"
check grep -q '^mate-record: 0 calls recorded; peak device memory' err.txt || fail "no summary: $(cat err.txt)"

# a MATE_RECORD_PRELOAD the loader would skip is an error, not an unrecorded run
printf 'not ELF at all\n' >notelf.so
MATE_RECORD_PRELOAD=$WORK/notelf.so "$RECORD" -q -- sh -c 'echo ran' >out.txt 2>err.txt
expect_status 2 $? "a non-ELF MATE_RECORD_PRELOAD"
check grep -q "notelf.so: not a 64-bit ELF shared object" err.txt ||
	fail "the non-ELF preload is named: $(cat err.txt)"
check [ ! -s out.txt ] || fail "the program ran unrecorded: $(cat out.txt)"

# level 0 without a memory log: nothing is written
"$RECORD" -q -l 0 -d dumps0 -- sh -c 'echo quiet' >out.txt 2>err.txt
expect_status 0 $? "level 0"
check [ ! -e dumps0 ] || fail "level 0 made a dump folder"
check [ ! -s err.txt ] || fail "level 0 wrote to stderr: $(cat err.txt)"

finish
