/* replay_first.h: the first wrong call of a recorded run and where its inputs came from (mate-replay --first); compiled into mate-replay, never installed. */
#ifndef MATE_REPLAY_FIRST_H_INCLUDED
#define MATE_REPLAY_FIRST_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "mate_replay.h"

#define MATE_FIRST_NONE ((size_t)-1)

/* The name of the file, in each dump root, that caches tensor hashes: a
 * dot-file, which mate's, MATE's and FlashInfer's listings and replays (they
 * walk the root's subdirectories) never read. */
#define MATE_FIRST_CACHE ".mate-tensor-hashes"

/* What replaying the calls in order up to the first wrong one found. */
struct mate_first_scan {
	size_t wrong;               /* index in the calls given of the first one whose verdict
	                               is a mismatch, an error or "now runs"; MATE_FIRST_NONE */
	size_t replayed;            /* calls replayed up to and with it (all when none) */
	size_t unsupported;         /* of those, unsupported calls passed over */
	struct mate_replay_result result;  /* the wrong call's */
};

/* Replays calls[0..n) in their order, jobs at a time (in batches of a few
 * calls per thread, so that the search stops soon after the first wrong call
 * whatever the order results come in), until a call's verdict is a mismatch,
 * an error or "now runs". @return MATE_OK or a negative status (threads). */
int mate_first_scan(mate_replay *r, const struct mate_dump_info *const *calls, size_t n,
    int jobs, struct mate_first_scan *out, mate_error *err);

/* One tensor input of the wrong call and the nearest earlier call whose
 * outputs hold the same tensor (dtype, shape and bytes). */
struct mate_first_input {
	char name[192];             /* "q", "kv[1]": the parameter's name where the recorded
	                               signature gives it, else the key */
	char key[192];              /* its key in the inputs file: "arg_0", "arg_2__1" */
	size_t producer;            /* that call's index in the list, or MATE_FIRST_NONE */
	char output[192];           /* the producer's output: "result", "result_1", or
	                               the key of an argument written in place */
	int in_place;               /* output is an argument's value after the call */
};

struct mate_first_flow {
	struct mate_first_input *inputs;
	size_t n;
	size_t read;                /* earlier calls whose outputs were read (to hash them,
	                               or to confirm a cached hash byte for byte) */
	size_t cached;              /* earlier calls the cache described */
	char problem[600];          /* why the call's inputs could not be read, or "" */
};

/* For each tensor input of call `at` of the sorted list l, the nearest earlier
 * call (in the list's order) one of whose outputs holds exactly that tensor:
 * its 64-bit content hash (XXH64 of the bytes, seeded with the dtype and
 * shape) matches, and the two are then compared byte for byte. Hashes of
 * earlier calls' outputs are read from and written to each root's
 * MATE_FIRST_CACHE when it can be. @return MATE_OK (a call whose inputs
 * cannot be read has its problem set) or MATE_ERR_NOMEM. */
int mate_first_trace(const mate_dump_list *l, size_t at, struct mate_first_flow *f,
    mate_error *err);
void mate_first_flow_free(struct mate_first_flow *f);

/* "YYYYMMDD_HHMMSS_mmm" as milliseconds since 1970 (as if UTC), or -1. */
int64_t mate_first_timestamp_ms(const char *ts);

/* XXH64 of n bytes (xxHash's, from its header). */
uint64_t mate_first_xxh64(const void *p, size_t n, uint64_t seed);

#endif /* MATE_REPLAY_FIRST_H_INCLUDED */
