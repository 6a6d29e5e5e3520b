/* replay-memlog.h: mate-replay's --memlog mode (allocation replay of a memory log). */
#ifndef MATE_REPLAY_MEMLOG_H_INCLUDED
#define MATE_REPLAY_MEMLOG_H_INCLUDED

#include <stddef.h>

/* Replays the memory log at path against allocators[0..n) (n 0: malloc
 * and pool), repeat times each; prints a line per replay. @return the
 * exit status: 0 all ran, 1 the log is inconsistent or an allocator
 * failed, 2 usage (unknown or unavailable allocator) or unreadable log. */
int mate_replay_memlog_main(const char *path, const char *const *allocators, size_t n,
    long long repeat);

#endif /* MATE_REPLAY_MEMLOG_H_INCLUDED */
