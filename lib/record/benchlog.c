/* benchlog.c: MATE_BENCH_LOG: each distinct call shape the profile's table sees first
 * appends the mate-bench command line that re-runs its problem, so that a run leaves a
 * runnable benchmark script behind: "#!/bin/sh" and a comment when the file is opened, then
 * one line per shape, each in one write(2) on an O_APPEND descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "benchlog.h"
#include "logfile.h"
#include "recorder_private.h"

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

static void
put_dims(struct mate_buf *b, const cJSON *dims)
{
	const cJSON *d;
	int first = 1;

	mate_buf_putc(b, '[');
	cJSON_ArrayForEach(d, dims) {
		if (!first)
			mate_buf_putc(b, ',');
		first = 0;
		mate_buf_int(b, (int64_t)d->valuedouble);
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
		if (!cJSON_IsNumber(sz) || !cJSON_IsNumber(st) || (int64_t)st->valuedouble != want)
			return 0;
		if (sz->valuedouble > 1)
			want *= (int64_t)sz->valuedouble;
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

static struct {
	char *tmpl;     /* MATE_BENCH_LOG as configured; NULL: off */
	int fd;         /* -1: not opened yet */
	int pipe;       /* a FIFO or socket: SIGPIPE kept from the host */
	int stopped;    /* it could not be opened or written: warned once, nothing more */
} bl = { .fd = -1 };

static void
close_file(void)
{
	if (bl.fd >= 0)
		close(bl.fd);
	bl.fd = -1;
	bl.pipe = bl.stopped = 0;
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

/* Opens the file, as the log destination opens its own (mate_log_open(): a FIFO without a
 * reader or a link planted at a %i name is refused, nothing blocks), and writes the header
 * into a file that has nothing yet. */
static int
open_file(void)
{
	char *path = mate_rec_expand_path(bl.tmpl), head[160];
	struct stat st;
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
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		n = snprintf(head, sizeof(head), "#!/bin/sh\n# %s_BENCH_LOG of process %ld: "
		    "a mate-bench line per distinct call\n", mate_rec_prefix(), (long)getpid());
		if ((n = mate_rec_write_guarded(bl.fd, bl.pipe, head, (size_t)n)) != 0) {
			stop("write", path, strerror(-n));
			free(path);
			return -1;
		}
	}
	free(path);
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
	/* one write(2) of the whole line: O_APPEND puts it whole after the others */
	if ((rc = mate_rec_write_guarded(bl.fd, bl.pipe, line, strlen(line))) != 0) {
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
