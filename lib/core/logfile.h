/* logfile.h: opening the files the recorder appends to (logs, session.jsonl) without blocking its host or crossing a planted symlink. */
#ifndef MATE_LOGFILE_H_INCLUDED
#define MATE_LOGFILE_H_INCLUDED

#include <errno.h>

/* Who chose the name given to mate_log_open(). */
/* The errno of a refused kind of file (Linux never gives it for a file). */
#define MATE_ENOTREG EMEDIUMTYPE

enum mate_log_name {
	MATE_LOG_MADE,   /* mate made it (a file in a dump root, a %i expansion) */
	MATE_LOG_NAMED   /* the user's own text, literally */
};

/* Opens path for writing with open(2)'s flags (O_APPEND or O_TRUNC, with
 * O_CREAT) and never blocks: a FIFO without a reader fails with ENXIO.
 * A name mate made must be a regular file that is not a symlink; a name
 * the user gave may be a symlink (they named the link), a FIFO or socket
 * with a reader, or a character device such as /dev/stderr or /dev/null.
 * Returns the descriptor (blocking, close-on-exec) or -errno; -ELOOP for a
 * refused symlink, -MATE_ENOTREG for a refused kind of file (mate_log_strerror()
 * words both). With O_CREAT | O_EXCL the file is new, so regular: one
 * open(2), with O_NOFOLLOW, and nothing else (a dump folder's metadata.jsonl). */
int mate_log_open(const char *path, int flags, enum mate_log_name name);

/* strerror() with mate_log_open()'s refusals worded. */
const char *mate_log_strerror(int errnum);

/* MATE_LOG_MADE when a path template expands %i, else MATE_LOG_NAMED. */
enum mate_log_name mate_log_name_of(const char *tmpl);

#endif /* MATE_LOGFILE_H_INCLUDED */
