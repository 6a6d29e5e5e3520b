/* rank.c: a recorded process's place in a distributed job (rank, world size, local rank), from the variables its launcher set. */
#include "events_private.h"

#include <stdlib.h>

/* The launchers, most specific first: torchrun inside srun sets both, and its RANK is the one
 * the program's collectives use. */
static const struct launcher {
	const char *rank, *world, *local;
} launchers[] = {
	{ "RANK", "WORLD_SIZE", "LOCAL_RANK" },                                    /* torchrun */
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" }, /* Open MPI */
	{ "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },                             /* MPICH, Hydra */
	{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },                       /* srun */
};

/* A variable's value in [lo, MATE_EV_RANK_MAX]: 1 with *v, 0 unset, -1 (warned) otherwise. */
static int
read_var(const char *name, long lo, long *v)
{
	int rc = mate_env_long(name, lo, MATE_EV_RANK_MAX, v);

	if (rc < 0)
		mate_warn("bad %s value '%s' (want %ld..%d); no rank in the events", name,
		    getenv(name), lo, MATE_EV_RANK_MAX);
	return rc;
}

void
mate_ev_rank_from_env(struct mate_ev_rank *r)
{
	long rank, world = 0, local = -1;

	r->rank = r->local = -1;
	r->world = 0;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const struct launcher *l = &launchers[i];
		int rc = read_var(l->rank, 0, &rank);

		if (rc == 0)
			continue;
		if (rc < 0 || read_var(l->world, 1, &world) < 0 || read_var(l->local, 0, &local) < 0)
			return;
		if (world > 0 && rank >= world) {
			mate_warn("%s=%ld is not below %s=%ld; no rank in the events", l->rank, rank,
			    l->world, world);
			return;
		}
		r->rank = (int)rank;
		r->world = (int)world;
		r->local = (int)local;
		return;
	}
}
