/* fuzz_safetensors.c: libFuzzer target for the safetensors reader (mate_safetensors_parse). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mate_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mate_error err;
	mate_value *meta = NULL, *v;

	mate_error_clear(&err);
	mate_memory_cap_set(1 << 20);  /* reaches the header cap with small inputs */
	v = mate_safetensors_parse(data, size, &meta, &err);
	if (v == NULL && (err.code == 0 || err.message[0] == '\0'))
		__builtin_trap();  /* every failure must say why */
	for (size_t i = 0; i < mate_value_len(v); i++) {
		const mate_tensor *t = mate_value_get_tensor(mate_value_item(v, i));
		int64_t n = mate_tensor_nbytes(t);
		if (t == NULL || n < 0 || (size_t)n > mate_storage_size(mate_value_get_storage(mate_value_item(v, i))))
			__builtin_trap();
	}
	mate_value_free(v);
	mate_value_free(meta);
	return 0;
}
