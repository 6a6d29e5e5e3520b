/* mate.h: libmate's public core: dtypes, the tensor model and errors (the recording API joins it). */
#ifndef MATE_H_INCLUDED
#define MATE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MATE_VERSION_STRING "0.1.0"
#define MATE_VERSION_NUMBER 100 /* major*10000 + minor*100 + patch */

/*! mate_version_string() : @return libmate's version, e.g. "0.1.0". */
const char *mate_version_string(void);

/*! mate_text_escape() : the len bytes of s as a terminal or a line-based
 * log may show them: control characters (newline, ESC, BEL, C1), invalid
 * UTF-8 and the backslash become Python's escapes (\n, \x1b, \x9b, \\); other
 * text, UTF-8 included, is kept. No byte of the result starts a line or a
 * terminal sequence. @return a string the caller frees, NULL when out of
 * memory. */
char *mate_text_escape(const char *s, size_t len);

/* ---- Errors ------------------------------------------------------------
 * Functions that can fail take a caller-owned mate_error (may be NULL) and
 * return a negative status or NULL; the message says what and why. */
enum mate_status {
	MATE_OK = 0,
	MATE_ERR_IO = -1,          /* open/read/write/rename failed (errno kept) */
	MATE_ERR_FORMAT = -2,      /* malformed or hostile input */
	MATE_ERR_NOMEM = -3,
	MATE_ERR_UNSUPPORTED = -4, /* valid input mate cannot handle */
	MATE_ERR_LIMIT = -5,       /* a size or count limit was hit */
	MATE_ERR_ARGUMENT = -6,    /* the caller passed something invalid */
	MATE_ERR_NOSPACE = -7      /* the disk is full (ENOSPC, EDQUOT) */
};

typedef struct mate_error {
	int code;          /* one of enum mate_status */
	int sys_errno;     /* errno for MATE_ERR_IO, else 0 */
	char message[512]; /* "what: why" */
} mate_error;

/*! mate_error_clear() : resets err to MATE_OK with an empty message (NULL ok). */
void mate_error_clear(mate_error *err);

/* ---- dtypes ------------------------------------------------------------ */
typedef enum mate_dtype {
	MATE_DTYPE_INVALID = 0,
	MATE_BOOL,
	MATE_U8,
	MATE_I8,
	MATE_I16,
	MATE_U16,
	MATE_I32,
	MATE_U32,
	MATE_I64,
	MATE_U64,
	MATE_F16,
	MATE_BF16,
	MATE_F32,
	MATE_F64,
	MATE_F8_E4M3FN,
	MATE_F8_E5M2,
	MATE_F8_E4M3FNUZ,
	MATE_F8_E5M2FNUZ,
	MATE_F8_E8M0FNU,
	MATE_C32,  /* complex32: two f16 */
	MATE_C64,  /* complex64: two f32 */
	MATE_C128, /* complex128: two f64 */
	MATE_DTYPE_COUNT
} mate_dtype;

enum mate_dtype_kind {
	MATE_KIND_BOOL,
	MATE_KIND_INT,
	MATE_KIND_UINT,
	MATE_KIND_FLOAT,
	MATE_KIND_COMPLEX
};

/*! mate_dtype_size() : bytes per element, 0 for MATE_DTYPE_INVALID. */
size_t mate_dtype_size(mate_dtype dt);
/*! mate_dtype_kind() : one of enum mate_dtype_kind. */
int mate_dtype_kind(mate_dtype dt);
/*! mate_dtype_name() : torch's name without the prefix ("float32", "bfloat16",
 * "float8_e4m3fn"); "invalid" for anything else. Static string. */
const char *mate_dtype_name(mate_dtype dt);
/*! mate_dtype_from_name() : accepts "float32", "torch.float32" and torch's
 * aliases ("float", "half", "long", ...); MATE_DTYPE_INVALID when unknown. */
mate_dtype mate_dtype_from_name(const char *name);
/*! mate_dtype_safetensors_name() : "F32", "BF16", "F8_E4M3", ...; NULL when
 * safetensors has no such dtype (complex32, complex128). */
const char *mate_dtype_safetensors_name(mate_dtype dt);
/*! mate_dtype_from_safetensors() : exact, case-sensitive; INVALID if unknown. */
mate_dtype mate_dtype_from_safetensors(const char *name);
/*! mate_dtype_storage_class() : legacy torch storage class ("FloatStorage"),
 * or NULL for dtypes saved as UntypedStorage + _rebuild_tensor_v3. */
const char *mate_dtype_storage_class(mate_dtype dt);
/*! mate_dtype_from_storage_class() : "FloatStorage" -> MATE_F32, etc. */
mate_dtype mate_dtype_from_storage_class(const char *cls);

/* Exact conversions. Narrowing rounds to nearest even; NaN stays NaN;
 * e4m3fn has no infinity and saturates to +-448; e5m2 overflows to inf. */
float mate_f16_to_f32(uint16_t h);
uint16_t mate_f32_to_f16(float f);
float mate_bf16_to_f32(uint16_t b);
uint16_t mate_f32_to_bf16(float f);
float mate_f8e4m3fn_to_f32(uint8_t v);
uint8_t mate_f32_to_f8e4m3fn(float f);
float mate_f8e5m2_to_f32(uint8_t v);
uint8_t mate_f32_to_f8e5m2(float f);
/*! mate_load_f64() : element at p of dtype dt widened to double (complex: real
 * part). Exact for every real dtype except 64-bit ints beyond 2^53. */
double mate_load_f64(mate_dtype dt, const void *p);

/* ---- Tensors -----------------------------------------------------------
 * A strided view of a storage. Element (i0..ik) lives at byte
 * (offset + sum_j i_j*stride[j]) * mate_dtype_size(dtype) from data.
 * Strides and offset count elements and are >= 0. */
#define MATE_MAX_DIMS 32

enum mate_device_type { MATE_DEVICE_CPU = 0, MATE_DEVICE_CUDA = 1 };

typedef struct mate_tensor {
	mate_dtype dtype;
	int ndim;
	int64_t shape[MATE_MAX_DIMS];
	int64_t stride[MATE_MAX_DIMS];
	int64_t offset;    /* storage offset, in elements */
	void *data;        /* storage base (host or device address) */
	int device_type;   /* enum mate_device_type */
	int device_index;  /* CUDA ordinal; 0 for CPU */
	void *stream;      /* CUDA stream the tensor is used on (NULL: default) */
	int requires_grad;
} mate_tensor;

/*! mate_tensor_init() : fills t for a tensor at data. stride NULL means
 * contiguous (row-major). @return MATE_OK or MATE_ERR_ARGUMENT. */
int mate_tensor_init(mate_tensor *t, mate_dtype dt, int ndim,
    const int64_t *shape, const int64_t *stride, void *data);
/*! mate_tensor_numel() : product of the shape (1 for 0-dim), -1 on overflow. */
int64_t mate_tensor_numel(const mate_tensor *t);
/*! mate_tensor_nbytes() : numel * element size, -1 on overflow. */
int64_t mate_tensor_nbytes(const mate_tensor *t);
/*! mate_tensor_is_contiguous() : torch's rule (size-1 dims' strides ignored). */
int mate_tensor_is_contiguous(const mate_tensor *t);
/*! mate_tensor_storage_extent() : elements of storage the view needs, i.e.
 * offset + sum (shape_i - 1) * stride_i + 1, or offset when empty; -1 on
 * overflow or a negative stride. */
int64_t mate_tensor_storage_extent(const mate_tensor *t);
/*! mate_tensor_element() : address of the element at linear (row-major)
 * index i of the view. */
void *mate_tensor_element(const mate_tensor *t, int64_t i);
/*! mate_tensor_copy_contiguous() : gathers the view into dst (nbytes bytes,
 * row-major). The tensor must be on the host. */
void mate_tensor_copy_contiguous(const mate_tensor *t, void *dst);

/* ---- Recording API calls ----------------------------------------------
 * A library records each call of its public API the way MATE's and
 * FlashInfer's Python decorators do, driven by the environment (mate(7)):
 * MATE_LOGLEVEL 0 off, 1 names, 3 arguments and results, 5 with tensor
 * statistics, 10 with dump directories. The pattern (libmate(3)):
 *
 *	mate_call *c = NULL;
 *	if (MATE_ACTIVE()) {
 *		c = mate_call_begin("rmsnorm", "mylib", "(input, weight, eps=1e-06)");
 *		mate_call_tensor(c, MATE_ARG, NULL, &input);
 *		mate_call_tensor(c, MATE_ARG, NULL, &weight);
 *		mate_call_float(c, MATE_DEFAULT, "eps", 1e-6);
 *		mate_call_ready(c);
 *	}
 *	rc = rmsnorm_impl(&input, &weight, 1e-6, &out);
 *	if (c != NULL) {
 *		if (rc == 0) {
 *			mate_call_tensor(c, MATE_RESULT, NULL, &out);
 *			mate_call_end(c);
 *		} else
 *			mate_call_fail(c, "rmsnorm: bad shape");
 *	}
 *
 * Rules:
 * - Every mate_call_* function accepts NULL and then does nothing; none
 *   reports an error: a failure inside the recorder becomes one warning on
 *   stderr ("mate: ...") and recording degrades (the call is not recorded,
 *   or dumping stops), never the host program.
 * - Strings and tensor descriptors are copied when passed. The memory a
 *   tensor points to is read in mate_call_ready() (arguments) and in
 *   mate_call_end() (results and MATE_INPLACE arguments) and must stay valid
 *   until then. Device tensors are copied to the host on their own stream
 *   (mate_tensor.stream), which only that stream waits for.
 * - mate_call_value() takes ownership of the tree (freed even on error).
 * - A mate_call belongs to the thread that began it until mate_call_end()
 *   or mate_call_fail() frees it; any number of threads record at once.
 * - The configuration is read from the environment once, by the first
 *   mate_call_begin() (MATE_ACTIVE() is true until then), or set by
 *   mate_configure(). */
typedef struct mate_call mate_call;
struct mate_value; /* mate_dump.h */

/* The level in effect: -1 until the configuration is read, then 0, 1, 3,
 * 5 or 10. Read through MATE_ACTIVE(); set only by libmate. */
extern int mate_record_level_;

#if defined(__GNUC__)
#define MATE_ACTIVE() \
	__builtin_expect(__atomic_load_n(&mate_record_level_, __ATOMIC_RELAXED) != 0, 0)
#else
#define MATE_ACTIVE() (mate_record_level_ != 0)
#endif

/* How a value takes part in the call (the flags argument below). */
enum mate_arg_flags {
	MATE_ARG = 0,        /* positional: arg[i] in the log, arg_<i> in dumps */
	MATE_KWARG = 1,      /* keyword: name= in the log, kwarg_<name> in dumps */
	MATE_DEFAULT = 2,    /* a parameter left at its default: logged only */
	MATE_RESULT = 3,     /* the return value; several make a tuple */
	MATE_INPLACE = 0x10  /* or'ed with MATE_ARG/MATE_KWARG on a tensor the API
	                        writes: its value after the call is dumped too */
};

/*! mate_call_begin() : starts recording a call of name ("Class.method" for a
 * method), from module, whose Python-style signature is signature (both may
 * be NULL). At level 1 this writes the log line. @return the call, or NULL
 * when nothing is recorded (level 0, or the recorder failed). */
mate_call *mate_call_begin(const char *name, const char *module,
    const char *signature);
/*! mate_call_self() : the object receiver of a Class.method call: recorded
 * as positional argument 0 (an object of type Class) and as self_id. Call it
 * before the other positional arguments. */
void mate_call_self(mate_call *c, const void *self);

/* Arguments, defaults and results. name is the keyword or parameter name
 * (ignored for MATE_ARG and MATE_RESULT). */
void mate_call_tensor(mate_call *c, int flags, const char *name, const mate_tensor *t);
void mate_call_int(mate_call *c, int flags, const char *name, int64_t v);
void mate_call_float(mate_call *c, int flags, const char *name, double v);
void mate_call_bool(mate_call *c, int flags, const char *name, int v);
/*! mate_call_str() : a string argument (s NULL records None). */
void mate_call_str(mate_call *c, int flags, const char *name, const char *s);
void mate_call_none(mate_call *c, int flags, const char *name);
void mate_call_dtype(mate_call *c, int flags, const char *name, mate_dtype dt);
/*! mate_call_enum() : an enum member, enum_name as "Mode.FAST". */
void mate_call_enum(mate_call *c, int flags, const char *name,
    const char *enum_name, int64_t v);
/*! mate_call_value() : any value tree (lists, tuples, dicts, nested tensors;
 * mate_dump.h); ownership of v moves to the call. */
void mate_call_value(mate_call *c, int flags, const char *name, struct mate_value *v);

/*! mate_call_ready() : the arguments are complete: logs them (levels 3, 5)
 * and dumps them (level 10) before the API runs. Implied by the first
 * MATE_RESULT or by mate_call_end()/mate_call_fail() when not called. */
void mate_call_ready(mate_call *c);
/*! mate_call_end() : the API returned: logs and dumps the results and the
 * MATE_INPLACE arguments, then frees c. No MATE_RESULT records None. */
void mate_call_end(mate_call *c);
/*! mate_call_fail() : the API reported an error: the dump gets a "failed"
 * record with error (may be NULL); no output is logged. Frees c. */
void mate_call_fail(mate_call *c, const char *error);

/* ---- Work on workers (live events) ------------------------------------------
 * With events on (MATE_INSTRUCTION_LOG or MATE_MONITOR and MATE_LOGLEVEL >= 1,
 * mate(7)), every recorded call is a RECV (its inputs are ready) and a SEND
 * (it returned) from its thread, with ids in the details ("call=N op=NAME
 * depth=D"). A library whose work runs elsewhere (a worker thread, a GPU
 * stream, a device) reports that work, so it shows as WORKER_SEND and
 * WORKER_RECV on that worker, joined to the call:
 *
 *	uint64_t call = mate_call_id(c);     // on the calling thread; 0 if off
 *	... hand call to the worker with the task, then on the worker:
 *	mate_work w;
 *	mate_work_begin(&w, call, "worker_1", "rmsnorm", in_bytes);
 *	rc = run(task);
 *	mate_work_end(&w, out_bytes, rc == 0);
 *
 * Both cost one load when events are off. A mate_work is the caller's (on
 * the stack); begin and end may run on different threads. */
typedef struct mate_work {
	uint64_t call;      /* the call it belongs to (0: none) */
	uint64_t id;        /* this work's id; 0 when not recorded */
	char worker[48];    /* the worker's name, as the log shows it */
	char op[48];
} mate_work;

/*! mate_call_id() : the id of call c in the events (call=N), for its work;
 * 0 when events are off or c is NULL. Call it on c's thread. */
uint64_t mate_call_id(const mate_call *c);
/*! mate_work_begin() : work of call (0: of no call) starts on worker (a
 * name such as "worker_1" or "cuda:0/stream 7"; NULL: the calling thread)
 * doing op (NULL: "work") on bytes bytes: WORKER_SEND. */
void mate_work_begin(mate_work *w, uint64_t call, const char *worker, const char *op,
    int64_t bytes);
/*! mate_work_end() : the work of w finished (ok non-zero) or failed,
 * producing bytes bytes: WORKER_RECV. Does nothing when begin did not record. */
void mate_work_end(mate_work *w, int64_t bytes, int ok);

/* ---- Recorder configuration ----------------------------------------------
 * The environment variables of mate(7) as a struct, for tools and tests.
 * Strings are borrowed by mate_configure(), which copies them. */
struct mate_config {
	int level;                /* MATE_LOGLEVEL, 0..10 (in-between levels act as the lower named one) */
	const char *logdest;      /* "stdout", "stderr" or a path (%i: the pid); NULL: stdout */
	const char *dump_dir;     /* NULL: "mate_dumps" */
	double dump_max_size_gb;  /* GiB (1024^3 bytes) per process */
	int64_t dump_max_count;   /* dumped calls per process */
	const char *dump_include; /* comma-separated fnmatch patterns; NULL: none */
	const char *dump_exclude;
	int dump_safetensors;     /* 1: .safetensors instead of .pt */
	const char *instruction_log; /* MATE_INSTRUCTION_LOG: a path (%i: the pid); NULL: none */
	const char *monitor;      /* MATE_MONITOR: "1", "tcp", "tcp:PORT", "tcp://HOST:PORT"; NULL: off */
	const char *profile;      /* MATE_PROFILE: a path (%i: the pid) for the table of
	                             distinct calls written at exit; NULL: none */
};

/*! mate_config_default() : the defaults of mate(7) (level 0, stdout, ...). */
void mate_config_default(struct mate_config *cfg);
/*! mate_config_from_env() : the defaults overridden by the MATE_* variables;
 * a bad value gets one warning on stderr naming it and keeps the default.
 * The strings point into the environment or static storage. */
void mate_config_from_env(struct mate_config *cfg);
/*! mate_configure() : replaces the configuration in effect (cfg NULL: read
 * the environment again) and starts a new session: call counters, limits
 * and one-time warnings reset, the log destination is reopened, and the
 * system-information header is written again before the next logged call.
 * Not to be called while another thread is recording.
 * @return MATE_OK, or MATE_ERR_ARGUMENT (err set) for an invalid cfg. */
int mate_configure(const struct mate_config *cfg, mate_error *err);
/*! mate_set_identity() : presents the recording as another library's API
 * logging, FlashInfer's with ("FLASHINFER", "FlashInfer"): the variables are
 * read as PREFIX_LOGLEVEL, PREFIX_LOGDEST, PREFIX_DUMP_DIR,
 * PREFIX_DUMP_MAX_SIZE_GB, PREFIX_DUMP_MAX_COUNT, PREFIX_DUMP_INCLUDE,
 * PREFIX_DUMP_EXCLUDE and PREFIX_DUMP_SAFETENSORS (MATE_INSTRUCTION_LOG,
 * MATE_MONITOR and MATE_MEMLOG keep their names), the log says "NAME API
 * Call" and "NAME API Logging", and the default dump folder is "name_dumps"
 * in lower case. With the prefix FLASHINFER the text is FlashInfer's
 * decorator's: tensor blocks have no va_range line. name NULL: the prefix;
 * both NULL: mate's own (MATE). The environment is then read again, as by
 * mate_configure(NULL). MATE_IDENTITY=PREFIX[:NAME] does the same before the
 * first call (mate-record --identity). Not while another thread records.
 * @return MATE_OK, or MATE_ERR_ARGUMENT (err set): a prefix not of 1-31
 * A-Z, 0-9 and _, or a name not of 1-31 printable characters. */
int mate_set_identity(const char *prefix, const char *name, mate_error *err);
/*! mate_record_level() : the effective level: 0, 1, 3, 5 or 10. */
int mate_record_level(void);

#ifdef __cplusplus
}
#endif
#endif /* MATE_H_INCLUDED */
