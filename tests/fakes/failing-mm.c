/* failing-mm.c: a kernel table whose mm succeeds once and then fails (bench/replay-gemm's error path). */
#include "config.h"
#include "failing-mm.h"

#include "mate_private.h"

static int calls;

static int
failing_mm(const mate_tensor *a, const mate_tensor *b, const mate_tensor *out, mate_error *err)
{
	if (calls++ == 0)
		return mate_kernels_cpu()->mm(a, b, out, err);
	return mate_set_error(err, MATE_ERR_ARGUMENT, "mm: failing on purpose (call %d)", calls);
}

const mate_kernels *
failing_mm_kernels(void)
{
	static mate_kernels k;

	k.mm = failing_mm;
	return &k;
}
