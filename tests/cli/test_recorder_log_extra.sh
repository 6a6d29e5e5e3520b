#!/bin/sh
# recorder_log_extra.sh: MATE_LOG_EXTRA=1 tags every level-3/5 block with its call id and thread (the demo's four threads: each output block matched to its call), shows in-place tensors again after the call (an sgemm's C of 27 NaNs, written by the call: none after), and without it the peers' text has none of it; a bad value is named.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir logextra

# four threads at level 3: every block names its call and thread
MATE_LOGLEVEL=3 MATE_LOG_EXTRA=1 MATE_LOGDEST=$tmp/demo.log MATE_DEMO_ROUNDS=2 \
    "$b/examples/mate-demo" >/dev/null 2>"$tmp/err"
check [ $? -eq 0 ] || fail "the demo exits 0: $(cat "$tmp/err")"
# "ID THREAD in|out" per tagged block
sed -n 's/^\[[^]]*\] MATE API Call: [a-z_]* (call \([0-9]*\), thread \([0-9]*\))$/\1 \2 in/p
        s/^Output value (call \([0-9]*\), thread \([0-9]*\)):$/\1 \2 out/p' "$tmp/demo.log" >"$tmp/tags"
calls=$(grep -c ' MATE API Call: ' "$tmp/demo.log")
outs=$(grep -c '^Output value' "$tmp/demo.log")
check [ "$(grep -c ' in$' "$tmp/tags")" -eq "$calls" ] && [ "$calls" -gt 8 ] ||
	fail "each of the $calls calls' blocks is tagged: $(grep -c ' in$' "$tmp/tags")"
check [ "$(grep -c ' out$' "$tmp/tags")" -eq "$outs" ] || fail "each of the $outs output blocks is tagged"
check [ "$(awk '{ print $1 }' "$tmp/tags" | sort | uniq -c | awk '$1 > 2' | wc -l)" -eq 0 ] ||
	fail "a call id in more than two blocks"
# an output block's call and thread are those of the call it belongs to
bad=$(awk '$3 == "in" { t[$1] = $2 } $3 == "out" && t[$1] != $2 { print }' "$tmp/tags")
check [ -z "$bad" ] || fail "output blocks not matching their calls: $bad"
check [ "$(awk '$3 == "in" { print $2 }' "$tmp/tags" | sort -u | wc -l)" -eq 4 ] ||
	fail "the demo's four threads: $(awk '{ print $2 }' "$tmp/tags" | sort -u | tr '\n' ' ')"

# a bad value: named, and the default kept
MATE_LOGLEVEL=3 MATE_LOG_EXTRA=yes MATE_LOGDEST=$tmp/bad.log MATE_DEMO_ROUNDS=1 \
    "$b/examples/mate-demo" >/dev/null 2>"$tmp/err"
check grep -q "^mate: bad MATE_LOG_EXTRA value 'yes'" "$tmp/err" || fail "a bad value is named: $(cat "$tmp/err")"
check grep -q '(call ' "$tmp/bad.log" && fail "a bad value turned the additions on"

# an in-place C: its statistics after the call are those of what the call wrote (through
# mate-record: a static-only build has no libmate-preload.so, and CI runs this test in its
# shared sanitizer step)
if [ ! -e "$b/.libs/libmate-preload.so" ]; then
	echo "note: no libmate-preload.so (a static-only build): the sgemm part is not run"
	checks_done
fi
MATE_LOGLEVEL=5 MATE_LOG_EXTRA=1 MATE_LOGDEST=$tmp/nan.log \
    "$b/bin/mate-record" -l 5 -o "$tmp/nan.log" -- "$b/tests/record-blas-prog" nan >/dev/null 2>&1
check [ $? -eq 0 ] || fail "the nan program recorded"
before=$(sed -n '/^  arg\[12\] (C):/,/^    )/p' "$tmp/nan.log" | sed -n '1,/^    )/p' | grep -o 'nan_count=[0-9]*')
after=$(sed -n '/^In-place arguments after the call:/,/^====/p' "$tmp/nan.log")
check [ "$before" = nan_count=27 ] || fail "C before the call: $before"
check echo "$after" | grep -q '^  arg\[12\] (C):$' && echo "$after" | grep -q '^      nan_count=0$' ||
	fail "C after the call: $after"

# positional arguments named as the C signature names them: CBLAS's and Fortran's
names=$(sed -n 's/^  arg\[[0-9]*\] (\(.*\)):$/\1/p' "$tmp/nan.log" | head -14 | tr '\n' ' ')
check [ "$names" = "Order TransA TransB M N K alpha A lda B ldb beta C ldc " ] ||
	fail "cblas_sgemm's arguments by name: $names"
MATE_LOG_EXTRA=1 "$b/bin/mate-record" -l 3 -o "$tmp/f77.log" -- "$b/tests/record-blas-prog" \
    >/dev/null 2>&1
names=$(sed -n '/ API Call: sgemm_ /,$p' "$tmp/f77.log" | sed -n 's/^  arg\[[0-9]*\] (\(.*\)):$/\1/p' |
	head -13 | tr '\n' ' ')
check [ "$names" = "transa transb m n k alpha a lda b ldb beta c ldc " ] ||
	fail "sgemm_'s arguments by name: $names"

# without it: the peers' text, no tag, no block of mine
"$b/bin/mate-record" -l 5 -o "$tmp/plain.log" -- "$b/tests/record-blas-prog" nan >/dev/null 2>&1
check grep -q '^Output value:$' "$tmp/plain.log" || fail "the peers' output line: $(grep Output "$tmp/plain.log")"
check grep -q '(call \|In-place arguments\|^  arg\[[0-9]*\] (' "$tmp/plain.log" &&
	fail "mate's additions without MATE_LOG_EXTRA"
checks_done
