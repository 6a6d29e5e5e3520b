#!/bin/sh
# visualize_text.sh: mate-visualize -f text sums up a recorded demo run (its ops, each lane's busy share as -v gives it, clients waiting on workers, where the time went) and a GT log; .txt picks it; no event fails as for a picture.
set -u
b=$top_builddir
bin=$b/mate-visualize
gt=$top_srcdir/tests/fixtures/gt-logs/multiworker4_autoshard.log
. "$top_srcdir/tests/checks.sh"
checks_tmpdir vis-text

MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_INSTRUCTION_LOG=$tmp/ilog.txt MATE_DEMO_SECONDS=2 \
    "$b/examples/mate-demo" >/dev/null 2>"$tmp/demo.err" || fail_stop "the demo failed: $(cat "$tmp/demo.err")"

check "$bin" --help >"$tmp/help" || fail "--help failed"
checks_ran
grep -q -- "json.gz or text" "$tmp/help" || fail "--help names -f text: $(cat "$tmp/help")"

# LABEL BUSY, one a line: from the text's lane table, and from -v's lane lines
text_lanes() {
	sed -nE 's/^ +([0-9.]+)% +[0-9]+ +(-|[0-9.]+%) +(client|dispatcher|worker|memory) +(.*)$/\4 \1/p' "$1"
}
v_lanes() {
	sed -nE 's/^mate-visualize: lane [0-9]+: .*, busy ([0-9.]+)%, [0-9]+ spans: (.*)$/\2 \1/p' "$1"
}
# the lane table's lines of one kind
kind_lines() {
	grep -E "^ +[0-9.]+% +[0-9]+ +(-|[0-9.]+%) +$2 " "$1"
}

# the text and -v's picture of one log: NAME LOG [OPTIONS...]
same_busy() {
	name=$1 log=$2
	shift 2
	"$bin" -f text -o - "$@" "$log" >"$tmp/$name.txt" 2>"$tmp/$name.err" ||
		{ fail "$name: -f text failed: $(cat "$tmp/$name.err")"; return 1; }
	"$bin" -v -o "$tmp/$name.png" "$@" "$log" 2>"$tmp/$name.v" ||
		{ fail "$name: -v failed: $(cat "$tmp/$name.v")"; return 1; }
	text_lanes "$tmp/$name.txt" >"$tmp/$name.tl"
	v_lanes "$tmp/$name.v" >"$tmp/$name.vl"
	checks_ran
	[ -s "$tmp/$name.tl" ] && cmp -s "$tmp/$name.tl" "$tmp/$name.vl" ||
		fail "$name: the text's lanes and busy shares are not -v's: text
$(cat "$tmp/$name.tl")
-v:
$(cat "$tmp/$name.vl")"
}

# the demo: four client threads wait on three workers
same_busy demo "$tmp/ilog.txt"
t=$tmp/demo.txt
checks_ran
head -1 "$t" | grep -Eq "^$tmp/ilog.txt: [0-9]+ events, [0-9]+ ops and [0-9]+ calls of 5 op types, 7 lanes \(4 clients, 3 workers\), [0-9.]+ s \(" ||
	fail "header: $(head -1 "$t")"
for op in rmsnorm fused_add_rmsnorm silu_and_mul softmax mm; do
	checks_ran
	sed -n '/^top ops by time/,/^$/p' "$t" | grep -Eq "^  $op +[0-9]+ +[0-9.]+ [mu ]?s +[0-9.]+% " ||
		fail "op $op not in the top ops: $(cat "$t")"
done
checks_ran
kind_lines "$t" client | awk '{ sub(/%/, "", $1); if ($1 + 0 <= 50) bad = 1 } END { exit bad || NR != 4 }' ||
	fail "four clients, each busy above 50%: $(kind_lines "$t" client)"
checks_ran
kind_lines "$t" worker | awk '{ sub(/%/, "", $1); if ($1 + 0 >= 50) bad = 1 } END { exit bad || NR != 3 }' ||
	fail "three workers, each busy below 50%: $(kind_lines "$t" worker)"
checks_ran
kind_lines "$t" client | awk '{ sub(/%/, "", $3); if (!($3 + 0 > 50 && $3 + 0 <= 100)) bad = 1 } END { exit bad }' ||
	fail "the clients mostly wait on workers: $(kind_lines "$t" client)"
checks_ran
grep -Eq "^where the time went: clients [0-9]+% busy, of which [0-9]+% waiting on workers; workers [0-9]+% busy \((rmsnorm|fused_add_rmsnorm|silu_and_mul|softmax|mm) [0-9]+%, " "$t" ||
	fail "where the time went: $(grep where "$t")"

# --lanes worker leaves the workers
same_busy workers "$tmp/ilog.txt" --lanes worker
checks_ran
[ "$(kind_lines "$tmp/workers.txt" worker | wc -l)" -eq 3 ] &&
	[ "$(kind_lines "$tmp/workers.txt" '[a-z]+' | wc -l)" -eq 3 ] &&
	grep -q "^where the time went: workers [0-9]*% busy (" "$tmp/workers.txt" ||
	fail "--lanes worker: $(cat "$tmp/workers.txt")"

# -o x.txt picks text; stdout stays empty
check "$bin" "$tmp/ilog.txt" -o "$tmp/x.txt" >"$tmp/out" 2>"$tmp/err" || fail "-o x.txt: $(cat "$tmp/err")"
checks_ran
cmp -s "$tmp/x.txt" "$t" && [ ! -s "$tmp/out" ] && grep -q "^mate-visualize: wrote $tmp/x.txt: text summary$" "$tmp/err" ||
	fail "-o x.txt writes the text: $(head -3 "$tmp/x.txt") / $(cat "$tmp/err")"

# GT's format: a dispatcher, five clients, four workers
same_busy gt "$gt"
checks_ran
head -1 "$tmp/gt.txt" | grep -q ": 392 events, 83 ops and 63 calls of 8 op types, 10 lanes (5 clients, 4 workers), " &&
	grep -Eq "^  randn +32 " "$tmp/gt.txt" && [ "$(kind_lines "$tmp/gt.txt" worker | wc -l)" -eq 4 ] &&
	kind_lines "$tmp/gt.txt" dispatcher | grep -q " dispatcher$" &&
	grep -q "^where the time went: clients .* waiting on workers; workers " "$tmp/gt.txt" ||
	fail "GT's log: $(cat "$tmp/gt.txt")"

# no event: the error and status of a picture, and no file
: >"$tmp/empty.log"
"$bin" "$tmp/empty.log" -o "$tmp/e.png" 2>"$tmp/e.png.err"
want=$?
"$bin" "$tmp/empty.log" -o "$tmp/e.txt" 2>"$tmp/e.txt.err"
got=$?
checks_ran
[ "$want" -eq 1 ] && [ "$got" -eq "$want" ] && [ ! -e "$tmp/e.txt" ] && cmp -s "$tmp/e.png.err" "$tmp/e.txt.err" ||
	fail "no event: exit $got, want $want: $(cat "$tmp/e.txt.err")"
checks_done
