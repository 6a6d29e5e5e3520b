## mk/events.mk: lib/events, live events: the call event stream, the ZeroMQ publisher and
## subscriber, activity, instruction logs; mate-trace and mate-top, with their tests.
libmate_impl_la_SOURCES += \
	lib/events/events_private.h \
	lib/events/events.c \
	lib/events/events_call.c \
	lib/events/monitor.c \
	lib/events/rank.c
libmate_impl_la_LIBADD += $(ZMQ_LIBS)
libmate_impl_la_SOURCES += lib/events/subscribe.c lib/events/activity.c
## the rank out of step (mate-trace --desync)
libmate_impl_la_SOURCES += lib/events/desync.c
## instruction logs (read and written by every tool)
libmate_impl_la_SOURCES += lib/include/mate_events.h lib/events/ilog.c

## The tools that see only libmate's installed headers and src/fe (issue 37: tools on the
## API): an internal header does not compile in them.
MATE_TOOL_CPPFLAGS = -I$(top_srcdir)/lib/include -I$(top_srcdir)/src/fe -I$(top_builddir)

## mate-trace: capture live events into an instruction log.
bin_PROGRAMS += src/trace/mate-trace
src_trace_mate_trace_SOURCES = src/trace/mate-trace.c
src_trace_mate_trace_CPPFLAGS = $(MATE_TOOL_CPPFLAGS)
src_trace_mate_trace_LDADD = src/fe/libmate_fe.la libmate.la

## mate-top: live per-worker activity (ncurses; batch mode without a terminal).
bin_PROGRAMS += src/top/mate-top
src_top_mate_top_SOURCES = src/top/mate-top.c src/top/top_nvml.c src/top/top_nvml.h
src_top_mate_top_CPPFLAGS = $(MATE_TOOL_CPPFLAGS)
src_top_mate_top_CFLAGS = $(AM_CFLAGS) $(NCURSES_CFLAGS)
src_top_mate_top_LDADD = src/fe/libmate_fe.la libmate.la $(NCURSES_LIBS) -lm

## A test-only NVML (tests/fakes/nvml.c): mate-top's GPU columns without a GPU.
check_LTLIBRARIES += tests/fakes/libfakenvml.la
tests_fakes_libfakenvml_la_SOURCES = tests/fakes/nvml.c
tests_fakes_libfakenvml_la_LDFLAGS = -module -avoid-version -rpath /nowhere $(AM_LDFLAGS)

## Tests: events in instruction logs (unit), the demo under mate-trace and
## mate-top (GT's regex, round trip, no gaps), ilog == trace, a stalled
## subscriber, a killed publisher, mate-top in tmux, the man pages.
C_TESTS += tests/test_events
check_PROGRAMS += tests/ilog-check
tests_test_events_SOURCES = tests/unit/test_events.c
tests_test_events_LDADD = libmate_impl.la
tests_ilog_check_SOURCES = tests/tools/ilog-check.c
EXTRA_DIST += tests/test_live.h
C_TESTS += tests/test_events_stall
tests_test_events_stall_SOURCES = tests/unit/test_events_stall.c
tests_test_events_stall_LDADD = libmate.la $(ZMQ_LIBS)

C_TESTS += tests/test_events_frames
tests_test_events_frames_SOURCES = tests/unit/test_events_frames.c
tests_test_events_frames_LDADD = libmate.la $(ZMQ_LIBS)
C_TESTS += tests/test_events_bignum
tests_test_events_bignum_SOURCES = tests/unit/test_events_bignum.c
tests_test_events_bignum_LDADD = libmate.la $(ZMQ_LIBS)

C_TESTS += tests/test_events_budget
tests_test_events_budget_SOURCES = tests/unit/test_events_budget.c
tests_test_events_budget_LDADD = libmate.la $(ZMQ_LIBS) -lpthread
## Another publisher's frames under a real one's pid (a DISCONNECT among them) are not taken.
C_TESTS += tests/test_events_spoof
tests_test_events_spoof_SOURCES = tests/unit/test_events_spoof.c
tests_test_events_spoof_LDADD = libmate.la $(ZMQ_LIBS)
## A forked child's log: its own ids, every event kept when it ends with _exit(2).
C_TESTS += tests/test_events_fork
tests_test_events_fork_SOURCES = tests/unit/test_events_fork.c
tests_test_events_fork_LDADD = lib/libmate_view.la libmate_impl.la -lpthread
SCRIPT_TESTS += tests/cli/test_events_demo.py tests/cli/test_events_hostile_name.py
## events_flood.py: a flooding tcp publisher (pyzmq) bounds neither mate-trace's memory
## nor its -s deadline.
SCRIPT_TESTS += tests/cli/test_events_flood.py
## events_curve.py: a CURVE tcp endpoint (MATE_MONITOR_CURVE_SECRET_KEY) gives a
## subscriber without the server key nothing (pyzmq, real libzmq).
SCRIPT_TESTS += tests/cli/test_events_curve.py
SCRIPT_TESTS += tests/cli/test_events_ilog_trace.sh tests/cli/test_events_stale.sh
SCRIPT_TESTS += tests/cli/test_events_top_tmux.sh
## mate-top -b: real figures in the first table; a failed write exits 1; GPU columns (top_gpu).
SCRIPT_TESTS += tests/cli/test_events_top_batch.sh tests/cli/test_top_gpu.sh tests/cli/test_top_all.sh tests/cli/test_top_hosts.sh \
	tests/cli/test_top_ranks.sh

## events_thread_names.sh: threads the program named, named in the log, the timeline and mate-top.
SCRIPT_TESTS += tests/cli/test_events_thread_names.sh
SCRIPT_TESTS += tests/cli/test_events_cli.sh
## every key=value of an instruction log's details is described in mate.7
SCRIPT_TESTS += tests/cli/test_events_ilog_doc.sh
## no man page states a measured figure (they are the README's, with where)
SCRIPT_TESTS += tests/cli/test_man_figures.sh

## Man pages of the tools.
man_MANS += man/mate-trace.1 man/mate-top.1
EXTRA_DIST += man/mate-trace.1 man/mate-top.1

## Benchmarks (make bench; then python3 bench/events.py from the build directory).
BENCH_BINS += bench/events-overhead
bench_events_overhead_SOURCES = bench/events-overhead.c
EXTRA_DIST += bench/events.py bench/desync-latency.py

## fuzz/fuzz_frame: the subscriber's frame parser, merging and activity aggregate.
FUZZ_TARGETS += fuzz/fuzz_frame
fuzz_fuzz_frame_SOURCES = fuzz/fuzz_frame.c
fuzz_fuzz_frame_LDADD = libmate_impl.la
fuzz_fuzz_frame_LDFLAGS = $(FUZZER_LINK)
SCRIPT_TESTS += tests/cli/test_events_tcp.sh
## "publishing on URL" comes once the .info file names URL.
SCRIPT_TESTS += tests/cli/test_events_announce.py
C_TESTS += tests/test_activity
tests_test_activity_SOURCES = tests/unit/test_activity.c
tests_test_activity_LDADD = libmate.la -lm

## The stream and files read by the Python peers' own code: pyzmq subscribes to the
## demo's endpoint, pandas loads the memory CSV and an instruction log.
SCRIPT_TESTS += tests/interop/test_peers_zmq_pandas.py

## mate-trace --desync names the rank out of step: 8 ranks of tests/rank-prog (a made-up
## data-parallel job recorded through libmate, ranks from torchrun's variables), live and
## from their instruction logs; the rank in the events (issue 38).
check_PROGRAMS += tests/rank-prog
tests_rank_prog_SOURCES = tests/fakes/rank-prog.c
tests_rank_prog_CPPFLAGS = $(MATE_LIB_CPPFLAGS)
tests_rank_prog_LDADD = libmate.la
SCRIPT_TESTS += tests/cli/test_trace_desync.sh
FUZZ_TARGETS += fuzz/fuzz_desync
fuzz_fuzz_desync_SOURCES = fuzz/fuzz_desync.c
fuzz_fuzz_desync_LDADD = libmate_impl.la
fuzz_fuzz_desync_LDFLAGS = $(FUZZER_LINK)

## A subscriber that connects while the process's events thread starts gets every event
## from the first: the starting thread held up by an LD_PRELOAD shim (not built by
## --disable-shared builds, where the test skips with 77; issue 30).
check_LTLIBRARIES += tests/slow-thread-shim.la
tests_slow_thread_shim_la_SOURCES = tests/fakes/slow-thread-shim.c
tests_slow_thread_shim_la_LDFLAGS = -module -avoid-version -rpath /nowhere
tests_slow_thread_shim_la_LIBADD = -ldl
SCRIPT_TESTS += tests/cli/test_events_early_subscriber.sh
