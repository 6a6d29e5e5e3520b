/* top_nvml.c: mate-top's GPU figures of a process (its device utilisation and memory, as
 * nvitop shows them), from NVIDIA's management library opened with dlopen() when it is
 * there: mate-top builds and runs without it, and without a GPU. */
#include "top_nvml.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* NVML's types, as nvml.h declares them (its ABI; the header is not needed to build). */
typedef void *nvml_device;
struct nvml_proc_v1 {          /* nvmlProcessInfo_v1_t */
	unsigned int pid;
	unsigned long long used;
};
struct nvml_proc {             /* nvmlProcessInfo_t of the _v2 and _v3 calls */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};
struct nvml_sample {           /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long stamp;  /* microseconds */
	unsigned int sm, mem, enc, dec;
};

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_DEVS 16
#define MAX_PROCS 256

static struct {
	int state;                  /* 0: not tried, 1: open, -1: not there */
	void *lib;
	int (*init)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_device *);
	int (*procs)(nvml_device, unsigned int *, struct nvml_proc *);
	int (*procs_v1)(nvml_device, unsigned int *, struct nvml_proc_v1 *);
	int (*util)(nvml_device, struct nvml_sample *, unsigned int *, unsigned long long);
	unsigned int ndev;
	nvml_device dev[MAX_DEVS];
	unsigned long long last_stamp[MAX_DEVS];
	struct top_gpu rows[MAX_PROCS];
	int nrows;
} nv;

static void *
sym(const char *name)
{
	return dlsym(nv.lib, name);
}

int
top_nvml_open(void)
{
	const char *path = getenv("MATE_NVML");

	if (nv.state != 0)
		return nv.state > 0;
	nv.state = -1;
	if (path != NULL && strcmp(path, "none") == 0)
		return 0;
	if ((nv.lib = dlopen(path != NULL && path[0] != '\0' ? path : "libnvidia-ml.so.1",
	    RTLD_NOW | RTLD_LOCAL)) == NULL)
		return 0;
	nv.init = (int (*)(void))sym("nvmlInit_v2");
	nv.count = (int (*)(unsigned int *))sym("nvmlDeviceGetCount_v2");
	nv.handle = (int (*)(unsigned int, nvml_device *))sym("nvmlDeviceGetHandleByIndex_v2");
	if ((nv.procs = (int (*)(nvml_device, unsigned int *, struct nvml_proc *))
	    sym("nvmlDeviceGetComputeRunningProcesses_v3")) == NULL)
		nv.procs = (int (*)(nvml_device, unsigned int *, struct nvml_proc *))
		    sym("nvmlDeviceGetComputeRunningProcesses_v2");
	if (nv.procs == NULL)
		nv.procs_v1 = (int (*)(nvml_device, unsigned int *, struct nvml_proc_v1 *))
		    sym("nvmlDeviceGetComputeRunningProcesses");
	nv.util = (int (*)(nvml_device, struct nvml_sample *, unsigned int *, unsigned long long))
	    sym("nvmlDeviceGetProcessUtilization");
	if (nv.init == NULL || nv.count == NULL || nv.handle == NULL ||
	    (nv.procs == NULL && nv.procs_v1 == NULL) || nv.init() != NVML_SUCCESS ||
	    nv.count(&nv.ndev) != NVML_SUCCESS) {
		dlclose(nv.lib);
		nv.lib = NULL;
		return 0;
	}
	if (nv.ndev > MAX_DEVS)
		nv.ndev = MAX_DEVS;
	for (unsigned int i = 0; i < nv.ndev; i++)
		if (nv.handle(i, &nv.dev[i]) != NVML_SUCCESS)
			nv.dev[i] = NULL;
	nv.state = 1;
	return 1;
}

static struct top_gpu *
row_for(long pid, int dev)
{
	for (int i = 0; i < nv.nrows; i++)
		if (nv.rows[i].pid == pid && nv.rows[i].device == dev)
			return &nv.rows[i];
	if (nv.nrows == MAX_PROCS)
		return NULL;
	memset(&nv.rows[nv.nrows], 0, sizeof(nv.rows[0]));
	nv.rows[nv.nrows].pid = pid;
	nv.rows[nv.nrows].device = dev;
	nv.rows[nv.nrows].util = -1;
	return &nv.rows[nv.nrows++];
}

static void
set_memory(int d, unsigned int pid, unsigned long long used)
{
	struct top_gpu *g = row_for(pid, d);

	if (g != NULL)
		g->memory = (double)used;
}

/* The processes on device d and their memory. */
static void
sample_memory(int d)
{
	unsigned int n = MAX_PROCS;

	if (nv.procs != NULL) {
		struct nvml_proc p[MAX_PROCS];
		if (nv.procs(nv.dev[d], &n, p) == NVML_SUCCESS)
			for (unsigned int i = 0; i < n && i < MAX_PROCS; i++)
				set_memory(d, p[i].pid, p[i].used);
	} else {
		struct nvml_proc_v1 p[MAX_PROCS];
		if (nv.procs_v1(nv.dev[d], &n, p) == NVML_SUCCESS)
			for (unsigned int i = 0; i < n && i < MAX_PROCS; i++)
				set_memory(d, p[i].pid, p[i].used);
	}
}

/* The processes' SM utilisation on device d since the previous sample (the newest
 * sample of each; a process with none since then used none). */
static void
sample_util(int d)
{
	struct nvml_sample s[MAX_PROCS];
	unsigned int n = MAX_PROCS;
	unsigned long long newest = nv.last_stamp[d];
	int rc;

	if (nv.util == NULL)
		return;
	rc = nv.util(nv.dev[d], s, &n, nv.last_stamp[d]);
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_ERROR_NOT_FOUND)
		return;   /* not supported here: memory only */
	for (int i = 0; i < nv.nrows; i++)
		if (nv.rows[i].device == d)
			nv.rows[i].util = 0;
	if (rc == NVML_ERROR_NOT_FOUND)
		return;   /* no sample since the last: nothing ran */
	for (unsigned int i = 0; i < n && i < MAX_PROCS; i++) {
		struct top_gpu *g = row_for(s[i].pid, d);
		if (g != NULL && s[i].stamp >= g->stamp) {
			g->stamp = s[i].stamp;
			g->util = s[i].sm > 100 ? 100 : (int)s[i].sm;
		}
		if (s[i].stamp > newest)
			newest = s[i].stamp;
	}
	nv.last_stamp[d] = newest;
}

void
top_nvml_sample(void)
{
	if (nv.state <= 0)
		return;
	nv.nrows = 0;   /* a process that left the device leaves the table */
	for (unsigned int d = 0; d < nv.ndev; d++)
		if (nv.dev[d] != NULL) {
			sample_memory((int)d);
			sample_util((int)d);
		}
}

int
top_nvml_of(long pid, const struct top_gpu **out, int max)
{
	int n = 0;

	for (int i = 0; i < nv.nrows && n < max; i++)
		if (nv.rows[i].pid == pid)
			out[n++] = &nv.rows[i];
	return n;
}
