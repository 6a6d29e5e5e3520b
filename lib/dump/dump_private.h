/* dump_private.h: internals shared by the dump reader, the dump listing and replay (never installed). */
#ifndef MATE_DUMP_PRIVATE_H_INCLUDED
#define MATE_DUMP_PRIVATE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "mate_private.h"

/* A bump allocator for the many small strings of a listing; freed at once. */
struct mate_arena {
	struct mate_arena_chunk *head;
};
void *mate_arena_alloc(struct mate_arena *a, size_t n);
/* Copies len bytes (len (size_t)-1: strlen) and a NUL. NULL s gives NULL. */
char *mate_arena_strndup(struct mate_arena *a, const char *s, size_t len);
/* The last component of path (trailing slashes ignored), copied into a. */
const char *mate_arena_basename(struct mate_arena *a, const char *path);
void mate_arena_free(struct mate_arena *a);
/* The link to the chunk after c (for moving one arena's chunks into another). */
struct mate_arena_chunk **mate_arena_chunk_next(struct mate_arena_chunk *c);

/* A bounded text buffer for "; "-joined problem notes. */
struct mate_notes {
	char text[1024];
	size_t len;
};
void mate_notes_add(struct mate_notes *n, const char *fmt, ...) MATE_PRINTF(2, 3);

/* Longest metadata.jsonl record read; longer ones are reported as corrupt. */
#define MATE_RECORD_MAX_BYTES (64u << 20)

/* Reads the last complete record of the file `name` relative to dirfd
 * (metadata.jsonl): fills info's record fields from it (strings copied into
 * a) and, when rec is not NULL, parses it into *rec (caller frees). Torn and
 * corrupt lines go to notes. @return 1 when a record was found, 0 when
 * none, or -errno when the file cannot be opened or read (-ENOENT: none). */
int mate_dump_read_record(int dirfd, const char *name, struct mate_dump_info *info,
    struct mate_arena *a, cJSON **rec, struct mate_notes *notes);
/* The same on a whole file held in buf. */
int mate_record_scan(const char *buf, size_t len, struct mate_dump_info *info,
    struct mate_arena *a, cJSON **rec, struct mate_notes *notes);
/* Parses one record line with cJSON (Python's NaN/Infinity tokens
 * accepted). NULL when it is not a JSON object. */
cJSON *mate_record_parse(const char *p, size_t len);

/* A JSON object's members sorted by name, then place (so that the first of
 * duplicate names is the one found, as cJSON finds it): each lookup is a
 * binary search, not a walk of every member, so looking up each of a
 * record's listed keys in its tensor_details stays n log n. The object is
 * borrowed and must outlive the index; without memory the lookups walk it. */
struct mate_json_index {
	const cJSON *obj;
	struct mate_json_index_entry *e;
	size_t n;
};
/* Progress of a long scan, called on the caller's thread: done of total. */
typedef void (*mate_progress_fn)(void *arg, size_t done, size_t total);
/* Progress of mate_dump_list_add()'s scan of a root's dumps (mate-list-dumps). */
void mate_dump_list_set_progress(mate_dump_list *l, mate_progress_fn fn, void *arg) MATE_HIDDEN;
void mate_json_index_init(struct mate_json_index *ix, const cJSON *obj) MATE_HIDDEN;
/* The member named key (NULL key or none: NULL), as cJSON_GetObjectItemCaseSensitive. */
const cJSON *mate_json_index_get(const struct mate_json_index *ix, const char *key) MATE_HIDDEN;
void mate_json_index_free(struct mate_json_index *ix) MATE_HIDDEN;

/* An empty summary: function "?", unknown numbers -1, status incomplete. */
void mate_dump_info_init(struct mate_dump_info *info);

/* The skim: validates one JSON text without allocating and locates the
 * members of its top-level object (key and value spans, unescaped keys
 * compare raw). */
struct mate_skim_member {
	const char *key, *val;
	size_t klen, vlen;
};
/* 1 when p is a JSON object (NaN and Infinity allowed); its first max
 * members go to m, their number to *n. 2 when it is one only if what is
 * nested deeper than 128 levels is valid, which was not checked: the
 * caller checks with the full parser (mate_record_parse). */
int mate_skim_object(const char *p, size_t len, struct mate_skim_member *m, size_t max, size_t *n);
/* 1 when p is a JSON array; *count gets its length. */
int mate_skim_array_len(const char *p, size_t len, size_t *count);
const struct mate_skim_member *mate_skim_find(const struct mate_skim_member *m, size_t n,
    const char *key);

/* Fills info's timestamp, process id and function from a dump directory's
 * name ("YYYYMMDD_HHMMSS_mmm_pidPID_FUNC_callNNNN"). @return 1 when the
 * name has that form, else 0 (info untouched). */
int mate_dump_info_from_name(struct mate_dump_info *info, const char *name,
    struct mate_arena *a);
/* Whether name has a dump directory's form. */
int mate_dump_name_matches(const char *name);
/* Reorders, in items[0..n) sorted by timestamp, process and path, each run of
 * dumps of one millisecond, one process and one folder by the order that
 * folder's session.jsonl first names them (read as a stream, a regular file
 * only). @return how many dumps of such runs it could not order (no
 * session.jsonl, or one that lacks them), example naming two. */
size_t mate_dump_session_order(struct mate_dump_info *items, size_t n, char *example, size_t len)
    MATE_HIDDEN;

/* Decodes one recorded non-tensor value: raw JSON, the structured form
 * ({"type": "list", "items": [...]}), MATE's string form ({"type": "list",
 * "value": "[1, 2]"}), dtypes, enums and other objects. Never NULL except
 * on allocation failure; what cannot be decoded becomes an object value. */
mate_value *mate_record_decode_value(const cJSON *j, mate_error *err);
/* Parses a Python literal as repr() writes it (None, True, ints, floats,
 * nan/inf, strings, bytes, lists, tuples, dicts, torch.dtype, <Enum.X: n>).
 * @return the value, or NULL with MATE_ERR_FORMAT. */
mate_value *mate_pyliteral_parse(const char *s, size_t len, mate_error *err);

/* The record's parsed JSON (borrowed from d): mate-replay --shrink copies it. */
const cJSON *mate_dump_record(const mate_dump *d);
/* The record's function_signature (borrowed from d), or NULL. */
const char *mate_dump_signature(const mate_dump *d);

/* Reads the tensors of a .pt or .safetensors file as a dict of key to
 * tensor; load_data 0 reads only metadata (safetensors: the header). */
mate_value *mate_dump_read_tensors(const char *path, int load_data, mate_error *err);

/* The extension of a dump's tensor file to try i-th (0, then 1): the
 * record's tensor_format first ("safetensors", else torch's .pt), so that
 * mate-replay and mate-list-dumps read the same file when both exist. */
const char *mate_dump_tensor_ext(const char *format, int i);

/* Checks the tensors of one tensor file (named rel in messages) against the
 * record: each key it lists under list ("input_tensor_keys", ...) is in
 * the file, the file holds no other, and each one's dtype and shape are
 * those of its tensor_details (where the record has them); the in-place
 * file's tensors ("inplace_tensor_keys") are arguments' (arg_<i>,
 * kwarg_<name>), and a record without that list lists none of them.
 * mate-replay and mate-list-dumps -d both check with it, so that they say
 * the same of a dump. @return MATE_OK, or MATE_ERR_FORMAT with err naming
 * the first disagreement. */
int mate_dump_check_tensors(const cJSON *rec, const char *list, const char *rel,
    const mate_value *tensors, mate_error *err);

/* Tensor comparison used by replay (replay_compare.c). Fills the numeric
 * fields of res and returns 1 when got matches expected, 0 when not (with
 * res->message saying where and by how much). rtol/atol < 0: defaults. */
int mate_replay_compare_tensor(const char *key, const mate_tensor *expected,
    const mate_tensor *got, double rtol, double atol, struct mate_replay_result *res);
/* The operands of a matrix product (a [M, K] by b [K, N], or batched [B, M,
 * K] by [B, K, N]) whose output a comparison bounds by its reduction. */
struct mate_reduction {
	const mate_tensor *a, *b;   /* a matrix product's operands; or NULL, and: */
	int64_t k;                  /* each output element is a sum of at most k terms */
	double magnitude;           /* whose magnitudes add up to at most this, */
	int relative;               /* plus |expected| itself (a norm's output scales with it) */
	double u;                   /* the accumulation's unit roundoff */
	/* a product's bound is scale (|a| |b|)ij, plus |expected|ij where relative: a GEMM's
	 * alpha A B + beta C (mate_replay_set_reduction_gemm()); scale 0 reads as 1 */
	double scale;
	double gemm_u;              /* a product's unit roundoff where its record's arithmetic
	                             * was coarser than its operands' (TF32, FP16 products:
	                             * mate_replay_set_reduction_unit()); 0: the operands' */
	mate_tensor av, bv;         /* views of the operands a and b may point at */
};
/* mate_replay_compare_tensor() for the output of the product red (NULL:
 * none): each element may differ by the forward-error bound of two
 * computations of a K-term sum, 2 K u (|a| |b|)ij (u the unit roundoff of
 * the accumulation: double's for float64 operands, else float's; times
 * red->scale, plus 2 K u |expected|ij where red->relative) or, for
 * another reduction (red->a NULL, red->k > 0), 2 K u (M + |expected|
 * where relative), beyond
 * atol + rtol |expected|; res->bound_ratio is the largest error as a
 * multiple of its element's whole tolerance. A product whose operands are
 * not on the host, or do not fit the output, is compared without one. */
/* How red's bound reads in a verdict: "2 K u (|A| |B|)ij", "2 K u M" or "2 K u |y|". */
const char *mate_reduction_form(const struct mate_reduction *red) MATE_HIDDEN;
int mate_replay_compare_reduction(const char *key, const mate_tensor *expected,
    const mate_tensor *got, double rtol, double atol, const struct mate_reduction *red,
    struct mate_replay_result *res);
/* The same for non-tensor values (numbers within tolerance, the rest equal). */
int mate_replay_compare_value(const char *key, const mate_value *expected,
    const mate_value *got, double rtol, double atol, struct mate_replay_result *res);
/* Formats a value briefly (for messages) into buf. */
void mate_value_format_brief(const mate_value *v, char *buf, size_t len);

#endif /* MATE_DUMP_PRIVATE_H_INCLUDED */
