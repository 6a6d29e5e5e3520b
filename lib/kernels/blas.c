/* blas.c: OpenBLAS, opened with dlopen() when a kernel first needs a GEMM rather than linked into libmate. */
#include "mate_private.h"
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Why not link it: OpenBLAS starts a thread per CPU in its constructor, and
 * those threads spin (sched_yield) for a while. libmate is loaded into the
 * programs it records and into every mate tool; none of them should pay for
 * a BLAS it never calls, nor get OpenBLAS's cblas_* symbols in its global
 * scope beside its own BLAS. The library is the one configure found
 * (MATE_BLAS_SONAME), or $MATE_BLAS; its symbols are looked up in it alone,
 * so a program's own BLAS, or mate-record's interposed one, is never taken
 * instead.
 */

#ifndef MATE_BLAS_SONAME
#define MATE_BLAS_SONAME "libopenblas.so.0"
#endif

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static struct mate_blas blas_table;
static int blas_ok;
static char blas_why[300];
static int blas_from_env;    /* the library is $MATE_BLAS */

/* The library: $MATE_BLAS (a path or soname of another CBLAS with the
 * Fortran sgemm_/dgemm_ too, such as MKL's libmkl_rt.so) or configure's. */
static const char *
blas_name(void)
{
	const char *e = getenv("MATE_BLAS");

	blas_from_env = e != NULL && e[0] != '\0';
	return blas_from_env ? e : MATE_BLAS_SONAME;
}

static void
blas_load(void)
{
	const char *name = blas_name();
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (h == NULL) {
		const char *e = dlerror();
		snprintf(blas_why, sizeof(blas_why), "%s", e != NULL ? e : name);
		return;
	}
#define GET(f) \
	if ((*(void **)&blas_table.f = dlsym(h, #f)) == NULL && missing == NULL) \
		missing = #f
	GET(cblas_sgemm);
	GET(cblas_dgemm);
	GET(sgemm_);
	GET(dgemm_);
#undef GET
	if (missing != NULL) {
		snprintf(blas_why, sizeof(blas_why), "%s has no %s", name, missing);
		return;   /* the handle stays open: others may hold the library too */
	}
	blas_ok = 1;
}

const struct mate_blas *
mate_blas(mate_error *err)
{
	pthread_once(&blas_once, blas_load);
	if (blas_ok)
		return &blas_table;
	if (blas_from_env)
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "the CPU GEMMs cannot use MATE_BLAS: %s",
		    blas_why);
	else
		mate_set_error(err, MATE_ERR_UNSUPPORTED, "the CPU GEMMs need OpenBLAS, which cannot "
		    "be loaded: %s (on Debian: apt-get install libopenblas0)", blas_why);
	return NULL;
}
