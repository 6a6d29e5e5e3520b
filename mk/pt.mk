## mk/pt.mk: build and test rules for this area (included by Makefile.am).

## reader
libmate_la_SOURCES += lib/pickle.c lib/dump_pt_read.c
EXTRA_DIST += tests/pt_build.h
check_PROGRAMS += tests/test_pickle
tests_test_pickle_LDADD = libmate.la
TESTS += tests/test_pickle
check_PROGRAMS += tests/test_pt_read
tests_test_pt_read_LDADD = libmate.la
TESTS += tests/test_pt_read
TESTS += tests/test_pt_read_interop.py
EXTRA_DIST += tests/test_pt_read_interop.py
check_PROGRAMS += tests/pt-read-check
tests_pt_read_check_LDADD = libmate.la
EXTRA_DIST += fuzz/fuzz_pickle.c fuzz/fuzz_pt.c bench/bench_pt_read.c
FUZZ_TARGETS += fuzz/fuzz_pickle fuzz/fuzz_pt
fuzz_fuzz_pickle_SOURCES = fuzz/fuzz_pickle.c
fuzz_fuzz_pickle_LDADD = libmate.la
fuzz_fuzz_pickle_LDFLAGS = $(FUZZER_LINK)
fuzz_fuzz_pt_SOURCES = fuzz/fuzz_pt.c
fuzz_fuzz_pt_LDADD = libmate.la
fuzz_fuzz_pt_LDFLAGS = $(FUZZER_LINK)
TESTS += tests/test_pt_read_zip64.py
EXTRA_DIST += tests/test_pt_read_zip64.py
BENCH_BINS += bench/bench_pt_read
bench_bench_pt_read_LDADD = libmate.la
EXTRA_DIST += bench/pt_read_vs_torch.py
