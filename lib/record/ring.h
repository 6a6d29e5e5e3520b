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

/* A tensor of a ring entry: its description (the record's tensor_details) and, when its
 * bytes are kept, those on the host. */
struct mate_ring_tensor {
	const char *key;
	int file;                   /* MATE_RING_INPUTS, _OUTPUTS or _INPLACE */
	const mate_tensor *t;       /* as the call has it: shape, dtype, strides, device */
	const mate_tensor *host;    /* its bytes on the host; NULL: not kept */
	int64_t nbytes;             /* mate_tensor_nbytes(t), as the writer's caller has it */
};

/* The fields a ring entry keeps of a call's record (the rest the reader makes): a CALL
 * entry's name through self_id and its input_metadata as meta, an END entry's status
 * through completed and, when it completed, its output_metadata as meta. */
struct mate_ring_rec {
	const char *name, *module, *signature, *stamp, *version, *backend;
	int64_t seq, pid;
	int has_self;
	uint64_t self_id;
	const char *status, *extra_key, *extra;   /* extra_key NULL: none */
	int completed;
	const char *meta;           /* JSON text */
	size_t metalen;
};

/* Whether the recorder keeps a ring (MATE_RING=N at level 10), making it on
 * first use in this process; a warning once and 0 when it cannot. */
int mate_ring_active(void) MATE_HIDDEN;

/* A new call's number in this process's ring (from 1). */
uint64_t mate_ring_next_id(void) MATE_HIDDEN;

/* Puts an entry of call id: its record's fields and tensors (their bytes copied from
 * host, checksummed as they are copied). A call whose tensors do not fit the ring keeps
 * their descriptions only (and says so). 0, or -1 when nothing was kept. */
int mate_ring_put(int kind, uint64_t id, const struct mate_ring_rec *r,
    const struct mate_ring_tensor *t, size_t n) MATE_HIDDEN;

/* A call as the reader has it: its CALL entry's fields and tensors and, when it has
 * ended, its END entry's (end NULL: not yet). */
struct mate_ring_call {
	const struct mate_ring_rec *call, *end;
	const struct mate_ring_tensor *cts, *ets;
	size_t ncts, nets;
	const char *format;         /* "torch" or "safetensors" */
	const char *dir;            /* the dump directory it is written to */
};

/* Its record as level 10 writes it (dump_writer.c): the first one (k->end NULL) or the
 * last, a metadata.jsonl line with its newline, into b (initialised here). 0, or -1 out
 * of memory. */
int mate_rec_ring_record(struct mate_buf *b, const struct mate_ring_call *k) MATE_HIDDEN;

/* Its dump directory's name, "STAMP_pidPID_NAME_callNNNN" (the name made safe), into b
 * (initialised here). 0, or -1 out of memory. */
int mate_rec_ring_dir_name(struct mate_buf *b, const char *stamp, int64_t pid, const char *name,
    int64_t seq) MATE_HIDDEN;

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
