/* interpose_cuda.c: the preload's CUDA runtime entry points: the alloc/free family feeds the memory log (and the live MEM events), cudaMemcpy* become transfer events, cudaLaunchKernel gives kernel names. */
#include "interpose_private.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA runtime's types, as the ABI passes them (no CUDA headers needed). */
typedef int cudaError_t;
typedef void *cudaStream_t;
struct ip_dim3 {
	unsigned x, y, z;
};

static const char *const kind_names[] = {
	"cudaMemcpyKind.cudaMemcpyHostToHost", "cudaMemcpyKind.cudaMemcpyHostToDevice",
	"cudaMemcpyKind.cudaMemcpyDeviceToHost", "cudaMemcpyKind.cudaMemcpyDeviceToDevice",
	"cudaMemcpyKind.cudaMemcpyDefault",
};

/* ---- memory events ------------------------------------------------------------------------- */

/* > 0 inside an allocation function: a runtime that implements one with
 * another (cudaMallocAsync with cudaMalloc) logs one event, not two. */
static __thread int alloc_depth IP_TLS;

/* Names this thread's next memory event for the live events: the function
 * and its device, "host" for pinned host memory, else the current device
 * (cudaGetDevice when the runtime has it). Nothing when events are off. */
static void
event_source(const char *name, int host, void *fn)
{
	typedef cudaError_t (*getdev_fn)(int *);
	static __thread char dev[16] IP_TLS;
	static void *getdev;
	int d = 0;

	if (mate_ip_api.memory_source == NULL || !mate_ip_api.memory_source(NULL, NULL))
		return;
	if (!host) {
		void *g = __atomic_load_n(&getdev, __ATOMIC_RELAXED);
		if (g == NULL) {
			g = mate_ip_sibling(fn, "cudaGetDevice");
			__atomic_store_n(&getdev, g != NULL ? g : (void *)-1, __ATOMIC_RELAXED);
		}
		if (g != NULL && g != (void *)-1 && ((getdev_fn)g)(&d) != 0)
			d = 0;
	}
	snprintf(dev, sizeof(dev), host ? "host" : "cuda:%d", d);
	mate_ip_api.memory_source(dev, name);
}

static void
allocated(cudaError_t rc, void **p, size_t size, cudaStream_t stream, const char *name,
    int host, void *fn)
{
	if (!mate_ip_tracking())
		return;
	if (rc == 0 && p != NULL && *p != NULL) {
		event_source(name, host, fn);
		mate_ip_api.memlog_allocate(mate_ip_memlog, (uintptr_t)*p, size, (uintptr_t)stream);
		IP_COUNT(allocations, 1);
		mate_ip_note_peak();
	} else if (rc != 0) {
		event_source(name, host, fn);
		mate_ip_api.memlog_failure(mate_ip_memlog, size, (uintptr_t)stream);
	}
}

/* Logged before the memory is given back, so that no other thread's new
 * allocation at the same address can come first in the log. */
static void
freeing(void *p, cudaStream_t stream, const char *name, int host, void *fn)
{
	if (p == NULL || !mate_ip_tracking())
		return;
	event_source(name, host, fn);
	if (mate_ip_api.memlog_deallocate(mate_ip_memlog, (uintptr_t)p, (uintptr_t)stream) < 0 &&
	    mate_ip_api.memory_source != NULL)
		mate_ip_api.memory_source(NULL, NULL);  /* not ours: no event */
}

/* Declares and defines the exported entry point name params, whose real
 * function has the type name_fn; its body follows in braces. */
#define ENTRY(name, params) \
	typedef cudaError_t (*name##_fn) params; \
	IP_EXPORT cudaError_t name params; \
	IP_EXPORT cudaError_t name params

/* The real function of the entry point name, as fn. */
#define REAL(name) \
	static void *real_; \
	name##_fn fn = (name##_fn)mate_ip_real(&real_, #name, (void *)name, \
	    __builtin_return_address(0)); \
	if (IP_UNLIKELY(fn == NULL)) \
		return 1 /* cudaErrorInvalidValue */

/* A function of the alloc/free family: straight to fn while nothing is
 * wanted, else with before and after (statements, rc the result) around it. */
#define MEMORY_FN(name, params, args, before, after) \
	ENTRY(name, params) \
	{ \
		cudaError_t rc; \
		REAL(name); \
		if (IP_LIKELY(!mate_ip_want)) \
			return fn args; \
		before; \
		alloc_depth++; \
		rc = fn args; \
		alloc_depth--; \
		after; \
		return rc; \
	}

/* An allocation function: f(void **p, size_t size, EXTRA), logged on stream
 * (host: pinned host memory). */
#define ALLOC_FN(name, params, args, size_expr, stream_expr, host) \
	MEMORY_FN(name, params, args, , if (alloc_depth == 0) \
	    allocated(rc, p, (size_expr), (stream_expr), #name, (host), (void *)fn))

#define FREE_FN(name, params, args, stream_expr, host) \
	MEMORY_FN(name, params, args, if (alloc_depth == 0) \
	    freeing(p, (stream_expr), #name, (host), (void *)fn), )

ALLOC_FN(cudaMalloc, (void **p, size_t size), (p, size), size, NULL, 0)
ALLOC_FN(cudaMallocManaged, (void **p, size_t size, unsigned flags), (p, size, flags), size, NULL,
    0)
ALLOC_FN(cudaMallocHost, (void **p, size_t size), (p, size), size, NULL, 1)
ALLOC_FN(cudaHostAlloc, (void **p, size_t size, unsigned flags), (p, size, flags), size, NULL, 1)
ALLOC_FN(cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), size, s, 0)
ALLOC_FN(cudaMallocAsync_ptsz, (void **p, size_t size, cudaStream_t s), (p, size, s), size, s,
    0)
ALLOC_FN(cudaMallocPitch, (void **p, size_t *pitch, size_t width, size_t height),
    (p, pitch, width, height), (rc == 0 && pitch ? *pitch * height : width * height), NULL, 0)
FREE_FN(cudaFree, (void *p), (p), NULL, 0)
FREE_FN(cudaFreeHost, (void *p), (p), NULL, 1)
FREE_FN(cudaFreeAsync, (void *p, cudaStream_t s), (p, s), s, 0)
FREE_FN(cudaFreeAsync_ptsz, (void *p, cudaStream_t s), (p, s), s, 0)

/* ---- transfers ------------------------------------------------------------------------------ */

/* A pointer argument as an object with its address. */
static void
pointer_arg(mate_call *c, const char *name, const void *p)
{
	char repr[32];

	if (mate_ip_api.value_object != NULL && mate_ip_api.call_value != NULL) {
		snprintf(repr, sizeof(repr), "0x%" PRIxPTR, (uintptr_t)p);
		mate_ip_api.call_value(c, MATE_KWARG, name, mate_ip_api.value_object("void*", repr));
	} else {
		mate_ip_api.call_int(c, MATE_KWARG, name, (int64_t)(uintptr_t)p);
	}
}

/* Copies and launches are API calls at levels 1 to 5; at level 10 they are
 * only counted, so that the dump limits go to the calls that replay. */
static int
event_level(void)
{
	return mate_ip_level > 0 && mate_ip_level < 10;
}

static void
transfer_begin(struct ip_call *ic, const char *name, void *dst, const void *src, size_t bytes,
    int kind, cudaStream_t stream)
{
	const struct ip_api *api = &mate_ip_api;

	IP_COUNT(transfers, 1);
	IP_COUNT(transfer_bytes, bytes);
	ic->c = NULL;
	ic->lib = "cudart";
	ic->name = name;
	if (!event_level())
		return;
	mate_ip_call_begin(ic, "cudart", name, "(dst, src, count, kind, stream)");
	if (ic->c == NULL || ic->level < 3)
		return;
	mate_ip_args_begin();
	pointer_arg(ic->c, "dst", dst);
	pointer_arg(ic->c, "src", src);
	api->call_int(ic->c, MATE_KWARG, "count", (int64_t)bytes);
	if (kind >= 0 && kind <= 4)
		api->call_enum(ic->c, MATE_KWARG, "kind", kind_names[kind], kind);
	else
		api->call_int(ic->c, MATE_KWARG, "kind", kind);
	pointer_arg(ic->c, "stream", stream);
	mate_ip_args_end();
}

static void
call_finish(struct ip_call *ic, cudaError_t rc)
{
	char msg[64];

	mate_ip_call_ran(ic);
	snprintf(msg, sizeof(msg), "%s returned cudaError %d", ic->name, rc);
	mate_ip_call_end(ic, rc == 0 ? NULL : msg);
}

/* An entry point recorded as an API call: straight to fn when nothing is
 * recorded, else begin (a statement filling ic) starts the record. */
#define RECORDED_FN(name, params, args, begin) \
	ENTRY(name, params) \
	{ \
		struct ip_call ic; \
		cudaError_t rc; \
		REAL(name); \
		if (IP_LIKELY(!mate_ip_recording())) \
			return fn args; \
		begin; \
		mate_ip_call_ready(&ic); \
		mate_ip_call_run(&ic); \
		rc = fn args; \
		call_finish(&ic, rc); \
		return rc; \
	}

/* A copy function with its byte count and kind. */
#define COPY_FN(name, params, args, bytes_expr, dst_expr, src_expr, kind_expr, stream_expr) \
	RECORDED_FN(name, params, args, transfer_begin(&ic, #name, (dst_expr), (src_expr), \
	    (bytes_expr), (kind_expr), (stream_expr)))

COPY_FN(cudaMemcpy, (void *dst, const void *src, size_t n, int kind), (dst, src, n, kind),
    n, dst, src, kind, NULL)
COPY_FN(cudaMemcpy_ptds, (void *dst, const void *src, size_t n, int kind), (dst, src, n, kind),
    n, dst, src, kind, NULL)
COPY_FN(cudaMemcpyAsync, (void *dst, const void *src, size_t n, int kind, cudaStream_t s),
    (dst, src, n, kind, s), n, dst, src, kind, s)
COPY_FN(cudaMemcpyAsync_ptsz, (void *dst, const void *src, size_t n, int kind, cudaStream_t s),
    (dst, src, n, kind, s), n, dst, src, kind, s)
COPY_FN(cudaMemcpy2D, (void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
    int kind), (dst, dp, src, sp, w, h, kind), w * h, dst, src, kind, NULL)
COPY_FN(cudaMemcpy2D_ptds, (void *dst, size_t dp, const void *src, size_t sp, size_t w,
    size_t h, int kind), (dst, dp, src, sp, w, h, kind), w * h, dst, src, kind, NULL)
COPY_FN(cudaMemcpy2DAsync, (void *dst, size_t dp, const void *src, size_t sp, size_t w,
    size_t h, int kind, cudaStream_t s), (dst, dp, src, sp, w, h, kind, s), w * h, dst, src,
    kind, s)
COPY_FN(cudaMemcpy2DAsync_ptsz, (void *dst, size_t dp, const void *src, size_t sp, size_t w,
    size_t h, int kind, cudaStream_t s), (dst, dp, src, sp, w, h, kind, s), w * h, dst, src,
    kind, s)
COPY_FN(cudaMemcpyPeer, (void *dst, int dd, const void *src, int sd, size_t n),
    (dst, dd, src, sd, n), n, dst, src, 3, NULL)
COPY_FN(cudaMemcpyPeerAsync, (void *dst, int dd, const void *src, int sd, size_t n,
    cudaStream_t s), (dst, dd, src, sd, n, s), n, dst, src, 3, s)
COPY_FN(cudaMemcpyToSymbol, (const void *sym, const void *src, size_t n, size_t off, int kind),
    (sym, src, n, off, kind), n, (void *)(uintptr_t)sym, src, kind, NULL)
COPY_FN(cudaMemcpyFromSymbol, (void *dst, const void *sym, size_t n, size_t off, int kind),
    (dst, sym, n, off, kind), n, dst, sym, kind, NULL)

/* ---- kernel launches ---------------------------------------------------------------------------- */

#define NAME_CACHE 256

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const void *func;
	char *name;
} names[NAME_CACHE];

/* The kernel's name: cudaFuncGetName (CUDA 12.3+), else the host stub's
 * symbol, demangled when libstdc++ is loaded, else its address. */
static char *
kernel_name_uncached(const void *func, void *launch_fn)
{
	typedef cudaError_t (*getname_fn)(const char **, const void *);
	typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
	getname_fn getname = (getname_fn)mate_ip_sibling(launch_fn, "cudaFuncGetName");
	demangle_fn demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	const char *raw = NULL;
	char *out = NULL, buf[40];
	Dl_info info;
	int status = -1;

	if (getname != NULL && getname(&raw, func) != 0)
		raw = NULL;
	if (raw == NULL && dladdr(func, &info) != 0 && info.dli_saddr == func)
		raw = info.dli_sname;
	if (raw != NULL && demangle != NULL && raw[0] == '_' && raw[1] == 'Z')
		out = demangle(raw, NULL, NULL, &status);
	if (out != NULL && status == 0)
		return out;
	free(out);
	if (raw == NULL) {
		snprintf(buf, sizeof(buf), "kernel@0x%" PRIxPTR, (uintptr_t)func);
		raw = buf;
	}
	return strdup(raw);
}

static const char *
kernel_name(const void *func, void *launch_fn)
{
	size_t i = ((uintptr_t)func >> 4) % NAME_CACHE;
	const char *name;

	pthread_mutex_lock(&names_lock);
	if (names[i].func != func || names[i].name == NULL) {
		char *n = kernel_name_uncached(func, launch_fn);
		if (n != NULL) {
			free(names[i].name);
			names[i].func = func;
			names[i].name = n;
		}
	}
	name = names[i].func == func && names[i].name ? names[i].name : "cudaLaunchKernel";
	pthread_mutex_unlock(&names_lock);
	return name;
}

static struct mate_value *
dim3_value(struct ip_dim3 d)
{
	const struct ip_api *api = &mate_ip_api;
	struct mate_value *t = api->value_tuple();

	if (t != NULL) {
		api->value_append(t, api->value_int(d.x));
		api->value_append(t, api->value_int(d.y));
		api->value_append(t, api->value_int(d.z));
	}
	return t;
}

/* A launch is recorded under the kernel's name (module "cuda_kernel"). The
 * name is copied by the recorder, so the cache may change afterwards. */
static void
launch_begin(struct ip_call *ic, const void *func, struct ip_dim3 grid, struct ip_dim3 block,
    size_t shmem, cudaStream_t stream, void *launch_fn)
{
	const struct ip_api *api = &mate_ip_api;
	char name[512];

	IP_COUNT(launches, 1);
	ic->c = NULL;
	ic->lib = "cuda_kernel";
	ic->name = "cudaLaunchKernel";
	if (!event_level())
		return;
	mate_ip_args_begin();
	snprintf(name, sizeof(name), "%s", kernel_name(func, launch_fn));
	mate_ip_args_end();
	mate_ip_call_begin(ic, "cuda_kernel", name, "(gridDim, blockDim, sharedMem, stream)");
	ic->name = "cudaLaunchKernel";
	if (ic->c == NULL || ic->level < 3)
		return;
	mate_ip_args_begin();
	if (api->value_tuple != NULL && api->value_int != NULL && api->value_append != NULL &&
	    api->call_value != NULL) {
		api->call_value(ic->c, MATE_KWARG, "gridDim", dim3_value(grid));
		api->call_value(ic->c, MATE_KWARG, "blockDim", dim3_value(block));
	}
	api->call_int(ic->c, MATE_KWARG, "sharedMem", (int64_t)shmem);
	pointer_arg(ic->c, "stream", stream);
	mate_ip_args_end();
}

#define LAUNCH_FN(name) \
	RECORDED_FN(name, (const void *func, struct ip_dim3 grid, struct ip_dim3 block, \
	    void **args, size_t shmem, cudaStream_t stream), \
	    (func, grid, block, args, shmem, stream), \
	    launch_begin(&ic, func, grid, block, shmem, stream, (void *)fn))

LAUNCH_FN(cudaLaunchKernel)
LAUNCH_FN(cudaLaunchKernel_ptsz)
