/* list-floor.c: the floor of listing dumps: a program that reads a root's folders, sorts their names, and opens, reads and closes each one's metadata.jsonl, and does nothing else.
 *
 * usage: bench/list-floor ROOT
 *
 * For each folder of ROOT (by d_type, else fstatat), in name order: openat
 * of NAME/metadata.jsonl, one pread() of up to 16 KiB (what mate-list-dumps
 * reads first), close, and the name printed on a line (stdio, buffered).
 * Nothing is parsed. Prints "dumps N" on standard error. bench/list-dumps.sh
 * runs it in rounds alternating with mate-list-dumps and prints the
 * listing's time as a fraction of this one's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
	static char buf[16384], path[4096];
	char **names = NULL;
	size_t n = 0, cap = 0, read_ok = 0;
	struct dirent *de;
	DIR *d;
	int dfd;

	if (argc != 2) {
		fprintf(stderr, "usage: list-floor ROOT\n");
		return 2;
	}
	if ((d = opendir(argv[1])) == NULL) {
		perror(argv[1]);
		return 1;
	}
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (de->d_type != DT_DIR && (de->d_type != DT_UNKNOWN ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			if ((names = realloc(names, cap * sizeof(*names))) == NULL)
				return 1;
		}
		if ((names[n++] = strdup(de->d_name)) == NULL)
			return 1;
	}
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/metadata.jsonl", names[i]);
		if ((fd = openat(dfd, path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		read_ok += pread(fd, buf, sizeof(buf), 0) > 0;
		close(fd);
		fputs(names[i], stdout);
		putchar('\n');
		free(names[i]);
	}
	free(names);
	closedir(d);
	fprintf(stderr, "dumps %zu\n", read_ok);
	return fflush(stdout) != 0;
}
