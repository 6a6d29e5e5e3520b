/* interpose.c: the core of libmate-preload.so: loading libmate out of the program's sight, finding the real functions, the summary file, fork and exit. */
#include "interpose_private.h"
#include "logfile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MATE_LIBDIR
#define MATE_LIBDIR "/usr/local/lib"
#endif

struct ip_api mate_ip_api;
int mate_ip_want;
int mate_ip_level;
int mate_ip_args_level;
int mate_ip_state;
mate_memlog *mate_ip_memlog;
struct mate_rec_summary *mate_ip_sum;
__thread int mate_ip_depth IP_TLS;
__thread int mate_ip_inside IP_TLS;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *libmate;
static char *csv_template;          /* MATE_MEMLOG as given */

/* ---- finding the real functions ------------------------------------------------------- */

void *
mate_ip_sibling(const void *addr, const char *name)
{
	Dl_info info;
	void *h, *f = NULL;

	if (addr == NULL || dladdr(addr, &info) == 0 || info.dli_fname == NULL ||
	    info.dli_fname[0] != '/')
		return NULL;
	if ((h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) == NULL)
		return NULL;
	f = dlsym(h, name);
	dlclose(h);
	return f;
}

#define MAX_OBJECTS 512

struct objects {
	char *names[MAX_OBJECTS];
	int n;
	uintptr_t self;
	int libcuda, libcudart;
};

/* Collects the paths of the loaded objects (dlopen() is not safe inside the walk). */
static int
collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects *o = arg;
	const char *name = info->dlpi_name;

	(void)size;
	if (name == NULL || name[0] != '/' || info->dlpi_addr == o->self)
		return 0;
	if (strstr(name, "/libcuda.so") != NULL)
		o->libcuda = 1;
	if (strstr(name, "/libcudart.so") != NULL)
		o->libcudart = 1;
	if (o->n < MAX_OBJECTS && (o->names[o->n] = strdup(name)) != NULL)
		o->n++;
	return 0;
}

static void
objects_list(struct objects *o)
{
	Dl_info info;

	memset(o, 0, sizeof(*o));
	if (dladdr((void *)mate_ip_sibling, &info) != 0)
		o->self = (uintptr_t)info.dli_fbase;
	dl_iterate_phdr(collect, o);
}

static void
objects_free(struct objects *o)
{
	for (int i = 0; i < o->n; i++)
		free(o->names[i]);
}

static void *
search_all(const char *name, void *self)
{
	struct objects o;
	void *f = NULL;

	objects_list(&o);
	for (int i = 0; i < o.n && f == NULL; i++) {
		void *h = dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h == NULL)
			continue;
		f = dlsym(h, name);
		if (f == self)
			f = NULL;
		dlclose(h);
	}
	objects_free(&o);
	return f;
}

void *
mate_ip_lookup(const char *name, void *self, void *caller)
{
	void *f;

	mate_ip_inside++;
	f = dlsym(RTLD_NEXT, name);
	if (f == self)
		f = NULL;
	if (f == NULL && (f = mate_ip_sibling(caller, name)) == self)
		f = NULL;
	if (f == NULL)
		f = search_all(name, self);
	mate_ip_inside--;
	return f;
}

void *
mate_ip_resolve(const char *name, void *self, void *caller)
{
	void *f = mate_ip_lookup(name, self, caller);

	if (f == NULL)
		mate_warn("cannot find the real %s; the call does nothing", name);
	return f;
}

/* ---- the summary file ----------------------------------------------------------------- */

static struct mate_rec_summary *
summary_map(void)
{
	const char *dir = getenv(MATE_ENV_SUMMARY);
	char path[4096];
	struct mate_rec_summary *s;
	struct stat sb;
	int fd;

	if (dir == NULL || *dir == '\0')
		return NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%ld.sum", dir, (long)getpid()) >= sizeof(path))
		return NULL;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return NULL;
	if (fstat(fd, &sb) != 0 || ((size_t)sb.st_size < sizeof(*s) &&
	    ftruncate(fd, (off_t)sizeof(*s)) != 0)) {
		close(fd);
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return NULL;
	if (memcmp(s->magic, MATE_SUMMARY_MAGIC, 8) != 0) {
		s->pid = (int64_t)getpid();
		memcpy(s->magic, MATE_SUMMARY_MAGIC, 8);
	}
	return s;
}

void
mate_ip_note_peak(void)
{
	struct mate_memlog_stats st;
	struct mate_rec_summary *s = mate_ip_sum;
	uint64_t old;

	if (s == NULL || mate_ip_memlog == NULL)
		return;
	mate_ip_api.memlog_get_stats(mate_ip_memlog, &st);
	old = __atomic_load_n(&s->peak_bytes, __ATOMIC_RELAXED);
	while (st.peak_bytes > old && !__atomic_compare_exchange_n(&s->peak_bytes, &old,
	    st.peak_bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* ---- loading libmate -------------------------------------------------------------------- */

/* The CSV path of this process: the template, with ".<pid>" put before
 * the extension in processes other than the one mate-record started when
 * the template has no %i. */
static char *
memlog_path(const char *tmpl)
{
	const char *root = getenv(MATE_ENV_ROOT_PID), *slash, *dot;
	char *out;
	size_t n = strlen(tmpl), at;

	if (strstr(tmpl, "%i") != NULL || root == NULL || atol(root) == (long)getpid())
		return strdup(tmpl);
	slash = strrchr(tmpl, '/');
	dot = strrchr(slash ? slash : tmpl, '.');
	at = dot != NULL && dot != (slash ? slash + 1 : tmpl) ? (size_t)(dot - tmpl) : n;
	if ((out = malloc(n + 4)) == NULL)
		return NULL;
	memcpy(out, tmpl, at);
	memcpy(out + at, ".%i", 3);
	memcpy(out + at + 3, tmpl + at, n - at + 1);
	return out;
}

#define API(field, sym) (*(void **)&mate_ip_api.field = dlsym(libmate, sym))

static int
resolve_api(void)
{
	API(call_begin, "mate_call_begin");
	API(call_tensor, "mate_call_tensor");
	API(call_int, "mate_call_int");
	API(call_float, "mate_call_float");
	API(call_str, "mate_call_str");
	API(call_enum, "mate_call_enum");
	API(call_dtype, "mate_call_dtype");
	API(call_value, "mate_call_value");
	API(value_object, "mate_value_object");
	API(value_int, "mate_value_int");
	API(value_tuple, "mate_value_tuple");
	API(value_append, "mate_value_append");
	API(call_ready, "mate_call_ready");
	API(call_end, "mate_call_end");
	API(call_fail, "mate_call_fail");
	API(record_level, "mate_record_level");
	API(memlog_new, "mate_memlog_new");
	API(memlog_allocate, "mate_memlog_allocate");
	API(memlog_deallocate, "mate_memlog_deallocate");
	API(memlog_failure, "mate_memlog_failure");
	API(memlog_get_stats, "mate_memlog_get_stats");
	API(memlog_error, "mate_memlog_error");
	API(memlog_push, "mate_memlog_push");
	API(memlog_pop, "mate_memlog_pop");
	API(memlog_profile, "mate_memlog_profile");
	API(memlog_fork_prepare, "mate_memlog_fork_prepare");
	API(memlog_fork_parent, "mate_memlog_fork_parent");
	API(memlog_fork_child, "mate_memlog_fork_child");
	API(memlog_format_named, "mate_memlog_format_named");
	API(memlog_set_format, "mate_memlog_set_format");
	API(elf_cuda_runtime, "mate_elf_cuda_runtime");
	API(memory_source, "mate_event_memory_source");
	API(ring_flush, "mate_ring_flush");
	API(event_rank, "mate_event_rank");
	return mate_ip_api.memlog_new != NULL && mate_ip_api.memlog_fork_child != NULL &&
	    mate_ip_api.memlog_profile != NULL && mate_ip_api.memlog_error != NULL;
}

static int
recorder_complete(void)
{
	const struct ip_api *a = &mate_ip_api;

	return a->call_begin && a->call_tensor && a->call_int && a->call_float && a->call_str &&
	    a->call_enum && a->call_dtype && a->call_ready && a->call_end && a->call_fail &&
	    a->record_level;
}

static void *
open_libmate(void)
{
	const char *env = getenv(MATE_ENV_LIBMATE);
	void *h = NULL;

	if (env != NULL && *env != '\0')
		h = dlopen(env, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen(MATE_LIBMATE_SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen(MATE_LIBDIR "/" MATE_LIBMATE_SONAME, RTLD_LAZY | RTLD_LOCAL);
	return h;
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* The recorder's level variable: PREFIX_LOGLEVEL where MATE_IDENTITY=PREFIX[:NAME]
 * (mate-record --identity) gives another prefix, as libmate reads it. */
static const char *
prefixed_env(const char *suffix)
{
	const char *id = getenv("MATE_IDENTITY");
	size_t n = id != NULL ? strcspn(id, ":") : 0;
	char var[64];

	if (n == 0 || n > 31)
		n = 4, id = "MATE";
	snprintf(var, sizeof(var), "%.*s_%s", (int)n, id, suffix);
	return getenv(var);
}

static const char *
level_env(void)
{
	return prefixed_env("LOGLEVEL");
}

/* The CSV's spelling from MATE_MEMLOG_FORMAT; RMM's when unset or unknown. */
static void
set_memlog_format(void)
{
	const char *name = getenv(MATE_ENV_MEMLOG_FORMAT);
	int f;

	if (name == NULL || *name == '\0' || mate_ip_memlog == NULL)
		return;
	if (mate_ip_api.memlog_format_named == NULL || mate_ip_api.memlog_set_format == NULL)
		mate_warn("the libmate found has one memory log format; %s=%s is ignored",
		    MATE_ENV_MEMLOG_FORMAT, name);
	else if ((f = mate_ip_api.memlog_format_named(name)) < 0)
		mate_warn("bad %s value '%s' (want rmm or epoch); writing rmm",
		    MATE_ENV_MEMLOG_FORMAT, name);
	else
		mate_ip_api.memlog_set_format(mate_ip_memlog, f);
}

static void
load(void)
{
	const char *csv = getenv(MATE_ENV_MEMLOG), *prof, *bench;
	int state = -1;

	mate_ip_inside++;
	if ((libmate = open_libmate()) == NULL) {
		mate_warn("cannot load libmate (%s); nothing is recorded", dlerror());
		if (mate_ip_sum != NULL)
			__atomic_or_fetch(&mate_ip_sum->flags, MATE_SUMMARY_NO_RECORDER, __ATOMIC_RELAXED);
		goto out;
	}
	if (!resolve_api()) {
		mate_warn("the libmate found lacks the memory log; nothing is recorded");
		goto out;
	}
	if (recorder_complete())
		mate_ip_level = mate_ip_api.record_level();
	else if (level_env() != NULL)
		mate_warn("the libmate found has no recorder; API calls are not recorded");
	/* MATE_PROFILE and MATE_BENCH_LOG keep the calls' shapes: their arguments are collected
	 * as at level 3 */
	prof = prefixed_env("PROFILE");
	bench = prefixed_env("BENCH_LOG");
	mate_ip_args_level = mate_ip_level > 0 && mate_ip_level < 3 &&
	    ((prof != NULL && *prof != '\0') || (bench != NULL && *bench != '\0')) ? 3 : mate_ip_level;
	if (csv != NULL && *csv != '\0' && (csv_template = strdup(csv)) == NULL)
		goto out;
	if (csv_template != NULL || mate_ip_level > 0) {
		char *path = csv_template ? memlog_path(csv_template) : NULL;
		mate_ip_memlog = mate_ip_api.memlog_new(path, NULL);
		free(path);
		set_memlog_format();
	}
	if (mate_ip_memlog != NULL)
		pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (mate_ip_level > 0 || mate_ip_memlog != NULL)
		state = 1;
out:
	mate_ip_inside--;
	__atomic_store_n(&mate_ip_state, state, __ATOMIC_RELEASE);
}

int
mate_ip_load_slow(void)
{
	if (!mate_ip_want)
		return 0;
	pthread_once(&load_once, load);
	return __atomic_load_n(&mate_ip_state, __ATOMIC_ACQUIRE) > 0;
}

/* ---- fork -------------------------------------------------------------------------------- */

static void
fork_prepare(void)
{
	mate_ip_api.memlog_fork_prepare(mate_ip_memlog);
}

static void
fork_parent(void)
{
	mate_ip_api.memlog_fork_parent(mate_ip_memlog);
}

static void
fork_child(void)
{
	char *path = csv_template ? memlog_path(csv_template) : NULL;

	mate_ip_api.memlog_fork_child(mate_ip_memlog, path);
	free(path);
	if (mate_ip_sum != NULL) {
		munmap(mate_ip_sum, sizeof(*mate_ip_sum));
		mate_ip_sum = summary_map();
	}
}

/* ---- exit ---------------------------------------------------------------------------------- */

/* Writes the profile report to MATE_LOGDEST ("stdout", "stderr", or a path with %i); a
 * path that cannot be opened gets a warning and the report goes to stderr, as the log does. */
static void
write_profile(void)
{
	const char *dest = getenv("MATE_LOGDEST");
	char *text = mate_ip_api.memlog_profile(mate_ip_memlog), path[4096];
	int fd = 1, n = 0;

	if (text == NULL)
		return;
	if (dest != NULL && strcmp(dest, "stderr") == 0)
		fd = 2;
	else if (dest != NULL && *dest != '\0' && strcmp(dest, "stdout") != 0) {
		for (const char *p = dest; *p && n < (int)sizeof(path) - 24; p++) {
			if (p[0] == '%' && p[1] == 'i') {
				n += snprintf(path + n, sizeof(path) - (size_t)n, "%ld", (long)getpid());
				p++;
			} else
				path[n++] = *p;
		}
		path[n] = '\0';
		fd = mate_log_open(path, O_CREAT | O_APPEND, mate_log_name_of(dest));
		if (fd < 0) {
			/* as the log does (mate.7): one warning, and the report to stderr */
			mate_warn("cannot open MATE_LOGDEST '%s': %s; the memory profile goes to "
			    "stderr", path, mate_log_strerror(-fd));
			fd = 2;
		}
	}
	for (const char *p = text, *end = text + strlen(text); p < end;) {
		ssize_t w = write(fd, p, (size_t)(end - p));
		if (w > 0)
			p += w;
		else if (w == 0 || errno != EINTR)
			break;
	}
	if (fd > 2)
		close(fd);
	free(text);
}

/* A static CUDA runtime keeps the program's CUDA calls out of reach of
 * preloading: say so plainly. */
static void
check_static_cudart(void)
{
	struct objects o;
	int n = 0;

	objects_list(&o);
	if (o.libcuda && !o.libcudart) {
		mate_warn("this program uses the CUDA driver but loaded no libcudart.so: its CUDA "
		    "runtime is linked statically, and its allocations, copies, launches and cuBLAS "
		    "calls were not recorded (link it with -cudart shared to record them)");
		n = 1;
	} else if (o.libcuda && mate_ip_load_slow() && mate_ip_api.elf_cuda_runtime != NULL) {
		for (int i = 0; i < o.n; i++) {
			if (strstr(o.names[i], "/libcudart.so") || strstr(o.names[i], "/libcuda.so") ||
			    mate_ip_api.elf_cuda_runtime(o.names[i], NULL) != 2)
				continue;
			mate_warn("%s carries a static CUDA runtime: its CUDA calls were not recorded",
			    o.names[i]);
			n++;
		}
	}
	if (n > 0 && mate_ip_sum != NULL)
		__atomic_or_fetch(&mate_ip_sum->flags, MATE_SUMMARY_STATIC_CUDART, __ATOMIC_RELAXED);
	objects_free(&o);
}

static void
ip_exit(void)
{
	const char *e;

	mate_ip_inside++;
	check_static_cudart();
	if (__atomic_load_n(&mate_ip_state, __ATOMIC_ACQUIRE) > 0 && mate_ip_memlog != NULL) {
		mate_ip_note_peak();
		if (csv_template != NULL)
			write_profile();
		if ((e = mate_ip_api.memlog_error(mate_ip_memlog)) != NULL)
			mate_warn("%s", e);
	}
	mate_ip_inside--;
}

__attribute__((constructor)) static void
ip_init(void)
{
	const char *level = level_env(), *csv = getenv(MATE_ENV_MEMLOG);

	mate_ip_want = (level != NULL && *level != '\0' && strcmp(level, "0") != 0) ||
	    (csv != NULL && *csv != '\0');
	if (!mate_ip_want)
		return;
	mate_ip_sum = summary_map();
	atexit(ip_exit);
}

/* ---- recorded calls ----------------------------------------------------------------------- */

void
mate_ip_call_begin(struct ip_call *ic, const char *lib, const char *name, const char *sig)
{
	ic->lib = lib;
	ic->name = name;
	ic->level = mate_ip_args_level;
	ic->c = NULL;
	if (ic->level <= 0)
		return;
	fegetenv(&ic->fe);
	mate_ip_inside++;
	ic->c = mate_ip_api.call_begin(name, lib, sig);
	mate_ip_inside--;
	if (ic->c != NULL)
		IP_COUNT(calls, 1);
	else
		fesetenv(&ic->fe);
}

void
mate_ip_call_ready(struct ip_call *ic)
{
	if (ic->c == NULL)
		return;
	mate_ip_inside++;
	mate_ip_api.call_ready(ic->c);
	mate_ip_inside--;
	/* statistics of uninitialised output buffers must not leave FE_INVALID
	 * behind for the program to find (numpy warns about it) */
	fesetenv(&ic->fe);
}

void
mate_ip_call_run(struct ip_call *ic)
{
	mate_ip_depth++;
	if (mate_ip_memlog != NULL)
		mate_ip_api.memlog_push(mate_ip_memlog, ic->lib, 0, ic->name);
}

void
mate_ip_call_ran(struct ip_call *ic)
{
	(void)ic;
	if (mate_ip_memlog != NULL)
		mate_ip_api.memlog_pop(mate_ip_memlog);
	mate_ip_depth--;
}

/* MATE_RING_ON=fail: an interposed call that returned an error but is not a recorded call
 * (a copy or a launch at level 10, a cuBLAS call the recorder did not take) has the ring
 * written too; a recorded one has it through mate_call_fail(). */
static void
ring_on_fail(const char *error)
{
	static int on = -1;
	const char *s;
	mate_error err;

	if (on < 0) {
		s = prefixed_env("RING_ON");
		on = s != NULL && strcmp(s, "fail") == 0;
	}
	if (!on || mate_ip_api.ring_flush == NULL)
		return;
	mate_ip_inside++;
	if (mate_ip_api.ring_flush(&err) != MATE_OK && err.code != MATE_ERR_UNSUPPORTED) {
		static int warned;

		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			mate_warn("%s; MATE_RING_ON=fail: %s", error, err.message);
	}
	mate_ip_inside--;
}

void
mate_ip_call_end(struct ip_call *ic, const char *error)
{
	if (ic->c == NULL) {
		if (error != NULL)
			ring_on_fail(error);
		return;
	}
	fegetenv(&ic->fe);
	mate_ip_inside++;
	if (error == NULL)
		mate_ip_api.call_end(ic->c);
	else
		mate_ip_api.call_fail(ic->c, error);
	mate_ip_inside--;
	fesetenv(&ic->fe);
	ic->c = NULL;
}

void
mate_ip_matrix(mate_tensor *t, mate_dtype dt, int colmajor, int64_t rows, int64_t cols,
    int64_t ld, int64_t batch, int64_t bstride, const void *data)
{
	int d = batch > 0 ? 1 : 0;

	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = 2 + d;
	if (d) {
		t->shape[0] = batch;
		t->stride[0] = bstride;
	}
	t->shape[d] = rows;
	t->shape[d + 1] = cols;
	t->stride[d] = colmajor ? 1 : ld;
	t->stride[d + 1] = colmajor ? ld : 1;
	t->data = (void *)(uintptr_t)data;
	t->device_type = MATE_DEVICE_CPU;
}

int
mate_ip_gemm_valid(int colmajor, int ta, int tb, int64_t m, int64_t n, int64_t k,
    int64_t lda, int64_t ldb, int64_t ldc)
{
	/* stored shapes: A is m x k (k x m transposed), B k x n (n x k), C m x n */
	int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
	int64_t need_a = colmajor ? ra : ca, need_b = colmajor ? rb : cb, need_c = colmajor ? m : n;

	if (m < 0 || n < 0 || k < 0)
		return 0;
	return lda >= (need_a > 1 ? need_a : 1) && ldb >= (need_b > 1 ? need_b : 1) &&
	    ldc >= (need_c > 1 ? need_c : 1);
}
