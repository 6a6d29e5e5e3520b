/* nccl.c: a test-only libnccl.so.2 that does one rank's share of the arithmetic on the CPU ("device" buffers are host memory): a collective copies what this rank would hold when every rank brought the same data, point-to-point calls move nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_abi.h"

struct ncclComm {
	int rank, nranks, dev;
};

static __thread int group_depth;

static size_t
type_size(ncclDataType_t dt)
{
	static const size_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return dt >= 0 && dt < (int)(sizeof(sizes) / sizeof(sizes[0])) ? sizes[dt] : 0;
}

/* The bytes of count elements of dt: 0 with *bad set for an invalid type or size. */
static size_t
bytes_of(size_t count, ncclDataType_t dt, int *bad)
{
	size_t es = type_size(dt);

	*bad = es == 0 || count > SIZE_MAX / (es ? es : 1);
	return *bad ? 0 : count * es;
}

static int
comm_ok(const struct ncclComm *c)
{
	return c != NULL && c->nranks > 0 && c->rank >= 0 && c->rank < c->nranks;
}

ncclResult_t
ncclGetVersion(int *version)
{
	if (version == NULL)
		return ncclInvalidArgument;
	*version = 22105;   /* 2.21.5 */
	return ncclSuccess;
}

const char *
ncclGetErrorString(ncclResult_t rc)
{
	return rc == ncclSuccess ? "no error" : "fake NCCL error";
}

ncclResult_t
ncclGetUniqueId(ncclUniqueId *id)
{
	if (id == NULL)
		return ncclInvalidArgument;
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, "fake-nccl", 9);
	return ncclSuccess;
}

static ncclResult_t
init_rank(ncclComm_t *comm, int nranks, int rank)
{
	struct ncclComm *c;

	if (comm == NULL || nranks <= 0 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return ncclSystemError;
	c->rank = rank;
	c->nranks = nranks;
	*comm = c;
	return ncclSuccess;
}

ncclResult_t
ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	(void)id;
	return init_rank(comm, nranks, rank);
}

ncclResult_t
ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
    ncclConfig_t *config)
{
	(void)id, (void)config;
	return init_rank(comm, nranks, rank);
}

ncclResult_t
ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	if (comms == NULL || ndev <= 0)
		return ncclInvalidArgument;
	for (int i = 0; i < ndev; i++) {
		if (init_rank(&comms[i], ndev, i) != ncclSuccess) {
			while (i-- > 0)
				free(comms[i]);
			return ncclSystemError;
		}
		comms[i]->dev = devlist != NULL ? devlist[i] : i;
	}
	return ncclSuccess;
}

ncclResult_t
ncclCommDestroy(ncclComm_t comm)
{
	if (comm == NULL)
		return ncclInvalidArgument;
	free(comm);
	return ncclSuccess;
}

ncclResult_t
ncclCommAbort(ncclComm_t comm)
{
	return ncclCommDestroy(comm);
}

ncclResult_t
ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm_ok(comm) || count == NULL)
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t
ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm_ok(comm) || rank == NULL)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

ncclResult_t
ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm_ok(comm) || device == NULL)
		return ncclInvalidArgument;
	*device = comm->dev;
	return ncclSuccess;
}

ncclResult_t
ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

ncclResult_t
ncclGroupEnd(void)
{
	if (group_depth <= 0)
		return ncclInvalidUsage;
	group_depth--;
	return ncclSuccess;
}

/* Checks a call's communicator, type, buffers and root or peer (-1: none), bad: another
 * argument is:
 * @return its bytes per count, with *rc ncclSuccess, or ncclInvalidArgument. */
static size_t
check(ncclComm_t comm, size_t count, ncclDataType_t dt, const void *a, const void *b, int root,
    int bad, ncclResult_t *rc)
{
	int bad_type;
	size_t n = bytes_of(count, dt, &bad_type);

	*rc = ncclSuccess;
	if (!comm_ok(comm) || bad_type || bad || (count > 0 && (a == NULL || b == NULL)) ||
	    root < -1 || root >= comm->nranks)
		*rc = ncclInvalidArgument;
	return n;
}

/* An all-reduce (or, scatter, a reduce-scatter: this rank's share of send) of ranks that all
 * brought send: sum, max, min and avg of equal values, prod of 1s. */
static ncclResult_t
reduce_all(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
    ncclComm_t comm, int scatter)
{
	ncclResult_t rc;
	size_t n = check(comm, count, dt, send, recv, -1, op < 0, &rc);

	if (rc != ncclSuccess)
		return rc;
	memmove(recv, (const char *)send + (scatter ? (size_t)comm->rank * n : 0), n);
	return ncclSuccess;
}

ncclResult_t
ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
    ncclComm_t comm, ncclStream_t stream)
{
	(void)stream;
	return reduce_all(send, recv, count, dt, op, comm, 0);
}

ncclResult_t
ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dt, int root,
    ncclComm_t comm, ncclStream_t stream)
{
	ncclResult_t rc;
	size_t n = check(comm, count, dt, recv, recv, root < 0 ? -2 : root, 0, &rc);

	(void)stream;
	if (rc != ncclSuccess)
		return rc;
	if (comm->rank == root && send != NULL)
		memmove(recv, send, n);
	return ncclSuccess;
}

ncclResult_t
ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
    int root, ncclComm_t comm, ncclStream_t stream)
{
	ncclResult_t rc;
	size_t n = check(comm, count, dt, send, send, root < 0 ? -2 : root, op < 0, &rc);

	(void)stream;
	if (rc != ncclSuccess)
		return rc;
	if (comm->rank == root && recv != NULL)
		memmove(recv, send, n);
	return ncclSuccess;
}

ncclResult_t
ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclComm_t comm,
    ncclStream_t stream)
{
	ncclResult_t rc;
	size_t n = check(comm, count, dt, send, recv, -1, 0, &rc);

	(void)stream;
	if (rc != ncclSuccess)
		return rc;
	for (int r = 0; r < comm->nranks; r++)
		memmove((char *)recv + (size_t)r * n, send, n);
	return ncclSuccess;
}

ncclResult_t
ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
    ncclComm_t comm, ncclStream_t stream)
{
	(void)stream;
	return reduce_all(send, recv, count, dt, op, comm, 1);
}

ncclResult_t
ncclSend(const void *send, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
    ncclStream_t stream)
{
	ncclResult_t rc;

	(void)stream;
	check(comm, count, dt, send, send, peer < 0 ? -2 : peer, 0, &rc);
	return rc;
}

ncclResult_t
ncclRecv(void *recv, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
    ncclStream_t stream)
{
	ncclResult_t rc;

	(void)stream;
	check(comm, count, dt, recv, recv, peer < 0 ? -2 : peer, 0, &rc);
	return rc;
}
