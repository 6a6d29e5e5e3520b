#!/bin/sh
# ci_fuzz_demo.sh: what CI (tests/ci.sh) runs is there: a seed corpus fuzz/corpus/NAME for every fuzz/fuzz_NAME.c, a crash's whole output (no tail), and the main job into a scratch folder.
. "$top_srcdir/tests/checks.sh"
ci=$top_srcdir/tests/ci.sh

n=0
for src in "$top_srcdir"/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	corpus=$top_srcdir/fuzz/corpus/${name#fuzz_}
	check [ -d "$corpus" ] && [ -n "$(ls "$corpus")" ] || fail "$name: no seeds in fuzz/corpus/${name#fuzz_}"
	n=$((n + 1))
done
check [ "$n" -ge 9 ] || fail "only $n fuzz targets found"
# every corpus belongs to a target
for corpus in "$top_srcdir"/fuzz/corpus/*/; do
	corpus=${corpus%/}
	check [ -f "$top_srcdir/fuzz/fuzz_${corpus##*/}.c" ] || fail "fuzz/corpus/${corpus##*/}: no such target"
done
check grep -q 'corpus="../fuzz/corpus/${name#fuzz_}"' "$ci" || fail "ci.sh looks elsewhere for the seeds"
check sh -c '! grep -A 8 "max_total_time" "$1" | grep -q "| *tail"' sh "$ci" ||
	fail "ci.sh cuts the fuzzers' output (a crash's stack trace) with tail"
check grep -q '^\.\./examples/run-demo.sh --no-install .*--out "\$demo_out' "$ci" ||
	fail "ci.sh does not run the main job"
checks_done
