/* cuda_driver.c: a test-only libcuda.so.1 (the CUDA driver's soname) with one entry point, for the static-runtime detection test. */
int cuInit(unsigned flags);

int
cuInit(unsigned flags)
{
	return flags == 0 ? 0 : 1;
}
