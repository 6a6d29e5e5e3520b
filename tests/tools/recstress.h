/* recstress.h: the recorded workload of the recorder's crash and stress tests: an add() on two small tensors whose values encode a tag. */
#ifndef MATE_RECSTRESS_H_INCLUDED
#define MATE_RECSTRESS_H_INCLUDED

#include <cJSON.h>

#include "mate_record.h"

#define RS_N 32  /* elements per tensor */

/* Level 10 into root (.pt when pt, else safetensors), no count or size
 * limit, the text log to /dev/null. Exits the process on failure. */
void rs_configure(const char *root, int pt);
/* One recorded call add(a, b, tag=tag) -> a + b, where a and b hold
 * values derived from tag; checks the sum. 0 when it is right. */
int rs_call(long tag);
/* Begins the call of rs_call() and saves its inputs, but does not run it. */
mate_call *rs_begin(long tag);
/* Runs and ends a call from rs_begin(). */
int rs_end(mate_call *c, long tag);
/* nthreads threads, each making calls calls (forever when calls < 0),
 * thread t using the tags t * 1000000 + i. Returns the failures. */
long rs_run_threads(int nthreads, long calls);
/* A dc_tensor_check for the dumps of this workload: tensors arg_0, arg_1
 * and result hold exactly the values of the call's tag (taken from the
 * record's kwarg_tag; without a record, values consistent with some tag). */
int rs_check_tensor(const cJSON *record, const char *key, const mate_tensor *t,
    int is_output, void *ctx);
/* Whether /dev/shm is a writable tmpfs, where tens of thousands of dumps
 * are quick to write and remove. */
int rs_shm_usable(void);
/* The format both tests take first, `TEST [safetensors|pt] [CASE...]`:
 * takes a first argument "pt" or "safetensors" off *argc and *argv (the
 * program's name moves up). @return 1 for "pt", 0 else. */
int rs_format_arg(int *argc, char ***argv);

#endif /* MATE_RECSTRESS_H_INCLUDED */
