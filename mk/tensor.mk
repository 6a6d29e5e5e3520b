## mk/tensor.mk: tests of libmate's core (dtypes, tensors, values), the tensor-file test tool and the tensor-files benchmark.

## tests/tensorfile-tool: JSON <-> .pt/.safetensors driver for the Python interop tests.
check_PROGRAMS += tests/tensorfile-tool
tests_tensorfile_tool_SOURCES = tests/tensorfile-tool.c
tests_tensorfile_tool_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_tensorfile_tool_LDADD = libmate.la $(CJSON_LIBS)

## Unit tests of lib/dtype.c, lib/tensor.c, lib/value.c; dtype-convert drives the interop test.
check_PROGRAMS += tests/test_dtype tests/test_tensor tests/test_value tests/dtype-convert
TESTS += tests/test_dtype tests/test_tensor tests/test_value tests/test_dtype_interop.py \
	tests/torch2/test_dtype_interop.sh
EXTRA_DIST += tests/test_dtype_interop.py tests/torch2/test_dtype_interop.sh
tests_test_dtype_SOURCES = tests/test_dtype.c
tests_test_dtype_LDADD = libmate.la -lm
tests_test_tensor_SOURCES = tests/test_tensor.c
tests_test_tensor_LDADD = libmate.la
tests_test_value_SOURCES = tests/test_value.c
tests_test_value_LDADD = libmate.la
tests_dtype_convert_SOURCES = tests/dtype-convert.c
tests_dtype_convert_LDADD = libmate.la

## bench/tensor-files: .pt/safetensors throughput against torch and plain I/O
## (`make bench`, then bench/tensor-files.sh runs it with the torch half).
BENCH_BINS += bench/tensor-files
bench_tensor_files_SOURCES = bench/tensor-files.c
bench_tensor_files_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fe
bench_tensor_files_LDADD = src/fe/libmate_fe.la libmate.la
EXTRA_DIST += bench/tensor-files.sh bench/tensor-files-torch.py
