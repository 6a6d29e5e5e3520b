/* record_summary.h: the per-process summary file the preload interposer keeps and mate-record reads (private). */
#ifndef MATE_RECORD_SUMMARY_H_INCLUDED
#define MATE_RECORD_SUMMARY_H_INCLUDED

#include <stdint.h>

/* The environment between mate-record and its preload library. */
#define MATE_ENV_SUMMARY  "MATE_RECORD_SUMMARY"   /* folder of the summary files */
#define MATE_ENV_LIBMATE  "MATE_RECORD_LIBMATE"   /* libmate.so for the preload to load */
#define MATE_ENV_ROOT_PID "MATE_RECORD_ROOT_PID"  /* the process mate-record started */
#define MATE_ENV_MEMLOG   "MATE_MEMLOG"           /* CSV path template (%i: pid) */
#define MATE_ENV_MEMLOG_FORMAT "MATE_MEMLOG_FORMAT" /* the CSV's spelling: rmm or epoch */

#define MATE_SUMMARY_MAGIC "MATESUM1"

/* "<folder>/<pid>.sum": one per process, mapped shared and updated with
 * atomic operations as the process runs, so that it survives exec(), a
 * crash and _exit(). An exec()ed image of the same process adds to it. */
struct mate_rec_summary {
	char magic[8];
	int64_t pid;
	uint64_t calls;            /* API calls given to the recorder */
	uint64_t transfers;        /* cudaMemcpy* calls */
	uint64_t transfer_bytes;
	uint64_t launches;         /* cudaLaunchKernel calls */
	uint64_t allocations;      /* device allocations logged */
	uint64_t peak_bytes;       /* peak live allocated bytes */
	uint64_t flags;            /* MATE_SUMMARY_* */
	uint64_t reserved[7];
};

enum {
	MATE_SUMMARY_STATIC_CUDART = 1,   /* a static CUDA runtime was seen: not recorded */
	MATE_SUMMARY_NO_RECORDER = 2      /* libmate could not be loaded */
};

#endif /* MATE_RECORD_SUMMARY_H_INCLUDED */
