/* ring.c: the flight recorder (MATE_RING): level 10's records and tensors of the last calls kept in a shared memory file that outlives the process (kill -9, the OOM killer), each entry checksummed so that a reader rebuilds every complete one and skips a torn one; and the reader that writes them out as ordinary dumps. */
#include "recorder_private.h"
#include "ring.h"

#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- the file -----------------------------------------------------------------------
 * A head of HEAD_SIZE bytes, then data_size bytes of entries, each ALIGN-aligned: an
 * entry_head, then its payload. The writer appends entries in order and starts again
 * at the beginning of the data when the next one does not fit before its end; it
 * writes an entry's payload, then its head, its checksum and its magic last. The
 * checksum is XXH3 of the head (with a zero checksum field) seeded with a sum of the
 * payload (struct psum: Fletcher's, over 64-bit words in four lanes, each word weighted
 * by its place: a changed, lost or moved word changes it), which the writer takes in
 * chunks as it copies them, while they are in the cache, at a few times memcpy()'s
 * speed. A reader scans the data: where a head has the magic, a length within the data
 * and the checksum of its bytes, the entry is complete; anywhere else it steps ALIGN
 * bytes on. An entry the writer died inside, or one partly overwritten by a newer one,
 * fails its checksum.
 *
 * Payload: a record's fields, not its text (the reader writes the metadata.jsonl lines,
 * mate_rec_ring_record()): ten strings, each a u32 length and its bytes (name, module,
 * signature, timestamp, mate's version, backend: a CALL entry's; status, extra key,
 * extra value: an END entry's; input_metadata or output_metadata as JSON); zero padding
 * to 8 from the entry's start; i64 call_sequence, i64 process id, u64 self id, u32 flags
 * (REC_*), u32 tensors; each: u32 key length, key, u32 file, u32 flags (TENSOR_DATA: its
 * bytes follow), u32 dtype-name length, dtype name, u32 ndim, i32 device type, i32
 * device index, zero padding to 8, i64 shape[ndim], i64 stride[ndim], u64 bytes, and
 * with TENSOR_DATA the bytes (row-major) and zero padding to 8. Integers are the
 * writer's byte order (the reader checks the head's order mark). */

#define RING_MAGIC "MATERNG2"
#define RING_VERSION 2
#define HEAD_SIZE 4096
#define ALIGN 64
#define ENTRY_MAGIC 0x4e45524du   /* "MREN" */
#define ORDER_MARK 0x01020304u
#define FLAG_NO_TENSORS 1u
#define REC_SELF 1u
#define REC_COMPLETED 2u
#define REC_EXTRA 4u
#define TENSOR_DATA 1u
#define NSTR 10
#define NLEN 16                     /* tensors of an entry whose name lengths are kept */
#define CHUNK ((size_t)128 << 10)   /* copied, then summed while in the cache */

struct ring_head {
	char magic[8];
	uint32_t version, order;
	uint64_t head_size, data_size;
	uint64_t keep;              /* MATE_RING: calls to write out */
	int64_t pid;
	int64_t start_sec;          /* CLOCK_REALTIME at creation */
	char format[16];            /* "torch" or "safetensors" */
	char root[1024];            /* the dump directory the records name */
	uint64_t checksum;          /* XXH64 of the bytes before it */
};

struct entry_head {
	uint32_t magic, kind;
	uint64_t len;               /* the whole entry, a multiple of ALIGN */
	uint64_t id;                /* the call */
	uint64_t seq;               /* the order of entries */
	uint64_t payload;           /* bytes after this head */
	uint32_t flags, pad;
	uint64_t checksum;
	uint64_t pad2;
};

_Static_assert(sizeof(struct entry_head) == ALIGN, "an entry head is one ALIGN unit");
_Static_assert(sizeof(struct ring_head) <= HEAD_SIZE, "the head fits its page");

/* The payload's sum: in lane i % 4 of word i (little or big endian as written; a last
 * partial word padded with zeros), a += word, b += a. */
struct psum {
	uint64_t a[4], b[4];
	uint64_t n;                 /* words so far */
};

typedef uint64_t u64x2 __attribute__((vector_size(16)));

/* Adds n bytes at p (n a multiple of 8 but at the payload's end). */
static void
psum_add(struct psum *s, const unsigned char *p, size_t n)
{
	u64x2 a01, a23, b01, b23, w01, w23;
	size_t nw = n / 8, i = 0;
	uint64_t w[4];

	for (; i < nw && (s->n + i) % 4 != 0; i++) {
		memcpy(w, p + 8 * i, 8);
		s->a[(s->n + i) % 4] += w[0];
		s->b[(s->n + i) % 4] += s->a[(s->n + i) % 4];
	}
	/* the four lanes two to a vector register (SSE2 at least): the same sums */
	memcpy(&a01, &s->a[0], 16);
	memcpy(&a23, &s->a[2], 16);
	memcpy(&b01, &s->b[0], 16);
	memcpy(&b23, &s->b[2], 16);
	for (; i + 4 <= nw; i += 4) {
		memcpy(&w01, p + 8 * i, 16);
		memcpy(&w23, p + 8 * i + 16, 16);
		a01 += w01;
		b01 += a01;
		a23 += w23;
		b23 += a23;
	}
	memcpy(&s->a[0], &a01, 16);
	memcpy(&s->a[2], &a23, 16);
	memcpy(&s->b[0], &b01, 16);
	memcpy(&s->b[2], &b23, 16);
	for (; i < nw; i++) {
		memcpy(w, p + 8 * i, 8);
		s->a[(s->n + i) % 4] += w[0];
		s->b[(s->n + i) % 4] += s->a[(s->n + i) % 4];
	}
	if (n % 8 != 0) {
		w[0] = 0;
		memcpy(w, p + 8 * nw, n % 8);
		s->a[(s->n + nw) % 4] += w[0];
		s->b[(s->n + nw) % 4] += s->a[(s->n + nw) % 4];
		nw++;
	}
	s->n += nw;
}

static uint64_t
psum_digest(const struct psum *s)
{
	return XXH3_64bits(s, sizeof(*s));
}

/* The checksum of an entry whose payload sums to payload_sum. */
static uint64_t
entry_sum(const struct entry_head *h, uint64_t payload_sum)
{
	struct entry_head copy = *h;

	copy.magic = ENTRY_MAGIC;
	copy.checksum = 0;
	return XXH3_64bits_withSeed(&copy, sizeof(copy), payload_sum);
}

static uint64_t
entry_checksum(const struct entry_head *h, const unsigned char *payload)
{
	struct psum s;

	memset(&s, 0, sizeof(s));
	psum_add(&s, payload, (size_t)h->payload);
	return entry_sum(h, psum_digest(&s));
}

static uint64_t
round_up(uint64_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

/* ---- the writer ------------------------------------------------------------------ */

static struct {
	pthread_mutex_t lock;
	pid_t pid;                  /* the process the ring is of (a fork makes its own) */
	unsigned gen;               /* the session (mate_configure()) it was made in */
	int state;                  /* 0 not tried, 1 on, -1 unavailable, -2 not asked for */
	unsigned char *map;
	size_t map_len;
	unsigned char *data;
	uint64_t data_size, pos, seq, ids, keep;
	char path[4096];
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void fatal_prepare(void);
static void flush_handler(int sig);
static int flush_signal(void);

/* MATE_RING_BYTES: a size with an optional K, M or G; the default 1/32 of memory
 * between 16 MiB and 1 GiB. */
static uint64_t
ring_bytes(void)
{
	const char *s = mate_rec_getenv("RING_BYTES");
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t def = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 32 : 64u << 20;
	char *end;
	unsigned long long v;

	if (def < (16u << 20))
		def = 16u << 20;
	if (def > (1u << 30))
		def = 1u << 30;
	if (s == NULL || *s == '\0')
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (errno != 0 || end == s || *end != '\0' || v < (1u << 14) || v > (1ull << 40)) {
		mate_rec_warn_once(REC_ONCE_USAGE, "%s_RING_BYTES=%s is not a size from 16K to 1024G "
		    "(K, M and G allowed); the ring takes %llu MiB", mate_rec_prefix(), s,
		    (unsigned long long)(def >> 20));
		return def;
	}
	return round_up(v);
}

/* The ring's path: MATE_RING_PATH with %p as the process id, else
 * /dev/shm/mate-ring.PID, or DUMP_DIR/mate-ring.PID where there is no /dev/shm. */
static int
ring_path(char *out, size_t len)
{
	const char *t = mate_rec_getenv("RING_PATH");
	struct stat sb;
	size_t o = 0;
	char pid[24];

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (t == NULL || *t == '\0') {
		if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0)
			return snprintf(out, len, "/dev/shm/mate-ring.%s", pid) < (int)len ? 0 : -1;
		return snprintf(out, len, "%s/mate-ring.%s", mate_rec_cfg.dump_dir, pid) < (int)len ? 0 : -1;
	}
	for (; *t != '\0'; t++) {
		const char *add = t[0] == '%' && t[1] == 'p' ? pid : NULL;
		size_t n = add != NULL ? strlen(add) : 1;

		if (o + n + 1 > len)
			return -1;
		memcpy(out + o, add != NULL ? add : t, n);
		o += n;
		t += add != NULL;
	}
	out[o] = '\0';
	return 0;
}

/* At exit: a run that ends well leaves no ring behind; another writes its calls as
 * dumps (or, when it cannot, says where the ring is). */
static void
ring_exit(int status, void *arg)
{
	(void)arg;
	if (ring.state != 1 || ring.pid != getpid())
		return;
	if (status == 0) {
		unlink(ring.path);
		return;
	}
	{
		struct mate_ring_stats st;
		mate_error err;

		mate_error_clear(&err);
		if (mate_ring_write_root(ring.path, mate_rec_cfg.dump_dir, &st, &err) == MATE_OK) {
			mate_warn("exit status %d: the ring's last %zu call%s written to %s", status,
			    st.calls, st.calls == 1 ? "" : "s", mate_rec_cfg.dump_dir);
			unlink(ring.path);
			return;
		}
		mate_warn("exit status %d: the ring's calls could not be written to %s (%s); they "
		    "are kept in %s: mate-list-dumps --ring %s -o DIR writes them", status,
		    mate_rec_cfg.dump_dir, err.message, ring.path, ring.path);
	}
}

static void
ring_unavailable(const char *what, int e)
{
	__atomic_store_n(&ring.state, -1, __ATOMIC_RELEASE);
	mate_rec_warn_once(REC_ONCE_DUMP_IO, "%s_RING: %s %s: %s; no calls are kept",
	    mate_rec_prefix(), what, ring.path, strerror(e));
}

/* Names the finished unnamed ring fd base, or base.1 to base.9 where a file of an earlier
 * process of this id (or a planted one) has the name; ring.path gets it. 0 or an errno. */
static int
ring_name(int fd, const char *base)
{
	int e = EEXIST;

	for (int i = 0; i < 10 && e == EEXIST; i++) {
		if (i > 0 && snprintf(ring.path, sizeof(ring.path), "%s.%d", base, i) >= (int)sizeof(ring.path))
			return ENAMETOOLONG;
		e = mate_link_unnamed(fd, ring.path);
	}
	return e;
}

/* Makes this process's ring. Lock held. */
static void
ring_open(long keep)
{
	uint64_t bytes = ring_bytes();
	size_t n;
	struct ring_head *h;
	struct statvfs vfs;
	int fd = -1, e, unnamed = 0;
	char base[4096];

	ring.keep = (uint64_t)keep;
	if (ring_path(base, sizeof(base)) != 0) {
		__atomic_store_n(&ring.state, -1, __ATOMIC_RELEASE);
		mate_rec_warn_once(REC_ONCE_USAGE, "%s_RING_PATH is too long; no calls are kept",
		    mate_rec_prefix());
		return;
	}
	/* Unnamed until its head is written, so that a process killed while making it leaves
	 * no ring that is not one; named then without replacing anything (ring_name()). Where
	 * the filesystem has no unnamed files, made under its name, never over another file. */
	snprintf(ring.path, sizeof(ring.path), "%s", base);
	if ((fd = mate_open_unnamed(base)) >= 0)
		unnamed = fchmod(fd, 0600) == 0 ? 1 : (close(fd), -1);
	for (int i = 0; i < 10 && fd < 0 && unnamed == 0; i++) {
		if (i > 0 && snprintf(ring.path, sizeof(ring.path), "%s.%d", base, i) >= (int)sizeof(ring.path))
			break;
		fd = open(ring.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ring_unavailable("cannot make", unnamed < 0 ? EPERM : errno);
		return;
	}
	ring.map_len = HEAD_SIZE + (size_t)bytes;
	/* the pages taken now: a full /dev/shm is an error here, not a SIGBUS later; and more
	 * than the free space is refused before any is taken (a partial allocation would fill
	 * the disk for everyone until it is given back) */
	if (fstatvfs(fd, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < ring.map_len)
		e = ENOSPC;
	else
		e = posix_fallocate(fd, 0, (off_t)ring.map_len);
	if (e != 0) {
		if (!unnamed)
			unlink(ring.path);
		close(fd);
		ring_unavailable("cannot make room for", e);
		return;
	}
	/* its pages mapped now, not one fault at a time in the calls of its first lap */
	ring.map = mmap(NULL, ring.map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	e = errno;
	if (ring.map == MAP_FAILED) {
		ring.map = NULL;
		if (!unnamed)
			unlink(ring.path);
		close(fd);
		ring_unavailable("cannot map", e);
		return;
	}
	h = (struct ring_head *)ring.map;
	memcpy(h->magic, RING_MAGIC, 8);
	h->version = RING_VERSION;
	h->order = ORDER_MARK;
	h->head_size = HEAD_SIZE;
	h->data_size = bytes;
	h->keep = (uint64_t)keep;
	h->pid = (int64_t)getpid();
	h->start_sec = (int64_t)time(NULL);
	snprintf(h->format, sizeof(h->format), "%s", mate_rec_cfg.safetensors ? "safetensors" : "torch");
	n = strlen(mate_rec_cfg.dump_dir);
	memcpy(h->root, mate_rec_cfg.dump_dir, n < sizeof(h->root) - 1 ? n : sizeof(h->root) - 1);
	h->checksum = XXH64(h, offsetof(struct ring_head, checksum), 0);
	if (unnamed && (e = ring_name(fd, base)) != 0) {
		munmap(ring.map, ring.map_len);
		ring.map = NULL;
		close(fd);
		ring_unavailable("cannot name", e);
		return;
	}
	close(fd);
	ring.data = ring.map + HEAD_SIZE;
	ring.data_size = bytes;
	ring.pos = ring.seq = ring.ids = 0;
	fatal_prepare();
	__atomic_store_n(&ring.state, 1, __ATOMIC_RELEASE);
	on_exit(ring_exit, NULL);
}

/* ---- a fatal signal: the ring written by a helper ----------------------------------------
 * At a fatal signal the handler starts the helper, `mate-list-dumps --ring PATH --into
 * DUMP_DIR` (MATE_RING_HELPER names another program), with a raw clone() and execve(),
 * async-signal-safe and without the program's fork handlers, waits for it at most
 * HELPER_WAIT_S seconds (it finishes alone if the program is gone first), and delivers the
 * signal as before: the action the program had is put back and the signal raised again.
 * Everything the handler uses is prepared when the ring is made. A fatal signal of
 * another thread while the first one is handled waits for that (at most HELPER_WAIT_S
 * seconds more): the program ends by the first signal, once the ring is written. Left to
 * its own action at once, it ended the process before the helper was started (no dumps),
 * or while it wrote them. */

#define HELPER_WAIT_S 30
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction fatal_old[NFATAL];
static int fatal_installed;
static volatile sig_atomic_t fatal_busy, fatal_done;
static char helper_path[4096], helper_root[4096];
static char *helper_argv[8];
static char helper_note[8400];
extern char **environ;

static void
fatal_handler(int sig)
{
	size_t i;
	int first, mine;

	for (i = 0; i < NFATAL && fatal_signals[i] != sig; i++)
		;
	first = !__atomic_exchange_n(&fatal_busy, 1, __ATOMIC_SEQ_CST);
	mine = ring.pid == (pid_t)syscall(SYS_getpid);
	if (!first && mine) {   /* another thread's: wait until the first is handled */
		struct timespec ten_ms = { 0, 10000000 };

		for (int t = 0; t < (HELPER_WAIT_S + 1) * 100 &&
		    !__atomic_load_n(&fatal_done, __ATOMIC_SEQ_CST); t++)
			nanosleep(&ten_ms, NULL);
	}
	if (first && mine && __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE) == 1) {
		long child = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);

		if (child == 0) {
			execve(helper_path, helper_argv, environ);
			_exit(127);
		}
		if (child > 0) {
			struct timespec ten_ms = { 0, 10000000 };
			int st = 0;

			for (int t = 0; t < HELPER_WAIT_S * 100; t++) {
				if (waitpid((pid_t)child, &st, WNOHANG) != 0)
					break;
				nanosleep(&ten_ms, NULL);
			}
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				unlink(ring.path);   /* written: the ring's pages go back */
			else
				(void)!write(2, helper_note, strlen(helper_note));
		}
	}
	if (first)
		__atomic_store_n(&fatal_done, 1, __ATOMIC_SEQ_CST);
	if (i < NFATAL)
		sigaction(sig, &fatal_old[i], NULL);
	else
		signal(sig, SIG_DFL);
	raise(sig);   /* blocked in here: delivered, with the program's action, on return */
}

/* Prepares the helper's command line and installs the handlers (once a process: a
 * forked child keeps them, and its own ring). Lock held. */
static void
fatal_prepare(void)
{
	const char *h = mate_rec_getenv("RING_HELPER");
	struct sigaction sa;
	int sig;

	snprintf(helper_path, sizeof(helper_path), "%s", h != NULL && *h != '\0' ? h :
	    MATE_BINDIR "/mate-list-dumps");
	snprintf(helper_root, sizeof(helper_root), "%s", mate_rec_cfg.dump_dir);
	helper_argv[0] = helper_path;
	helper_argv[1] = (char *)"--quiet";
	helper_argv[2] = (char *)"--ring";
	helper_argv[3] = ring.path;
	helper_argv[4] = (char *)"--into";
	helper_argv[5] = helper_root;
	helper_argv[6] = NULL;
	snprintf(helper_note, sizeof(helper_note), "%s: fatal signal: the ring of the last calls "
	    "is in %s (mate-list-dumps --ring %s -o DIR)\n", mate_rec_name(), ring.path, ring.path);
	if (fatal_installed)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fatal_handler;
	sigfillset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK;
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &sa, &fatal_old[i]);
	if ((sig = flush_signal()) != 0) {
		sa.sa_handler = flush_handler;
		sa.sa_flags = SA_RESTART;
		sigaction(sig, &sa, NULL);
	}
	fatal_installed = 1;
}

/* The user's signal (MATE_RING_SIGNAL, default SIGUSR2): the helper started through a
 * child that exits at once (the helper is nobody's child: no zombie, no SIGCHLD later), not
 * waited for; it leaves the ring of a live process in place. */
static void
flush_handler(int sig)
{
	int saved = errno;

	(void)sig;
	if (__atomic_load_n(&ring.state, __ATOMIC_ACQUIRE) == 1 &&
	    ring.pid == (pid_t)syscall(SYS_getpid)) {
		long a = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);

		if (a == 0) {
			if (syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL) == 0) {
				execve(helper_path, helper_argv, environ);
				_exit(127);
			}
			_exit(0);
		}
		if (a > 0)
			waitpid((pid_t)a, NULL, 0);
	}
	errno = saved;
}

/* MATE_RING_SIGNAL: "USR1", "USR2" (the default), "HUP", a number, or "none". */
static int
flush_signal(void)
{
	const char *s = mate_rec_getenv("RING_SIGNAL");
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return SIGUSR2;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	if (strcmp(s, "none") == 0 || strcmp(s, "0") == 0)
		return 0;
	if (strcmp(s, "USR1") == 0)
		return SIGUSR1;
	if (strcmp(s, "USR2") == 0)
		return SIGUSR2;
	if (strcmp(s, "HUP") == 0)
		return SIGHUP;
	v = strtol(s, &end, 10);
	if (*end == '\0' && v > 0 && v < NSIG && v != SIGKILL && v != SIGSTOP && v != SIGSEGV &&
	    v != SIGBUS && v != SIGFPE && v != SIGILL && v != SIGABRT)
		return (int)v;
	mate_rec_warn_once(REC_ONCE_USAGE, "%s_RING_SIGNAL=%s is not USR1, USR2, HUP, a signal "
	    "number or none; SIGUSR2 flushes the ring", mate_rec_prefix(), s);
	return SIGUSR2;
}

int
mate_ring_write_on_fail(void)
{
	static int on = -1;
	const char *s;

	if (on < 0) {
		s = mate_rec_getenv("RING_ON");
		on = s != NULL && strcmp(s, "fail") == 0;
		if (s != NULL && *s != '\0' && !on && strcmp(s, "none") != 0)
			mate_rec_warn_once(REC_ONCE_USAGE, "%s_RING_ON=%s is not fail or none; the ring "
			    "is written at a fatal signal, a non-zero exit and when asked", mate_rec_prefix(), s);
	}
	return on;
}

int
mate_ring_flush(mate_error *err)
{
	struct mate_ring_stats st;
	char path[sizeof(ring.path)];

	mate_error_clear(err);
	if (mate_ring_active() <= 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "mate_ring_flush: this process keeps "
		    "no ring (MATE_RING at level 10)");
	pthread_mutex_lock(&ring.lock);
	memcpy(path, ring.path, sizeof(path));
	pthread_mutex_unlock(&ring.lock);
	return mate_ring_write_root(path, mate_rec_cfg.dump_dir, &st, err);
}

int
mate_ring_active(void)
{
	const char *s;
	long keep;
	int state;
	char *end;
	pid_t pid = mate_rec_pid();

	/* every call asks: without the lock once the state is known for this process and session */
	state = __atomic_load_n(&ring.state, __ATOMIC_ACQUIRE);
	if (state != 0 && ring.pid == pid && ring.gen == __atomic_load_n(&mate_rec_generation,
	    __ATOMIC_RELAXED))
		return state == 1 ? 1 : state == -2 ? 0 : -1;
	pthread_mutex_lock(&ring.lock);
	if (ring.state != 0 && ring.pid != pid) {
		/* a forked child: the parent's mapping is the parent's */
		if (ring.map != NULL)
			munmap(ring.map, ring.map_len);
		ring.map = NULL;
		__atomic_store_n(&ring.state, 0, __ATOMIC_RELEASE);
	} else if (ring.state != 0 && ring.gen != mate_rec_generation) {
		/* a new session (mate_configure()) reads MATE_RING again; the old ring goes */
		if (ring.map != NULL) {
			munmap(ring.map, ring.map_len);
			unlink(ring.path);
		}
		ring.map = NULL;
		__atomic_store_n(&ring.state, 0, __ATOMIC_RELEASE);
	}
	if (ring.state == 0) {
		ring.pid = pid;
		ring.gen = mate_rec_generation;
		s = mate_rec_getenv("RING");
		if (s == NULL || *s == '\0') {
			__atomic_store_n(&ring.state, -2, __ATOMIC_RELEASE);
		} else {
			errno = 0;
			keep = strtol(s, &end, 10);
			if (errno != 0 || *end != '\0' || keep < 1 || keep > 1000000000) {
				__atomic_store_n(&ring.state, -1, __ATOMIC_RELEASE);
				mate_rec_warn_once(REC_ONCE_USAGE, "%s_RING=%s is not a number of calls "
				    "from 1 to 1000000000; no calls are kept", mate_rec_prefix(), s);
			} else {
				ring_open(keep);
			}
		}
	}
	state = ring.state;
	pthread_mutex_unlock(&ring.lock);
	return state == 1 ? 1 : state == -2 ? 0 : -1;
}

uint64_t
mate_ring_next_id(void)
{
	return __atomic_add_fetch(&ring.ids, 1, __ATOMIC_RELAXED);
}

static unsigned char *
put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

/* memcpy() without its call for the few bytes of a name or a shape (most of an entry's
 * copies): two overlapping words, or bytes. */
static inline void
copy_bytes(unsigned char *d, const void *src, size_t n)
{
	const unsigned char *s = src;

	if (n > 16) {
		memcpy(d, s, n);
	} else if (n >= 8) {
		uint64_t a, b;

		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	}
}

static unsigned char *
put_bytes(unsigned char *p, const void *s, size_t n)
{
	p = put_u32(p, (uint32_t)n);
	copy_bytes(p, s, n);
	return p + n;
}

/* Zero bytes up to a multiple of 8 from e. */
static unsigned char *
pad8(unsigned char *p, const unsigned char *e)
{
	size_t k = (size_t)(e - p) & 7;   /* the bytes to the next multiple of 8 */

	if (k & 4) {
		memset(p, 0, 4);
		p += 4;
	}
	if (k & 2) {
		memset(p, 0, 2);
		p += 2;
	}
	if (k & 1)
		*p++ = 0;
	return p;
}

/* At most the payload bytes of a tensor's description, before its data, with a key of klen
 * bytes and a dtype name of dlen. */
static size_t
tensor_head_size(const struct mate_ring_tensor *t, size_t klen, size_t dlen)
{
	return 4 + klen + 4 + 4 + 4 + dlen + 4 + 4 + 4 + 7 + 16 * (size_t)t->t->ndim + 8;
}

/* Whether a host copy has the shape of t (ndim checked). */
static int
same_shape(const mate_tensor *a, const mate_tensor *b)
{
	for (int d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

/* A tensor's bytes copied to p; the payload's sum, when given, takes them chunk by chunk as
 * they are copied (*summed: where the bytes not yet summed begin). */
static void
copy_summed(const mate_tensor *x, unsigned char *p, uint64_t nb, struct psum *s,
    const unsigned char **summed)
{
	const unsigned char *src;

	if (!mate_tensor_is_contiguous(x)) {
		mate_tensor_copy_contiguous(x, p);
		return;
	}
	src = (const unsigned char *)x->data + x->offset * (int64_t)mate_dtype_size(x->dtype);
	if (s == NULL) {   /* small: summed with the rest of the entry, in the cache */
		memcpy(p, src, (size_t)nb);
		return;
	}
	psum_add(s, *summed, (size_t)(p - *summed));   /* 8-aligned from the entry: whole words */
	for (uint64_t off = 0; off < nb; off += CHUNK) {
		size_t m = nb - off < CHUNK ? (size_t)(nb - off) : CHUNK;

		memcpy(p + off, src + off, m);
		psum_add(s, p + off, m / 8 * 8);   /* CHUNK is whole words: only the last has a part */
	}
	/* a last part of a word is summed with its padding, once that is written */
	*summed = p + nb / 8 * 8;
}

int
mate_ring_put(int kind, uint64_t id, const struct mate_ring_rec *r,
    const struct mate_ring_tensor *t, size_t n)
{
	const char *str[NSTR] = { r->name, r->module, r->signature, r->stamp, r->version, r->backend,
	    r->status, r->extra_key, r->extra, r->meta };
	size_t len[NSTR], payload = 8 + 8 * 4 + 7, fixed;
	uint32_t flags = 0, nkept = (uint32_t)n, rflags;
	struct entry_head h;
	unsigned char *e, *p;
	const unsigned char *summed;   /* where the bytes not yet summed begin */
	uint64_t off, elen;
	struct psum st, *stp = NULL;
	uint32_t klen[NLEN], dlen[NLEN];

	for (int i = 0; i < NSTR; i++) {
		len[i] = str[i] == NULL ? 0 : i == NSTR - 1 ? r->metalen : strlen(str[i]);
		payload += 4 + len[i];
	}
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(t[i].key), dl = strlen(mate_dtype_name(t[i].t->dtype));

		if (i < NLEN) {   /* the first tensors' lengths kept for the copy below */
			klen[i] = (uint32_t)kl;
			dlen[i] = (uint32_t)dl;
		}
		payload += tensor_head_size(&t[i], kl, dl);
	}
	fixed = payload;
	for (size_t i = 0; i < n; i++) {
		int64_t nb = t[i].nbytes;

		if (nb < 0)
			return -1;
		if (t[i].host != NULL) {
			/* the host copy of t: its shape and dtype, on the CPU */
			if (t[i].host->device_type != MATE_DEVICE_CPU || t[i].host->dtype != t[i].t->dtype ||
			    t[i].host->ndim != t[i].t->ndim || !same_shape(t[i].host, t[i].t))
				return -1;
			payload += (size_t)(nb + 7) / 8 * 8;
			if ((uint64_t)nb >= CHUNK)
				stp = &st;   /* large: summed as it is copied */
		}
	}
	pthread_mutex_lock(&ring.lock);
	if (ring.state != 1 || ring.pid != mate_rec_pid() || ring.gen != mate_rec_generation) {
		pthread_mutex_unlock(&ring.lock);
		return -1;
	}
	if (round_up(sizeof(h) + payload) > ring.data_size) {
		/* the tensors' descriptions only, saying so */
		flags = FLAG_NO_TENSORS;
		payload = fixed;
		stp = NULL;
		if (round_up(sizeof(h) + payload) > ring.data_size) {
			pthread_mutex_unlock(&ring.lock);
			return -1;
		}
	}
	elen = round_up(sizeof(h) + payload);
	off = ring.pos + elen > ring.data_size ? 0 : ring.pos;
	ring.pos = off + elen;
	memset(&h, 0, sizeof(h));
	h.seq = ++ring.seq;
	pthread_mutex_unlock(&ring.lock);

	/* the payload, then the head, its checksum, and the magic last */
	e = ring.data + off;
	p = e + sizeof(h);
	summed = p;
	memset(&st, 0, sizeof(st));
	for (int i = 0; i < NSTR; i++)
		p = put_bytes(p, str[i] != NULL ? str[i] : "", len[i]);
	p = pad8(p, e);
	memcpy(p, &r->seq, 8);
	memcpy(p + 8, &r->pid, 8);
	memcpy(p + 16, &r->self_id, 8);
	rflags = (r->has_self ? REC_SELF : 0) | (r->completed ? REC_COMPLETED : 0) |
	    (r->extra_key != NULL ? REC_EXTRA : 0);
	p = put_u32(p + 24, rflags);
	p = put_u32(p, nkept);
	for (uint32_t i = 0; i < nkept; i++) {
		const mate_tensor *x = t[i].t;
		const char *dt = mate_dtype_name(x->dtype);
		uint64_t nb = (uint64_t)t[i].nbytes;
		int data = t[i].host != NULL && flags == 0;

		p = put_bytes(p, t[i].key, i < NLEN ? klen[i] : strlen(t[i].key));
		p = put_u32(p, (uint32_t)t[i].file);
		p = put_u32(p, data ? TENSOR_DATA : 0);
		p = put_bytes(p, dt, i < NLEN ? dlen[i] : strlen(dt));
		p = put_u32(p, (uint32_t)x->ndim);
		p = put_u32(p, (uint32_t)x->device_type);
		p = put_u32(p, (uint32_t)x->device_index);
		p = pad8(p, e);
		copy_bytes(p, x->shape, 8 * (size_t)x->ndim);
		p += 8 * (size_t)x->ndim;
		copy_bytes(p, x->stride, 8 * (size_t)x->ndim);
		p += 8 * (size_t)x->ndim;
		memcpy(p, &nb, 8);
		p += 8;
		if (!data)
			continue;
		if (nb > 0)
			copy_summed(t[i].host, p, nb, stp, &summed);
		p = pad8(p + nb, e);
	}
	h.kind = (uint32_t)kind;
	h.len = elen;
	h.id = id;
	h.payload = (uint64_t)(p - (e + sizeof(h)));   /* within the room taken */
	h.flags = flags;
	psum_add(&st, summed, (size_t)(p - summed));
	h.checksum = entry_sum(&h, psum_digest(&st));
	memcpy(e + 8, (unsigned char *)&h + 8, sizeof(h) - 8);
	__atomic_store_n((uint32_t *)(void *)(e + 4), h.kind, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(void *)e, (uint32_t)ENTRY_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* ---- the reader ------------------------------------------------------------------ */

struct call {
	uint64_t id;
	const struct entry_head *begin, *end;   /* its CALL and END entries */
};

/* A cursor over an entry's payload: every read is checked against its end. */
struct cur {
	const unsigned char *p, *end;
	int bad;
};

static uint32_t
get_u32(struct cur *c)
{
	uint32_t v = 0;

	if (c->bad || c->end - c->p < 4) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static const unsigned char *
get_bytes(struct cur *c, uint64_t n)
{
	const unsigned char *s = c->p;

	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return s;
}

static int
cmp_seq(const void *a, const void *b)
{
	const struct entry_head *x = *(const struct entry_head *const *)a;
	const struct entry_head *y = *(const struct entry_head *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
append_file(const char *path, const void *p, size_t n, mate_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644), e;

	if (fd < 0)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	e = -mate_write_all(fd, p, n);
	if (close(fd) != 0 && e == 0)
		e = errno;
	return e != 0 ? mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(e)) : MATE_OK;
}

/* An entry decoded: its record's fields and its tensors (their bytes, when kept, in the
 * scan's copy of the file). */
struct dec {
	struct mate_ring_rec r;
	struct mate_ring_tensor *ts;
	mate_tensor *t;
	const unsigned char **data;   /* each tensor's bytes, or NULL */
	uint64_t *nbytes;
	char *strs;                   /* the strings, each with its NUL */
	size_t n;
};

static void
dec_free(struct dec *d)
{
	free(d->ts);
	free(d->t);
	free(d->data);
	free(d->nbytes);
	free(d->strs);
	memset(d, 0, sizeof(*d));
}

/* A string of the payload, copied with its NUL to *to; NULL when it does not fit or holds
 * a NUL (a name or key of the record cut short would be misread). */
static const char *
get_str(struct cur *c, char **to)
{
	uint32_t n = get_u32(c);
	const unsigned char *s = get_bytes(c, n);
	char *o = *to;

	if (s == NULL || memchr(s, '\0', n) != NULL) {
		c->bad = 1;
		return NULL;
	}
	memcpy(o, s, n);
	o[n] = '\0';
	*to += n + 1;
	return o;
}

static void
skip8(struct cur *c, const struct entry_head *h)
{
	get_bytes(c, (uint64_t)((8 - (size_t)(c->p - (const unsigned char *)h) % 8) % 8));
}

static int64_t
get_i64(struct cur *c)
{
	const unsigned char *p = get_bytes(c, 8);
	int64_t v = 0;

	if (p != NULL)
		memcpy(&v, p, 8);
	return v;
}

/* Decodes entry h, checking every field: 0, or -1 (with err set) when it does not hold
 * together. */
static int
decode(const struct entry_head *h, struct dec *d, mate_error *err)
{
	struct cur c = { (const unsigned char *)(h + 1), (const unsigned char *)(h + 1) + h->payload, 0 };
	const char *str[NSTR];
	char *to;
	uint32_t rflags, n;

	memset(d, 0, sizeof(*d));
	/* every string, NUL included, fits in the payload's bytes plus one per string */
	if ((d->strs = malloc((size_t)h->payload + 1)) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	to = d->strs;
	for (int i = 0; i < NSTR; i++)
		str[i] = get_str(&c, &to);
	skip8(&c, h);
	d->r.seq = get_i64(&c);
	d->r.pid = get_i64(&c);
	d->r.self_id = (uint64_t)get_i64(&c);
	rflags = get_u32(&c);
	n = get_u32(&c);
	if (c.bad || n > h->payload / 16)
		goto bad;
	d->r.name = str[0];
	d->r.module = str[1];
	d->r.signature = str[2];
	d->r.stamp = str[3];
	d->r.version = str[4];
	d->r.backend = str[5];
	d->r.status = str[6];
	d->r.extra_key = (rflags & REC_EXTRA) ? str[7] : NULL;
	d->r.extra = str[8];
	d->r.meta = str[9];
	d->r.metalen = strlen(str[9]);
	d->r.has_self = (rflags & REC_SELF) != 0;
	d->r.completed = (rflags & REC_COMPLETED) != 0;
	/* the JSON text goes into a metadata.jsonl line as it is: one line */
	if (memchr(d->r.meta, '\n', d->r.metalen) != NULL || memchr(d->r.meta, '\r', d->r.metalen) != NULL)
		goto bad;
	d->n = n;
	if ((d->ts = calloc(n + 1, sizeof(*d->ts))) == NULL || (d->t = calloc(n + 1, sizeof(*d->t))) == NULL ||
	    (d->data = calloc(n + 1, sizeof(*d->data))) == NULL ||
	    (d->nbytes = calloc(n + 1, sizeof(*d->nbytes))) == NULL) {
		dec_free(d);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++) {
		const char *key, *dt;
		uint32_t file, tflags, ndim, devtype, devidx;
		int64_t shape[MATE_MAX_DIMS], stride[MATE_MAX_DIMS];
		mate_dtype dtype;
		mate_tensor *t = &d->t[i];

		/* the key and the dtype name: into the string space the record's strings left */
		key = get_str(&c, &to);
		file = get_u32(&c);
		tflags = get_u32(&c);
		dt = get_str(&c, &to);
		ndim = get_u32(&c);
		devtype = get_u32(&c);
		devidx = get_u32(&c);
		if (c.bad || ndim > MATE_MAX_DIMS || file > MATE_RING_INPLACE ||
		    (devtype != MATE_DEVICE_CPU && devtype != MATE_DEVICE_CUDA) || devidx > 1024)
			goto bad;
		skip8(&c, h);
		for (uint32_t k = 0; k < ndim; k++)
			shape[k] = get_i64(&c);
		for (uint32_t k = 0; k < ndim; k++)
			stride[k] = get_i64(&c);
		d->nbytes[i] = (uint64_t)get_i64(&c);
		dtype = mate_dtype_from_name(dt);
		if (c.bad || mate_dtype_size(dtype) == 0 ||
		    mate_tensor_init(t, dtype, (int)ndim, shape, NULL, NULL) != MATE_OK ||
		    (uint64_t)mate_tensor_nbytes(t) != d->nbytes[i])
			goto bad;
		for (uint32_t k = 0; k < ndim; k++)
			t->stride[k] = stride[k];   /* for the record only: the bytes are packed */
		t->device_type = (enum mate_device_type)devtype;
		t->device_index = (int)devidx;
		if (tflags & TENSOR_DATA) {
			d->data[i] = get_bytes(&c, d->nbytes[i]);
			skip8(&c, h);
			if (c.bad)
				goto bad;
		}
		d->ts[i].key = key;
		d->ts[i].file = (int)file;
		d->ts[i].t = t;
		d->ts[i].nbytes = (int64_t)d->nbytes[i];
	}
	return 0;
bad:
	dec_free(d);
	return mate_set_error(err, MATE_ERR_FORMAT, "a ring entry's record does not hold together");
}

/* Writes one entry's tensors of one file (inputs, outputs, in place) as path.
 * 1 written, 0 none of that file, negative on an error. */
static int
write_tensor_file(const struct dec *d, int file, const char *path, int safetensors,
    mate_error *err)
{
	mate_value *dict = mate_value_dict();
	int any = 0, rc = MATE_OK;

	if (dict == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < d->n && rc == MATE_OK; i++) {
		mate_tensor t;
		mate_storage *st;

		if (d->ts[i].file != file || d->data[i] == NULL)
			continue;
		/* packed, on the host */
		if (mate_tensor_init(&t, d->t[i].dtype, d->t[i].ndim, d->t[i].shape, NULL,
		    (void *)(uintptr_t)d->data[i]) != MATE_OK) {
			rc = mate_set_error(err, MATE_ERR_FORMAT, "a ring entry's tensors do not hold together");
			break;
		}
		if ((st = mate_storage_wrap((void *)(uintptr_t)d->data[i], (size_t)d->nbytes[i], err)) == NULL) {
			rc = err->code;
			break;
		}
		rc = mate_value_set_str(dict, d->ts[i].key, mate_value_tensor(&t, st));
		mate_storage_unref(st);
		any = 1;
	}
	if (rc == MATE_OK && any)
		rc = safetensors ? mate_safetensors_write(path, dict, NULL, err) :
		    mate_pt_write(path, dict, NULL, err);
	mate_value_free(dict);
	return rc != MATE_OK ? rc : any;
}

/* A record's timestamp as the writer makes it (digits and '_'): a part of a directory's
 * name. */
static int
stamp_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 40)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((s[i] < '0' || s[i] > '9') && s[i] != '_')
			return 0;
	return 1;
}

static int count_lines(const char *path);

/* Writes call k into root; its record lines appended to session.jsonl. again: root may
 * hold it from an earlier flush (it is completed, or *skipped). */
static int
write_call(const struct call *k, const char *root, int safetensors, int again, int *skipped,
    mate_error *err)
{
	int from = 0;                /* records its directory already has (again: a flush) */
	const char *ext = safetensors ? "safetensors" : "pt";
	char *path = NULL, *sub = NULL;
	struct mate_buf rec, name;
	struct dec b, e;
	struct mate_ring_call rc_in;
	int rc = MATE_OK;
	size_t plen;

	*skipped = 0;
	memset(&e, 0, sizeof(e));
	mate_buf_init(&name);
	if ((rc = decode(k->begin, &b, err)) != MATE_OK)
		return rc;
	if (k->end != NULL && (rc = decode(k->end, &e, err)) != MATE_OK)
		goto out;
	if (!stamp_ok(b.r.stamp)) {
		rc = mate_set_error(err, MATE_ERR_FORMAT, "a ring entry's timestamp is not one");
		goto out;
	}
	if (mate_rec_ring_dir_name(&name, b.r.stamp, b.r.pid, b.r.name, b.r.seq) != 0) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	plen = strlen(root) + name.len + 64;
	if ((sub = malloc(plen)) == NULL || (path = malloc(plen)) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(sub, plen, "%s/%s", root, name.p);
	if (mkdir(sub, 0755) != 0) {
		if (errno != EEXIST || !again) {
			rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", sub, strerror(errno));
			goto out;
		}
		/* an earlier flush wrote it: complete it when the call has returned since */
		snprintf(path, plen, "%s/metadata.jsonl", sub);
		from = count_lines(path);
		if (from <= 0 || from >= (k->end != NULL ? 2 : 1)) {
			*skipped = 1;
			goto out;
		}
	}
	snprintf(path, plen, "%s/inputs.%s", sub, ext);
	if (from == 0 && (rc = write_tensor_file(&b, MATE_RING_INPUTS, path, safetensors, err)) < 0)
		goto out;
	if (k->end != NULL) {
		snprintf(path, plen, "%s/outputs.%s", sub, ext);
		if ((rc = write_tensor_file(&e, MATE_RING_OUTPUTS, path, safetensors, err)) < 0)
			goto out;
		snprintf(path, plen, "%s/inplace.%s", sub, ext);
		if ((rc = write_tensor_file(&e, MATE_RING_INPLACE, path, safetensors, err)) < 0)
			goto out;
	}
	rc = MATE_OK;
	memset(&rc_in, 0, sizeof(rc_in));
	rc_in.call = &b.r;
	rc_in.cts = b.ts;
	rc_in.ncts = b.n;
	rc_in.ets = e.ts;
	rc_in.nets = e.n;
	rc_in.format = safetensors ? "safetensors" : "torch";
	rc_in.dir = sub;
	for (int i = from; i < 2 && rc == MATE_OK; i++) {
		if (i == 1 && k->end == NULL)
			break;
		rc_in.end = i == 0 ? NULL : &e.r;
		if (mate_rec_ring_record(&rec, &rc_in) != 0) {
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			break;
		}
		snprintf(path, plen, "%s/metadata.jsonl", sub);
		rc = append_file(path, rec.p, rec.len, err);
		snprintf(path, plen, "%s/session.jsonl", root);
		if (rc == MATE_OK)
			rc = append_file(path, rec.p, rec.len, err);
		mate_buf_free(&rec);
	}
out:
	mate_buf_free(&name);
	dec_free(&b);
	dec_free(&e);
	free(sub);
	free(path);
	return rc;
}

/* The lines of a small file (a dump's metadata.jsonl), or -1. */
static int
count_lines(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), n = 0;
	ssize_t r;

	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return r < 0 ? -1 : n;
}

static int
remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[4096];

	if (d == NULL)
		return unlink(path);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		remove_tree(sub);
	}
	closedir(d);
	return rmdir(path);
}

/* Whether outdir can be written whole: absent, or an empty folder. */
static int
target_ok(const char *outdir, mate_error *err)
{
	DIR *d = opendir(outdir);
	struct dirent *e;
	int empty = 1;

	if (d == NULL)
		return errno == ENOENT ? MATE_OK : mate_set_error(err, MATE_ERR_ARGUMENT, "%s: %s",
		    outdir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	return empty ? MATE_OK : mate_set_error(err, MATE_ERR_ARGUMENT, "%s is not empty: refusing "
	    "to write into it", outdir);
}

/* A ring file read: its complete entries grouped into calls, in call order. */
struct scan {
	const unsigned char *map;
	size_t size;
	const struct entry_head **found;
	struct call *calls;
	size_t ncalls, first;       /* calls[first..ncalls): the last ones the ring keeps */
	int safetensors;
};

static void
scan_free(struct scan *sc)
{
	free(sc->found);
	free(sc->calls);
	if (sc->map != NULL)
		munmap((void *)sc->map, sc->size);
	memset(sc, 0, sizeof(*sc));
}

static int
ring_scan(const char *path, struct scan *sc, struct mate_ring_stats *st, mate_error *err)
{
	const struct ring_head *h;
	const unsigned char *data;
	size_t nfound = 0, capfound = 0;
	struct stat sb;
	int fd;

	memset(sc, 0, sizeof(*sc));
	memset(st, 0, sizeof(*st));
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return mate_set_error(err, MATE_ERR_IO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < HEAD_SIZE) {
		close(fd);
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: not a ring file (%s)", path,
		    S_ISREG(sb.st_mode) ? "shorter than its head" : "not a regular file");
	}
	sc->size = (size_t)sb.st_size;
	/* a private copy, read once: a writer that still runs changes the file under a mapping,
	 * and an entry must be the same bytes when its checksum is checked and when it is read */
	sc->map = mmap(NULL, sc->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc->map == MAP_FAILED) {
		sc->map = NULL;
		close(fd);
		return mate_set_error(err, MATE_ERR_NOMEM, "%s: %lld bytes: %s", path,
		    (long long)sb.st_size, strerror(errno));
	}
	if (mate_pread_all(fd, (void *)sc->map, sc->size, 0) != 0) {
		close(fd);
		return mate_set_error(err, MATE_ERR_IO, "%s: cannot read it whole", path);
	}
	close(fd);
	h = (const struct ring_head *)sc->map;
	if (memcmp(h->magic, RING_MAGIC, 7) != 0)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: not a ring file", path);
	if (memcmp(h->magic, RING_MAGIC, 8) != 0 || h->version != RING_VERSION ||
	    h->order != ORDER_MARK)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: a ring of another version or byte "
		    "order (this mate reads version %d)", path, RING_VERSION);
	if (h->checksum != XXH64(h, offsetof(struct ring_head, checksum), 0) ||
	    h->head_size != HEAD_SIZE || h->data_size % ALIGN != 0 ||
	    h->data_size != (uint64_t)sb.st_size - HEAD_SIZE)
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: its head does not match the file "
		    "(%lld bytes): truncated or damaged", path, (long long)sb.st_size);
	st->pid = h->pid;
	st->keep = h->keep;
	sc->safetensors = strncmp(h->format, "safetensors", sizeof(h->format)) == 0;
	data = sc->map + HEAD_SIZE;
	for (uint64_t off = 0; off + ALIGN <= h->data_size;) {
		const struct entry_head *e = (const struct entry_head *)(data + off);

		if (e->magic == ENTRY_MAGIC && e->len >= ALIGN && e->len % ALIGN == 0 &&
		    e->len <= h->data_size - off && e->payload <= e->len - ALIGN &&
		    (e->kind == MATE_RING_CALL || e->kind == MATE_RING_END)) {
			if (entry_checksum(e, (const unsigned char *)(e + 1)) == e->checksum) {
				if (nfound == capfound) {
					size_t nc = capfound ? 2 * capfound : 256;
					const struct entry_head **v = realloc(sc->found, nc * sizeof(*v));

					if (v == NULL)
						return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
					sc->found = v;
					capfound = nc;
				}
				sc->found[nfound++] = e;
				off += e->len;
				continue;
			}
			st->torn++;
		}
		off += ALIGN;
	}
	if (nfound > 0)
		qsort(sc->found, nfound, sizeof(*sc->found), cmp_seq);
	/* the calls, in the order their first entries were made */
	if ((sc->calls = calloc(nfound + 1, sizeof(*sc->calls))) == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < nfound; i++) {
		const struct entry_head *e = sc->found[i];

		if (e->kind == MATE_RING_CALL) {
			sc->calls[sc->ncalls].id = e->id;
			sc->calls[sc->ncalls].begin = e;
			sc->calls[sc->ncalls].end = NULL;
			sc->ncalls++;
		} else {
			for (size_t j = sc->ncalls; j-- > 0;)
				if (sc->calls[j].id == e->id) {
					if (sc->calls[j].end == NULL)
						sc->calls[j].end = e;
					break;
				}
		}
	}
	sc->first = sc->ncalls > h->keep ? sc->ncalls - (size_t)h->keep : 0;
	return MATE_OK;
}

/* Writes the calls the ring keeps into root (which exists). */
static int
write_calls(const struct scan *sc, const char *root, int again, struct mate_ring_stats *st,
    mate_error *err)
{
	int rc = MATE_OK, skipped;

	for (size_t i = sc->first; i < sc->ncalls && rc == MATE_OK; i++) {
		rc = write_call(&sc->calls[i], root, sc->safetensors, again, &skipped, err);
		if (skipped) {
			st->already++;
			continue;
		}
		st->calls++;
		st->completed += sc->calls[i].end != NULL;
		st->records_only += (sc->calls[i].begin->flags & FLAG_NO_TENSORS) != 0;
	}
	return rc;
}

int
mate_ring_convert(const char *path, const char *outdir, struct mate_ring_stats *st,
    mate_error *err)
{
	struct scan sc;
	size_t len = strlen(outdir) + 32;
	char *tmp = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = target_ok(outdir, err)) != MATE_OK)
		return rc;
	if ((rc = ring_scan(path, &sc, st, err)) != MATE_OK)
		goto out;
	if ((tmp = malloc(len)) == NULL) {
		rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(tmp, len, "%s.tmp-XXXXXX", outdir);
	if (mkdtemp(tmp) == NULL) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if ((rc = write_calls(&sc, tmp, 0, st, err)) == MATE_OK) {
		rmdir(outdir);       /* an empty one, checked above */
		if (rename(tmp, outdir) != 0)
			rc = mate_set_error(err, MATE_ERR_IO, "cannot rename %s to %s: %s", tmp, outdir,
			    strerror(errno));
	}
	if (rc != MATE_OK)
		remove_tree(tmp);
out:
	free(tmp);
	scan_free(&sc);
	return rc;
}

int
mate_ring_write_root(const char *path, const char *root, struct mate_ring_stats *st, mate_error *err)
{
	struct scan sc;
	char *dir = strdup(root);
	int rc;

	if (dir == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (char *p = dir + 1; *p != '\0'; p++)   /* mkdir -p */
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0755);
			*p = '/';
		}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		rc = mate_set_error(err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
		free(dir);
		return rc;
	}
	free(dir);
	if ((rc = ring_scan(path, &sc, st, err)) == MATE_OK)
		rc = write_calls(&sc, root, 1, st, err);
	scan_free(&sc);
	return rc;
}

void
mate_ring_reseal(unsigned char *file, size_t size)
{
	struct ring_head *h = (struct ring_head *)(void *)file;
	uint64_t data_size;

	if (size < HEAD_SIZE)
		return;
	h->checksum = XXH64(h, offsetof(struct ring_head, checksum), 0);
	data_size = (size - HEAD_SIZE) / ALIGN * ALIGN;
	for (uint64_t off = 0; off + ALIGN <= data_size;) {
		struct entry_head *e = (struct entry_head *)(void *)(file + HEAD_SIZE + off);

		if (e->magic == ENTRY_MAGIC && e->len >= ALIGN && e->len % ALIGN == 0 &&
		    e->len <= data_size - off && e->payload <= e->len - ALIGN) {
			e->checksum = entry_checksum(e, (const unsigned char *)(e + 1));
			off += e->len;
		} else
			off += ALIGN;
	}
}
