#!/bin/sh
# test_harness.sh: the harness of the C unit tests (tests/test.h): one case runs by name and only its checks run, -l lists the cases, an unknown name fails saying so, a failed check and a crash name their case; the converted tests answer the same way; the Python (mate_test.py) and shell (checks.sh) helpers.
. "$top_srcdir/tests/checks.sh"
t=$top_builddir/tests
demo=$t/harness-demo
checks_tmpdir harness
# run PROG ARGS...: its stdout in $tmp/out, stderr in $tmp/err, exit status in $st
run() { "$@" > "$tmp/out" 2> "$tmp/err"; st=$?; }
closing() { grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/out" | tail -n 1; }

# -l: the cases, one a line, in the order the file defines them
run "$demo" -l
check [ "$st" -eq 0 ] || fail "-l exited $st"
check [ "$(cat "$tmp/out")" = "$(printf 'one\ntwo\nsometimes\nhelpers')" ] || fail "-l listed: $(cat "$tmp/out")"

# one case by name: only its 3 checks run
run "$demo" two
check [ "$st" -eq 0 ] || fail "'two' exited $st: $(cat "$tmp/err")"
check [ "$(closing)" = "3 passed, 0 failed" ] || fail "'two' ended: $(closing)"
check grep -qx 'case two' "$tmp/err" || fail "'two' did not say it ran: $(cat "$tmp/err")"
check [ "$(grep -c '^case ' "$tmp/err")" -eq 1 ] || fail "'two' ran other cases: $(cat "$tmp/err")"

# two cases, named in any order: both run, in the file's order
run "$demo" two one
check [ "$(closing)" = "5 passed, 0 failed" ] || fail "'two one' ended: $(closing)"
check [ "$(grep '^case ' "$tmp/err" | tr '\n' ' ')" = "case one case two " ] || fail "'two one' ran: $(cat "$tmp/err")"

# all of them: the sum of the cases, the helpers' checks among them
run "$demo" helpers
check [ "$st" -eq 0 ] || fail "'helpers' exited $st: $(cat "$tmp/err")"
nh=$(closing); nh=${nh%% *}
run "$demo"
check [ "$st" -eq 0 ] || fail "the whole demo exited $st: $(cat "$tmp/err")"
check [ "$(closing)" = "$((2 + 3 + 2 + nh)) passed, 0 failed" ] || fail "the whole demo ended: $(closing)"

# a name that is no case: exit 2, said, and nothing run
run "$demo" one nosuch
check [ "$st" -eq 2 ] || fail "an unknown case exited $st"
check grep -q 'no case named "nosuch"' "$tmp/err" || fail "an unknown case said: $(cat "$tmp/err")"
check [ -z "$(closing)" ] || fail "an unknown case still ran cases: $(cat "$tmp/out")"
run "$demo" -x
check [ "$st" -eq 2 ] || fail "an unknown option exited $st"
check grep -q '^usage: ' "$tmp/err" || fail "an unknown option said: $(cat "$tmp/err")"
run "$demo" -h
check [ "$st" -eq 0 ] && grep -q '^usage: harness-demo ' "$tmp/out" || fail "-h: $st, $(cat "$tmp/out")"

# a failed check names its file, line and case; the end names the case again
run env MATE_HARNESS_FAIL=1 "$demo"
check [ "$st" -eq 1 ] || fail "a failing case exited $st"
check grep -Eq '^[^ ]*harness-demo\.c:[0-9]+: sometimes: getenv\("MATE_HARNESS_FAIL"\) != NULL == 0 failed' "$tmp/err" ||
	fail "the failure does not name its case: $(cat "$tmp/err")"
check grep -qx 'failed cases: sometimes' "$tmp/err" || fail "no list of failed cases: $(cat "$tmp/err")"
check [ "$(closing)" = "$((2 + 3 + 1 + nh)) passed, 1 failed" ] || fail "a failing case ended: $(closing)"

# a crash: the log's last case is the one that crashed
run env MATE_HARNESS_CRASH=1 "$demo"
check [ "$st" -gt 128 ] || fail "a crashing case exited $st"
check [ "$(grep '^case ' "$tmp/err" | tail -n 1)" = "case sometimes" ] || fail "a crash's log: $(cat "$tmp/err")"

# the unit tests answer the same way: cases listed, one run alone, a wrong name refused
run "$t/test_pickle" -l
check grep -qx memo "$tmp/out" || fail "test_pickle -l: $(cat "$tmp/out")"
run "$t/test_pickle" memo
check [ "$st" -eq 0 ] || fail "test_pickle memo exited $st: $(cat "$tmp/err")"
n1=$(closing); n1=${n1%% *}
check [ "$(grep '^case ' "$tmp/err")" = "case memo" ] || fail "test_pickle memo ran: $(grep '^case ' "$tmp/err")"
run "$t/test_pickle" containers
n2=$(closing); n2=${n2%% *}
run "$t/test_pickle" containers memo
n12=$(closing); n12=${n12%% *}
check [ "${n1:-0}" -gt 0 ] && [ "${n2:-0}" -gt 0 ] && [ "$((n1 + n2))" = "${n12:-0}" ] ||
	fail "test_pickle: memo $n1 checks, containers $n2, both $n12"
for p in test_activity test_atomic_file test_dtype test_dump_read test_elf_cuda \
	test_events test_ilog test_kernels test_memlog test_pickle test_pt_read \
	test_pread_big test_pt_write test_recorder_crash test_recorder_dump \
	test_recorder_fmt test_recorder_stats test_replay test_safetensors test_tensor \
	test_timeline test_value test_wqueue; do
	run "$t/$p" -l
	check [ "$st" -eq 0 ] && [ -s "$tmp/out" ] && ! grep -qv "^[a-z0-9_]*$" "$tmp/out" || fail "$p -l: $st, $(cat "$tmp/out")"
	run "$t/$p" no_such_case
	check [ "$st" -eq 2 ] && grep -q 'no case named' "$tmp/err" || fail "$p no_such_case: $st, $(cat "$tmp/err")"
done

# Python tests: check() inside case() names the case
run env PYTHONPATH="$top_srcdir/tests" python3 -c 'from mate_test import case, check, done
with case("alpha"):
    check(False, "deliberate")
check(False, "outside")
done()'
check [ "$st" -eq 1 ] || fail "a failing Python check exited $st"
check grep -qx 'FAIL: alpha: deliberate' "$tmp/err" || fail "a Python failure in a case: $(cat "$tmp/err")"
check grep -qx 'FAIL: outside' "$tmp/err" || fail "a Python failure outside a case: $(cat "$tmp/err")"
# Python tests of cases (run_cases): one runs by name, -l lists, an unknown name exits 2
cat > "$tmp/cases.py" << 'EOF'
import mate_test as m
def test_a():
    m.check(True, "a")
def test_b():
    m.check(True, "b")
    m.check(True, "b again")
m.run_cases(test_a, test_b)
EOF
run env PYTHONPATH="$top_srcdir/tests" python3 "$tmp/cases.py" b
check [ "$st" -eq 0 ] && [ "$(closing)" = "2 passed, 0 failed" ] || fail "a Python case by name: $st, $(closing)"
run env PYTHONPATH="$top_srcdir/tests" python3 "$tmp/cases.py" -l
check [ "$(tr '\n' ' ' < "$tmp/out")" = "a b " ] || fail "a Python -l: $(cat "$tmp/out")"
run env PYTHONPATH="$top_srcdir/tests" python3 "$tmp/cases.py" c
check [ "$st" -eq 2 ] && grep -q 'no case named "c"' "$tmp/err" || fail "an unknown Python case: $st, $(cat "$tmp/err")"

# every Python test is a program of named cases (it ends with run_cases()), but those
# on this list, which are waiting for their turn; a file that joins the rule leaves the list
not_yet_cases="tests/interop/test_replay_shrink.py tests/interop/test_flashinfer_attn.py
	tests/interop/test_flashinfer_attn_cascade.py tests/interop/test_flashinfer_attn_trtllm.py"
for f in $(cd "$top_srcdir" && find tests -name 'test_*.py' | sort); do
	case " $(echo $not_yet_cases) " in
	*" $f "*)
		check sh -c '! grep -Eq "^ *run_cases\(" "$1"' sh "$top_srcdir/$f" ||
			fail "$f has named cases: take it off not_yet_cases" ;;
	*)
		check grep -Eq '^ *run_cases\(' "$top_srcdir/$f" ||
			fail "$f: no run_cases() (tests/mate_test.py): its checks have no named cases" ;;
	esac
done
# every script test that publishes (MATE_MONITOR) or runs mate-trace or mate-top names a
# runtime folder of its own (MATE_MONITOR_DIR): it sees no other suite's or user's processes
# (the C tests' is test_live_start()'s)
for f in $(cd "$top_srcdir" && grep -lE 'MATE_MONITOR=[^"]|MATE_MONITOR="[^0"]|mate-trace|mate-top' \
	tests/cli/*.sh tests/cli/*.py tests/interop/*.sh tests/interop/*.py); do
	check grep -q MATE_MONITOR_DIR "$top_srcdir/$f" || fail "$f: monitors without a MATE_MONITOR_DIR of its own"
done

# shell tests (checks.sh): fail counts and says, fail_stop ends the test, checks_tmpdir's
# folder goes at exit, checks_need skips
cat > "$tmp/checks.sh" << 'EOF'
. "$top_srcdir/tests/checks.sh"
checks_tmpdir harness-sh
echo "$tmp" > "$1"
check true || fail "not said"
check false || fail "deliberate"
[ -n "${2:-}" ] && { check false || fail_stop "stopped"; }
check true || fail "not said"
checks_done
EOF
run sh "$tmp/checks.sh" "$tmp/inner"
check [ "$st" -eq 1 ] && [ "$(closing)" = "2 passed, 1 failed" ] || fail "a failing shell check: $st, $(closing)"
check [ "$(cat "$tmp/err")" = "FAIL: deliberate" ] || fail "a shell failure said: $(cat "$tmp/err")"
check [ -s "$tmp/inner" ] && [ ! -e "$(cat "$tmp/inner")" ] || fail "checks_tmpdir left $(cat "$tmp/inner")"
run sh "$tmp/checks.sh" "$tmp/inner" stop
check [ "$st" -eq 1 ] && [ "$(closing)" = "1 passed, 2 failed" ] || fail "fail_stop: $st, $(closing)"
check [ "$(tail -n 1 "$tmp/err")" = "FAIL: stopped" ] || fail "fail_stop said: $(cat "$tmp/err")"
run sh -c '. "$top_srcdir/tests/checks.sh"; checks_need mate-no-such-command "no such command"; echo ran'
check [ "$st" -eq 77 ] && [ "$(cat "$tmp/out")" = "SKIP: no such command" ] || fail "checks_need: $st, $(cat "$tmp/out")"
checks_done
