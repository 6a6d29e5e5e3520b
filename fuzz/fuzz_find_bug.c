/* fuzz_find_bug.c: libFuzzer target for hostile dump roots against the tools that find the bug: mate-replay --shrink (rows, requests with their page tables, heads), --export (the reproducer it writes) and --first (the scan, the data flow and the hash cache .mate-tensor-hashes). An input is a root packed as files, each "PATH\n", its size (4 bytes, little-endian) and its bytes; fuzz/find_bug_seeds.py packs recorded roots into seeds. */
#include "config.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_tmp.h"
#include "mate_replay.h"
#include "replay_export.h"
#include "replay_first.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 24
#define MAX_DUMPS 8

static mate_replay *replay;

/* A relative path of at most two plain components ("DIR/FILE" or "FILE"). */
static int
safe_path(const char *p)
{
	int parts = 1;

	if (p[0] == '\0' || p[0] == '/' || strlen(p) > 200)
		return 0;
	for (const char *q = p; *q != '\0'; q++) {
		if (*q == '/') {
			if (q[1] == '/' || q[1] == '\0' || ++parts > 2)
				return 0;
		}
	}
	return strstr(p, "..") == NULL;
}

/* Unpacks data into root; 0 when nothing usable was in it. */
static int
unpack(const uint8_t *data, size_t size, const char *root)
{
	size_t at = 0;
	int nfiles = 0;

	while (at < size && nfiles < MAX_FILES) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		char name[256], path[512];
		uint32_t len;
		FILE *f;
		char *slash;

		if (nl == NULL || (size_t)(nl - (data + at)) >= sizeof(name))
			break;
		memcpy(name, data + at, (size_t)(nl - (data + at)));
		name[nl - (data + at)] = '\0';
		at = (size_t)(nl - data) + 1;
		if (size - at < 4)
			break;
		len = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16 |
		    (uint32_t)data[at + 3] << 24;
		at += 4;
		if (len > size - at)
			len = (uint32_t)(size - at);
		if (safe_path(name)) {
			snprintf(path, sizeof(path), "%s/%s", root, name);
			if ((slash = strrchr(path + strlen(root) + 1, '/')) != NULL) {
				*slash = '\0';
				mkdir(path, 0700);
				*slash = '/';
			}
			if ((f = fopen(path, "wb")) != NULL) {
				fwrite(data + at, 1, len, f);
				fclose(f);
				nfiles++;
			}
		}
		at += len;
	}
	return nfiles;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mate_error err;

	(void)argc;
	(void)argv;
	setenv("MATE_MAX_MEMORY", "64M", 1);
	setenv("MATE_NUM_THREADS", "1", 1);
	fuzz_tmp_make("fuzz-find-bug");
	if ((replay = mate_replay_new(&err)) == NULL ||
	    mate_replay_set_device(replay, MATE_REPLAY_DEVICE_CPU, &err) != MATE_OK)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char root[300], out[320], report[2048];
	mate_dump_list *l;
	mate_error err;
	size_t n;

	snprintf(root, sizeof(root), "%s/root", fuzz_tmp);
	fuzz_tmp_empty();
	mkdir(root, 0700);
	if (unpack(data, size, root) == 0)
		return 0;
	mate_error_clear(&err);
	if ((l = mate_dump_list_new(0, &err)) == NULL)
		return 0;
	if (mate_dump_list_add(l, root, &err) >= 0) {
		const struct mate_dump_info *calls[64];
		struct mate_first_scan scan;

		mate_dump_list_sort(l);
		n = mate_dump_list_count(l);
		for (size_t i = 0; i < n && i < 64; i++)
			calls[i] = mate_dump_list_get(l, i);
		/* --first: the scan, then the inputs' producers, twice (the second from the cache) */
		if (mate_first_scan(replay, calls, n < 64 ? n : 64, 1, &scan, &err) == MATE_OK &&
		    scan.wrong != MATE_FIRST_NONE)
			for (int k = 0; k < 2; k++) {
				struct mate_first_flow flow;

				memset(&flow, 0, sizeof(flow));
				mate_first_trace(l, scan.wrong, &flow, &err);
				mate_first_flow_free(&flow);
			}
		for (size_t i = 0; i < n && i < MAX_DUMPS; i++) {
			struct mate_export x = { -1, -1, NULL, NULL };
			const char *path = mate_dump_list_get(l, i)->path;

			snprintf(out, sizeof(out), "%s/shrunk%zu", fuzz_tmp, i);
			mate_replay_shrink(replay, path, out, report, sizeof(report), &err);
			snprintf(out, sizeof(out), "%s/export%zu", fuzz_tmp, i);
			mate_export_dump(path, out, &x, &err);
		}
	}
	mate_dump_list_free(l);
	return 0;
}
