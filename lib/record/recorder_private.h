/* recorder_private.h: what the recorder's files (config, recorder, apilog, stats, dump_writer, pyfmt) share. */
#ifndef MATE_RECORDER_PRIVATE_H_INCLUDED
#define MATE_RECORDER_PRIVATE_H_INCLUDED

#include "mate_private.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/types.h>

/* ---- Python-style text (pyfmt.c; struct mate_buf is util.h's) ---------- */
/* x with decimals digits after the point, as printf's "%.*f" writes it,
 * but "nan", "inf", "-inf" as Python's format() does. */
void mate_buf_fixed(struct mate_buf *b, double x, int decimals) MATE_HIDDEN;
#define MATE_PYFLOAT_MAX 32
/* repr(float) of Python 3: shortest round-trip digits, "1e-05", "3.0",
 * "nan", "inf". Returns the length; buf has MATE_PYFLOAT_MAX bytes. */
size_t mate_py_float_repr(double d, char *buf) MATE_HIDDEN;
/* repr(str): quotes and escapes as Python does. */
void mate_buf_pystr(struct mate_buf *b, const char *s, size_t len) MATE_HIDDEN;
/* A JSON string as Python's json.dumps writes it (ensure_ascii). */
void mate_buf_jsonstr(struct mate_buf *b, const char *s, size_t len) MATE_HIDDEN;
/* A float as json.dumps writes it (NaN, Infinity, -Infinity). */
void mate_buf_jsonfloat(struct mate_buf *b, double d) MATE_HIDDEN;
/* "torch.float32" for a dtype. */
void mate_buf_dtype(struct mate_buf *b, mate_dtype dt) MATE_HIDDEN;
/* A tensor's JSON fields, '"shape": [2, 3], "dtype": "torch.float32",
 * "stride": [3, 1], "device": "cpu"' (dump_writer.c), or compact, without
 * the spaces (the profile's). */
void mate_rec_tensor_fields(struct mate_buf *b, const mate_tensor *t, int compact) MATE_HIDDEN;

/* ---- configuration in effect (config.c) --------------------------------- */
struct rec_config {
	int level;              /* 0, 1, 3, 5 or 10 */
	char *logdest;          /* template as configured (%i not expanded) */
	char *dump_dir;         /* normalised: no "./" prefix, no trailing '/' */
	char *dump_dir_shown;   /* as the banner shows it ("./mate_dumps") */
	double max_size_gb;
	uint64_t max_bytes;
	int64_t max_count;
	struct mate_patterns include, exclude;
	int safetensors;
	int log_extra;          /* MATE_LOG_EXTRA=1: mate's additions to the log text */
};
extern struct rec_config mate_rec_cfg MATE_HIDDEN;

/* The identity (mate_set_identity()): the variables' prefix ("MATE"), the log's
 * name ("MATE"), whether the text is FlashInfer's; getenv() of PREFIX_suffix. */
const char *mate_rec_prefix(void) MATE_HIDDEN;
const char *mate_rec_name(void) MATE_HIDDEN;
int mate_rec_flashinfer_text(void) MATE_HIDDEN;
const char *mate_rec_getenv(const char *suffix) MATE_HIDDEN;

/* Reads the environment once (pthread_once); safe from any thread. */
void mate_rec_init(void) MATE_HIDDEN;
/* Session generation: bumped by mate_configure() and fork. */
extern unsigned mate_rec_generation MATE_HIDDEN;

/* Warns once per session for each of these. */
enum rec_once {
	REC_ONCE_NOMEM,
	REC_ONCE_LOG_IO,
	REC_ONCE_DUMP_IO,
	REC_ONCE_DUMP_COUNT,
	REC_ONCE_DUMP_SIZE,
	REC_ONCE_DUMP_CAPTURE,
	REC_ONCE_DEVICE_COPY,
	REC_ONCE_DUMP_WRITER,
	REC_ONCE_DUMP_KEY,
	REC_ONCE_BAD_TENSOR,
	REC_ONCE_USAGE,
	REC_ONCE_COUNT
};
void mate_rec_warn_once(enum rec_once which, const char *fmt, ...) MATE_PRINTF(2, 3) MATE_HIDDEN;

/* Writes text to the log destination in one write(): lines of concurrent
 * calls never interleave. Writes the system-information header first when
 * this session has not written it. Errors stop logging with a warning. */
void mate_rec_log(const char *text, size_t len) MATE_HIDDEN;
/* The log destination's lock (held by a reconfiguration and across fork()), and closing
 * it: the next line opens the destination again (logdest.c). */
void mate_rec_log_lock(void) MATE_HIDDEN;
void mate_rec_log_unlock(void) MATE_HIDDEN;
void mate_rec_log_close(void) MATE_HIDDEN;
/* A path template with every %i replaced by the pid (malloc'ed; NULL: out of memory). */
char *mate_rec_expand_path(const char *tmpl) MATE_HIDDEN;
/* Writes all of p to fd; with pipe set (a FIFO or socket) a reader that went away costs
 * -EPIPE and its SIGPIPE never reaches the host. 0 or -errno. */
int mate_rec_write_guarded(int fd, int is_pipe, const char *p, size_t n) MATE_HIDDEN;
/* Dumping stops for the rest of the session (after an I/O error). */
void mate_rec_dump_stop(void) MATE_HIDDEN;
int mate_rec_dump_stopped(void) MATE_HIDDEN;
/* Process id, cached (updated in a forked child). */
pid_t mate_rec_pid(void) MATE_HIDDEN;

/* Lock for the per-session dump accounting (dump_writer.c). */
extern pthread_mutex_t mate_rec_dump_lock MATE_HIDDEN;
/* Resets the dump accounting (takes the lock): counters and limits; with
 * full also the dump root and session.jsonl (a new configuration). */
void mate_rec_dump_reset(int full) MATE_HIDDEN;

/* ---- a call being recorded (recorder.c) ---------------------------------- */
enum { CALL_BEGUN, CALL_READY };

struct rec_arg {
	int role;       /* MATE_ARG, MATE_KWARG, MATE_DEFAULT or MATE_RESULT */
	int inplace;
	char *name;     /* keyword or parameter name; NULL for MATE_ARG/RESULT */
	mate_value *v;
};

/* A tensor of the current phase (inputs, then outputs), with its dump key
 * and, when its bytes are needed, a host copy or host view. */
struct rec_tensor {
	const mate_value *v;
	char *key;
	int dumped;           /* goes into the tensor file */
	int inplace;          /* an argument's value after the call: the in-place file */
	int staged;           /* 1: host is valid, -1: staging failed, 0: not tried */
	mate_tensor host;     /* view of st (offset 0); data in host memory */
	mate_storage *st;
	int64_t nbytes;       /* numel * element size */
};

struct rec_dump;

struct mate_call {
	int level;
	int state;
	int profile;          /* MATE_PROFILE counts it (profile.c) */
	int ring;             /* level 10 into MATE_RING's ring: logged as at level 1 */
	int pooled;           /* a level-1 call of the profile, from the thread's pool */
	uint64_t t0;          /* when it began (CLOCK_MONOTONIC, ns), less the recording */
	int64_t ppos;         /* positional arguments so far (the profile's keys) */
	struct mate_buf ptext; /* the call's shape as the profile looks it up */
	char *name, *module, *signature;
	int has_self;
	uint64_t self_id;
	struct rec_arg *args;
	size_t nargs, cap_args;
	struct rec_tensor *tensors;   /* in tmem (the thread's cached blocks) */
	size_t ntensors, cap_tensors;
	struct mate_buf tmem;
	char kbuf[192];       /* the phase's tensor keys that fit, the others malloc'ed */
	size_t kused;
	struct rec_dump *dump;
	uint64_t ring_id;     /* MATE_RING: its number in the ring (no rec_dump) */
	pid_t ring_pid;       /* the process whose ring has it (a forked child has its own) */
	char stamp[24];       /* "[YYYY-MM-DD HH:MM:SS]" of the call */
	uint64_t log_id;      /* MATE_LOG_EXTRA: the call's id (the events' call=N) */
	long log_tid;         /* and the thread that made it */
	size_t blk;           /* the bytes of its block (the call and its strings) */
};

/* A dump key: prefix, then part (its first 280 bytes; NULL: none), then
 * idx in decimal when idx >= 0, truncated to cap bytes with the NUL. No
 * printf: its cost grows when a library registers printf handlers. */
void mate_rec_key(char *out, size_t cap, const char *prefix, const char *part, int64_t idx) MATE_HIDDEN;
/* A walk over a call's inputs, positional then keywords, as Python passes
 * them: zero it to start. */
struct rec_inputs {
	size_t at, pos;
};
/* The walk's next input, with its dump key ("arg_<i>", "kwarg_<name>") in
 * key (cap bytes; NULL: not made); NULL after the last. */
const struct rec_arg *mate_rec_next_input(const mate_call *c, struct rec_inputs *it, char *key,
    size_t cap) MATE_HIDDEN;
/* The dump key of a, the input the walk it has just returned. */
void mate_rec_input_key(const struct rec_inputs *it, const struct rec_arg *a, char *key,
    size_t cap) MATE_HIDDEN;
/* Stages t on the host (copy from a device, view of host memory; borrow: a view of
 * host memory without a storage, host.data only, for the ring: host's shape and strides
 * set up to its ndim only). */
int mate_rec_stage(struct rec_tensor *rt, int borrow) MATE_HIDDEN;
/* The staged entry for a tensor value of the current phase, or NULL. */
struct rec_tensor *mate_rec_find(const mate_call *c, const mate_value *v) MATE_HIDDEN;
/* The results as MATE sees them: up to max items; *tuple set when they
 * form a tuple (several results, or one tuple value): keys result_<i>. */
size_t mate_rec_results(const mate_call *c, const mate_value **items, size_t max,
    int *tuple) MATE_HIDDEN;
/* Whether the tensor's stream is being captured into a CUDA graph. */
int mate_rec_capturing(const mate_tensor *t) MATE_HIDDEN;

/* ---- text (apilog.c) ------------------------------------------------------ */
/* "[YYYY-MM-DD HH:MM:SS]" of now, local time (22 bytes with the NUL). */
void mate_rec_stamp(char *out) MATE_HIDDEN;
/* The level-1 line of a call. */
void mate_rec_log_name(const char *name) MATE_HIDDEN;
/* The header, "Positional input arguments:" ... of levels 3 and 5. */
void mate_rec_fmt_inputs(struct mate_buf *b, const mate_call *c) MATE_HIDDEN;
/* "Output value:" ... the closing rule and blank line. */
void mate_rec_fmt_outputs(struct mate_buf *b, const mate_call *c) MATE_HIDDEN;
/* One value at an indentation level (2 spaces each), as MATE prints it. */
void mate_rec_fmt_value(struct mate_buf *b, const mate_call *c, const mate_value *v,
    int indent) MATE_HIDDEN;
/* A value on one line as Python's repr() writes it. */
void mate_rec_fmt_inline(struct mate_buf *b, const mate_value *v) MATE_HIDDEN;
/* The system-information block (and the level-10 banner). */
void mate_rec_fmt_header(struct mate_buf *b) MATE_HIDDEN;

/* ---- statistics (stats.c) ------------------------------------------------- */
struct rec_stats {
	int kind;             /* 0 none, 1 floating, 2 signed, 3 unsigned */
	double min, max, mean;
	int64_t imin, imax;
	uint64_t umin, umax;
	int64_t nan_count, inf_count;
};
/* Statistics of a host tensor as MATE computes them (in float32). */
void mate_rec_stats(const mate_tensor *t, struct rec_stats *s) MATE_HIDDEN;
/* The "min=..." lines at an indentation of indent spaces. */
void mate_rec_fmt_stats(struct mate_buf *b, const struct rec_stats *s, int indent) MATE_HIDDEN;

/* ---- level 10 (dump_writer.c) ---------------------------------------------- */
/* After the inputs were collected and staged: decides whether to dump,
 * writes the directory, inputs file and inputs_saved record; appends the
 * "Dumped inputs to" lines to log (NULL: none). */
void mate_rec_dump_inputs(mate_call *c, struct mate_buf *log) MATE_HIDDEN;
/* After a successful call, with the outputs collected and staged. */
void mate_rec_dump_outputs(mate_call *c, struct mate_buf *log) MATE_HIDDEN;
/* The API failed: the failed record. */
void mate_rec_dump_failed(mate_call *c, const char *error) MATE_HIDDEN;
/* Frees the dump state of a call (closes its files). */
void mate_rec_dump_free(struct rec_dump *d) MATE_HIDDEN;
/* The JSON form of a value in input_metadata/output_metadata, as
 * json.dumps spaces it. */
void mate_rec_json_value(struct mate_buf *b, const mate_call *c, const mate_value *v,
    int depth) MATE_HIDDEN;

#endif /* MATE_RECORDER_PRIVATE_H_INCLUDED */
