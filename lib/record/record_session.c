/* record_session.c: mate-record's library side: where the preload library is, the session folder of per-process summaries, and the dumps a session made. */
#include "mate_private.h"
#include "mate_record.h"
#include "record_summary.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MATE_PKGLIBDIR
#define MATE_PKGLIBDIR "/usr/local/lib/mate"
#endif

#define MAX_ENTRIES 1000000

struct names {
	char **v;
	size_t n;
};

struct mate_record_session {
	char dir[PATH_MAX];
	char *dump_dir;
	struct names before;     /* entries of dump_dir at the start, sorted */
};

/* ---- paths -------------------------------------------------------------------------------- */

int
mate_record_libmate_path(char *buf, size_t len, mate_error *err)
{
	Dl_info info;
	char real[PATH_MAX];

	if (dladdr((void *)mate_version_string, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, ".so") == NULL)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED,
		    "libmate is linked statically into this program; mate-record needs the shared libmate");
	if (realpath(info.dli_fname, real) == NULL)
		return mate_set_errno(err, errno, "cannot resolve", info.dli_fname);
	if (strlen(real) >= len)
		return mate_set_error(err, MATE_ERR_LIMIT, "path too long: %s", real);
	memcpy(buf, real, strlen(real) + 1);
	return MATE_OK;
}

static int
try_path(char *buf, size_t len, const char *dir, const char *rest)
{
	if ((size_t)snprintf(buf, len, "%s%s", dir, rest) >= len)
		return 0;
	return access(buf, R_OK) == 0;
}

/* The ELF header of path (0), or an errno; EINVAL for a short or non-ELF file. */
static int
elf_header(const char *path, Elf64_Ehdr *h)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;
	struct stat sb;

	if (fd < 0)
		return errno;
	rc = fstat(fd, &sb) != 0 ? errno : !S_ISREG(sb.st_mode) ? EINVAL :
	    -mate_pread_all(fd, h, sizeof(*h), 0);
	close(fd);
	if (rc == EIO || (rc == 0 && memcmp(h->e_ident, ELFMAG, SELFMAG) != 0))
		rc = EINVAL;
	return rc;
}

/* The dynamic loader ignores an LD_PRELOAD entry it cannot load, with a
 * line on stderr, and runs the program unrecorded: refuse such a file here.
 * It must be a 64-bit shared object for the machine mate-record runs on. */
static int
check_loadable(const char *path, mate_error *err)
{
	Elf64_Ehdr h, self;
	int e;

	if ((e = elf_header(path, &h)) != 0 && e != EINVAL)
		return mate_set_errno(err, e, "cannot read", path);
	if (e == EINVAL || h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_type != ET_DYN)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: not a 64-bit ELF shared object; "
		    "the program would run unrecorded", path);
	if (elf_header("/proc/self/exe", &self) == 0 && self.e_machine != h.e_machine)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: a shared object for another "
		    "machine (ELF e_machine %u, this one %u); the program would run unrecorded",
		    path, (unsigned)h.e_machine, (unsigned)self.e_machine);
	return MATE_OK;
}

int
mate_record_preload_path(char *buf, size_t len, mate_error *err)
{
	const char *env = getenv("MATE_RECORD_PRELOAD");
	char lib[PATH_MAX], *slash;

	if (env != NULL && *env != '\0') {
		if (try_path(buf, len, env, ""))
			return check_loadable(buf, err);
		return mate_set_errno(err, errno ? errno : ENOENT, "MATE_RECORD_PRELOAD", env);
	}
	if (mate_record_libmate_path(lib, sizeof(lib), NULL) == MATE_OK &&
	    (slash = strrchr(lib, '/')) != NULL) {
		*slash = '\0';
		if (try_path(buf, len, lib, "/mate/libmate-preload.so") ||
		    try_path(buf, len, lib, "/libmate-preload.so"))
			return MATE_OK;
	}
	if (try_path(buf, len, MATE_PKGLIBDIR, "/libmate-preload.so"))
		return MATE_OK;
	return mate_set_error(err, MATE_ERR_UNSUPPORTED, "cannot find libmate-preload.so (looked "
	    "beside %s and in %s; set MATE_RECORD_PRELOAD)", lib, MATE_PKGLIBDIR);
}

/* ---- listing the dump folder ------------------------------------------------------------------- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
names_free(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
	memset(n, 0, sizeof(*n));
}

/* The sorted entry names of dir (none when it does not exist). */
static int
list_dir(const char *dir, struct names *out, mate_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	if (d == NULL)
		return errno == ENOENT || errno == ENOTDIR ? MATE_OK :
		    mate_set_errno(err, errno, "cannot list", dir);
	while ((de = readdir(d)) != NULL && out->n < MAX_ENTRIES) {
		if (de->d_name[0] == '.')
			continue;
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **v = realloc(out->v, ncap * sizeof(*v));
			if (v == NULL)
				break;
			out->v = v;
			cap = ncap;
		}
		if ((out->v[out->n] = strdup(de->d_name)) == NULL)
			break;
		out->n++;
	}
	closedir(d);
	if (de != NULL && out->n < MAX_ENTRIES) {
		names_free(out);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing %s", dir);
	}
	if (out->n > 1)		/* qsort(NULL, 0, ...) is undefined */
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
	return MATE_OK;
}

/* Bytes of the regular files in dir (not recursive). */
static uint64_t
dir_bytes(const char *dir)
{
	struct names n;
	uint64_t total = 0;
	char path[PATH_MAX];
	struct stat sb;

	if (list_dir(dir, &n, NULL) != MATE_OK)
		return 0;
	for (size_t i = 0; i < n.n; i++)
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, n.v[i]) < sizeof(path) &&
		    stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			total += (uint64_t)sb.st_size;
	names_free(&n);
	return total;
}

/* ---- the session --------------------------------------------------------------------------------- */

mate_record_session *
mate_record_session_new(const char *dump_dir, mate_error *err)
{
	mate_record_session *s = calloc(1, sizeof(*s));
	const char *tmp = getenv("TMPDIR");

	if (s == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s/mate-record-XXXXXX", tmp) >= sizeof(s->dir) ||
	    mkdtemp(s->dir) == NULL) {
		mate_set_errno(err, errno ? errno : ENAMETOOLONG, "cannot make a folder in", tmp);
		free(s);
		return NULL;
	}
	if (dump_dir != NULL && ((s->dump_dir = strdup(dump_dir)) == NULL ||
	    list_dir(dump_dir, &s->before, err) != MATE_OK)) {
		if (s->dump_dir == NULL)
			mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		mate_record_session_free(s);
		return NULL;
	}
	return s;
}

const char *
mate_record_session_dir(const mate_record_session *s)
{
	return s != NULL ? s->dir : NULL;
}

static void
add_summary(struct mate_record_totals *t, const char *path)
{
	struct mate_rec_summary sum;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (mate_pread_all(fd, &sum, sizeof(sum), 0) == 0 &&
	    memcmp(sum.magic, MATE_SUMMARY_MAGIC, 8) == 0) {
		if (sum.calls || sum.transfers || sum.launches || sum.allocations)
			t->processes++;   /* processes that recorded something */
		t->calls += sum.calls;
		t->transfers += sum.transfers;
		t->transfer_bytes += sum.transfer_bytes;
		t->launches += sum.launches;
		t->allocations += sum.allocations;
		if (sum.peak_bytes > t->peak_bytes)
			t->peak_bytes = sum.peak_bytes;
		if (sum.flags & MATE_SUMMARY_STATIC_CUDART)
			t->static_cudart = 1;
		if (sum.flags & MATE_SUMMARY_NO_RECORDER)
			t->no_recorder = 1;
	}
	close(fd);
}

static void
add_dumps(mate_record_session *s, struct mate_record_totals *t)
{
	struct names now;
	char path[PATH_MAX];
	struct stat sb;

	if (s->dump_dir == NULL || list_dir(s->dump_dir, &now, NULL) != MATE_OK)
		return;
	for (size_t i = 0; i < now.n; i++) {
		if (s->before.n > 0 && bsearch(&now.v[i], s->before.v, s->before.n,
		    sizeof(*s->before.v), cmp_str) != NULL)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", s->dump_dir, now.v[i]) >= sizeof(path) ||
		    stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
			continue;
		t->dumps++;
		t->dump_bytes += dir_bytes(path);
	}
	names_free(&now);
}

int
mate_record_session_totals(mate_record_session *s, struct mate_record_totals *t, mate_error *err)
{
	struct names files;
	char path[PATH_MAX];
	int rc;

	memset(t, 0, sizeof(*t));
	if ((rc = list_dir(s->dir, &files, err)) != MATE_OK)
		return rc;
	for (size_t i = 0; i < files.n; i++)
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", s->dir, files.v[i]) < sizeof(path))
			add_summary(t, path);
	names_free(&files);
	add_dumps(s, t);
	return MATE_OK;
}

void
mate_record_session_free(mate_record_session *s)
{
	struct names files;
	char path[PATH_MAX];

	if (s == NULL)
		return;
	if (list_dir(s->dir, &files, NULL) == MATE_OK) {
		for (size_t i = 0; i < files.n; i++)
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", s->dir, files.v[i]) < sizeof(path))
				unlink(path);
		names_free(&files);
	}
	rmdir(s->dir);
	names_free(&s->before);
	free(s->dump_dir);
	free(s);
}
