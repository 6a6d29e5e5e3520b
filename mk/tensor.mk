## mk/tensor.mk: build and test rules for this area (included by Makefile.am).

## tests/tensorfile-tool: JSON <-> .pt/.safetensors driver for the Python interop tests.
check_PROGRAMS += tests/tensorfile-tool
tests_tensorfile_tool_SOURCES = tests/tensorfile-tool.c
tests_tensorfile_tool_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
tests_tensorfile_tool_LDADD = libmate.la $(CJSON_LIBS)
