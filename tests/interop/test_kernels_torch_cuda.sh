#!/bin/sh
# test_kernels_torch_cuda.sh: runs the torch comparison on the CUDA kernels (exits 77 without a GPU).
MATE_KERNEL_DEVICE=cuda
export MATE_KERNEL_DEVICE
exec sh "$top_srcdir/tests/run-python.sh" "$top_srcdir/tests/interop/test_kernels_torch.py"
