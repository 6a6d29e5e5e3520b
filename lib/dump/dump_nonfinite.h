/* dump_nonfinite.h: where a NaN was born: the NaN and infinity scan of a dump list's tensor files (mate-list-dumps --nonfinite). */
#ifndef MATE_DUMP_NONFINITE_H_INCLUDED
#define MATE_DUMP_NONFINITE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "mate_private.h"
#include "mate_replay.h"

enum mate_nf_kind { MATE_NF_INPUT, MATE_NF_OUTPUT, MATE_NF_INPLACE };

/* A tensor holding NaN or infinities. */
struct mate_nf_tensor {
	char *key;
	int kind;                    /* enum mate_nf_kind; MATE_NF_INPLACE: the post-call value */
	mate_dtype dtype;
	int ndim;
	int64_t shape[MATE_MAX_DIMS];
	int64_t numel, nan, posinf, neginf;
	int64_t first;               /* row-major index of the first non-finite element */
};

/* One dump of the list, in the list's order. */
struct mate_nf_call {
	const struct mate_dump_info *info;   /* borrowed from the list */
	struct mate_nf_tensor *t;    /* its non-finite tensors: inputs first, then outputs */
	size_t nt;
	size_t inputs_nonfinite;     /* tensors among t that are inputs */
	size_t outputs_nonfinite;    /* outputs and in-place tensors among t */
	int inputs_known;            /* every input tensor was read (or it has none) */
	int origin;                  /* the scan's origin */
	char *problem;               /* what could not be read ("; "-joined), or NULL */
};

struct mate_nf_scan {
	struct mate_nf_call *calls;  /* one per dump of the list */
	size_t n;
	size_t origin;               /* the first call whose inputs were all finite (and read)
	                                and whose outputs were not, or (size_t)-1 */
	size_t first_input;          /* the first call with a non-finite input, or (size_t)-1 */
	size_t listed;               /* calls with non-finite outputs */
	size_t problems;             /* calls with a problem */
	uint64_t bytes;              /* tensor bytes read */
};

/* Reads the tensor files (inputs, outputs, in-place) of every dump of l,
 * sorted first by the caller (mate_dump_list_sort()), once each, on threads
 * threads (0: one per CPU), streaming each storage in MATE_STREAM_CHUNK
 * pieces; counts NaN, +inf and -inf of every floating tensor as its view
 * covers them. Unreadable files are each call's problem, never the scan's.
 * @return MATE_OK with *out (caller frees), or MATE_ERR_NOMEM. */
int mate_dump_nonfinite(const mate_dump_list *l, int threads, struct mate_nf_scan **out,
    mate_error *err) MATE_HIDDEN;
/* The same, with progress (dumps scanned of all) called on this thread. */
int mate_dump_nonfinite_progress(const mate_dump_list *l, int threads,
    void (*progress)(void *arg, size_t done, size_t total), void *arg,
    struct mate_nf_scan **out, mate_error *err) MATE_HIDDEN;
void mate_nf_scan_free(struct mate_nf_scan *s) MATE_HIDDEN;
/* The multi-index of element `first` of t: "[12, 3]" ("[]" for a scalar). */
void mate_nf_index_format(const struct mate_nf_tensor *t, char *buf, size_t len) MATE_HIDDEN;
/* The index's parts into idx (t->ndim of them). */
void mate_nf_index(const struct mate_nf_tensor *t, int64_t *idx) MATE_HIDDEN;

#endif /* MATE_DUMP_NONFINITE_H_INCLUDED */
