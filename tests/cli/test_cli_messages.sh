#!/bin/sh
# cli_messages.sh: every tool's message for an unknown option or a missing value is one line under its own name (never libtool's .libs/lt- one) plus the --help hint, exit 2; `mate --help` and mate(1) list every verb; mate-list-dumps prints no "0 dumps" after the error that says why.
. "$top_srcdir/tests/checks.sh"
b=$top_builddir
checks_tmpdir cli-msg
export MATE_MONITOR_DIR="$tmp"   # mate-trace and mate-top see no other mate process

# misuse: one line naming the option, the hint, exit 2
for tool in src/mate/mate src/replay/mate-list-dumps src/replay/mate-replay src/record/mate-record src/bench/mate-bench \
	src/trace/mate-trace src/top/mate-top mate-visualize; do
	name=${tool##*/}
	"$b/$tool" --no-such-option > "$tmp/out" 2> "$tmp/err"
	rc=$?
	check [ "$rc" -eq 2 ] || fail "$name --no-such-option: exit $rc"
	check [ "$(grep -c . "$tmp/err")" -eq 2 ] && [ "$(grep -c "^$name: unknown option '--no-such-option'$" "$tmp/err")" -eq 1 ] &&
		grep -q "^Try '$name --help'" "$tmp/err" || fail "$name: $(cat "$tmp/err")"
	check sh -c '! grep -q -e "\.libs" -e "lt-" "$1"' sh "$tmp/err" || fail "$name names libtool's file: $(cat "$tmp/err")"
done
"$b/src/replay/mate-replay" -j > /dev/null 2> "$tmp/err"
check [ "$(head -1 "$tmp/err")" = "mate-replay: option '-j' needs a value" ] || fail "-j: $(cat "$tmp/err")"
"$b/mate-visualize" --output > /dev/null 2> "$tmp/err"
check [ "$(head -1 "$tmp/err")" = "mate-visualize: option '--output' needs a value" ] ||
	fail "--output: $(cat "$tmp/err")"
"$b/src/trace/mate-trace" -x > /dev/null 2> "$tmp/err"
check [ "$(head -1 "$tmp/err")" = "mate-trace: unknown option '-x'" ] || fail "-x: $(cat "$tmp/err")"
"$b/src/replay/mate-list-dumps" --help=x > /dev/null 2> "$tmp/err"
check [ "$(head -1 "$tmp/err")" = "mate-list-dumps: option '--help' takes no value" ] ||
	fail "--help=x: $(cat "$tmp/err")"

# mate-demo --help and `mate help demo` say what it is and run nothing; other arguments: exit 2
for cmd in "$b/examples/mate-demo --help" "$b/src/mate/mate help demo"; do
	PATH="$b/examples:$PATH" MATE_LOGLEVEL=0 $cmd > "$tmp/out" 2> "$tmp/err"
	rc=$?
	check [ $rc -eq 0 ] && grep -q "^usage: mate-demo" "$tmp/out" && ! grep -q "rounds done" "$tmp/out" "$tmp/err" ||
		fail "$cmd: exit $rc: $(cat "$tmp/out" "$tmp/err" | head -5)"
done
"$b/examples/mate-demo" --threads 3 > /dev/null 2> "$tmp/err"
check [ $? -eq 2 ] && grep -q "^usage: mate-demo" "$tmp/err" || fail "mate-demo --threads 3: $(cat "$tmp/err")"

# mate-bench on a folder: a file that cannot be read, exit 2 as mate-bench(1) says
"$b/src/bench/mate-bench" "$tmp" > /dev/null 2> "$tmp/err"
check [ $? -eq 2 ] && grep -q "^mate-bench: $tmp: Is a directory$" "$tmp/err" &&
	! grep -q "no entry" "$tmp/err" || fail "mate-bench DIR: $(cat "$tmp/err")"

# mate --help and mate(1): every verb mate ships
"$b/src/mate/mate" --help > "$tmp/help"
for verb in bench list-dumps record replay top trace visualize; do
	check grep -q "^  $verb  " "$tmp/help" || fail "mate --help lacks $verb"
	check grep -q "^\.It Cm $verb\$" "$top_srcdir/man/mate.1" || fail "mate(1) lacks $verb"
done

# mate-list-dumps of a missing folder: the error, exit 2, no "0 dumps"
"$b/src/replay/mate-list-dumps" "$tmp/nonexistent" > "$tmp/out" 2> "$tmp/err"
rc=$?
check [ "$rc" -eq 2 ] && [ "$(grep -c . "$tmp/err")" -eq 1 ] && grep -q "No such file" "$tmp/err" ||
	fail "mate-list-dumps nonexistent: exit $rc: $(cat "$tmp/err")"
mkdir "$tmp/empty"
"$b/src/replay/mate-list-dumps" "$tmp/empty" > "$tmp/out" 2> "$tmp/err"
check grep -q "^0 dumps in $tmp/empty\$" "$tmp/err" || fail "an empty folder: $(cat "$tmp/err")"

# stdout and stderr into one pipe (2>&1 | cat): every line whole, the summary last, not inside
# a line stdout still held (300 dumps: more than one buffer of lines)
python3 "$top_srcdir/bench/gen-dumps.py" "$tmp/many" 300 > /dev/null
"$b/src/replay/mate-list-dumps" "$tmp/many" 2>&1 | cat > "$tmp/both"
check [ "$(grep -c '_call[0-9]*: ' "$tmp/both")" -eq 300 ] && [ "$(wc -l < "$tmp/both")" -eq 301 ] &&
	tail -n 1 "$tmp/both" | grep -q "^300 dumps in $tmp/many: " ||
	fail "2>&1 | cat: lines spliced: $(grep -n 'dumps in' "$tmp/both" | head -3)"
checks_done
