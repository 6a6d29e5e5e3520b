/* benchlog-huge.c: calls with tensors of dimension INT64_MAX (described, never read below
 * level 5), recorded through libmate for tests/cli/test_bench_overflow.py: the recorder's
 * profile and MATE_BENCH_LOG meet numbers no double holds exactly and products no int64_t
 * holds, and the program must go on as if nothing were recorded. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mate.h"

static float buf[4];

/* A tensor as a host program may fill one in, without mate_tensor_init()'s checks. */
static void
tensor(mate_call *c, int ndim, const int64_t *shape, const int64_t *stride)
{
	mate_tensor t;

	memset(&t, 0, sizeof(t));
	t.dtype = MATE_F32;
	t.ndim = ndim;
	memcpy(t.shape, shape, (size_t)ndim * sizeof(*shape));
	memcpy(t.stride, stride, (size_t)ndim * sizeof(*stride));
	t.data = buf;
	mate_call_tensor(c, MATE_ARG, NULL, &t);
}

int
main(void)
{
	static const int64_t big[] = { INT64_MAX }, one[] = { 1 },
	    empty[] = { 0, INT64_MAX }, empty_rm[] = { INT64_MAX, 1 },
	    two[] = { 2, INT64_MAX }, two_rm[] = { INT64_MAX, 1 },
	    wide[] = { INT64_MAX, INT64_MAX }, wide_st[] = { INT64_MAX, INT64_MAX };
	mate_call *c;

	c = mate_call_begin("huge", "hostile", NULL);
	tensor(c, 1, big, one);
	mate_call_end(c);
	c = mate_call_begin("empty_huge", "hostile", NULL);
	tensor(c, 2, empty, empty_rm);
	mate_call_end(c);
	c = mate_call_begin("two_huge", "hostile", NULL);
	tensor(c, 2, two, two_rm);
	mate_call_end(c);
	c = mate_call_begin("wide", "hostile", NULL);
	tensor(c, 2, wide, wide_st);
	mate_call_end(c);
	puts("benchlog-huge: 4 calls");
	return 0;
}
