/* test_recorder_dump.c: level-10 dumps through the C API: records and their key order, statuses, failed calls,
 * in-place outputs, object receivers, nested tensors, filters, count and size limits, threads and the
 * configuration's parsing and warnings. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "mate_record.h"
#include "mate_replay.h"
#include "test.h"

static char *tmp_root;   /* made by main(), removed when every check passed */

/* ---- helpers --------------------------------------------------------------------- */

/* stderr into a file while a case runs, to count warnings. */
static int saved_stderr = -1;
static char err_path[300];

static void
capture_begin(void)
{
	int fd;

	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", tmp_root);
	fflush(stderr);
	saved_stderr = dup(2);
	fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
}

static char *
capture_end(void)
{
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	return test_slurp(err_path, NULL);
}

static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p != NULL && (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Parses the JSON lines of a file; returns how many. */
static int
read_records(const char *path, cJSON **out, int max)
{
	char *text = test_slurp(path, NULL), *line, *save = NULL;
	int n = 0;

	if (text == NULL)
		return -1;
	for (line = strtok_r(text, "\n", &save); line != NULL && n < max;
	    line = strtok_r(NULL, "\n", &save)) {
		out[n] = cJSON_Parse(line);
		if (out[n] == NULL) {
			fprintf(stderr, "unparsable line in %s: %s\n", path, line);
			test_failures++;
			continue;
		}
		n++;
	}
	free(text);
	return n;
}

static void
free_records(cJSON **r, int n)
{
	for (int i = 0; i < n; i++)
		cJSON_Delete(r[i]);
}

/* The keys of a JSON object joined with ',' (to check their order). */
static const char *
keys_of(const cJSON *o)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = '\0';
	for (const cJSON *it = o ? o->child : NULL; it != NULL; it = it->next)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "," : "", it->string);
	return buf;
}

static const char *
str_at(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(it) ? it->valuestring : "(missing)";
}

static char *
print_json(const cJSON *o)
{
	return cJSON_PrintUnformatted(o);
}

/* Sorted names of the dump directories under root. */
static int
list_dumps(const char *root, char names[][160], int max)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "session.jsonl") == 0)
			continue;
		snprintf(names[n++], 160, "%.159s", e->d_name);
	}
	closedir(d);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[160];
			memcpy(t, names[j], 160);
			memcpy(names[j], names[j - 1], 160);
			memcpy(names[j - 1], t, 160);
		}
	return n;
}

static void
configure(int level, const char *sub, const char *include, const char *exclude,
    int64_t max_count, double max_gb)
{
	static char dir[300], log[300];
	struct mate_config cfg;
	mate_error err;

	snprintf(dir, sizeof(dir), "%s/%s", tmp_root, sub);
	snprintf(log, sizeof(log), "%s/%s.log", tmp_root, sub);
	mate_config_default(&cfg);
	cfg.level = level;
	cfg.logdest = log;
	cfg.dump_dir = dir;
	cfg.dump_include = include;
	cfg.dump_exclude = exclude;
	cfg.dump_max_count = max_count;
	cfg.dump_max_size_gb = max_gb;
	CHECK_EQ_INT(mate_configure(&cfg, &err), MATE_OK);
}

static float data_a[64], data_b[64];

static void
simple_call(const char *name, int fail)
{
	int64_t shape[] = { 4, 16 };
	mate_tensor a, out;
	mate_call *c = NULL;

	mate_tensor_init(&a, MATE_F32, 2, shape, NULL, data_a);
	mate_tensor_init(&out, MATE_F32, 2, shape, NULL, data_b);
	if (MATE_ACTIVE()) {
		c = mate_call_begin(name, "mylib", "(x)");
		mate_call_tensor(c, MATE_ARG, NULL, &a);
		mate_call_ready(c);
	}
	if (fail) {
		mate_call_fail(c, "bad shape");
		return;
	}
	mate_call_tensor(c, MATE_RESULT, NULL, &out);
	mate_call_end(c);
}

/* ---- cases ------------------------------------------------------------------------ */

static const char *FIRST_KEYS =
    "function_name,module,call_sequence,timestamp,process_id,input_metadata,output_metadata,"
    "tensor_info,tensor_details,tensor_format,function_signature,versions,execution_status,dump_dir";

DEFINE_TEST(records_and_failure)
{
	char names[8][160], path[600];
	cJSON *r[8], *m[8];
	int n, nm;

	configure(10, "rec", NULL, NULL, 1000, 20);
	simple_call("ok_op", 0);
	simple_call("bad_op", 1);
	n = read_records(strcat(strcpy(path, tmp_root), "/rec/session.jsonl"), r, 8);
	CHECK_EQ_INT(n, 4);
	if (n != 4)
		return;
	CHECK_STR(keys_of(r[0]), FIRST_KEYS);
	CHECK_STR(keys_of(r[1]), FIRST_KEYS);
	CHECK_STR(keys_of(cJSON_GetObjectItem(r[0], "tensor_info")),
	    "input_tensor_keys,output_tensor_keys,input_size_bytes,input_size_mb");
	CHECK_STR(keys_of(cJSON_GetObjectItem(r[1], "tensor_info")),
	    "input_tensor_keys,output_tensor_keys,input_size_bytes,input_size_mb,output_size_bytes,"
	    "output_size_mb,total_size_bytes,total_size_mb");
	CHECK_STR(str_at(r[0], "execution_status"), "inputs_saved");
	CHECK_STR(str_at(r[1], "execution_status"), "completed");
	CHECK_STR(str_at(r[2], "execution_status"), "inputs_saved");
	CHECK_STR(str_at(r[3], "execution_status"), "failed");
	CHECK_STR(str_at(r[3], "error"), "bad shape");
	CHECK_STR(keys_of(r[3]),
	    "function_name,module,call_sequence,timestamp,process_id,input_metadata,output_metadata,"
	    "tensor_info,tensor_details,tensor_format,function_signature,versions,execution_status,"
	    "error,dump_dir");
	CHECK_STR(str_at(r[1], "module"), "mylib");
	CHECK_STR(str_at(r[1], "function_signature"), "(x)");
	CHECK_EQ_INT(cJSON_GetObjectItem(r[1], "process_id")->valuedouble, getpid());
	{
		char *s = print_json(cJSON_GetObjectItem(r[1], "tensor_details"));
		CHECK_STR(s, "{\"arg_0\":{\"shape\":[4,16],\"dtype\":\"torch.float32\",\"stride\":[16,1],"
		    "\"device\":\"cpu\"},\"result\":{\"shape\":[4,16],\"dtype\":\"torch.float32\","
		    "\"stride\":[16,1],\"device\":\"cpu\"}}");
		free(s);
	}
	CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(r[1], "tensor_info"),
	    "total_size_bytes")->valuedouble, 512);
	/* metadata.jsonl of each dump holds the same lines */
	CHECK_EQ_INT(list_dumps(strcat(strcpy(path, tmp_root), "/rec"), names, 8), 2);
	{
		int bad = strstr(names[0], "_bad_op_call0001") != NULL ? 0 : 1;
		CHECK_CONTAINS(names[bad], "_bad_op_call0001");
		snprintf(path, sizeof(path), "%s/rec/%s/metadata.jsonl", tmp_root, names[bad]);
		nm = read_records(path, m, 8);
		CHECK_EQ_INT(nm, 2);
		if (nm == 2) {
			CHECK_STR(str_at(m[1], "execution_status"), "failed");
			CHECK_CONTAINS(str_at(m[0], "dump_dir"), names[bad]);
		}
	}
	free_records(m, nm);
	free_records(r, n);
}

DEFINE_TEST(inplace_self_nested)
{
	int64_t shape[] = { 2, 8 }, wshape[] = { 8 };
	mate_tensor x, res, w, t0, t1;
	mate_value *list;
	char path[600];
	cJSON *r[4];
	int n, obj;
	mate_call *c;

	configure(10, "inpl", NULL, NULL, 1000, 20);
	mate_tensor_init(&x, MATE_F32, 2, shape, NULL, data_a);
	mate_tensor_init(&res, MATE_F32, 2, shape, NULL, data_a + 16);
	mate_tensor_init(&w, MATE_F32, 1, wshape, NULL, data_b);
	c = mate_call_begin("Norm.run", "mylib", "(self, input, residual, weight, eps=1e-06)");
	mate_call_self(c, &obj);
	mate_call_tensor(c, MATE_ARG | MATE_INPLACE, NULL, &x);
	mate_call_tensor(c, MATE_KWARG | MATE_INPLACE, "residual", &res);
	list = mate_value_list();
	mate_tensor_init(&t0, MATE_F32, 1, wshape, NULL, data_b);
	mate_tensor_init(&t1, MATE_F32, 1, wshape, NULL, data_b + 8);
	mate_value_append(list, mate_value_int(3));
	mate_value_append(list, mate_value_tensor(&t1, NULL));
	mate_call_value(c, MATE_KWARG, "extra", list);
	mate_call_tensor(c, MATE_ARG, NULL, &w);
	mate_call_float(c, MATE_DEFAULT, "eps", 1e-6);
	mate_call_ready(c);
	mate_call_end(c);
	n = read_records(strcat(strcpy(path, tmp_root), "/inpl/session.jsonl"), r, 4);
	CHECK_EQ_INT(n, 2);
	if (n != 2)
		return;
	CHECK_STR(keys_of(r[1]),
	    "function_name,module,call_sequence,timestamp,process_id,input_metadata,output_metadata,"
	    "tensor_info,tensor_details,tensor_format,function_signature,versions,execution_status,"
	    "self_id,dump_dir");
	CHECK_EQ_INT((uint64_t)cJSON_GetObjectItem(r[1], "self_id")->valuedouble, (uintptr_t)&obj);
	CHECK_STR(str_at(r[1], "function_name"), "Norm.run");
	{
		cJSON *im = cJSON_GetObjectItem(r[1], "input_metadata");
		cJSON *info = cJSON_GetObjectItem(r[1], "tensor_info");
		char *s = print_json(cJSON_GetObjectItem(info, "input_tensor_keys"));
		CHECK_STR(s, "[\"arg_1\",\"arg_2\",\"kwarg_residual\",\"kwarg_extra__1\"]");
		free(s);
		/* the call returned None: the outputs file (what the peers compare
		 * with the return value) holds nothing; the arguments' post-call
		 * values go to the in-place file the record names */
		s = print_json(cJSON_GetObjectItem(info, "output_tensor_keys"));
		CHECK_STR(s, "[]");
		free(s);
		s = print_json(cJSON_GetObjectItem(info, "inplace_tensor_keys"));
		CHECK_STR(s, "[\"arg_1\",\"kwarg_residual\"]");
		free(s);
		CHECK_STR(keys_of(info), "input_tensor_keys,output_tensor_keys,input_size_bytes,"
		    "input_size_mb,output_size_bytes,output_size_mb,total_size_bytes,total_size_mb,"
		    "inplace_tensor_keys,inplace_size_bytes,inplace_size_mb,inplace_file");
		CHECK_STR(str_at(info, "inplace_file"), "inplace.pt");
		CHECK_STR(keys_of(im), "arg_0,kwarg_extra");
		CHECK_STR(str_at(cJSON_GetObjectItem(im, "arg_0"), "type"), "Norm");
		CHECK_CONTAINS(str_at(cJSON_GetObjectItem(im, "arg_0"), "repr"), "<Norm object at 0x");
		s = print_json(cJSON_GetObjectItem(im, "kwarg_extra"));
		CHECK_STR(s, "{\"type\":\"list\",\"length\":2,\"items\":[3,{\"type\":\"torch.Tensor\","
		    "\"shape\":[8],\"dtype\":\"torch.float32\",\"stride\":[1],\"device\":\"cpu\","
		    "\"requires_grad\":false,\"is_contiguous\":true,\"tensor_key\":\"kwarg_extra__1\"}],"
		    "\"truncated\":false}");
		free(s);
		s = print_json(cJSON_GetObjectItem(r[1], "output_metadata"));
		CHECK_STR(s, "{\"result\":null}");
		free(s);
		CHECK_EQ_INT(cJSON_GetObjectItem(info, "output_size_bytes")->valuedouble, 0);
		CHECK_EQ_INT(cJSON_GetObjectItem(info, "inplace_size_bytes")->valuedouble, 128);
		CHECK_EQ_INT(cJSON_GetObjectItem(info, "total_size_bytes")->valuedouble,
		    cJSON_GetObjectItem(info, "input_size_bytes")->valuedouble + 128);
		CHECK_STR(keys_of(cJSON_GetObjectItem(r[1], "tensor_details")),
		    "arg_1,arg_2,kwarg_residual,kwarg_extra__1");
	}
	free_records(r, n);
}

/* How many of the names end with suffix. */
static int
count_dumps(char names[][160], int n, const char *suffix)
{
	int k = 0;
	size_t ls = strlen(suffix);

	for (int i = 0; i < n; i++) {
		size_t ln = strlen(names[i]);
		k += ln >= ls && strcmp(names[i] + ln - ls, suffix) == 0;
	}
	return k;
}

/* A keyword's name that is not UTF-8 skips that call's dump with one
 * warning; the calls after it are dumped (issue 19, item 11). */
DEFINE_TEST(bad_kwarg_name)
{
	int64_t shape[] = { 4, 16 };
	char names[8][160], path[600], *err;
	mate_tensor a;
	mate_call *c;

	configure(10, "badname", NULL, NULL, 1000, 20);
	mate_tensor_init(&a, MATE_F32, 2, shape, NULL, data_a);
	capture_begin();
	for (int i = 0; i < 2; i++) {
		c = mate_call_begin("odd_op", "mylib", "(x)");
		mate_call_tensor(c, MATE_KWARG, "x\xff\xfe", &a);
		mate_call_ready(c);
		mate_call_tensor(c, MATE_RESULT, NULL, &a);
		mate_call_end(c);
	}
	simple_call("ok_op", 0);
	simple_call("ok_op", 0);
	err = capture_end();
	CHECK_EQ_INT(count_of(err, "not valid UTF-8"), 1);
	CHECK_EQ_INT(count_of(err, "dumping stopped"), 0);
	CHECK_EQ_INT(list_dumps(strcat(strcpy(path, tmp_root), "/badname"), names, 8), 2);
	CHECK_CONTAINS(names[0], "ok_op");
	CHECK_CONTAINS(names[1], "ok_op");
	free(err);
}

DEFINE_TEST(filters)
{
	char names[16][160], path[300];
	int n;

	configure(10, "filt", " *norm , gemm*,, Wrap*.run ", "rms*", 1000, 20);
	simple_call("gemm", 0);
	simple_call("rmsnorm", 0);
	simple_call("layernorm", 0);
	simple_call("silu", 0);
	simple_call("Wrapper.run", 0);
	simple_call("Wrapper.plan", 0);
	simple_call("gemm", 0);
	n = list_dumps(strcat(strcpy(path, tmp_root), "/filt"), names, 16);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(count_dumps(names, n, "_Wrapper.run_call0001"), 1);
	CHECK_EQ_INT(count_dumps(names, n, "_gemm_call0001"), 1);
	CHECK_EQ_INT(count_dumps(names, n, "_gemm_call0002"), 1);
	CHECK_EQ_INT(count_dumps(names, n, "_layernorm_call0001"), 1);
	for (int i = 0; i < n; i++) {
		/* YYYYMMDD_HHMMSS_mmm_pidPID_ */
		char expect[64];
		snprintf(expect, sizeof(expect), "_pid%ld_", (long)getpid());
		CHECK(strlen(names[i]) > 20 && names[i][8] == '_' && names[i][15] == '_' &&
		    strstr(names[i], expect) == names[i] + 19);
	}
}

DEFINE_TEST(limits)
{
	char names[16][160], path[300], *err;
	cJSON *r[16];
	int n;

	/* count: 3 dumps, then one warning however many calls follow */
	configure(10, "count", NULL, NULL, 3, 20);
	capture_begin();
	for (int i = 0; i < 6; i++)
		simple_call("op", 0);
	err = capture_end();
	CHECK_EQ_INT(list_dumps(strcat(strcpy(path, tmp_root), "/count"), names, 16), 3);
	CHECK_EQ_INT(count_of(err, "MATE_DUMP_MAX_COUNT"), 1);
	CHECK_EQ_INT(count_of(err, "mate: "), count_of(err, "\n"));
	free(err);
	/* size: 256-byte inputs and outputs; a cap of 1000 bytes holds one call
	 * whole, the inputs of a second one, and nothing of a third */
	configure(10, "size", NULL, NULL, 1000, 1000.0 / 1073741824.0);
	capture_begin();
	simple_call("op", 0);
	simple_call("op", 0);
	simple_call("op", 0);
	simple_call("op", 0);
	err = capture_end();
	CHECK_EQ_INT(list_dumps(strcat(strcpy(path, tmp_root), "/size"), names, 16), 2);
	CHECK_EQ_INT(count_of(err, "MATE_DUMP_MAX_SIZE_GB"), 1);
	free(err);
	n = read_records(strcat(strcpy(path, tmp_root), "/size/session.jsonl"), r, 16);
	CHECK_EQ_INT(n, 4);
	if (n == 4) {
		CHECK_STR(str_at(r[1], "execution_status"), "completed");
		CHECK_STR(str_at(r[3], "execution_status"), "inputs_saved");
		CHECK_CONTAINS(str_at(r[3], "note"), "MATE_DUMP_MAX_SIZE_GB");
	}
	free_records(r, n);
	/* a new session resets the limits */
	configure(10, "count", NULL, NULL, 3, 20);
	simple_call("op", 0);
	n = list_dumps(strcat(strcpy(path, tmp_root), "/count"), names, 16);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(count_dumps(names, n, "_op_call0001"), 2);
}

struct worker {
	int id;
};

static void *
worker_main(void *arg)
{
	char name[32];

	snprintf(name, sizeof(name), "op%d", ((struct worker *)arg)->id % 3);
	for (int i = 0; i < 50; i++)
		simple_call(name, i % 10 == 9);
	return NULL;
}

DEFINE_TEST(threads)
{
	pthread_t th[8];
	struct worker w[8];
	char names[512][160], path[300];
	cJSON **r = calloc(1024, sizeof(*r));
	int n, completed = 0, failed = 0;

	configure(10, "threads", NULL, NULL, 100000, 20);
	for (int i = 0; i < 8; i++) {
		w[i].id = i;
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ_INT(list_dumps(strcat(strcpy(path, tmp_root), "/threads"), names, 512), 400);
	n = read_records(strcat(strcpy(path, tmp_root), "/threads/session.jsonl"), r, 1024);
	CHECK_EQ_INT(n, 800);
	for (int i = 0; i < n; i++) {
		completed += strcmp(str_at(r[i], "execution_status"), "completed") == 0;
		failed += strcmp(str_at(r[i], "execution_status"), "failed") == 0;
	}
	CHECK_EQ_INT(completed, 360);
	CHECK_EQ_INT(failed, 40);
	/* op0 ran in threads 0, 3, 6: 150 calls numbered 1..150 */
	{
		int max0 = 0;
		for (int i = 0; i < 400; i++) {
			const char *p = strstr(names[i], "_op0_call");
			if (p != NULL && atoi(p + 9) > max0)
				max0 = atoi(p + 9);
		}
		CHECK_EQ_INT(max0, 150);
	}
	free_records(r, n);
	free(r);
}

DEFINE_TEST(levels_and_log)
{
	char path[300], *log;
	mate_call *c;

	configure(1, "l1", NULL, NULL, 1000, 20);
	CHECK_EQ_INT(mate_record_level(), 1);
	c = mate_call_begin("named", NULL, NULL);
	CHECK(c != NULL);
	mate_call_int(c, MATE_ARG, NULL, 5);
	mate_call_value(c, MATE_ARG, NULL, mate_value_list());
	mate_call_ready(c);
	mate_call_end(c);
	log = test_slurp(strcat(strcpy(path, tmp_root), "/l1.log"), NULL);
	CHECK_CONTAINS(log, "] MATE API Call: named\n");
	CHECK_EQ_INT(count_of(log, "MATE API Call"), 1);
	CHECK_EQ_INT(count_of(log, "System Information"), 1);
	free(log);
	/* in-between levels act as the lower named one */
	configure(4, "l4", NULL, NULL, 1000, 20);
	CHECK_EQ_INT(mate_record_level(), 3);
	configure(9, "l9", NULL, NULL, 1000, 20);
	CHECK_EQ_INT(mate_record_level(), 5);
	configure(42, "l42", NULL, NULL, 1000, 20);
	CHECK_EQ_INT(mate_record_level(), 10);
	configure(0, "l0", NULL, NULL, 1000, 20);
	CHECK(!MATE_ACTIVE());
	CHECK(mate_call_begin("x", NULL, NULL) == NULL);
	/* level 3: scalars as Python prints them; a failed call has no output */
	configure(3, "l3", NULL, NULL, 1000, 20);
	c = mate_call_begin("scalars", NULL, NULL);
	mate_call_float(c, MATE_ARG, NULL, 3.0);
	mate_call_float(c, MATE_ARG, NULL, 1e-5);
	mate_call_float(c, MATE_ARG, NULL, 1e16);
	mate_call_float(c, MATE_ARG, NULL, 0.1);
	mate_call_str(c, MATE_ARG, NULL, "it's");
	mate_call_dtype(c, MATE_KWARG, "dtype", MATE_BF16);
	mate_call_value(c, MATE_KWARG, "t", mate_value_tuple());
	mate_call_fail(c, NULL);
	log = test_slurp(strcat(strcpy(path, tmp_root), "/l3.log"), NULL);
	CHECK_CONTAINS(log, "  arg[0]:\n    3.0\n  arg[1]:\n    1e-05\n  arg[2]:\n    1e+16\n"
	    "  arg[3]:\n    0.1\n  arg[4]:\n    \"it's\"\nKeyword input arguments:\n"
	    "  dtype=\n    torch.bfloat16\n  t=\n    ()\n");
	CHECK_EQ_INT(count_of(log, "Output value"), 0);
	free(log);
}

/* mate_config_from_env() into cfg; returns the warnings it wrote. */
static char *
config_from_env_warnings(struct mate_config *cfg)
{
	capture_begin();
	mate_config_from_env(cfg);
	return capture_end();
}

DEFINE_TEST(config_env)
{
	struct mate_config cfg;
	char *err;

	setenv("MATE_LOGLEVEL", "10", 1);
	setenv("MATE_LOGDEST", "log_%i.txt", 1);
	setenv("MATE_DUMP_DIR", "d", 1);
	setenv("MATE_DUMP_MAX_SIZE_GB", "lots", 1);
	setenv("MATE_DUMP_MAX_COUNT", "-5", 1);
	setenv("MATE_DUMP_INCLUDE", " a , b ", 1);
	setenv("MATE_DUMP_SAFETENSORS", "yes", 1);
	err = config_from_env_warnings(&cfg);
	CHECK_EQ_INT(cfg.level, 10);
	CHECK_STR(cfg.logdest, "log_%i.txt");
	CHECK_STR(cfg.dump_dir, "d");
	CHECK(cfg.dump_max_size_gb == 20);
	CHECK_EQ_INT(cfg.dump_max_count, 1000);
	CHECK_EQ_INT(cfg.dump_safetensors, 0);
	CHECK_CONTAINS(err, "mate: bad MATE_DUMP_MAX_SIZE_GB value 'lots'");
	CHECK_CONTAINS(err, "mate: bad MATE_DUMP_MAX_COUNT value '-5'");
	CHECK_CONTAINS(err, "mate: bad MATE_DUMP_SAFETENSORS value 'yes'");
	CHECK_EQ_INT(count_of(err, "\n"), 3);
	free(err);
	setenv("MATE_LOGLEVEL", "verbose", 1);
	setenv("MATE_DUMP_SAFETENSORS", "1", 1);
	err = config_from_env_warnings(&cfg);
	CHECK_EQ_INT(cfg.level, 0);
	CHECK_CONTAINS(err, "mate: bad MATE_LOGLEVEL value 'verbose' (not an integer); using the default 0");
	CHECK_EQ_INT(count_of(err, "\n"), 1); /* level 0 reads nothing else */
	free(err);
	setenv("MATE_LOGLEVEL", " 7 ", 1);
	setenv("MATE_DUMP_MAX_SIZE_GB", "0.5", 1);
	err = config_from_env_warnings(&cfg);
	CHECK_EQ_INT(cfg.level, 7);
	CHECK(cfg.dump_max_size_gb == 20); /* read only at level 10 */
	CHECK_EQ_INT(strlen(err), 0);
	free(err);
	setenv("MATE_LOGLEVEL", "10", 1);
	err = config_from_env_warnings(&cfg);
	CHECK_EQ_INT(count_of(err, "MATE_DUMP_MAX_COUNT value '-5'"), 1);
	free(err);
	CHECK(cfg.dump_max_size_gb == 0.5);
	CHECK_EQ_INT(cfg.dump_safetensors, 1);
	CHECK_STR(cfg.dump_include, " a , b ");
	unsetenv("MATE_LOGLEVEL");
}

DEFINE_TEST(logdest_pid)
{
	struct mate_config cfg;
	char tmpl[300], path[300];
	struct stat st;

	snprintf(tmpl, sizeof(tmpl), "%s/log_%%i.txt", tmp_root);
	snprintf(path, sizeof(path), "%s/log_%ld.txt", tmp_root, (long)getpid());
	mate_config_default(&cfg);
	cfg.level = 1;
	cfg.logdest = tmpl;
	CHECK_EQ_INT(mate_configure(&cfg, NULL), MATE_OK);
	mate_call_end(mate_call_begin("pid_named", NULL, NULL));
	CHECK_EQ_INT(stat(path, &st), 0);
	cfg.level = -1;
	CHECK_EQ_INT(mate_configure(&cfg, NULL), MATE_ERR_ARGUMENT);
}

int
main(int argc, char **argv)
{
	int st;

	if ((tmp_root = test_tmpdir("dump-test")) == NULL)
		return 99;
	for (int i = 0; i < 64; i++)
		data_a[i] = (float)i, data_b[i] = (float)-i;
	st = test_main(argc, argv);
	if (test_failures == 0 && test_rmtree(tmp_root) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp_root);
	free(tmp_root);
	return st;
}
