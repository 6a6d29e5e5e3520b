/* cuda_host.h: the module's calls into libmate, routed through the table libmate gives mate_cuda_module() (include it after the headers that declare them). */
#ifndef MATE_CUDA_HOST_H_INCLUDED
#define MATE_CUDA_HOST_H_INCLUDED

#include "mate_private.h"
#include "kernels.h"
#include "cuda_module.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Set by mate_cuda_module() (cuda_module_entry.c) before libmate calls
 * anything else of the module. */
extern const struct mate_cuda_host *mate_cuda_host_;
#ifdef __cplusplus
}
#endif

#define mate_dtype_size (mate_cuda_host_->dtype_size)
#define mate_dtype_name (mate_cuda_host_->dtype_name)
#define mate_tensor_init (mate_cuda_host_->tensor_init)
#define mate_tensor_numel (mate_cuda_host_->tensor_numel)
#define mate_tensor_is_contiguous (mate_cuda_host_->tensor_is_contiguous)
#define mate_tensor_storage_extent (mate_cuda_host_->tensor_storage_extent)
#define mate_tensor_element (mate_cuda_host_->tensor_element)
#define mate_tensor_copy_contiguous (mate_cuda_host_->tensor_copy_contiguous)
#define mate_set_error (mate_cuda_host_->set_error)
#define mate_tensor_scatter (mate_cuda_host_->tensor_scatter)
#define mate_kernel_scalar (mate_cuda_host_->kernel_scalar)
#define mate_gemm_check (mate_cuda_host_->gemm_check)
#define mate_attn_params_init (mate_cuda_host_->attn_params_init)
#define mate_attn_keep_mask (mate_cuda_host_->attn_keep_mask)
#define mate_alibi_slope (mate_cuda_host_->alibi_slope)

#endif /* MATE_CUDA_HOST_H_INCLUDED */
