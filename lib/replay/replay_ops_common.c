/* replay_ops_common.c: what the built-in replay handlers (replay_ops*.c) share: the kernels a call runs on, the handler tables. */
#include "mate_private.h"
#include "kernels.h"
#include "replay_private.h"

const mate_kernels *
mate_replay_kernels(const mate_replay_call *c)
{
#ifdef HAVE_CUDA
	if (mate_replay_call_device(c) == MATE_REPLAY_DEVICE_CUDA)
		return mate_kernels_cuda();
#else
	(void)c;
#endif
	return mate_kernels_cpu();
}

int
mate_replay_mm_shape(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b, int nd,
    int64_t *shape)
{
	if (a->ndim != nd || b->ndim != nd)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: operands must be %d-D",
		    mate_replay_call_function(c), nd);
	for (int i = 0; i < nd - 1; i++)
		shape[i] = a->shape[i];
	shape[nd - 1] = b->shape[nd - 1];
	return MATE_OK;
}

int
mate_replay_kernel_done_pair(mate_replay_call *c, int rc, const mate_error *err,
    mate_value *v1, mate_value *v2)
{
	mate_value *ret;

	if (rc != MATE_OK || v2 == NULL) {
		mate_value_free(v2);
		return mate_replay_kernel_done(c, rc, err, v1);
	}
	ret = mate_value_tuple();
	mate_value_append(ret, v1);
	mate_value_append(ret, v2);
	return mate_replay_return(c, ret);
}

int
mate_replay_register_ops(mate_replay *r, const struct mate_replay_op_def *ops, size_t n, mate_error *err)
{
	int rc;

	for (size_t i = 0; i < n; i++)
		if ((rc = mate_replay_register_signature(r, NULL, ops[i].name, ops[i].sig, ops[i].fn,
		    (void *)ops[i].ctx, err)) != MATE_OK)
			return rc;
	return MATE_OK;
}
