/* mate-replay-first.h: mate-replay --first, the first wrong call and its inputs' producers (mate-replay-first.c). */
#ifndef MATE_REPLAY_FIRST_TOOL_H_INCLUDED
#define MATE_REPLAY_FIRST_TOOL_H_INCLUDED

#include <stddef.h>

#include "mate_replay.h"

/* Replays sel[0..nsel) (selected from the sorted list l, in its order) until the
 * first wrong call, then prints where it stands and its inputs' producers (one
 * JSON object with jsonl). @return the exit status: 0 none wrong, 1 one found
 * or nothing selected, 2 the replay could not run. */
int replay_first(mate_replay *r, const mate_dump_list *l, const struct mate_dump_info **sel,
    size_t nsel, int jobs, int jsonl);

/* The words of a verdict as mate-replay prints them (mate-replay.c). */
const char *verdict_words(int v, int utf8);

#endif
