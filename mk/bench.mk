## mk/bench.mk: `make bench` builds every benchmark program (areas add to BENCH_BINS).
EXTRA_PROGRAMS = $(BENCH_BINS)
CLEANFILES += $(BENCH_BINS)
.PHONY: bench
bench: $(BENCH_BINS) libmate.la
