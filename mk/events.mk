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
