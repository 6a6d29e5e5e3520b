/* fuzz_pickle.c: libFuzzer target for the restricted unpickler (mate_pickle_load). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "mate_core.h"

/* Hands out small zeroed storages, as a .pt reader would after its checks. */
static mate_storage *
loader(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	size_t n = (size_t)numel * mate_dtype_size(dt);

	if (n > (1u << 20))
		return mate_storage_wrap(NULL, n, err);
	return mate_storage_new(n, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mate_error err;
	mate_value *v;

	/* The first byte picks the loader: real storages or placeholders. */
	if (size == 0)
		return 0;
	mate_memory_cap_set(64 << 20);  /* fails sooner than the fuzzer's RSS limit */
	v = mate_pickle_load(data + 1, size - 1, (data[0] & 1) ? loader : NULL, NULL, &err);
	mate_value_free(v);
	return 0;
}
