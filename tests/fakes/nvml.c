/* nvml.c: a test-only stand-in for NVIDIA's libnvidia-ml (the calls mate-top makes, with
 * NVML's ABI), whose devices and processes come from the environment:
 * FAKE_NVML="DEV:PID:BYTES:SM,..." (SM empty: no utilisation sample for it), FAKE_NVML_DEVICES
 * the device count (default 1), FAKE_NVML_NO_UTIL=1 the utilisation call missing (an old
 * driver). Each utilisation call hands out samples newer than the caller's last time stamp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct proc_info {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};
struct sample {
	unsigned int pid;
	unsigned long long stamp;
	unsigned int sm, mem, enc, dec;
};

#define SUCCESS 0
#define ERROR_INVALID_ARGUMENT 2
#define ERROR_NOT_SUPPORTED 3
#define ERROR_NOT_FOUND 6
#define ERROR_INSUFFICIENT_SIZE 7

struct entry {
	int dev;
	unsigned int pid;
	unsigned long long bytes;
	int sm;    /* -1: no sample */
};

static struct entry entries[64];
static int nentries;
static unsigned long long clock_us = 1000;

static void
load(void)
{
	const char *s = getenv("FAKE_NVML");
	char buf[1024], *save = NULL, *tok;

	nentries = 0;
	if (s == NULL)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL && nentries < 64;
	    tok = strtok_r(NULL, ",", &save)) {
		struct entry *e = &entries[nentries];
		char sm[16] = "";
		if (sscanf(tok, "%d:%u:%llu:%15s", &e->dev, &e->pid, &e->bytes, sm) < 3)
			continue;
		e->sm = sm[0] != '\0' ? atoi(sm) : -1;
		nentries++;
	}
}

int
nvmlInit_v2(void)
{
	load();
	return SUCCESS;
}

int
nvmlShutdown(void)
{
	return SUCCESS;
}

int
nvmlDeviceGetCount_v2(unsigned int *n)
{
	const char *s = getenv("FAKE_NVML_DEVICES");

	*n = s != NULL ? (unsigned int)atoi(s) : 1;
	return SUCCESS;
}

int
nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	*dev = (void *)(unsigned long)(i + 1);
	return SUCCESS;
}

static int
index_of(void *dev)
{
	return (int)(unsigned long)dev - 1;
}

int
nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, struct proc_info *out)
{
	unsigned int n = 0, cap = *count;

	load();   /* the test may change it between samples: each call reads it again */
	for (int i = 0; i < nentries; i++) {
		if (entries[i].dev != index_of(dev))
			continue;
		if (out != NULL && n < cap) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].pid = entries[i].pid;
			out[n].used = entries[i].bytes;
		}
		n++;
	}
	*count = n;
	return out != NULL && n > cap ? ERROR_INSUFFICIENT_SIZE : SUCCESS;
}

int
nvmlDeviceGetProcessUtilization(void *dev, struct sample *out, unsigned int *count,
    unsigned long long last)
{
	unsigned int n = 0, cap = *count;

	if (getenv("FAKE_NVML_NO_UTIL") != NULL)
		return ERROR_NOT_SUPPORTED;
	clock_us += 1000;
	for (int i = 0; i < nentries; i++) {
		if (entries[i].dev != index_of(dev) || entries[i].sm < 0 || clock_us <= last)
			continue;
		if (out != NULL && n < cap) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].pid = entries[i].pid;
			out[n].stamp = clock_us;
			out[n].sm = (unsigned int)entries[i].sm;
		}
		n++;
	}
	*count = n;
	if (n == 0)
		return ERROR_NOT_FOUND;
	return out != NULL && n > cap ? ERROR_INSUFFICIENT_SIZE : SUCCESS;
}
