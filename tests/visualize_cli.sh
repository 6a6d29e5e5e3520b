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
expect 2 "unknown or incomplete option" "$bin" --bogus "$demo"
expect 2 "too large a picture" "$bin" --width 300 --height 300 "$demo" -o "$tmp/big.png"

# errors: exit 1, "mate-visualize: what: why"
expect 1 "mate-visualize: cannot open: $tmp/none.log: No such file or directory" "$bin" "$tmp/none.log" -o "$tmp/a.png"
[ ! -e "$tmp/a.png" ] && ok || fail "nothing written when nothing was read"
expect 1 "mate-visualize: $tmp/nodir/a.png: cannot create" "$bin" "$demo" -o "$tmp/nodir/a.png"
: >"$tmp/empty.log"
expect 1 "empty.log: no event lines found" "$bin" "$tmp/empty.log" -o "$tmp/e.png"
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
grep -q "22 events, 4 ops and 5 calls of 3 op types, 4 lanes (2 clients, 1 workers)" "$tmp/err" && ok ||
	fail "summary counts: $(cat "$tmp/err")"
# -o - writes the picture to stdout
"$bin" -q "$demo" -o - >"$tmp/stdout.png" 2>"$tmp/err"
[ "$(head -c 8 "$tmp/stdout.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && ok ||
	fail "-o - writes a PNG to stdout"
"$bin" -q "$demo" -o - -f json | grep -q '"traceEvents"' && ok || fail "-o - -f json"
# stdin as '-'
"$bin" -q - -o "$tmp/in.png" <"$demo" && [ -s "$tmp/in.png" ] && ok || fail "reads stdin"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
