#!/bin/sh
# replay_shard.sh: --shard K/N splits a dump root into N stable shares by dump name (every dump
# in one share, the same on every run), for mate-list-dumps and mate-replay; mate-replay --merge
# of the N shares' --jsonl output (run as background jobs, and by GNU parallel) gives the text,
# the JSON lines, the summary and the exit status of one process replaying the root; it refuses
# a missing, doubled or foreign share and files that are not shares; bad specs are exit 2.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
checks_tmpdir replay-shard
replay=$b/src/replay/mate-replay
list=$b/src/replay/mate-list-dumps

MATE_LOGLEVEL=10 MATE_DUMP_DIR="$tmp/dumps" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
	MATE_DEMO_ROUNDS=1 "$b/examples/mate-demo" > /dev/null 2>&1 || fail_stop "mate-demo failed"
cd "$tmp" || fail_stop "cd $tmp"

# (a) the 4 shares of the listing are a partition of it, and the same on a second run
"$list" -q dumps > full || fail_stop "mate-list-dumps dumps"
n=$(wc -l < full)
check [ "$n" -ge 10 ] || fail "the demo's dumps: $n"
for k in 0 1 2 3; do
	"$list" -q --shard $k/4 dumps > list-$k || fail "mate-list-dumps --shard $k/4"
	"$list" -q --shard $k/4 dumps | cmp -s - list-$k || fail "share $k/4 differs on a second run"
	grep -Fxf list-$k full | cmp -s - list-$k || fail "share $k/4 is not in the root's order"
done
check [ "$(cat list-0 list-1 list-2 list-3 | sort | uniq -d)" = "" ] || fail "a dump in two shares"
cat list-0 list-1 list-2 list-3 | sort > union
sort full | cmp -s - union || fail "the shares' union is not the listing: $(sort full | diff - union)"
# split, not all in one (the names hold their time: the shares' sizes vary from run to run)
check [ "$(for k in 0 1 2 3; do [ -s list-$k ] && echo $k; done | wc -l)" -ge 2 ] ||
	fail "$n dumps in one share: $(wc -l list-?)"
# --jsonl and --details take the share too
check [ "$("$list" -q --jsonl --shard 2/4 dumps | wc -l)" -eq "$(wc -l < list-2)" ] ||
	fail "--jsonl --shard 2/4"

# (b) the shares replayed as background jobs, merged: one process's report, byte for byte
strip() { sed 's/"seconds":[^,}]*,\{0,1\}//' "$@"; }  # the one figure that is a time
merge_check() {  # WHAT ROOT: part-*.jsonl against one process replaying ROOT
	"$replay" "$2" > one.txt 2> /dev/null
	one_rc=$?
	"$replay" --jsonl "$2" > one.jsonl 2> one.err
	"$replay" --merge part-0.jsonl part-1.jsonl part-2.jsonl part-3.jsonl > merged.txt 2> merged.err
	rc=$?
	check [ "$rc" -eq "$one_rc" ] || fail "$1: --merge exits $rc, one process $one_rc: $(cat merged.err)"
	# the root's order, so the same bytes even unsorted
	cmp -s merged.txt one.txt || fail "$1: merged text: $(diff one.txt merged.txt | head -5)"
	"$replay" --merge --jsonl part-3.jsonl part-1.jsonl part-0.jsonl part-2.jsonl > merged.jsonl \
		2> merged.err
	rc=$?
	check [ "$rc" -eq "$one_rc" ] || fail "$1: --merge --jsonl exits $rc, one process $one_rc"
	strip merged.jsonl > a; strip one.jsonl > b
	sort a | cmp -s - "$(sort b > b.sorted; echo b.sorted)" ||
		fail "$1: merged JSON lines, sorted: $(diff a b | head -5)"
	cmp -s a b || fail "$1: merged JSON lines not in the root's order"
	cmp -s merged.err one.err || fail "$1: summary $(cat merged.err), one process $(cat one.err)"
}
for k in 0 1 2 3; do
	"$replay" --jsonl --shard $k/4 dumps > part-$k.jsonl 2> /dev/null &
done
wait
merge_check "background jobs" dumps
last=$(tail -n 1 part-2.jsonl)
check expr "$last" : '{"shard":"2/4","roots":\[".*/dumps"\],"version":"[^"]*","listed":'"$n"',"selected":'"$n"',"dumps":[0-9]*,"listing":"[0-9a-f]\{16\}"}$' > /dev/null ||
	fail "share 2/4's closing line: $last"
# a share with no dumps closes too, exit 0 (the selection is not empty)
for k in $(seq 0 63); do
	[ -z "$("$list" -q --shard $k/64 dumps)" ] && break
done
"$replay" --jsonl --shard $k/64 dumps > empty.jsonl 2> empty.err
rc=$?
check [ $rc -eq 0 ] && [ "$(wc -l < empty.jsonl)" -eq 1 ] && grep -q '"dumps":0,' empty.jsonl ||
	fail "empty share $k/64: exit $rc, $(cat empty.jsonl empty.err)"

# with GNU parallel, as the man page runs it
if command -v parallel > /dev/null 2>&1; then
	# its own folder, not ~/.parallel: the test writes nothing outside $tmp
	rm -f part-*.jsonl
	PARALLEL_HOME="$tmp/.parallel" parallel --will-cite "$replay" --jsonl --shard {}/4 dumps '>' part-{}.jsonl '2>/dev/null' \
		::: 0 1 2 3
	merge_check "GNU parallel" dumps
	checks_ran
else
	echo "note: no GNU parallel (Debian's parallel): the shares ran as background jobs only" >&2
fi

# the exit status of a failing replay: a dump whose recorded outputs were damaged
cp -r dumps bad
f=$(ls -d bad/*_mm_* | head -n 1)/outputs.pt
printf '\377\377\377\377\377\377\377\377' | dd of="$f" bs=1 seek=$(($(wc -c < "$f") / 2)) \
	conv=notrunc 2> /dev/null
for k in 0 1 2 3; do
	"$replay" --jsonl --shard $k/4 bad > part-$k.jsonl 2> /dev/null &
done
wait
merge_check "a failing call" bad
check [ "$one_rc" -eq 1 ] || fail "the damaged root replays with exit $one_rc"
# nothing selected: exit 1 both ways
for k in 0 1 2 3; do
	"$replay" --jsonl --include nosuch --shard $k/4 dumps > part-$k.jsonl 2> /dev/null
done
"$replay" --merge part-0.jsonl part-1.jsonl part-2.jsonl part-3.jsonl > /dev/null 2> err
check [ $? -eq 1 ] && grep -q "no dumps selected" err || fail "nothing selected: $(cat err)"

# (c) refusals: exit 2 and a message
for k in 0 1 2 3; do
	"$replay" --jsonl --shard $k/4 dumps > part-$k.jsonl 2> /dev/null
	"$replay" --jsonl --shard $k/4 bad > bad-$k.jsonl 2> /dev/null
done
refused() {  # WHAT PATTERN FILE...
	what=$1 pat=$2
	shift 2
	"$replay" --merge "$@" > out 2> err
	rc=$?
	check [ $rc -eq 2 ] && grep -q -- "$pat" err && [ ! -s out ] ||
		fail "$what: exit $rc, $(cat err out | head -3)"
}
refused "a missing share" "share 3/4 missing" part-0.jsonl part-1.jsonl part-2.jsonl
refused "a share twice" "share 1/4 twice" part-0.jsonl part-1.jsonl part-1.jsonl part-2.jsonl \
	part-3.jsonl
refused "two roots" "not shares of one replay: roots" part-0.jsonl part-1.jsonl bad-2.jsonl bad-3.jsonl
sed 's/"version":"[^"]*"/"version":"0.0.1"/' part-3.jsonl > v.jsonl
refused "two versions" "not shares of one replay: mate" part-0.jsonl part-1.jsonl part-2.jsonl v.jsonl
"$replay" --include rmsnorm --jsonl --shard 3/4 dumps > sel.jsonl 2> /dev/null
refused "two selections" "saw different calls" part-0.jsonl part-1.jsonl part-2.jsonl sel.jsonl
"$replay" --jsonl --shard 3/8 dumps > n8.jsonl 2> /dev/null
refused "two splits" "not shares of one replay: shares" part-0.jsonl part-1.jsonl part-2.jsonl n8.jsonl
# a dump in two files: a line of a share that has one put into the next share, in its place
# ({"index":N,...); the names hold their time, so which shares have dumps varies from run
# to run (share 1 had none once)
src=0
for k in 0 1 2 3; do [ -s list-$k ] && { src=$k; break; }; done
dst=$(((src + 1) % 4))
dn=$(($(wc -l < part-$dst.jsonl) - 1))
{ { head -n 1 part-$src.jsonl; sed '$d' part-$dst.jsonl; } | sort -t: -k2,2n; tail -n 1 part-$dst.jsonl |
	sed "s/\"dumps\":$dn,/\"dumps\":$((dn + 1)),/"; } > dup.jsonl
refused "a dump in two files" "call [0-9]* is in dup.jsonl and in part-$src.jsonl: overlapping" dup.jsonl \
	$(for k in 0 1 2 3; do [ $k -ne $dst ] && echo part-$k.jsonl; done)
"$replay" dumps > text.out 2> /dev/null
refused "text output" "not the --jsonl output" text.out part-1.jsonl part-2.jsonl part-3.jsonl
"$replay" --jsonl dumps > plain.jsonl 2> /dev/null
refused "--jsonl without --shard" "no closing" plain.jsonl
sed '$d' part-0.jsonl > cut.jsonl
refused "a share whose run did not finish" "no closing" cut.jsonl part-1.jsonl part-2.jsonl \
	part-3.jsonl
{ sed '$d' part-0.jsonl; echo '{"index":"x","dir":1}'; tail -n 1 part-0.jsonl; } > types.jsonl
refused "wrong types" "not a call" types.jsonl part-1.jsonl part-2.jsonl part-3.jsonl
{ head -c 2000000 /dev/zero | tr '\0' x; echo; } > huge.jsonl
refused "a 2 MB line" "over" huge.jsonl part-1.jsonl part-2.jsonl part-3.jsonl
refused "no such file" "nosuch" part-0.jsonl nosuch.jsonl
for spec in 3/2 0/0 -1/4 a/b 1/0 0/1000001 4/4 1/ /4 "1 /4" 1/4x; do
	for tool in "$replay" "$list"; do
		"$tool" --shard "$spec" dumps > out 2> err
		rc=$?
		check [ $rc -eq 2 ] && grep -q "bad value for --shard" err ||
			fail "--shard '$spec' (${tool##*/}): exit $rc, $(cat err)"
	done
done
"$replay" --merge > /dev/null 2> err
check [ $? -eq 2 ] || fail "--merge without a file"
"$replay" --merge --include mm part-0.jsonl > /dev/null 2> err
check [ $? -eq 2 ] || fail "--merge with --include"
"$replay" --shard 0/2 --first dumps > /dev/null 2> err
check [ $? -eq 2 ] || fail "--shard with --first"
"$list" --shard 0/2 --unique dumps > /dev/null 2> err
check [ $? -eq 2 ] || fail "mate-list-dumps --shard with --unique"
checks_done
