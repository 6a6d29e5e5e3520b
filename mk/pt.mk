## mk/pt.mk: build and test rules for this area (included by Makefile.am).

## writer
libmate_la_SOURCES += lib/pickle_write.h lib/pickle_write.c lib/dump_pt_write.c
check_PROGRAMS += tests/test_pt_write
tests_test_pt_write_SOURCES = tests/test_pt_write.c
tests_test_pt_write_CFLAGS = $(AM_CFLAGS) $(LIBARCHIVE_CFLAGS)
tests_test_pt_write_LDADD = libmate.la $(LIBARCHIVE_LIBS)
TESTS += tests/test_pt_write
BENCH_BINS += bench/pt_write_bench
bench_pt_write_bench_SOURCES = bench/pt_write_bench.c
bench_pt_write_bench_LDADD = libmate.la -lz
TESTS += tests/test_pt_write_interop.py
EXTRA_DIST += tests/test_pt_write_interop.py
EXTRA_DIST += bench/pt_write_torch.py
