#!/bin/bash
# stress.sh [-n RUNS] [-l LOADS] [-j JOBS] BUILDDIR TEST...: runs each TEST (as make check
# names it) RUNS times (default 10): RUNS rounds of BUILDDIR's `make -j JOBS check` of all of
# them (2 at a time by default), with LOADS busy loops (default 2) beside them the whole
# time. The tests that depend on time (screens, sockets, signals, timers, child processes,
# monitors) must pass on a loaded machine, under a sanitizer build several times slower than
# a plain one, every time. A failing run's log is printed whole (and kept as
# BUILDDIR/stress-NAME-RUN.log); the closing line is "N passed, M failed". Exits 1 when a
# run failed or skipped.
set -u
runs=10 loads=2 jobs=2
while getopts n:l:j: o; do
	case $o in
	n) runs=$OPTARG ;;
	l) loads=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*) echo "usage: stress.sh [-n RUNS] [-l LOADS] [-j JOBS] BUILDDIR TEST..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: stress.sh [-n RUNS] [-l LOADS] [-j JOBS] BUILDDIR TEST..." >&2; exit 2; }
build=$1
shift
[ -f "$build/Makefile" ] || { echo "stress.sh: $build has no Makefile" >&2; exit 2; }

pids=
stop_loads() { [ -n "$pids" ] && kill $pids 2>/dev/null; wait 2>/dev/null; pids=; }
trap stop_loads EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$loads"); do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
done

pass=0 fail=0 t0=$(date +%s)
declare -A ok
for t in "$@"; do ok[$t]=0; done
for i in $(seq "$runs"); do
	r0=$(date +%s)
	# one round: every test once, $jobs at a time, as make check runs them
	make -C "$build" -s -j"$jobs" check TESTS="$*" >/dev/null 2>&1
	bad=
	for t in "$@"; do
		# the names make check gives: tests/cli/x.sh -> tests/cli/x.log and .trs
		log=$build/$(echo "$t" | sed 's/\.\(sh\|py\)$//').log
		trs=${log%.log}.trs
		if grep -q '^:test-result: PASS' "$trs" 2>/dev/null; then
			ok[$t]=$((ok[$t] + 1))
			continue
		fi
		bad="$bad $t"
		keep=$build/stress-$(basename "${log%.log}")-$i.log
		cp "$log" "$keep" 2>/dev/null
		echo "==== FAIL: $t, run $i of $runs ($(sed -n 's/^:test-result: //p' "$trs" 2>/dev/null || echo 'no result')); its log, $keep:"
		cat "$log" 2>/dev/null || echo "(no log: $log)"
		echo "==== end of $t's log"
	done
	echo "stress: run $i of $runs: $(($(date +%s) - r0)) s${bad:+, failed:$bad}"
done
for t in "$@"; do
	printf 'stress: %-45s %d/%d passed\n' "$t" "${ok[$t]}" "$runs"
	pass=$((pass + ok[$t]))
	fail=$((fail + runs - ok[$t]))
done
echo "stress: $# tests, $runs runs each ($jobs at a time), $loads busy loops beside them, $(($(date +%s) - t0)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
