#!/bin/sh
# replay_list_ops.sh: mate-replay --list-ops prints every handler (name, signature, dtypes, devices; as JSON with --jsonl), at least 40 of them FlashInfer's APIs, and the table in mate-replay(1) is exactly what man/ops-table.sh makes of it (run `make update-man-ops` after changing a handler).
set -u
b=$top_builddir
s=$top_srcdir
rp=$b/src/replay/mate-replay
. "$s/tests/checks.sh"
checks_tmpdir list-ops
no() { echo "FAIL: $*"; checks_failed; }

checks_ran
"$rp" --list-ops > "$tmp/ops" 2> "$tmp/err" || no "--list-ops exits $?: $(cat "$tmp/err")"
checks_ran
bad=$(awk -F '\t' 'NF != 4 || $3 == "-" || $4 == "-"' "$tmp/ops")
[ -z "$bad" ] || no "lines without 4 fields, dtypes or devices: $bad"
for op in rmsnorm fused_add_rmsnorm apply_rope apply_llama31_rope_pos_ids_inplace \
    apply_rope_with_cos_sin_cache top_k_top_p_sampling_from_logits top_k mm_bf16 mm_fp8 \
    segment_packbits fused_rmsnorm_silu SegmentGEMMWrapper.run; do
	checks_ran
	grep -q "^$op	(" "$tmp/ops" || no "$op is not listed"
done
# FlashInfer's APIs: everything but torch's methods and the BLAS calls
checks_ran
n=$(grep -v -e '^Tensor\.' -e '^cblas_' -e '^[sd]gemm_' -e '^cublas' "$tmp/ops" | cut -f1 | sort -u | wc -l)
[ "$n" -ge 40 ] || no "$n of FlashInfer's APIs listed, expected at least 40"
checks_ran
grep -q "^rmsnorm	(input, weight, eps=1e-06, out=None, enable_pdl=None)	float32, float16, bfloat16, float64	cpu, cuda$" \
    "$tmp/ops" || no "rmsnorm's line: $(grep '^rmsnorm	' "$tmp/ops")"
# Every FlashInfer API states its signature, the wrappers' methods FlashInfer's own (with
# *args or **kwargs, their arguments read as recorded).
checks_ran
bad=$(grep -v -e '^Tensor\.' -e '^cblas_' -e '^[sd]gemm_' -e '^cublas' "$tmp/ops" | awk -F '\t' '$2 == "-"')
[ -z "$bad" ] || no "FlashInfer APIs listed without a signature: $bad"
checks_ran
grep -q "^BatchDecodeWithPagedKVCacheWrapper.plan	(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, \*deprecated_positional_args, \*\*kwargs)	" \
    "$tmp/ops" || no "the decode plan's line: $(grep '^BatchDecodeWithPagedKVCacheWrapper.plan	' "$tmp/ops")"
checks_ran
grep -q "^BatchPrefillWithRaggedKVCacheWrapper.run	(self, q, k, v, \*args, q_scale=None, k_scale=None, v_scale=None, o_scale=None, out=None, lse=None, return_lse=False, lse_base='log2', lse_layout='NH', enable_pdl=None, kv_cache_sf=None)	" \
    "$tmp/ops" || no "the ragged run's line: $(grep '^BatchPrefillWithRaggedKVCacheWrapper.run	' "$tmp/ops")"

checks_ran
"$rp" --list-ops --jsonl > "$tmp/jsonl" || no "--list-ops --jsonl exits $?"
checks_ran
[ "$(wc -l < "$tmp/jsonl")" -eq "$(wc -l < "$tmp/ops")" ] || no "--jsonl lists another number of handlers"
checks_ran
grep -q '^{"name":"apply_rope","module":null,"signature":"(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=1, rope_theta=10000.0)","dtypes":"float32, float16, bfloat16","devices":"cpu"}$' \
    "$tmp/jsonl" || no "apply_rope's JSON: $(grep '"apply_rope"' "$tmp/jsonl")"

checks_ran
"$rp" --list-ops "$tmp" > /dev/null 2> "$tmp/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "takes no dump directory" "$tmp/err" || no "--list-ops with a path: exit $rc: $(cat "$tmp/err")"

# The man page's table is generated from the listing.
sh "$s/man/ops-table.sh" < "$tmp/ops" > "$tmp/want"
sed -n '/^\.\\" BEGIN ops/,/^\.\\" END ops/p' "$s/man/mate-replay.1" > "$tmp/have"
checks_ran
[ -s "$tmp/have" ] || no "man/mate-replay.1 has no generated ops table"
checks_ran
diff -u "$tmp/have" "$tmp/want" > "$tmp/diff" ||
	no "man/mate-replay.1's ops table drifted from --list-ops (make update-man-ops): $(head -20 "$tmp/diff")"
checks_done
