/* test_atomic_file.c: atomic file output (lib/core/error.c): a file appears under its name only when complete, replaces an older one, and leaves no temporary names behind. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mate_private.h"
#include "test.h"

static char dir[256];

/* Entries in dir other than . and .. */
static int
entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d != NULL)
		closedir(d);
	return n;
}

static int
write_file(const char *path, const char *text, mate_error *err)
{
	mate_atomic_file af;
	int rc = mate_atomic_open(&af, path, err);

	if (rc != MATE_OK)
		return rc;
	if (mate_write_all(af.fd, text, strlen(text)) != 0) {
		mate_atomic_abort(&af);
		return MATE_ERR_IO;
	}
	return mate_atomic_commit(&af, err);
}

static char *
slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

int
main(void)
{
	char path[300], sub[300];
	mate_atomic_file af;
	mate_error err;

	snprintf(dir, sizeof(dir), "%s/atomic-test.%ld", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	    (long)getpid());
	CHECK(mkdir(dir, 0755) == 0);
	snprintf(path, sizeof(path), "%s/out.bin", dir);

	/* a new file; then the same name again: the new content replaces the old */
	CHECK_EQ_INT(write_file(path, "first", &err), MATE_OK);
	CHECK_STR(slurp(path), "first");
	CHECK_EQ_INT(write_file(path, "second, longer", &err), MATE_OK);
	CHECK_STR(slurp(path), "second, longer");
	CHECK_EQ_INT(entries(), 1);

	/* while it is being written, nothing is under the name; abort leaves nothing */
	unlink(path);
	CHECK_EQ_INT(mate_atomic_open(&af, path, &err), MATE_OK);
	CHECK(mate_write_all(af.fd, "partial", 7) == 0);
	CHECK(access(path, F_OK) != 0);
	mate_atomic_abort(&af);
	CHECK(access(path, F_OK) != 0);
	CHECK_EQ_INT(entries(), 0);

	/* a name taken by a directory: an error, and no temporary left */
	snprintf(sub, sizeof(sub), "%s/taken", dir);
	CHECK(mkdir(sub, 0755) == 0);
	mate_error_clear(&err);
	CHECK(write_file(sub, "x", &err) != MATE_OK);
	CHECK(err.message[0] != '\0');
	CHECK_EQ_INT(entries(), 1);
	rmdir(sub);

	/* a folder that does not exist: a clear error */
	snprintf(sub, sizeof(sub), "%s/missing/out.bin", dir);
	mate_error_clear(&err);
	CHECK(write_file(sub, "x", &err) != MATE_OK);
	CHECK_CONTAINS(err.message, "missing");
	CHECK_EQ_INT(entries(), 0);

	/* a relative name, in the current folder */
	CHECK(chdir(dir) == 0);
	CHECK_EQ_INT(write_file("rel.bin", "here", &err), MATE_OK);
	CHECK_STR(slurp("rel.bin"), "here");
	unlink("rel.bin");
	CHECK(chdir("/") == 0);
	CHECK_EQ_INT(entries(), 0);
	rmdir(dir);
	return TEST_DONE();
}
