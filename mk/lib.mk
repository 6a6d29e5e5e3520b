## mk/lib.mk: libmate's common core (errors, dtypes, tensors, values).
include_HEADERS += lib/mate.h lib/mate_dump.h
libmate_la_SOURCES += \
	lib/mate_private.h \
	lib/error.c \
	lib/dtype.c \
	lib/tensor.c \
	lib/value.c \
	lib/backend.h \
	lib/backend.c

if HAVE_CUDA
libmate_la_SOURCES += lib/backend_cuda.cu
libmate_la_LIBADD += $(CUDA_LIBS)
endif

## src/fe: helpers shared by the frontends (libarchive_fe's role); not installed.
noinst_LTLIBRARIES += src/fe/libmate_fe.la
src_fe_libmate_fe_la_SOURCES = src/fe/fe.h src/fe/fe.c
