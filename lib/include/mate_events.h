/* mate_events.h: instruction logs for tools: parse and format GT-compatible event lines, pair them into timelines, draw and export them. */
#ifndef MATE_EVENTS_H_INCLUDED
#define MATE_EVENTS_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "mate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Events --------------------------------------------------------------
 * One line of an instruction log, in the line format of GT's dispatcher
 * instruction stream (fields joined by " | "):
 *
 *   "  0.123s | #0042 | RECV         | CLIENT 4711                | gemm            |     39.3KB | call=7 op=matmul"
 *
 * Details are free text; mate writes key=value pairs that join events:
 *   call=N     the API call (RECV/SEND) and the work it caused (WORKER_*)
 *   id=N       one piece of work: pairs its WORKER_SEND with its WORKER_RECV
 *   op=NAME    the op type used for colouring
 *   worker=ID  the worker lane of a WORKER_* line (else the source id)
 *   depth=N    nesting depth of an API call (0: outermost)
 *   device=ID in_use=BYTES   device memory in use after a memory event
 *   signal=NAME              a signal (also any event whose name has SIGNAL)
 * Without ids, GT's pairing is used (see mate_timeline_add()). */
enum mate_source_kind {
	MATE_SOURCE_CLIENT = 0,
	MATE_SOURCE_WORKER = 1,
	MATE_SOURCE_OTHER = 2   /* neither word: the whole field is the id */
};

typedef struct mate_event {
	double time;          /* seconds since the log's start, >= 0 */
	uint64_t seq;         /* sequence number, from 1 */
	const char *event;    /* "RECV", "SEND", "WORKER_SEND", "WORKER_RECV", ... */
	int source_kind;      /* enum mate_source_kind (parsed; ignored when formatting) */
	const char *source;   /* the id after the CLIENT/WORKER word: "4711",
	                       * "auto_worker_0"; GT's "CLIENT CLIENT 006b8b4568"
	                       * gives "CLIENT 006b8b4568" so lines round-trip */
	const char *command;  /* "BinaryOp", "WorkerBatch", "gemm", ... */
	int64_t size;         /* message bytes; -1 (or 0 when formatting) for none */
	const char *details;  /* free text; "" when the line has none */
	uint64_t line;        /* 1-based line number in its input (reader only) */
} mate_event;

/* Longest line the reader accepts; longer lines count as malformed. */
#define MATE_ILOG_LINE_MAX 65536
/* How many malformed lines the reader remembers for reporting. */
#define MATE_ILOG_MALFORMED_KEEP 5

/*! mate_ilog_format() : formats ev as one log line, '\n' included, as GT's
 * dispatcher does but with microseconds (GT writes "%7.3fs"; its parsers
 * read any number of decimals): "%10.6fs | #%04llu | %-12s | WORD %-20s | %-15s" then
 * " | %10s" for a size (when ev->size > 0) and " | details" (when not empty).
 * WORD is WORKER when ev->event contains "WORKER", else CLIENT. Newlines in
 * fields become spaces, other control characters Python's escapes
 * (mate_text_escape(): "\x1b"), and '|' in the first five fields becomes
 * '!', so every line parses back and none reaches a terminal raw. Writes at most cap bytes, NUL-terminated when cap > 0.
 * @return the line's full length, as snprintf (>= cap means truncated). */
int mate_ilog_format(char *buf, size_t cap, const mate_event *ev);

/*! mate_ilog_format_size() : the size field's text: "91B" below 1 KiB,
 * "39.3KB" below 1 MiB, else "4.00MB" (binary units); "" for bytes <= 0.
 * @return its length (at most 15). */
int mate_ilog_format_size(char out[16], int64_t bytes);

/*! mate_ilog_format_header() : GT's header block (a rule of 100 '=', title,
 * "Started: YYYY-MM-DD HH:MM:SS" in local time, a rule, a description of
 * the columns, a blank line), which readers skip. title NULL gives
 * "mate Instruction Stream". @return its length, as snprintf. */
int mate_ilog_format_header(char *buf, size_t cap, const char *title, time_t started);

/*! mate_ilog_parse_line() : parses one line (without its newline) in place:
 * the fields of *ev point into line, which is modified (line[len] too, which
 * must be writable: it becomes a NUL). Lines that do not
 * start like an event ("^\s*[0-9.]+s\s*\|\s*#[0-9]+") are not events.
 * @return 1 for an event, 0 for a line that is not one (header, blank),
 * -1 for a malformed event line (*why, if not NULL, says why; static). */
int mate_ilog_parse_line(char *line, size_t len, mate_event *ev, const char **why);

/*! mate_ilog_detail() : finds "key=value" in details (key at the start or
 * after a space; the value ends at the next space) and copies the value into
 * buf (cap > 0, NUL-terminated, truncated to fit). @return the value's full
 * length, or -1 when the key is absent. */
int mate_ilog_detail(const char *details, const char *key, char *buf, size_t cap);

/*! mate_ilog_op() : an event's op type: the op= of its details when present
 * (lower-cased), else derived from the command, or a batch's first command
 * ("[2 cmds: WorkerBinaryOp, ...]"): matmul, add, sub, mul, div, relu,
 * sigmoid, tanh, sum, mean, transpose, getdata, allgather, randn,
 * freetensor, other. Writes into buf (cap >= 2) and returns buf. */
const char *mate_ilog_op(const mate_event *ev, char *buf, size_t cap);

/*! mate_op_color() : 0xRRGGBB for an op type: GT's palette (gt.scripts.top)
 * for its sixteen names, a stable colour hashed from the name otherwise. */
uint32_t mate_op_color(const char *op);

/* ---- Reading logs ----------------------------------------------------------
 * A streaming reader: it holds one buffer (about 256 KiB), never the file.
 * GT's header block and anything else before an event line is skipped; so is
 * a later header (logs concatenated) and blank lines. After the first event,
 * any other line is malformed: counted, the first few kept for reporting,
 * and skipped. */
typedef struct mate_ilog mate_ilog;

typedef struct mate_ilog_stats {
	uint64_t lines;      /* lines read */
	uint64_t events;     /* event lines returned */
	uint64_t skipped;    /* header and blank lines */
	uint64_t malformed;  /* malformed lines skipped */
} mate_ilog_stats;

/*! mate_ilog_open() : opens the log at path ("-" reads standard input).
 * @return a reader, or NULL with err set. */
mate_ilog *mate_ilog_open(const char *path, mate_error *err);
/*! mate_ilog_open_fd() : reads fd (left open) under the name given. */
mate_ilog *mate_ilog_open_fd(int fd, const char *name, mate_error *err);
/*! mate_ilog_open_memory() : reads the len bytes at buf (borrowed until
 * mate_ilog_free()). */
mate_ilog *mate_ilog_open_memory(const void *buf, size_t len, const char *name, mate_error *err);
/*! mate_ilog_next() : the next event. Its strings are borrowed until the
 * next call. @return 1 with *ev filled, 0 at the end, or a negative
 * mate_status on a read error (message in err). */
int mate_ilog_next(mate_ilog *r, mate_event *ev, mate_error *err);
/*! mate_ilog_stats() : counts so far. */
void mate_ilog_get_stats(const mate_ilog *r, mate_ilog_stats *st);
/*! mate_ilog_malformed() : the i-th remembered malformed line (i from 0):
 * its line number and why. @return 0, or -1 when there is no such line. */
int mate_ilog_malformed(const mate_ilog *r, int i, uint64_t *line, const char **why);
/*! mate_ilog_name() : the name given at open ("<stdin>" for "-"). */
const char *mate_ilog_name(const mate_ilog *r);
/*! mate_ilog_free() : closes what it opened and frees r (NULL ok). */
void mate_ilog_free(mate_ilog *r);

#ifdef __cplusplus
}
#endif
#endif /* MATE_EVENTS_H_INCLUDED */
