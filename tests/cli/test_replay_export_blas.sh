#!/bin/sh
# test_replay_export_blas.sh: mate-replay --export of cblas_sgemm, cblas_dgemm and sgemm_ calls recorded by mate-record writes repro.c, a Makefile and the raw buffers; `make && ./repro` calls OpenBLAS on them and gives mate-replay's verdict, word for word: passed, and a planted wrong element of C as the same mismatch (exit 1); a non-empty folder and a truncated tensor file are refused, nothing written.
. "$top_srcdir/tests/tools/record-blas.sh"

# verdict DUMP: mate-replay's line for it, without its "[1] "
verdict() {
	"$REPLAY" "$1" 2>/dev/null | sed -n 's/^\[1\] //p'
}

# export_run DUMP DIR WANT: exports DUMP to DIR, builds and runs repro there;
# checks its exit status is WANT and its line is mate-replay's
export_run() {
	out=$("$REPLAY" --export "$1" -o "$2" 2>&1)
	expect_status 0 $? "export of $1: $out"
	for file in repro.c Makefile README A.bin B.bin C.bin C_expected.bin inputs.safetensors \
	    inplace.safetensors; do
		check [ -f "$2/$file" ] || fail "$2 has no $file"
	done
	(cd "$2" && make >make.log 2>&1) || fail "make in $2: $(cat "$2/make.log")"
	got=$(cd "$2" && ./repro)
	expect_status "$3" $? "$2/repro"
	want=$(verdict "$1")
	check [ -n "$want" ] && [ "$got" = "$want" ] ||
		fail "$2/repro says '$got', mate-replay '$want'"
}

for f in cblas_sgemm cblas_dgemm sgemm_ dgemm_; do
	d=$(ls -d dumps/*_${f}_call0001)
	export_run "$d" "pass-$f" 0
	check grep -q "^Call: *$f (module c\{0,1\}blas)" "pass-$f/README" ||
		fail "README of $f: $(cat "pass-$f/README")"
done
# a folder name that would end a C comment or string, or make a trigraph: the
# program still builds (-std=c99 -Werror: trigraphs on) and passes
d=$(ls -d dumps/*_cblas_dgemm_call0002)
odd='odd"*??=name\'
cp -r "$d" "$odd"
out=$("$REPLAY" --export "$odd" -o odd-ex 2>&1)
expect_status 0 $? "export of $odd: $out"
(cd odd-ex && make CFLAGS='-std=c99 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Werror' >make.log 2>&1) ||
	fail "make of a dump with an odd name: $(cat odd-ex/make.log)"
got=$(cd odd-ex && ./repro)
expect_status 0 $? "odd-ex/repro: $got"
check echo "$got" | grep -q "^cblas_dgemm (odd_.*name_): Passed (bit-exact)" || fail "odd-ex/repro says: $got"

# it runs from elsewhere with its folder named
(cd / && "$WORK/pass-cblas_sgemm/repro" "$WORK/pass-cblas_sgemm") >/dev/null
expect_status 0 $? "repro run from / with its folder"

# a planted wrong element of C after the call: row-major (cblas) and column-major (Fortran)
d=$(ls -d dumps/*_cblas_sgemm_call0001)
python3 "$SET" "$d/inplace.safetensors" arg_12 3 7 0.25 || fail "cannot plant a value"
export_run "$d" bad-cblas 1
check verdict "$d" | grep -q 'Mismatch: arg_12\[3, 7\]: expected' || fail "cblas_sgemm: $(verdict "$d")"
d=$(ls -d dumps/*_dgemm__call0001)
python3 "$SET" "$d/inplace.safetensors" arg_11 16 2 -1e-6 || fail "cannot plant a value"
export_run "$d" bad-dgemm 1
check verdict "$d" | grep -q 'Mismatch: arg_11\[16, 2\]' || fail "dgemm_: $(verdict "$d")"

# a non-empty folder is refused (exit 2), nothing in it touched, nothing left beside it
mkdir full && echo keep > full/mine
"$REPLAY" --export "$d" -o full >out.txt 2>&1
expect_status 2 $? "export into a non-empty folder"
check grep -q "full is not empty: refusing" out.txt || fail "no refusal: $(cat out.txt)"
check [ "$(ls full)" = mine ] && [ "$(cat full/mine)" = keep ] || fail "full/ was touched: $(ls full)"
check [ -z "$(ls -a | grep '\.export-')" ] || fail "a temporary folder is left: $(ls -a)"
# an empty one is used
mkdir empty
"$REPLAY" --export "$d" -o empty >/dev/null 2>&1
expect_status 0 $? "export into an empty folder"
check [ -f empty/repro.c ] || fail "empty/ has no repro.c"

# a truncated tensor file: a clear error, exit 2, nothing written
cp -r "$d" short
size=$(wc -c < short/inputs.safetensors)
head -c $((size / 2)) "$d/inputs.safetensors" > short/inputs.safetensors
"$REPLAY" --export short -o from-short >out.txt 2>&1
expect_status 2 $? "export of a dump with a truncated inputs file"
check grep -q "^mate-replay: .*inputs.safetensors" out.txt || fail "no error naming the file: $(cat out.txt)"
check [ ! -e from-short ] && [ -z "$(ls -a | grep '\.export-')" ] || fail "something was written: $(ls -a)"

# a function of the recorded program itself (MATE's reference: module __main__)
"$REPLAY" --export "$(ls -d "$top_srcdir"/tests/fixtures/mate-reference/mate_dumps/*_rmsnorm_call0001)" \
	-o main-fn >out.txt 2>&1
expect_status 1 $? "export of a function of __main__"
check grep -q "rmsnorm is defined in the recorded program itself (module __main__)" out.txt ||
	fail "no reason: $(cat out.txt)"
check [ ! -e main-fn ] || fail "main-fn was written"

# -o goes with --export
"$REPLAY" -o x dumps >out.txt 2>&1
expect_status 2 $? "-o without --export"
finish
