## mk/record.mk: mate-record (the launcher and its preload interposer), the memory event log, statistics, profile and allocation replay.

## libmate: the memory log, its CSV reader and the allocation replay.
include_HEADERS += lib/mate_record.h
libmate_la_SOURCES += \
	lib/mate_record.h \
	lib/memlog.c \
	lib/memlog_read.c \
	lib/alloc_replay_private.h \
	lib/alloc_replay.c
if HAVE_CUDA
libmate_la_SOURCES += lib/alloc_replay_cuda.c
libmate_la_CFLAGS += $(CUDA_CFLAGS)
endif

## Unit tests of the memory log, the reader and the replay engine.
check_PROGRAMS += tests/test_memlog
TESTS += tests/test_memlog
tests_test_memlog_SOURCES = tests/test_memlog.c
tests_test_memlog_LDADD = libmate.la
