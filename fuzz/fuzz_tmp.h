/* fuzz_tmp.h: a private scratch folder for the fuzz targets that write files (fuzz_find_bug, fuzz_ring): made once, emptied before each input, removed at exit. */
#ifndef MATE_FUZZ_TMP_H_INCLUDED
#define MATE_FUZZ_TMP_H_INCLUDED

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char fuzz_tmp[256];

static int
fuzz_tmp_remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes the folder and what it holds. */
static void
fuzz_tmp_remove(void)
{
	nftw(fuzz_tmp, fuzz_tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes $TMPDIR/NAME-XXXXXX (removed at exit); aborts when it cannot. */
static void
fuzz_tmp_make(const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(fuzz_tmp, sizeof(fuzz_tmp), "%s/%s-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp", name);
	if (mkdtemp(fuzz_tmp) == NULL)
		abort();
	atexit(fuzz_tmp_remove);
}

/* Empties the folder for the next input. */
static void
fuzz_tmp_empty(void)
{
	fuzz_tmp_remove();
	mkdir(fuzz_tmp, 0700);
}

#endif /* MATE_FUZZ_TMP_H_INCLUDED */
