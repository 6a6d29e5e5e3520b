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
TESTS += tests/test_pt_write_interop.py tests/torch2/test_pt_write_interop.sh \
	tests/test_pt_write_zip64.py
EXTRA_DIST += tests/test_pt_write_interop.py tests/torch2/test_pt_write_interop.sh \
	tests/test_pt_write_zip64.py
EXTRA_DIST += bench/pt_write_torch.py

## reader
## The restricted unpickler and the .pt reader.
libmate_la_SOURCES += lib/pickle.c lib/dump_pt_read.c

## Unit tests (hand-built pickles and zips), torch interop (Debian's 1.13, and torch 2.x
## under PYTHON_PEERS: tests/torch2/ runs the same test there), ZIP64 > 4 GiB.
check_PROGRAMS += tests/test_pickle tests/test_pt_read tests/pt-read-check
tests_test_pickle_LDADD = libmate.la
tests_test_pt_read_LDADD = libmate.la
tests_pt_read_check_LDADD = libmate.la
TESTS += tests/test_pickle tests/test_pt_read tests/test_pt_read_interop.py \
	tests/torch2/test_pt_read_interop.sh tests/test_pt_read_torch2.py \
	tests/test_pt_read_zip64.py
EXTRA_DIST += tests/pt_build.h tests/torch_expect.py tests/test_pt_read_interop.py \
	tests/torch2/test_pt_read_interop.sh tests/test_pt_read_torch2.py tests/test_pt_read_zip64.py

## Fuzz targets (seed corpora in fuzz/corpus/pickle and fuzz/corpus/pt).
FUZZ_TARGETS += fuzz/fuzz_pickle fuzz/fuzz_pt
fuzz_fuzz_pickle_SOURCES = fuzz/fuzz_pickle.c
fuzz_fuzz_pickle_LDADD = libmate.la
fuzz_fuzz_pickle_LDFLAGS = $(FUZZER_LINK)
fuzz_fuzz_pt_SOURCES = fuzz/fuzz_pt.c
fuzz_fuzz_pt_LDADD = libmate.la
fuzz_fuzz_pt_LDFLAGS = $(FUZZER_LINK)
EXTRA_DIST += fuzz/fuzz_pickle.c fuzz/fuzz_pt.c

## Benchmark: bench/bench_pt_read FILE; bench/pt_read_vs_torch.py BUILDDIR.
BENCH_BINS += bench/bench_pt_read
bench_bench_pt_read_LDADD = libmate.la
EXTRA_DIST += bench/bench_pt_read.c bench/pt_read_vs_torch.py
