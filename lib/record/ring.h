/* ring.h: the flight recorder (MATE_RING): the last calls' tensors in a shared memory file that outlives the process, and the reader that turns such a file into ordinary dumps. */
#ifndef MATE_RING_H_INCLUDED
#define MATE_RING_H_INCLUDED

#include "mate_private.h"

#include <stddef.h>
#include <stdint.h>

/* The tensor files of a call, as the dump writer names them. */
enum { MATE_RING_INPUTS, MATE_RING_OUTPUTS, MATE_RING_INPLACE };

/* An entry's kind: a call's inputs (its first record), or its end (the
 * second record, with the outputs and in-place values). */
enum { MATE_RING_CALL = 1, MATE_RING_END = 2 };

struct mate_ring_tensor {
	const char *key;
	int file;                   /* MATE_RING_INPUTS, _OUTPUTS or _INPLACE */
	const mate_tensor *t;       /* on the host */
};

/* Whether the recorder keeps a ring (MATE_RING=N at level 10), making it on
 * first use in this process; a warning once and 0 when it cannot. */
int mate_ring_active(void) MATE_HIDDEN;

/* A new call's number in this process's ring (from 1). */
uint64_t mate_ring_next_id(void) MATE_HIDDEN;

/* Puts an entry: call id's record line (the metadata.jsonl line, with its
 * newline), dir (the dump directory the record names; CALL entries only)
 * and tensors. A call whose tensors do not fit the ring keeps its record
 * only (and says so). 0, or -1 when nothing was kept. */
int mate_ring_put(int kind, uint64_t id, const char *dir, const char *line, size_t linelen,
    const struct mate_ring_tensor *t, size_t n) MATE_HIDDEN;

/* What mate_ring_convert() found and wrote. */
struct mate_ring_stats {
	int64_t pid;                /* the process that wrote the ring */
	uint64_t keep;              /* the calls it keeps (MATE_RING) */
	size_t calls;               /* dumps written */
	size_t completed;           /* of those, calls that returned (or failed) */
	size_t records_only;        /* of those, calls whose tensors did not fit */
	size_t torn;                /* entries skipped: begun but never finished */
	size_t already;             /* calls an earlier flush wrote whole (not counted above) */
};

/* Rebuilds the complete entries of the ring file at path (after its writer
 * died, or while it runs) and writes the last calls as ordinary dumps into
 * outdir (a new or empty folder; written under a temporary name beside it
 * and renamed at the end): each call's directory, tensor files and
 * metadata.jsonl, and session.jsonl in call order. A call that had not
 * returned keeps its inputs ("inputs_saved"). */
int mate_ring_convert(const char *path, const char *outdir, struct mate_ring_stats *st,
    mate_error *err) MATE_HIDDEN;

/* The same into the dump root root (made when needed) as level 10 would have left
 * the calls: each call's directory, session.jsonl appended; a call an earlier flush
 * wrote is skipped, or completed when it has returned since. */
int mate_ring_write_root(const char *path, const char *root, struct mate_ring_stats *st,
    mate_error *err) MATE_HIDDEN;

/* MATE_RING_ON=fail: whether a call that fails (a recorded mate_call_fail(), an
 * interposed CUDA or cuBLAS call that returns an error) writes the ring out. */
int mate_ring_write_on_fail(void) MATE_HIDDEN;

/* For fuzzing: sets the head's and every entry's checksum of a ring file image
 * in memory to match its bytes, so that changed payloads reach the reader. */
void mate_ring_reseal(unsigned char *file, size_t size) MATE_HIDDEN;

#endif /* MATE_RING_H_INCLUDED */
