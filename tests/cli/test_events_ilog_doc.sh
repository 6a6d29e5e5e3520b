#!/bin/sh
# events_ilog_doc.sh: every key=value field of an instruction log's details is described in mate.7's LIVE EVENTS entry for its event.
set -u
b=$top_builddir
page=$top_srcdir/man/mate.7
. "$top_srcdir/tests/checks.sh"
checks_tmpdir ilogdoc

# the demo makes calls, work on workers and a few deliberate failures
MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_INSTRUCTION_LOG=$tmp/il.log MATE_DEMO_ROUNDS=3 \
    "$b/examples/mate-demo" >/dev/null 2>"$tmp/demo.err" || fail "the demo failed: $(cat "$tmp/demo.err")"
# EVENT KEY, one a line, for each key the log's details carry (an error's text is not parsed)
grep -E '^ *[0-9]+\.[0-9]{6}s \| #[0-9]+ \| ' "$tmp/il.log" |
	awk -F' [|] ' '{ ev = $3; sub(/ +$/, "", ev); d = $NF; sub(/ error=.*/, " error=", d);
		n = split(d, w, " "); for (i = 1; i <= n; i++) if (w[i] ~ /^[a-z_]+=/) {
			sub(/=.*/, "", w[i]); print ev, w[i] } }' | sort -u >"$tmp/keys"
check [ "$(grep -c . "$tmp/keys")" -ge 8 ] || fail "too few keys in the log: $(cat "$tmp/keys")"
checks_ran
grep -q '^WORKER_RECV success$' "$tmp/keys" || fail "the demo's log has WORKER_RECV success=: $(cat "$tmp/keys")"
# the page's entry for an event: from its .It line to the next .It or .El
while read -r ev key; do
	entry=$(awk -v ev="$ev" '
		/^\.It Li / { on = 0; line = $0; gsub(/,/, " ", line); n = split(line, w, " ");
			for (i = 3; i <= n; i++) if (w[i] == ev) on = 1; if (on) print; next }
		/^\.(It|El)/ { on = 0 } on { print }' "$page")
	[ -n "$entry" ] || { fail "mate.7 has no entry for $ev"; continue; }
	checks_ran
	echo "$entry" | grep -q "$key=" || fail "mate.7's $ev entry does not describe $key="
done <"$tmp/keys"
checks_done
