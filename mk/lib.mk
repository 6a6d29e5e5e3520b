## mk/lib.mk: libmate's common core (errors, dtypes, tensors, values).
include_HEADERS += lib/mate.h lib/mate_dump.h
libmate_la_SOURCES += \
	lib/mate_private.h \
	lib/error.c \
	lib/logfile.h \
	lib/logfile.c \
	lib/wqueue.h \
	lib/wqueue.c \
	lib/dtype.c \
	lib/tensor.c \
	lib/value.c \
	lib/memcap.c \
	lib/backend.h \
	lib/backend.c

## The CUDA backend, kernels and allocators are a module, mate-cuda.so
## (mk/kernels.mk), which lib/cuda_module.c opens on first use: libmate
## itself links no CUDA library.
if HAVE_CUDA
libmate_la_SOURCES += lib/cuda_module.h lib/cuda_module.c
endif

## src/fe: helpers shared by the frontends (libarchive_fe's role); not installed.
noinst_LTLIBRARIES += src/fe/libmate_fe.la
src_fe_libmate_fe_la_SOURCES = src/fe/fe.h src/fe/fe.c

## test_wqueue: the file writers' output queue (lib/wqueue.c).
check_PROGRAMS += tests/test_wqueue
tests_test_wqueue_SOURCES = tests/test_wqueue.c
tests_test_wqueue_LDADD = libmate.la
TESTS += tests/test_wqueue

## libmate.pc: a static link with its private requirements.
TESTS += tests/test_pkgconfig.sh
EXTRA_DIST += tests/test_pkgconfig.sh
