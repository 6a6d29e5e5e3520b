/* fuzz_elf_cuda.c: libFuzzer target for the static CUDA runtime check on ELF files (mate_elf_cuda_runtime_buf). */
#include <stddef.h>
#include <stdint.h>

#include "mate_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mate_error err;
	int rc;

	mate_error_clear(&err);
	rc = mate_elf_cuda_runtime_buf(data, size, &err);
	if (rc > MATE_CUDART_STATIC || (rc < 0 && err.message[0] == '\0'))
		__builtin_trap();
	return 0;
}
