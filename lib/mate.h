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

#ifdef __cplusplus
}
#endif
#endif /* MATE_H_INCLUDED */
