#!/bin/sh
# build_bin.sh: a build folder's bin/ holds every tool (one per man/*.1 page) and mate-demo, each of which runs from there, and `mate VERB` finds its verbs through it.
. "$top_srcdir/tests/checks.sh"
bin=$top_builddir/bin

for page in "$top_srcdir"/man/*.1; do
	tool=$(basename "$page" .1)
	check [ -x "$bin/$tool" ] || { fail "no $tool in bin/"; continue; }
	v=$("$bin/$tool" --version 2>&1)
	check [ $? -eq 0 ] && echo "$v" | grep -q "^$tool (mate) " || fail "bin/$tool --version: $v"
done
check [ -x "$bin/mate-demo" ] || fail "no mate-demo in bin/"
out=$(MATE_LOGLEVEL=0 MATE_DEMO_THREADS=1 MATE_DEMO_ROUNDS=1 "$bin/mate-demo" 2>&1)
check [ $? -eq 0 ] || fail "bin/mate-demo: $out"
# mate VERB through PATH, as after an install
v=$(PATH="$bin:/usr/bin:/bin" mate list-dumps --version 2>&1)
check [ $? -eq 0 ] && echo "$v" | grep -q "^mate-list-dumps (mate) " || fail "mate list-dumps: $v"
checks_done
