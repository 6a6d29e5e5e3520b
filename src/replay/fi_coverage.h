/* fi_coverage.h: mate-replay --list-ops's coverage of the FlashInfer installed (fi_coverage.c). */
#ifndef MATE_FI_COVERAGE_H_INCLUDED
#define MATE_FI_COVERAGE_H_INCLUDED

#include "mate_replay.h"

/* The APIs the installed FlashInfer decorates, against r's handlers: a summary line on
 * standard error (none where no FlashInfer is found), and with list each API on standard
 * output ("NAME\treplays" or "NAME\t-", or JSON objects). @return an exit status. */
int mate_fi_coverage(const mate_replay *r, int list, int jsonl);

#endif /* MATE_FI_COVERAGE_H_INCLUDED */
