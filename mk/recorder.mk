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
