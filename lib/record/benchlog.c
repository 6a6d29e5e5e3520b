/* benchlog.c: MATE_BENCH_LOG: each distinct call shape the profile's table sees first
 * appends the mate-bench command line that re-runs its problem, so that a run leaves a
 * runnable benchmark script behind: "#!/bin/sh", comments and a few shell lines that count
 * the entries when the file is new, then per shape its line and "mate_bench_ran $?", both in
 * one write(2) on an O_APPEND descriptor. A shape whose line the file already held when
 * this process opened it is not appended again. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchlog.h"
#include "logfile.h"
#include "recorder_private.h"
#include "util.h"

/* ---- the command-line form of a shape ----------------------------------------------------- */

/* A shell word: as it is when every character is one of [A-Za-z0-9_.,:=@/+-], else in
 * single quotes, a quote inside written '\''. */
static void
put_word(struct mate_buf *b, const char *s)
{
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_.,:=@/+-";
	size_t n = strlen(s);

	mate_buf_putc(b, ' ');
	if (n > 0 && strspn(s, safe) == n) {
		mate_buf_put(b, s, n);
		return;
	}
	mate_buf_putc(b, '\'');
	for (; *s != '\0'; s++)
		if (*s == '\'')
			mate_buf_puts(b, "'\\''");
		else
			mate_buf_putc(b, *s);
	mate_buf_putc(b, '\'');
}

/* Each item as an integer; one no int64_t holds (INT64_MAX comes back from the canonical
 * JSON as the double 2^63, and casting that is undefined) in %.17g, as cJSON spells it:
 * mate-bench then refuses the line, saying why, and the host never notices. */
static void
put_dims(struct mate_buf *b, const cJSON *dims)
{
	const cJSON *d;
	int first = 1;
	int64_t v;

	mate_buf_putc(b, '[');
	cJSON_ArrayForEach(d, dims) {
		if (!first)
			mate_buf_putc(b, ',');
		first = 0;
		if (mate_double_to_i64(d->valuedouble, &v))
			mate_buf_int(b, v);
		else
			mate_buf_printf(b, "%.17g", d->valuedouble);
	}
	mate_buf_putc(b, ']');
}

/* Whether stride is the row-major stride of shape, as torch makes it (a dimension of size
 * 0 steps as one of size 1). */
static int
contiguous(const cJSON *shape, const cJSON *stride)
{
	int n = cJSON_GetArraySize(shape);
	int64_t want = 1;

	if (!cJSON_IsArray(shape) || !cJSON_IsArray(stride) || cJSON_GetArraySize(stride) != n)
		return 0;
	for (int i = n - 1; i >= 0; i--) {
		const cJSON *sz = cJSON_GetArrayItem(shape, i), *st = cJSON_GetArrayItem(stride, i);
		int64_t s, z;

		/* out of int64_t's range, or a product past it: written out, as not row-major */
		if (!cJSON_IsNumber(sz) || !cJSON_IsNumber(st) ||
		    !mate_double_to_i64(st->valuedouble, &s) || s != want)
			return 0;
		if (sz->valuedouble > 1 && (!mate_double_to_i64(sz->valuedouble, &z) ||
		    !mate_mul_ok(want, z, &want)))
			return 0;
	}
	return 1;
}

/* KEY=DTYPE[D0,...][@[S0,...]][:DEVICE] */
static void
put_tensor(struct mate_buf *word, const char *key, const cJSON *t)
{
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
	const cJSON *stride = cJSON_GetObjectItemCaseSensitive(t, "stride");
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(t, "device");
	const char *dt = cJSON_IsString(dtype) ? dtype->valuestring : "";

	mate_buf_puts(word, key);
	mate_buf_putc(word, '=');
	mate_buf_puts(word, strncmp(dt, "torch.", 6) == 0 ? dt + 6 : dt);
	put_dims(word, shape);
	if (cJSON_IsArray(stride) && !contiguous(shape, stride)) {
		mate_buf_putc(word, '@');
		put_dims(word, stride);
	}
	if (cJSON_IsString(dev) && strcmp(dev->valuestring, "cpu") != 0) {
		mate_buf_putc(word, ':');
		mate_buf_puts(word, dev->valuestring);
	}
}

char *
mate_bench_line(const cJSON *shape)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(shape, "function");
	const cJSON *mod = cJSON_GetObjectItemCaseSensitive(shape, "module");
	const cJSON *it;
	struct mate_buf b, word;

	if (!cJSON_IsString(fn))
		return NULL;
	mate_buf_init(&b);
	mate_buf_init(&word);
	mate_buf_puts(&b, "mate-bench");
	/* "<unknown>" is what the recorder and the dumps say of a call without a module */
	if (cJSON_IsString(mod) && strcmp(mod->valuestring, "<unknown>") != 0) {
		mate_buf_puts(&b, " -m");
		put_word(&b, mod->valuestring);
	}
	mate_buf_puts(&b, " -c");
	put_word(&b, fn->valuestring);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(shape, "tensors")) {
		word.len = 0;
		put_tensor(&word, it->string, it);
		if (mate_buf_str(&word) != NULL)
			put_word(&b, word.p);
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(shape, "scalars")) {
		char *v = cJSON_PrintUnformatted(it);
		word.len = 0;
		mate_buf_puts(&word, it->string);
		mate_buf_putc(&word, '=');
		if (v != NULL)
			mate_buf_puts(&word, v);
		else
			word.oom = 1;
		cJSON_free(v);
		if (mate_buf_str(&word) != NULL)
			put_word(&b, word.p);
	}
	mate_buf_putc(&b, '\n');
	if (word.oom || mate_buf_str(&b) == NULL) {
		mate_buf_free(&word);
		mate_buf_free(&b);
		return NULL;
	}
	mate_buf_free(&word);
	return b.p;
}

/* ---- the file ------------------------------------------------------------------------------ */

/* The file is a script someone runs later with sh: it never holds a partial line, and an
 * existing file is appended to only when it is the user's own regular file that starts as
 * mate's do (open_file()). */
static struct {
	char *tmpl;     /* MATE_BENCH_LOG as configured; NULL: off */
	int fd;         /* -1: not opened yet */
	int pipe;       /* a FIFO or socket: SIGPIPE kept from the host */
	int regular;    /* a regular file: a torn line is cut off again */
	int stopped;    /* it could not be opened or written: warned once, nothing more */
	int warned_ctl; /* a line left out for a control character: said once */
	int counted;    /* the header defines mate_bench_ran: each line is followed by its call */
	uint64_t *known;        /* the hashes of the lines the file held when opened, sorted */
	size_t nknown, capknown;
} bl = { .fd = -1 };

#define HEAD_SHEBANG "#!/bin/sh\n# "
#define HEAD_WHAT "_BENCH_LOG of process "

/* What follows the first two lines of a new file: sh FILE runs every entry, whatever one
 * of them returns (set +e), counts them through mate_bench_ran, and the EXIT trap, which
 * sees the whole file however many runs appended to it, sums up on stderr and exits 1 when
 * one failed (or with the status it already had: 130 after ^C). M counts the file's
 * "mate-bench " lines (grep on $0; N when $0 is not the file, as with sh <FILE). */
#define HEAD_RAN "\nmate_bench_ran() {"
#define HEAD_REST \
	"# Each entry is a mate-bench line, then \"mate_bench_ran $?\": sh FILE runs every " \
	"entry, goes on\n# past one that fails, ends with \"N of M entries ran; K failed\" " \
	"and exits 1 when one failed.\n" \
	"set +e\nmate_bench_n=0 mate_bench_k=0" \
	HEAD_RAN " mate_bench_n=$((mate_bench_n + 1)); [ \"$1\" -eq 0 ] || { " \
	"mate_bench_k=$((mate_bench_k + 1)); echo \"$0: entry $mate_bench_n failed (exit " \
	"status $1)\" >&2; }; }\n" \
	"mate_bench_end() { mate_bench_m=$(grep -c '^mate-bench ' \"$0\" 2>/dev/null) || " \
	"mate_bench_m=$mate_bench_n; mate_bench_w=; [ $mate_bench_k -eq 0 ] || " \
	"mate_bench_w=': see above'; echo \"$0: $mate_bench_n of $mate_bench_m entries ran; " \
	"$mate_bench_k failed$mate_bench_w\" >&2; [ $mate_bench_k -eq 0 ] || [ \"$1\" -ne 0 ] " \
	"|| set -- 1; exit \"$1\"; }\n" \
	"trap 'mate_bench_end $?' EXIT\n" \
	"trap 'exit 130' INT\ntrap 'exit 143' TERM\n"
#define LINE_RAN "mate_bench_ran $?\n"

/* At most this much of an existing file is read for the lines it holds (and at most
 * KNOWN_MAX of them are kept, 8 bytes each): a shape whose line lies only past it is
 * appended again, as is one that another process appends between our reading and our
 * line (two processes starting on the same file at once may both add it). */
#define KNOWN_READ_MAX (4 << 20)
#define KNOWN_MAX 65536
#define ENTRY_PREFIX "mate-bench "

static void
close_file(void)
{
	if (bl.fd >= 0)
		close(bl.fd);
	bl.fd = -1;
	bl.pipe = bl.regular = bl.stopped = bl.counted = 0;
	free(bl.known);
	bl.known = NULL;
	bl.nknown = bl.capknown = 0;
}

int
mate_rec_benchlog_set(const char *tmpl)
{
	if (tmpl != NULL && tmpl[0] == '\0')
		tmpl = NULL;
	if (tmpl == NULL ? bl.tmpl == NULL : bl.tmpl != NULL && strcmp(tmpl, bl.tmpl) == 0)
		return 0;
	close_file();
	free(bl.tmpl);
	bl.tmpl = tmpl != NULL ? strdup(tmpl) : NULL;
	if (tmpl != NULL && bl.tmpl == NULL)
		mate_warn("out of memory; %s_BENCH_LOG is off", mate_rec_prefix());
	return 1;
}

int
mate_rec_benchlog_on(void)
{
	return bl.tmpl != NULL;
}

/* One warning, then no more lines for this configuration. */
static void
stop(const char *what, const char *path, const char *why)
{
	mate_warn("cannot %s %s_BENCH_LOG '%s': %s; no benchmark lines %s", what,
	    mate_rec_prefix(), path, why, strcmp(what, "open") == 0 ? "are written" : "follow");
	bl.stopped = 1;
}

/* Appends text whole or not at all: one write(2) on the O_APPEND descriptor (more only
 * after a short one), SIGPIPE and SIGXFSZ (a file-size limit) kept from the host, and in a
 * regular file the bytes of a line that could not be finished cut off again, so that no
 * partial line is left for the next line to run into. 0 or -errno. */
static int
put_text(const char *p, size_t n)
{
	sigset_t set, old, pending;
	int e = 0, was_pipe, was_xfsz;
	size_t done = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	sigpending(&pending);
	was_pipe = sigismember(&pending, SIGPIPE);
	was_xfsz = sigismember(&pending, SIGXFSZ);
	while (done < n) {
		ssize_t w = write(bl.fd, p + done, n - done);
		if (w > 0)
			done += (size_t)w;
		else if (w < 0 && errno == EINTR)
			continue;
		else {
			e = w < 0 ? errno : EIO;
			break;
		}
	}
	if (e != 0 && done > 0 && bl.regular) {
		/* O_APPEND left the offset at the end of the bytes this call wrote */
		off_t end = lseek(bl.fd, 0, SEEK_CUR);
		if (end >= (off_t)done)
			(void)!ftruncate(bl.fd, end - (off_t)done);
	}
	sigpending(&pending);
	if ((sigismember(&pending, SIGPIPE) && !was_pipe) ||
	    (sigismember(&pending, SIGXFSZ) && !was_xfsz)) {
		struct timespec zero = { 0, 0 };
		sigemptyset(&set);
		if (!was_pipe)
			sigaddset(&set, SIGPIPE);
		if (!was_xfsz)
			sigaddset(&set, SIGXFSZ);
		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -e;
}

/* Whether the first bytes of a file (NUL-terminated) are the header open_file() writes:
 * "#!/bin/sh", then a comment line that names a *_BENCH_LOG. */
static int
is_header(const char *buf)
{
	size_t n = strlen(HEAD_SHEBANG);
	const char *eol, *what;

	if (strncmp(buf, HEAD_SHEBANG, n) != 0 || (eol = strchr(buf + n, '\n')) == NULL)
		return 0;
	what = strstr(buf + n, HEAD_WHAT);
	return what != NULL && what < eol;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The FNV-1a hashes of the entry lines ("mate-bench ...", without the newline) in the first
 * len bytes (at most KNOWN_READ_MAX) of the file behind rfd, into bl.known, sorted; a line
 * cut off by that bound, or past KNOWN_MAX lines or the memory to keep them, is not known
 * (its shape gets a line again). A 64-bit hash that two lines share would leave out the
 * second: taken as never happening. */
static void
read_known(int rfd, off_t len)
{
	static const char prefix[] = ENTRY_PREFIX;
	char buf[4096];
	uint64_t h = MATE_FNV1A64_BASIS;
	size_t pos = 0, i;
	int entry = 1;
	off_t at;
	ssize_t got;

	if (len > KNOWN_READ_MAX)
		len = KNOWN_READ_MAX;
	for (at = 0; at < len; at += got) {
		size_t want = len - at < (off_t)sizeof(buf) ? (size_t)(len - at) : sizeof(buf);
		if ((got = pread(rfd, buf, want, at)) <= 0)
			break;
		for (i = 0; i < (size_t)got; i++) {
			unsigned char c = (unsigned char)buf[i];
			if (c != '\n') {
				if (pos < sizeof(prefix) - 1 && c != (unsigned char)prefix[pos])
					entry = 0;
				pos++;
				h = (h ^ c) * MATE_FNV1A64_PRIME;
				continue;
			}
			if (entry && pos >= sizeof(prefix) - 1) {
				if (bl.nknown >= KNOWN_MAX || mate_array_grow(&bl.known, bl.nknown,
				    &bl.capknown, sizeof(*bl.known), 256) != 0)
					goto out;
				bl.known[bl.nknown++] = h;
			}
			h = MATE_FNV1A64_BASIS;
			pos = 0;
			entry = 1;
		}
	}
out:
	if (bl.nknown > 1)
		qsort(bl.known, bl.nknown, sizeof(*bl.known), cmp_u64);
}

/* Whether the file held line (ending in its newline) when it was opened. */
static int
is_known(const char *line)
{
	uint64_t h = mate_fnv1a64(line, strlen(line) - 1);

	return bl.nknown > 0 &&
	    bsearch(&h, bl.known, bl.nknown, sizeof(*bl.known), cmp_u64) != NULL;
}

/* An existing regular file (st): NULL when it may be appended to, after cutting off
 * (*cut: how many bytes) a partial last line a killed or stopped writer left, with the
 * lines it holds read (read_known()) and whether its header counts the entries; else why
 * not. Its text is read through a second descriptor of the same file (bl.fd writes only). */
static const char *
check_existing(const char *path, const struct stat *st, long long *cut)
{
	char buf[4096];
	struct stat rst;
	off_t at;
	ssize_t got;
	size_t want, i;
	int rfd, nofollow = mate_log_name_of(bl.tmpl) == MATE_LOG_MADE ? O_NOFOLLOW : 0;
	const char *why = NULL;

	*cut = 0;
	if (st->st_uid != geteuid())
		return "not the user's own file (refused)";
	if (st->st_size == 0)
		return NULL;
	rfd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | nofollow);
	if (rfd < 0 || fstat(rfd, &rst) != 0 || rst.st_dev != st->st_dev ||
	    rst.st_ino != st->st_ino) {
		if (rfd >= 0)
			close(rfd);
		return "cannot read it back to check it";
	}
	got = pread(rfd, buf, sizeof(buf) - 1, 0);
	buf[got > 0 ? got : 0] = '\0';
	if (!is_header(buf))
		why = "not a script mate began (refused: it must start with mate's header)";
	/* an older mate's header defines no mate_bench_ran: its lines come alone */
	bl.counted = strstr(buf, HEAD_RAN) != NULL;
	/* the last newline: what follows it is a line that was never finished */
	for (at = st->st_size; why == NULL && at > 0; at -= (off_t)want) {
		want = at < (off_t)sizeof(buf) ? (size_t)at : sizeof(buf);
		if (pread(rfd, buf, want, at - (off_t)want) != (ssize_t)want) {
			why = "cannot read it back to check it";
			break;
		}
		for (i = want; i > 0 && buf[i - 1] != '\n'; i--)
			;
		if (i == 0)
			continue;
		at = at - (off_t)want + (off_t)i;  /* the length to keep */
		if (at < st->st_size && ftruncate(bl.fd, at) != 0)
			why = "cannot cut off its partial last line";
		else
			*cut = (long long)(st->st_size - at);
		break;
	}
	if (why == NULL)
		read_known(rfd, at);
	close(rfd);
	return why;
}

/* Opens the file, as the log destination opens its own (mate_log_open(): a FIFO without a
 * reader or a link planted at a %i name is refused, nothing blocks), checks an existing
 * regular file (check_existing()) and writes the header into one that has nothing yet. */
static int
open_file(void)
{
	char *path = mate_rec_expand_path(bl.tmpl), head[160 + sizeof(HEAD_REST)];
	const char *why = NULL;
	struct stat st;
	long long cut = 0;
	int n;

	bl.fd = path != NULL ? mate_log_open(path, O_CREAT | O_APPEND, mate_log_name_of(bl.tmpl)) :
	    -ENOMEM;
	if (bl.fd < 0) {
		stop("open", path != NULL ? path : bl.tmpl, mate_log_strerror(bl.fd));
		bl.fd = -1;
		free(path);
		return -1;
	}
	if (fstat(bl.fd, &st) != 0)
		memset(&st, 0, sizeof(st));  /* not a regular file: the header, as for a FIFO */
	bl.pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
	bl.regular = S_ISREG(st.st_mode);
	if (bl.regular)
		why = check_existing(path, &st, &cut);
	if (why != NULL) {
		stop("open", path, why);
		close(bl.fd);
		bl.fd = -1;
		free(path);
		return -1;
	}
	if (cut > 0)
		mate_warn("%s_BENCH_LOG '%s': cut off a partial last line (%lld bytes) an earlier "
		    "writer left", mate_rec_prefix(), path, cut);
	if (!bl.regular || st.st_size == 0) {
		n = snprintf(head, sizeof(head), HEAD_SHEBANG "%s" HEAD_WHAT "%ld: "
		    "a mate-bench line per distinct call\n%s", mate_rec_prefix(), (long)getpid(),
		    HEAD_REST);
		bl.counted = 1;
		if ((n = put_text(head, (size_t)n)) != 0) {
			stop("write", path, strerror(-n));
			free(path);
			return -1;
		}
	}
	free(path);
	return 0;
}

/* Whether line (ending in its newline) holds a control character, which a name recorded
 * raw (a function, module or key) may bring: a newline would split it in two. */
static int
has_control(const char *line)
{
	for (; line[0] != '\0' && line[1] != '\0'; line++)
		if ((unsigned char)line[0] < 0x20)
			return 1;
	return 0;
}

void
mate_rec_benchlog_put(const char *canon, size_t len)
{
	char *text, *line;
	cJSON *shape;
	int rc;

	if (bl.tmpl == NULL || bl.stopped || (bl.fd < 0 && open_file() != 0))
		return;
	if ((text = malloc(len + 2)) == NULL)
		return;
	memcpy(text, canon, len);
	memcpy(text + len, "}", 2);  /* the entry's fields would follow: close it here */
	shape = cJSON_Parse(text);
	free(text);
	line = shape != NULL ? mate_bench_line(shape) : NULL;
	cJSON_Delete(shape);
	if (line == NULL) {
		mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; calls are recorded incompletely");
		return;
	}
	if (is_known(line)) {  /* an earlier run's line */
		free(line);
		return;
	}
	if (has_control(line)) {
		if (!bl.warned_ctl)
			mate_warn("%s_BENCH_LOG: a call whose name holds a control character has no "
			    "line (a shell line cannot hold it on one line)", mate_rec_prefix());
		bl.warned_ctl = 1;
		free(line);
		return;
	}
	if (bl.counted) {
		size_t n = strlen(line);
		char *both = realloc(line, n + sizeof(LINE_RAN));
		if (both == NULL) {
			free(line);
			mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; calls are recorded "
			    "incompletely");
			return;
		}
		memcpy(both + n, LINE_RAN, sizeof(LINE_RAN));
		line = both;
	}
	/* one write(2) of the line and its count: O_APPEND puts them whole after the others */
	if ((rc = put_text(line, strlen(line))) != 0) {
		char *path = mate_rec_expand_path(bl.tmpl);
		stop("write", path != NULL ? path : bl.tmpl, strerror(-rc));
		free(path);
	}
	free(line);
}

int
mate_rec_benchlog_atfork_child(void)
{
	if (bl.tmpl == NULL || strstr(bl.tmpl, "%i") == NULL)
		return 0;
	close_file();
	return 1;
}
