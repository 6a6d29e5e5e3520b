/* read-rss.c: the memory a read costs: peak RSS of a fresh process that reads one large tensor file with libmate (as mate-replay loads a dump) and touches every page, mapped (the default) against MATE_MMAP=0, for .pt and safetensors, against the file's size.
 *
 * usage: bench/read-rss [DIR [MIB]]
 *
 * Writes DIR/read-rss.pt and DIR/read-rss.safetensors (default $TMPDIR or /tmp; MIB MiB of
 * float32, default 256, one tensor), then for each file and each way runs itself again
 * (`read-rss --read FILE`, a new process image) which reads the file, reads one byte of
 * every page of the tensor, and prints VmHWM (peak RSS), RssAnon and RssFile of
 * /proc/self/status while it holds the tensor. A private copy is anonymous memory on top
 * of the page cache's copy; a mapped file's pages are the page cache's own, counted as
 * RssFile. Prints each as MiB and as a fraction of the file, and the ratio of anonymous
 * memory mapped/copied (goal: no second copy, i.e. about 0). Removes the files.
 */
#include "config.h"

#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mate_core.h"

extern char **environ;

/* A field of /proc/self/status in KiB, or -1. */
static long
status_kib(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && kib < 0 && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			kib = strtol(line + n + 1, NULL, 10);
	if (f != NULL)
		fclose(f);
	return kib;
}

/* The child: read, touch, report "hwm anon file" in KiB. */
static int
read_one(const char *path)
{
	size_t n = strlen(path);
	mate_error err;
	mate_value *v = n > 3 && strcmp(path + n - 3, ".pt") == 0 ? mate_pt_read(path, NULL, &err) :
	    mate_safetensors_read(path, NULL, &err);
	const mate_tensor *t;
	volatile unsigned char acc = 0;

	if (v == NULL || (t = mate_value_get_tensor(mate_value_item(v, 0))) == NULL) {
		fprintf(stderr, "read-rss: %s: %s\n", path, v == NULL ? err.message : "no tensor");
		return 1;
	}
	for (int64_t off = 0; off < mate_tensor_nbytes(t); off += 4096)
		acc ^= ((const unsigned char *)t->data)[off];
	printf("%ld %ld %ld\n", status_kib("VmHWM"), status_kib("RssAnon"), status_kib("RssFile"));
	mate_value_free(v);
	return 0;
}

/* Runs self --read path with MATE_MMAP=mmap_on; fills kib[3]. 0 or -1. */
static int
measure(const char *dir, const char *path, int mmap_on, long kib[3])
{
	static const char self[] = "/proc/self/exe";
	char out[1100];
	char *argv[] = { (char *)self, "--read", (char *)path, NULL };
	posix_spawn_file_actions_t fa;
	int fd, status = -1, ok;
	pid_t pid;
	FILE *f;

	snprintf(out, sizeof(out), "%s/read-rss.XXXXXX", dir);
	if ((fd = mkstemp(out)) < 0)
		return -1;
	setenv("MATE_MMAP", mmap_on ? "1" : "0", 1);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 1);
	ok = posix_spawn(&pid, self, &fa, NULL, argv, environ) == 0 && waitpid(pid, &status, 0) == pid &&
	    WIFEXITED(status) && WEXITSTATUS(status) == 0;
	posix_spawn_file_actions_destroy(&fa);
	unsetenv("MATE_MMAP");
	close(fd);
	f = fopen(out, "r");
	ok = ok && f != NULL && fscanf(f, "%ld %ld %ld", &kib[0], &kib[1], &kib[2]) == 3;
	if (f != NULL)
		fclose(f);
	unlink(out);
	return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR"), *dir;
	int64_t mib = argc > 2 ? atoll(argv[2]) : 256, n;
	char path[2][1024];
	mate_storage *st;
	mate_value *d;
	mate_tensor t;
	mate_error err;
	int rc = 0;

	if (argc == 3 && strcmp(argv[1], "--read") == 0)
		return read_one(argv[2]);
	dir = argc > 1 ? argv[1] : tmp != NULL && *tmp ? tmp : "/tmp";
	if (argc > 3 || mib <= 0 || mib > 65536) {
		fprintf(stderr, "usage: read-rss [DIR [MIB]]\n");
		return 2;
	}
	n = mib << 18;  /* float32 elements */
	if ((st = mate_storage_new((size_t)n * 4, &err)) == NULL) {
		fprintf(stderr, "read-rss: %s\n", err.message);
		return 1;
	}
	for (int64_t i = 0; i < n; i++)
		((float *)mate_storage_data(st))[i] = (float)(i % 1000) * 0.25f;
	mate_tensor_init(&t, MATE_F32, 1, &n, NULL, NULL);
	d = mate_value_dict();
	mate_value_set_str(d, "weight", mate_value_tensor(&t, st));
	snprintf(path[0], sizeof(path[0]), "%s/read-rss.%ld.pt", dir, (long)getpid());
	snprintf(path[1], sizeof(path[1]), "%s/read-rss.%ld.safetensors", dir, (long)getpid());
	if (mate_pt_write(path[0], d, NULL, &err) != MATE_OK ||
	    mate_safetensors_write(path[1], d, NULL, &err) != MATE_OK) {
		fprintf(stderr, "read-rss: %s\n", err.message);
		rc = 1;
	}
	mate_value_free(d);
	mate_storage_unref(st);
	printf("read-rss: one float32 tensor of %" PRId64 " MiB, read by a fresh process that touches "
	    "every page (peak RSS; anonymous and file-backed RSS while it holds the tensor)\n", mib);
	for (int k = 0; k < 2 && rc == 0; k++) {
		struct stat sb;
		long kib[2][3];
		double fmib;

		if (stat(path[k], &sb) != 0 || measure(dir, path[k], 1, kib[0]) != 0 ||
		    measure(dir, path[k], 0, kib[1]) != 0) {
			fprintf(stderr, "read-rss: %s: the reading process failed\n", path[k]);
			rc = 1;
			break;
		}
		fmib = (double)sb.st_size / 1048576;
		for (int m = 0; m < 2; m++)
			printf("%-12s %-22s peak RSS %7.1f MiB (%.2f of the file), anonymous %7.1f MiB, "
			    "file-backed %7.1f MiB\n", k ? "safetensors" : ".pt",
			    m ? "read (MATE_MMAP=0):" : "mapped (default):", kib[m][0] / 1024.0,
			    kib[m][0] / 1024.0 / fmib, kib[m][1] / 1024.0, kib[m][2] / 1024.0);
		printf("%-12s anonymous memory mapped/read: %.3f (goal: no second copy, about 0)\n", "",
		    kib[1][1] > 0 ? (double)kib[0][1] / (double)kib[1][1] : 0);
	}
	unlink(path[0]);
	unlink(path[1]);
	return rc;
}
