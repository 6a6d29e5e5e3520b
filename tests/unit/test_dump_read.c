/* test_dump_read.c: unit tests of reading dumps: Python literals, recorded values, the last record of metadata.jsonl, and listing. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mate_replay.h"
#include "dump_private.h"
#include "test.h"

static char *tmp;   /* made and removed by main() */

static void
write_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		exit(99);
	}
	fputs(text, f);
	fclose(f);
}

static void
make_dir(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	mkdir(path, 0755);
}

static mate_value *
lit(const char *s)
{
	mate_error err;
	mate_value *v = mate_pyliteral_parse(s, strlen(s), &err);

	if (v == NULL)
		fprintf(stderr, "parse '%s': %s\n", s, err.message);
	return v;
}

/* A literal or a record's JSON, the kind of its value and its length
 * (-1: not a container). */
struct kind_case {
	const char *text;
	mate_value_kind kind;
	int len;
};

/* Each case's text through parse, as kind of len. */
static void
check_kinds(mate_value *(*parse)(const char *), const struct kind_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		mate_value *v = parse(c[i].text);

		CHECK_EQ_INT(mate_value_kind_of(v), c[i].kind);
		if (c[i].len >= 0)
			CHECK_EQ_INT(mate_value_len(v), c[i].len);
		mate_value_free(v);
	}
}

DEFINE_TEST(pyliteral)
{
	static const struct kind_case containers[] = {
		{ "[1, 2, 3]", MATE_V_LIST, 3 }, { "(4, 5)", MATE_V_TUPLE, 2 }, { "(7,)", MATE_V_TUPLE, 1 },
		{ "()", MATE_V_TUPLE, 0 },
		{ "12345678901234567890", MATE_V_FLOAT, -1 },  /* beyond int64: a float */
	};
	mate_value *v;
	mate_error err;

	check_kinds(lit, containers, sizeof(containers) / sizeof(containers[0]));
	v = lit("[1, 2, 3]");
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 2)), 3);
	mate_value_free(v);

	v = lit("{'k': 1, 'v': [2]}");
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_DICT);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(v, "k")), 1);
	CHECK_EQ_INT(mate_value_len(mate_value_lookup(v, "v")), 1);
	mate_value_free(v);

	v = lit("[0.5, True, False, None, -3, 1e-05, 'a\\'b\\n\\x41\\u00e9', \"q\"]");
	CHECK_EQ_INT(mate_value_len(v), 8);
	CHECK(mate_value_get_float(mate_value_item(v, 0)) == 0.5);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 1)), MATE_V_BOOL);
	CHECK_EQ_INT(mate_value_get_bool(mate_value_item(v, 1)), 1);
	CHECK_EQ_INT(mate_value_get_bool(mate_value_item(v, 2)), 0);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 3)), MATE_V_NONE);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 4)), -3);
	CHECK(mate_value_get_float(mate_value_item(v, 5)) == 1e-05);
	CHECK_STR(mate_value_get_str(mate_value_item(v, 6), NULL), "a'b\nA\xc3\xa9");
	CHECK_STR(mate_value_get_str(mate_value_item(v, 7), NULL), "q");
	mate_value_free(v);

	v = lit("[nan, inf, -inf, torch.bfloat16, <Mode.FAST: 0>, b'\\x00z']");
	CHECK(isnan(mate_value_get_float(mate_value_item(v, 0))));
	CHECK(mate_value_get_float(mate_value_item(v, 1)) == INFINITY);
	CHECK(mate_value_get_float(mate_value_item(v, 2)) == -INFINITY);
	CHECK_EQ_INT(mate_value_get_dtype(mate_value_item(v, 3)), MATE_BF16);
	CHECK_STR(mate_value_enum_name(mate_value_item(v, 4)), "Mode.FAST");
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 5)), MATE_V_BYTES);
	mate_value_free(v);

	/* malformed: an error, never a crash */
	static const char *bad[] = { "[1, 2", "{'a' 1}", "'open", "[tensor([1.])]", "(1, 2))",
	    "", "[,]", "{1: }", "\\", "<X: y>", "<\": ", "<X:", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mate_error_clear(&err);
		v = mate_pyliteral_parse(bad[i], strlen(bad[i]), &err);
		CHECK(v == NULL);
		CHECK_EQ_INT(err.code, MATE_ERR_FORMAT);
		mate_value_free(v);
	}
}

static mate_value *
decode(const char *json)
{
	cJSON *j = cJSON_Parse(json);
	mate_error err;
	mate_value *v = mate_record_decode_value(j, &err);

	cJSON_Delete(j);
	return v;
}

DEFINE_TEST(decode)
{
	static const struct kind_case lists[] = {
		{ "{\"type\": \"list\", \"value\": \"[1, 2, 3]\"}", MATE_V_LIST, 3 },
		/* a container MATE could not repr as a literal stays an object */
		{ "{\"type\": \"list\", \"value\": \"[tensor([1.])]\"}", MATE_V_OBJECT, -1 },
		{ "{\"type\": \"list\", \"length\": 9, \"items\": [1], \"truncated\": true}",
		    MATE_V_OBJECT, -1 },
	};
	mate_value *v;

	check_kinds(decode, lists, sizeof(lists) / sizeof(lists[0]));

	v = decode("{\"type\": \"tuple\", \"length\": 2, \"items\": [1, {\"type\": \"torch.dtype\", "
	    "\"value\": \"torch.float16\"}], \"truncated\": false}");
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_TUPLE);
	CHECK_EQ_INT(mate_value_get_dtype(mate_value_item(v, 1)), MATE_F16);
	mate_value_free(v);

	v = decode("{\"type\": \"dict\", \"length\": 1, \"items\": [{\"key\": \"a\", \"value\": 2.5}]}");
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_DICT);
	CHECK(mate_value_get_float(mate_value_lookup(v, "a")) == 2.5);
	mate_value_free(v);

	v = decode("{\"type\": \"enum\", \"name\": \"Mode.SLOW\", \"value\": 1}");
	CHECK_STR(mate_value_enum_name(v), "Mode.SLOW");
	CHECK_EQ_INT(mate_value_get_int(v), 1);
	mate_value_free(v);

	v = decode("{\"type\": \"Widget\", \"repr\": \"Widget(3)\"}");
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_OBJECT);
	CHECK_STR(mate_value_object_type(v), "Widget");
	CHECK_STR(mate_value_object_repr(v), "Widget(3)");
	mate_value_free(v);

	v = decode("[7, 0.5, null, \"s\", true]");
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 0)), MATE_V_INT);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 1)), MATE_V_FLOAT);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 2)), MATE_V_NONE);
	mate_value_free(v);
}

#define REC(status, extra) "{\"function_name\": \"f\", \"module\": \"m\", \"timestamp\": " \
	"\"20260101_000000_000\", \"process_id\": 7, \"tensor_info\": {\"input_tensor_keys\": " \
	"[\"arg_0\"], \"output_tensor_keys\": [], \"input_size_bytes\": 4}, \"execution_status\": \"" \
	status "\"" extra "}"

static cJSON *
read_last(const char *text, struct mate_notes *notes)
{
	struct mate_dump_info info;
	struct mate_arena a = { NULL };
	cJSON *rec = NULL;
	int fd, rc;

	write_file("m.jsonl", text);
	notes->len = 0;
	notes->text[0] = '\0';
	mate_dump_info_init(&info);
	fd = open(tmp, O_RDONLY | O_DIRECTORY);
	rc = mate_dump_read_record(fd, "m.jsonl", &info, &a, &rec, notes);
	close(fd);
	CHECK_EQ_INT(rc, rec != NULL);
	/* the skim's summary and cJSON's parse agree */
	if (rec != NULL) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(rec, "execution_status");
		CHECK_STR(mate_dump_status_name(info.status), cJSON_IsString(s) ? s->valuestring : "?");
	}
	mate_arena_free(&a);
	return rec;
}

static const char *
status_of(const cJSON *rec)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(rec, "execution_status");

	return cJSON_IsString(s) ? s->valuestring : "(none)";
}

/* read_last() of text: its record's status (NULL: no record) and a note
 * that says note (NULL: no note). */
static void
check_last(const char *text, const char *status, const char *note)
{
	struct mate_notes notes;
	cJSON *rec = read_last(text, &notes);

	if (status != NULL)
		CHECK_STR(status_of(rec), status);
	else
		CHECK(rec == NULL);
	if (note != NULL)
		CHECK_CONTAINS(notes.text, note);
	else
		CHECK_EQ_INT(notes.len, 0);
	cJSON_Delete(rec);
}

DEFINE_TEST(last_record)
{
	static const struct {
		const char *text, *status, *note;
	} cases[] = {
		{ REC("inputs_saved", "") "\n" REC("completed", "") "\n", "completed", NULL },
		/* a torn last line: the earlier record, and a note */
		{ REC("inputs_saved", "") "\n{\"function_name\": \"f\", \"execu", "inputs_saved",
		  "torn last line" },
		/* a complete record without its newline is still the state */
		{ REC("inputs_saved", "") "\n" REC("failed", ", \"error\": \"boom\""), "failed", NULL },
		/* a corrupt line is passed over and reported */
		{ REC("inputs_saved", "") "\nnot json at all\n\n", "inputs_saved", "corrupt record" },
		{ "", NULL, "empty" },
		{ "{\"trunc", NULL, "torn" },
	};
	struct mate_notes notes;
	cJSON *rec;
	char *big;
	size_t n;
	int fd;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_last(cases[i].text, cases[i].status, cases[i].note);

	/* Python's NaN and Infinity tokens */
	rec = read_last(REC("completed", ", \"input_metadata\": {\"arg_1\": NaN, \"arg_2\": -Infinity, "
	    "\"s\": \"NaN stays\"}") "\n", &notes);
	CHECK_STR(status_of(rec), "completed");
	{
		const cJSON *im = cJSON_GetObjectItemCaseSensitive(rec, "input_metadata");
		mate_error err;
		mate_value *v = mate_record_decode_value(cJSON_GetObjectItemCaseSensitive(im, "arg_1"), &err);

		CHECK(isnan(mate_value_get_float(v)));
		mate_value_free(v);
		v = mate_record_decode_value(cJSON_GetObjectItemCaseSensitive(im, "arg_2"), &err);
		CHECK(mate_value_get_float(v) == -INFINITY);
		mate_value_free(v);
		CHECK_STR(cJSON_GetObjectItemCaseSensitive(im, "s")->valuestring, "NaN stays");
	}
	cJSON_Delete(rec);

	/* a last record longer than the first read (tail grows) */
	{
		const char *head = REC("inputs_saved", "") "\n{\"function_name\": \"f\", \"pad\": \"";
		size_t pre = strlen(head);

		n = 200000;
		big = malloc(pre + n + 64);
		memcpy(big, head, pre);
		memset(big + pre, 'x', n);
		strcpy(big + pre + n, "\", \"execution_status\": \"completed\"}\n");
	}
	check_last(big, "completed", NULL);
	free(big);

	{
		struct mate_dump_info info;
		struct mate_arena a = { NULL };

		mate_dump_info_init(&info);
		fd = open(tmp, O_RDONLY | O_DIRECTORY);
		CHECK_EQ_INT(mate_dump_read_record(fd, "missing.jsonl", &info, &a, NULL, &notes), -ENOENT);
		close(fd);
	}
}

/* The skim accepts exactly what a strict JSON parser (cJSON, whole input)
 * accepts, plus NaN and Infinity. */
DEFINE_TEST(skim)
{
	static const char *good[] = { "{}", " {\"a\": [1, -2.5e+3, true, false, null, {}, []]} ",
	    "{\"k\\\"q\": \"\\u00e9\\n\", \"b\": {\"c\": [[]]}}", "{\"x\": NaN, \"y\": -Infinity}",
	    "{\"a\":0}", "{\"s\": \"\\ud83d\\ude00\"}" };
	static const char *bad[] = { "", "[]", "{", "{\"a\"}", "{\"a\": }", "{\"a\": 1,}", "{\"a\": 01}",
	    "{\"a\": 1.}", "{\"a\": .5}", "{\"a\": +1}", "{\"a\": tru}", "{\"a\": \"\\x\"}",
	    "{\"a\": \"\\u12\"}", "{\"a\": 1} x", "{\"a\": 1}}", "{a: 1}", "{\"a\": [1 2]}",
	    "{\"a\": \"tab\there\"}", "{\"a\": \"\\ud800\"}", "{\"a\": \"\\udc00\\ud800\"}" };
	struct mate_skim_member m[8];
	size_t n, c;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cJSON *j = mate_record_parse(good[i], strlen(good[i]));

		CHECK(mate_skim_object(good[i], strlen(good[i]), m, 8, &n));
		CHECK(j != NULL);
		cJSON_Delete(j);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (mate_skim_object(bad[i], strlen(bad[i]), m, 8, &n))
			fprintf(stderr, "skim accepted: %s\n", bad[i]);
		CHECK(!mate_skim_object(bad[i], strlen(bad[i]), m, 8, &n));
	}
	CHECK(mate_skim_object(good[1], strlen(good[1]), m, 8, &n));
	CHECK_EQ_INT(n, 1);
	CHECK(mate_skim_find(m, n, "a") != NULL);
	CHECK(mate_skim_array_len(m[0].val, m[0].vlen, &c));
	CHECK_EQ_INT(c, 7);
	CHECK(mate_skim_object(good[2], strlen(good[2]), m, 8, &n));
	CHECK_EQ_INT(n, 2);
	CHECK(mate_skim_find(m, n, "b") != NULL);
	/* deeper than 128 levels: skipped by brackets, left to cJSON (2) */
	{
		char deep[700];
		size_t o = 0, p0;

		o += (size_t)snprintf(deep, sizeof(deep), "{\"a\": ");
		p0 = o;
		for (int i = 0; i < 300; i++)
			deep[o++] = '[';
		deep[o++] = '0';
		for (int i = 0; i < 300; i++)
			deep[o++] = ']';
		o += (size_t)snprintf(deep + o, sizeof(deep) - o, ", \"b\": 1}");
		CHECK_EQ_INT(mate_skim_object(deep, o, m, 8, &n), 2);
		CHECK_EQ_INT(n, 2);
		CHECK(mate_skim_find(m, n, "b") != NULL);
		deep[p0 + 200] = '{';         /* a '{' among the '[': cJSON refuses */
		CHECK_EQ_INT(mate_skim_object(deep, o, m, 8, &n), 2);
		CHECK(mate_record_parse(deep, o) == NULL);
		deep[p0 + 200] = '[';
		CHECK_EQ_INT(mate_skim_object(deep, p0 + 450, m, 8, &n), 0);   /* torn */
	}
}

DEFINE_TEST(names)
{
	struct mate_dump_info info;
	struct mate_arena a = { NULL };

	mate_dump_info_init(&info);
	CHECK(mate_dump_info_from_name(&info, "20261121_125033_783_pid23322_silu_and_mul_call0001", &a));
	CHECK_STR(info.function, "silu_and_mul");
	CHECK_STR(info.timestamp, "20261121_125033_783");
	CHECK_EQ_INT(info.process_id, 23322);
	CHECK(mate_dump_name_matches("20261121_125033_783_pid1_Wrapper.run_call12345"));
	CHECK(!mate_dump_name_matches("20261121_125033_783_pid1__call1"));
	CHECK(!mate_dump_name_matches("20261121_125033_783_pidX_f_call1"));
	CHECK(!mate_dump_name_matches("session.jsonl"));
	CHECK(!mate_dump_name_matches("20261121_125033_783_pid1_f_call"));
	mate_arena_free(&a);
}

/* 300 dumps read on 1 and on 8 threads give the same listing. */
static void
many_dumps(void)
{
	char rel[128], text[256], path[512];
	mate_dump_list *a = mate_dump_list_new(0, NULL), *b = mate_dump_list_new(0, NULL);

	make_dir("many");
	for (int i = 0; i < 300; i++) {
		snprintf(rel, sizeof(rel), "many/20260101_000000_%03d_pid9_f%d_call0001", i, i % 7);
		make_dir(rel);
		strcat(rel, "/metadata.jsonl");
		snprintf(text, sizeof(text), "{\"function_name\": \"f%d\", \"execution_status\": \"%s\"}\n",
		    i % 7, i % 5 ? "completed" : "inputs_saved");
		if (i % 11 != 3)  /* some killed before their record */
			write_file(rel, text);
	}
	snprintf(path, sizeof(path), "%s/many", tmp);
	mate_dump_list_set_threads(a, 1);
	mate_dump_list_set_threads(b, 8);
	CHECK_EQ_INT(mate_dump_list_add(a, path, NULL), 300);
	CHECK_EQ_INT(mate_dump_list_add(b, path, NULL), 300);
	mate_dump_list_sort(a);
	mate_dump_list_sort(b);
	for (size_t i = 0; i < 300; i++) {
		const struct mate_dump_info *x = mate_dump_list_get(a, i), *y = mate_dump_list_get(b, i);

		CHECK_STR(x->name, y->name);
		CHECK_STR(x->function, y->function);
		CHECK_EQ_INT(x->status, y->status);
		CHECK_EQ_INT(x->status, i % 11 == 3 ? MATE_DUMP_INCOMPLETE :
		    i % 5 ? MATE_DUMP_COMPLETED : MATE_DUMP_INPUTS_SAVED);
	}
	mate_dump_list_free(a);
	mate_dump_list_free(b);
}

DEFINE_TEST(list)
{
	mate_dump_list *l;
	mate_error err;
	const struct mate_dump_info *d;
	char path[512];

	make_dir("root");
	make_dir("root/20260101_000000_002_pid5_b_call0001");
	write_file("root/20260101_000000_002_pid5_b_call0001/metadata.jsonl",
	    "{\"function_name\": \"b\", \"timestamp\": \"20260101_000000_002\", "
	    "\"process_id\": 5, \"tensor_info\": {\"input_tensor_keys\": [\"arg_0\", \"arg_1\"], "
	    "\"output_tensor_keys\": [\"result\"], \"input_size_bytes\": 10, \"output_size_bytes\": 5, "
	    "\"total_size_bytes\": 15}, \"execution_status\": \"completed\", \"self_id\": 140000000001, "
	    "\"dump_dir\": \"/elsewhere/entirely\"}\n");
	make_dir("root/20260101_000000_001_pid5_a_call0001");
	write_file("root/20260101_000000_001_pid5_a_call0001/metadata.jsonl",
	    "{\"function_name\": \"a\", \"execution_status\": \"inputs_saved\"}\n");
	make_dir("root/20260101_000000_000_pid5_c_call0001");  /* killed: empty */
	make_dir("root/not-a-dump");
	write_file("root/session.jsonl", "{}\n");

	l = mate_dump_list_new(0, &err);
	snprintf(path, sizeof(path), "%s/root/", tmp);
	CHECK_EQ_INT(mate_dump_list_add(l, path, &err), 3);
	mate_dump_list_sort(l);
	CHECK_EQ_INT(mate_dump_list_count(l), 3);
	d = mate_dump_list_get(l, 0);
	CHECK_STR(d->function, "c");
	CHECK_EQ_INT(d->status, MATE_DUMP_INCOMPLETE);
	CHECK_CONTAINS(d->problem, "no metadata.jsonl");
	d = mate_dump_list_get(l, 1);
	CHECK_STR(d->function, "a");
	CHECK_STR(d->timestamp, "20260101_000000_001");  /* from the directory name */
	CHECK_EQ_INT(d->status, MATE_DUMP_INPUTS_SAVED);
	CHECK(d->problem == NULL);
	d = mate_dump_list_get(l, 2);
	CHECK_STR(d->function, "b");
	CHECK_EQ_INT(d->status, MATE_DUMP_COMPLETED);
	CHECK_EQ_INT(d->n_inputs, 2);
	CHECK_EQ_INT(d->n_outputs, 1);
	CHECK_EQ_INT(d->total_bytes, 15);
	CHECK_STR(d->self_id, "140000000001");
	CHECK_CONTAINS(d->path, "/root/20260101_000000_002_pid5_b_call0001");
	CHECK(strstr(d->path, "elsewhere") == NULL);
	CHECK(mate_dump_list_get(l, 3) == NULL);

	/* the same on four threads */
	{
		mate_dump_list *l4 = mate_dump_list_new(0, &err);

		mate_dump_list_set_threads(l4, 4);
		snprintf(path, sizeof(path), "%s/root", tmp);
		CHECK_EQ_INT(mate_dump_list_add(l4, path, &err), 3);
		mate_dump_list_sort(l4);
		for (size_t i = 0; i < 3; i++)
			CHECK_STR(mate_dump_list_get(l4, i)->path, mate_dump_list_get(l, i)->path);
		CHECK_STR(mate_dump_list_get(l4, 2)->self_id, "140000000001");
		mate_dump_list_free(l4);
	}
	many_dumps();

	/* a single dump directory, and a missing root */
	snprintf(path, sizeof(path), "%s/root/20260101_000000_002_pid5_b_call0001", tmp);
	CHECK_EQ_INT(mate_dump_list_add(l, path, &err), 1);
	snprintf(path, sizeof(path), "%s/nowhere", tmp);
	mate_error_clear(&err);
	CHECK(mate_dump_list_add(l, path, &err) < 0);
	CHECK_CONTAINS(err.message, "nowhere");
	mate_dump_list_free(l);
}

DEFINE_TEST(dump_open)
{
	char path[512];
	mate_error err;
	mate_dump *d;
	mate_value *args, *outs;

	make_dir("one");
	write_file("one/metadata.jsonl",
	    "{\"function_name\": \"configure\", \"input_metadata\": {\"arg_0\": 7, \"arg_5\": "
	    "{\"type\": \"list\", \"value\": \"[1, 2, 3]\"}, \"kwarg_tail\": 9}, "
	    "\"output_metadata\": {\"result_0\": 14, \"result_1\": {\"type\": \"list\", "
	    "\"value\": \"[0.5, True]\"}}, \"tensor_info\": {\"input_tensor_keys\": [], "
	    "\"output_tensor_keys\": []}, \"execution_status\": \"completed\"}\n");
	snprintf(path, sizeof(path), "%s/one/", tmp);
	d = mate_dump_open(path, &err);
	CHECK(d != NULL);
	if (d == NULL)
		return;
	CHECK_STR(mate_dump_get_info(d)->name, "one");
	args = mate_dump_load_args(d, &err);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(args, "arg_0")), 7);
	CHECK_EQ_INT(mate_value_len(mate_value_lookup(args, "arg_5")), 3);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(args, "kwarg_tail")), 9);
	CHECK_EQ_INT(mate_dump_load_outputs(d, &outs, &err), MATE_OK);
	CHECK_EQ_INT(mate_value_len(outs), 2);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_lookup(outs, "result_1")), MATE_V_LIST);
	mate_value_free(args);
	mate_value_free(outs);
	mate_dump_free(d);

	/* inputs listed but no inputs file: an error naming it */
	make_dir("two");
	write_file("two/metadata.jsonl", REC("completed", "") "\n");
	snprintf(path, sizeof(path), "%s/two", tmp);
	d = mate_dump_open(path, &err);
	mate_error_clear(&err);
	CHECK(d != NULL && mate_dump_load_args(d, &err) == NULL);
	CHECK_CONTAINS(err.message, "inputs.pt");
	mate_dump_free(d);

	snprintf(path, sizeof(path), "%s/root/20260101_000000_000_pid5_c_call0001", tmp);
	CHECK(mate_dump_open(path, &err) == NULL);
}

/* Tensors nested in a list ("arg_0__<i>") go back into it; the record's
 * list gives the other items. */
DEFINE_TEST(nested)
{
	char path[512];
	mate_value *tensors = mate_value_dict(), *args;
	mate_storage *st = mate_storage_new(8, NULL);
	mate_tensor t;
	mate_error err;
	mate_dump *d;
	int64_t two = 2;

	make_dir("nested");
	mate_tensor_init(&t, MATE_F32, 1, &two, NULL, NULL);
	mate_value_set_str(tensors, "arg_0__0", mate_value_tensor(&t, st));
	mate_value_set_str(tensors, "arg_0__2", mate_value_tensor(&t, st));
	mate_value_set_str(tensors, "kwarg_pair__1", mate_value_tensor(&t, st));
	mate_value_set_str(tensors, "arg_1", mate_value_tensor(&t, st));
	mate_storage_unref(st);
	snprintf(path, sizeof(path), "%s/nested/inputs.safetensors", tmp);
	CHECK_EQ_INT(mate_safetensors_write(path, tensors, NULL, &err), MATE_OK);
	mate_value_free(tensors);
	write_file("nested/metadata.jsonl",
	    "{\"function_name\": \"f\", \"input_metadata\": {\"arg_0\": {\"type\": \"list\", "
	    "\"length\": 4, \"items\": [null, 5, null, 7]}}, \"tensor_info\": {\"input_tensor_keys\": "
	    "[\"arg_0__0\", \"arg_0__2\", \"kwarg_pair__1\", \"arg_1\"], \"output_tensor_keys\": []}, "
	    "\"tensor_format\": \"safetensors\", \"execution_status\": \"inputs_saved\"}\n");
	snprintf(path, sizeof(path), "%s/nested", tmp);
	d = mate_dump_open(path, &err);
	args = d != NULL ? mate_dump_load_args(d, &err) : NULL;
	CHECK(args != NULL);
	if (args != NULL) {
		const mate_value *a0 = mate_value_lookup(args, "arg_0");
		const mate_value *pair = mate_value_lookup(args, "kwarg_pair");

		CHECK_EQ_INT(mate_value_kind_of(a0), MATE_V_LIST);
		CHECK_EQ_INT(mate_value_len(a0), 4);
		CHECK_EQ_INT(mate_value_kind_of(mate_value_item(a0, 0)), MATE_V_TENSOR);
		CHECK_EQ_INT(mate_value_get_int(mate_value_item(a0, 1)), 5);
		CHECK_EQ_INT(mate_value_kind_of(mate_value_item(a0, 2)), MATE_V_TENSOR);
		CHECK_EQ_INT(mate_value_get_int(mate_value_item(a0, 3)), 7);
		CHECK_EQ_INT(mate_value_len(pair), 2);
		CHECK_EQ_INT(mate_value_kind_of(mate_value_item(pair, 0)), MATE_V_NONE);
		CHECK_EQ_INT(mate_value_kind_of(mate_value_item(pair, 1)), MATE_V_TENSOR);
		CHECK_EQ_INT(mate_value_kind_of(mate_value_lookup(args, "arg_1")), MATE_V_TENSOR);
		CHECK(mate_value_lookup(args, "arg_0__0") == NULL);
	}
	mate_value_free(args);
	mate_dump_free(d);
}

TEST_MAIN_TMPDIR("test-dump-read", tmp)
