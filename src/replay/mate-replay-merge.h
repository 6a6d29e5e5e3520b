/* mate-replay-merge.h: mate-replay --shard (the share's calls, its closing object) and --merge (mate-replay-merge.c). */
#ifndef MATE_REPLAY_MERGE_TOOL_H_INCLUDED
#define MATE_REPLAY_MERGE_TOOL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#include "fe.h"
#include "mate_replay.h"

/* The whole selection a share was cut from. */
struct replay_share {
	size_t *index;              /* each kept call's index (0-based) in the selection */
	size_t selected;            /* the calls selected, all shares together */
	uint64_t listing;           /* FNV-1a 64 of their names, in order */
};

/* Keeps in sel[0..nsel) the calls of share s, in their order, and fills sh
 * (sh->index is the caller's to free). @return how many were kept. */
size_t replay_shard_cut(const struct mate_fe_shard *s, const struct mate_dump_info **sel,
    size_t nsel, struct replay_share *sh);

/* The share's closing JSON line on stdout: {"shard":"K/N","roots":[...],
 * "version":...,"listed":...,"selected":...,"dumps":...,"listing":"hex"}. */
void replay_shard_close(const struct mate_fe_shard *s, const char *const *paths, size_t npaths,
    size_t listed, const struct replay_share *sh, size_t ndumps);

/* One call of the merged replay, in the root's order: i its index (0-based),
 * d->function and d->name, r's verdict, message and bench figures as the
 * share printed them, line its JSON line as it was. */
typedef void (*replay_merge_fn)(size_t i, const struct mate_dump_info *d,
    const struct mate_replay_result *r, const char *line, void *ctx);

/* --merge: reads files[0..n), the --jsonl --shard K/N output of every share
 * of one replay, checks that they are that (each share once, the same
 * root, selection and mate version) and hands each call to fn in the
 * root's order. *listed: the dumps the shares listed. @return 0, or 2
 * (message printed) when they are not the shares of one replay. */
int replay_merge(const char *const *files, size_t n, replay_merge_fn fn, void *ctx,
    size_t *listed);

/* The line mate-replay prints for one call (mate-replay.c). */
void print_text(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *r,
    int utf8);

#endif
