/* fuzz_dump_record.c: libFuzzer target for metadata.jsonl records: the last-record scan, the summary fields, recorded values, Python literals and function signatures. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mate_replay.h"
#include "dump_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
decode_members(const cJSON *obj)
{
	const cJSON *it;
	mate_error err;
	char buf[300];

	cJSON_ArrayForEach(it, obj) {
		mate_value *v = mate_record_decode_value(it, &err);

		mate_value_format_brief(v, buf, sizeof(buf));
		mate_value_free(v);
	}
}

static int
nothing(mate_replay_call *c, void *ctx)
{
	(void)ctx;
	return mate_replay_return(c, mate_value_none());
}

/* data as a recorded function_signature: parsed, matched and bound. */
static void
replay_signature(const uint8_t *data, size_t size)
{
	static mate_replay *r;
	struct mate_replay_request req;
	struct mate_replay_result res;
	char *sig = malloc(size + 1);
	mate_value *args = mate_value_dict();

	if (r == NULL && (r = mate_replay_new(NULL)) != NULL)
		mate_replay_register_signature(r, NULL, "f", "(a, b=1, /, c=None, *, d=None)", nothing,
		    NULL, NULL);
	if (r != NULL && sig != NULL && args != NULL) {
		memcpy(sig, data, size);
		sig[size] = '\0';
		mate_value_set_str(args, "arg_0", mate_value_int(1));
		mate_value_set_str(args, "kwarg_c", mate_value_int(2));
		memset(&req, 0, sizeof(req));
		req.function = "f";
		req.signature = sig;
		req.args = args;
		mate_replay_execute(r, &req, &res);
	}
	mate_value_free(args);
	free(sig);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mate_notes notes = { "", 0 };
	struct mate_dump_info info;
	struct mate_arena arena = { NULL };
	mate_error err;
	cJSON *rec = NULL;
	mate_value *v;

	mate_dump_info_init(&info);
	if (mate_record_scan((const char *)data, size, &info, &arena, &rec, &notes)) {
		decode_members(cJSON_GetObjectItemCaseSensitive(rec, "input_metadata"));
		decode_members(cJSON_GetObjectItemCaseSensitive(rec, "output_metadata"));
		cJSON_Delete(rec);
	}
	/* what the skim accepts, cJSON accepts too (2: the skim left deep
	 * nesting to cJSON) */
	{
		struct mate_skim_member m[8];
		size_t n;

		if (mate_skim_object((const char *)data, size, m, 8, &n) == 1) {
			cJSON *j = mate_record_parse((const char *)data, size);

			if (j == NULL && memchr(data, 'N', size) == NULL && memchr(data, 'I', size) == NULL)
				__builtin_trap();
			cJSON_Delete(j);
		}
	}
	mate_arena_free(&arena);
	v = mate_pyliteral_parse((const char *)data, size, &err);
	mate_value_free(v);
	mate_dump_info_init(&info);
	if (size < 256) {
		char name[256];

		memcpy(name, data, size);
		name[size] = '\0';
		mate_dump_info_from_name(&info, name, &arena);
		mate_arena_free(&arena);
	}
	replay_signature(data, size);
	return 0;
}
