## mk/recorder.mk: build and test rules for this area (included by Makefile.am).
## The recorder: configuration, the API log (levels 1-5), dumps (level 10).
libmate_la_SOURCES += \
	lib/recorder_private.h \
	lib/config.c \
	lib/recorder.c \
	lib/apilog.c \
	lib/stats.c \
	lib/pyfmt.c \
	lib/dump_writer.c

## recorder-golden: the reference program's calls through the C API.
check_PROGRAMS += tests/recorder-golden
tests_recorder_golden_SOURCES = tests/recorder-golden.c
tests_recorder_golden_LDADD = libmate.la
TESTS += tests/test_recorder_golden.sh
EXTRA_DIST += tests/test_recorder_golden.sh tests/gen-golden-tensors.py

## test_recorder_dump: level-10 records, statuses, filters, limits, in-place outputs.
check_PROGRAMS += tests/test_recorder_dump
tests_test_recorder_dump_SOURCES = tests/test_recorder_dump.c
tests_test_recorder_dump_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_test_recorder_dump_LDADD = libmate.la $(CJSON_LIBS)
TESTS += tests/test_recorder_dump

## recorder-values: Python checks of float/string spelling in the log and records.
check_PROGRAMS += tests/recorder-values
tests_recorder_values_SOURCES = tests/recorder-values.c
tests_recorder_values_LDADD = libmate.la
TESTS += tests/test_recorder_values.py
EXTRA_DIST += tests/test_recorder_values.py
TESTS += tests/test_recorder_dumps.py
EXTRA_DIST += tests/test_recorder_dumps.py

## test_recorder_stats: level-5 statistics for every dtype.
check_PROGRAMS += tests/test_recorder_stats
tests_test_recorder_stats_SOURCES = tests/test_recorder_stats.c
tests_test_recorder_stats_LDADD = libmate.la
TESTS += tests/test_recorder_stats

## The man pages and libmate(3)'s example, built and checked by make check.
man_MANS += man/mate.7 man/libmate.3
EXTRA_DIST += man/mate.7 man/libmate.3 examples/libmate-example.c tests/test_recorder_example.sh
check_PROGRAMS += examples/libmate-example
examples_libmate_example_SOURCES = examples/libmate-example.c
examples_libmate_example_LDADD = libmate.la
TESTS += tests/test_recorder_example.sh

## test_recorder_cuda: device tensors (CUDA builds; exits 77 without a device).
EXTRA_DIST += tests/test_recorder_cuda.c
if HAVE_CUDA
check_PROGRAMS += tests/test_recorder_cuda
tests_test_recorder_cuda_SOURCES = tests/test_recorder_cuda.c
tests_test_recorder_cuda_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
tests_test_recorder_cuda_LDADD = libmate.la $(CUDA_LIBS)
TESTS += tests/test_recorder_cuda
endif
