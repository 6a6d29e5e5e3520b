/* test.h: the harness of libmate's C unit tests: checks, named cases, and the helpers they share. */
#ifndef MATE_TEST_H_INCLUDED
#define MATE_TEST_H_INCLUDED

/*
 * A test is a file of cases (libarchive's DEFINE_TEST is the model):
 *
 *	DEFINE_TEST(memo)
 *	{
 *		CHECK(...);
 *	}
 *	...
 *	TEST_MAIN()
 *
 * `tests/test_pickle` runs every case in the order the file defines them,
 * `tests/test_pickle memo limits` runs those two, `tests/test_pickle -l`
 * lists the cases. A failed check prints "FILE:LINE: CASE: what failed";
 * the run ends with "N passed, M failed" (tests/check-driver.sh holds every
 * test to that line) and the names of the cases that failed. A test that
 * needs set-up around its cases calls test_main() from its own main().
 *
 * Everything here is static: each test program is one file and its own
 * harness. The helpers (test_slurp, test_tmpdir, test_rmtree,
 * test_capture) return malloc'd memory the caller frees; test_main_tmpdir
 * runs the cases in a temporary folder of their own.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST_UNUSED __attribute__((unused))

struct test_case {
	const char *name;
	void (*fn)(void);
	int line;                       /* where the file defines it: the run order */
	struct test_case *next;
};

static int test_failures TEST_UNUSED;
static int test_checks TEST_UNUSED;
static struct test_case *test_cases TEST_UNUSED;   /* by line, filled by DEFINE_TEST */
static const char *test_case_now TEST_UNUSED;      /* the case running, NULL outside one */

/* Counts one failed check and starts its message: "FILE:LINE: CASE: ". */
static inline void
test_failed_at(const char *file, int line)
{
	test_failures++;
	if (test_case_now != NULL)
		fprintf(stderr, "%s:%d: %s: ", file, line, test_case_now);
	else
		fprintf(stderr, "%s:%d: ", file, line);
}

#define CHECK(cond) do { \
	test_checks++; \
	if (!(cond)) { \
		test_failed_at(__FILE__, __LINE__); \
		fprintf(stderr, "CHECK failed: %s\n", #cond); \
	} \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	test_checks++; \
	if (a_ != b_) { \
		test_failed_at(__FILE__, __LINE__); \
		fprintf(stderr, "%s == %s failed: %lld != %lld\n", #a, #b, a_, b_); \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	test_checks++; \
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) { \
		test_failed_at(__FILE__, __LINE__); \
		fprintf(stderr, "%s == %s failed: \"%s\" != \"%s\"\n", \
		    #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} \
} while (0)

/* CHECK_CONTAINS(haystack, needle): an error message names the right cause. */
#define CHECK_CONTAINS(h, n) do { \
	const char *h_ = (h), *n_ = (n); \
	test_checks++; \
	if (h_ == NULL || strstr(h_, n_) == NULL) { \
		test_failed_at(__FILE__, __LINE__); \
		fprintf(stderr, "\"%s\" does not contain \"%s\"\n", h_ ? h_ : "(null)", n_); \
	} \
} while (0)

/* CHECK_CONTAINS_ALL(haystack, needle, ...): CHECK_CONTAINS of each needle
 * (a check each), as for the lines a report must have. */
#define CHECK_CONTAINS_ALL(h, ...) \
	test_contains_all(__FILE__, __LINE__, (h), (const char *const[]){ __VA_ARGS__, NULL })

static inline void
test_contains_all(const char *file, int line, const char *h, const char *const *needles)
{
	for (; *needles != NULL; needles++) {
		test_checks++;
		if (h == NULL || strstr(h, *needles) == NULL) {
			test_failed_at(file, line);
			fprintf(stderr, "\"%s\" does not contain \"%s\"\n", h ? h : "(null)", *needles);
		}
	}
}

/* Prints "N passed, N failed" and gives the exit status: 1 when a check
 * failed or when none ran (a test that checks nothing cannot pass). */
#define TEST_DONE() ( \
	test_checks == 0 ? fprintf(stderr, "0 checks ran\n") : 0, \
	printf("%d passed, %d failed\n", test_checks - test_failures, test_failures), \
	test_failures == 0 && test_checks > 0 ? 0 : 1)

/* Adds a case to test_cases, kept in the order of the file's lines. */
static inline void
test_register(struct test_case *c)
{
	struct test_case **at = &test_cases;

	while (*at != NULL && (*at)->line < c->line)
		at = &(*at)->next;
	c->next = *at;
	*at = c;
}

/* DEFINE_TEST(name) { body }: a case, run by the name `name`. */
#define DEFINE_TEST(name) \
	static void test_case_fn_##name(void); \
	static struct test_case test_case_##name = { #name, test_case_fn_##name, __LINE__, NULL }; \
	__attribute__((constructor)) static void \
	test_case_reg_##name(void) \
	{ \
		test_register(&test_case_##name); \
	} \
	static void \
	test_case_fn_##name(void)

static inline struct test_case *
test_find(const char *name)
{
	for (struct test_case *c = test_cases; c != NULL; c = c->next)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Runs one case; @return 1 when one of its checks failed. */
static inline int
test_run_case(struct test_case *c)
{
	int before = test_failures;

	fprintf(stderr, "case %s\n", c->name);  /* a crash's log names its case */
	test_case_now = c->name;
	c->fn();
	test_case_now = NULL;
	return test_failures > before;
}

/* The test's main(): runs the cases named in argv (all without one), or
 * lists them (-l). @return the exit status: 0 when every check passed, 1
 * when one failed or none ran, 2 for a case that does not exist or an
 * unknown option. */
static inline int
test_main(int argc, char **argv)
{
	const char *prog = argc > 0 && strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
	    argc > 0 ? argv[0] : "test";
	char failed[1024] = "";
	size_t n = 0;
	int first = 1;

	if (argc > 1 && argv[1][0] == '-') {
		if (strcmp(argv[1], "-l") == 0 && argc == 2) {
			for (struct test_case *c = test_cases; c != NULL; c = c->next)
				printf("%s\n", c->name);
			return 0;
		}
		if (strcmp(argv[1], "--") == 0)
			first = 2;
		else {
			int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;

			fprintf(help ? stdout : stderr, "usage: %s [-l | [--] CASE...]\n", prog);
			return help ? 0 : 2;
		}
	}
	for (int i = first; i < argc; i++)
		if (test_find(argv[i]) == NULL) {
			fprintf(stderr, "%s: no case named \"%s\" (-l lists them)\n", prog, argv[i]);
			return 2;
		}
	for (struct test_case *c = test_cases; c != NULL; c = c->next) {
		int wanted = argc <= first;

		for (int i = first; i < argc && !wanted; i++)
			wanted = strcmp(argv[i], c->name) == 0;
		if (wanted && test_run_case(c) && n + strlen(c->name) + 2 < sizeof(failed))
			n += (size_t)snprintf(failed + n, sizeof(failed) - n, " %s", c->name);
	}
	if (n > 0)
		fprintf(stderr, "failed cases:%s\n", failed);
	return TEST_DONE();
}

/* TEST_MAIN(): a main() that is test_main() alone. */
#define TEST_MAIN() \
	int \
	main(int argc, char **argv) \
	{ \
		return test_main(argc, argv); \
	}

/* ---- helpers shared by the tests -------------------------------------------------- */

/* The whole of the open file fd, from offset 0 and NUL-terminated (its
 * length in *len when len is not NULL, 0 on error). @return malloc'd,
 * NULL on error. */
static inline char *
test_slurp_fd(int fd, size_t *len)
{
	struct stat sb;
	char *buf;
	size_t n = 0;
	ssize_t got = 1;

	if (len != NULL)
		*len = 0;
	if (fstat(fd, &sb) != 0 || (buf = malloc((size_t)sb.st_size + 1)) == NULL)
		return NULL;
	while (n < (size_t)sb.st_size &&
	    (got = pread(fd, buf + n, (size_t)sb.st_size - n, (off_t)n)) > 0)
		n += (size_t)got;
	if (got < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

/* The whole file at path, NUL-terminated (its length in *len when len is
 * not NULL, 0 on error). @return malloc'd, NULL when it cannot be read. */
static inline char *
test_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;

	if (len != NULL)
		*len = 0;
	if (fd < 0)
		return NULL;
	buf = test_slurp_fd(fd, len);
	close(fd);
	return buf;
}

/* The bits of a float32, and the float32 of bits (through memcpy, as
 * aliasing rules want). */
static inline uint32_t
test_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float
test_bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* 1 when p lies in a mapping of the file at path (any mapping of it when p
 * is NULL), as /proc/self/maps lists them; 0 when not; -1 when path or the
 * list cannot be read. */
static inline int
test_mapped_at(const void *p, const char *path)
{
	char real[4096], line[4600];
	FILE *f;
	int in = 0;

	if (realpath(path, real) == NULL || (f = fopen("/proc/self/maps", "r")) == NULL)
		return -1;
	while (!in && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;
		int at = 0;
		char *nl = strchr(line, '\n');

		if (nl != NULL)
			*nl = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || at == 0)
			continue;
		in = strcmp(line + at, real) == 0 &&
		    (p == NULL || ((uintptr_t)p >= lo && (uintptr_t)p < hi));
	}
	fclose(f);
	return in;
}

/* Makes a new empty folder ${TMPDIR:-/tmp}/mate-TAG.XXXXXX. @return its
 * malloc'd path, or NULL (said on stderr) when it cannot. */
static inline char *
test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	size_t len;
	char *path;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	len = strlen(base) + strlen(tag) + sizeof("/mate-.XXXXXX");
	if ((path = malloc(len)) == NULL)
		return NULL;
	snprintf(path, len, "%s/mate-%s.XXXXXX", base, tag);
	if (mkdtemp(path) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", path, strerror(errno));
		free(path);
		return NULL;
	}
	return path;
}

/* The entries of folder dir but . and .. (to see that nothing was left
 * behind). @return their number, 0 when dir cannot be read. */
static inline int
test_count_entries(const char *dir)
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

/* rm -rf below the folder open as fd (closed here), without a stat per
 * entry (a recorder test removes 100,000 files). @return 0, or -1 when
 * something stayed. */
static inline int
test_rm_below(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int st = 0;

	if (d == NULL) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		int sub;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_type != DT_DIR && unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || test_rm_below(sub) != 0 ||
		    unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
			st = -1;
	}
	closedir(d);
	return st;
}

/* Removes path and, for a folder, everything under it (symbolic links are
 * removed, not followed). @return 0 (also when path does not exist), or -1
 * when something stayed. */
static inline int
test_rmtree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), st;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return errno == ENOTDIR || errno == ELOOP ? unlink(path) : -1;
	}
	st = test_rm_below(fd);
	return rmdir(path) == 0 ? st : -1;
}

/* Runs cmd with sh -c and captures its standard output (its standard error
 * goes where the test's goes). *status gets its exit status, 128 + the
 * signal when one killed it, -1 when it could not run. @return the output,
 * malloc'd and NUL-terminated, or NULL when it could not run. */
static inline char *
test_capture(const char *cmd, int *status)
{
	FILE *p;
	char *buf = NULL, *grown;
	size_t n = 0, cap = 0, got;
	int st;

	*status = -1;
	fflush(NULL);
	if ((p = popen(cmd, "r")) == NULL)
		return NULL;
	do {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			if ((grown = realloc(buf, cap)) == NULL) {
				free(buf);
				pclose(p);
				return NULL;
			}
			buf = grown;
		}
		got = fread(buf + n, 1, cap - n - 1, p);
		n += got;
	} while (got > 0);
	buf[n] = '\0';
	st = pclose(p);
	if (st != -1)
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
	return buf;
}

/* Seconds on clock (CLOCK_MONOTONIC for a wall time, CLOCK_THREAD_CPUTIME_ID
 * for what the calling thread spent). */
static inline double
test_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* How long a test waits for a state before it fails, in seconds:
 * $MATE_TEST_WAIT, 60 by default (long enough for a sanitizer build on a
 * loaded machine). */
static inline double
test_wait_seconds(void)
{
	const char *s = getenv("MATE_TEST_WAIT");
	double v = s != NULL ? strtod(s, NULL) : 0;

	return v > 0 ? v : 60.0;
}

/* TEST_WAIT_UNTIL(cond): evaluates cond every 10 ms until it holds or
 * test_wait_seconds() have passed; the value is cond's last. Every test
 * that depends on time waits for the state it checks, never a fixed time. */
#define TEST_WAIT_UNTIL(cond) __extension__({ \
	double test_wait_end_ = test_seconds(CLOCK_MONOTONIC) + test_wait_seconds(); \
	int test_wait_ok_; \
	while (!(test_wait_ok_ = !!(cond)) && test_seconds(CLOCK_MONOTONIC) < test_wait_end_) \
		usleep(10000); \
	test_wait_ok_; \
})

/* A main() for cases that share one temporary folder: makes
 * ${TMPDIR:-/tmp}/mate-TAG.XXXXXX, its path in *dir while test_main() runs
 * them, then removes it. @return test_main()'s status, 99 when the folder
 * cannot be made. */
static inline int
test_main_tmpdir(int argc, char **argv, const char *tag, char **dir)
{
	int st;

	if ((*dir = test_tmpdir(tag)) == NULL)
		return 99;
	st = test_main(argc, argv);
	if (test_rmtree(*dir) != 0)
		fprintf(stderr, "could not remove %s\n", *dir);
	free(*dir);
	*dir = NULL;
	return st;
}

/* TEST_MAIN_TMPDIR("tag", dir): a main() that is test_main_tmpdir() alone,
 * for a file's `static char *dir`. */
#define TEST_MAIN_TMPDIR(tag, dir) \
	int \
	main(int argc, char **argv) \
	{ \
		return test_main_tmpdir(argc, argv, tag, &dir); \
	}

#ifdef MATE_CORE_H_INCLUDED
/* For a test that includes mate_core.h first: whether the scalar values a
 * and b, of one kind, are equal (bools and ints by value, floats to the
 * bit, strs and bytes byte for byte, dtypes). @return 1 or 0, or -1 when
 * the kind is not one of these (the caller's to compare). */
static inline int
test_same_scalar(const mate_value *a, const mate_value *b)
{
	size_t la, lb;
	const char *sa, *sb;
	double fa, fb;

	switch (mate_value_kind_of(a)) {
	case MATE_V_BOOL:
	case MATE_V_INT:
		return mate_value_get_int(a) == mate_value_get_int(b);
	case MATE_V_FLOAT:
		fa = mate_value_get_float(a);
		fb = mate_value_get_float(b);
		return memcmp(&fa, &fb, sizeof(fa)) == 0;
	case MATE_V_STR:
	case MATE_V_BYTES:
		sa = mate_value_get_str(a, &la);
		sb = mate_value_get_str(b, &lb);
		return la == lb && memcmp(sa, sb, la) == 0;
	case MATE_V_DTYPE:
		return mate_value_get_dtype(a) == mate_value_get_dtype(b);
	default:
		return -1;
	}
}
#endif

#ifdef MATE_RECORD_H_INCLUDED
/* For a test that includes mate_record.h first: records at level (0 stops)
 * with the text log to /dev/null, an instruction log at the template ilog
 * (or none) and live events when monitor is "1" (or none), and checks that
 * the configuration took. */
static inline void
test_record(int level, const char *ilog, const char *monitor)
{
	struct mate_config cfg;
	mate_error err;

	mate_config_default(&cfg);
	cfg.level = level;
	cfg.logdest = "/dev/null";
	cfg.instruction_log = ilog;
	cfg.monitor = monitor;
	CHECK_EQ_INT(mate_configure(&cfg, &err), MATE_OK);
}
#endif

#ifdef __CUDA_RUNTIME_H__
/* For a test that includes cuda_runtime.h first: exits 77 (skipped) when
 * the machine has no CUDA device. */
static inline void
test_need_cuda_device(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no CUDA device\n");
		exit(77);
	}
}
#endif

#endif /* MATE_TEST_H_INCLUDED */
