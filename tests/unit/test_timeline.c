/* test_timeline.c: pairing events into calls and work (ids, GT's rules, the batch quirk), lanes, clipping, utilisation, Perfetto output, render errors, and other hosts with their clocks. */
#include "config.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mate_view.h"
#include "test.h"
#include "timeline_private.h"   /* op colours and the id table's size */

static uint64_t seq;

static void
add(mate_timeline *tl, double t, const char *event, const char *src, const char *cmd,
    const char *details)
{
	mate_event ev;
	mate_error err;

	memset(&ev, 0, sizeof(ev));
	ev.time = t;
	ev.seq = ++seq;
	ev.event = event;
	ev.source = src;
	ev.source_kind = strstr(event, "WORKER") ? MATE_SOURCE_WORKER : MATE_SOURCE_CLIENT;
	ev.command = cmd;
	ev.size = 100;
	ev.details = details;
	if (mate_timeline_add(tl, &ev, &err) != MATE_OK)
		CHECK_STR(err.message, "");
}

static mate_timeline *
fresh(const char *lanes, int has_from, double from, int has_to, double to)
{
	mate_timeline_options o;
	mate_error err;
	mate_timeline *tl;

	mate_timeline_options_init(&o);
	o.lanes = lanes;
	o.has_from = has_from, o.from = from;
	o.has_to = has_to, o.to = to;
	o.columns = 800;
	tl = mate_timeline_new(&o, &err);
	CHECK(tl != NULL);
	mate_timeline_begin_log(tl, "test.log", &err);
	return tl;
}

static const mate_lane_info *
lane(mate_timeline *tl, const char *label)
{
	static mate_lane_info li;
	int i;

	for (i = 0; mate_timeline_lane(tl, i, &li) == 0; i++)
		if (strcmp(li.label, label) == 0)
			return &li;
	fprintf(stderr, "no lane %s\n", label);
	return NULL;
}

/* The utilisation of tl's lane label; NaN (which no comparison passes)
 * when there is no such lane. */
static double
busy(mate_timeline *tl, const char *label)
{
	const mate_lane_info *li = lane(tl, label);

	return li != NULL ? li->busy : NAN;
}

/* Ends the log of tl; its statistics in *st. */
static void
ended(mate_timeline *tl, mate_timeline_stats *st)
{
	mate_timeline_end_log(tl, NULL);
	mate_timeline_get_stats(tl, st);
}

/* The lanes of tl are want[0..n), in order. */
static void
check_lanes(mate_timeline *tl, const char *const *want, int n)
{
	mate_lane_info li;
	int i, rc;

	for (i = 0; (rc = mate_timeline_lane(tl, i, &li)) == 0; i++)
		CHECK_STR(li.label, i < n ? want[i] : "(none)");
	CHECK_EQ_INT(rc, -1);   /* past the last lane */
	CHECK_EQ_INT(i, n);
}

DEFINE_TEST(gt_fifo)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_timeline_stats st;
	const mate_lane_info *li;

	add(tl, 1, "WORKER_SEND", "w0", "WorkerUnaryOp", "op=relu");
	add(tl, 2, "WORKER_SEND", "w0", "WorkerUnaryOp", "op=relu");
	add(tl, 3, "WORKER_RECV", "w0", "WorkerResponse", "success=True");
	add(tl, 4, "WORKER_RECV", "w0", "WorkerResponse", "success=True");
	ended(tl, &st);
	CHECK_EQ_INT(st.ops, 2);
	CHECK_EQ_INT(st.unpaired, 0);
	CHECK_EQ_INT(st.workers, 1);
	CHECK(fabs(st.t0 - 1) < 1e-9 && fabs(st.t1 - 4) < 1e-9);
	li = lane(tl, "w0");
	CHECK(li != NULL && fabs(li->busy - 1.0) < 1e-6);
	CHECK(li != NULL && li->spans == 2);
	mate_timeline_free(tl);
}

static int
tmpfd(void)
{
	char path[] = "/tmp/mate-test-timeline.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

/* The Perfetto JSON of a traced() timeline: its writer, its unlinked
 * temporary file. */
struct traced {
	mate_perfetto *pf;
	int fd;
};

/* @return a fresh timeline that writes Perfetto JSON, its writer and file
 * in *t. */
static mate_timeline *
traced(struct traced *t)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_error err;

	t->fd = tmpfd();
	t->pf = mate_perfetto_open_fd(t->fd, 0, &err);
	CHECK(t->pf != NULL);
	mate_timeline_set_perfetto(tl, t->pf);
	return tl;
}

/* Ends the log of traced()'s timeline tl, closes its JSON and its file.
 * @return the JSON, malloc'd, or NULL when it cannot be read. */
static char *
traced_json(mate_timeline *tl, struct traced *t)
{
	mate_error err;
	char *json;

	mate_timeline_end_log(tl, NULL);
	CHECK_EQ_INT(mate_perfetto_close(t->pf, &err), MATE_OK);
	json = test_slurp_fd(t->fd, NULL);
	CHECK(json != NULL);
	close(t->fd);
	return json;
}

DEFINE_TEST(gt_batch)
{
	mate_timeline *tl;
	mate_timeline_stats st;
	const mate_lane_info *li;
	struct traced tr;
	char *json;

	tl = traced(&tr);
	add(tl, 1.000, "RECV", "CLIENT 006b8b4568", "BinaryOp", "result=2 op=add left=0 right=1");
	add(tl, 1.001, "MODIFIER_INJECT", "CLIENT 006b8b4568", "BinaryOp", "result=2 op=matmul");
	add(tl, 1.003, "WORKER_RECV", "auto_worker", "WorkerBatch", "success=True");
	add(tl, 1.003, "WORKER_SEND", "auto_worker", "WorkerBatch", "[1 cmds: WorkerBinaryOp]");
	add(tl, 1.004, "SEND", "CLIENT 006b8b4568", "BinaryOp", "success=True");
	/* GT's failure, in a batch reply */
	add(tl, 1.100, "RECV", "CLIENT 006b8b4568", "UnaryOp", "result=3 op=relu");
	add(tl, 1.102, "WORKER_RECV", "auto_worker", "WorkerBatch", "success=False");
	add(tl, 1.102, "WORKER_SEND", "auto_worker", "WorkerBatch", "[1 cmds: WorkerUnaryOp]");
	add(tl, 1.103, "SEND", "CLIENT 006b8b4568", "UnaryOp", "success=False");
	/* a reply with no send in reach is not a batch: unpaired */
	add(tl, 2.000, "WORKER_RECV", "auto_worker", "WorkerBatch", "success=True");
	add(tl, 2.010, "WORKER_SEND", "auto_worker", "WorkerBatch", "[1 cmds: WorkerBinaryOp]");
	json = traced_json(tl, &tr);
	mate_timeline_get_stats(tl, &st);
	CHECK_EQ_INT(st.ops, 2);
	CHECK_EQ_INT(st.calls, 2);
	CHECK_EQ_INT(st.unpaired, 2);
	CHECK_EQ_INT(st.failed, 2);
	li = lane(tl, "client 006b8b4568");   /* GT's repeated word dropped */
	CHECK(li != NULL && li->kind == MATE_LANE_CLIENT);
	if (json != NULL) {
		/* the batch spans from the line before its reply, and does the
		 * injected op; the call keeps its own op; a flow joins them */
		CHECK_CONTAINS(json, "{\"name\":\"matmul\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":1001000.000,"
		    "\"dur\":2000.000");
		CHECK_CONTAINS(json, "{\"name\":\"add\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":1000000.000,"
		    "\"dur\":4000.000");
		CHECK_CONTAINS(json, "\"ph\":\"s\",\"id\":1,\"ts\":1000000.000");
		CHECK_CONTAINS(json, "\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"ts\":1001000.000");
		CHECK_CONTAINS(json, "\"args\":{\"name\":\"client 006b8b4568\"}");
		CHECK_CONTAINS(json, "\"name\":\"MODIFIER_INJECT\",\"cat\":\"event\",\"ph\":\"i\"");
		CHECK_CONTAINS(json, "{\"name\":\"relu\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":1100000.000,"
		    "\"dur\":2000.000");
		CHECK_CONTAINS(json, "\"failed\":true");
		CHECK(strncmp(json, "{\"traceEvents\":[", 16) == 0);
		CHECK(strstr(json, "\n],\"displayTimeUnit\":\"ns\"}\n") != NULL);
		free(json);
	}
	mate_timeline_free(tl);
}

DEFINE_TEST(ids_and_nesting)
{
	mate_timeline *tl;
	mate_timeline_stats st;
	struct traced tr;
	char *json;

	tl = traced(&tr);
	add(tl, 0.0, "RECV", "t1", "outer", "call=1 op=outer");
	add(tl, 0.1, "RECV", "t1", "inner", "call=2 op=inner depth=1");
	add(tl, 0.2, "WORKER_SEND", "s0", "k", "call=2 id=a op=matmul");
	add(tl, 0.2, "WORKER_SEND", "s0", "k", "call=2 id=b op=add");
	add(tl, 0.3, "SEND", "t1", "inner", "call=2");
	add(tl, 0.5, "WORKER_RECV", "s0", "k", "id=b");
	add(tl, 0.9, "WORKER_RECV", "s0", "k", "id=a");
	add(tl, 1.0, "SEND", "t1", "outer", "call=1");
	add(tl, 1.5, "MEM_ALLOC", "t1", "cudaMalloc", "device=cuda:0 in_use=4096");
	json = traced_json(tl, &tr);
	mate_timeline_get_stats(tl, &st);
	CHECK_EQ_INT(st.calls, 2);
	CHECK_EQ_INT(st.ops, 2);
	CHECK_EQ_INT(st.unpaired, 0);
	CHECK_EQ_INT(st.memory_lanes, 1);
	CHECK(lane(tl, "memory cuda:0") != NULL);
	if (json != NULL) {
		CHECK_CONTAINS(json, "\"name\":\"add\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":200000.000,\"dur\":300000.000");
		CHECK_CONTAINS(json, "\"name\":\"matmul\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":200000.000,\"dur\":700000.000");
		CHECK_CONTAINS(json, "\"name\":\"inner\",\"cat\":\"mate\",\"ph\":\"X\",\"ts\":100000.000,\"dur\":200000.000");
		CHECK_CONTAINS(json, "\"depth\":1");
		/* work from the inner call: flows start at its start */
		CHECK_CONTAINS(json, "\"ph\":\"s\",\"id\":1,\"ts\":100000.000");
		/* the two overlapping pieces of work nest (b inside a): one track */
		CHECK(strstr(json, "s0 (2)") == NULL);
		CHECK_CONTAINS(json, "\"ph\":\"C\",\"ts\":1500000.000,\"pid\":1,\"args\":{\"bytes\":4096}");
		free(json);
	}
	mate_timeline_free(tl);
}

DEFINE_TEST(overlap_tracks)
{
	mate_timeline *tl;
	struct traced tr;
	char *json;

	tl = traced(&tr);
	add(tl, 1, "WORKER_SEND", "s0", "k", "id=1");
	add(tl, 2, "WORKER_SEND", "s0", "k", "id=2");
	add(tl, 3, "WORKER_RECV", "s0", "k", "id=1");
	add(tl, 4, "WORKER_RECV", "s0", "k", "id=2");
	json = traced_json(tl, &tr);
	if (json != NULL) {   /* [1,3] and [2,4] cannot nest: a second track */
		CHECK_CONTAINS(json, "\"args\":{\"name\":\"s0 (2)\"}");
		free(json);
	}
	mate_timeline_free(tl);
}

/* A flow joins two written slices, on their threads, at their starts: a
 * call whose work ends first waits for the call's slice; a call still open
 * at the log's end gets no slice, so its work's flow is dropped, counted. */
DEFINE_TEST(flow_binding)
{
	mate_timeline *tl;
	struct traced tr;
	uint64_t written, unended, forgotten;
	char *json;

	tl = traced(&tr);
	add(tl, 0.0, "RECV", "t1", "sync", "call=1");
	add(tl, 0.1, "WORKER_SEND", "s0", "k", "call=1 id=a op=add");
	add(tl, 0.2, "WORKER_RECV", "s0", "k", "id=a");
	add(tl, 0.3, "SEND", "t1", "sync", "call=1");
	add(tl, 0.4, "RECV", "t1", "open", "call=2");
	add(tl, 0.5, "WORKER_SEND", "s0", "k", "call=2 id=b op=add");
	add(tl, 0.6, "WORKER_RECV", "s0", "k", "id=b");
	mate_timeline_end_log(tl, NULL);
	mate_perfetto_flows(tr.pf, &written, &unended, &forgotten);
	CHECK_EQ_INT(written, 1);
	CHECK_EQ_INT(unended, 1);
	CHECK_EQ_INT(forgotten, 0);
	json = traced_json(tl, &tr);
	if (json != NULL) {
		CHECK_CONTAINS(json, "{\"name\":\"call\",\"cat\":\"mate\",\"ph\":\"s\",\"id\":1,"
		    "\"ts\":0.000,\"pid\":1,\"tid\":1}");
		/* tid 33: the worker is the second lane (no dispatcher for call=) */
		CHECK_CONTAINS(json, "{\"name\":\"call\",\"cat\":\"mate\",\"ph\":\"f\",\"bp\":\"e\","
		    "\"id\":1,\"ts\":100000.000,\"pid\":1,\"tid\":33}");
		CHECK(strstr(json, "\"id\":2") == NULL);
		free(json);
	}
	mate_timeline_free(tl);
}

static uint32_t
op_rgb(const mate_timeline *tl, const char *name)
{
	int i;

	for (i = 0; i < tl->nops; i++)
		if (strcmp(tl->ops[i].name, name) == 0)
			return tl->ops[i].rgb;
	return 0xffffffff;
}

/* mate's own calls (call=) go through no dispatcher: no lane for one; a
 * client that only connected has no lane; ops get distinct colours. */
DEFINE_TEST(own_lanes)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	const char *want[] = { "client t1", "w0" };

	add(tl, 0.0, "CONNECT", "idle", "", "");
	add(tl, 0.1, "RECV", "t1", "rmsnorm", "call=1 op=rmsnorm");
	add(tl, 0.2, "WORKER_SEND", "w0", "k", "call=1 id=a op=rmsnorm");
	add(tl, 0.3, "WORKER_RECV", "w0", "k", "id=a");
	add(tl, 0.4, "SEND", "t1", "rmsnorm", "call=1");
	add(tl, 0.5, "RECV", "t1", "fused_add_rmsnorm", "call=2 op=fused_add_rmsnorm");
	add(tl, 0.6, "SEND", "t1", "fused_add_rmsnorm", "call=2");
	check_lanes(tl, want, 2);
	CHECK_EQ_INT(op_rgb(tl, "rmsnorm"), 0x0072b2);   /* the palette, in order */
	CHECK_EQ_INT(op_rgb(tl, "fused_add_rmsnorm"), 0xe69f00);
	mate_timeline_free(tl);
}

/* GT's dispatcher has a lane (its requests' markers) but no spans: a call
 * open is not the dispatcher busy. */
DEFINE_TEST(dispatcher_busy)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);

	add(tl, 0.0, "RECV", "a", "Matmul", "");
	add(tl, 1.0, "SEND", "a", "Matmul", "success=True");
	add(tl, 2.0, "RECV", "a", "Matmul", "");
	CHECK(busy(tl, "dispatcher") == 0.0);
	CHECK(busy(tl, "client a") > 0.49 && busy(tl, "client a") < 0.51);
	mate_timeline_free(tl);
}

/* More calls left open than the id table holds (killed clients) must not
 * starve the calls and work that come after them. */
DEFINE_TEST(open_calls)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_timeline_stats st;
	char d[64];
	int i;

	for (i = 0; i < TL_IDS_MAX + 1000; i++) {
		snprintf(d, sizeof(d), "call=%d", i);
		add(tl, 0.001, "RECV", "dead", "k", d);
	}
	add(tl, 1.0, "RECV", "t1", "k", "call=live op=mm");
	add(tl, 1.1, "WORKER_SEND", "w0", "k", "call=live id=w op=mm");
	add(tl, 1.2, "WORKER_RECV", "w0", "k", "id=w");
	add(tl, 1.3, "SEND", "t1", "k", "call=live");
	mate_timeline_get_stats(tl, &st);
	CHECK_EQ_INT(st.ops, 1);
	CHECK_EQ_INT(st.calls, 1);
	CHECK_EQ_INT(tl->flows_total, 1);
	mate_timeline_free(tl);
}

DEFINE_TEST(lanes)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	const char *want[] = { "client b", "client a", "dispatcher", "w2", "w10", "memory m" };
	const char *filtered[] = { "w1" };
	mate_error err;

	add(tl, 1, "RECV", "b", "x", "");
	add(tl, 1, "WORKER_SEND", "w10", "k", "");
	add(tl, 1, "WORKER_SEND", "w2", "k", "worker=w2");
	add(tl, 1, "RECV", "a", "x", "");
	add(tl, 1, "FOO", "a", "x", "device=m in_use=1");
	check_lanes(tl, want, 6);
	mate_timeline_free(tl);

	tl = fresh("^w", 0, 0, 0, 0);
	add(tl, 1, "RECV", "b", "x", "");
	add(tl, 1, "WORKER_SEND", "w1", "k", "");
	add(tl, 2, "WORKER_RECV", "w1", "k", "");
	check_lanes(tl, filtered, 1);
	mate_timeline_free(tl);

	/* two logs: lanes of the same name stay apart */
	tl = fresh(NULL, 0, 0, 0, 0);
	add(tl, 1, "WORKER_SEND", "w1", "k", "");
	add(tl, 2, "WORKER_RECV", "w1", "k", "");
	mate_timeline_begin_log(tl, "second.log", &err);
	add(tl, 1, "WORKER_SEND", "w1", "k", "");
	add(tl, 2, "WORKER_RECV", "w1", "k", "");
	mate_timeline_end_log(tl, NULL);
	{
		mate_timeline_stats st;
		mate_timeline_get_stats(tl, &st);
		CHECK_EQ_INT(st.workers, 2);
		CHECK_EQ_INT(st.logs, 2);
		CHECK_EQ_INT(st.ops, 2);
	}
	mate_timeline_free(tl);

	{
		mate_timeline_options o;
		mate_timeline_options_init(&o);
		o.lanes = "(";
		CHECK(mate_timeline_new(&o, &err) == NULL);
		CHECK_EQ_INT(err.code, MATE_ERR_ARGUMENT);
		CHECK_CONTAINS(err.message, "lanes regex: (");
	}
}

DEFINE_TEST(clip)
{
	mate_timeline *tl = fresh(NULL, 1, 2.0, 1, 4.0);
	mate_timeline_stats st;

	add(tl, 1, "WORKER_SEND", "w", "k", "op=matmul");
	add(tl, 5, "WORKER_RECV", "w", "k", "");
	add(tl, 6, "WORKER_SEND", "w", "k", "op=add");
	add(tl, 7, "WORKER_RECV", "w", "k", "");
	ended(tl, &st);
	CHECK_EQ_INT(st.ops, 1);
	CHECK_EQ_INT(st.op_types, 1);
	CHECK(st.t0 == 2.0 && st.t1 == 4.0);
	CHECK(fabs(busy(tl, "w") - 1.0) < 1e-9);
	mate_timeline_free(tl);
}

DEFINE_TEST(render_errors)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_render_options ro;
	mate_render_info ri;
	mate_error err;
	int fd = open("/dev/null", O_WRONLY), f;

	add(tl, 1, "WORKER_SEND", "w", "k", "op=matmul");
	add(tl, 2, "WORKER_RECV", "w", "k", "");
	mate_render_options_init(&ro);
	CHECK(ro.dpi == 150 && ro.width == 16 && ro.height == 10 && ro.format == MATE_RENDER_PNG);
	for (f = MATE_RENDER_PNG; f <= MATE_RENDER_PDF; f++) {
		ro.format = f;
		CHECK_EQ_INT(mate_timeline_render_fd(tl, &ro, fd, &ri, &err), MATE_OK);
		CHECK_EQ_INT(ri.width_px, 2400);
		CHECK_EQ_INT(ri.height_px, 1500);
		CHECK(ri.plot_x0 > 0 && ri.plot_x1 < 2400 && ri.plot_x0 < ri.plot_x1);
	}
	ro.format = MATE_RENDER_PNG;
	ro.dpi = 5;
	CHECK_EQ_INT(mate_timeline_render_fd(tl, &ro, fd, &ri, &err), MATE_ERR_ARGUMENT);
	CHECK_CONTAINS(err.message, "dpi 5");
	ro.dpi = 2400;
	ro.width = ro.height = 100;
	CHECK_EQ_INT(mate_timeline_render_fd(tl, &ro, fd, &ri, &err), MATE_ERR_LIMIT);
	CHECK_CONTAINS(err.message, "picture too large");
	mate_render_options_init(&ro);
	CHECK(mate_timeline_render(tl, &ro, "/nonexistent/dir/x.png", &ri, &err) != MATE_OK);
	CHECK_CONTAINS(err.message, "cannot create");
	ro.format = MATE_RENDER_SVG;
	CHECK(mate_timeline_render_fd(tl, &ro, -1, &ri, &err) != MATE_OK);   /* a write error */
	close(fd);
	mate_timeline_free(tl);
}

/* Many events: the counts stay right, pairing stays balanced. */
DEFINE_TEST(many)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_timeline_stats st;
	char det[64];
	int i;

	for (i = 0; i < 200000; i++) {
		double t = i * 1e-4;
		snprintf(det, sizeof(det), "call=%d op=%s", i, i % 3 ? "add" : "matmul");
		add(tl, t, "RECV", "c", "op", det);
		snprintf(det, sizeof(det), "call=%d id=%d", i, i);
		add(tl, t, "WORKER_SEND", i % 2 ? "s1" : "s0", "k", det);
		add(tl, t + 5e-5, "SEND", "c", "op", det);
		add(tl, t + 8e-5, "WORKER_RECV", i % 2 ? "s1" : "s0", "k", det);
	}
	ended(tl, &st);
	CHECK_EQ_INT(st.events, 800000);
	CHECK_EQ_INT(st.ops, 200000);
	CHECK_EQ_INT(st.calls, 200000);
	CHECK_EQ_INT(st.unpaired, 0);
	CHECK_EQ_INT(st.op_types, 2);
	CHECK(fabs(busy(tl, "s0") - 0.4) < 0.01);   /* 80 us of every 200 us */
	{
		mate_render_options ro;
		mate_error err;
		int fd = open("/dev/null", O_WRONLY);
		mate_render_options_init(&ro);
		CHECK_EQ_INT(mate_timeline_render_fd(tl, &ro, fd, NULL, &err), MATE_OK);
		close(fd);
	}
	mate_timeline_free(tl);
}

/* Other hosts' events (host=): kept in order of their first event, up to 64; a clock=
 * is taken only when it is a finite, non-zero number of seconds. */
DEFINE_TEST(hosts_and_clocks)
{
	mate_timeline *tl = fresh(NULL, 0, 0, 0, 0);
	mate_timeline_stats st;
	const char *name;
	double c = -1;
	char det[96];
	int i;

	add(tl, 0.1, "WORKER_SEND", "w0", "k", "id=1 pid=7 host=b clock=+30.000");
	add(tl, 0.2, "WORKER_RECV", "w0", "k", "id=1 pid=7 host=b");
	add(tl, 0.3, "WORKER_SEND", "w0", "k", "id=2 pid=8 host=a clock=-2.5s");
	add(tl, 0.4, "WORKER_SEND", "w0", "k", "id=3 pid=9 host=c clock=nan");
	add(tl, 0.5, "WORKER_SEND", "w0", "k", "id=4 pid=9 host=d clock=1e400");
	add(tl, 0.6, "WORKER_SEND", "w0", "k", "id=5 pid=9 host=e clock=12x");
	add(tl, 0.7, "WORKER_SEND", "w0", "k", "id=6 pid=9 host=f clock=0");
	add(tl, 0.8, "WORKER_SEND", "w0", "k", "id=7 pid=10 clock=+5");   /* no host */
	mate_timeline_get_stats(tl, &st);
	CHECK_EQ_INT(st.hosts, 6);
	CHECK_EQ_INT(st.hosts_moved, 2);
	CHECK_EQ_INT(mate_timeline_host(tl, 0, &name, &c), 1);
	CHECK_STR(name, "b");
	CHECK(c == 30.0);
	CHECK_EQ_INT(mate_timeline_host(tl, 1, &name, &c), 1);
	CHECK_STR(name, "a");
	CHECK(c == -2.5);
	for (i = 2; i < 6; i++) {
		CHECK_EQ_INT(mate_timeline_host(tl, i, NULL, &c), 0);
		CHECK(c == 0);
	}
	CHECK_EQ_INT(mate_timeline_host(tl, 6, NULL, NULL), -1);
	for (i = 0; i < 100; i++) {
		snprintf(det, sizeof(det), "id=%d host=h%d", 100 + i, i);
		add(tl, 1 + i * 0.01, "WORKER_SEND", "w1", "k", det);
	}
	mate_timeline_get_stats(tl, &st);
	CHECK_EQ_INT(st.hosts, 64);
	mate_timeline_free(tl);
}

TEST_MAIN()
