/* fuzz_pt.c: libFuzzer target for the .pt reader on a memory image (mate_pt_read_memory), and its streaming form (mate_pt_read_stream) on a memfd. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mate_core.h"
#include "mate_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each chunk within its storage, in order, at most MATE_STREAM_CHUNK bytes. */
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
	int fd = memfd_create("fuzz_pt", 0);

	if (fd < 0)
		return;
	if (size > 0 && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	if (mate_pt_read_stream(fd, "<memfd>", &s, &err) != MATE_OK && err.message[0] == '\0')
		__builtin_trap();  /* every failure says why */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mate_pt_read_options opts = { 1 << 20, 10000, 1 };
	mate_error err;
	mate_value *v = mate_pt_read_memory(data, size, &opts, &err);

	mate_value_free(v);
	opts.load_data = 0;
	v = mate_pt_read_memory(data, size, &opts, &err);
	mate_value_free(v);
	stream(data, size);
	return 0;
}
