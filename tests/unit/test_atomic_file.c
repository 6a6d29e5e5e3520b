/* test_atomic_file.c: atomic file output (lib/core/error.c): a file appears under its name only when complete, replaces an older one, and leaves no temporary names behind; temporary files are new ones. */
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

static char *dir;   /* made and removed by main() */

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

/* The file at path holds exactly text. */
static int
holds(const char *path, const char *text)
{
	char *got = test_slurp(path, NULL);
	int same = got != NULL && strcmp(got, text) == 0;

	if (!same)
		fprintf(stderr, "%s holds \"%s\", not \"%s\"\n", path, got ? got : "(nothing)", text);
	free(got);
	return same;
}

static char *
in_dir(const char *name)
{
	static char path[2][512];
	static int k;
	char *p = path[k++ % 2];

	snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
	return p;
}

/* A new file in an empty folder; then the same name again: the new content
 * replaces the old. */
DEFINE_TEST(replace)
{
	mate_error err;

	CHECK_EQ_INT(test_count_entries(dir), 0);
	CHECK_EQ_INT(write_file(in_dir("out.bin"), "first", &err), MATE_OK);
	CHECK(holds(in_dir("out.bin"), "first"));
	CHECK_EQ_INT(write_file(in_dir("out.bin"), "second, longer", &err), MATE_OK);
	CHECK(holds(in_dir("out.bin"), "second, longer"));
	CHECK_EQ_INT(test_count_entries(dir), 1);
	unlink(in_dir("out.bin"));
}

/* While it is being written, nothing is under the name; abort leaves nothing. */
DEFINE_TEST(abort)
{
	mate_atomic_file af;
	mate_error err;

	CHECK_EQ_INT(mate_atomic_open(&af, in_dir("out.bin"), &err), MATE_OK);
	CHECK(mate_write_all(af.fd, "partial", 7) == 0);
	CHECK(access(in_dir("out.bin"), F_OK) != 0);
	mate_atomic_abort(&af);
	CHECK(access(in_dir("out.bin"), F_OK) != 0);
	CHECK_EQ_INT(test_count_entries(dir), 0);
}

/* A name taken by a directory: an error, and no temporary left. */
DEFINE_TEST(name_taken)
{
	mate_error err;

	CHECK(mkdir(in_dir("taken"), 0755) == 0);
	mate_error_clear(&err);
	CHECK(write_file(in_dir("taken"), "x", &err) != MATE_OK);
	CHECK(err.message[0] != '\0');
	CHECK_EQ_INT(test_count_entries(dir), 1);
	rmdir(in_dir("taken"));
}

/* A symlink, a FIFO or a directory at the name is refused, named in the
 * message, and left as it was (the link's target too); nothing else stays. */
DEFINE_TEST(special_refused)
{
	static const char *const kinds[] = { "a symbolic link", "a FIFO", "a directory" };
	mate_error err;

	CHECK(write_file(in_dir("target"), "the target", &err) == MATE_OK);
	for (int k = 0; k < 3; k++) {
		struct stat st;
		char want[600];

		CHECK(k == 0 ? symlink(in_dir("target"), in_dir("name")) == 0 :
		    k == 1 ? mkfifo(in_dir("name"), 0600) == 0 : mkdir(in_dir("name"), 0700) == 0);
		mate_error_clear(&err);
		CHECK_EQ_INT(write_file(in_dir("name"), "new", &err), MATE_ERR_ARGUMENT);
		snprintf(want, sizeof(want), "%s is %s: not replaced", in_dir("name"), kinds[k]);
		CHECK_STR(err.message, want);
		CHECK(lstat(in_dir("name"), &st) == 0);
		CHECK(k == 0 ? S_ISLNK(st.st_mode) : k == 1 ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode));
		CHECK(holds(in_dir("target"), "the target"));
		CHECK_EQ_INT(test_count_entries(dir), 2);
		if (k == 2)
			rmdir(in_dir("name"));
		else
			unlink(in_dir("name"));
	}
	unlink(in_dir("target"));
}

/* A folder that does not exist: a clear error. */
DEFINE_TEST(no_folder)
{
	mate_error err;

	mate_error_clear(&err);
	CHECK(write_file(in_dir("missing/out.bin"), "x", &err) != MATE_OK);
	CHECK_CONTAINS(err.message, "missing");
	CHECK_EQ_INT(test_count_entries(dir), 0);
}

/* A relative name, in the current folder. */
DEFINE_TEST(relative)
{
	mate_error err;

	CHECK(chdir(dir) == 0);
	CHECK_EQ_INT(write_file("rel.bin", "here", &err), MATE_OK);
	CHECK(holds("rel.bin", "here"));
	unlink("rel.bin");
	CHECK(chdir("/") == 0);
	CHECK_EQ_INT(test_count_entries(dir), 0);
}

/* mate_tmp_create(): a new regular file beside the name, under a name no
 * two calls share, so nothing planted beforehand is opened. */
DEFINE_TEST(tmp_create)
{
	char a[600], b[600];
	struct stat st;
	int fa = mate_tmp_create(a, in_dir("out.jsonl")), fb;

	fb = mate_tmp_create(b, in_dir("out.jsonl"));
	CHECK(fa >= 0 && fb >= 0);
	CHECK(strcmp(a, b) != 0);
	CHECK(strncmp(a, in_dir("out.jsonl.tmp."), strlen(in_dir("out.jsonl.tmp."))) == 0);
	CHECK(fstat(fa, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
	CHECK_EQ_INT(test_count_entries(dir), 2);
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
	CHECK_EQ_INT(test_count_entries(dir), 0);
}

TEST_MAIN_TMPDIR("atomic-test", dir)
