#!/bin/sh
# test_record_man.sh: mate-record(1) and the --memlog part of mate-replay(1) are mandoc -Tlint clean, and every option of mate-record --help is in the page.
if ! command -v mandoc >/dev/null 2>&1; then
	echo "SKIP: no mandoc"
	exit 77
fi
. "$top_srcdir/tests/checks.sh"
fail=0
for page in "$top_srcdir/man/mate-record.1" "$top_srcdir/man/mate-replay.1"; do
	if ! check mandoc -Tlint -W warning "$page" >lint.$$ 2>&1; then
		echo "FAIL: mandoc -Tlint $page:"
		cat lint.$$
		fail=1; checks_failed
	fi
done
rm -f lint.$$
for opt in $("$top_builddir/src/record/mate-record" --help | grep -o -- '--[a-z-]*' | sort -u); do
	check grep -q -- "Fl ${opt#-}" "$top_srcdir/man/mate-record.1" || { echo "FAIL: $opt not in mate-record.1"; fail=1; checks_failed; }
done
for opt in --memlog --allocator --repeat; do
	checks_ran
	"$top_builddir/src/replay/mate-replay" --help | grep -q -- "$opt" || { echo "FAIL: $opt not in mate-replay --help"; fail=1; checks_failed; }
	check grep -q -- "Fl ${opt#-}" "$top_srcdir/man/mate-replay.1" || { echo "FAIL: $opt not in the page"; fail=1; checks_failed; }
done
checks_done
