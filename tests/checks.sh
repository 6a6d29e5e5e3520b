# checks.sh: counts a shell test's checks and prints its closing line (sourced).
#
#   check CMD [ARGS...]  runs CMD as one check and returns its status; the test's own
#                        failure function reports a failure and calls checks_failed
#                        (CMD runs in this shell: not the head of a pipeline)
#   checks_ran           counts one check that the test runs and reports itself (a
#                        pipeline, an if ... else ...)
#   checks_failed        counts one failed check
#   checks_done          prints "N passed, M failed", the line tests/check-driver.sh holds
#                        every test to, and exits 1 when a check failed or none ran, else 0
#   fail WHAT...         reports a failed check ("FAIL: WHAT..." on stderr) and counts it
#   fail_stop WHAT...    the same, then ends the test (checks_done)
#   checks_tmpdir NAME   makes the test's temporary folder, $tmp (mate-NAME.XXXXXX under
#                        $TMPDIR or /tmp), removed when the shell exits (a test that must
#                        also stop processes sets its own trap, which removes "$tmp" too);
#                        exits 99 where it cannot
#   checks_need CMD WHY  skips the test (77, "SKIP: WHY") where the command CMD is missing
#   wait_until CMD [ARGS...]  runs CMD every 0.1 s until it succeeds (status 0) or
#                        $MATE_TEST_WAIT seconds have passed (default 60: long enough for a
#                        sanitizer build on a loaded machine); returns CMD's last status.
#                        Every test that depends on time waits for the state it checks
#                        with it, never for a fixed time.
checks_run=0
checks_nfailed=0

check() {
	checks_run=$((checks_run + 1))
	"$@"
}

checks_ran() {
	checks_run=$((checks_run + 1))
}

checks_failed() {
	checks_nfailed=$((checks_nfailed + 1))
}

checks_done() {
	[ "$checks_run" -ge "$checks_nfailed" ] || checks_run=$checks_nfailed
	[ "$checks_run" -gt 0 ] || echo "0 checks ran" >&2
	echo "$((checks_run - checks_nfailed)) passed, $checks_nfailed failed"
	[ "$checks_nfailed" -eq 0 ] && [ "$checks_run" -gt 0 ] && exit 0
	exit 1
}

fail() {
	echo "FAIL: $*" >&2
	checks_failed
}

fail_stop() {
	fail "$@"
	checks_done
}

checks_tmpdir() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/mate-$1.XXXXXX") || exit 99
	trap 'rm -rf "$tmp"' EXIT
}

checks_need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "SKIP: $2"
	exit 77
}

wait_until() {
	wait_until_end=$(($(date +%s) + ${MATE_TEST_WAIT:-60}))
	while :; do
		"$@" && return 0
		[ "$(date +%s)" -lt "$wait_until_end" ] || { "$@"; return; }
		sleep 0.1
	done
}
