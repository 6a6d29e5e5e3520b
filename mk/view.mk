## mk/view.mk: lib/view, libmate_view (timelines, cairo pictures, Perfetto JSON, text) and
## mate-visualize, with their tests, fuzz target and benchmark.


## ---- libmate_view: timelines, cairo pictures, Perfetto JSON and text
## summaries. A separate convenience library so that programs under the
## recorder never load cairo.
## It uses libmate's internal helpers (errors, atomic files), so what links
## it links libmate_impl.la, not the shared libmate's public API.
noinst_LTLIBRARIES += lib/libmate_view.la
lib_libmate_view_la_SOURCES = lib/view/mate_view.h lib/view/timeline_private.h \
	lib/view/timeline.c lib/view/timeline_agg.c lib/view/render_cairo.c \
	lib/view/perfetto.c lib/view/summary.c lib/core/util_json.c
lib_libmate_view_la_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS) $(ZLIB_CFLAGS)
lib_libmate_view_la_LIBADD = $(CAIRO_LIBS) $(ZLIB_LIBS) -lm

## ---- mate-visualize ----
bin_PROGRAMS += mate-visualize
mate_visualize_SOURCES = src/visualize/mate-visualize.c
mate_visualize_LDADD = src/fe/libmate_fe.la lib/libmate_view.la libmate_impl.la
man_MANS += man/mate-visualize.1
EXTRA_DIST += man/mate-visualize.1

## ---- tests ----
## fontconfig (under cairo's text) never frees its globals: not our leak.
AM_TESTS_ENVIRONMENT += \
	LSAN_OPTIONS="suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0$${LSAN_OPTIONS:+:$$LSAN_OPTIONS}"; \
	export LSAN_OPTIONS;
C_TESTS += tests/test_ilog tests/test_timeline
tests_test_ilog_SOURCES = tests/unit/test_ilog.c
tests_test_ilog_LDADD = libmate_impl.la
tests_test_timeline_SOURCES = tests/unit/test_timeline.c
tests_test_timeline_LDADD = lib/libmate_view.la libmate_impl.la
SCRIPT_TESTS += tests/cli/test_visualize_cli.sh tests/cli/test_visualize_man.sh tests/cli/test_visualize_png.py tests/cli/test_visualize_svg.py tests/cli/test_visualize_json.py tests/cli/test_visualize_gt.py tests/cli/test_visualize_usec.py tests/cli/test_visualize_flows.py
EXTRA_DIST += tests/lsan.supp tests/tools/gtlog.py
SCRIPT_TESTS += tests/cli/test_visualize_overview.py
## visualize_special.sh: -o writes into a FIFO or device and never replaces a symlink.
SCRIPT_TESTS += tests/cli/test_visualize_special.sh
## visualize_text.sh: -f text on a recorded demo run and a GT log.
SCRIPT_TESTS += tests/cli/test_visualize_text.sh

## ---- fuzzing and benchmarks ----
FUZZ_TARGETS += fuzz/fuzz_ilog
fuzz_fuzz_ilog_SOURCES = fuzz/fuzz_ilog.c
fuzz_fuzz_ilog_LDADD = lib/libmate_view.la libmate_impl.la
fuzz_fuzz_ilog_LDFLAGS = $(FUZZER_LINK)
EXTRA_DIST += bench/visualize.py bench/visualize-matplotlib.py bench/gen-ilog.py
.PHONY: bench-visualize
bench-visualize: mate-visualize
	/usr/bin/python3 $(top_srcdir)/bench/visualize.py --build $(abs_top_builddir)
