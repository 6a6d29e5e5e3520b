/* benchlog.h: MATE_BENCH_LOG, a runnable script of one mate-bench line per distinct call
 * shape (benchlog.c); the profile's shape table (profile.c) decides what is new. */
#ifndef MATE_BENCHLOG_H_INCLUDED
#define MATE_BENCHLOG_H_INCLUDED

#include <stddef.h>

#include <cjson/cJSON.h>

#include "mate_private.h"

/* The command-line form of a profile entry (its shape object: function, module, tensors,
 * scalars), "mate-bench [-m MODULE] -c FUNCTION KEY=SPEC ...\n" as mate(7)
 * words it; malloc'ed, NULL when the entry has no function or memory ran out. */
char *mate_bench_line(const cJSON *shape) MATE_HIDDEN;

/* The rest is called with the profile's lock held (profile.c). */

/* The log's path template (%i: the pid), or NULL for none: closes the file of the old one.
 * Returns whether the destination changed (the shapes then go to the new file again). */
int mate_rec_benchlog_set(const char *tmpl) MATE_HIDDEN;
/* Whether a log is configured. */
int mate_rec_benchlog_on(void) MATE_HIDDEN;
/* Appends the line of a new shape, canon its canonical object without the closing brace
 * (profile.c's entry); the file is opened, and gets its header, on the first line. */
void mate_rec_benchlog_put(const char *canon, size_t len) MATE_HIDDEN;
/* In a forked child: with %i in the path the child writes its own file, from its own first
 * line (returns 1: the shapes are new to it); without, it shares its parent's (0). */
int mate_rec_benchlog_atfork_child(void) MATE_HIDDEN;

#endif /* MATE_BENCHLOG_H_INCLUDED */
