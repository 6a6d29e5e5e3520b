## mk/core.mk: lib/core, libmate's common core (errors, dtypes, tensors, values, the output
## queue, threads, the backend interface and the CUDA module loader); the public headers.
## mate.h includes the four others; mate_dump.h and mate_monitor.h are the
## former names of mate_replay.h and mate_events.h, one-line shims.
include_HEADERS += lib/include/mate.h lib/include/mate_core.h lib/include/mate_record.h \
	lib/include/mate_replay.h lib/include/mate_events.h \
	lib/include/mate_dump.h lib/include/mate_monitor.h
## libmate exports exactly the MATE_API declarations of those headers.
SCRIPT_TESTS += tests/cli/test_exports.sh
libmate_impl_la_SOURCES += lib/core/mate_private.h lib/core/error.c lib/core/logfile.h \
	lib/core/logfile.c lib/core/wqueue.h lib/core/wqueue.c lib/core/dtype.c \
	lib/core/tensor.c lib/core/value.c lib/core/memcap.c lib/core/backend.h \
	lib/core/backend.c lib/core/parallel.h lib/core/parallel.c

## The utility layer (lib/core/util.h): clocks, warnings, the text buffer, JSON strings,
## function-name patterns, settings, locales, temporary files. util_warn.c, util_json.c,
## util_match.c and util_tmp.c need only libc: the preload library, libmate_view and the
## tools that use them build them in (their symbols are hidden in libmate.so).
libmate_impl_la_SOURCES += lib/core/util.h lib/core/util_warn.c lib/core/util_buf.c \
	lib/core/util_json.c lib/core/util_match.c lib/core/util_array.c lib/core/util_env.c \
	lib/core/util_locale.c lib/core/util_map.h lib/core/util_tmp.c
## test_util: the utility layer, built in as the tools build it.
C_TESTS += tests/test_util
tests_test_util_SOURCES = tests/unit/test_util.c lib/core/util_buf.c lib/core/util_json.c lib/core/util_match.c \
	lib/core/util_env.c lib/core/util_locale.c

## The CUDA backend, kernels and allocators are a module, mate-cuda.so
## (mk/cuda.mk), which lib/core/cuda_module.c opens on first use: libmate
## itself links no CUDA library.
if HAVE_CUDA
libmate_impl_la_SOURCES += lib/core/cuda_module.h lib/core/cuda_module.c
endif

## src/fe: helpers shared by the frontends (libarchive_fe's role); not installed.
noinst_LTLIBRARIES += src/fe/libmate_fe.la
src_fe_libmate_fe_la_SOURCES = src/fe/fe.h src/fe/fe.c src/fe/fe_json.h

## test_wqueue: the file writers' output queue (lib/core/wqueue.c).
C_TESTS += tests/test_wqueue
tests_test_wqueue_SOURCES = tests/unit/test_wqueue.c
EXTRA_DIST += tests/tools/xorshift.h
tests_test_wqueue_LDADD = libmate_impl.la

## libmate.pc: a static link with its private requirements.
SCRIPT_TESTS += tests/cli/test_pkgconfig.sh

## Unit tests of lib/core/dtype.c, lib/core/tensor.c, lib/core/value.c; dtype-convert drives the interop test.
C_TESTS += tests/test_dtype tests/test_tensor tests/test_value
check_PROGRAMS += tests/dtype-convert
SCRIPT_TESTS += tests/interop/test_dtype_interop.py tests/interop/torch2/test_dtype_interop.sh
tests_test_dtype_SOURCES = tests/unit/test_dtype.c
tests_test_dtype_LDADD = libmate.la -lm
tests_test_tensor_SOURCES = tests/unit/test_tensor.c
tests_test_tensor_LDADD = libmate_impl.la
tests_test_value_SOURCES = tests/unit/test_value.c
tests_dtype_convert_SOURCES = tests/tools/dtype-convert.c
