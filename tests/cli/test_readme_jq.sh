#!/bin/sh
# readme_jq.sh: the README's jq pipelines, run as printed on the demo's dumps, select what they say: the calls that failed or never finished, and the replays that went wrong (none: every completed call passes, every recorded failure fails again).
. "$top_srcdir/tests/checks.sh"
checks_need jq "no jq"
b=$top_builddir
checks_tmpdir readme-jq
PATH=$b/src/replay:$PATH
export PATH

MATE_LOGLEVEL=10 MATE_DUMP_DIR="$tmp/dumps" MATE_LOGDEST=/dev/null MATE_DEMO_THREADS=2 \
	MATE_DEMO_ROUNDS=1 "$b/examples/mate-demo" > /dev/null 2>&1 || fail "mate-demo failed"
nfailed=$(mate-list-dumps -q "$tmp/dumps" | grep -c '\[failed\]')
check [ "$nfailed" -ge 1 ] || fail "the demo recorded no failure"

grep '^    mate-list-dumps --jsonl dumps/ | jq' "$top_srcdir/README.md" > "$tmp/list.sh"
grep '^    mate-replay dumps/ --jsonl | jq' "$top_srcdir/README.md" > "$tmp/replay.sh"
check [ "$(wc -l < "$tmp/list.sh")" -eq 1 ] && [ "$(wc -l < "$tmp/replay.sh")" -eq 1 ] ||
	fail "the README's two jq lines: $(cat "$tmp/list.sh" "$tmp/replay.sh")"
(cd "$tmp" && sh list.sh) > "$tmp/list.out" 2> "$tmp/err"
check [ "$(wc -l < "$tmp/list.out")" -eq "$nfailed" ] && grep -q "^dumps/.*_call" "$tmp/list.out" ||
	fail "the failed calls' paths ($nfailed): $(cat "$tmp/list.out" "$tmp/err")"
(cd "$tmp" && sh replay.sh) > "$tmp/replay.out" 2> "$tmp/err"
check [ ! -s "$tmp/replay.out" ] || fail "the replays that went wrong (none): $(head -c 600 "$tmp/replay.out")"
checks_done
