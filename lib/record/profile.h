/* profile.h: MATE_PROFILE, the table of distinct call shapes (profile.c), and the same shape
 * read from a dump's record (mate-list-dumps --unique). */
#ifndef MATE_PROFILE_H_INCLUDED
#define MATE_PROFILE_H_INCLUDED

#include <stdint.h>

#include <cjson/cJSON.h>

#include "mate_private.h"
#include "mate_record.h"

struct mate_call;

/* Non-zero while a profile or a bench log is being kept (read on every call). */
extern int mate_rec_profile_on_ MATE_HIDDEN;
#define MATE_REC_PROFILE_ON() __atomic_load_n(&mate_rec_profile_on_, __ATOMIC_RELAXED)

/* The profile's path template (%i: the pid), or NULL or "" for none; a new path writes the
 * old table first. Installs the exit and signal hooks once. bench_log: MATE_BENCH_LOG's
 * template (benchlog.h), which keeps the table of shapes without a profile. */
void mate_rec_profile_configure(const char *tmpl, const char *bench_log) MATE_HIDDEN;
/* A level-1 call kept for the profile only (no strings copied, no arguments kept), from the
 * thread's pool; NULL when out of memory. mate_rec_profile_release() gives it back. */
struct mate_call *mate_rec_profile_call(const char *name, const char *module) MATE_HIDDEN;
void mate_rec_profile_release(struct mate_call *c) MATE_HIDDEN;
/* Starts the shape of a call of any level (c->profile set): 0, or -1 when out of memory. */
int mate_rec_profile_begin(struct mate_call *c, const char *name, const char *module) MATE_HIDDEN;
/* The call's input arguments, as they arrive (defaults and results are not its shape). */
void mate_rec_profile_tensor(struct mate_call *c, int flags, const char *name,
    const mate_tensor *t) MATE_HIDDEN;
void mate_rec_profile_int(struct mate_call *c, int flags, const char *name, int64_t v) MATE_HIDDEN;
void mate_rec_profile_float(struct mate_call *c, int flags, const char *name, double v) MATE_HIDDEN;
void mate_rec_profile_bool(struct mate_call *c, int flags, const char *name, int v) MATE_HIDDEN;
void mate_rec_profile_str(struct mate_call *c, int flags, const char *name,
    const char *s) MATE_HIDDEN;
void mate_rec_profile_none(struct mate_call *c, int flags, const char *name) MATE_HIDDEN;
void mate_rec_profile_dtype(struct mate_call *c, int flags, const char *name,
    mate_dtype dt) MATE_HIDDEN;
void mate_rec_profile_enum(struct mate_call *c, int flags, const char *name,
    const char *enum_name, int64_t v) MATE_HIDDEN;
void mate_rec_profile_value(struct mate_call *c, int flags, const char *name,
    const mate_value *v) MATE_HIDDEN;
void mate_rec_profile_self(struct mate_call *c) MATE_HIDDEN;
/* Counts one call of c's shape that took ns nanoseconds (failed: it reported an error). */
void mate_rec_profile_add(struct mate_call *c, uint64_t ns, int failed) MATE_HIDDEN;
/* fork handlers: the child keeps the shapes but none of its parent's counts. */
void mate_rec_profile_atfork_prepare(void) MATE_HIDDEN;
void mate_rec_profile_atfork_parent(void) MATE_HIDDEN;
void mate_rec_profile_atfork_child(void) MATE_HIDDEN;

/* The canonical shape object of a dump's record, as a profile entry holds it before its
 * counts ({"function", "module", "tensors", "scalars"}; malloc'ed text), and its key (16 hex
 * digits); NULL when the record names no function or memory ran out. */
char *mate_profile_shape_from_record(const cJSON *rec, char key[17]) MATE_HIDDEN;
/* The key of a canonical shape text: 16 hex digits of its 64-bit FNV-1a hash (mate-bench
 * keys the command-line form of an entry the same way). */
void mate_profile_text_key(const char *text, char key[17]) MATE_HIDDEN;

#endif /* MATE_PROFILE_H_INCLUDED */
