## mk/pt.mk: build and test rules for this area (included by Makefile.am).
