/* dump-floor.c: the syscall floor of a level-10 dump: a program that writes the same files, with the same bytes and the same layout, and does nothing else.
 *
 * usage: bench/dump-floor TEMPLATE ROOT SECONDS LOG_BYTES
 *
 * TEMPLATE is one dump folder the recorder wrote (its metadata.jsonl of two
 * lines, the inputs and outputs files). For SECONDS, each call makes a new
 * folder in ROOT and writes, as the recorder does: metadata.jsonl opened for
 * appending, its first line there and in ROOT/session.jsonl, half of
 * LOG_BYTES to ROOT/floor.log, the inputs file and the outputs file (each
 * opened, written in one write() and closed), then the second line to both
 * JSONL files and the other half of the log, and metadata.jsonl closed.
 * Nothing is formatted or checked per call: the bytes are the template's.
 * Prints "calls/s N" on standard output. bench/recorder runs it beside its
 * level-10 rows and prints the recorder's rate as a fraction of this one.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct file {
	char name[64];
	char *data;
	size_t len;
};

static void
die(const char *what, const char *path)
{
	fprintf(stderr, "dump-floor: %s: %s\n", what, path);
	exit(2);
}

static char *
slurp(const char *path, size_t *len)
{
	struct stat st;
	char *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		die("cannot read", path);
	if ((p = malloc((size_t)st.st_size + 1)) == NULL)
		die("out of memory", path);
	if (read(fd, p, (size_t)st.st_size) != st.st_size)
		die("short read", path);
	close(fd);
	p[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return p;
}

static void
put(int fd, const void *p, size_t n, const char *what)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("write failed", what);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	struct file in = { "", NULL, 0 }, out = { "", NULL, 0 };
	char path[4200], dir[4096], *meta, *line2, *log;
	size_t meta_len, len1, log_bytes;
	double seconds, t0, t;
	struct dirent *de;
	long calls = 0;
	int session, logfd;
	DIR *d;

	if (argc != 5 || strlen(argv[1]) > 4000 || strlen(argv[2]) > 4000) {
		fprintf(stderr, "usage: dump-floor TEMPLATE ROOT SECONDS LOG_BYTES\n");
		return 2;
	}
	seconds = atof(argv[3]);
	log_bytes = (size_t)atol(argv[4]);
	snprintf(path, sizeof(path), "%s/metadata.jsonl", argv[1]);
	meta = slurp(path, &meta_len);
	if ((line2 = strchr(meta, '\n')) == NULL)
		die("not two lines", path);
	len1 = (size_t)(++line2 - meta);
	if ((d = opendir(argv[1])) == NULL)
		die("cannot list", argv[1]);
	while ((de = readdir(d)) != NULL) {
		struct file *f = strncmp(de->d_name, "inputs.", 7) == 0 ? &in :
		    strncmp(de->d_name, "outputs.", 8) == 0 ? &out : NULL;

		if (f == NULL || strlen(de->d_name) >= sizeof(f->name))
			continue;
		strcpy(f->name, de->d_name);
		snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
		f->data = slurp(path, &f->len);
	}
	closedir(d);
	if (in.data == NULL || out.data == NULL)
		die("no inputs and outputs files in", argv[1]);
	if ((log = calloc(1, log_bytes + 1)) == NULL)
		die("out of memory", "log");
	memset(log, 'x', log_bytes);
	snprintf(path, sizeof(path), "%s/session.jsonl", argv[2]);
	if ((session = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		die("cannot open", path);
	snprintf(path, sizeof(path), "%s/floor.log", argv[2]);
	if ((logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		die("cannot open", path);
	t0 = now();
	do {
		const struct file *f[2] = { &in, &out };
		int m;

		snprintf(dir, sizeof(dir), "%s/call%08ld", argv[2], calls);
		if (mkdir(dir, 0755) != 0)
			die("cannot make", dir);
		snprintf(path, sizeof(path), "%s/metadata.jsonl", dir);
		if ((m = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
			die("cannot open", path);
		for (int k = 0; k < 2; k++) {
			int fd;

			put(m, k ? line2 : meta, k ? meta_len - len1 : len1, "metadata.jsonl");
			put(session, k ? line2 : meta, k ? meta_len - len1 : len1, "session.jsonl");
			put(logfd, log, k ? log_bytes - log_bytes / 2 : log_bytes / 2, "floor.log");
			snprintf(path, sizeof(path), "%s/%s", dir, f[k]->name);
			if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
				die("cannot open", path);
			put(fd, f[k]->data, f[k]->len, f[k]->name);
			close(fd);
		}
		close(m);
		calls++;
	} while ((t = now()) - t0 < seconds);
	printf("calls/s %.1f\n", (double)calls / (t - t0));
	return 0;
}
