#!/bin/sh
# test_exports.sh: libmate exports exactly the functions its installed headers declare MATE_API: no internal name leaks out of libmate.so (or, in a static build, out of libmate.a with default visibility), and no declared function is missing.
. "$top_srcdir/tests/checks.sh"
checks_tmpdir exports

# The declared names: each statement that starts with MATE_API, joined up to
# its ';', gives the identifier before its '(' (a function) or before the ';'
# (a variable).
for h in "$top_srcdir"/lib/include/mate*.h; do
	awk '/^MATE_API[ \t]/ { s = ""; on = 1 }
	     on { s = s " " $0; if (index($0, ";")) { on = 0; print s } }' "$h"
done | sed -e 's/\/\*.*\*\///g' -e 's/(.*//' -e 's/;.*//' -e 's/[ \t]*$//' \
	-e 's/.*[^A-Za-z0-9_]//' | LC_ALL=C sort -u > "$tmp/declared"
checks_ran
if [ "$(wc -l < "$tmp/declared")" -lt 100 ]; then
	fail "only $(wc -l < "$tmp/declared") MATE_API declarations in lib/include"
fi

# The exported names of a file readelf lists: defined, global or weak, of
# default visibility (a static archive keeps hidden symbols global). Names
# that start with '_' are the toolchain's (_init, __bss_start, a sanitizer's
# __odr_asan_gen_*): no name of mate's does.
exported() {
	readelf -W "$1" "$2" | awk '$5 ~ /^(GLOBAL|WEAK)$/ && $6 == "DEFAULT" && $7 != "UND" &&
	    $7 != "Ndx" { sub(/@.*/, "", $8); print $8 }' | grep -v '^_' | LC_ALL=C sort -u
}

compare() { # what, export list
	checks_ran
	LC_ALL=C comm -23 "$2" "$tmp/declared" > "$tmp/extra"
	LC_ALL=C comm -13 "$2" "$tmp/declared" > "$tmp/missing"
	if [ -s "$tmp/extra" ]; then
		fail "$1 exports $(wc -l < "$tmp/extra") names no installed header declares MATE_API:" \
		    "$(tr '\n' ' ' < "$tmp/extra")"
	fi
	checks_ran
	if [ -s "$tmp/missing" ]; then
		fail "$1 lacks $(wc -l < "$tmp/missing") functions the installed headers declare:" \
		    "$(tr '\n' ' ' < "$tmp/missing")"
	fi
	echo "$1: $(wc -l < "$2") exported, $(wc -l < "$tmp/declared") declared"
}

found=0
so=$top_builddir/.libs/libmate.so
if [ -f "$so" ]; then
	found=1
	exported --dyn-syms "$so" > "$tmp/so"
	compare libmate.so "$tmp/so"
fi
a=$top_builddir/.libs/libmate.a
if [ -f "$a" ]; then
	found=1
	exported --syms "$a" > "$tmp/a"
	compare libmate.a "$tmp/a"
fi
checks_ran
[ "$found" = 1 ] || fail "neither $so nor $a was built"
checks_done
