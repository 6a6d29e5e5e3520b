/* cuda_module_other.c: a stand-in CUDA module from another mate version, which libmate must refuse (test_cuda_module.sh). */
#include "config.h"
#include "cuda_module.h"

#include <stdlib.h>

const struct mate_cuda_module *
mate_cuda_module(const struct mate_cuda_host *host)
{
	(void)host;
	static const struct mate_cuda_module other = {
		MATE_CUDA_MODULE_ABI, "0.0.0-other", NULL, NULL, NULL, NULL,
	};
	static const struct mate_cuda_module old_abi = {
		MATE_CUDA_MODULE_ABI + 1, PACKAGE_VERSION, NULL, NULL, NULL, NULL,
	};

	return getenv("MATE_TEST_MODULE_ABI") != NULL ? &old_abi : &other;
}
