/* interpose_cublas.c: the preload's cuBLAS entry points (cublasSgemm_v2, cublasGemmEx, cublasGemmStridedBatchedEx), recorded like BLAS calls with device operands copied on the call's stream. */
#include "interpose_private.h"
#include "blas_signatures.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
typedef void *cublasHandle_t;
typedef void *cudaStream_t;

enum { POINTER_MODE_DEVICE = 1 };

/* ---- types -------------------------------------------------------------------------------------- */

/* cudaDataType_t -> mate dtype (INVALID for what is not recorded). */
static mate_dtype
dtype_of(int t)
{
	switch (t) {
	case 0: return MATE_F32;          /* CUDA_R_32F */
	case 1: return MATE_F64;          /* CUDA_R_64F */
	case 2: return MATE_F16;          /* CUDA_R_16F */
	case 3: return MATE_I8;           /* CUDA_R_8I */
	case 8: return MATE_U8;           /* CUDA_R_8U */
	case 10: return MATE_I32;         /* CUDA_R_32I */
	case 14: return MATE_BF16;        /* CUDA_R_16BF */
	case 28: return MATE_F8_E4M3FN;   /* CUDA_R_8F_E4M3 */
	case 29: return MATE_F8_E5M2;     /* CUDA_R_8F_E5M2 */
	default: return MATE_DTYPE_INVALID;
	}
}

/* The type of alpha and beta for a compute type (cublasComputeType_t, or
 * the cudaDataType_t that CUDA 10 took there): 'h', 'f', 'd', 'i' or 0. */
static int
scalar_kind(int ct, const char **name)
{
	static const struct { int v; char k; const char *name; } ts[] = {
		{ 64, 'h', "CUBLAS_COMPUTE_16F" }, { 65, 'h', "CUBLAS_COMPUTE_16F_PEDANTIC" },
		{ 68, 'f', "CUBLAS_COMPUTE_32F" }, { 69, 'f', "CUBLAS_COMPUTE_32F_PEDANTIC" },
		{ 74, 'f', "CUBLAS_COMPUTE_32F_FAST_16F" }, { 75, 'f', "CUBLAS_COMPUTE_32F_FAST_16BF" },
		{ 77, 'f', "CUBLAS_COMPUTE_32F_FAST_TF32" }, { 70, 'd', "CUBLAS_COMPUTE_64F" },
		{ 71, 'd', "CUBLAS_COMPUTE_64F_PEDANTIC" }, { 72, 'i', "CUBLAS_COMPUTE_32I" },
		{ 73, 'i', "CUBLAS_COMPUTE_32I_PEDANTIC" }, { 0, 'f', "CUDA_R_32F" },
		{ 1, 'd', "CUDA_R_64F" }, { 2, 'h', "CUDA_R_16F" }, { 10, 'i', "CUDA_R_32I" },
	};

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		if (ts[i].v == ct) {
			*name = ts[i].name;
			return ts[i].k;
		}
	return 0;
}

static double
half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? m * 0x1p-24 : e == 31 ? (m ? __builtin_nan("") : __builtin_inf())
	    : (1024 + m) * 0x1p-25 * (double)(1u << e);

	return (h & 0x8000) ? -v : v;
}

/* ---- device access through the program's CUDA runtime (or the driver) -------------------------- */

struct dev {
	int (*memcpy_async)(void *, const void *, size_t, int, cudaStream_t);
	int (*sync)(cudaStream_t);
	int (*get_device)(int *);
	int (*cu_copy)(void *, uint64_t, size_t, cudaStream_t);   /* cuMemcpyDtoHAsync_v2 */
	int (*cu_sync)(cudaStream_t);
};

static int
dev_get(struct dev *d)
{
	static struct dev cache;
	static int done;

	if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		struct dev n;
		memset(&n, 0, sizeof(n));
		mate_ip_inside++;
		*(void **)&n.memcpy_async = mate_ip_lookup("cudaMemcpyAsync", (void *)cudaMemcpyAsync, NULL);
		if (n.memcpy_async != NULL) {
			*(void **)&n.sync = mate_ip_sibling((void *)n.memcpy_async, "cudaStreamSynchronize");
			*(void **)&n.get_device = mate_ip_sibling((void *)n.memcpy_async, "cudaGetDevice");
		}
		*(void **)&n.cu_copy = mate_ip_lookup("cuMemcpyDtoHAsync_v2", NULL, NULL);
		*(void **)&n.cu_sync = mate_ip_lookup("cuStreamSynchronize", NULL, NULL);
		mate_ip_inside--;
		cache = n;
		__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	}
	*d = cache;
	return (d->memcpy_async != NULL && d->sync != NULL) || (d->cu_copy != NULL && d->cu_sync != NULL);
}

/* Copies n bytes of device memory to dst on stream and waits for them. */
static int
dev_copy(void *dst, const void *src, size_t n, cudaStream_t stream)
{
	struct dev d;
	int rc = -1;

	if (n == 0)
		return 0;
	if (!dev_get(&d))
		return -1;
	mate_ip_inside++;
	if (d.memcpy_async != NULL && d.sync != NULL)
		rc = d.memcpy_async(dst, src, n, 2 /* DeviceToHost */, stream) == 0 &&
		    d.sync(stream) == 0 ? 0 : -1;
	else
		rc = d.cu_copy(dst, (uintptr_t)src, n, stream) == 0 && d.cu_sync(stream) == 0 ? 0 : -1;
	mate_ip_inside--;
	return rc;
}

static int
dev_index(void)
{
	struct dev d;
	int dev = 0;

	if (dev_get(&d) && d.get_device != NULL) {
		mate_ip_inside++;
		if (d.get_device(&dev) != 0)
			dev = 0;
		mate_ip_inside--;
	}
	return dev;
}

/* ---- one cuBLAS GEMM ------------------------------------------------------------------------------ */

struct gemm {
	const char *name;
	void *real;                /* the real entry point (to find its library) */
	cublasHandle_t handle;
	int transa, transb;
	int64_t m, n, k;
	const void *alpha, *beta;
	const void *a, *b;
	void *c;
	int atype, btype, ctype;   /* cudaDataType_t */
	int64_t lda, ldb, ldc;
	int64_t stride_a, stride_b, stride_c, batch;   /* batch 0: not batched */
	int compute;               /* cublasComputeType_t, or -1 (Sgemm) */
	int algo;
	/* filled in */
	cudaStream_t stream;
	mate_tensor t[3];
	void *host[3];             /* host copies (levels >= 5) */
	size_t bytes[3];
	double alpha_v, beta_v;
};

static size_t
elem_size(mate_dtype dt)
{
	switch (dt) {
	case MATE_F64: return 8;
	case MATE_F32: case MATE_I32: return 4;
	case MATE_F16: case MATE_BF16: return 2;
	default: return 1;
	}
}

static size_t
extent_bytes(const mate_tensor *t)
{
	int64_t e = 1;

	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] == 0)
			return 0;
		e += (t->shape[i] - 1) * t->stride[i];
	}
	return (size_t)e * elem_size(t->dtype);
}

/* Reads a scalar argument of the compute type, from the host or the device. */
static int
read_scalar(struct gemm *g, const void *p, int kind, int device_mode, double *out)
{
	unsigned char buf[8];
	size_t n = kind == 'h' ? 2 : kind == 'd' ? 8 : 4;

	if (p == NULL)
		return -1;
	if (device_mode) {
		if (dev_copy(buf, p, n, g->stream) != 0)
			return -1;
	} else
		memcpy(buf, p, n);
	switch (kind) {
	case 'h': { uint16_t h; memcpy(&h, buf, 2); *out = half_to_double(h); break; }
	case 'f': { float f; memcpy(&f, buf, 4); *out = f; break; }
	case 'd': memcpy(out, buf, 8); break;
	default: { int32_t i; memcpy(&i, buf, 4); *out = i; break; }
	}
	return 0;
}

/* The handle's stream and pointer mode, through the library that has the real entry point. */
static void
handle_state(struct gemm *g, int *device_mode)
{
	typedef cublasStatus_t (*getstream_fn)(cublasHandle_t, cudaStream_t *);
	typedef cublasStatus_t (*getmode_fn)(cublasHandle_t, int *);
	getstream_fn gs = (getstream_fn)mate_ip_sibling(g->real, "cublasGetStream_v2");
	getmode_fn gm = (getmode_fn)mate_ip_sibling(g->real, "cublasGetPointerMode_v2");
	int mode = 0;

	g->stream = NULL;
	if (gs != NULL && gs(g->handle, &g->stream) != 0)
		g->stream = NULL;
	if (gm != NULL && gm(g->handle, &mode) != 0)
		mode = 0;
	*device_mode = mode == POINTER_MODE_DEVICE;
}

/* The operands as tensors; at levels >= 5 as host copies made on the
 * call's stream (the recorder then reads plain host memory). */
static int
operands(struct gemm *g, int level)
{
	const void *data[3] = { g->a, g->b, g->c };
	const int types[3] = { g->atype, g->btype, g->ctype };
	const int64_t ld[3] = { g->lda, g->ldb, g->ldc }, bs[3] = { g->stride_a, g->stride_b, g->stride_c };
	const int64_t rows[3] = { g->transa ? g->k : g->m, g->transb ? g->n : g->k, g->m };
	const int64_t cols[3] = { g->transa ? g->m : g->k, g->transb ? g->k : g->n, g->n };
	int dev = dev_index();

	for (int i = 0; i < 3; i++) {
		mate_dtype dt = dtype_of(types[i]);
		if (dt == MATE_DTYPE_INVALID)
			return -1;
		mate_ip_matrix(&g->t[i], dt, 1, rows[i], cols[i], ld[i], g->batch, bs[i], data[i]);
		g->t[i].device_type = MATE_DEVICE_CUDA;
		g->t[i].device_index = dev;
		g->t[i].stream = g->stream;
		if (level < 5)
			continue;
		g->bytes[i] = extent_bytes(&g->t[i]);
		if ((g->host[i] = malloc(g->bytes[i] ? g->bytes[i] : 1)) == NULL ||
		    dev_copy(g->host[i], data[i], g->bytes[i], g->stream) != 0) {
			mate_warn("cannot copy a cuBLAS operand to the host; %s is recorded "
			    "without data", g->name);
			return -1;
		}
		g->t[i].data = g->host[i];
		g->t[i].device_type = MATE_DEVICE_CPU;
		g->t[i].device_index = 0;
		g->t[i].stream = NULL;
	}
	return 0;
}

static void
free_host(struct gemm *g)
{
	for (int i = 0; i < 3; i++) {
		free(g->host[i]);
		g->host[i] = NULL;
	}
}

static void
handle_arg(mate_call *c, cublasHandle_t h)
{
	char repr[48];

	if (mate_ip_api.value_object != NULL && mate_ip_api.call_value != NULL) {
		snprintf(repr, sizeof(repr), "<cublasHandle_t 0x%" PRIxPTR ">", (uintptr_t)h);
		mate_ip_api.call_value(c, MATE_ARG, "handle", mate_ip_api.value_object("cublasHandle_t", repr));
	} else
		mate_ip_api.call_int(c, MATE_ARG, "handle", (int64_t)(uintptr_t)h);
}

static const char *
op_name(int op)
{
	return op == 0 ? "cublasOperation_t.CUBLAS_OP_N" : op == 1 ? "cublasOperation_t.CUBLAS_OP_T"
	    : op == 2 ? "cublasOperation_t.CUBLAS_OP_C" : "cublasOperation_t.CUBLAS_OP_CONJG";
}

/* The arguments, in the order of the C signature, named as it names them. */
static void
add_args(struct gemm *g, mate_call *c, const char *ctname)
{
	const struct ip_api *api = &mate_ip_api;
	int ex = g->compute >= 0, bat = g->batch > 0;

	handle_arg(c, g->handle);
	api->call_enum(c, MATE_ARG, "transa", op_name(g->transa), g->transa);
	api->call_enum(c, MATE_ARG, "transb", op_name(g->transb), g->transb);
	api->call_int(c, MATE_ARG, "m", g->m);
	api->call_int(c, MATE_ARG, "n", g->n);
	api->call_int(c, MATE_ARG, "k", g->k);
	api->call_float(c, MATE_ARG, "alpha", g->alpha_v);
	for (int i = 0; i < 2; i++) {
		api->call_tensor(c, MATE_ARG, i == 0 ? "A" : "B", &g->t[i]);
		if (ex)
			api->call_dtype(c, MATE_ARG, i == 0 ? "Atype" : "Btype", g->t[i].dtype);
		api->call_int(c, MATE_ARG, i == 0 ? "lda" : "ldb", i == 0 ? g->lda : g->ldb);
		if (bat)
			api->call_int(c, MATE_ARG, i == 0 ? "strideA" : "strideB",
			    i == 0 ? g->stride_a : g->stride_b);
	}
	api->call_float(c, MATE_ARG, "beta", g->beta_v);
	api->call_tensor(c, MATE_ARG | MATE_INPLACE, "C", &g->t[2]);
	if (ex)
		api->call_dtype(c, MATE_ARG, "Ctype", g->t[2].dtype);
	api->call_int(c, MATE_ARG, "ldc", g->ldc);
	if (bat) {
		api->call_int(c, MATE_ARG, "strideC", g->stride_c);
		api->call_int(c, MATE_ARG, "batchCount", g->batch);
	}
	if (ex) {
		char en[80];
		snprintf(en, sizeof(en), "cublasComputeType_t.%s", ctname);
		api->call_enum(c, MATE_ARG, "computeType", en, g->compute);
		api->call_int(c, MATE_ARG, "algo", g->algo);
	}
}

static const char sig_sgemm[] = MATE_SIG_CUBLAS_SGEMM;
static const char sig_ex[] = MATE_SIG_CUBLAS_GEMMEX;
static const char sig_batched[] = MATE_SIG_CUBLAS_BATCHED;

/* Begins recording g; ic->c stays NULL when it is not recorded. */
static void
gemm_begin(struct ip_call *ic, struct gemm *g)
{
	const char *ctname = "CUBLAS_COMPUTE_32F";
	int kind = g->compute < 0 ? 'f' : scalar_kind(g->compute, &ctname), device_mode = 0;
	int level = mate_ip_args_level;

	ic->c = NULL;
	ic->lib = "cublas";
	ic->name = g->name;
	if (g->transa < 0 || g->transa > 2 || g->transb < 0 || g->transb > 2 || kind == 0 ||
	    g->batch < 0 || !mate_ip_gemm_valid(1, g->transa != 0, g->transb != 0, g->m, g->n,
	    g->k, g->lda, g->ldb, g->ldc))
		return;
	if (level >= 3) {
		mate_ip_inside++;
		handle_state(g, &device_mode);
		if (read_scalar(g, g->alpha, kind, device_mode, &g->alpha_v) != 0 ||
		    read_scalar(g, g->beta, kind, device_mode, &g->beta_v) != 0 ||
		    operands(g, level) != 0) {
			free_host(g);
			level = 1;
		}
		mate_ip_inside--;
	}
	mate_ip_call_begin(ic, "cublas", g->name, g->batch > 0 ? sig_batched :
	    g->compute >= 0 ? sig_ex : sig_sgemm);
	if (ic->c == NULL || level < 3)
		return;
	mate_ip_args_begin();
	add_args(g, ic->c, ctname);
	mate_ip_args_end();
}

/* Runs the real call between the recorder's two halves. */
static cublasStatus_t
gemm_finish(struct ip_call *ic, struct gemm *g, cublasStatus_t st)
{
	char msg[96];

	mate_ip_call_ran(ic);
	if (st == 0 && ic->c != NULL && g->host[2] != NULL &&
	    dev_copy(g->host[2], g->c, g->bytes[2], g->stream) != 0)
		mate_warn("cannot copy the result of %s to the host", g->name);
	snprintf(msg, sizeof(msg), "%s returned cublasStatus %d", g->name, st);
	mate_ip_call_end(ic, st == 0 ? NULL : msg);
	free_host(g);
	return st;
}

/* ---- the entry points --------------------------------------------------------------------------- */

typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, int, int, int, int, int, const float *,
    const float *, int, const float *, int, const float *, float *, int);
typedef cublasStatus_t (*gemmex_fn)(cublasHandle_t, int, int, int, int, int, const void *,
    const void *, int, int, const void *, int, int, const void *, void *, int, int, int, int);
typedef cublasStatus_t (*batched_fn)(cublasHandle_t, int, int, int, int, int, const void *,
    const void *, int, int, long long, const void *, int, int, long long, const void *, void *,
    int, int, long long, int, int, int);

IP_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
    float *c, int ldc);
IP_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const void *alpha, const void *a, int at, int lda, const void *b, int bt, int ldb,
    const void *beta, void *c, int ct, int ldc, int compute, int algo);
IP_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m,
    int n, int k, const void *alpha, const void *a, int at, int lda, long long sa, const void *b,
    int bt, int ldb, long long sb, const void *beta, void *c, int ct, int ldc, long long sc,
    int batch, int compute, int algo);

IP_EXPORT cublasStatus_t
cublasSgemm_v2(cublasHandle_t h, int ta, int tb, int m, int n, int k, const float *alpha,
    const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc)
{
	static void *real;
	sgemm_fn fn = (sgemm_fn)mate_ip_real(&real, "cublasSgemm_v2", (void *)cublasSgemm_v2,
	    __builtin_return_address(0));
	struct gemm g;
	struct ip_call ic;

	if (IP_UNLIKELY(fn == NULL))
		return 7;  /* CUBLAS_STATUS_INVALID_VALUE */
	if (IP_LIKELY(!mate_ip_recording()))
		return fn(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	g = (struct gemm){ .name = "cublasSgemm_v2", .real = (void *)fn, .handle = h,
		.transa = ta, .transb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
		.a = a, .b = b, .c = c, .atype = 0, .btype = 0, .ctype = 0, .lda = lda, .ldb = ldb,
		.ldc = ldc, .compute = -1 };
	gemm_begin(&ic, &g);
	mate_ip_call_ready(&ic);
	mate_ip_call_run(&ic);
	return gemm_finish(&ic, &g, fn(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

IP_EXPORT cublasStatus_t
cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int at, int lda, const void *b, int bt, int ldb, const void *beta, void *c,
    int ct, int ldc, int compute, int algo)
{
	static void *real;
	gemmex_fn fn = (gemmex_fn)mate_ip_real(&real, "cublasGemmEx", (void *)cublasGemmEx,
	    __builtin_return_address(0));
	struct gemm g;
	struct ip_call ic;

	if (IP_UNLIKELY(fn == NULL))
		return 7;
	if (IP_LIKELY(!mate_ip_recording()))
		return fn(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc,
		    compute, algo);
	g = (struct gemm){ .name = "cublasGemmEx", .real = (void *)fn, .handle = h, .transa = ta,
		.transb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta, .a = a, .b = b,
		.c = c, .atype = at, .btype = bt, .ctype = ct, .lda = lda, .ldb = ldb, .ldc = ldc,
		.compute = compute, .algo = algo };
	gemm_begin(&ic, &g);
	mate_ip_call_ready(&ic);
	mate_ip_call_run(&ic);
	return gemm_finish(&ic, &g, fn(h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c,
	    ct, ldc, compute, algo));
}

IP_EXPORT cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m, int n, int k,
    const void *alpha, const void *a, int at, int lda, long long sa, const void *b, int bt,
    int ldb, long long sb, const void *beta, void *c, int ct, int ldc, long long sc, int batch,
    int compute, int algo)
{
	static void *real;
	batched_fn fn = (batched_fn)mate_ip_real(&real, "cublasGemmStridedBatchedEx",
	    (void *)cublasGemmStridedBatchedEx, __builtin_return_address(0));
	struct gemm g;
	struct ip_call ic;

	if (IP_UNLIKELY(fn == NULL))
		return 7;
	if (IP_LIKELY(!mate_ip_recording()))
		return fn(h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct,
		    ldc, sc, batch, compute, algo);
	g = (struct gemm){ .name = "cublasGemmStridedBatchedEx", .real = (void *)fn, .handle = h,
		.transa = ta, .transb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
		.a = a, .b = b, .c = c, .atype = at, .btype = bt, .ctype = ct, .lda = lda,
		.ldb = ldb, .ldc = ldc, .stride_a = sa, .stride_b = sb, .stride_c = sc,
		.batch = batch, .compute = compute, .algo = algo };
	if (sa < 0 || sb < 0 || sc < 0 || batch <= 0)
		g.batch = -1;   /* not recorded */
	gemm_begin(&ic, &g);
	mate_ip_call_ready(&ic);
	mate_ip_call_run(&ic);
	return gemm_finish(&ic, &g, fn(h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb,
	    beta, c, ct, ldc, sc, batch, compute, algo));
}
