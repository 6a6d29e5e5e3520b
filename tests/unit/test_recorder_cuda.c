/* test_recorder_cuda.c: device tensors are copied to the host on their stream for level-5 statistics and
 * level-10 dumps, and keep their device in the records (exits 77 without a CUDA device). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "mate_record.h"
#include "test.h"

static char *root;   /* made and removed by main() */

DEFINE_TEST(device_tensor)
{
	float host[8] = { 1, -2, 3, -4, 5, -6, 7, 8 }, *dev = NULL;
	int64_t shape[] = { 2, 4 };
	char log_path[300], session[300], dumps[300];
	struct mate_config cfg;
	cudaStream_t stream;
	mate_tensor t;
	mate_call *c;
	char *log, *rec;

	snprintf(log_path, sizeof(log_path), "%s/log.txt", root);
	snprintf(session, sizeof(session), "%s/dumps/session.jsonl", root);
	CHECK(cudaStreamCreate(&stream) == cudaSuccess);
	CHECK(cudaMalloc((void **)&dev, sizeof(host)) == cudaSuccess);
	CHECK(cudaMemcpyAsync(dev, host, sizeof(host), cudaMemcpyHostToDevice, stream) == cudaSuccess);
	mate_tensor_init(&t, MATE_F32, 2, shape, NULL, dev);
	t.device_type = MATE_DEVICE_CUDA;
	t.device_index = 0;
	t.stream = stream;

	mate_config_default(&cfg);
	cfg.level = 10;
	cfg.logdest = log_path;
	snprintf(dumps, sizeof(dumps), "%s/dumps", root);
	cfg.dump_dir = dumps;
	CHECK_EQ_INT(mate_configure(&cfg, NULL), MATE_OK);
	c = mate_call_begin("device_op", "cudatest", "(x)");
	mate_call_tensor(c, MATE_ARG, NULL, &t);
	mate_call_tensor(c, MATE_RESULT, NULL, &t);
	mate_call_end(c);

	log = test_slurp(log_path, NULL);
	rec = test_slurp(session, NULL);
	CHECK_CONTAINS(log, "device=cuda:0\n");
	CHECK_CONTAINS(log, "min=-6.000000\n");
	CHECK_CONTAINS(log, "max=8.000000\n");
	CHECK_CONTAINS(log, "mean=1.500000\n");
	CHECK_CONTAINS(log, "Backend: CUDA runtime");
	CHECK_CONTAINS(rec, "\"device\": \"cuda:0\"");
	CHECK_CONTAINS(rec, "\"execution_status\": \"completed\"");
	free(log);
	free(rec);
	cudaFree(dev);
	cudaStreamDestroy(stream);
}

int
main(int argc, char **argv)
{
	test_need_cuda_device();
	return test_main_tmpdir(argc, argv, "cuda", &root);
}
