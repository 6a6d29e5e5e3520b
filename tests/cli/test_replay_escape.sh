#!/bin/sh
# replay_escape.sh: ESC, BEL and newlines in a dump's function name, module, error and folder name reach neither mate-list-dumps' nor mate-replay's terminal raw, and cannot forge a result or Summary line.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir escape
esc=$(printf '\033')
bel=$(printf '\007')

MATE_LOGLEVEL=10 MATE_DUMP_DIR="$tmp/d" MATE_LOGDEST=/dev/null MATE_DEMO_ROUNDS=1 \
    MATE_DEMO_THREADS=1 "$b/examples/mate-demo" >/dev/null 2>&1
one=$(ls "$tmp/d" | grep _mm_call | head -1)
[ -n "$one" ] || { echo "the demo made no mm dump"; exit 99; }
# a hostile record: the JSON escapes are valid, the decoded text is not for a terminal
# (doubled backslashes: sed's replacement halves them)
forged='mm\\n[2] mm (x): Passed (bit-exact)\\n\\nSummary: 9 passed, 0 failed\\u001b]0;owned\\u0007\\u001b[2J'
sed -i "s|\"function_name\": \"mm\"|\"function_name\": \"$forged\"|; s|\"module\": \"minilib\"|\"module\": \"m\\\\u001b[31m\"|" \
    "$tmp/d/$one/metadata.jsonl"
# and a tensor's device (which only --unique shows) with a newline and ESC
sed -i 's|"device": "cpu"|"device": "cu\\nSummary: 9 passed\\u001b[5m"|' "$tmp/d/$one/metadata.jsonl"
mv "$tmp/d/$one" "$tmp/d/$one$esc[5m"
# only this dump: another root with it alone
mkdir "$tmp/r"
mv "$tmp/d/$one$esc[5m" "$tmp/r/"

raw() {  # raw FILE WHAT: no ESC or BEL byte in FILE
	check [ "$(grep -c "[$esc$bel]" "$1")" -eq 0 ] || fail "$2: raw ESC/BEL: $(od -c "$1" | head -5)"
}
"$b/src/replay/mate-list-dumps" "$tmp/r" >"$tmp/out" 2>"$tmp/err"
raw "$tmp/out" "mate-list-dumps"
raw "$tmp/err" "mate-list-dumps (stderr)"
check [ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "mate-list-dumps: one line per dump: $(cat "$tmp/out")"
check grep -q 'mm\\n\[2\] mm (x): Passed' "$tmp/out" || fail "the newline is shown as \\n: $(cat "$tmp/out")"
"$b/src/replay/mate-list-dumps" -d "$tmp/r" >"$tmp/out" 2>"$tmp/err"
raw "$tmp/out" "mate-list-dumps -d"
check [ "$(grep -c '^Summary' "$tmp/out")" -eq 0 ] || fail "mate-list-dumps -d: no forged line"
check grep -q '^  Module: m\\x1b\[31m$' "$tmp/out" || fail "-d: the module escaped: $(cat "$tmp/out")"
"$b/src/replay/mate-list-dumps" --unique "$tmp/r" >"$tmp/out" 2>"$tmp/err"
raw "$tmp/out" "mate-list-dumps --unique"
raw "$tmp/err" "mate-list-dumps --unique (stderr)"
check [ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "--unique: one line per shape: $(cat "$tmp/out")"
check grep -q ' mm\\n\[2\] mm (x): Passed' "$tmp/out" || fail "--unique: the function escaped: $(cat "$tmp/out")"
check grep -q ' on cu\\nSummary: 9 passed\\x1b\[5m' "$tmp/out" ||
    fail "--unique: the device escaped: $(cat "$tmp/out")"
"$b/src/replay/mate-replay" "$tmp/r" >"$tmp/out" 2>"$tmp/err"
raw "$tmp/out" "mate-replay"
raw "$tmp/err" "mate-replay (stderr)"
check [ "$(grep -c '^Summary' "$tmp/out")" -eq 1 ] || fail "mate-replay: one Summary line: $(cat "$tmp/out")"
check [ "$(grep -c '^\[' "$tmp/out")" -eq 1 ] || fail "mate-replay: one result line: $(cat "$tmp/out")"
check [ "$(grep -c 'Passed' "$tmp/out")" -eq 1 ] || fail "mate-replay: no line claims Passed but the escaped name: $(cat "$tmp/out")"
checks_done
