/* nccl-prog.c: one rank of a made-up data-parallel job on NCCL (linked against libnccl.so.2: the test-only fake, tests/fakes/nccl.c, or the real one), for tests/cli/test_record_nccl.sh.
 *
 *   nccl-prog [-r RANK -n WORLD] STEPS [skip=R:S] [count=R:S] [init=FILE] [hold=FILE]
 *
 * Its rank is RANK and WORLD_SIZE (torchrun's) when set, else -r and -n; either way it tells
 * NCCL through ncclCommInitRank. It broadcasts from rank 0 and asks the communicator's size
 * and rank; each step all-reduces 4096 floats then swaps 512 halves with its neighbours in
 * a group (ncclSend, ncclRecv); then it all-gathers, reduce-scatters, reduces to rank 0 and
 * destroys the communicator. skip=R:S: rank R leaves out step S's ncclAllReduce; count=R:S:
 * rank R's ncclAllReduce of step S takes 2048 elements; init=FILE: it calls ncclGetUniqueId,
 * then waits for FILE before ncclCommInitRank; hold=FILE: it waits for FILE before it exits
 * (its last call made). It prints its results' checksum; exit 0, 1 when an NCCL
 * call failed, 2 for bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_abi.h"

#define WORLD_MAX 4096

static float grad[4096], sum[4096], gathered[1024 * WORLD_MAX], scattered[256], part[1024];
static float shares[256 * WORLD_MAX];   /* reduce-scatter's send buffer: a share per rank */
static unsigned short half_out[512], half_in[512], bcast[256];
static double local[64], reduced[64];
static int failed;

static void
ok(const char *what, ncclResult_t rc)
{
	if (rc != ncclSuccess) {
		fprintf(stderr, "nccl-prog: %s: ncclResult %d\n", what, rc);
		failed = 1;
	}
}

/* "R:S" after prefix: @return 1 when arg is one. */
static int
spec(const char *arg, const char *prefix, int *r, int *s)
{
	size_t n = strlen(prefix);

	return strncmp(arg, prefix, n) == 0 && sscanf(arg + n, "%d:%d", r, s) == 2;
}

static double
checksum(const void *p, size_t n)
{
	const unsigned char *b = p;
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)b[i] * (double)(i % 251 + 1);
	return s;
}

int
main(int argc, char **argv)
{
	const char *rk = getenv("RANK"), *ws = getenv("WORLD_SIZE"), *hold = NULL, *init = NULL;
	int rank = rk != NULL ? atoi(rk) : -1, world = ws != NULL ? atoi(ws) : -1, opt;
	int steps, skip_r = -1, skip_s = -1, count_r = -1, count_s = -1, n = -1, me = -1;
	ncclUniqueId id;
	ncclComm_t comm;
	double sumcheck;

	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r' && rk == NULL)
			rank = atoi(optarg);
		else if (opt == 'n' && ws == NULL)
			world = atoi(optarg);
		else if (opt != 'r' && opt != 'n')
			return 2;
	}
	if (optind >= argc || rank < 0 || world <= rank || world > WORLD_MAX) {
		fprintf(stderr, "usage: nccl-prog [-r RANK -n WORLD] STEPS [skip=R:S] [count=R:S] "
		    "[init=FILE] [hold=FILE]\n");
		return 2;
	}
	steps = atoi(argv[optind]);
	for (int i = optind + 1; i < argc; i++)
		if (!spec(argv[i], "skip=", &skip_r, &skip_s) &&
		    !spec(argv[i], "count=", &count_r, &count_s)) {
			if (strncmp(argv[i], "hold=", 5) == 0 || strncmp(argv[i], "init=", 5) == 0) {
				*(argv[i][0] == 'h' ? &hold : &init) = argv[i] + 5;
				continue;
			}
			fprintf(stderr, "nccl-prog: bad argument '%s'\n", argv[i]);
			return 2;
		}
	for (int i = 0; i < 4096; i++)
		grad[i] = (float)((i % 17) - 8) / 4.0f + (float)rank;
	for (int i = 0; i < 1024; i++)
		part[i] = (float)(i % 13) + (float)rank * 0.5f;
	for (int i = 0; i < 256 * world; i++)
		shares[i] = (float)(i % 11) - (float)rank;
	for (int i = 0; i < 512; i++)
		half_out[i] = (unsigned short)(0x3c00 + i + rank);
	for (int i = 0; i < 256; i++)
		bcast[i] = (unsigned short)(rank == 0 ? 0x3f80 + i : 0);
	for (int i = 0; i < 64; i++)
		local[i] = i * 0.25 + rank;
	/* every rank of the job builds the same id (rank 0 would make it and send it over) */
	memset(&id, 0, sizeof(id));
	snprintf(id.internal, sizeof(id.internal), "nccl-prog job of %d", world);

	if (init != NULL) {
		ncclUniqueId made;
		ok("ncclGetUniqueId", ncclGetUniqueId(&made));
		while (access(init, F_OK) != 0)
			usleep(10000);
	}
	ok("ncclCommInitRank", ncclCommInitRank(&comm, world, id, rank));
	if (failed)
		return 1;
	ok("ncclBroadcast", ncclBroadcast(bcast, bcast, 256, ncclBfloat16, 0, comm, NULL));
	ok("ncclCommCount", ncclCommCount(comm, &n));
	ok("ncclCommUserRank", ncclCommUserRank(comm, &me));
	for (int step = 0; step < steps; step++) {
		size_t count = rank == count_r && step == count_s ? 2048 : 4096;
		if (!(rank == skip_r && step == skip_s))
			ok("ncclAllReduce", ncclAllReduce(grad, sum, count, ncclFloat32, ncclSum, comm,
			    NULL));
		ok("ncclGroupStart", ncclGroupStart());
		ok("ncclSend", ncclSend(half_out, 512, ncclFloat16, (rank + 1) % world, comm, NULL));
		ok("ncclRecv", ncclRecv(half_in, 512, ncclFloat16, (rank + world - 1) % world, comm,
		    NULL));
		ok("ncclGroupEnd", ncclGroupEnd());
	}
	ok("ncclAllGather", ncclAllGather(part, gathered, 1024, ncclFloat32, comm, NULL));
	ok("ncclReduceScatter", ncclReduceScatter(shares, scattered, 256, ncclFloat32, ncclAvg, comm,
	    NULL));
	ok("ncclReduce", ncclReduce(local, reduced, 64, ncclFloat64, ncclMax, 0, comm, NULL));
	ok("ncclCommDestroy", ncclCommDestroy(comm));
	sumcheck = checksum(sum, sizeof(sum)) + checksum(gathered, (size_t)world * 1024 * 4) +
	    checksum(scattered, sizeof(scattered)) + checksum(reduced, sizeof(reduced)) +
	    checksum(bcast, sizeof(bcast)) + checksum(half_in, sizeof(half_in));
	printf("rank %d of %d (communicator: %d of %d): checksum %.1f\n", rank, world, me, n,
	    sumcheck);
	fflush(stdout);
	while (hold != NULL && access(hold, F_OK) != 0)
		usleep(10000);
	return failed;
}
