/* dumpcheck.h: a strict checker of level-10 dump roots for the recorder's crash and stress tests. */
#ifndef MATE_DUMPCHECK_H_INCLUDED
#define MATE_DUMPCHECK_H_INCLUDED

#include <cJSON.h>

#include "mate_core.h"

/* What a dump root held; every violation is printed on stderr and counted
 * in errors. The states of a dump directory, by the last record of its
 * metadata.jsonl:
 *   empty        nothing, or an empty metadata.jsonl and maybe temporary files
 *                (killed before its inputs file was complete);
 *   no_record    a complete inputs file and no record (killed between the
 *                rename and the append: one system call wide);
 *   inputs_saved killed while the API ran, or before "completed" was appended;
 *   completed, failed. */
struct dc_stats {
	long dirs, empty, no_record, inputs_saved, completed, failed;
	long metadata_lines, session_lines, session_torn_last;
	long tensor_files, temp_files;
	long errors;
};

/* Checks of the tensors a test knows: called for every tensor of every
 * complete file with the record that lists it (NULL when the file has no
 * record yet); returns 0 when the tensor is right. */
typedef int (*dc_tensor_check)(const cJSON *record, const char *key, const mate_tensor *t,
    int is_output, void *ctx);

enum {
	DC_TORN_LAST_OK = 1,  /* session.jsonl may end in a torn line (the writer was killed
	                         inside a write() that crossed a page boundary) */
	DC_QUIET = 2,         /* do not print the summary line */
	DC_SAMPLE_FILES = 4   /* parse the tensor files of 1 directory in 8 (by call number) */
};

/* Validates every dump directory under root and its session.jsonl:
 * - every file under a final name (inputs/outputs/inplace .pt or .safetensors)
 *   parses completely, and holds exactly the tensors its record lists,
 *   with their shapes and dtypes; other names must be temporary files
 *   ("<final>.tmp.<pid>.<n>") or metadata.jsonl;
 * - every line of metadata.jsonl is whole JSON; the statuses run
 *   inputs_saved [, completed | failed]; a completed record has its outputs;
 * - every line of session.jsonl is whole JSON (the last may be torn with
 *   DC_TORN_LAST_OK) and equals a line of the metadata.jsonl of the
 *   directory it names; lines only in metadata.jsonl are at most
 *   max_unlogged (calls killed between the two appends).
 * @return the number of violations (also in st->errors). */
long dc_check_root(const char *root, int flags, long max_unlogged, dc_tensor_check check,
    void *ctx, struct dc_stats *st);

/* Prints st as one line: "dumps: N (completed ..., ...)". */
void dc_print(const char *what, const struct dc_stats *st);

#endif /* MATE_DUMPCHECK_H_INCLUDED */
