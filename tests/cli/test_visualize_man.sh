#!/bin/sh
# visualize_man.sh: man/mate-visualize.1 is mandoc -Tlint clean, documents every option of --help, and its examples run.
page="$top_srcdir/man/mate-visualize.1"
bin="$top_builddir/mate-visualize"
command -v mandoc >/dev/null 2>&1 || { echo "SKIP: no mandoc (apt-get install mandoc)"; exit 77; }
. "$top_srcdir/tests/checks.sh"
fails=0
out=$(mandoc -Tlint "$page" 2>&1) || true
check [ -z "$out" ] || { echo "FAIL: mandoc -Tlint: $out" >&2; fails=$((fails + 1)); checks_failed; }
text=$(mandoc -Tascii "$page" | col -b 2>/dev/null || mandoc -Tascii "$page")
for o in $("$bin" --help | grep -o -- '--[a-z]*' | sort -u); do
	checks_ran
	echo "$text" | grep -q -- "$o" || { echo "FAIL: the page lacks $o" >&2; fails=$((fails + 1)); checks_failed; }
done
# the examples, run on GT's demo log as trace.log
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mate-vis-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$top_srcdir/tests/fixtures/gt-logs/demo.log" "$tmp/trace.log"
ln -s "$top_builddir" "$tmp/build"  # the recording example runs build/bin/mate-demo
n=0
mandoc -Tascii "$page" | sed -n 's/^ *\$ \(mate-visualize .*\)$/\1/p; s/^ *\$ \(cat .*\)$/\1/p;
    s/^ *\$ \(MATE_[A-Z_]*=.*\)$/\1/p' >"$tmp/examples.txt"
# every mate-record option the page names is one mate-record has
for o in $(echo "$text" | grep -o -- 'mate-record --[a-z-]*' | sed 's/^mate-record //' | sort -u); do
	checks_ran
	"$top_builddir/src/record/mate-record" --help | grep -q -- "$o" ||
		{ echo "FAIL: the page names mate-record $o, which mate-record lacks" >&2; fails=$((fails + 1)); checks_failed; }
done
while IFS= read -r cmd; do
	n=$((n + 1))
	checks_ran
	(cd "$tmp" && PATH="$top_builddir:$PATH" sh -c "$cmd") >/dev/null 2>"$tmp/err" ||
		{ echo "FAIL: example '$cmd': $(cat "$tmp/err")" >&2; fails=$((fails + 1)); checks_failed; }
done <"$tmp/examples.txt"
check [ "$n" -ge 6 ] || { echo "FAIL: found $n examples" >&2; fails=$((fails + 1)); checks_failed; }
for f in run.log run.png timeline.png workers.svg trace.json.gz both.pdf; do
	check [ -s "$tmp/$f" ] || { echo "FAIL: an example did not write $f" >&2; fails=$((fails + 1)); checks_failed; }
done
echo "examples run: $n, failures: $fails"
checks_done
