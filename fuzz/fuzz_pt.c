/* fuzz_pt.c: libFuzzer target for the .pt reader on a memory image (mate_pt_read_memory). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "mate_core.h"
#include "mate_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	return 0;
}
