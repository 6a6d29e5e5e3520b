## mk/bench.mk: `make bench` builds every benchmark program (areas add to BENCH_PROGRAMS).
EXTRA_PROGRAMS = $(BENCH_PROGRAMS)
CLEANFILES += $(BENCH_PROGRAMS)
.PHONY: bench
bench: $(BENCH_PROGRAMS) libmate.la
