#!/bin/sh
# test_recorder_enospc.sh: a full disk (ENOSPC from the LD_PRELOAD shim tests/fakes/enospc-shim.c) stops
# dumping with exactly one warning; mate-demo's results, exit status and API log are unchanged.
# FORMAT=pt (test_recorder_enospc_pt.sh) dumps .pt files.
: "${top_builddir:=.}"
FORMAT=${FORMAT:-safetensors}
shim="$top_builddir/tests/.libs/enospc-shim.so"
demo="$top_builddir/examples/mate-demo"
check="$top_builddir/tests/dump-check"

if [ ! -f "$shim" ]; then
	echo "SKIP: $shim was not built: --disable-shared builds (the sanitizer build) make no shared libraries to preload"
	exit 77
fi
. "$top_srcdir/tests/checks.sh"
checks_tmpdir enospc
fail=0
st=1
[ "$FORMAT" = pt ] && st=0

export MATE_DEMO_CHECKSUM=1 MATE_DEMO_THREADS=4 MATE_DEMO_ROUNDS=3 MATE_DUMP_SAFETENSORS=$st

# 1. the reference: no recording
MATE_LOGLEVEL=0 "$demo" > "$tmp/out0" 2> "$tmp/err0"
rc0=$?
# 2. level 10 on a roomy disk: how many dumps and log lines a whole run makes
MATE_LOGLEVEL=10 MATE_LOGDEST="$tmp/log-full" MATE_DUMP_DIR="$tmp/full" "$demo" > "$tmp/out-full" 2> "$tmp/err-full"
rc_full=$?
full=$(ls "$tmp/full" | grep -c _call)
ok() { checks_ran; if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; fail=1; checks_failed; fi; }
ok '[ "$rc0" -eq 0 ] && [ "$rc_full" -eq "$rc0" ] && cmp -s "$tmp/out0" "$tmp/out-full"' \
    "level 10 on a roomy disk: results and exit status unchanged ($full dumps)"
ok '"$check" "$tmp/full"' "the dumps of the roomy run are whole"

# 2b. the fallbacks of atomic file output: no O_TMPFILE (named temporary files, renamed), and
# O_TMPFILE files that cannot be linked (copied to a named temporary file, renamed)
for switch in MATE_TEST_NO_TMPFILE MATE_TEST_NO_FLINK; do
	rm -rf "$tmp/fb"
	env "$switch=1" LD_PRELOAD="$shim" MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$tmp/fb" \
		"$demo" > "$tmp/out-fb" 2> "$tmp/err-fb"
	rc_fb=$?
	ok '[ "$rc_fb" -eq 0 ] && cmp -s "$tmp/out0" "$tmp/out-fb" &&
	    [ "$(ls "$tmp/fb" | grep -c _call)" -eq "$full" ] && ! grep -q "^mate:" "$tmp/err-fb" &&
	    "$check" "$tmp/fb" > /dev/null && [ "$(find "$tmp/fb" -name "*.tmp.*" | wc -l)" -eq 0 ]' \
	    "with $switch=1: every dump whole, no temporary names left"
done

# 3. the same with a few bytes left on the dump folder's disk: the disk fills at
# different points of a dump (a tensor file, a record, a new folder)
for budget in 3000 17000 40000 75000; do
	rm -rf "$tmp/dumps" "$tmp/hits" "$tmp/log"
	MATE_TEST_ENOSPC_DIR="$tmp/dumps" MATE_TEST_ENOSPC_BYTES=$budget MATE_TEST_ENOSPC_HITS="$tmp/hits" \
	MATE_LOGLEVEL=10 MATE_LOGDEST="$tmp/log" MATE_DUMP_DIR="$tmp/dumps" LD_PRELOAD="$shim" \
		"$demo" > "$tmp/out1" 2> "$tmp/err1"
	rc1=$?
	if grep -q 'does not come first\|cannot be preloaded' "$tmp/err1"; then
		echo "SKIP: this build cannot preload the shim:"; cat "$tmp/err1"; exit 77
	fi
	dumps=$(ls "$tmp/dumps" 2>/dev/null | grep -c _call)
	echo "--- $budget bytes left: $dumps of $full dumps made, $(wc -l < "$tmp/hits" 2>/dev/null || echo 0) calls refused with ENOSPC, exit status $rc1"
	echo "stdout: $(cat "$tmp/out1")"
	echo "stderr:"; sed 's/^/  /' "$tmp/err1"
	ok '[ "$rc1" -eq "$rc0" ]' "the exit status is unchanged"
	ok 'cmp -s "$tmp/out0" "$tmp/out1"' "the results (stdout checksum) are unchanged"
	ok '[ "$(grep -c "^mate:" "$tmp/err1")" -eq 1 ]' "exactly one warning from mate"
	ok 'grep -q "^mate: dumping stopped.*No space left on device" "$tmp/err1"' "the warning says the disk is full"
	ok '[ -s "$tmp/hits" ] && [ "$dumps" -lt "$full" ]' "the shim cut dumping short"
	ok '[ "$(grep -c "MATE API Call:" "$tmp/log")" -eq "$(grep -c "MATE API Call:" "$tmp/log-full")" ] &&
	    [ "$(grep -c "^Output value:" "$tmp/log")" -eq "$(grep -c "^Output value:" "$tmp/log-full")" ]' \
	    "the API log goes on after dumping stopped"
	if [ -d "$tmp/dumps" ]; then
		ok '"$check" --torn-last-ok --max-unlogged 4 "$tmp/dumps"' \
		    "what was dumped before the disk filled is whole (files parse, records are whole lines)"
	fi
done
checks_done
