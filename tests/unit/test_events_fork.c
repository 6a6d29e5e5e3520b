/* test_events_fork.c: a forked child's instruction log: its own pid and thread ids, and every event on disk when the child ends with _exit(2), as a multiprocessing worker does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mate_record.h"
#include "mate_events.h"
#include "mate_view.h"
#include "test.h"

#define MAX_EV 200000

struct logged {
	char event[16], source[24];
	uint64_t seq, call;
	int send;
};

static struct logged *evs;
static int nev;
static char dir[] = "/tmp/mate-evfork-XXXXXX";

/* Reads the log of process pid into evs: @return the events read. */
static int
read_log(long pid)
{
	char path[256], buf[32];
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	mate_ilog_stats st;

	snprintf(path, sizeof(path), "%s/fork_%ld.log", dir, pid);
	nev = 0;
	r = mate_ilog_open(path, &err);
	CHECK(r != NULL);
	if (r == NULL)
		return 0;
	while (mate_ilog_next(r, &ev, &err) == 1 && nev < MAX_EV) {
		struct logged *l = &evs[nev++];
		snprintf(l->event, sizeof(l->event), "%s", ev.event);
		snprintf(l->source, sizeof(l->source), "%s", ev.source);
		l->seq = ev.seq;
		l->call = mate_ilog_detail(ev.details, "call", buf, sizeof(buf)) > 0 ?
		    strtoull(buf, NULL, 10) : 0;
		l->send = strcmp(ev.event, "SEND") == 0;
	}
	mate_ilog_get_stats(r, &st);
	CHECK_EQ_INT(st.malformed, 0);
	mate_ilog_free(r);
	return nev;
}

/* The log of process pid as mate-visualize takes it: its timeline's stats. */
static void
timeline_of(long pid, mate_timeline_stats *st)
{
	char path[256];
	mate_error err;
	mate_timeline *tl = mate_timeline_new(NULL, &err);
	mate_ilog *r;
	mate_event ev;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/fork_%ld.log", dir, pid);
	r = mate_ilog_open(path, &err);
	CHECK(tl != NULL && r != NULL);
	if (tl != NULL && r != NULL) {
		CHECK_EQ_INT(mate_timeline_begin_log(tl, path, &err), MATE_OK);
		while (mate_ilog_next(r, &ev, &err) == 1)
			CHECK_EQ_INT(mate_timeline_add(tl, &ev, &err), MATE_OK);
		CHECK_EQ_INT(mate_timeline_end_log(tl, &err), MATE_OK);
		mate_timeline_get_stats(tl, st);
	}
	mate_ilog_free(r);
	mate_timeline_free(tl);
}

static int
count(const char *event, const char *source)
{
	int n = 0;

	for (int i = 0; i < nev; i++)
		if (strcmp(evs[i].event, event) == 0 &&
		    (source == NULL || strcmp(evs[i].source, source) == 0))
			n++;
	return n;
}

/* The numbers run 1, 2, ... in file order: no event lost or out of place. */
static void
check_sequence(void)
{
	int ok = 1;

	for (int i = 0; i < nev; i++)
		if (evs[i].seq != (uint64_t)i + 1) {
			fprintf(stderr, "event %d has #%llu\n", i, (unsigned long long)evs[i].seq);
			ok = 0;
			break;
		}
	CHECK(ok);
}

static void *
child_thread(void *arg)
{
	char *tid = arg;

	snprintf(tid, 24, "%ld", (long)syscall(SYS_gettid));
	for (int i = 0; i < 2000; i++)
		mate_call_end(mate_call_begin("in_thread", "test", "()"));
	return NULL;
}

/* Runs body in a child and waits for it: @return the child's pid. */
static pid_t
in_child(void (*body)(void))
{
	pid_t pid = fork();
	int status = -1;

	if (pid == 0) {
		body();
		_exit(0);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return pid;
}

static void
few_calls_then__exit(void)
{
	for (int i = 0; i < 3; i++)
		mate_call_end(mate_call_begin("child_call", "test", "()"));
	_exit(0);
}

static void
calls_and_threads_then__exit(void)
{
	char tid[4][24];
	pthread_t th[4];
	FILE *f;
	char path[256];

	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, child_thread, tid[i]) != 0)
			_exit(3);
	/* more events than the queue holds */
	for (int i = 0; i < 20000; i++)
		mate_call_end(mate_call_begin("many", "test", "()"));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	snprintf(path, sizeof(path), "%s/tids", dir);
	if ((f = fopen(path, "w")) == NULL)
		_exit(4);
	for (int i = 0; i < 4; i++)
		fprintf(f, "%s\n", tid[i]);
	fclose(f);
	_exit(0);
}

static void
calls_then_exit(void)
{
	mate_call_end(mate_call_begin("child_call", "test", "()"));
	exit(0);
}

static char me[24];   /* this process's pid, in the logs' spelling */

/* a few calls, then _exit(): every event is in the child's own log, from
 * the child's own thread; no DISCONNECT (nothing runs at _exit) */
DEFINE_TEST(few_calls__exit)
{
	pid_t pid = in_child(few_calls_then__exit);
	char child[24];
	mate_timeline_stats st;

	snprintf(child, sizeof(child), "%ld", (long)pid);
	CHECK_EQ_INT(read_log(pid), 7);
	CHECK_EQ_INT(count("CONNECT", NULL), 1);
	CHECK_EQ_INT(count("RECV", child), 3);
	CHECK_EQ_INT(count("SEND", child), 3);
	CHECK_EQ_INT(count("RECV", me), 0);
	CHECK_EQ_INT(count("DISCONNECT", NULL), 0);
	check_sequence();
	/* mate-visualize draws it: three whole calls, nothing left open */
	timeline_of(pid, &st);
	CHECK_EQ_INT(st.calls, 3);
	CHECK_EQ_INT(st.unpaired, 0);
	CHECK_EQ_INT(st.clients, 1);
}

/* threads of the child, more events than the queue holds: all there, each
 * thread under its own id, in order */
DEFINE_TEST(threads__exit)
{
	pid_t pid = in_child(calls_and_threads_then__exit);
	char child[24], path[256], tid[4][24];
	FILE *f;

	snprintf(child, sizeof(child), "%ld", (long)pid);
	CHECK_EQ_INT(read_log(pid), 1 + 2 * 20000 + 4 * 2 * 2000);
	CHECK_EQ_INT(count("SEND", child), 20000);
	snprintf(path, sizeof(path), "%s/tids", dir);
	f = fopen(path, "r");
	CHECK(f != NULL);
	for (int i = 0; f != NULL && i < 4; i++) {
		CHECK(fscanf(f, "%23s", tid[i]) == 1);
		CHECK(strcmp(tid[i], child) != 0);
		CHECK_EQ_INT(count("RECV", tid[i]), 2000);
		CHECK_EQ_INT(count("SEND", tid[i]), 2000);
	}
	if (f != NULL)
		fclose(f);
	check_sequence();
}

/* exit(): the log ends with DISCONNECT */
DEFINE_TEST(exit)
{
	pid_t pid = in_child(calls_then_exit);

	CHECK_EQ_INT(read_log(pid), 4);
	CHECK(nev == 4 && strcmp(evs[3].event, "DISCONNECT") == 0);
	check_sequence();
}

/* the parent's log holds the parent's events only (the last case: it ends
 * the parent's session) */
DEFINE_TEST(parent)
{
	test_record(0, NULL, NULL);
	CHECK_EQ_INT(read_log(getpid()), 4);
	CHECK_EQ_INT(count("RECV", me), 1);
	CHECK(nev == 4 && strcmp(evs[3].event, "DISCONNECT") == 0);
	check_sequence();
}

/* The parent records one call into DIR/fork_%i.log; each case forks. */
int
main(int argc, char **argv)
{
	char tmpl[256];
	int st;

	if (mkdtemp(dir) == NULL || (evs = calloc(MAX_EV, sizeof(*evs))) == NULL)
		return 99;
	snprintf(tmpl, sizeof(tmpl), "%s/fork_%%i.log", dir);
	snprintf(me, sizeof(me), "%ld", (long)getpid());
	test_record(1, tmpl, NULL);
	mate_call_end(mate_call_begin("parent_call", "test", "()"));
	st = test_main(argc, argv);
	if (test_failures == 0)
		test_rmtree(dir);
	free(evs);
	return st;
}
