## mk/dump.mk: lib/dump, reading dumps (records, values, the skim of a dump root) and
## listing them; mate-list-dumps, with its tests and fuzz target.
libmate_impl_la_SOURCES += lib/dump/dump_private.h lib/dump/dump_record.c lib/dump/dump_skim.c \
	lib/dump/dump_value.c lib/dump/dump.c lib/dump/dumplist.c lib/dump/dump_session.c \
	lib/dump/dump_nonfinite.h lib/dump/dump_nonfinite.c

bin_PROGRAMS += src/replay/mate-list-dumps
## --nonfinite's scan (lib/dump/dump_nonfinite.c) is internal: libmate linked statically
src_replay_mate_list_dumps_SOURCES = src/replay/mate-list-dumps.c
src_replay_mate_list_dumps_LDADD = src/fe/libmate_fe.la libmate_impl.la $(CJSON_LIBS)
man_MANS += man/mate-list-dumps.1
EXTRA_DIST += man/mate-list-dumps.1

## Unit tests of the dump reader.
C_TESTS += tests/test_dump_read
tests_test_dump_read_SOURCES = tests/unit/test_dump_read.c
tests_test_dump_read_LDADD = libmate_impl.la $(CJSON_LIBS)

## Hostile dumps: huge numbers, FIFOs, deep nesting (no hang, no UB).
SCRIPT_TESTS += tests/cli/test_dump_hostile.py

## Fuzz target for metadata.jsonl records and recorded values.
FUZZ_TARGETS += fuzz/fuzz_dump_record
fuzz_fuzz_dump_record_SOURCES = fuzz/fuzz_dump_record.c
fuzz_fuzz_dump_record_LDADD = libmate_impl.la $(CJSON_LIBS)
fuzz_fuzz_dump_record_LDFLAGS = $(FUZZER_LINK)

## test_dump_keys_work: mate-list-dumps -d and --unique, and mate-replay's in-place check, on
## N and N/4 tensor keys, counting strcmp calls through an LD_PRELOAD shim (not built by
## --disable-shared builds, where the test skips with 77): the work grows as n log n, not n^2.
## bench/list-details.sh times the same.
check_LTLIBRARIES += tests/strcmp-count-shim.la
tests_strcmp_count_shim_la_SOURCES = tests/fakes/strcmp-count-shim.c
tests_strcmp_count_shim_la_LDFLAGS = -module -avoid-version -rpath /nowhere
SCRIPT_TESTS += tests/cli/test_dump_keys_work.py

## test_dump_verdicts: mate-list-dumps -d and mate-replay say the same of damaged tensor files.
SCRIPT_TESTS += tests/cli/test_dump_verdicts.py

## test_list_nonfinite: mate-list-dumps --nonfinite on recorded chains of calls (nf-chain) in
## which one call's kernel makes NaN and infinities that the later calls pass on.
check_PROGRAMS += tests/nf-chain
tests_nf_chain_SOURCES = tests/tools/nf-chain.c
SCRIPT_TESTS += tests/cli/test_list_nonfinite.py

## bench/nonfinite-scan: the --nonfinite scan of 256 MiB of dumps from the page cache against
## read() of the same files (`make bench`; see bench/README.md).
BENCH_BINS += bench/nonfinite-scan
bench_nonfinite_scan_SOURCES = bench/nonfinite-scan.c
bench_nonfinite_scan_LDADD = libmate_impl.la
## bench/list-floor: a root's dumps listed with one openat, pread and close each and nothing
## else (plain libc), the floor bench/list-dumps.sh measures mate-list-dumps against.
BENCH_BINS += bench/list-floor
bench_list_floor_SOURCES = bench/list-floor.c
bench_list_floor_LDADD =
