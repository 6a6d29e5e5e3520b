#!/bin/sh
# recorder_logdest.sh: a MATE_LOGDEST that cannot be opened sends the log to stderr with one warning, as mate.7, libmate.3 and mate-record.1 say.
set -u
b=$top_builddir
s=$top_srcdir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir logdest

# the code: the demo (4 threads) at level 1, its log file in a directory that does not exist
MATE_LOGLEVEL=1 MATE_LOGDEST=$tmp/no/such/api_%i.log MATE_DEMO_ROUNDS=2 \
    "$b/examples/mate-demo" >"$tmp/out" 2>"$tmp/err"
check [ $? -eq 0 ] || fail "the demo exits 0: $(cat "$tmp/err")"
n=$(grep -c "^mate: cannot open MATE_LOGDEST '$tmp/no/such/api_[0-9]*\.log': No such file or directory; logging to stderr$" "$tmp/err")
check [ "$n" -eq 1 ] || fail "one warning naming the file with its pid, got $n: $(head -3 "$tmp/err")"
checks_ran
grep -q "MATE API Logging" "$tmp/err" || fail "the log's header goes to stderr"
check [ "$(grep -c 'rmsnorm' "$tmp/err")" -ge 8 ] || fail "the calls are logged on stderr: $(cat "$tmp/err")"
checks_ran
grep -q "MATE API Logging\|rmsnorm" "$tmp/out" && fail "nothing of the log on stdout: $(head -3 "$tmp/out")"
check [ -e "$tmp/no" ] && fail "no directory is made"

# the pages say the same
entry() {  # the text of page's ".It Ev VAR" or ".Ss NAME" entry, to the next one
	awk -v m="$2" 'index($0, m) == 1 { on = 1; next } on && /^\.(It|Ss|Sh|El)/ { exit } on' "$1" | tr '\n' ' '
}
e=$(entry "$s/man/mate.7" ".It Ev MATE_LOGDEST")
checks_ran
echo "$e" | grep -q "cannot be opened gets one warning, and the log goes to standard error" ||
	fail "mate.7's MATE_LOGDEST says where the log goes when its file cannot be opened: $e"
e=$(entry "$s/man/libmate.3" ".Ss Failures")
checks_ran
echo "$e" | grep -q "the log goes to standard error when its file .Pq Ev MATE_LOGDEST cannot be opened" ||
	fail "libmate.3's Failures say the same: $e"
e=$(entry "$s/man/mate-record.1" ".It Fl o Ar dest")
checks_ran
echo "$e" | grep -q "standard error, with a warning, when the file cannot be opened" ||
	fail "mate-record.1's -o says the same: $e"
checks_done
