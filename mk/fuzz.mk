## mk/fuzz.mk: libFuzzer targets (configure CC=clang --enable-fuzzing; make fuzz).
## Each parser of untrusted input adds its target to FUZZ_TARGETS here.
FUZZER_LINK = -fsanitize=fuzzer

EXTRA_DIST += fuzz/corpus

.PHONY: fuzz
if ENABLE_FUZZING
noinst_PROGRAMS += $(FUZZ_TARGETS)
fuzz: $(FUZZ_TARGETS)
else
fuzz:
	@echo "configure with CC=clang --enable-fuzzing to build the fuzz targets" >&2; exit 1
endif

## CI's fuzz step finds every seed corpus, shows a crash whole, and CI runs the main job.
SCRIPT_TESTS += tests/cli/test_ci_fuzz_demo.sh
EXTRA_DIST += tests/ci.sh
