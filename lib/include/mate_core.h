/* mate_core.h: libmate's base, shared by the other headers: version, errors, dtypes, tensors, storages, values, the memory cap and tensor files (.pt, safetensors). */
#ifndef MATE_CORE_H_INCLUDED
#define MATE_CORE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* MATE_API marks libmate's public functions: the library is built with
 * hidden visibility, and exports exactly what the installed headers declare
 * with it (tests/test_exports.sh checks both ways). */
#if defined(__GNUC__) && !defined(MATE_API)
#define MATE_API __attribute__((visibility("default")))
#elif !defined(MATE_API)
#define MATE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Ownership, for every function of libmate:
 * - A function that can fail takes a caller-owned mate_error (may be NULL)
 *   and returns a negative status (enum mate_status) or NULL; the message
 *   says what and why. libmate never prints to stdout and never exits.
 * - A function named *_new, *_open, *_read, *_load or *_copy, and one whose
 *   comment says "caller frees", returns an object the caller owns and
 *   frees with the matching *_free (or mate_storage_unref()); every *_free
 *   accepts NULL.
 * - Strings and structs passed in are copied unless the comment says
 *   "borrows"; pointers returned by getters are borrowed from the object
 *   they came from and stay valid while it lives, unmodified.
 * - A function taking a value "ownership moves" frees it even on error.
 * - Static strings (dtype names, status names) are never freed. */

#define MATE_VERSION_STRING "0.1.0"
#define MATE_VERSION_NUMBER 100 /* major*10000 + minor*100 + patch */

/*! mate_version_string() : @return libmate's version, e.g. "0.1.0". */
MATE_API const char *mate_version_string(void);

/*! mate_text_escape() : the len bytes of s as a terminal or a line-based
 * log may show them: control characters (newline, ESC, BEL, C1), invalid
 * UTF-8 and the backslash become Python's escapes (\n, \x1b, \x9b, \\); other
 * text, UTF-8 included, is kept. No byte of the result starts a line or a
 * terminal sequence. @return a string the caller frees, NULL when out of
 * memory. */
MATE_API char *mate_text_escape(const char *s, size_t len);

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
MATE_API void mate_error_clear(mate_error *err);

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
	MATE_F4_E2M1FN_X2, /* two float4_e2m1fn values in one byte, the first in the low
	                    * nibble (torch's float4_e2m1fn_x2: shapes count bytes; in
	                    * safetensors "F4", whose last dimension counts values, twice
	                    * as many); a byte to mate_load_f64(), compared exactly */
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
MATE_API size_t mate_dtype_size(mate_dtype dt);
/*! mate_dtype_kind() : one of enum mate_dtype_kind. */
MATE_API int mate_dtype_kind(mate_dtype dt);
/*! mate_dtype_name() : torch's name without the prefix ("float32", "bfloat16",
 * "float8_e4m3fn"); "invalid" for anything else. Static string. */
MATE_API const char *mate_dtype_name(mate_dtype dt);
/*! mate_dtype_from_name() : accepts "float32", "torch.float32" and torch's
 * aliases ("float", "half", "long", ...); MATE_DTYPE_INVALID when unknown. */
MATE_API mate_dtype mate_dtype_from_name(const char *name);
/*! mate_dtype_safetensors_name() : "F32", "BF16", "F8_E4M3", ...; NULL when
 * safetensors has no such dtype (complex32, complex128). */
MATE_API const char *mate_dtype_safetensors_name(mate_dtype dt);
/*! mate_dtype_from_safetensors() : exact, case-sensitive; INVALID if unknown. */
MATE_API mate_dtype mate_dtype_from_safetensors(const char *name);
/*! mate_dtype_storage_class() : legacy torch storage class ("FloatStorage"),
 * or NULL for dtypes saved as UntypedStorage + _rebuild_tensor_v3. */
MATE_API const char *mate_dtype_storage_class(mate_dtype dt);
/*! mate_dtype_from_storage_class() : "FloatStorage" -> MATE_F32, etc. */
MATE_API mate_dtype mate_dtype_from_storage_class(const char *cls);

/*! mate_f4e2m1_to_f32() : the float4_e2m1fn value of the low four bits of v
 * (sign, two exponent bits with bias 1, one mantissa bit: 0, 0.5, 1, 1.5, 2, 3,
 * 4, 6 and their negatives; no infinity or NaN). */
MATE_API float mate_f4e2m1_to_f32(uint8_t v);

/* Exact conversions. Narrowing rounds to nearest even; NaN stays NaN;
 * e4m3fn has no infinity and saturates to +-448; e5m2 overflows to inf. */
MATE_API float mate_f16_to_f32(uint16_t h);
MATE_API uint16_t mate_f32_to_f16(float f);
MATE_API float mate_bf16_to_f32(uint16_t b);
MATE_API uint16_t mate_f32_to_bf16(float f);
MATE_API float mate_f8e4m3fn_to_f32(uint8_t v);
MATE_API uint8_t mate_f32_to_f8e4m3fn(float f);
MATE_API float mate_f8e5m2_to_f32(uint8_t v);
MATE_API uint8_t mate_f32_to_f8e5m2(float f);
/*! mate_load_f64() : element at p of dtype dt widened to double (complex: real
 * part). Exact for every real dtype except 64-bit ints beyond 2^53. */
MATE_API double mate_load_f64(mate_dtype dt, const void *p);

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
MATE_API int mate_tensor_init(mate_tensor *t, mate_dtype dt, int ndim,
    const int64_t *shape, const int64_t *stride, void *data);
/*! mate_tensor_numel() : product of the shape (1 for 0-dim), -1 on overflow. */
MATE_API int64_t mate_tensor_numel(const mate_tensor *t);
/*! mate_tensor_nbytes() : numel * element size, -1 on overflow. */
MATE_API int64_t mate_tensor_nbytes(const mate_tensor *t);
/*! mate_tensor_is_contiguous() : torch's rule (size-1 dims' strides ignored). */
MATE_API int mate_tensor_is_contiguous(const mate_tensor *t);
/*! mate_tensor_storage_extent() : elements of storage the view needs, i.e.
 * offset + sum (shape_i - 1) * stride_i + 1, or offset when empty; -1 on
 * overflow or a negative stride. */
MATE_API int64_t mate_tensor_storage_extent(const mate_tensor *t);
/*! mate_tensor_element() : address of the element at linear (row-major)
 * index i of the view. */
MATE_API void *mate_tensor_element(const mate_tensor *t, int64_t i);
/*! mate_tensor_copy_contiguous() : gathers the view into dst (nbytes bytes,
 * row-major). The tensor must be on the host. */
MATE_API void mate_tensor_copy_contiguous(const mate_tensor *t, void *dst);

/* ---- Storages ----------------------------------------------------------
 * A reference-counted byte buffer that tensors view. Tensors that share a
 * storage object are written once to a .pt file. */
typedef struct mate_storage mate_storage;

/*! mate_storage_new() : nbytes of zeroed, 64-byte aligned memory, refcount 1. */
MATE_API mate_storage *mate_storage_new(size_t nbytes, mate_error *err);
/*! mate_storage_wrap() : borrows caller memory (not copied, not freed): it
 * must outlive every reference. refcount 1. */
MATE_API mate_storage *mate_storage_wrap(void *data, size_t nbytes, mate_error *err);
MATE_API mate_storage *mate_storage_ref(mate_storage *s);
/*! mate_storage_unref() : drops one reference; frees at zero. NULL ok. */
MATE_API void mate_storage_unref(mate_storage *s);
MATE_API void *mate_storage_data(const mate_storage *s);
MATE_API size_t mate_storage_size(const mate_storage *s);

/* ---- Values ------------------------------------------------------------
 * A tree of Python-like values: what a .pt file's pickle holds, what a
 * recorded call's arguments are. Containers own their children; getters
 * borrow (valid while the parent lives). */
typedef enum mate_value_kind {
	MATE_V_NONE,
	MATE_V_BOOL,
	MATE_V_INT,
	MATE_V_FLOAT,
	MATE_V_STR,
	MATE_V_BYTES,
	MATE_V_LIST,
	MATE_V_TUPLE,
	MATE_V_DICT,    /* ordered; keys are values (usually strings) */
	MATE_V_TENSOR,
	MATE_V_DTYPE,   /* a torch.dtype */
	MATE_V_ENUM,    /* name ("Mode.FAST") and integer value */
	MATE_V_OBJECT   /* anything else: a type name and a repr */
} mate_value_kind;

typedef struct mate_value mate_value;

MATE_API mate_value *mate_value_none(void);
MATE_API mate_value *mate_value_bool(int b);
MATE_API mate_value *mate_value_int(int64_t i);
MATE_API mate_value *mate_value_float(double d);
/*! mate_value_str() : copies len bytes of UTF-8 (len (size_t)-1: strlen). */
MATE_API mate_value *mate_value_str(const char *s, size_t len);
MATE_API mate_value *mate_value_bytes(const void *p, size_t len);
MATE_API mate_value *mate_value_list(void);
MATE_API mate_value *mate_value_tuple(void);
MATE_API mate_value *mate_value_dict(void);
/*! mate_value_ordered_dict() : a dict that pickles as collections.OrderedDict. */
MATE_API mate_value *mate_value_ordered_dict(void);
/*! mate_value_tensor() : a tensor viewing storage st (takes a new reference
 * to st; t->data is set to the storage's data). */
MATE_API mate_value *mate_value_tensor(const mate_tensor *t, mate_storage *st);
MATE_API mate_value *mate_value_dtype(mate_dtype dt);
MATE_API mate_value *mate_value_enum(const char *name, int64_t v);
MATE_API mate_value *mate_value_object(const char *type, const char *repr);
/*! mate_value_free() : frees v and its children. NULL ok. */
MATE_API void mate_value_free(mate_value *v);
/*! mate_value_copy() : deep copy of the tree (tensor storages are shared). */
MATE_API mate_value *mate_value_copy(const mate_value *v);

/*! mate_value_append() : adds item (ownership moves) to a list or tuple.
 * @return MATE_OK or MATE_ERR_ARGUMENT (item is then freed). */
MATE_API int mate_value_append(mate_value *seq, mate_value *item);
/*! mate_value_set() : dict[key] = item, replacing an equal string key.
 * Ownership of key and item moves into the dict. */
MATE_API int mate_value_set(mate_value *dict, mate_value *key, mate_value *item);
/*! mate_value_set_str() : mate_value_set() with a string key (copied). */
MATE_API int mate_value_set_str(mate_value *dict, const char *key, mate_value *item);

MATE_API mate_value_kind mate_value_kind_of(const mate_value *v);
MATE_API int mate_value_is_ordered(const mate_value *v);
MATE_API int mate_value_get_bool(const mate_value *v);
MATE_API int64_t mate_value_get_int(const mate_value *v);
MATE_API double mate_value_get_float(const mate_value *v);
/*! mate_value_get_str() : the string (NUL-terminated) or bytes; len may be NULL. */
MATE_API const char *mate_value_get_str(const mate_value *v, size_t *len);
/*! mate_value_len() : items of a list, tuple or dict; 0 otherwise. */
MATE_API size_t mate_value_len(const mate_value *v);
/*! mate_value_item() : i-th item of a list/tuple, or i-th value of a dict. */
MATE_API mate_value *mate_value_item(const mate_value *v, size_t i);
/*! mate_value_key() : i-th key of a dict. */
MATE_API mate_value *mate_value_key(const mate_value *v, size_t i);
/*! mate_value_lookup() : dict value for a string key, or NULL. */
MATE_API mate_value *mate_value_lookup(const mate_value *dict, const char *key);
/*! mate_value_get_tensor() : the tensor view (data points into the storage). */
MATE_API const mate_tensor *mate_value_get_tensor(const mate_value *v);
MATE_API mate_storage *mate_value_get_storage(const mate_value *v);
MATE_API mate_dtype mate_value_get_dtype(const mate_value *v);
/*! mate_value_enum_name() / mate_value_object_type(): borrowed strings. */
MATE_API const char *mate_value_enum_name(const mate_value *v);
MATE_API const char *mate_value_object_type(const mate_value *v);
MATE_API const char *mate_value_object_repr(const mate_value *v);

/* ---- the memory cap ------------------------------------------------------
 * The most memory libmate takes for one untrusted input: the unpickler's
 * objects for one .pt file, the tensors of one safetensors header, what
 * mate-replay materialises for one call, and the pages a host allocator's
 * replay of a memory log touches. Past it the operation fails with
 * MATE_ERR_LIMIT and a message naming MATE_MAX_MEMORY. */
/*! mate_memory_cap() : mate_memory_cap_set()'s value, else MATE_MAX_MEMORY
 * (see mate_size_parse()), else 1 GiB. */
MATE_API uint64_t mate_memory_cap(void);
/*! mate_memory_cap_set() : sets the cap for the process; 0 goes back to
 * MATE_MAX_MEMORY or the default. */
MATE_API void mate_memory_cap_set(uint64_t bytes);
/*! mate_size_parse() : a positive byte count, optionally followed by K, M,
 * G or T (powers of 1024; "MiB" and "MB" read as M). @return MATE_OK, or
 * MATE_ERR_ARGUMENT (*bytes unchanged). */
MATE_API int mate_size_parse(const char *s, uint64_t *bytes);

/* ---- .pt files (torch.save's zip + pickle) ------------------------------ */
struct mate_pt_write_options {
	const char *root;   /* archive root folder (1-255 bytes, no '/'); NULL: "archive" */
	int use_v3;         /* 1: every tensor as _rebuild_tensor_v3 (torch 2.x only) */
};
/*! mate_pt_write() : writes root (any value tree) as a .pt file that
 * torch.load reads. The file appears under path only when complete
 * (written to a temporary name, renamed). opts may be NULL. Enums are
 * written as their name and objects as their repr (str); floats and bytes
 * load with torch 1.13 only when weights_only=False. */
MATE_API int mate_pt_write(const char *path, const mate_value *root,
    const struct mate_pt_write_options *opts, mate_error *err);

struct mate_pt_read_options {
	uint64_t max_pickle_bytes;  /* 0: 256 MiB */
	uint64_t max_records;       /* 0: 1,000,000 zip entries */
	int load_data;              /* 0: tensors' storages are not kept (metadata only) */
};
/* With load_data 0 the file is still refused wherever loading it would be:
 * each tensor's local zip header is checked, and a compressed tensor is
 * decompressed and dropped. */
/*! mate_pt_read() : reads a .pt file with a restricted unpickler that never
 * executes anything. @return the value tree (caller frees) or NULL. */
MATE_API mate_value *mate_pt_read(const char *path,
    const struct mate_pt_read_options *opts, mate_error *err);

/*! mate_pickle_load() : the restricted unpickler on its own. Storages are
 * resolved through load_storage(key, dtype, numel, ctx), which returns a
 * new reference or NULL with err set; NULL load_storage makes empty
 * placeholders. */
typedef mate_storage *(*mate_storage_loader)(const char *key, mate_dtype dt,
    int64_t numel, void *ctx, mate_error *err);
MATE_API mate_value *mate_pickle_load(const void *buf, size_t len,
    mate_storage_loader load_storage, void *ctx, mate_error *err);

/* ---- safetensors --------------------------------------------------------- */
/*! mate_safetensors_write() : tensors is a dict of name -> tensor; metadata
 * a dict of str -> str or NULL. Canonical order, padding and JSON; views are
 * written as contiguous copies. Atomic like mate_pt_write(). */
MATE_API int mate_safetensors_write(const char *path, const mate_value *tensors,
    const mate_value *metadata, mate_error *err);
/*! mate_safetensors_read() : validates like the reference implementation
 * (and rejects duplicate names). @return a dict of name -> tensor in file
 * order; *metadata (if not NULL) gets the __metadata__ dict or NULL. */
MATE_API mate_value *mate_safetensors_read(const char *path, mate_value **metadata,
    mate_error *err);
/*! mate_safetensors_parse() : the same on a buffer holding a whole file;
 * tensors are copied out of buf. */
MATE_API mate_value *mate_safetensors_parse(const void *buf, size_t len,
    mate_value **metadata, mate_error *err);



#ifdef __cplusplus
}
#endif
#endif /* MATE_CORE_H_INCLUDED */
