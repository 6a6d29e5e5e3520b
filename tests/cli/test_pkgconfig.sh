#!/bin/sh
# test_pkgconfig.sh: libmate.pc carries what a static link needs: libmate.a, linked with the flags of the packages of its Requires.private and its Libs.private alone, gives a program that runs (libmate-example).
. "$top_srcdir/tests/checks.sh"
pc=$top_builddir/lib/libmate.pc
lib=$top_builddir/.libs/libmate.a
if ! command -v pkg-config > /dev/null; then
	echo "SKIP: no pkg-config"
	exit 77
fi
if [ ! -f "$lib" ]; then
	echo "SKIP: no libmate.a (--disable-static)"
	exit 77
fi
checks_tmpdir pc
# the compiler and flags of this build (a sanitizer build links its runtime)
mk() { sed -n "s/^$1 = //p" "$top_builddir/Makefile" | head -n 1; }
cc=$(mk CC)
flags="$(mk CFLAGS) $(mk LDFLAGS)"

requires=$(sed -n 's/^Requires.private: //p' "$pc")
private=$(sed -n 's/^Libs.private: //p' "$pc")
checks_ran
case " $requires " in *" libzmq "*) ;; *) fail "Requires.private lacks libzmq: '$requires'" ;; esac
deps=$(pkg-config --libs $requires) || { fail "pkg-config --libs $requires"; checks_done; }
# shellcheck disable=SC2086
if check $cc $flags -I"$top_srcdir/lib/include" "$top_srcdir/examples/libmate-example.c" "$lib" $deps $private \
	-o "$tmp/example" 2> "$tmp/err"; then
	check "$tmp/example" > "$tmp/out" 2>&1 || fail "the static example: $(cat "$tmp/out")"
else
	fail "a static link with libmate.pc's flags: $(tail -n 5 "$tmp/err")"
fi
checks_done
