## mk/format.mk: lib/format, the tensor files: the pickle reader and writer, .pt and
## safetensors, with their tests, fuzz targets and benchmarks.

## writer
libmate_impl_la_SOURCES += lib/format/pickle_write.h lib/format/pickle_write.c lib/format/pt_write.c
C_TESTS += tests/test_pt_write
tests_test_pt_write_SOURCES = tests/unit/test_pt_write.c
tests_test_pt_write_CFLAGS = $(AM_CFLAGS) $(LIBARCHIVE_CFLAGS)
tests_test_pt_write_LDADD = libmate.la $(LIBARCHIVE_LIBS)
BENCH_BINS += bench/pt_write_bench
bench_pt_write_bench_SOURCES = bench/pt_write_bench.c
bench_pt_write_bench_LDADD = libmate.la -lz
SCRIPT_TESTS += \
	tests/interop/test_pt_write_interop.py \
	tests/interop/torch2/test_pt_write_interop.sh \
	tests/interop/test_pt_write_zip64.py
EXTRA_DIST += bench/pt_write_torch.py

## reader
## The restricted unpickler and the .pt reader.
libmate_impl_la_SOURCES += lib/format/pickle.c lib/format/pt_read.c

## Unit tests (hand-built pickles and zips), torch interop (Debian's 1.13, and torch 2.x
## under PYTHON_PEERS: tests/torch2/ runs the same test there), ZIP64 > 4 GiB.
C_TESTS += tests/test_pickle tests/test_pt_read
check_PROGRAMS += tests/pt-read-check
tests_test_pickle_SOURCES = tests/unit/test_pickle.c
tests_test_pt_read_SOURCES = tests/unit/test_pt_read.c
tests_test_pt_read_LDADD = libmate_impl.la
tests_pt_read_check_SOURCES = tests/tools/pt-read-check.c
SCRIPT_TESTS += tests/interop/test_pt_read_interop.py tests/interop/torch2/test_pt_read_interop.sh tests/interop/test_pt_read_torch2.py tests/interop/test_pt_read_zip64.py
EXTRA_DIST += tests/tools/pt_build.h tests/tools/torch_expect.py
EXTRA_DIST += tests/tools/zip64_pt.py

## Fuzz targets (seed corpora in fuzz/corpus/pickle and fuzz/corpus/pt).
FUZZ_TARGETS += fuzz/fuzz_pickle fuzz/fuzz_pt
fuzz_fuzz_pickle_SOURCES = fuzz/fuzz_pickle.c
fuzz_fuzz_pickle_LDFLAGS = $(FUZZER_LINK)
fuzz_fuzz_pt_SOURCES = fuzz/fuzz_pt.c
fuzz_fuzz_pt_LDADD = libmate_impl.la
fuzz_fuzz_pt_LDFLAGS = $(FUZZER_LINK)
EXTRA_DIST += fuzz/fuzz_pickle.c fuzz/fuzz_pt.c

## Benchmark: bench/bench_pt_read FILE; bench/pt_read_vs_torch.py BUILDDIR.
BENCH_BINS += bench/bench_pt_read
EXTRA_DIST += bench/bench_pt_read.c bench/pt_read_vs_torch.py

## safetensors
libmate_impl_la_SOURCES += lib/format/safetensors.c

C_TESTS += tests/test_safetensors
tests_test_safetensors_SOURCES = tests/unit/test_safetensors.c
## test_safetensors_peers.py: against the safetensors library itself (PYTHON_PEERS).
SCRIPT_TESTS += tests/interop/test_safetensors_interop.py tests/interop/torch2/test_safetensors_interop.sh tests/interop/test_safetensors_peers.py

FUZZ_TARGETS += fuzz/fuzz_safetensors
fuzz_fuzz_safetensors_SOURCES = fuzz/fuzz_safetensors.c
fuzz_fuzz_safetensors_LDADD = libmate_impl.la
fuzz_fuzz_safetensors_LDFLAGS = $(FUZZER_LINK)

BENCH_BINS += bench/bench_safetensors
bench_bench_safetensors_SOURCES = bench/bench_safetensors.c

## tests/tensorfile-tool: JSON <-> .pt/.safetensors driver for the Python interop tests.
check_PROGRAMS += tests/tensorfile-tool
tests_tensorfile_tool_SOURCES = tests/tools/tensorfile-tool.c
tests_tensorfile_tool_LDADD = libmate.la $(CJSON_LIBS)

## bench/tensor-files: .pt/safetensors throughput against torch and plain I/O
## (`make bench`, then bench/tensor-files.sh runs it with the torch half).
BENCH_BINS += bench/tensor-files
bench_tensor_files_SOURCES = bench/tensor-files.c
bench_tensor_files_LDADD = src/fe/libmate_fe.la libmate.la
EXTRA_DIST += bench/tensor-files.sh bench/tensor-files-torch.py

## bench/read-rss: peak RSS of a fresh process reading a large .pt and safetensors file, mapped
## against MATE_MMAP=0, against the file's size.
BENCH_BINS += bench/read-rss
bench_read_rss_SOURCES = bench/read-rss.c
bench_read_rss_LDADD = libmate.la
