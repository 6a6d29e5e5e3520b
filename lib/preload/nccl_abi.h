/* nccl_abi.h: NCCL's types, values and entry points as its ABI passes them, for the preload's
 * interposer and the test-only fake libnccl (no nccl.h is needed to build mate).
 *
 * From NCCL's documentation, "NCCL API" > "Types" and the pages of the communicator,
 * collective, group and point-to-point functions:
 * https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html
 * (ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums, int-sized; ncclUniqueId is a
 * struct of NCCL_UNIQUE_ID_BYTES = 128 chars, passed by value; ncclComm_t an opaque pointer). */
#ifndef MATE_NCCL_ABI_H_INCLUDED
#define MATE_NCCL_ABI_H_INCLUDED

#include <stddef.h>

typedef int ncclResult_t;
enum {
	ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
	ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7
};

typedef int ncclDataType_t;
enum {
	ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
	ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9,
	ncclFloat8e4m3 = 10, ncclFloat8e5m2 = 11      /* NCCL 2.19 and later */
};

/* ncclSum..ncclAvg; ncclRedOpCreatePreMulSum() hands out values from ncclNumOps on. */
typedef int ncclRedOp_t;
enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 };

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef struct ncclComm *ncclComm_t;
typedef void *ncclStream_t;    /* cudaStream_t */
typedef struct ncclConfig ncclConfig_t;   /* read by NCCL alone */

/* The entry points the interposer takes, and those the fake adds. */
ncclResult_t ncclGetVersion(int *version);
const char *ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
    ncclConfig_t *config);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
    ncclDataType_t datatype, int root, ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
    ncclDataType_t datatype, ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, ncclStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#endif /* MATE_NCCL_ABI_H_INCLUDED */
