/* interpose_nccl.c: the preload's NCCL entry points: collectives, point-to-point calls, groups and communicators recorded as API calls (count, datatype, op, root, peer, communicator, stream), and the process's rank from ncclCommInitRank. */
#include "interpose_private.h"
#include "nccl_abi.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- names --------------------------------------------------------------------------------- */

static const struct {
	const char *name;
	mate_dtype dt;
} dtypes[] = {
	[ncclInt8] = { "ncclDataType_t.ncclInt8", MATE_I8 },
	[ncclUint8] = { "ncclDataType_t.ncclUint8", MATE_U8 },
	[ncclInt32] = { "ncclDataType_t.ncclInt32", MATE_I32 },
	[ncclUint32] = { "ncclDataType_t.ncclUint32", MATE_U32 },
	[ncclInt64] = { "ncclDataType_t.ncclInt64", MATE_I64 },
	[ncclUint64] = { "ncclDataType_t.ncclUint64", MATE_U64 },
	[ncclFloat16] = { "ncclDataType_t.ncclFloat16", MATE_F16 },
	[ncclFloat32] = { "ncclDataType_t.ncclFloat32", MATE_F32 },
	[ncclFloat64] = { "ncclDataType_t.ncclFloat64", MATE_F64 },
	[ncclBfloat16] = { "ncclDataType_t.ncclBfloat16", MATE_BF16 },
	[ncclFloat8e4m3] = { "ncclDataType_t.ncclFloat8e4m3", MATE_F8_E4M3FN },
	[ncclFloat8e5m2] = { "ncclDataType_t.ncclFloat8e5m2", MATE_F8_E5M2 },
};
#define NDTYPES ((int)(sizeof(dtypes) / sizeof(dtypes[0])))

static const char *const op_names[ncclNumOps] = {
	"ncclRedOp_t.ncclSum", "ncclRedOp_t.ncclProd", "ncclRedOp_t.ncclMax",
	"ncclRedOp_t.ncclMin", "ncclRedOp_t.ncclAvg",
};

static const char *const result_names[] = {
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
};

/* ---- communicators ------------------------------------------------------------------------- */

/* Each communicator the program made while recorded: its id (the hash of its ncclUniqueId,
 * the same in every rank of it; else a number of this process), rank, size and device. */
#define COMMS 1024
static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct comm {
	ncclComm_t comm;
	uint32_t id;
	int rank, nranks, dev;
} comms[COMMS];
static uint32_t local_ids;

struct comm_info {
	uint32_t id;
	int rank, nranks, dev;     /* -1 where unknown */
};

static size_t
comm_slot(ncclComm_t c)
{
	return (size_t)(((uintptr_t)c >> 4) * 0x9E3779B97F4A7C15ull >> 54) % COMMS;
}

static uint32_t
unique_id_hash(const ncclUniqueId *u)
{
	return mate_fnv1a32(u->internal, sizeof(u->internal));
}

/* Where c is in the table, or the free slot it goes to (NULL: the table is full). */
static struct comm *
comm_find(ncclComm_t c)
{
	size_t i = comm_slot(c);

	for (size_t n = 0; n < COMMS; n++, i = (i + 1) % COMMS)
		if (comms[i].comm == c || comms[i].comm == NULL)
			return &comms[i];
	return NULL;
}

/* Takes c into the table (id 0: a number of this process); fn is a real NCCL function, for
 * the device of c (NULL: not asked). */
static void
comm_add(ncclComm_t c, uint32_t id, int rank, int nranks, void *fn)
{
	typedef ncclResult_t (*dev_fn)(ncclComm_t, int *);
	dev_fn getdev = (dev_fn)mate_ip_sibling(fn, "ncclCommCuDevice");
	struct comm *e;
	int dev = -1;

	if (c == NULL)
		return;
	mate_ip_inside++;
	if (getdev == NULL || getdev(c, &dev) != ncclSuccess)
		dev = -1;
	mate_ip_inside--;
	pthread_mutex_lock(&comms_lock);
	if ((e = comm_find(c)) != NULL) {
		e->comm = c;
		e->id = id != 0 ? id : ++local_ids;
		e->rank = rank;
		e->nranks = nranks;
		e->dev = dev;
	}
	pthread_mutex_unlock(&comms_lock);
}

/* Frees c's slot: the entries after it in its run move up to keep the probes whole. */
static void
comm_remove(ncclComm_t c)
{
	struct comm *e;

	pthread_mutex_lock(&comms_lock);
	if ((e = comm_find(c)) != NULL && e->comm == c) {
		size_t hole = (size_t)(e - comms), i = (hole + 1) % COMMS;
		e->comm = NULL;
		for (; comms[i].comm != NULL; i = (i + 1) % COMMS) {
			size_t home = comm_slot(comms[i].comm);
			/* an entry stays when its home lies cyclically in (hole, i] */
			if (hole < i ? (home > hole && home <= i) : (home > hole || home <= i))
				continue;
			comms[hole] = comms[i];
			comms[i].comm = NULL;
			hole = i;
		}
	}
	pthread_mutex_unlock(&comms_lock);
}

/* What is known of c; one made before the recording (or by a function not interposed,
 * ncclCommSplit) gets a number of this process now. */
static struct comm_info
comm_info(ncclComm_t c)
{
	struct comm_info in = { .id = 0, .rank = -1, .nranks = -1, .dev = -1 };
	struct comm *e;

	pthread_mutex_lock(&comms_lock);
	if (c != NULL && (e = comm_find(c)) != NULL) {
		if (e->comm == NULL) {
			e->comm = c;
			e->id = ++local_ids;
			e->rank = e->nranks = e->dev = -1;
		}
		in.id = e->id;
		in.rank = e->rank;
		in.nranks = e->nranks;
		in.dev = e->dev;
	}
	pthread_mutex_unlock(&comms_lock);
	return in;
}

/* ---- arguments ----------------------------------------------------------------------------- */

/* A call's arguments, as NCCL's signature has them (has_*: it has that argument). */
struct nccl_args {
	const void *send;
	void *recv;
	int has_send, has_recv;
	const char *count_name;    /* "count", "sendcount", "recvcount" */
	size_t count;
	int64_t send_n, recv_n;    /* elements of each buffer, -1 where unknown */
	ncclDataType_t dt;
	ncclRedOp_t op;
	int has_op;
	int has_root, root, has_peer, peer;
	ncclComm_t comm;
	void *stream;
};

/* An object argument: type with repr (NULL: the address p), or p where the libmate found has
 * no objects. */
static void
pointer_arg(mate_call *c, const char *name, const char *type, const char *repr, uintptr_t p)
{
	char buf[48];

	if (mate_ip_api.value_object != NULL && mate_ip_api.call_value != NULL) {
		if (repr == NULL) {
			snprintf(buf, sizeof(buf), "0x%" PRIxPTR, p);
			repr = buf;
		}
		mate_ip_api.call_value(c, MATE_KWARG, name, mate_ip_api.value_object(type, repr));
	} else
		mate_ip_api.call_int(c, MATE_KWARG, name, (int64_t)p);
}

/* A buffer: below level 5 a device tensor of its elements (shape and dtype in the log and in
 * the events' args; its data is never read), at level 5 its address only (reading it would
 * wait on the stream, that is on the other ranks). */
static void
buffer_arg(struct ip_call *ic, const char *name, int flags, const void *p, int64_t n,
    ncclDataType_t dt, int dev, void *stream)
{
	mate_tensor t;

	if (ic->level >= 5 || dt < 0 || dt >= NDTYPES || n < 0 || (p == NULL && n > 0)) {
		if (ic->level >= 3)
			pointer_arg(ic->c, name, "void*", NULL, (uintptr_t)p);
		return;
	}
	memset(&t, 0, sizeof(t));
	t.dtype = dtypes[dt].dt;
	t.ndim = 1;
	t.shape[0] = n;
	t.stride[0] = 1;
	t.data = (void *)(uintptr_t)p;
	t.device_type = MATE_DEVICE_CUDA;
	t.device_index = dev >= 0 ? dev : 0;
	t.stream = stream;
	mate_ip_api.call_tensor(ic->c, flags, name, &t);
}

static void
comm_arg(mate_call *c, const char *name, uint32_t id)
{
	char repr[40];

	snprintf(repr, sizeof(repr), "<ncclComm_t %08" PRIx32 ">", id);
	pointer_arg(c, name, "ncclComm_t", repr, id);
}

/* The arguments of a collective or point-to-point call, in the order of its signature
 * (buffers first: at level 1 they alone are taken, for the events). */
static void
add_args(struct ip_call *ic, const struct nccl_args *a)
{
	const struct ip_api *api = &mate_ip_api;
	struct comm_info ci = comm_info(a->comm);

	if (a->has_send)
		buffer_arg(ic, "sendbuff", MATE_KWARG, a->send, a->send_n, a->dt, ci.dev, a->stream);
	if (a->has_recv)
		buffer_arg(ic, "recvbuff", MATE_KWARG | MATE_INPLACE, a->recv, a->recv_n, a->dt,
		    ci.dev, a->stream);
	if (ic->level < 3)
		return;
	api->call_int(ic->c, MATE_KWARG, a->count_name, (int64_t)a->count);
	if (a->dt >= 0 && a->dt < NDTYPES)
		api->call_enum(ic->c, MATE_KWARG, "datatype", dtypes[a->dt].name, a->dt);
	else
		api->call_int(ic->c, MATE_KWARG, "datatype", a->dt);
	if (a->has_op && a->op >= 0 && a->op < ncclNumOps)
		api->call_enum(ic->c, MATE_KWARG, "op", op_names[a->op], a->op);
	else if (a->has_op)   /* ncclRedOpCreatePreMulSum's */
		api->call_int(ic->c, MATE_KWARG, "op", a->op);
	if (a->has_root)
		api->call_int(ic->c, MATE_KWARG, "root", a->root);
	if (a->has_peer)
		api->call_int(ic->c, MATE_KWARG, "peer", a->peer);
	comm_arg(ic->c, "comm", ci.id);
	pointer_arg(ic->c, "stream", "void*", NULL, (uintptr_t)a->stream);
}

/* ---- the entry points ---------------------------------------------------------------------- */

static void
call_finish(struct ip_call *ic, ncclResult_t rc)
{
	char msg[96];

	mate_ip_call_ran(ic);
	if (rc >= 0 && rc < (int)(sizeof(result_names) / sizeof(result_names[0])))
		snprintf(msg, sizeof(msg), "%s returned %s (%d)", ic->name, result_names[rc], rc);
	else
		snprintf(msg, sizeof(msg), "%s returned ncclResult %d", ic->name, rc);
	/* a nonblocking communicator's call is under way, not failed */
	mate_ip_call_end(ic, rc == ncclSuccess || rc == ncclInProgress ? NULL : msg);
}

/* NCCL's calls are recorded at levels 1 to 5; at level 10 they pass (as copies and launches
 * do), so that the dump limits go to the calls that replay. */
static inline int
nccl_recording(void)
{
	return mate_ip_recording() && mate_ip_level < 10;
}

#define ENTRY(name, params) \
	typedef ncclResult_t (*name##_fn) params; \
	IP_EXPORT ncclResult_t name params; \
	IP_EXPORT ncclResult_t name params

#define REAL(name) \
	static void *real_; \
	name##_fn fn = (name##_fn)mate_ip_real(&real_, #name, (void *)name, \
	    __builtin_return_address(0)); \
	if (IP_UNLIKELY(fn == NULL)) \
		return ncclSystemError

/* Begins recording name with signature sig; the arguments a follow. */
static void
nccl_begin(struct ip_call *ic, const char *name, const char *sig, const struct nccl_args *a)
{
	mate_ip_call_begin(ic, "nccl", name, sig);
	if (ic->c == NULL || a == NULL)
		return;
	mate_ip_args_begin();
	add_args(ic, a);
	mate_ip_args_end();
}

/* A collective or point-to-point call: straight to fn when nothing is recorded. ... are the
 * nccl_args fields of its arguments. */
#define COMM_FN(name, params, args, sig, ...) \
	ENTRY(name, params) \
	{ \
		struct ip_call ic; \
		ncclResult_t rc; \
		REAL(name); \
		if (IP_LIKELY(!nccl_recording())) \
			return fn args; \
		{ \
			struct nccl_args a_ = { __VA_ARGS__ }; \
			nccl_begin(&ic, #name, sig, &a_); \
		} \
		mate_ip_call_ready(&ic); \
		mate_ip_call_run(&ic); \
		rc = fn args; \
		call_finish(&ic, rc); \
		return rc; \
	}

/* The size of comm (for the buffers of all-gather and reduce-scatter), or -1. */
static int64_t
nranks_of(ncclComm_t comm)
{
	return comm_info(comm).nranks;
}

static int64_t
times(size_t count, int64_t n)
{
	int64_t r;

	return n > 0 && count <= (size_t)INT64_MAX && !__builtin_mul_overflow((int64_t)count, n, &r)
	    ? r : -1;
}

#define COUNT(c) ((size_t)(c) <= (size_t)INT64_MAX ? (int64_t)(c) : -1)

COMM_FN(ncclAllReduce, (const void *send, void *recv, size_t count, ncclDataType_t dt,
    ncclRedOp_t op, ncclComm_t comm, ncclStream_t stream), (send, recv, count, dt, op, comm, stream),
    "(sendbuff, recvbuff, count, datatype, op, comm, stream)",
    .send = send, .recv = recv, .has_send = 1, .has_recv = 1, .count_name = "count",
    .count = count, .send_n = COUNT(count), .recv_n = COUNT(count), .dt = dt, .op = op,
    .has_op = 1, .comm = comm, .stream = stream)

COMM_FN(ncclBroadcast, (const void *send, void *recv, size_t count, ncclDataType_t dt, int root,
    ncclComm_t comm, ncclStream_t stream), (send, recv, count, dt, root, comm, stream),
    "(sendbuff, recvbuff, count, datatype, root, comm, stream)",
    .send = send, .recv = recv, .has_send = 1, .has_recv = 1, .count_name = "count",
    .count = count, .send_n = COUNT(count), .recv_n = COUNT(count), .dt = dt,
    .has_root = 1, .root = root, .comm = comm, .stream = stream)

COMM_FN(ncclReduce, (const void *send, void *recv, size_t count, ncclDataType_t dt,
    ncclRedOp_t op, int root, ncclComm_t comm, ncclStream_t stream),
    (send, recv, count, dt, op, root, comm, stream),
    "(sendbuff, recvbuff, count, datatype, op, root, comm, stream)",
    .send = send, .recv = recv, .has_send = 1, .has_recv = 1, .count_name = "count",
    .count = count, .send_n = COUNT(count), .recv_n = COUNT(count), .dt = dt, .op = op,
    .has_op = 1, .has_root = 1, .root = root, .comm = comm, .stream = stream)

COMM_FN(ncclAllGather, (const void *send, void *recv, size_t count, ncclDataType_t dt,
    ncclComm_t comm, ncclStream_t stream), (send, recv, count, dt, comm, stream),
    "(sendbuff, recvbuff, sendcount, datatype, comm, stream)",
    .send = send, .recv = recv, .has_send = 1, .has_recv = 1, .count_name = "sendcount",
    .count = count, .send_n = COUNT(count), .recv_n = times(count, nranks_of(comm)), .dt = dt,
    .comm = comm, .stream = stream)

COMM_FN(ncclReduceScatter, (const void *send, void *recv, size_t count, ncclDataType_t dt,
    ncclRedOp_t op, ncclComm_t comm, ncclStream_t stream), (send, recv, count, dt, op, comm, stream),
    "(sendbuff, recvbuff, recvcount, datatype, op, comm, stream)",
    .send = send, .recv = recv, .has_send = 1, .has_recv = 1, .count_name = "recvcount",
    .count = count, .send_n = times(count, nranks_of(comm)), .recv_n = COUNT(count), .dt = dt,
    .op = op, .has_op = 1, .comm = comm, .stream = stream)

COMM_FN(ncclSend, (const void *send, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
    ncclStream_t stream), (send, count, dt, peer, comm, stream),
    "(sendbuff, count, datatype, peer, comm, stream)",
    .send = send, .has_send = 1, .count_name = "count", .count = count,
    .send_n = COUNT(count), .dt = dt, .has_peer = 1, .peer = peer, .comm = comm,
    .stream = stream)

COMM_FN(ncclRecv, (void *recv, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
    ncclStream_t stream), (recv, count, dt, peer, comm, stream),
    "(recvbuff, count, datatype, peer, comm, stream)",
    .recv = recv, .has_recv = 1, .count_name = "count", .count = count,
    .recv_n = COUNT(count), .dt = dt, .has_peer = 1, .peer = peer, .comm = comm,
    .stream = stream)

/* A call whose arguments begin adds (a statement on ic, once ic.c is known not NULL and
 * inside mate_ip_args_begin/end); after runs once the real call returned rc. */
#define OTHER_FN(name, params, args, sig, begin, after) \
	ENTRY(name, params) \
	{ \
		struct ip_call ic; \
		ncclResult_t rc; \
		REAL(name); \
		if (IP_LIKELY(!nccl_recording())) { \
			rc = fn args; \
			if (IP_UNLIKELY(mate_ip_want)) { \
				after; \
			} \
			return rc; \
		} \
		mate_ip_call_begin(&ic, "nccl", #name, sig); \
		if (ic.c != NULL && ic.level >= 3) { \
			mate_ip_args_begin(); \
			begin; \
			mate_ip_args_end(); \
		} \
		mate_ip_call_ready(&ic); \
		mate_ip_call_run(&ic); \
		rc = fn args; \
		call_finish(&ic, rc); \
		after; \
		return rc; \
	}

OTHER_FN(ncclGetUniqueId, (ncclUniqueId *uniqueId), (uniqueId), "(uniqueId)", , )
OTHER_FN(ncclGroupStart, (void), (), "()", , )
OTHER_FN(ncclGroupEnd, (void), (), "()", , )

/* A communicator made: taken into the table; the first one made with ncclCommInitRank gives
 * the process its rank when its launcher set none (libmate decides). */
static void
comm_made(const char *name, ncclResult_t rc, ncclComm_t *comm, int nranks,
    const ncclUniqueId *uid, int rank, void *fn)
{
	if ((rc != ncclSuccess && rc != ncclInProgress) || comm == NULL || nranks <= 0 ||
	    rank < 0 || rank >= nranks || !mate_ip_load())
		return;
	/* a nonblocking communicator still being made is not asked its device: NCCL warns of
	 * any use of it before it is ready */
	comm_add(*comm, unique_id_hash(uid), rank, nranks, rc == ncclSuccess ? fn : NULL);
	if (mate_ip_api.event_rank != NULL) {
		mate_ip_inside++;
		mate_ip_api.event_rank(rank, nranks, name);
		mate_ip_inside--;
	}
}

static void
init_args(struct ip_call *ic, int nranks, const ncclUniqueId *uid, int rank)
{
	char repr[40];

	mate_ip_api.call_int(ic->c, MATE_KWARG, "nranks", nranks);
	snprintf(repr, sizeof(repr), "<ncclUniqueId %08" PRIx32 ">", unique_id_hash(uid));
	pointer_arg(ic->c, "commId", "ncclUniqueId", repr, unique_id_hash(uid));
	mate_ip_api.call_int(ic->c, MATE_KWARG, "rank", rank);
}

OTHER_FN(ncclCommInitRank, (ncclComm_t *comm, int nranks, ncclUniqueId id, int rank),
    (comm, nranks, id, rank), "(comm, nranks, commId, rank)",
    init_args(&ic, nranks, &id, rank),
    comm_made("ncclCommInitRank", rc, comm, nranks, &id, rank, (void *)fn))

OTHER_FN(ncclCommInitRankConfig, (ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
    ncclConfig_t *config), (comm, nranks, id, rank, config),
    "(comm, nranks, commId, rank, config)",
    init_args(&ic, nranks, &id, rank),
    comm_made("ncclCommInitRankConfig", rc, comm, nranks, &id, rank, (void *)fn))

/* ncclCommInitAll's communicators: numbers of this process, rank i of ndev each. */
static void
all_made(ncclResult_t rc, ncclComm_t *comms_out, int ndev, void *fn)
{
	if (rc != ncclSuccess || comms_out == NULL || ndev <= 0 || !mate_ip_load())
		return;
	for (int i = 0; i < ndev && i < COMMS / 2; i++)
		comm_add(comms_out[i], 0, i, ndev, fn);
}

OTHER_FN(ncclCommInitAll, (ncclComm_t *comms_out, int ndev, const int *devlist),
    (comms_out, ndev, devlist), "(comms, ndev, devlist)",
    mate_ip_api.call_int(ic.c, MATE_KWARG, "ndev", ndev),
    all_made(rc, comms_out, ndev, (void *)fn))

/* Destroyed or aborted: its slot is freed (its address may come back for another). */
#define FREE_COMM_FN(name) \
	OTHER_FN(name, (ncclComm_t comm), (comm), "(comm)", \
	    comm_arg(ic.c, "comm", comm_info(comm).id), \
	    if (rc == ncclSuccess) comm_remove(comm))

FREE_COMM_FN(ncclCommDestroy)
FREE_COMM_FN(ncclCommAbort)

#define QUERY_FN(name, out) \
	OTHER_FN(name, (ncclComm_t comm, int *out), (comm, out), "(comm, " #out ")", \
	    comm_arg(ic.c, "comm", comm_info(comm).id), )

QUERY_FN(ncclCommCount, count)
QUERY_FN(ncclCommUserRank, rank)
