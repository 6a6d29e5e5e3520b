#!/bin/sh
# test_memlog_replay.sh: mate-replay --memlog on RMM-spelled and mate-written CSVs: results, leaks, the failing row named, exit statuses.
REPLAY="$top_builddir/src/replay/mate-replay"
work=$(mktemp -d "${TMPDIR:-/tmp}/mate-memlog-test-XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
. "$top_srcdir/tests/checks.sh"
expect() { check [ "$1" = "$2" ] || fail "$3: exit status $2, expected $1"; }

# RMM's own spelling: free, clock times, hex without 0x, (nil), CRLF, another stream
printf 'Thread,Time,Action,Pointer,Size,Stream\r\n' > "$work/rmm.csv"
printf '140573312345856,11:52:31.123456,allocate,7f8a40000000,1024,7f8a38001020\r\n' >> "$work/rmm.csv"
printf '140573312345857,11:52:31.234567,allocate,0x7f8a40000400,2048,0\r\n' >> "$work/rmm.csv"
printf '140573312345856,11:52:31.300000,allocate failure,(nil),99999999999,0\r\n' >> "$work/rmm.csv"
printf '140573312345856,11:52:31.345678,free,7f8a40000000,1024,7f8a38001020\r\n' >> "$work/rmm.csv"
printf '140573312345857,11:52:31.400000,allocate,7f8a40000000,4096,7f8a38001020\r\n' >> "$work/rmm.csv"
"$REPLAY" --memlog "$work/rmm.csv" --allocator malloc --allocator pool --repeat 2 >"$work/out" 2>"$work/err"
expect 0 $? "RMM CSV"
check grep -q '^.*rmm.csv: 2 threads$' "$work/out" || fail "thread count: $(cat "$work/out")"
check grep -q '^LOG shows leak of 2 allocations of 6144 total bytes$' "$work/out" || fail "leak line: $(cat "$work/out")"
check grep -q "^skipped 1 'allocate failure' row$" "$work/out" || fail "skipped row: $(cat "$work/out")"
check [ "$(grep -c '^malloc: 4 events in' "$work/out")" = 2 ] || fail "two malloc replays: $(cat "$work/out")"
check [ "$(grep -c '^pool: 4 events in' "$work/out")" = 2 ] || fail "two pool replays: $(cat "$work/out")"
check grep -q 'peak 6.0 KiB requested' "$work/out" || fail "peak: $(cat "$work/out")"

# from standard input, default allocators
"$REPLAY" --memlog - < "$work/rmm.csv" >"$work/out" 2>&1
expect 0 $? "stdin"
check grep -q '^malloc: ' "$work/out" && grep -q '^pool: ' "$work/out" || fail "default allocators: $(cat "$work/out")"

# a free of a pointer the log never allocated: exit 1, the row named
printf 'Thread,Time,Action,Pointer,Size,Stream\n1,1.0,allocate,0x10,5,0\n1,1.1,deallocate,0x20,5,0\n' > "$work/bad.csv"
"$REPLAY" --memlog "$work/bad.csv" >/dev/null 2>"$work/err"
expect 1 $? "inconsistent log"
check grep -q 'bad.csv:3: deallocate of 0x20 (5 bytes), which the log never allocated' "$work/err" ||
	fail "row not named: $(cat "$work/err")"

# an allocation the allocator cannot make: exit 1, the row named
printf '1,1.0,allocate,0x10,5,0\n1,1.0,allocate,0x20,4611686018427387904,0\n' > "$work/huge.csv"
"$REPLAY" --memlog "$work/huge.csv" --allocator pool >/dev/null 2>"$work/err"
expect 1 $? "allocator failure"
check grep -q 'huge.csv:2: allocate of 4611686018427387904 bytes failed with allocator pool' "$work/err" ||
	fail "failing allocation not named: $(cat "$work/err")"

# 50,000 big blocks never freed: malloc writes a header page in each, so
# past MATE_MAX_MEMORY (or --max-memory) the host allocators refuse the log
# at once instead of taking 200 MB (issue 19, item 17)
awk 'BEGIN { print "Thread,Time,Action,Pointer,Size,Stream"
	for (i = 1; i <= 50000; i++) printf "1,1.0,allocate,0x%x,1048576,0\n", i * 4096 }' > "$work/many.csv"
if [ -x /usr/bin/time ]; then
	MATE_MAX_MEMORY=64M /usr/bin/time -f '%M' -o "$work/rss" "$REPLAY" --memlog "$work/many.csv" \
	    >/dev/null 2>"$work/err"
	expect 1 $? "live blocks past the memory limit"
	check [ "$(tail -n 1 "$work/rss")" -lt 100000 ] || fail "peak RSS $(tail -n 1 "$work/rss") KiB"
	check grep -q 'many.csv:16386: the live allocations would make allocator malloc touch more than the memory limit of 64 MiB' "$work/err" ||
		fail "limit not named: $(cat "$work/err")"
fi
"$REPLAY" --memlog "$work/many.csv" --allocator pool --max-memory 32M >/dev/null 2>"$work/err"
expect 1 $? "--max-memory"
check grep -q 'allocator pool touch more than the memory limit of 32 MiB' "$work/err" ||
	fail "--max-memory: $(cat "$work/err")"
"$REPLAY" --memlog "$work/many.csv" --max-memory lots >/dev/null 2>"$work/err"
expect 2 $? "bad --max-memory"

# unreadable or malformed input, unknown allocators, misuse: exit 2
printf 'Thread,Time,Action,Pointer,Size,Stream\n1,1.0,allocate,0x10,five,0\n' > "$work/malformed.csv"
"$REPLAY" --memlog "$work/malformed.csv" >/dev/null 2>"$work/err"
expect 2 $? "malformed CSV"
check grep -q "malformed.csv:2: bad Size 'five'" "$work/err" || fail "parse error: $(cat "$work/err")"
"$REPLAY" --memlog "$work/nonexistent.csv" >/dev/null 2>&1
expect 2 $? "missing file"
"$REPLAY" --memlog "$work/rmm.csv" --allocator bogus >/dev/null 2>"$work/err"
expect 2 $? "unknown allocator"
check grep -q "unknown allocator 'bogus'" "$work/err" || fail "unknown allocator: $(cat "$work/err")"
if ! grep -q '#define HAVE_CUDA 1' "$top_builddir/config.h"; then
	"$REPLAY" --memlog "$work/rmm.csv" --allocator cuda-async >/dev/null 2>"$work/err"
	expect 2 $? "cuda-async without CUDA"
	check grep -q 'built without CUDA' "$work/err" || fail "cuda-async: $(cat "$work/err")"
fi
"$REPLAY" --memlog "$work/rmm.csv" "$work" >/dev/null 2>&1
expect 2 $? "--memlog with a dump directory"
"$REPLAY" --allocator pool "$work" >/dev/null 2>&1
expect 2 $? "--allocator without --memlog"

checks_done
