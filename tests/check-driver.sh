#!/bin/sh
# check-driver.sh: automake's test-driver, holding every passing test to its closing line
# (the LOG_DRIVER of `make check`).
#
# usage: check-driver.sh TEST-DRIVER [test-driver's options] -- TEST [ARGS...]
#
# Every test ends with "N passed, M failed" on a line of its own (TEST_DONE in tests/test.h,
# done() in tests/mate_test.py, checks_done in tests/checks.sh). A test that exits 0 passes
# only when the last such line of its log has N > 0 and M = 0: one that ran no checks, stopped
# before its closing line or never prints one fails. Skips (77), hard errors (99) and failures
# are test-driver's verdicts, untouched.
driver=$1
shift
name= log= trs= color=no
prev=
for a in "$@"; do
	case $prev in
	--test-name) name=$a ;;
	--log-file) log=$a ;;
	--trs-file) trs=$a ;;
	--color-tests) color=$a ;;
	esac
	[ "$a" = -- ] && break
	prev=$a
done
out=$(${SHELL:-/bin/sh} "$driver" "$@")
st=$?
if [ -n "$trs" ] && [ -n "$log" ] && grep -q '^:test-result: PASS$' "$trs" 2>/dev/null; then
	last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	npass=${last%% *}
	why=
	if [ -z "$last" ]; then
		why='exit status 0 but no closing line "N passed, M failed"'
	elif [ "$npass" -eq 0 ]; then
		why="0 checks ran (its closing line: $last)"
	elif [ "$last" != "$npass passed, 0 failed" ]; then
		why="exit status 0 but its closing line says $last"
	fi
	if [ -n "$why" ]; then
		echo "check-driver.sh: FAIL: $why" >> "$log"
		{
			echo ":test-result: FAIL"
			echo ":global-test-result: FAIL"
			echo ":recheck: yes"
			echo ":copy-in-global-log: yes"
		} > "$trs"
		if [ "$color" = yes ]; then
			out=$(printf '\033[0;31mFAIL\033[m: %s (%s)' "$name" "$why")
		else
			out="FAIL: $name ($why)"
		fi
	fi
fi
[ -n "$out" ] && printf '%s\n' "$out"
exit $st
