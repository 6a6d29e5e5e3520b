#!/bin/bash
# tests/ci.sh: the full test run: make check, make distcheck, make check under ASan/UBSan, and the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${MATE_FUZZ_SECONDS:-60}

step() { printf '\n==== %s ====\n' "$*"; }

step "autoreconf"
autoreconf -fi

step "build and make check"
rm -rf _build && mkdir _build && cd _build
../configure
make -j"$jobs"
make -j"$jobs" check || { cat test-suite.log; exit 1; }

step "make distcheck"
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS="--without-cuda"
cd ..

step "sanitizers (ASan + UBSan, clang)"
rm -rf _build-san && mkdir _build-san && cd _build-san
../configure CC=clang --enable-sanitizers --without-cuda --disable-shared
make -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	make -j"$jobs" check || { cat test-suite.log; exit 1; }
cd ..

step "fuzz targets (${fuzz_seconds}s each)"
rm -rf _build-fuzz && mkdir _build-fuzz && cd _build-fuzz
../configure CC=clang --enable-fuzzing --without-cuda --disable-shared
make -j"$jobs" fuzz
for f in fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	corpus="../fuzz/corpus/${name#fuzz_}"
	mkdir -p "corpus-$name"
	echo "fuzzing $name for ${fuzz_seconds}s"
	"$f" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -max_len=65536 \
		"corpus-$name" ${corpus:+$( [ -d "$corpus" ] && echo "$corpus")} 2>&1 | tail -n 3
done
echo "ci: all steps passed"
