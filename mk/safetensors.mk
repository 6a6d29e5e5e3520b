## mk/safetensors.mk: build and test rules for this area (included by Makefile.am).
libmate_la_SOURCES += lib/dump_safetensors.c

check_PROGRAMS += tests/test_safetensors
tests_test_safetensors_SOURCES = tests/test_safetensors.c
tests_test_safetensors_LDADD = libmate.la
## test_safetensors_peers.py: against the safetensors library itself (PYTHON_PEERS).
TESTS += tests/test_safetensors tests/test_safetensors_interop.py \
	tests/torch2/test_safetensors_interop.sh tests/test_safetensors_peers.py
EXTRA_DIST += tests/test_safetensors_interop.py tests/torch2/test_safetensors_interop.sh \
	tests/test_safetensors_peers.py

FUZZ_TARGETS += fuzz/fuzz_safetensors
fuzz_fuzz_safetensors_SOURCES = fuzz/fuzz_safetensors.c
fuzz_fuzz_safetensors_LDADD = libmate.la
fuzz_fuzz_safetensors_LDFLAGS = $(FUZZER_LINK)

BENCH_BINS += bench/bench_safetensors
bench_bench_safetensors_SOURCES = bench/bench_safetensors.c
bench_bench_safetensors_LDADD = libmate.la
