#!/bin/sh
# test_record_man.sh: mate-record(1) and the --memlog part of mate-replay(1) are mandoc -Tlint clean, and every option of mate-record --help is in the page.
if ! command -v mandoc >/dev/null 2>&1; then
	echo "SKIP: no mandoc"
	exit 77
fi
fail=0
for page in "$top_srcdir/man/mate-record.1" "$top_srcdir/man/mate-replay.1"; do
	if ! mandoc -Tlint -W warning "$page" >lint.$$ 2>&1; then
		echo "FAIL: mandoc -Tlint $page:"
		cat lint.$$
		fail=1
	fi
done
rm -f lint.$$
for opt in $("$top_builddir/src/record/mate-record" --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "Fl ${opt#-}" "$top_srcdir/man/mate-record.1" || { echo "FAIL: $opt not in mate-record.1"; fail=1; }
done
for opt in --memlog --allocator --repeat; do
	"$top_builddir/src/replay/mate-replay" --help | grep -q -- "$opt" || { echo "FAIL: $opt not in mate-replay --help"; fail=1; }
	grep -q -- "Fl ${opt#-}" "$top_srcdir/man/mate-replay.1" || { echo "FAIL: $opt not in the page"; fail=1; }
done
[ $fail = 0 ] && echo "all passed"
exit $fail
