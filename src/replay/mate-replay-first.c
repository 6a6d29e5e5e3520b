/* mate-replay-first.c: mate-replay --first: prints the first wrong call of a run, where it stands, and the earlier calls its inputs came from. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fe.h"
#include "fe_json.h"
#include "mate-replay-first.h"
#include "replay_first.h"

/* Where the list holds d (sel points into it). */
static size_t
list_index(const mate_dump_list *l, const struct mate_dump_info *d)
{
	const struct mate_dump_info *first = mate_dump_list_get(l, 0);
	size_t n = mate_dump_list_count(l);

	if (first != NULL && d >= first && d < first + n)
		return (size_t)(d - first);
	for (size_t i = 0; i < n; i++)
		if (mate_dump_list_get(l, i) == d)
			return i;
	return MATE_FIRST_NONE;
}

/* Seconds from the run's earliest call to d, or a negative number when a
 * timestamp cannot be read. */
static double
seconds_into_run(const mate_dump_list *l, const struct mate_dump_info *d)
{
	int64_t t = mate_first_timestamp_ms(d->timestamp), t0 = -1;

	for (size_t i = 0; i < mate_dump_list_count(l); i++) {
		int64_t x = mate_first_timestamp_ms(mate_dump_list_get(l, i)->timestamp);

		if (x >= 0 && (t0 < 0 || x < t0))
			t0 = x;
	}
	return t < 0 || t0 < 0 ? -1 : (double)(t - t0) / 1000.0;
}

/* "module.function" where the module is known, else the function. */
static const char *
qualified(const struct mate_dump_info *d, char *buf, size_t cap)
{
	if (d->module != NULL && d->module[0] != '\0' && strcmp(d->module, "<unknown>") != 0)
		snprintf(buf, cap, "%s.%s", d->module, d->function);
	else
		snprintf(buf, cap, "%s", d->function);
	return buf;
}

static void
print_text(const mate_dump_list *l, size_t at, const struct mate_first_scan *s,
    const struct mate_first_flow *f, size_t ambiguous)
{
	const struct mate_dump_info *d = mate_dump_list_get(l, at);
	char b1[32], b2[32], fn[600];
	double sec = seconds_into_run(l, d);

	printf("first wrong call: call %s of %s", mate_fe_grouped(at + 1, b1, sizeof(b1)),
	    mate_fe_grouped(mate_dump_list_count(l), b2, sizeof(b2)));
	if (sec >= 0)
		printf(", %.3f s into the run", sec);
	if (d->process_id >= 0)
		printf(", process %" PRId64, d->process_id);
	printf(": %s (%s): %s: %s\n", mate_fe_safe(qualified(d, fn, sizeof(fn))),
	    mate_fe_safe(d->name), verdict_words(s->result.verdict, 0),
	    mate_fe_safe(s->result.message));
	if (f->problem[0] != '\0')
		printf("  its inputs cannot be traced: %s\n", mate_fe_safe(f->problem));
	for (size_t i = 0; i < f->n; i++) {
		const struct mate_first_input *in = &f->inputs[i];
		const struct mate_dump_info *p;

		printf("  its input `%s`", mate_fe_safe(in->name));
		if (strcmp(in->name, in->key) != 0)
			printf(" (%s)", mate_fe_safe(in->key));
		if (in->producer == MATE_FIRST_NONE) {
			printf(": no earlier call's output holds it\n");
			continue;
		}
		p = mate_dump_list_get(l, in->producer);
		printf(" is `%s`%s of call %s, %s (%s)\n", mate_fe_safe(in->output),
		    in->in_place ? " (written in place)" : "", mate_fe_grouped(in->producer + 1, b1, sizeof(b1)),
		    mate_fe_safe(qualified(p, fn, sizeof(fn))), mate_fe_safe(p->name));
	}
	if (s->unsupported > 0)
		printf("passed over %s unsupported call%s before it\n",
		    mate_fe_grouped(s->unsupported, b1, sizeof(b1)), mate_fe_s(s->unsupported));
	if (ambiguous > 0)
		printf("the order of %s call%s is ambiguous (same millisecond and process, no "
		    "session.jsonl)\n", mate_fe_grouped(ambiguous, b1, sizeof(b1)), mate_fe_s(ambiguous));
}

static void
add_producers(cJSON *o, const mate_dump_list *l, const struct mate_first_flow *f)
{
	cJSON *a = cJSON_AddArrayToObject(o, "producers");

	for (size_t i = 0; a != NULL && i < f->n; i++) {
		const struct mate_first_input *in = &f->inputs[i];
		const struct mate_dump_info *p = in->producer != MATE_FIRST_NONE ?
		    mate_dump_list_get(l, in->producer) : NULL;
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "key", in->key);
		cJSON_AddStringToObject(e, "name", in->name);
		if (p != NULL) {
			cJSON_AddNumberToObject(e, "producer_index", (double)(in->producer + 1));
			cJSON_AddStringToObject(e, "producer_function", p->function);
			mate_fe_json_str(e, "producer_module", p->module);
			cJSON_AddStringToObject(e, "producer_dir", p->name);
			cJSON_AddStringToObject(e, "producer_output", in->output);
			cJSON_AddBoolToObject(e, "in_place", in->in_place);
		} else {
			cJSON_AddNullToObject(e, "producer_index");
		}
		cJSON_AddItemToArray(a, e);
	}
	mate_fe_json_str(o, "trace_problem", f->problem[0] ? f->problem : NULL);
	cJSON_AddNumberToObject(o, "calls_read", (double)f->read);
	cJSON_AddNumberToObject(o, "calls_from_cache", (double)f->cached);
}

static void
print_json(const mate_dump_list *l, size_t at, const struct mate_first_scan *s,
    const struct mate_first_flow *f, size_t ambiguous)
{
	cJSON *o = cJSON_CreateObject();
	const struct mate_replay_result *r = &s->result;
	char *text;

	if (at == MATE_FIRST_NONE) {
		cJSON_AddNullToObject(o, "first");
	} else {
		const struct mate_dump_info *d = mate_dump_list_get(l, at);
		double sec = seconds_into_run(l, d);

		cJSON_AddNumberToObject(o, "first", (double)(at + 1));
		cJSON_AddNumberToObject(o, "index", (double)(at + 1));
		cJSON_AddNumberToObject(o, "of", (double)mate_dump_list_count(l));
		if (sec >= 0)
			cJSON_AddNumberToObject(o, "seconds_into_run", sec);
		else
			cJSON_AddNullToObject(o, "seconds_into_run");
		if (d->process_id >= 0)
			cJSON_AddNumberToObject(o, "process_id", (double)d->process_id);
		else
			cJSON_AddNullToObject(o, "process_id");
		cJSON_AddStringToObject(o, "function", d->function);
		mate_fe_json_str(o, "module", d->module);
		cJSON_AddStringToObject(o, "dir", d->name);
		cJSON_AddStringToObject(o, "path", d->path);
		cJSON_AddStringToObject(o, "verdict", mate_replay_verdict_name(r->verdict));
		cJSON_AddStringToObject(o, "message", r->message);
		if (r->verdict == MATE_REPLAY_MISMATCH) {
			cJSON_AddStringToObject(o, "key", r->key);
			mate_fe_json_num(o, "max_abs_err", r->max_abs_err);
			mate_fe_json_num(o, "max_rel_err", r->max_rel_err);
			if (r->first_bad >= 0) {
				cJSON_AddStringToObject(o, "first_bad_index", r->first_bad_index);
				cJSON_AddNumberToObject(o, "first_bad", (double)r->first_bad);
				mate_fe_json_num(o, "expected", r->expected);
				mate_fe_json_num(o, "got", r->got);
				cJSON_AddNumberToObject(o, "n_bad", (double)r->n_bad);
				cJSON_AddNumberToObject(o, "numel", (double)r->numel);
			}
		}
		add_producers(o, l, f);
	}
	cJSON_AddNumberToObject(o, "replayed", (double)s->replayed);
	cJSON_AddNumberToObject(o, "unsupported_skipped", (double)s->unsupported);
	cJSON_AddNumberToObject(o, "ambiguous_order", (double)ambiguous);
	if ((text = cJSON_PrintUnformatted(o)) != NULL)
		puts(text);
	free(text);
	cJSON_Delete(o);
}

int
replay_first(mate_replay *r, const mate_dump_list *l, const struct mate_dump_info **sel,
    size_t nsel, int jobs, int jsonl)
{
	struct mate_first_scan s;
	struct mate_first_flow f;
	mate_error err;
	size_t ambiguous = mate_dump_list_unordered(l, NULL), at = MATE_FIRST_NONE;
	char b1[32], b2[32];

	memset(&f, 0, sizeof(f));
	mate_error_clear(&err);
	if (mate_first_scan(r, sel, nsel, jobs, &s, &err) != MATE_OK) {
		mate_fe_warnx("%s", err.message);
		return MATE_EXIT_USAGE;
	}
	if (s.wrong != MATE_FIRST_NONE) {
		at = list_index(l, sel[s.wrong]);
		if (at == MATE_FIRST_NONE || mate_first_trace(l, at, &f, &err) != MATE_OK) {
			mate_fe_warnx("%s", at == MATE_FIRST_NONE ? "lost the call in the list" : err.message);
			return MATE_EXIT_USAGE;
		}
	}
	if (jsonl)
		print_json(l, at, &s, &f, ambiguous);
	else if (at != MATE_FIRST_NONE)
		print_text(l, at, &s, &f, ambiguous);
	else {
		printf("no wrong call among %s replayed", mate_fe_grouped(s.replayed, b1, sizeof(b1)));
		if (s.unsupported > 0)
			printf(" (passed over %s unsupported call%s)", mate_fe_grouped(s.unsupported, b2, sizeof(b2)),
			    mate_fe_s(s.unsupported));
		putchar('\n');
		if (ambiguous > 0)
			printf("the order of %s call%s is ambiguous (same millisecond and process, no "
			    "session.jsonl)\n", mate_fe_grouped(ambiguous, b1, sizeof(b1)), mate_fe_s(ambiguous));
	}
	mate_first_flow_free(&f);
	if (nsel == 0) {
		mate_fe_warnx("no dumps %s", mate_dump_list_count(l) ?
		    "selected (--include, --exclude, --status)" : "found");
		return MATE_EXIT_FAIL;
	}
	return at != MATE_FIRST_NONE ? MATE_EXIT_FAIL : MATE_EXIT_OK;
}
