/* static-cudart-prog.c: stands in for a program built with nvcc's default static CUDA runtime: it defines the runtime's functions itself and uses the driver (libcuda.so.1). */
#include <stdio.h>
#include <stdlib.h>

int cuInit(unsigned flags);
int cudaMalloc(void **p, size_t size);
int cudaFree(void *p);
void **__cudaRegisterFatBinary(void *fatbin);

/* The "static runtime": not interposable by preloading. */
int
cudaMalloc(void **p, size_t size)
{
	return (*p = malloc(size)) != NULL ? 0 : 2;
}

int
cudaFree(void *p)
{
	free(p);
	return 0;
}

void **
__cudaRegisterFatBinary(void *fatbin)
{
	static void *h;
	(void)fatbin;
	return &h;
}

int
main(void)
{
	void *p;

	if (cuInit(0) != 0 || __cudaRegisterFatBinary(NULL) == NULL || cudaMalloc(&p, 100) != 0)
		return 1;
	cudaFree(p);
	puts("static ok");
	return 0;
}
