/* benchlog-calls.c: calls whose command-line form needs care, recorded through libmate for
 * tests/cli/test_bench_log.py: names and strings to quote, strides that are not row-major, a
 * CUDA device, a 0-d tensor, size-0 and size-1 dimensions, and every kind of scalar; with
 * the argument "newline", one more call whose name holds a newline. No tensor is read at
 * levels below 5: the tensors are descriptions only. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mate.h"

static float buf[64];

static void
tensor(mate_call *c, int flags, const char *name, mate_dtype dt, int ndim,
    const int64_t *shape, const int64_t *stride, int cuda)
{
	mate_tensor t;

	mate_tensor_init(&t, dt, ndim, shape, stride, buf);
	if (cuda) {
		t.device_type = MATE_DEVICE_CUDA;
		t.device_index = 1;
	}
	mate_call_tensor(c, flags, name, &t);
}

int
main(int argc, char **argv)
{
	static const int64_t s23[] = { 2, 3 }, t23[] = { 1, 2 }, s13[] = { 1, 3 },
	    t13[] = { 1, 1 }, s03[] = { 0, 3 }, t03[] = { 3, 1 }, s30[] = { 3, 0 },
	    t30[] = { 1, 1 }, s4[] = { 4 };

	for (int round = 0; round < 3; round++) {
		mate_call *c = mate_call_begin("it's a \"call\"", "my lib", "(...)");
		tensor(c, MATE_ARG, NULL, MATE_BF16, 2, s23, t23, 1);      /* transposed, cuda:1 */
		tensor(c, MATE_ARG, NULL, MATE_F32, 0, NULL, NULL, 0);     /* 0-d */
		tensor(c, MATE_KWARG, "one", MATE_F8_E4M3FN, 2, s13, t13, 0);
		tensor(c, MATE_KWARG, "empty", MATE_I32, 2, s03, t03, 0); /* row-major */
		tensor(c, MATE_KWARG, "zero", MATE_I64, 2, s30, t30, 0);  /* row-major as torch */
		mate_call_str(c, MATE_KWARG, "layout", "it's NHD");
		mate_call_str(c, MATE_KWARG, "plain", "NHD");
		mate_call_float(c, MATE_KWARG, "scale", 0.1);
		mate_call_float(c, MATE_KWARG, "big", 3.0);
		mate_call_float(c, MATE_KWARG, "tiny", 1e-300);
		mate_call_int(c, MATE_KWARG, "n", -7);
		mate_call_bool(c, MATE_KWARG, "causal", 1);
		mate_call_none(c, MATE_KWARG, "out");
		mate_call_dtype(c, MATE_KWARG, "out_dtype", MATE_BF16);
		mate_call_enum(c, MATE_KWARG, "mode", "Mode.FAST", 2);
		mate_call_end(c);
		c = mate_call_begin("plain", NULL, NULL);
		tensor(c, MATE_ARG, NULL, MATE_F32, 1, s4, NULL, 0);
		mate_call_end(c);
	}
	if (argc > 1 && strcmp(argv[1], "newline") == 0) {
		/* a name no shell line holds on one line */
		mate_call *c = mate_call_begin("two\nlines", "m", NULL);
		tensor(c, MATE_ARG, NULL, MATE_F32, 1, s4, NULL, 0);
		mate_call_end(c);
	}
	puts("benchlog-calls: 6 calls of 2 shapes");
	return 0;
}
