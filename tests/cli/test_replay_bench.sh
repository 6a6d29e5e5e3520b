#!/bin/sh
# replay_bench.sh: mate-replay --bench times each call that ran: one warm-up, then N timed
# runs (median, min, max, bytes of the call's tensors) after its verdict, which the runs do
# not change; a call that fails again, as recorded, is not timed; the text form ends with the
# figures grouped by call shape; misuse is exit 2.
. "$top_srcdir/tests/checks.sh"
checks_need jq "no jq"
b=$top_builddir
checks_tmpdir replay-bench
replay=$b/src/replay/mate-replay

MATE_LOGLEVEL=10 MATE_DUMP_DIR="$tmp/dumps" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
	MATE_DEMO_ROUNDS=1 "$b/examples/mate-demo" > /dev/null 2>&1 || fail "mate-demo failed"
"$replay" --jsonl "$tmp/dumps" > "$tmp/plain.jsonl" 2> /dev/null
"$replay" --bench=3 --jsonl "$tmp/dumps" > "$tmp/bench.jsonl" 2> "$tmp/err"
check [ $? -eq 0 ] || fail "--bench=3 exits 0: $(cat "$tmp/err")"
n=$(wc -l < "$tmp/bench.jsonl")
check [ "$n" -ge 10 ] || fail "the demo's calls replayed: $n"
# the verdicts are the ones of a replay without --bench
jq -r '[.dir, .verdict] | @tsv' "$tmp/plain.jsonl" > "$tmp/v1"
jq -r '[.dir, .verdict] | @tsv' "$tmp/bench.jsonl" > "$tmp/v2"
check cmp -s "$tmp/v1" "$tmp/v2" || fail "verdicts changed by --bench: $(diff "$tmp/v1" "$tmp/v2")"
# every call that ran is timed 3 times, min <= median <= max, with its tensors' bytes
bad=$(jq -c 'select(.verdict == "passed") | select((.bench_runs != 3) or
	(.bench_min_s > .bench_median_s) or (.bench_median_s > .bench_max_s) or
	(.bench_min_s <= 0) or (.bench_bytes <= 0) or (.bench_bytes_per_s <= 0))' "$tmp/bench.jsonl")
check [ -z "$bad" ] || fail "timed passed calls: $bad"
check [ "$(jq -c 'select(.verdict == "passed")' "$tmp/bench.jsonl" | wc -l)" -ge 10 ] ||
	fail "passed calls: $(jq -r .verdict "$tmp/bench.jsonl" | sort | uniq -c)"
# a call in place (fused_add_rmsnorm) is timed too
check [ "$(jq -c 'select(.function == "fused_add_rmsnorm" and .bench_runs == 3)' \
	"$tmp/bench.jsonl" | wc -l)" -ge 1 ] || fail "fused_add_rmsnorm not timed"
# the failures the demo makes on purpose fail again, untimed
check [ "$(jq -c 'select(.verdict == "reproduced_failure")' "$tmp/bench.jsonl" | wc -l)" -ge 1 ] &&
	[ -z "$(jq -c 'select(.verdict == "reproduced_failure" and .bench_runs != null)' \
	"$tmp/bench.jsonl")" ] || fail "reproduced failures timed"
# the text form: a bench line under each passed call
"$replay" --bench=2 --include 'mm' "$tmp/dumps" > "$tmp/text" 2> /dev/null
check grep -q "^    bench: median .* (min .*, max .*) over 2 runs; .* GB/s of tensors" "$tmp/text" ||
	fail "the text form: $(head -4 "$tmp/text")"
# FLOP/s where the op defines them: mm is 2 M N K (text and JSONL)
check grep -q "^    bench: .* GB/s of tensors; .* GFLOP/s$" "$tmp/text" ||
	fail "no GFLOP/s in the mm bench line: $(grep bench: "$tmp/text" | head -2)"
bad=$(jq -c 'select(.function == "mm" and .verdict == "passed") | select((.bench_flops | type) !=
	"number" or .bench_flops <= 0 or .bench_flop_per_s <= 0)' "$tmp/bench.jsonl")
check [ -z "$bad" ] && [ "$(jq -c 'select(.function == "mm" and .bench_flops > 0)' \
	"$tmp/bench.jsonl" | wc -l)" -ge 1 ] || fail "mm's bench_flops: $bad"
# the text form ends with the figures by shape: one row per distinct call shape of the timed
# calls (the keys mate-list-dumps --unique gives), their calls adding up to the calls timed
"$replay" --bench=2 "$tmp/dumps" > "$tmp/all" 2> /dev/null
sed -n '/^bench by shape (/,/^$/p' "$tmp/all" | grep -E '^ +[0-9]+ ' > "$tmp/shapes"
timed=$(grep -c '^    bench: ' "$tmp/all")
sum=$(awk '{ n += $1 } END { print n + 0 }' "$tmp/shapes")
check [ "$sum" -eq "$timed" ] && [ "$timed" -ge 10 ] || fail "the rows' calls ($sum) are the calls timed ($timed)"
"$b/src/replay/mate-list-dumps" -q --unique --jsonl "$tmp/dumps" | jq -r '.function + " [" + .key + "]"' | sort > "$tmp/keys"
sed 's/.*  \([a-z_]* \[[0-9a-f]*\]\).*/\1/' "$tmp/shapes" | sort > "$tmp/rows"
check [ -n "$(cat "$tmp/rows")" ] && [ -z "$(comm -23 "$tmp/rows" "$tmp/keys")" ] &&
	[ "$(uniq -d "$tmp/rows")" = "" ] || fail "rows by shape key: $(cat "$tmp/shapes")"
# misuse
"$replay" --bench=0 "$tmp/dumps" > /dev/null 2>&1
check [ $? -eq 2 ] || fail "--bench=0 is a usage error"
"$replay" --bench --memlog "$tmp/x.csv" > /dev/null 2>&1
check [ $? -eq 2 ] || fail "--bench with --memlog is a usage error"
checks_done
