## mk/events.mk: live events: the instruction log, the ZeroMQ publisher and subscriber, mate-trace and mate-top.
libmate_la_SOURCES += \
	lib/events_private.h \
	lib/events.c \
	lib/events_call.c \
	lib/monitor.c
## (until h-vis lands: the line formatter)
libmate_la_SOURCES += lib/ilog.c
libmate_la_CFLAGS += $(ZMQ_CFLAGS)
libmate_la_LIBADD += $(ZMQ_LIBS)
libmate_la_SOURCES += lib/subscribe.c lib/activity.c
include_HEADERS += lib/mate_monitor.h

## mate-trace: capture live events into an instruction log.
bin_PROGRAMS += src/trace/mate-trace
src_trace_mate_trace_SOURCES = src/trace/mate-trace.c
src_trace_mate_trace_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fe
src_trace_mate_trace_LDADD = src/fe/libmate_fe.la libmate.la

## mate-top: live per-worker activity (ncurses; batch mode without a terminal).
bin_PROGRAMS += src/top/mate-top
src_top_mate_top_SOURCES = src/top/mate-top.c
src_top_mate_top_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fe
src_top_mate_top_CFLAGS = $(AM_CFLAGS) $(NCURSES_CFLAGS)
src_top_mate_top_LDADD = src/fe/libmate_fe.la libmate.la $(NCURSES_LIBS) -lm
