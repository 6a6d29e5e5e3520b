/* mate_replay.h: reading dumps and replaying them: listing dump directories, one dump's record, arguments and outputs, the replay engine, its handlers and plugins. */
#ifndef MATE_REPLAY_H_INCLUDED
#define MATE_REPLAY_H_INCLUDED

#include <stdint.h>
#include "mate_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ownership: lists, dumps and replay registries are the caller's, freed
 * with their *_free (NULL ok). A mate_dump_info and everything it points
 * to is borrowed from the list or dump that holds it. Values returned by
 * mate_dump_load_*() are new trees the caller frees; a handler's arguments
 * are borrowed from its call, and values given to mate_replay_return() or
 * mate_replay_set_output() move into the call. */

/* ---- Dump directories -----------------------------------------------------
 * A dump is one directory holding metadata.jsonl (spec/dumps.md section 3).
 * Its state is the last complete record of metadata.jsonl: a torn last line
 * is skipped, corrupt lines are passed over, and both are reported in
 * `problem`; the record's dump_dir is never used as a path. Strings and
 * arrays in a mate_dump_info borrow from the list or dump that holds them. */
typedef enum mate_dump_status {
	MATE_DUMP_INCOMPLETE = 0,   /* no readable record */
	MATE_DUMP_INPUTS_SAVED,     /* inputs saved; the call never returned */
	MATE_DUMP_COMPLETED,
	MATE_DUMP_FAILED            /* the API reported a failure */
} mate_dump_status;

/*! mate_dump_status_name() : "incomplete", "inputs_saved", "completed",
 * "failed". Static string. */
MATE_API const char *mate_dump_status_name(int status);

/* One tensor of a dump, from its tensor file's header (or, when that file
 * cannot be read, from the record's tensor_details). */
struct mate_dump_tensor {
	const char *key;            /* "arg_0", "kwarg_out", "result", ... */
	int output;                 /* 0: from the inputs file, 1: from the
	                               outputs file, 2: from the in-place file
	                               (an argument's value after the call) */
	mate_dtype dtype;           /* MATE_DTYPE_INVALID when unknown */
	const char *dtype_name;     /* torch spelling without "torch." */
	int ndim;
	const int64_t *shape;
	const int64_t *stride;      /* in elements */
};

struct mate_dump_info {
	const char *path;           /* the directory */
	const char *name;           /* its last component */
	const char *function;       /* function_name (from the directory name
	                               when there is no record); never NULL */
	const char *module;         /* NULL when not recorded */
	const char *timestamp;      /* "YYYYMMDD_HHMMSS_mmm", or "" */
	const char *format;         /* tensor_format: "torch" or "safetensors" */
	const char *error;          /* status failed: the recorded error, else NULL */
	const char *self_id;        /* object receiver identity, or NULL */
	const char *problem;        /* what was wrong with the dump, or NULL */
	int status;                 /* enum mate_dump_status */
	int64_t process_id;         /* -1 when unknown */
	int64_t call_sequence;      /* -1 when unknown */
	int n_inputs, n_outputs;    /* tensor counts from the record */
	int64_t input_bytes;        /* -1 when unknown */
	int64_t output_bytes;       /* -1 when unknown */
	int64_t total_bytes;        /* -1 when unknown */
	size_t n_tensors;           /* tensor details (MATE_DUMP_LIST_DETAILS) */
	const struct mate_dump_tensor *tensors;
	int n_inplace;              /* arguments written in place: tensors in
	                               the in-place file (inplace_tensor_keys) */
	int64_t inplace_bytes;      /* -1 when unknown */
	const char *shape;          /* MATE_DUMP_LIST_SHAPE: the call's shape as a MATE_PROFILE
	                               entry holds it (JSON: function, module, tensors with dtype,
	                               shape, stride and device, scalars), or NULL */
	const char *shape_key;      /* its key, 16 hex digits, as in the profile; or NULL */
	const char *signature;      /* function_signature, "(transa, transb, m, ...)", or
	                               NULL when not recorded */
};

/* ---- Listing dumps -------------------------------------------------------- */
typedef struct mate_dump_list mate_dump_list;

#define MATE_DUMP_LIST_DETAILS 0x1  /* also read the tensor files' headers */
#define MATE_DUMP_LIST_SHAPE 0x2    /* also the call's shape (shape, shape_key) */

/*! mate_dump_list_new() : an empty list; flags are MATE_DUMP_LIST_*. */
MATE_API mate_dump_list *mate_dump_list_new(int flags, mate_error *err);
/*! mate_dump_list_add() : adds path, a dump directory (it holds
 * metadata.jsonl or has a dump's name) or a root whose subdirectories are
 * dumps. Only metadata.jsonl is read unless details were asked for.
 * @return the number of dumps added, or a negative status when path cannot
 * be read as a directory. Problems of single dumps do not fail the call:
 * they are in each entry's `problem`. */
MATE_API int mate_dump_list_add(mate_dump_list *l, const char *path, mate_error *err);
/*! mate_dump_list_set_threads() : how many threads read a root's dumps
 * (0, the default: one per 2048 dumps, up to the CPUs and at most 16). */
MATE_API void mate_dump_list_set_threads(mate_dump_list *l, int threads);
/*! mate_dump_list_sort() : orders by timestamp, then process id, then name;
 * calls of one process in one millisecond (folder names cannot tell their
 * order) in the order their root's session.jsonl first names them. */
MATE_API void mate_dump_list_sort(mate_dump_list *l);
/*! mate_dump_list_unordered() : after mate_dump_list_sort(), how many dumps
 * share a millisecond and a process with another whose order no
 * session.jsonl gives (they are in their names' order); *example (NULL ok)
 * names two of them. */
MATE_API size_t mate_dump_list_unordered(const mate_dump_list *l, const char **example);
MATE_API size_t mate_dump_list_count(const mate_dump_list *l);
/*! mate_dump_list_get() : the i-th dump (borrowed, valid until the next
 * add, sort or free), or NULL when i is out of range. */
MATE_API const struct mate_dump_info *mate_dump_list_get(const mate_dump_list *l, size_t i);
/*! mate_dump_list_free() : NULL ok. */
MATE_API void mate_dump_list_free(mate_dump_list *l);
/*! mate_signature_arg_name() : the parameter a record's key stands for in
 * its function_signature: "arg_6" of "(transa, transb, m, n, k, alpha, a,
 * ...)" is "a", "kwarg_eps" is "eps". @return buf holding the name, or NULL
 * when the signature does not name it (none, unparsable, out of range, or
 * after *args). */
MATE_API const char *mate_signature_arg_name(const char *signature, const char *key, char *buf,
    size_t cap);

/* ---- One dump: its record, arguments and recorded outputs ------------------ */
typedef struct mate_dump mate_dump;

/*! mate_dump_open() : reads dir's last complete record. @return the dump,
 * or NULL (with err) when dir has no readable record. */
MATE_API mate_dump *mate_dump_open(const char *dir, mate_error *err);
/*! mate_dump_get_info() : the dump's summary (borrowed from d). */
MATE_API const struct mate_dump_info *mate_dump_get_info(const mate_dump *d);
/*! mate_dump_load_args() : the call's arguments as a dict of "arg_<i>" and
 * "kwarg_<name>" to values: tensors loaded from the inputs file, other
 * values decoded from input_metadata (structured or MATE's string form;
 * tensors nested as "<parent>__<i>" are put back into their lists).
 * @return a new dict (caller frees) or NULL. */
MATE_API mate_value *mate_dump_load_args(mate_dump *d, mate_error *err);
/*! mate_dump_load_outputs() : the recorded outputs as a dict of key to
 * value: what the call returned ("result", "result_<i>": tensors from the
 * outputs file, other values from output_metadata), then the post-call
 * values of the arguments it wrote in place under their argument keys
 * ("arg_<i>", "kwarg_<name>": from the in-place file, or, in dumps of
 * mate before 2026-11, from the outputs file). *out is NULL when the call
 * recorded no outputs (status other than completed). @return MATE_OK or a
 * negative status. */
MATE_API int mate_dump_load_outputs(mate_dump *d, mate_value **out, mate_error *err);
/*! mate_dump_free() : NULL ok. */
MATE_API void mate_dump_free(mate_dump *d);

/* ---- Replay ------------------------------------------------------------------
 * A registry from function name (and module) to handler, which re-executes
 * a recorded call from its arguments and returns its outputs; the outputs
 * are then compared with the recorded ones (spec/ops.md's tolerances).
 *
 * A handler states the signature it implements, a Python parameter list
 * ("(logits, temperature=None, enable_pdl=None)"). A call whose record has
 * a function_signature goes to the first handler, in the order below, that
 * implements it: one whose required parameters the recorded signature all
 * has, and that has each recorded parameter, or that parameter defaults to
 * None (and the call must leave it None). Its arguments are bound through
 * the recorded signature as Python's inspect.Signature.bind does, the
 * recorded defaults filled in, and handed to the handler as arg_<i> (its own
 * positions) and kwarg_<name>. Handlers are tried by name, then for
 * "Tensor.NAME" by "NAME" (MATE's decorator names a function whose first
 * argument is a tensor so); module-specific first; the latest registered
 * first. A handler of no stated signature takes any call, its arguments as
 * recorded; so does every handler when the record names no signature
 * (absent or "<unavailable>"). A call no handler implements is unsupported,
 * never judged. */
typedef struct mate_replay mate_replay;
typedef struct mate_replay_call mate_replay_call;

/* A handler: reads its arguments with mate_replay_arg*(), sets outputs
 * with mate_replay_return() / mate_replay_set_output() (or writes into an
 * argument tensor in place), and returns MATE_OK. A failure is returned as
 * mate_replay_fail()'s status: MATE_ERR_UNSUPPORTED for a call the handler
 * cannot replay, anything else for the call itself failing. */
typedef int (*mate_replay_handler)(mate_replay_call *call, void *ctx);

enum mate_replay_verdict {
	MATE_REPLAY_PASSED = 0,
	MATE_REPLAY_MISMATCH,
	MATE_REPLAY_ERROR,          /* could not load, or the replayed call failed */
	MATE_REPLAY_UNSUPPORTED,    /* no handler, or the handler cannot do it */
	MATE_REPLAY_REPRODUCED,     /* no outputs recorded; the call failed again */
	MATE_REPLAY_NOW_RUNS,       /* no outputs recorded; the call now succeeds */
	MATE_REPLAY_UNCHECKED       /* ran, but nothing was recorded to compare save a
	                               None return: a function with tensor arguments
	                               whose writes in place were not recorded */
};

enum mate_replay_device {
	MATE_REPLAY_DEVICE_AUTO = 0,  /* CUDA when a device is present, else CPU */
	MATE_REPLAY_DEVICE_CPU,
	MATE_REPLAY_DEVICE_CUDA
};

/* What a replay found. Errors are max(|got - expected|) and
 * max(|got - expected| / |expected|) over the elements of all compared
 * floating outputs where both are finite. */
struct mate_replay_result {
	int verdict;                /* enum mate_replay_verdict */
	int bit_exact;              /* passed: every output identical bit for bit */
	int compared;               /* outputs compared */
	char key[128];              /* mismatch: the first bad output's key */
	int64_t first_bad;          /* its first bad element (row-major), or -1 */
	char first_bad_index[160];  /* the same as "[3, 7]", or "" */
	double expected, got;       /* the values there */
	int64_t n_bad, numel;       /* bad elements of that output, and all */
	double max_abs_err, max_rel_err;
	double rtol, atol;          /* the tolerance applied to that output */
	double seconds;             /* the handler's run time */
	char message[1024];         /* where and by how much, or why; a mismatch
	                               names every output that differs */
	double mean_abs_err, mean_rel_err;  /* mismatch: over that output's finite
	                               elements (relative: where expected != 0) */
	int mismatched;             /* outputs that differ */
	int bench_runs;             /* mate_replay_set_bench(): timed runs (0: none) */
	double bench_median, bench_min, bench_max;  /* their seconds */
	int64_t bench_bytes;        /* bytes of the call's tensors, in and out */
	double bench_flops;         /* the op's nominal floating-point operations per
	                               call (op_cost.c), or -1 when it defines none */
	int64_t n_nan, n_inf;       /* mismatch: of that output's n_bad, elements with a
	                               NaN on one side only, and with an infinity that
	                               differs (neither in the errors above) */
	int64_t first_nan, first_inf;  /* the first of each (row-major), or -1 */
	char first_nan_index[160], first_inf_index[160];  /* the same as "[3, 7]", or "" */
	int64_t reduction_k;        /* an output of a matrix product compared within its
	                               reduction bound: the sum's length K (0: none) */
	double bound_ratio;         /* then the largest error as a multiple of its
	                               element's tolerance (atol + rtol |x| + 2 K u
	                               (|A| |B|)ij); a mismatch is beyond 1 */
};

/*! mate_replay_verdict_name() : "passed", "mismatch", "error",
 * "unsupported", "reproduced_failure", "now_runs", "unchecked". Static string. */
MATE_API const char *mate_replay_verdict_name(int verdict);

/*! mate_replay_new() : a registry holding mate's built-in handlers (the
 * operations of spec/ops.md). Free with mate_replay_free(). */
MATE_API mate_replay *mate_replay_new(mate_error *err);
/*! mate_replay_free() : frees the registry, the stateful objects its calls
 * made, and unloads its plugins. NULL ok. */
MATE_API void mate_replay_free(mate_replay *r);
/*! mate_replay_register() : handler fn (with ctx) for function `name`
 * ("rmsnorm", "Class.method") recorded in `module` (NULL: any module). A
 * later registration of the same name takes precedence. Strings are copied. */
MATE_API int mate_replay_register(mate_replay *r, const char *module, const char *name,
    mate_replay_handler fn, void *ctx, mate_error *err);
/*! mate_replay_register_signature() : the same for a handler that
 * implements the calls of signature, a Python parameter list as
 * str(inspect.signature(f)) writes it, without *args or **kwargs (NULL: any
 * call). Register a handler once per signature it implements.
 * @return MATE_ERR_ARGUMENT for a signature that cannot be read. */
MATE_API int mate_replay_register_signature(mate_replay *r, const char *module, const char *name,
    const char *signature, mate_replay_handler fn, void *ctx, mate_error *err);
/*! mate_replay_has_handler() : 1 when some handler is registered for the
 * name (whatever its signature). */
MATE_API int mate_replay_has_handler(const mate_replay *r, const char *module, const char *name);

/* One registered handler, for listings (mate-replay --list-ops). The
 * strings are borrowed from r until it changes. */
struct mate_replay_op {
	const char *module;         /* NULL: any module */
	const char *name;
	const char *signature;      /* as registered, or the signature (with *args or
	                             * **kwargs) whose arguments a built-in handler
	                             * reads as recorded; NULL: any arguments */
	const char *dtypes;         /* what mate's built-in handler states; NULL: not stated */
	const char *devices;        /* "cpu" or "cpu, cuda"; NULL: not stated */
};
/*! mate_replay_op_count() : the handlers registered on r, built-in and plugins'. */
MATE_API size_t mate_replay_op_count(const mate_replay *r);
/*! mate_replay_op_get() : handler i (in registration order) into *op.
 * @return MATE_OK or MATE_ERR_ARGUMENT (i out of range). */
MATE_API int mate_replay_op_get(const mate_replay *r, size_t i, struct mate_replay_op *op);

/* A plugin is a shared object exporting this function; it registers its
 * handlers on r and returns MATE_OK (or a negative status, with err set). */
#define MATE_REPLAY_PLUGIN_INIT "mate_replay_plugin_init"
typedef int (*mate_replay_plugin_init_fn)(mate_replay *r, mate_error *err);
/* What a plugin defines (declared here so that its definition is checked,
 * and exported by a plugin built with hidden visibility); libmate has none. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int mate_replay_plugin_init(mate_replay *r, mate_error *err);
/*! mate_replay_load_plugin() : dlopen()s path and calls its
 * mate_replay_plugin_init(). The object stays loaded until r is freed. */
MATE_API int mate_replay_load_plugin(mate_replay *r, const char *path, mate_error *err);

/*! mate_replay_set_bench() : after a call's verdict, runs its handler once more to warm
 * up, then runs more times, timing each (bench_* of the result); 0 turns it off. The
 * runs reuse the call's arguments: an argument written in place is written again. */
MATE_API void mate_replay_set_bench(mate_replay *r, int runs);
/*! mate_replay_set_tolerance() : rtol and atol for every floating output
 * (a negative value keeps that part of the per-dtype default). Integer and
 * bool outputs are always compared exactly. */
MATE_API void mate_replay_set_tolerance(mate_replay *r, double rtol, double atol);
/*! mate_replay_default_tolerance() : spec/ops.md's per-dtype defaults;
 * 0 and 0 for integer and bool dtypes. */
MATE_API void mate_replay_default_tolerance(mate_dtype dt, double *rtol, double *atol);
/*! mate_replay_set_device() : enum mate_replay_device. @return MATE_OK, or
 * MATE_ERR_UNSUPPORTED when CUDA is asked for and none is usable. */
MATE_API int mate_replay_set_device(mate_replay *r, int device, mate_error *err);
/*! mate_replay_get_device() : the device handlers run on (CPU or CUDA). */
MATE_API int mate_replay_get_device(const mate_replay *r);

/* One call to replay, already loaded. */
struct mate_replay_request {
	const char *function;       /* function_name as recorded */
	const char *module;         /* NULL: unknown */
	const char *self_id;        /* object receiver identity, or NULL */
	int64_t process_id;         /* scopes self_id */
	mate_value *args;           /* dict of arg_<i>/kwarg_<name>; handlers may
	                               write into its tensors (in-place outputs) */
	const mate_value *expected; /* dict of recorded outputs, or NULL when
	                               the call recorded none */
	const char *recorded_error; /* status failed: the recorded error */
	const char *signature;      /* function_signature; NULL: none recorded */
};

/*! mate_replay_execute() : runs req's handler and compares its outputs
 * with req->expected into *res. @return MATE_OK (the verdict is in res). */
MATE_API int mate_replay_execute(mate_replay *r, const struct mate_replay_request *req,
    struct mate_replay_result *res);
/*! mate_replay_dump() : loads the dump in dir and replays it. Loading
 * problems become an error verdict. @return MATE_OK. */
MATE_API int mate_replay_dump(mate_replay *r, const char *dir, struct mate_replay_result *res);

/*! mate_replay_shrink() : cuts the call of dump dir `dump`, which must fail on replay
 * (mismatch or error), to the smallest slice of its inputs that fails the same way,
 * by its handler's slicing rule (rows, tokens, a GEMM's rows of A and columns of B):
 * each unit is replayed alone and the first that fails is kept. Writes outdir (which
 * must not exist or be empty) as a root holding the cut dump, of the same name,
 * format and layout (and session.jsonl when the dump's root has one), written under
 * a temporary name beside it, replayed from there and renamed only when it fails the
 * same way. report gets what was kept ("row 1,731 of 4,096: the only row that
 * mismatches") and the cut dump's verdict. @return MATE_OK (written),
 * MATE_ERR_UNSUPPORTED when there is nothing to shrink or the call cannot be sliced
 * (err says why; nothing written), another status when the dump cannot be read or
 * outdir written (MATE_ERR_ARGUMENT: outdir is not empty). */
MATE_API int mate_replay_shrink(mate_replay *r, const char *dump, const char *outdir, char *report,
    size_t reportlen, mate_error *err);

/* Called once per dump, in the order given, as results become available. */
typedef void (*mate_replay_report_fn)(size_t i, const struct mate_dump_info *dump,
    const struct mate_replay_result *res, void *ctx);
/*! mate_replay_run() : replays dumps[0..n) with `jobs` threads, the calling
 * thread one of them (calls on the same object, by self_id, run in order on
 * one thread), and reports each result in order: `report` is called on those
 * threads, one call at a time, by the thread that finds the next result
 * ready. @return MATE_OK or MATE_ERR_NOMEM. */
MATE_API int mate_replay_run(mate_replay *r, const struct mate_dump_info *const *dumps,
    size_t n, int jobs, mate_replay_report_fn report, void *ctx, mate_error *err);

/* ---- Benchmarks (mate-bench) ----------------------------------------------
 * A problem is a profile entry (MATE_PROFILE, mate-list-dumps --unique
 * --jsonl): a function, its module, each tensor argument's shape, dtype,
 * strides and device, and the other arguments by value. mate_bench_run()
 * makes up inputs of those shapes and times the call on the replay engine. */
typedef struct mate_bench_entry mate_bench_entry;
/*! mate_bench_entry_from_json() : a profile entry from its JSON text (its
 * counts ignored). NULL with err set for malformed input, a shape past
 * mate_memory_cap(), or more than 128 arguments. Free with _free(). */
MATE_API mate_bench_entry *mate_bench_entry_from_json(const char *text, mate_error *err);
/*! mate_bench_entry_from_words() : the same from the command-line form
 * (mate-bench(1)): module (NULL: "<unknown>", as recorded for a call without one),
 * function and n KEY=SPEC words. */
MATE_API mate_bench_entry *mate_bench_entry_from_words(const char *module, const char *function,
    int n, char *const *words, mate_error *err);
MATE_API void mate_bench_entry_free(mate_bench_entry *e);
/* The entry's function, module (NULL: none) and key (the profile's; for the
 * command-line form, the key the profile gives the same problem: 16 hex
 * digits of the FNV-1a hash of its compact JSON); borrowed from e. */
MATE_API const char *mate_bench_entry_function(const mate_bench_entry *e);
MATE_API const char *mate_bench_entry_module(const mate_bench_entry *e);
MATE_API const char *mate_bench_entry_key(const mate_bench_entry *e);
/*! mate_bench_entry_problem() : {"function","module","tensors","scalars"}
 * as compact JSON; malloc'ed (free()), NULL when out of memory. */
MATE_API char *mate_bench_entry_problem(const mate_bench_entry *e);

struct mate_bench_result {
	int status;                 /* MATE_OK: it ran; MATE_ERR_UNSUPPORTED: mate
	                               cannot make its inputs or run it; else failed */
	char message[1024];         /* why, when status is not MATE_OK */
	int runs;                   /* timed runs (mate_replay_set_bench()) */
	double median, min, max;    /* their seconds */
	double first_seconds;       /* the untimed first run */
	double flops;               /* per call; -1 when the op defines none */
	double bytes;               /* the call's tensors, in and out */
	int64_t nan, inf;           /* NaN and infinite elements the call left in its
	                               outputs and arguments (its inputs have none) */
};
/*! mate_bench_run() : makes e's inputs (random with seed; index tensors such
 * as page tables, offsets and positions valid for the call) and runs the call
 * on r's device once, then as mate_replay_set_bench() says. A method's object
 * is made by its class's __init__ first. @return MATE_OK (the outcome is in
 * res). */
MATE_API int mate_bench_run(mate_replay *r, const mate_bench_entry *e, uint64_t seed,
    struct mate_bench_result *res);
/*! mate_bench_example() : a problem for built-in op fn in the command-line
 * form's KEY=SPEC words (space-separated, unquoted) into buf. @return MATE_OK,
 * or MATE_ERR_UNSUPPORTED with *why (static) when mate has none. */
MATE_API int mate_bench_example(const char *fn, char *buf, size_t cap, const char **why);

/* ---- Writing handlers ------------------------------------------------------ */
/*! mate_replay_call_function() : the function name as recorded. */
MATE_API const char *mate_replay_call_function(const mate_replay_call *c);
/*! mate_replay_call_signature() : function_signature as recorded, or NULL. */
MATE_API const char *mate_replay_call_signature(const mate_replay_call *c);
/*! mate_replay_call_device() : MATE_REPLAY_DEVICE_CPU or _CUDA. */
MATE_API int mate_replay_call_device(const mate_replay_call *c);
/*! mate_replay_call_args() : the whole argument dict (borrowed): bound to
 * the handler's signature (mate_replay_register_signature()), else as
 * recorded. Its tensors share their storage with the recorded arguments:
 * an in-place write is checked against the recorded post-call value. */
MATE_API mate_value *mate_replay_call_args(const mate_replay_call *c);
/*! mate_replay_arg() : the argument given at position pos ("arg_<pos>")
 * or by keyword name ("kwarg_<name>"), or NULL when absent. pos < 0 or a
 * NULL name skips that form. Borrowed. */
MATE_API mate_value *mate_replay_arg(const mate_replay_call *c, int pos, const char *name);
/* Typed arguments: *out gets the value, or def when the argument is absent
 * or None. @return MATE_OK, or MATE_ERR_ARGUMENT (message on the call) when
 * it has another type. A tensor argument is required unless optional. */
MATE_API int mate_replay_arg_tensor(mate_replay_call *c, int pos, const char *name,
    int optional, const mate_tensor **out);
MATE_API int mate_replay_arg_int(mate_replay_call *c, int pos, const char *name,
    int64_t def, int64_t *out);
MATE_API int mate_replay_arg_float(mate_replay_call *c, int pos, const char *name,
    double def, double *out);
MATE_API int mate_replay_arg_bool(mate_replay_call *c, int pos, const char *name,
    int def, int *out);
MATE_API int mate_replay_arg_str(mate_replay_call *c, int pos, const char *name,
    const char *def, const char **out);
MATE_API int mate_replay_arg_dtype(mate_replay_call *c, int pos, const char *name,
    mate_dtype def, mate_dtype *out);
/*! mate_replay_new_tensor() : a new contiguous zeroed host tensor value
 * (for outputs). @return the value (caller owns) or NULL (message on c). */
MATE_API mate_value *mate_replay_new_tensor(mate_replay_call *c, mate_dtype dt, int ndim,
    const int64_t *shape);
/*! mate_replay_return() : sets the call's return value (ownership moves):
 * a tensor or any other value is output "result", a tuple's items are
 * "result_<i>". */
MATE_API int mate_replay_return(mate_replay_call *c, mate_value *v);
/*! mate_replay_set_output() : sets output key (copied) to v (ownership moves). */
MATE_API int mate_replay_set_output(mate_replay_call *c, const char *key, mate_value *v);
/*! mate_replay_fail() : records the message of a failed call and returns
 * code, for `return mate_replay_fail(c, MATE_ERR_ARGUMENT, "...")`. */
MATE_API int mate_replay_fail(mate_replay_call *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/*! mate_replay_call_self() : the object this call's receiver (self_id)
 * holds, set by an earlier call on it, or NULL. */
MATE_API void *mate_replay_call_self(const mate_replay_call *c);
/*! mate_replay_call_set_self() : stores obj for the receiver (replacing and
 * freeing an earlier one with free_fn); freed with free_fn when the
 * registry is. obj is the registry's from this call on: on failure it is
 * freed with free_fn before the return. @return MATE_ERR_ARGUMENT when the
 * call has no self_id, MATE_ERR_NOMEM. */
MATE_API int mate_replay_call_set_self(mate_replay_call *c, void *obj, void (*free_fn)(void *));

#ifdef __cplusplus
}
#endif
#endif /* MATE_REPLAY_H_INCLUDED */
