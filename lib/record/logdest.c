/* logdest.c: where the API log goes (MATE_LOGDEST: stdout, stderr or a file, %i the pid),
 * opened on the first line, written a whole record per write(2); a destination that
 * cannot be opened falls back to stderr with one warning, and a pipe whose reader went
 * away stops logging without a SIGPIPE reaching the host. */
#include "recorder_private.h"
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The log destination. fd -1: not opened yet in this session. */
static struct {
	pthread_mutex_t lock;
	int fd;
	int owned;      /* a file we opened (closed on reconfigure) */
	int atomic;     /* a regular file: each O_APPEND write lands whole */
	int pipe;       /* a FIFO or socket: SIGPIPE must not reach the host */
	int stopped;
	int header_done;
} logst = { PTHREAD_MUTEX_INITIALIZER, -1, 0, 0, 0, 0, 0 };

void
mate_rec_log_lock(void)
{
	pthread_mutex_lock(&logst.lock);
}

void
mate_rec_log_unlock(void)
{
	pthread_mutex_unlock(&logst.lock);
}

void
mate_rec_log_close(void)
{
	if (logst.owned && logst.fd >= 0)
		close(logst.fd);
	logst.fd = -1;
	logst.owned = 0;
	logst.stopped = 0;
	logst.header_done = 0;
}

/* A path template (MATE_LOGDEST, MATE_BENCH_LOG) with every %i replaced by the pid. */
char *
mate_rec_expand_path(const char *tmpl)
{
	struct mate_buf b;
	const char *p;

	mate_buf_init(&b);
	for (p = tmpl; *p != '\0'; p++) {
		if (p[0] == '%' && p[1] == 'i') {
			mate_buf_printf(&b, "%ld", (long)mate_rec_pid());
			p++;
		} else
			mate_buf_putc(&b, *p);
	}
	if (mate_buf_str(&b) == NULL) {
		mate_buf_free(&b);
		return NULL;
	}
	return b.p;
}

/* Opens the destination; called with logst.lock held. */
static void
open_log(void)
{
	const char *d = mate_rec_cfg.logdest;
	struct stat st;
	char *path;

	if (strcmp(d, "stdout") == 0)
		logst.fd = STDOUT_FILENO;
	else if (strcmp(d, "stderr") == 0)
		logst.fd = STDERR_FILENO;
	else {
		path = mate_rec_expand_path(d);
		logst.fd = path ? mate_log_open(path, O_CREAT | O_APPEND, mate_log_name_of(d)) :
		    -ENOMEM;
		if (logst.fd < 0) {
			mate_warn("cannot open %s_LOGDEST '%s': %s; logging to stderr", mate_rec_prefix(),
			    path ? path : d, mate_log_strerror(logst.fd));
			logst.fd = STDERR_FILENO;
		} else
			logst.owned = 1;
		free(path);
	}
	logst.atomic = logst.pipe = 0;
	if (fstat(logst.fd, &st) == 0) {
		logst.atomic = S_ISREG(st.st_mode) && logst.owned;
		logst.pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
	}
}

/* write() that keeps SIGPIPE from a closed pipe away from the host. */
int
mate_rec_write_guarded(int fd, int is_pipe, const char *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	int rc, was_pending;

	if (!is_pipe)
		return mate_write_all(fd, p, n);
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	rc = mate_write_all(fd, p, n);
	if (rc == -EPIPE && !was_pending) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void
write_log(const char *text, size_t len)
{
	int rc = mate_rec_write_guarded(logst.fd, logst.pipe, text, len);

	if (rc != 0) {
		__atomic_store_n(&logst.stopped, 1, __ATOMIC_RELAXED);
		mate_rec_warn_once(REC_ONCE_LOG_IO, "cannot write the API log (%s): %s; logging stopped",
		    mate_rec_cfg.logdest, strerror(-rc));
	}
}

void
mate_rec_log(const char *text, size_t len)
{
	if (__atomic_load_n(&logst.stopped, __ATOMIC_RELAXED))
		return;
	if (!__atomic_load_n(&logst.header_done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&logst.lock);
		if (logst.fd < 0)
			open_log();
		if (!logst.header_done) {
			struct mate_buf b;
			mate_buf_init(&b);
			mate_rec_fmt_header(&b);
			if (mate_buf_str(&b) != NULL)
				write_log(b.p, b.len);
			mate_buf_free(&b);
			__atomic_store_n(&logst.header_done, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&logst.lock);
	}
	if (text == NULL || len == 0 || __atomic_load_n(&logst.stopped, __ATOMIC_RELAXED))
		return;
	if (logst.atomic) {
		write_log(text, len);
		return;
	}
	pthread_mutex_lock(&logst.lock);
	write_log(text, len);
	pthread_mutex_unlock(&logst.lock);
}
