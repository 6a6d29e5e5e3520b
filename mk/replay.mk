## mk/replay.mk: lib/replay, the replay engine and its handlers, the allocation replay;
## mate-replay and the `mate VERB` dispatcher, with their tests.
libmate_impl_la_SOURCES += lib/replay/replay.c lib/replay/replay_bind.c \
	lib/replay/replay_private.h lib/replay/replay_compare.c lib/replay/replay_run.c \
	lib/replay/replay_ops.c lib/replay/replay_ops_attn.c lib/replay/replay_ops_common.c \
	lib/replay/replay_ops_trtllm.c
## Replay handlers for the recorded BLAS and cuBLAS calls (registered by replay_ops.c).
libmate_impl_la_SOURCES += lib/replay/replay_blas.h lib/replay/replay_blas.c lib/replay/blas_signatures.h
## The memory log's CSV reader and the allocation replay (mate-replay --memlog).
libmate_impl_la_SOURCES += \
	lib/replay/memlog_read.c \
	lib/replay/alloc_replay_private.h \
	lib/replay/alloc_replay.c
## FlashInfer's RoPE, sampling, GEMM and bit-packing APIs (issue 21)
libmate_impl_la_SOURCES += lib/replay/replay_ops_rope.c
libmate_impl_la_SOURCES += lib/replay/replay_ops_sampling.c
libmate_impl_la_SOURCES += lib/replay/replay_ops_gemm.c
libmate_impl_la_SOURCES += lib/replay/replay_ops_norm.c
libmate_impl_la_SOURCES += lib/replay/replay_ops_quant.c
libmate_impl_la_SOURCES += lib/replay/replay_ops_info.c
## mate-replay --shrink: the smallest failing slice of a call (issue 33)
libmate_impl_la_SOURCES += lib/replay/replay_shrink.c lib/replay/replay_shrink.h \
	lib/replay/replay_shrink_batch.c

## The tools: mate-replay and the `mate VERB` dispatcher.
bin_PROGRAMS += src/replay/mate-replay src/mate/mate
## --first (lib/replay/replay_first.c: the scan, the tensor hashes and their cache, on
## libmate's public API and lib/core/util_tmp.c; src/replay/mate-replay-first.c prints)
## is compiled into the tool.
## --shard and --merge (src/replay/mate-replay-merge.c) go with it into every mate-replay.
REPLAY_FIRST_SRC = lib/replay/replay_first.c lib/replay/replay_first.h lib/core/util_tmp.c
MATE_REPLAY_FIRST_SOURCES = src/replay/mate-replay-first.c src/replay/mate-replay-first.h \
	$(REPLAY_FIRST_SRC) src/replay/mate-replay-merge.c src/replay/mate-replay-merge.h
## --export: one call as a standalone reproducer (public API only, built into the tool).
EXPORT_SRC = src/replay/replay_export.c src/replay/replay_export.h
src_replay_mate_replay_SOURCES = src/replay/mate-replay.c lib/core/util_match.c $(MATE_REPLAY_FIRST_SOURCES) \
	$(EXPORT_SRC) src/replay/fi_coverage.c src/replay/fi_coverage.h
## -export-dynamic: plugins find libmate's symbols in a statically linked mate-replay too.
src_replay_mate_replay_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
src_replay_mate_replay_LDADD = src/fe/libmate_fe.la libmate.la $(CJSON_LIBS)
src_mate_mate_SOURCES = src/mate/mate.c
src_mate_mate_LDADD = src/fe/libmate_fe.la libmate.la

## Man pages.
man_MANS += man/mate.1 man/mate-replay.1
EXTRA_DIST += man/mate.1 man/mate-replay.1

## Unit tests of the replay engine.
C_TESTS += tests/test_replay
tests_test_replay_SOURCES = tests/unit/test_replay.c
tests_test_replay_LDADD = libmate_impl.la $(CJSON_LIBS)

## replay_escape.sh: ESC, BEL and newlines in a dump's names reach no terminal raw
## from mate-list-dumps or mate-replay, and forge no result or Summary line.
SCRIPT_TESTS += tests/cli/test_replay_escape.sh

## tests/plugin-reference.la: a replay plugin for the MATE reference fixture's
## functions, dlopen()ed by the tests.
check_LTLIBRARIES += tests/plugin-reference.la
tests_plugin_reference_la_SOURCES = tests/fakes/plugin-reference.c
tests_plugin_reference_la_LDFLAGS = -module -avoid-version -rpath /nowhere $(AM_LDFLAGS)

## tests/mate-replay-ref: mate-replay with the reference plugin linked in (the
## tests use it where a plugin cannot be dlopen()ed: static and sanitizer builds).
check_PROGRAMS += tests/mate-replay-ref
tests_mate_replay_ref_SOURCES = src/replay/mate-replay.c lib/core/util_match.c tests/fakes/plugin-reference.c \
	$(MATE_REPLAY_FIRST_SOURCES) $(EXPORT_SRC) src/replay/fi_coverage.c src/replay/fi_coverage.h
tests_mate_replay_ref_CPPFLAGS = $(AM_CPPFLAGS) -DMATE_REPLAY_TEST_PLUGIN
tests_mate_replay_ref_LDADD = src/fe/libmate_fe.la libmate.la $(CJSON_LIBS)

## The example plugin of libmate(3) (REPLAY PLUGINS), cut from the page and built
## as it stands (roff escapes \e and \& undone); tests/cli/test_replay_cli.py replays with it.
check_LTLIBRARIES += tests/plugin-man-example.la
nodist_tests_plugin_man_example_la_SOURCES = tests/plugin-man-example.c
tests_plugin_man_example_la_LDFLAGS = -module -avoid-version -rpath /nowhere $(AM_LDFLAGS)
CLEANFILES += tests/plugin-man-example.c
tests/plugin-man-example.c: $(top_srcdir)/man/libmate.3
	$(AM_V_GEN)$(MKDIR_P) tests && \
	sed -n '/begin plugin example/,/end plugin example/{/^\./d;s/\\e/\\/g;s/^\\&//;p;}' \
	    $(top_srcdir)/man/libmate.3 > $@ && \
	grep -q mate_replay_plugin_init $@ || { echo "$@: no plugin example in libmate.3" >&2; rm -f $@; exit 1; }
## tests/mate-replay-example: mate-replay with that example linked in, for builds
## where it cannot be dlopen()ed (static, sanitizers).
check_PROGRAMS += tests/mate-replay-example
tests_mate_replay_example_SOURCES = src/replay/mate-replay.c lib/core/util_match.c $(MATE_REPLAY_FIRST_SOURCES) \
	$(EXPORT_SRC) src/replay/fi_coverage.c src/replay/fi_coverage.h
nodist_tests_mate_replay_example_SOURCES = tests/plugin-man-example.c
tests_mate_replay_example_CPPFLAGS = $(AM_CPPFLAGS) -DMATE_REPLAY_TEST_PLUGIN
tests_mate_replay_example_LDADD = src/fe/libmate_fe.la libmate.la $(CJSON_LIBS)

## CLI tests: the real binaries on the MATE reference dumps and on dumps the
## tests write (tests/tools/replay_dumps.py); the built-in handlers against torch.
SCRIPT_TESTS += tests/cli/test_replay_cli.py tests/cli/test_replay_mutate.py \
	tests/cli/test_replay_builtins.py tests/cli/test_replay_signature.py \
	tests/cli/test_replay_reference.py tests/cli/test_replay_hostile.py \
	tests/cli/test_replay_demo.sh tests/cli/test_replay_refusals.py tests/cli/test_replay_params.py \
	tests/cli/test_replay_hostile_args.py tests/cli/test_replay_inplace_tuple.py
## --export: repro.c of recorded BLAS calls built and run against OpenBLAS.
SCRIPT_TESTS += tests/cli/test_replay_export_blas.sh
## --shrink of BLAS calls recorded by mate-record, the cut dump exported and run on OpenBLAS.
SCRIPT_TESTS += tests/cli/test_replay_shrink_blas.sh tests/cli/test_replay_shrink_cublas.sh
## --export: repro.cu of a recorded cublasSgemm built with nvcc (skips without it).
SCRIPT_TESTS += tests/cli/test_replay_export_cuda.sh
## A cublasGemmEx made in TF32 replays within the bound of TF32 products.
SCRIPT_TESTS += tests/cli/test_replay_cublas_tf32.sh
## --export: repro.py of torch and FlashInfer calls recorded by FlashInfer's decorator,
## run under the peers' torch and Debian's.
SCRIPT_TESTS += tests/interop/test_replay_export_torch.py
## --export: repro.py of a FlashInfer wrapper's run, its __init__ and plans replayed first.
SCRIPT_TESTS += tests/interop/test_replay_export_wrapper.py
EXTRA_DIST += tests/tools/st-set.py tests/tools/record-blas.sh
EXTRA_DIST += tests/tools/replay_dumps.py


## Benchmarks (scripts; see their headers): bench/list-dumps.sh, bench/replay-many.sh.
EXTRA_DIST += bench/gen-dumps.py bench/list-dumps.sh bench/replay-many.sh
EXTRA_DIST += bench/list-details.sh

## The peers' side (run by the peers' Python, tests/run-python.sh): FlashInfer's real
## decorator records and mate lists and replays; FlashInfer's replay runs mate's dumps.
SCRIPT_TESTS += \
	tests/interop/test_flashinfer_decorator.py \
	tests/interop/test_flashinfer_logtext.py \
	tests/interop/test_flashinfer_replays_mate.py
## fi_coverage: --list-ops's and --coverage's count of the APIs the installed FlashInfer decorates.
SCRIPT_TESTS += tests/interop/test_fi_coverage.py
EXTRA_DIST += \
	tests/interop/peers/flashinfer_peer.py \
	tests/interop/peers/minilib.py \
	tests/interop/peers/golden_twin.py

## Every tool's misuse message, mate's verbs, mate-list-dumps of a missing folder.
SCRIPT_TESTS += tests/cli/test_cli_messages.sh
## The README's jq pipelines, as printed.
SCRIPT_TESTS += tests/cli/test_readme_jq.sh

## FlashInfer's batch attention, MLA, merges and KV-cache appends (replay_ops_attn.c).
SCRIPT_TESTS += tests/interop/test_flashinfer_attn.py
EXTRA_DIST += tests/interop/peers/flashinfer_attn_ref.py
## FlashInfer's trtllm-gen and XQA paged attention functions (replay_ops_trtllm.c).
SCRIPT_TESTS += tests/interop/test_flashinfer_attn_trtllm.py
## FlashInfer's MultiLevelCascadeAttentionWrapper (replay_ops_attn.c).
SCRIPT_TESTS += tests/interop/test_flashinfer_attn_cascade.py
EXTRA_DIST += tests/interop/peers/flashinfer_trtllm_ref.py

## FlashInfer's RoPE, sampling, GEMM and bit-packing APIs, and fused_rmsnorm_silu.
SCRIPT_TESTS += tests/interop/test_fi_replay_rope.py tests/interop/test_fi_replay_sampling.py \
	tests/interop/test_fi_replay_spec.py tests/interop/test_fi_replay_layernorm.py \
	tests/interop/test_fi_replay_topk_ragged.py tests/interop/test_fi_replay_topk_page_table.py \
	tests/interop/test_fi_replay_qk_norm_rope.py
SCRIPT_TESTS += tests/interop/test_fi_replay_gemm_bits.py tests/interop/test_fi_replay_norm_silu.py
## FlashInfer's block quantization: fp4_quantize, nvfp4_quantize, mxfp4, mxfp8 and
## silu_and_mul_nvfp4_quantize, its float8 rmsnorm_quant, fused_add_rmsnorm_quant and its
## block-scaled mm_fp4, mm_mxfp8 (replay_ops_quant.c).
SCRIPT_TESTS += tests/interop/test_fi_replay_quant.py tests/interop/test_fi_replay_norm_quant.py \
	tests/interop/test_fi_replay_quant_gemm.py
EXTRA_DIST += tests/interop/peers/flashinfer_quant.py
## FlashInfer 0.7.4's keyword-only batch_invariant, replayed at its default and named.
SCRIPT_TESTS += tests/interop/test_fi_newer_params.py
SCRIPT_TESTS += tests/interop/test_fi_plan_dtypes.py
## Calls in one millisecond replay in session.jsonl's order.
SCRIPT_TESTS += tests/interop/test_fi_call_order.py
## mate-replay --shrink: a norm, a GEMM and a paged decode cut to their bad row, column, request.
SCRIPT_TESTS += tests/interop/test_replay_shrink.py
EXTRA_DIST += tests/interop/peers/shrink_ref.py
EXTRA_DIST += tests/interop/peers/flashinfer_ops21.py
## mate-replay --list-ops and the table in mate-replay(1) generated from it
SCRIPT_TESTS += tests/cli/test_replay_list_ops.sh
EXTRA_DIST += man/ops-table.sh
update-man-ops: src/replay/mate-replay
	src/replay/mate-replay --list-ops | sh $(top_srcdir)/man/ops-table.sh > man-ops.tmp
	awk -v gen=man-ops.tmp '/^\.\\" BEGIN ops/ { while ((getline l < gen) > 0) print l; skip = 1 } \
	    !skip { print } /^\.\\" END ops/ { skip = 0 }' $(top_srcdir)/man/mate-replay.1 > man-page.tmp
	mv man-page.tmp $(top_srcdir)/man/mate-replay.1
	rm -f man-ops.tmp
.PHONY: update-man-ops
## A model-like serving step (prefill, decode steps, appends, RoPE, norms, sampling)
## recorded with FlashInfer's decorator replays with every call passed.
SCRIPT_TESTS += tests/interop/test_fi_model_step.py
EXTRA_DIST += tests/interop/peers/fi_model_step.py
## mate-replay --bench: timed runs of each replayed call after its verdict.
SCRIPT_TESTS += tests/cli/test_replay_bench.sh
## --shard K/N and --merge: the shares of mate-list-dumps and mate-replay, merged (issue 38).
SCRIPT_TESTS += tests/cli/test_replay_shard.sh
## The shares as the tasks of a Slurm job array, on a single-node Slurm the test starts.
SCRIPT_TESTS += tests/cli/test_replay_slurm.sh
## test_name_filter.py: MATE_DUMP_INCLUDE/EXCLUDE and --include/--exclude
## select the same calls (lib/core/util_match.c).
SCRIPT_TESTS += tests/cli/test_name_filter.py
## The paged wrappers on fp8 KV caches (e4m3, e5m2) with k_scale and v_scale.
SCRIPT_TESTS += tests/interop/test_fi_fp8_kv.py
## the per-op FLOP model of --bench and mate-bench
libmate_impl_la_SOURCES += lib/replay/op_cost.c lib/replay/op_cost.h

## mate-bench, the profile-entry benchmark tool, with its library part (input synthesis,
## lib/replay/bench_synth.c, and the per-op FLOP model, lib/replay/op_cost.c).
libmate_impl_la_SOURCES += lib/replay/bench_synth.c

bin_PROGRAMS += src/bench/mate-bench
src_bench_mate_bench_SOURCES = src/bench/mate-bench.c
src_bench_mate_bench_LDADD = src/fe/libmate_fe.la libmate.la $(CJSON_LIBS)

man_MANS += man/mate-bench.1
EXTRA_DIST += man/mate-bench.1

## test_bench_tool.py: every built-in op's problem runs with valid made-up inputs and finite
## outputs; the demo's profile, the -c form against the JSON form, unsupported and
## hostile entries.
SCRIPT_TESTS += tests/cli/test_bench_tool.py

## Fuzz target for profile lines and the command-line form.
FUZZ_TARGETS += fuzz/fuzz_bench_entry
fuzz_fuzz_bench_entry_SOURCES = fuzz/fuzz_bench_entry.c
fuzz_fuzz_bench_entry_LDFLAGS = $(FUZZER_LINK)

## Fuzz target for the replay handlers: calls of each family (a wrapper's __init__, plan and
## run; the page, sampling, RoPE, norm, product and merge calls) with lying shapes, dtypes,
## index tables and scalars.
FUZZ_TARGETS += fuzz/fuzz_replay_ops
fuzz_fuzz_replay_ops_SOURCES = fuzz/fuzz_replay_ops.c
fuzz_fuzz_replay_ops_LDFLAGS = $(FUZZER_LINK)
EXTRA_DIST += fuzz/replay_ops_seeds.py

## Fuzz target for hostile dump roots against --shrink, --export and --first (and its hash
## cache): a root packed in one input (seeds: fuzz/find_bug_seeds.py from recorded roots).
FUZZ_TARGETS += fuzz/fuzz_find_bug
fuzz_fuzz_find_bug_SOURCES = fuzz/fuzz_find_bug.c fuzz/fuzz_tmp.h $(REPLAY_FIRST_SRC) $(EXPORT_SRC)
fuzz_fuzz_find_bug_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/replay -I$(top_srcdir)/lib/replay
fuzz_fuzz_find_bug_LDADD = libmate.la $(CJSON_LIBS)
fuzz_fuzz_find_bug_LDFLAGS = $(FUZZER_LINK)
EXTRA_DIST += fuzz/find_bug_seeds.py

## test_bench_fi_step.py (peers): a serving step recorded by FlashInfer's decorator, its distinct
## calls benchmarked.
SCRIPT_TESTS += tests/interop/test_bench_fi_step.py

## test_bench_overflow: sizes past int64_t in mate-bench's entries and in a host's tensors
## (MATE_PROFILE, MATE_BENCH_LOG): refused or written out, never cast (float-cast-overflow).
check_PROGRAMS += tests/benchlog-huge
tests_benchlog_huge_SOURCES = tests/fakes/benchlog-huge.c
SCRIPT_TESTS += tests/cli/test_bench_overflow.py

## mate-replay --first: a recorded run of 3 processes (tests/first-chain) with one output
## row planted wrong in a middle call is found, with its producer; the hash cache.
check_PROGRAMS += tests/first-chain
tests_first_chain_SOURCES = tests/fakes/first-chain.c examples/minilib.c examples/minilib.h
tests_first_chain_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS) -I$(top_srcdir)/examples
tests_first_chain_LDADD = libmate.la $(OPENBLAS_LIBS) -lm
SCRIPT_TESTS += tests/cli/test_replay_first.py
## test_replay_first: XXH64 against its published vectors, timestamps as milliseconds.
C_TESTS += tests/test_replay_first
tests_test_replay_first_SOURCES = tests/unit/test_replay_first.c $(REPLAY_FIRST_SRC)
tests_test_replay_first_LDADD = libmate.la $(CJSON_LIBS)

## test_progress: long work shows done/total on a terminal (a pseudo-terminal here), never on a pipe.
SCRIPT_TESTS += tests/cli/test_progress.py

## bench/replay-blas-call: a recorded sgemm_ through mate_bench_run() (the whole handler)
## against OpenBLAS's sgemm_ called directly (make bench).
BENCH_BINS += bench/replay-blas-call
bench_replay_blas_call_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_replay_blas_call_LDADD = libmate_impl.la $(OPENBLAS_LIBS)
