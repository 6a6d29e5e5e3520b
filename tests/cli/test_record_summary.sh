#!/bin/sh
# test_record_summary.sh: what mate-record says after the run: no dump part below level 10, nothing after a program that could not run, and a header-only --memlog CSV that says "no device allocations".
. "$top_srcdir/tests/tools/record-common.sh"

cd "$WORK" || exit 99

# level 1 (the default) makes no dumps: the summary does not count them
"$RECORD" -- true 2>err.txt
expect_status 0 $? "true at level 1"
check grep -q '^mate-record: 0 calls recorded; peak device memory' err.txt ||
	fail "level 1 summary: $(cat err.txt)"
check sh -c '! grep -q dump err.txt' || fail "a dump summary at level 1: $(cat err.txt)"
# level 10 does
"$RECORD" -l 10 -d dumps -- true 2>err.txt
check grep -q '; 0 dumps (0 B) in dumps;' err.txt || fail "level 10 summary: $(cat err.txt)"

# a program that cannot run: its error, and no summary after it
"$RECORD" -- ./no-such-program 2>err.txt
expect_status 127 $? "missing program"
check [ "$(wc -l < err.txt)" -eq 1 ] && grep -q '^mate-record: ./no-such-program: No such file' err.txt ||
	fail "one line for a missing program: $(cat err.txt)"

# --memlog of a program with no device allocations: the header, and why it is alone
"$RECORD" --memlog mem.csv -- true 2>err.txt
expect_status 0 $? "--memlog with no allocations"
check [ "$(cat mem.csv 2>/dev/null)" = "Thread,Time,Action,Pointer,Size,Stream" ] ||
	fail "mem.csv: '$(cat mem.csv 2>&1)'"
check grep -q '^mate-record: no device allocations; memory log: mem.csv' err.txt ||
	fail "no word of the empty memory log: $(cat err.txt)"
# %i is the program's pid; -q writes the file and says nothing
"$RECORD" -q --memlog 'mem_%i.csv' -- true 2>err.txt
check [ -s err.txt ] && fail "-q printed: $(cat err.txt)"
check [ "$(cat mem_*.csv 2>/dev/null)" = "Thread,Time,Action,Pointer,Size,Stream" ] ||
	fail "mem_%i.csv: $(ls)"
# a file that cannot be written is named
"$RECORD" --memlog nodir/mem.csv -- true 2>err.txt
check grep -q 'memory log: nodir/mem.csv: No such file or directory' err.txt ||
	fail "unwritable memory log: $(cat err.txt)"
finish
