#!/bin/sh
# man_figures.sh: the man pages state no measured figure (a time in ns or us, a rate a second): those are bench/README.md's, with where they were measured; sample output in a display is not prose.
set -u
. "$top_srcdir/tests/checks.sh"
for page in "$top_srcdir"/man/*.[137]; do
	checks_ran
	awk '/^\.Bd/ { lit = 1 } /^\.Ed/ { lit = 0; next } !lit { print FILENAME ":" FNR ": " $0 }' "$page" |
		grep -E '[0-9][0-9,.]* ?(ns|us|µs)\b|[0-9][0-9,.]* ?[kKM]? ?(events|calls|dumps|times)( a|/| per) ?s(econd)?\b|[0-9.]+ ?[GM](FLOP|B|iB)/s' \
		>"${TMPDIR:-/tmp}/mate-figures.$$"
	while IFS= read -r line; do
		fail "a measured figure on a man page: $line"
	done <"${TMPDIR:-/tmp}/mate-figures.$$"
done
rm -f "${TMPDIR:-/tmp}/mate-figures.$$"
checks_done
