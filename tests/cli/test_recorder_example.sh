#!/bin/sh
# test_recorder_example.sh: libmate(3)'s example is examples/libmate-example.c verbatim, it builds (make check)
# and records what the page says; the man pages are mandoc -Tlint clean.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
prog="$top_builddir/examples/libmate-example"
work=$(mktemp -d "${TMPDIR:-/tmp}/mate-example.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
. "$top_srcdir/tests/checks.sh"
fail=0

if command -v mandoc >/dev/null 2>&1; then
	if check mandoc -Tlint -W warning "$top_srcdir/man/mate.7" "$top_srcdir/man/libmate.3" "$top_srcdir/man/mate-replay.1" >"$work/lint" 2>&1; then
		echo "ok: mandoc -Tlint -W warning is clean"
	else
		echo "FAIL: mandoc -Tlint:"; cat "$work/lint"; fail=1; checks_failed
	fi
else
	echo "note: mandoc not installed; lint skipped"
fi

# The EXAMPLES block of libmate.3, unescaped, is the example program.
awk '/^\.Sh EXAMPLES/ { ex = 1 } ex && /^\.Bd -literal$/ { on = 1; next } on && /^\.Ed/ { exit } on { print }' \
    "$top_srcdir/man/libmate.3" | sed -e 's/\\e/\\/g' -e 's/^\\&//' >"$work/from-man.c"
if check cmp -s "$work/from-man.c" "$top_srcdir/examples/libmate-example.c"; then
	echo "ok: libmate.3's example is examples/libmate-example.c"
else
	echo "FAIL: libmate.3's example differs from examples/libmate-example.c:"
	diff -u "$top_srcdir/examples/libmate-example.c" "$work/from-man.c" | head -20; fail=1; checks_failed
fi

out=$(cd "$work" && MATE_LOGLEVEL=3 "$prog" 2>"$work/err")
rc=$?
checks_ran
case "$out" in
*"MATE API Call: rmsnorm"*"Default parameters (not explicitly provided):"*"  eps= [DEFAULT]"*"Output value:"*"y[0][3] = 1.4606"*)
	check [ $rc -eq 0 ] && echo "ok: level 3 log and result" || { echo "FAIL: exit $rc"; fail=1; checks_failed; } ;;
*)	echo "FAIL: level 3 output:"; echo "$out" | head -40; fail=1; checks_failed ;;
esac
check [ -s "$work/err" ] && { echo "FAIL: stderr at level 3:"; cat "$work/err"; fail=1; checks_failed; }

(cd "$work" && MATE_LOGLEVEL=10 MATE_LOGDEST=stderr "$prog" >/dev/null 2>"$work/err10")
n=$(ls -d "$work"/mate_dumps/*_rmsnorm_call000* 2>/dev/null | wc -l)
statuses=$(sed -e 's/.*"execution_status": "\([a-z_]*\)".*/\1/' "$work/mate_dumps/session.jsonl" | tr '\n' ' ')
if check [ "$n" -eq 2 ] && [ "$statuses" = "inputs_saved completed inputs_saved failed " ]; then
	echo "ok: level 10 dumps ($statuses)"
else
	echo "FAIL: level 10: $n dumps, statuses '$statuses'"; fail=1; checks_failed
fi
# the outputs file holds what the function returned (MATE's and FlashInfer's
# replay compare its keys with the return value); out= goes to the in-place file
check grep -q '"output_tensor_keys": \["result"\]' "$work/mate_dumps/session.jsonl" ||
	{ echo "FAIL: the outputs are not exactly the returned value"; fail=1; checks_failed; }
check grep -q '"inplace_tensor_keys": \["kwarg_out"\], .*"inplace_file": "inplace.pt"' "$work/mate_dumps/session.jsonl" ||
	{ echo "FAIL: the in-place out= tensor is not in the in-place file"; fail=1; checks_failed; }
check ls "$work"/mate_dumps/*_rmsnorm_call0001/inplace.pt >/dev/null 2>&1 ||
	{ echo "FAIL: no inplace.pt"; fail=1; checks_failed; }
checks_done
