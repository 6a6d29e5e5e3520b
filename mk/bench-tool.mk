## mk/bench-tool.mk: mate-bench, the profile-entry benchmark tool, with its library part
## (input synthesis and the per-op FLOP model); included by Makefile.am.
libmate_la_SOURCES += lib/bench_synth.c

bin_PROGRAMS += src/bench/mate-bench
src_bench_mate_bench_SOURCES = src/bench/mate-bench.c
src_bench_mate_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fe
src_bench_mate_bench_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
src_bench_mate_bench_LDADD = src/fe/libmate_fe.la libmate.la $(CJSON_LIBS)

man_MANS += man/mate-bench.1
EXTRA_DIST += man/mate-bench.1

## bench_tool.py: every built-in op's problem runs with valid made-up inputs and finite
## outputs; the demo's profile, the -c form against the JSON form, unsupported and
## hostile entries.
TESTS += tests/bench_tool.py
EXTRA_DIST += tests/bench_tool.py

## Fuzz target for profile lines and the command-line form.
FUZZ_TARGETS += fuzz/fuzz_bench_entry
fuzz_fuzz_bench_entry_SOURCES = fuzz/fuzz_bench_entry.c
fuzz_fuzz_bench_entry_LDADD = libmate.la
fuzz_fuzz_bench_entry_LDFLAGS = $(FUZZER_LINK)

## bench_fi_step.py (peers): a serving step recorded by FlashInfer's decorator, its distinct
## calls benchmarked.
TESTS += tests/bench_fi_step.py
EXTRA_DIST += tests/bench_fi_step.py
