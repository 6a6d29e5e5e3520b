/* replay_export.h: mate-replay --export: one recorded call written out as a standalone reproducer (repro.py, or repro.c and a Makefile) with its tensors and a README. */
#ifndef MATE_REPLAY_EXPORT_H_INCLUDED
#define MATE_REPLAY_EXPORT_H_INCLUDED

#include "mate_core.h"

struct mate_export {
	double rtol, atol;          /* mate-replay's --rtol/--atol; negative: by dtype */
	const char *command;        /* the command line, for the README (NULL: none) */
	const char *kind;           /* out: "python", "c" or "cuda" */
};

/*! mate_export_dump() : writes the reproducer of the dump in `dump` into the
 * folder `dir`, which must not exist or be empty: everything is written into
 * a temporary folder beside it, renamed to `dir` at the end, and removed on
 * any error. @return MATE_OK; MATE_ERR_ARGUMENT for a `dir` that is not an
 * empty folder; MATE_ERR_UNSUPPORTED for a call that cannot be exported (the
 * reason in err); another negative status for an unreadable dump or a write
 * that failed. */
int mate_export_dump(const char *dump, const char *dir, struct mate_export *x, mate_error *err);

#endif /* MATE_REPLAY_EXPORT_H_INCLUDED */
