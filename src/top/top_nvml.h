/* top_nvml.h: mate-top's GPU figures of a process, from NVML when it is there (top_nvml.c). */
#ifndef MATE_TOP_NVML_H_INCLUDED
#define MATE_TOP_NVML_H_INCLUDED

/* One process on one device. */
struct top_gpu {
	long pid;
	int device;                 /* NVML's index */
	int util;                   /* SM utilisation, percent; -1: unknown */
	double memory;              /* bytes it holds on the device */
	unsigned long long stamp;   /* its newest utilisation sample (NVML's microseconds) */
};

/* Opens NVML (MATE_NVML: the library's path, or "none"; default libnvidia-ml.so.1).
 * @return 1 when it is there and has devices, 0 otherwise (no GPU columns). */
int top_nvml_open(void);
/* One sample of every device's processes: their memory and utilisation since the last. */
void top_nvml_sample(void);
/* The devices process pid is on (at most max). @return how many. */
int top_nvml_of(long pid, const struct top_gpu **out, int max);

#endif /* MATE_TOP_NVML_H_INCLUDED */
