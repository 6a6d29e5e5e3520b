#!/bin/sh
# test_run_demo_out.sh: examples/run-demo.sh --out never removes what it did not write: a folder of a user's files is refused before anything is built or removed, --clean removes a previous run's files alone.
. "$top_srcdir/tests/checks.sh"
demo=$top_srcdir/examples/run-demo.sh
checks_tmpdir demo-out

# A build folder that builds nothing and has no mate-demo: were the script
# to get past its --out check, it would stop at once (after the removal
# this test is about).
mkdir "$tmp/build"
printf 'all:\n\t@:\n' > "$tmp/build/Makefile"
run() { bash "$demo" --no-install --build "$tmp/build" "$@" > "$tmp/out" 2>&1; }

# a user's folder: refused, exit 2, every file where it was
mkdir -p "$tmp/home/mate_dumps"
echo "my notes" > "$tmp/home/notes.txt"
echo "mine" > "$tmp/home/mate_dumps/keep.txt"
run --out "$tmp/home"
rc=$?
check [ "$rc" -eq 2 ] || fail "a folder of other files: exit $rc: $(cat "$tmp/out")"
check [ "$(cat "$tmp/home/notes.txt" 2>&1)" = "my notes" ] && [ -f "$tmp/home/mate_dumps/keep.txt" ] ||
	fail "the user's files are gone: $(ls -R "$tmp/home")"
check grep -q "not a previous demo output" "$tmp/out" || fail "no reason given: $(cat "$tmp/out")"
# the same from inside it (--out .)
(cd "$tmp/home" && bash "$demo" --no-install --build "$tmp/build" --out . > "$tmp/out" 2>&1)
rc=$?
check [ "$rc" -eq 2 ] && [ -f "$tmp/home/notes.txt" ] || fail "--out .: exit $rc, $(ls "$tmp/home")"
# a file
echo data > "$tmp/file"
run --out "$tmp/file"
rc=$?
check [ "$rc" -eq 2 ] && [ "$(cat "$tmp/file")" = data ] || fail "--out FILE: exit $rc"

# a previous run's output (its marker) with a user's file added: --clean
# removes the run's files, keeps the user's
mkdir -p "$tmp/prev/mate_dumps/call1"
for f in .mate-demo api.log trace.log timeline.png run-demo.log replay-failed.txt; do
	echo x > "$tmp/prev/$f"
done
echo "added later" > "$tmp/prev/mine.txt"
run --out "$tmp/prev" --clean
rc=$?
check [ "$rc" -eq 0 ] || fail "--clean: exit $rc: $(cat "$tmp/out")"
check [ "$(ls -A "$tmp/prev" 2>&1)" = mine.txt ] || fail "after --clean: $(ls -A "$tmp/prev" 2>&1)"
# a user's own recording under the demo's names, given with --out: refused
mkdir -p "$tmp/rec/mate_dumps/call1"
echo x > "$tmp/rec/api.log"
run --out "$tmp/rec"
rc=$?
check [ "$rc" -eq 2 ] && [ -f "$tmp/rec/api.log" ] && [ -d "$tmp/rec/mate_dumps/call1" ] ||
	fail "a recording named api.log and mate_dumps/: exit $rc, $(ls -A "$tmp/rec" 2>&1)"
# the default folder (BUILD/demo) of a run before the marker: recognised, and cleaned away
mkdir -p "$tmp/build/demo/mate_dumps/call1"
echo x > "$tmp/build/demo/api.log"
echo x > "$tmp/build/demo/timeline.png"
run --clean
rc=$?
check [ "$rc" -eq 0 ] && [ ! -e "$tmp/build/demo" ] ||
	fail "an old default output: exit $rc, $(ls -A "$tmp/build/demo" 2>&1)"
# a new folder: the build step says what it does before it runs (it is silent for minutes)
run --out "$tmp/fresh"
check grep -q "^\[2/[0-9]*\] build: making mate in $tmp/build (make -j[0-9]*: a few minutes the first time) \.\.\.\$" \
    "$tmp/out" || fail "no line before the build: $(head -5 "$tmp/out")"
checks_done
