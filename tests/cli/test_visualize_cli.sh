#!/bin/sh
# visualize_cli.sh: mate-visualize's command line: help, version, misuse (exit 2), errors as "mate-visualize: what: why" (exit 1), stdout only with -o -.
bin="$top_builddir/mate-visualize"
demo="$top_srcdir/tests/fixtures/gt-logs/demo.log"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mate-vis-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0

ok() { n=$((n + 1)); }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL: $*" >&2; }
# expect STATUS STDERR-PATTERN CMD...: exit status and a line of stderr
expect() {
	want=$1 pat=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$* exited $got, want $want: $(cat "$tmp/err")"
	elif [ -n "$pat" ] && ! grep -q -- "$pat" "$tmp/err"; then
		fail "$*: stderr lacks '$pat': $(cat "$tmp/err")"
	else
		ok
	fi
}

expect 0 "" "$bin" --help
grep -q "^Usage: mate-visualize" "$tmp/out" && ok || fail "--help prints usage on stdout"
for o in --output --format --dpi --width --height --title --from --to --lanes --verbose --quiet --version; do
	grep -q -- "$o" "$tmp/out" && ok || fail "--help lacks $o"
done
expect 0 "" "$bin" --version
grep -q "^mate-visualize (mate) " "$tmp/out" && grep -q "^libmate " "$tmp/out" && ok ||
	fail "--version prints the tool's and the library's version: $(cat "$tmp/out")"

# misuse: exit 2, what was wrong, a pointer to --help
expect 2 "mate-visualize: no instruction log given" "$bin"
grep -q "Try 'mate-visualize --help'" "$tmp/err" && ok || fail "misuse points to --help"
expect 2 "mate-visualize: --dpi: 'lots': expected a number" "$bin" --dpi lots "$demo"
expect 2 "mate-visualize: --dpi: '5'" "$bin" --dpi 5 "$demo"
expect 2 "mate-visualize: --width: '0'" "$bin" --width 0 "$demo"
expect 2 "mate-visualize: --format: 'gif'" "$bin" --format gif "$demo"
expect 2 "cannot tell the format of '$tmp/x.gif'" "$bin" "$demo" -o "$tmp/x.gif"
expect 2 "mate-visualize: --to 1 must be after --from 2" "$bin" --from 2 --to 1 "$demo"
expect 2 "mate-visualize: lanes regex: (" "$bin" --lanes "(" "$demo" -o "$tmp/r.png"
expect 2 "^mate-visualize: unknown option '--bogus'$" "$bin" --bogus "$demo"
expect 2 "too large a picture" "$bin" --width 300 --height 300 "$demo" -o "$tmp/big.png"

# errors: exit 1, "mate-visualize: what: why"
expect 1 "mate-visualize: cannot open: $tmp/none.log: No such file or directory" "$bin" "$tmp/none.log" -o "$tmp/a.png"
[ ! -e "$tmp/a.png" ] && ok || fail "nothing written when nothing was read"
expect 1 "mate-visualize: $tmp/nodir/a.png: cannot create" "$bin" "$demo" -o "$tmp/nodir/a.png"
: >"$tmp/empty.log"
expect 1 "empty.log: no event lines found" "$bin" "$tmp/empty.log" -o "$tmp/e.png"
# an API log (what FlashInfer users have) is not an instruction log: the message says which is
expect 1 "not the API log (MATE_LOGDEST)" "$bin" "$top_srcdir/tests/fixtures/mate-reference/level1.log" \
    -o "$tmp/api.png"
# --lanes that match nothing: nothing drawn, exit 1 (as an empty --from/--to window)
expect 1 "nothing to draw: no lane matches --lanes 'nomatch'" "$bin" --lanes nomatch "$demo" -o "$tmp/n.png"
[ ! -e "$tmp/n.png" ] && ok || fail "--lanes matching nothing wrote $tmp/n.png"
# a vector picture is sized in inches and points, not pixels
expect 0 "wrote $tmp/v.svg: SVG, 16 x 10 in (1152 x 720 pt)" "$bin" "$demo" -o "$tmp/v.svg"
expect 0 "wrote $tmp/v.pdf: PDF, 16 x 10 in (1152 x 720 pt)" "$bin" "$demo" -o "$tmp/v.pdf"
# one bad log among good ones: the rest is drawn, exit 1
expect 1 "cannot open" "$bin" "$demo" "$tmp/none.log" -o "$tmp/b.png"
[ -s "$tmp/b.png" ] && ok || fail "the good log is still drawn"

# the default output is timeline.png in the current directory
(cd "$tmp" && "$bin" -q "$demo") && [ -s "$tmp/timeline.png" ] && ok || fail "default timeline.png"
# -q is quiet; the summary goes to stderr, never stdout
expect 0 "" "$bin" -q "$demo" -o "$tmp/q.png"
[ ! -s "$tmp/err" ] && [ ! -s "$tmp/out" ] && ok || fail "-q prints nothing"
expect 0 "wrote $tmp/s.svg" "$bin" "$demo" -o "$tmp/s.svg"
[ ! -s "$tmp/out" ] && ok || fail "no data on stdout without -o -"
grep -q "22 events, 4 ops and 5 calls of 3 op types, 4 lanes (2 clients, 1 worker)," "$tmp/err" && ok ||
	fail "summary counts: $(cat "$tmp/err")"
# -o - writes the picture to stdout
"$bin" -q "$demo" -o - >"$tmp/stdout.png" 2>"$tmp/err"
[ "$(head -c 8 "$tmp/stdout.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && ok ||
	fail "-o - writes a PNG to stdout"
"$bin" -q "$demo" -o - -f json | grep -q '"traceEvents"' && ok || fail "-o - -f json"
# stdin as '-'
"$bin" -q - -o "$tmp/in.png" <"$demo" && [ -s "$tmp/in.png" ] && ok || fail "reads stdin"

# a failed write never says "wrote" (a directory in the way, a full disk)
no_wrote() { ! grep -q "wrote" "$tmp/err" && ok || fail "$1: 'wrote' after a failure: $(cat "$tmp/err")"; }
mkdir "$tmp/dir.png" "$tmp/dir.json"
expect 1 "$tmp/dir.png is a directory: not replaced" "$bin" "$demo" -o "$tmp/dir.png"
no_wrote "a directory"
expect 1 "$tmp/dir.json is a directory: not replaced" "$bin" "$demo" -o "$tmp/dir.json"
no_wrote "a directory (json)"
if [ -w /dev/full ]; then
	"$bin" "$demo" -o - >/dev/full 2>"$tmp/err"
	[ $? -eq 1 ] && grep -q "No space left on device" "$tmp/err" && ok || fail "/dev/full: $(cat "$tmp/err")"
	no_wrote "/dev/full"
	"$bin" "$demo" -o - -f json >/dev/full 2>"$tmp/err"
	[ $? -eq 1 ] && ok || fail "/dev/full (json) exits 1"
	no_wrote "/dev/full (json)"
fi
# a window with no events in it: a warning in the log's terms, exit 1, no file
expect 1 "nothing to draw: no event from 100 s to 200 s (seconds since the recording started" \
	"$bin" "$demo" --from 100 --to 200 -o "$tmp/w.png"
[ ! -e "$tmp/w.png" ] && ok || fail "an empty window writes no picture"
expect 1 "nothing to draw: no event from 100 s to the end .*; the events run from 0.823 s to 0.832 s" "$bin" "$demo" --from 100 -o "$tmp/w.json"
[ ! -e "$tmp/w.json" ] && ok || fail "an empty window writes no JSON"
# malformed lines before the first good one are reported too
{ printf '0.1 | #1 | RECV | CLIENT a | x\n  0.05s | garbage\n'; cat "$demo"; } >"$tmp/pre.log"
expect 0 "pre.log:1: malformed line skipped: not an event line" "$bin" "$tmp/pre.log" -o "$tmp/pre.png"
grep -q "pre.log:2: malformed line skipped" "$tmp/err" && ok || fail "line 2 reported: $(cat "$tmp/err")"
# Perfetto JSON from raw invalid UTF-8 (overlong, surrogate, past U+10FFFF) is valid JSON
printf '  0.1s | #1 | RECV | CLIENT a\355\240\200 | k\340\200\200 | 1.0KB | call=1 op=x\364\220\200\200\n  0.2s | #2 | SEND | CLIENT a\355\240\200 | k | 1.0KB | call=1\n' >"$tmp/utf.log"
expect 0 "" "$bin" "$tmp/utf.log" -o "$tmp/utf.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$tmp/utf.json" 2>"$tmp/err" && ok ||
	fail "invalid UTF-8 gives invalid JSON: $(tail -1 "$tmp/err")"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
