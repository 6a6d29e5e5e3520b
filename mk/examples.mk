## mk/examples.mk: the demo workload (examples/mate-demo) and its instrumented mini-library.
noinst_PROGRAMS += examples/mate-demo
examples_mate_demo_SOURCES = examples/mate-demo.c examples/minilib.c examples/minilib.h
examples_mate_demo_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
examples_mate_demo_LDADD = libmate.la $(OPENBLAS_LIBS) -lm

## The worked example's program (examples/find-the-bug.sh): a model's layers over minilib.
noinst_PROGRAMS += examples/mate-layers
examples_mate_layers_SOURCES = examples/mate-layers.c examples/minilib.c examples/minilib.h
examples_mate_layers_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
examples_mate_layers_LDADD = libmate.la $(OPENBLAS_LIBS) -lm
EXTRA_DIST += examples/find-the-bug.sh examples/python/minilib.py
## The worked example run as a user runs it: --first, --shrink, --export, --nonfinite.
SCRIPT_TESTS += tests/cli/test_find_the_bug.sh

## examples/run-demo.sh --out: a user's folder refused, only the demo's own files removed.
SCRIPT_TESTS += tests/cli/test_run_demo_out.sh

## bin/ of the build folder (Makefile.am): every tool and mate-demo.
SCRIPT_TESTS += tests/cli/test_build_bin.sh
