/* test_ilog.c: the instruction-log line format: formatting exactly as GT does, parsing every quirk, round trips, the streaming reader, op types and colours. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mate_events.h"
#include "events_private.h"
#include "test.h"

/* tests/fixtures/gt-logs of the source tree, set by main(). */
static char dir[900];

static mate_event
ev_make(double t, uint64_t seq, const char *event, const char *source, const char *cmd,
    int64_t size, const char *details)
{
	return (mate_event){ .time = t, .seq = seq, .event = event, .source = source,
		.command = cmd, .size = size, .details = details };
}

DEFINE_TEST(sizes)
{
	char s[16];

	CHECK_EQ_INT(mate_ilog_format_size(s, 0), 0);
	CHECK_STR(s, "");
	mate_ilog_format_size(s, -5);
	CHECK_STR(s, "");
	mate_ilog_format_size(s, 91);
	CHECK_STR(s, "91B");
	mate_ilog_format_size(s, 1023);
	CHECK_STR(s, "1023B");
	mate_ilog_format_size(s, 1024);
	CHECK_STR(s, "1.0KB");
	mate_ilog_format_size(s, 40243);
	CHECK_STR(s, "39.3KB");
	mate_ilog_format_size(s, 1024 * 1024 - 1);
	CHECK_STR(s, "1024.0KB");
	mate_ilog_format_size(s, 4194304);
	CHECK_STR(s, "4.00MB");
	mate_ilog_format_size(s, (int64_t)3 << 40);
	CHECK_STR(s, "3145728.00MB");
}

DEFINE_TEST(format)
{
	char buf[512];
	mate_event ev;
	int n;

	/* GT's documentation example, with GT's real column widths */
	ev = ev_make(0.123, 42, "RECV", "127.0.0.1:12345", "BinaryOp", 125952, "result=42 op=add");
	n = mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  0.123000s | #0042 | RECV         | CLIENT 127.0.0.1:12345      | "
	    "BinaryOp        |    123.0KB | result=42 op=add\n");
	CHECK_EQ_INT(n, (int)strlen(buf));
	/* the source word follows the event name */
	ev = ev_make(0.125, 43, "WORKER_SEND", "worker_0", "WorkerBinaryOp", 45, "op=add");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  0.125000s | #0043 | WORKER_SEND  | WORKER worker_0             | "
	    "WorkerBinaryOp  |        45B | op=add\n");
	/* no size (MODIFIER_INJECT never has one): 6 fields; overflowing columns */
	ev = ev_make(0.827, 4, "MODIFIER_INJECT", "CLIENT 006b8b4568", "CreateTensor", 0,
	    "tensor_id=0 shape=(4,)");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  0.827000s | #0004 | MODIFIER_INJECT | CLIENT CLIENT 006b8b4568    | "
	    "CreateTensor    | tensor_id=0 shape=(4,)\n");
	/* 5 fields end in the command's padding */
	ev = ev_make(1.5, 7, "CONNECT", "4711", "CLIENT", -1, "");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  1.500000s | #0007 | CONNECT      | CLIENT 4711                 | CLIENT         \n");
	/* times past 100 s lose the leading space; 1000 s overflow; #10000 */
	ev = ev_make(1234.5, 10000, "SEND", "c", "WorkerCompileStart", 88, "x");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "1234.500000s | #10000 | SEND         | CLIENT c                    | "
	    "WorkerCompileStart |        88B | x\n");
	ev = ev_make(100.25, 1, "SEND", "c", "x", 1, NULL);
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK(strncmp(buf, "100.250000s | #0001 |", 21) == 0);
	/* newlines and bars cannot break a line */
	ev = ev_make(0, 1, "RE|CV", "a | b", "c\nd", -1, "x\ny | z");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  0.000000s | #0001 | RE!CV        | CLIENT a ! b                | c d             "
	    "| x y | z\n");
	/* ESC, BEL and C1 controls reach no terminal raw (mate-trace's log) */
	ev = ev_make(0, 1, "RECV", "c\x1b]0;x\a", "op\x1b[2J", -1, "w\xc2\x9b" "1m \xff\\");
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK_STR(buf, "  0.000000s | #0001 | RECV         | CLIENT c\\x1b]0;x\\x07        | "
	    "op\\x1b[2J       | w\\x9b1m \\xff\\\\\n");
	{
		char *e = mate_text_escape("a\nb\tc\x1b\x07\\ \xc3\xa9\xc2\x85", 13);
		CHECK_STR(e, "a\\nb\\tc\\x1b\\x07\\\\ \xc3\xa9\\x85");
		free(e);
	}
	/* truncation reports the full length, like snprintf */
	ev = ev_make(0.123, 42, "RECV", "127.0.0.1:12345", "BinaryOp", 125952, "result=42 op=add");
	n = mate_ilog_format(buf, 10, &ev);
	CHECK_EQ_INT(n, 115);
	CHECK_EQ_INT((int)strlen(buf), 9);
	/* microseconds: a 100 us call is 100 us long, not 0 or 1 ms */
	ev = ev_make(2.0001234, 5, "RECV", "c", "x", -1, NULL);
	mate_ilog_format(buf, sizeof(buf), &ev);
	CHECK(strncmp(buf, "  2.000123s | #0005 |", 21) == 0);
	{
		mate_event back;
		char line[256];
		size_t len = strlen(buf) - 1;
		memcpy(line, buf, len);
		line[len] = '\0';
		CHECK_EQ_INT(mate_ilog_parse_line(line, len, &back, NULL), 1);
		CHECK(fabs(back.time - 2.000123) < 1e-9);
	}
	/* the header is skipped by the parser */
	n = mate_ilog_format_header(buf, sizeof(buf), "mate Instruction Stream", 0);
	CHECK(n > (int)sizeof(buf) - 1);
}

static int
parse(const char *text, mate_event *ev, char *scratch, const char **why)
{
	strcpy(scratch, text);
	return mate_ilog_parse_line(scratch, strlen(scratch), ev, why);
}

/* An event line and the event it parses to. */
struct parse_case {
	const char *line;
	double time;
	uint64_t seq;
	const char *event;
	int source_kind;
	const char *source, *command;
	int64_t size;
	const char *details;
};

static const struct parse_case events[] = {
	/* 7 fields, GT's CLIENT CLIENT <hex> */
	{ "  0.823s | #0001 | RECV         | CLIENT CLIENT 006b8b4567    | "
	  "RegisterWorker  |        88B | worker_id=auto_worker",
	  0.823, 1, "RECV", MATE_SOURCE_CLIENT, "CLIENT 006b8b4567", "RegisterWorker", 88,
	  "worker_id=auto_worker" },
	/* 6 fields: details, not a size */
	{ "  0.827s | #0004 | MODIFIER_INJECT | CLIENT CLIENT 006b8b4568    | "
	  "CreateTensor    | tensor_id=0 shape=(4,)",
	  0.827, 4, "MODIFIER_INJECT", MATE_SOURCE_CLIENT, "CLIENT 006b8b4568", "CreateTensor", -1,
	  "tensor_id=0 shape=(4,)" },
	/* 6 fields: a size, not details */
	{ "  0.828s | #0005 | WORKER_RECV  | WORKER auto_worker          | "
	  "WorkerBatch     |     39.3KB",
	  0.828, 5, "WORKER_RECV", MATE_SOURCE_WORKER, "auto_worker", "WorkerBatch", 40243, "" },
	/* 5 fields, trailing spaces */
	{ "  0.300s | #0019 | MODIFIER_INJECT | CLIENT CLIENT 006b8b4568    | "
	  "BinaryOp        ",
	  0.3, 19, "MODIFIER_INJECT", MATE_SOURCE_CLIENT, "CLIENT 006b8b4568", "BinaryOp", -1, "" },
	/* sizes in MB, times past 1000 s, sequences past four digits */
	{ "1234.500s | #10000 | SEND         | CLIENT CLIENT 006b8b4568    | "
	  "GetData         |     4.00MB | success=True",
	  1234.5, 10000, "SEND", MATE_SOURCE_CLIENT, "CLIENT 006b8b4568", "GetData", 4194304,
	  "success=True" },
	/* overrunning columns, details with spaces and pipes */
	{ "  0.200s | #0009 | WORKER_SEND  | WORKER gpu_worker_with_a_long_name_0 | "
	  "WorkerCompileStart |        88B | [2 cmds: WorkerCreateTensor, WorkerBinaryOp] | x",
	  0.2, 9, "WORKER_SEND", MATE_SOURCE_WORKER, "gpu_worker_with_a_long_name_0",
	  "WorkerCompileStart", 88, "[2 cmds: WorkerCreateTensor, WorkerBinaryOp] | x" },
	/* GT's documentation: an ip:port client, unpadded sizes */
	{ "  0.127s | #0044 | WORKER_RECV  | WORKER worker_0        | "
	  "WorkerResponse  | 45B   | success=True",
	  0.127, 44, "WORKER_RECV", MATE_SOURCE_WORKER, "worker_0", "WorkerResponse", 45,
	  "success=True" },
	/* CRLF */
	{ "  0.1s | #1 | RECV | CLIENT x | Cmd | 1B | a=b\r",
	  0.1, 1, "RECV", MATE_SOURCE_CLIENT, "x", "Cmd", 1, "a=b" },
};

/* Lines that are no event (rc 0) or malformed (rc -1, why says so). */
static const struct {
	const char *line;
	int rc;
	const char *why;
} not_events[] = {
	/* header lines, the Format line with pipes, blank */
	{ "Format: <elapsed> | #<seq> | <event_type> | <source> | <command> | <details>", 0, NULL },
	{ "=====", 0, NULL },
	{ "", 0, NULL },
	{ "  elapsed  = Seconds since dispatcher start", 0, NULL },
	{ "  0.900s | #0099 | RECV", -1, "too few fields" },
	{ "  1.2.3s | #0100 | RECV | CLIENT x | Cmd", -1, "bad time" },
	{ "  0.1s | #12a | RECV | CLIENT x | Cmd", -1, "sequence" },
	{ "  0.1s | #99999999999999999999999 | RECV | CLIENT x | Cmd", -1, NULL },
	{ "  0.1s | #1 |   | CLIENT x | Cmd", -1, "empty event" },
	{ "  9999999999.0s | #1 | RECV | CLIENT x | Cmd", -1, "time" },
};

DEFINE_TEST(parse)
{
	static char line[1024];
	mate_event ev;
	const char *why;

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		const struct parse_case *c = &events[i];

		CHECK_EQ_INT(parse(c->line, &ev, line, &why), 1);
		CHECK(ev.time == c->time);   /* exact: a decimal over its power of ten */
		CHECK_EQ_INT(ev.seq, c->seq);
		CHECK_STR(ev.event, c->event);
		CHECK_EQ_INT(ev.source_kind, c->source_kind);
		CHECK_STR(ev.source, c->source);
		CHECK_STR(ev.command, c->command);
		CHECK_EQ_INT(ev.size, c->size);
		CHECK_STR(ev.details, c->details);
	}
	for (size_t i = 0; i < sizeof(not_events) / sizeof(not_events[0]); i++) {
		CHECK_EQ_INT(parse(not_events[i].line, &ev, line, &why), not_events[i].rc);
		if (not_events[i].why != NULL)
			CHECK_CONTAINS(why, not_events[i].why);
	}
	memcpy(line, "  0.1s | #1 | RE\0V | CLIENT x | Cmd", 36);
	CHECK_EQ_INT(mate_ilog_parse_line(line, 35, &ev, &why), -1);
	CHECK_CONTAINS(why, "NUL");
}

/* Every event line of a GT log formats back to itself, byte for byte, but
 * for the time, which mate writes with microseconds (GT's "%7.3f" becomes
 * "%10.6f" of the same value). */
static void
roundtrip(const char *name)
{
	char path[1024];
	FILE *f;
	char line[4096], copy[4096], out[4096], want[4200];
	mate_event ev;
	int n = 0, same = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t len = strlen(line);
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		strcpy(copy, line);
		if (mate_ilog_parse_line(copy, len, &ev, NULL) != 1)
			continue;
		n++;
		mate_ilog_format(out, sizeof(out), &ev);
		out[strlen(out) - 1] = '\0';
		snprintf(want, sizeof(want), "%10.6f%s", ev.time, strchr(line, 's'));
		if (strcmp(out, want) == 0)
			same++;
		else
			fprintf(stderr, "round trip:\n  %s\n  %s\n", want, out);
	}
	fclose(f);
	CHECK(n > 20);
	CHECK_EQ_INT(same, n);
}

DEFINE_TEST(roundtrip)
{
	roundtrip("demo.log");
	roundtrip("multiworker4_autoshard.log");
}

DEFINE_TEST(reader)
{
	char path[1024], *text;
	mate_error err;
	mate_ilog *r;
	mate_event ev;
	mate_ilog_stats st;
	uint64_t line;
	const char *why;
	int n = 0;
	size_t i;

	snprintf(path, sizeof(path), "%s/demo.log", dir);
	r = mate_ilog_open(path, &err);
	CHECK(r != NULL);
	if (r == NULL)
		return;
	while (mate_ilog_next(r, &ev, &err) == 1) {
		if (n++ == 0) {
			CHECK_EQ_INT(ev.line, 21);   /* GT's header is 20 lines */
			CHECK_STR(ev.command, "RegisterWorker");
		}
	}
	mate_ilog_get_stats(r, &st);
	CHECK_EQ_INT(n, 22);
	CHECK_EQ_INT(st.events, 22);
	CHECK_EQ_INT(st.skipped, 20);
	CHECK_EQ_INT(st.malformed, 0);
	CHECK_STR(mate_ilog_name(r), path);
	mate_ilog_free(r);

	r = mate_ilog_open("/nonexistent/x.log", &err);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.message, "cannot open: /nonexistent/x.log");
	CHECK_EQ_INT(err.code, MATE_ERR_IO);

	/* memory: no final newline, junk after events, a long line, a second header */
	text = malloc(200000);
	strcpy(text, "header\n  0.1s | #1 | RECV | CLIENT a | X\njunk\n\n");
	i = strlen(text);
	memcpy(text + i, "  0.2s | #2 | SEND | CLIENT a | ", 32);
	memset(text + i + 32, 'y', 100000);
	strcpy(text + i + 100032, "\n==========\nnew header\n  0.3s | #3 | SEND | CLIENT a | X");
	r = mate_ilog_open_memory(text, strlen(text), "mem", &err);
	n = 0;
	while (mate_ilog_next(r, &ev, &err) == 1)
		n++;
	mate_ilog_get_stats(r, &st);
	CHECK_EQ_INT(n, 2);
	CHECK_STR(ev.event, "SEND");
	CHECK_EQ_INT(st.malformed, 2);
	CHECK_EQ_INT(st.lines, 8);
	CHECK_EQ_INT(mate_ilog_malformed(r, 0, &line, &why), 0);
	CHECK_EQ_INT(line, 3);
	CHECK_STR(why, "not an event line");
	CHECK_EQ_INT(mate_ilog_malformed(r, 1, &line, &why), 0);
	CHECK_EQ_INT(line, 5);
	CHECK_STR(why, "line too long");
	CHECK_EQ_INT(mate_ilog_malformed(r, 2, &line, &why), -1);
	mate_ilog_free(r);
	free(text);
}

DEFINE_TEST(ops)
{
	char buf[32], v[16];
	mate_event ev;

	CHECK_EQ_INT(mate_ilog_detail("result=2 op=sub left=0", "op", v, sizeof(v)), 3);
	CHECK_STR(v, "sub");
	CHECK_EQ_INT(mate_ilog_detail("loop=3 op=x", "op", v, sizeof(v)), 1);
	CHECK_STR(v, "x");
	CHECK_EQ_INT(mate_ilog_detail("scope=3", "op", v, sizeof(v)), -1);
	CHECK_EQ_INT(mate_ilog_detail("call=123456789012345678", "call", v, 4), 18);
	CHECK_STR(v, "123");
	ev = ev_make(0, 1, "RECV", "c", "BinaryOp", 1, "result=2 op=MatMul");
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "matmul");
	ev.details = "result=2";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "add");   /* GT's guess */
	ev.command = "UnaryOp";
	ev.details = "result=6 relu input=5";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "relu");
	ev.command = "WorkerBatch";
	ev.details = "[2 cmds: WorkerGetData, WorkerBinaryOp]";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "getdata");
	ev.command = "WorkerFreeTensor";
	ev.details = "";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "freetensor");
	ev.command = "GatherShards";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "allgather");
	ev.command = "cublasSgemm_v2";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "matmul");
	ev.command = "CreateTensor";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "other");
	ev.details = "op=rms<norm>";
	CHECK_STR(mate_ilog_op(&ev, buf, sizeof(buf)), "rmsnorm");
	CHECK_EQ_INT(mate_op_color("matmul"), 0xe74c3c);
	CHECK_EQ_INT(mate_op_color("add"), 0x3498db);
	CHECK_EQ_INT(mate_op_color("other"), 0x7f8c8d);
	CHECK_EQ_INT(mate_op_color("rmsnorm"), mate_op_color("rmsnorm"));
	CHECK(mate_op_color("rmsnorm") != mate_op_color("matmul"));
}

/* Reading ahead on a second thread returns what reading in turn does: every
 * event, field by field, over several batches (long lines fill a batch's
 * arena first), the malformed lines and the counts at the end; and an
 * empty log and a log freed half-read end cleanly. */
DEFINE_TEST(read_ahead)
{
	size_t cap = 16 << 20, o = 0;
	char *text = malloc(cap), *long_details = malloc(40001);
	mate_ilog *a, *b;
	mate_event ea, eb;
	mate_ilog_stats sa, sb;
	mate_error err;
	uint64_t la, lb;
	const char *wa, *wb;
	int ra, rb, n = 0, same = 1;

	CHECK(text != NULL && long_details != NULL);
	if (text == NULL || long_details == NULL)
		return;
	memset(long_details, 'd', 40000);
	long_details[40000] = '\0';
	o += (size_t)snprintf(text + o, cap - o, "====\nmate Instruction Stream\n====\n\n");
	for (int i = 1; i <= 12000; i++) {
		if (i % 1000 == 0)
			o += (size_t)snprintf(text + o, cap - o, "%d.5s | #x | RECV | bad\n", i);
		o += (size_t)snprintf(text + o, cap - o, "%10.6fs | #%04d | %s | CLIENT %d | cmd%d | %s | "
		    "call=%d op=%s%s\n", i * 1e-3, i, i % 2 ? "RECV" : "SEND", i % 3, i % 7,
		    i % 5 ? "4.0KB" : "12B", i, i % 4 ? "add" : "matmul",
		    i % 500 == 0 ? long_details : "");
	}
	a = mate_ilog_open_memory(text, o, "serial", &err);
	b = mate_ilog_open_memory(text, o, "ahead", &err);
	CHECK(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		goto out;
	CHECK_EQ_INT(mate_ilog_read_ahead(b, &err), MATE_OK);
	CHECK_EQ_INT(mate_ilog_read_ahead(b, &err), MATE_ERR_ARGUMENT);  /* once */
	do {
		ra = mate_ilog_next(a, &ea, &err);
		rb = mate_ilog_next(b, &eb, &err);
		if (ra != rb || (ra == 1 && (ea.time != eb.time || ea.seq != eb.seq ||
		    ea.line != eb.line || ea.size != eb.size || ea.source_kind != eb.source_kind ||
		    strcmp(ea.event, eb.event) != 0 || strcmp(ea.source, eb.source) != 0 ||
		    strcmp(ea.command, eb.command) != 0 || strcmp(ea.details, eb.details) != 0))) {
			same = 0;
			break;
		}
		n += ra == 1;
	} while (ra == 1);
	CHECK(same);
	CHECK_EQ_INT(n, 12000);
	CHECK_EQ_INT(rb, 0);
	CHECK_EQ_INT(mate_ilog_next(b, &eb, &err), 0);  /* and again at the end */
	mate_ilog_get_stats(a, &sa);
	mate_ilog_get_stats(b, &sb);
	CHECK_EQ_INT(sb.events, sa.events);
	CHECK_EQ_INT(sb.lines, sa.lines);
	CHECK_EQ_INT(sb.skipped, sa.skipped);
	CHECK_EQ_INT(sb.malformed, 12);
	CHECK_EQ_INT(sb.malformed, sa.malformed);
	CHECK_EQ_INT(mate_ilog_bytes_read(b), o);
	for (int i = 0; i < MATE_ILOG_MALFORMED_KEEP; i++) {
		CHECK_EQ_INT(mate_ilog_malformed(b, i, &lb, &wb), mate_ilog_malformed(a, i, &la, &wa));
		CHECK_EQ_INT(lb, la);
		CHECK_STR(wb, wa);
	}
	mate_ilog_free(a);
	mate_ilog_free(b);

	b = mate_ilog_open_memory(text, o, "freed half-read", &err);
	CHECK_EQ_INT(mate_ilog_read_ahead(b, &err), MATE_OK);
	CHECK_EQ_INT(mate_ilog_next(b, &eb, &err), 1);
	mate_ilog_free(b);   /* the thread waits for room: it is stopped */
	b = mate_ilog_open_memory("", 0, "empty", &err);
	CHECK_EQ_INT(mate_ilog_read_ahead(b, &err), MATE_OK);
	CHECK_EQ_INT(mate_ilog_next(b, &eb, &err), 0);
	mate_ilog_free(b);
out:
	free(text);
	free(long_details);
}

/* The one-pass index of a details string answers as mate_ilog_detail() does
 * on the same text, for every key, including the awkward places. */
DEFINE_TEST(details_index)
{
	static const char *const texts[] = {
		"", "op=sub", "result=2 op=sub left=0", "loop=3 op=x", "scope=3",
		"[2 cmds: op=a, op=b]", "a=[op=1] op=2", "x=op=1 op=3", "op= op=4",
		"=5 op=6", "op=7,call=8]id=9", " call=1  call=2", "]op=1 ,op=2",
		"thread=main call=12.3 depth=0 op=gemm", "aop=1 op_x=2 op=3", "op",
		"call=1 status=ok error= success=False", "in_use=1024 device=cuda:0",
	};
	static const char *const keys[] = { "op", "call", "id", "depth", "thread", "status",
		"error", "success", "in_use", "device", "x", "a", "loop", "scope", "left" };
	struct mate_ilog_details d;
	char big[2048], want[16], got[16];
	size_t o = 0;

	for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		mate_ilog_details_index(&d, texts[t]);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			int a = mate_ilog_detail(texts[t], keys[k], want, sizeof(want));
			int b = mate_ilog_details_get(&d, keys[k], got, sizeof(got));
			if (a != b || (a >= 0 && strcmp(want, got) != 0))
				fprintf(stderr, "details \"%s\", key %s: %d \"%s\" against %d \"%s\"\n",
				    texts[t], keys[k], a, a >= 0 ? want : "", b, b >= 0 ? got : "");
			CHECK_EQ_INT(b, a);
			if (a >= 0)
				CHECK_STR(got, want);
		}
	}
	/* more pairs than the index keeps: the later ones are still found */
	for (int i = 0; i < MATE_ILOG_PAIRS + 8; i++)
		o += (size_t)snprintf(big + o, sizeof(big) - o, "k%d=%d ", i, i);
	snprintf(big + o, sizeof(big) - o, "op=last");
	mate_ilog_details_index(&d, big);
	CHECK(d.more);
	CHECK_EQ_INT(mate_ilog_details_get(&d, "op", got, sizeof(got)), 4);
	CHECK_STR(got, "last");
	CHECK_EQ_INT(mate_ilog_details_get(&d, "k3", got, sizeof(got)), 1);
	CHECK_STR(got, "3");
	CHECK_EQ_INT(mate_ilog_details_get(&d, "k30", got, sizeof(got)), 2);
	CHECK_STR(got, "30");
	CHECK_EQ_INT(mate_ilog_details_get(&d, "nope", got, sizeof(got)), -1);
}

int
main(int argc, char **argv)
{
	const char *src = getenv("top_srcdir");

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/gt-logs", src != NULL ? src : ".");
	return test_main(argc, argv);
}
