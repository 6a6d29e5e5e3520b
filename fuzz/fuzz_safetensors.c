/* fuzz_safetensors.c: libFuzzer target for the safetensors reader (mate_safetensors_parse), and its streaming form (mate_safetensors_read_stream) on a memfd. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mate_core.h"
#include "mate_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each chunk within its tensor's storage, in order, at most MATE_STREAM_CHUNK bytes. */
static int
chunk(void *ctx, const mate_storage *st, uint64_t off, const void *p, size_t n, mate_error *err)
{
	volatile unsigned char sink = 0;

	(void)ctx;
	(void)err;
	if (n == 0 || n > MATE_STREAM_CHUNK || off % MATE_STREAM_CHUNK != 0 ||
	    off + n > mate_storage_size(st))
		__builtin_trap();
	sink ^= ((const unsigned char *)p)[0] ^ ((const unsigned char *)p)[n - 1];
	return 0;
}

static void
stream(const uint8_t *data, size_t size)
{
	struct mate_tensor_stream s = { NULL, chunk, NULL };
	mate_error err;
	int fd = memfd_create("fuzz_safetensors", 0);

	if (fd < 0)
		return;
	if (size > 0 && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	if (mate_safetensors_read_stream(fd, "<memfd>", &s, &err) != MATE_OK &&
	    err.message[0] == '\0')
		__builtin_trap();  /* every failure says why */
}

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
	stream(data, size);
	return 0;
}
