# record-common.sh: shared setup of the mate-record shell tests (sourced).
. "$top_srcdir/tests/checks.sh"
RECORD="$top_builddir/src/record/mate-record"
PRELOAD="$top_builddir/.libs/libmate-preload.so"
if [ ! -f "$PRELOAD" ]; then
	echo "SKIP: no libmate-preload.so (a static-only build)"
	exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mate-record-test-XXXXXX") || exit 99
trap 'rm -rf "$WORK"' EXIT
unset MATE_LOGLEVEL MATE_LOGDEST MATE_DUMP_DIR MATE_MEMLOG MATE_RECORD_PRELOAD

# expect_status WANT GOT WHAT
expect_status() {
	check [ "$1" = "$2" ] || fail "$3: exit status $2, expected $1"
}

# record_meta DUMP KEY...: the dump record's input_metadata values under KEY..., on one line
record_meta() {
	python3 - "$@" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1] + "/metadata.jsonl").read().splitlines()[-1])
print(" ".join(str(rec["input_metadata"][k]) for k in sys.argv[2:]))
PY
}

# finish: the closing line "N passed, M failed"; exits 1 when a check failed or none ran
finish() {
	checks_done
}
