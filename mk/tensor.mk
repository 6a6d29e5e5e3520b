## mk/tensor.mk: tests of libmate's core (dtypes, tensors, values) and the tensor-files benchmark.
check_PROGRAMS += tests/test_dtype tests/test_tensor tests/test_value tests/dtype-convert
TESTS += tests/test_dtype tests/test_tensor tests/test_value tests/test_dtype_interop.py
EXTRA_DIST += tests/test_dtype_interop.py
tests_test_dtype_SOURCES = tests/test_dtype.c
tests_test_dtype_LDADD = libmate.la -lm
tests_test_tensor_SOURCES = tests/test_tensor.c
tests_test_tensor_LDADD = libmate.la
tests_test_value_SOURCES = tests/test_value.c
tests_test_value_LDADD = libmate.la
tests_dtype_convert_SOURCES = tests/dtype-convert.c
tests_dtype_convert_LDADD = libmate.la
