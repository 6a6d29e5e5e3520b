## mk/pt.mk: build and test rules for this area (included by Makefile.am).

## reader
libmate_la_SOURCES += lib/pickle.c lib/dump_pt_read.c
