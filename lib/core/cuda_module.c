/* cuda_module.c: libmate's side of the CUDA module: mate-cuda.so, opened with dlopen() the first time a CUDA backend, kernel or allocator is asked for. */
#include "mate_private.h"
#include "alloc_replay_private.h"
#include "cuda_module.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Why a module: the CUDA runtime, cuBLAS and cuBLASLt are slow to load and
 * relocate (bench/README.md, "Start-up"), and every mate tool and every program mate-record
 * runs loads libmate. Linked into libmate, they cost that at every start,
 * listing included, and put a second CUDA runtime into recorded programs
 * that never touch a device tensor. As a module they load when a device is
 * first asked for (a replay on CUDA, a device tensor to log).
 *
 * Where: $MATE_CUDA_MODULE (a path), else beside libmate (mate/ or the same
 * folder: an install's libdir, or the build tree's .libs), else pkglibdir.
 */

#ifndef MATE_PKGLIBDIR
#define MATE_PKGLIBDIR "/usr/local/lib/mate"
#endif
#define MODULE_NAME "mate-cuda.so"

static const struct mate_cuda_host host = {
	.dtype_size = mate_dtype_size,
	.dtype_name = mate_dtype_name,
	.tensor_init = mate_tensor_init,
	.tensor_numel = mate_tensor_numel,
	.tensor_is_contiguous = mate_tensor_is_contiguous,
	.tensor_storage_extent = mate_tensor_storage_extent,
	.tensor_element = mate_tensor_element,
	.tensor_copy_contiguous = mate_tensor_copy_contiguous,
	.set_error = mate_set_error,
	.tensor_scatter = mate_tensor_scatter,
	.kernel_scalar = mate_kernel_scalar,
	.gemm_check = mate_gemm_check,
	.attn_params_init = mate_attn_params_init,
	.attn_keep_mask = mate_attn_keep_mask,
	.alibi_slope = mate_alibi_slope,
};

static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static const struct mate_cuda_module *module;
static char module_why[600];

/* Opens path: 1 with *out set, 0 when there is no such file, -1 when it is
 * there but unusable (module_why says why). */
static int
try_open(const char *path, const struct mate_cuda_module **out)
{
	const struct mate_cuda_module *(*entry)(const struct mate_cuda_host *);
	const struct mate_cuda_module *m;
	void *h;

	if (access(path, F_OK) != 0)
		return 0;
	/* lazy: a stand-in runtime (the tests' fake libcudart) need not have
	 * every function the kernels call */
	if ((h = dlopen(path, RTLD_LAZY | RTLD_LOCAL)) == NULL) {
		const char *e = dlerror();

		snprintf(module_why, sizeof(module_why), "%s", e != NULL ? e : path);
		return -1;
	}
	*(void **)&entry = dlsym(h, "mate_cuda_module");
	if (entry == NULL) {
		snprintf(module_why, sizeof(module_why), "%s is not a mate CUDA module", path);
		return -1;
	}
	m = entry(&host);
	if (m == NULL || m->abi != MATE_CUDA_MODULE_ABI || m->version == NULL ||
	    strcmp(m->version, PACKAGE_VERSION) != 0) {
		snprintf(module_why, sizeof(module_why), "%s is from mate %s, not %s", path,
		    m != NULL && m->abi == MATE_CUDA_MODULE_ABI && m->version ? m->version : "(another)",
		    PACKAGE_VERSION);
		return -1;  /* the handle stays open: it may have started threads */
	}
	*out = m;
	return 1;
}

static void
module_load(void)
{
	const char *env = getenv("MATE_CUDA_MODULE");
	char lib[4096], path[4200];
	static const char *const beside[] = { "/mate/", "/" };
	Dl_info info;

	if (env != NULL && env[0] != '\0') {
		if (try_open(env, &module) == 0)
			snprintf(module_why, sizeof(module_why), "MATE_CUDA_MODULE: no file %s", env);
		return;
	}
	if (dladdr((void *)mate_cuda_module_load, &info) != 0 && info.dli_fname != NULL &&
	    strlen(info.dli_fname) < sizeof(lib)) {
		char *slash;

		strcpy(lib, info.dli_fname);
		if ((slash = strrchr(lib, '/')) != NULL) {
			*slash = '\0';
			for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
				snprintf(path, sizeof(path), "%s%s%s", lib, beside[i], MODULE_NAME);
				if (try_open(path, &module) != 0)
					return;   /* loaded, or there and unusable (module_why) */
			}
		}
	}
	if (try_open(MATE_PKGLIBDIR "/" MODULE_NAME, &module) == 0)
		snprintf(module_why, sizeof(module_why), "no %s beside libmate nor in %s "
		    "(set MATE_CUDA_MODULE to its path)", MODULE_NAME, MATE_PKGLIBDIR);
}

const struct mate_cuda_module *
mate_cuda_module_load(mate_error *err)
{
	pthread_once(&module_once, module_load);
	if (module == NULL)
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "the CUDA module cannot be loaded: %s",
		    module_why);
	return module;
}

const mate_backend *
mate_backend_cuda(void)
{
	const struct mate_cuda_module *m = mate_cuda_module_load(NULL);

	return m != NULL ? m->backend : NULL;
}

const mate_kernels *
mate_kernels_cuda(void)
{
	const struct mate_cuda_module *m = mate_cuda_module_load(NULL);

	return m != NULL ? m->kernels : NULL;
}

const struct mate_allocator *
mate_alloc_replay_cuda(const char *name, mate_error *err)
{
	const struct mate_cuda_module *m = mate_cuda_module_load(err);

	if (m == NULL)
		return NULL;
	return strcmp(name, "cuda-async") == 0 ? m->allocator_async : m->allocator;
}
