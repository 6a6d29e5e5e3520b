/* dump_session.c: the order of calls made in one millisecond, from the root's session.jsonl. */
#include "mate_private.h"
#include "dump_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Folder names give the order of calls down to the millisecond only; a root's
 * session.jsonl has every call's records in the order they were appended, its
 * inputs_saved record first, as the call starts (spec/dumps.md). */

/* A dump of a run (calls of one millisecond, process and folder) and the first
 * record of its folder's session.jsonl that names it. */
struct member {
	struct mate_dump_info d;
	size_t at;      /* its place in the sorted list */
	size_t first;   /* (size_t)-1: not named */
};

static size_t
dir_len(const struct mate_dump_info *d)
{
	size_t n = (size_t)(d->name - d->path);

	return n > 0 ? n - 1 : 0;   /* the folder, less its '/' */
}

static int
cmp_dir_name(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;
	size_t la = dir_len(&a->d), lb = dir_len(&b->d);
	int c = memcmp(a->d.path, b->d.path, la < lb ? la : lb);

	if (c != 0 || la != lb)
		return c != 0 ? c : la < lb ? -1 : 1;
	return strcmp(a->d.name, b->d.name);
}

static int
cmp_first(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;

	if (a->first != b->first)
		return a->first < b->first ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

static int
cmp_at(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;

	return a->at < b->at ? -1 : a->at > b->at;
}

/* A name session.jsonl gives (the last component of a "dump_dir" value) in
 * record rec: the first record that names a member of m[0..n) (sorted by
 * name, one folder) is kept. */
static void
named(struct member *m, size_t n, const char *path, size_t len, size_t rec)
{
	const char *base = path;
	size_t lo = 0, hi = n;
	char name[1024];

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	len -= (size_t)(base - path);
	memcpy(name, base, len);
	name[len] = '\0';
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m[mid].d.name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && strcmp(m[lo].d.name, name) == 0 && m[lo].first == (size_t)-1)
		m[lo].first = rec;
}

/* Reads dir/session.jsonl (a regular file; never a FIFO or a link) as a stream,
 * in memory bounded whatever its lines, and marks the members m[0..n) (of that
 * folder, sorted by name) with the first record naming each. */
static void
session_read(const char *dir, struct member *m, size_t n)
{
	static const char key[] = "\"dump_dir\"";
	char path[4200], val[1023], buf[65536];
	size_t matched = 0, vlen = 0, rec = 0;
	int state = 0;   /* 0 seeking the key, 1 after it (to ':'), 2 to '"', 3 in the value */
	struct stat st;
	ssize_t got;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/session.jsonl", dir) >= sizeof(path))
		return;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < got; i++) {
			char ch = buf[i];

			if (ch == '\n') {
				rec++;
				state = 0;
				matched = 0;
				continue;
			}
			switch (state) {
			case 0:
				matched = ch == key[matched] ? matched + 1 : ch == key[0];
				if (matched == sizeof(key) - 1) {
					state = 1;
					matched = 0;
				}
				break;
			case 1:
				state = ch == ':' ? 2 : ch == ' ' ? 1 : 0;
				break;
			case 2:
				state = ch == '"' ? 3 : ch == ' ' ? 2 : 0;
				vlen = 0;
				break;
			default:
				if (ch == '"') {
					named(m, n, val, vlen, rec);
					state = 0;
				} else if (ch == '\\' || vlen == sizeof(val)) {
					state = 0;   /* no dump folder's name has these */
				} else {
					val[vlen++] = ch;
				}
				break;
			}
		}
	}
	close(fd);
}

/* Whether a and b are of one millisecond, one process and one folder. */
static int
same_moment(const struct mate_dump_info *a, const struct mate_dump_info *b)
{
	size_t la = dir_len(a);

	return a->timestamp[0] != '\0' && strcmp(a->timestamp, b->timestamp) == 0 &&
	    a->process_id == b->process_id && la == dir_len(b) && memcmp(a->path, b->path, la) == 0;
}

size_t
mate_dump_session_order(struct mate_dump_info *items, size_t n, char *example, size_t len)
{
	struct member *m;
	size_t nm = 0, unordered = 0;

	if (len > 0)
		example[0] = '\0';
	/* the members of runs of two or more */
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && same_moment(&items[i], &items[j]); j++)
			;
		if (j - i > 1)
			nm += j - i;
	}
	if (nm == 0)
		return 0;
	if ((m = malloc(nm * sizeof(*m))) == NULL) {
		if (len > 0)
			snprintf(example, len, "out of memory");
		return nm;
	}
	nm = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && same_moment(&items[i], &items[j]); j++)
			;
		for (size_t k = i; j - i > 1 && k < j; k++)
			m[nm++] = (struct member){ items[k], k, (size_t)-1 };
	}
	/* each folder's session.jsonl read once, for all its members */
	qsort(m, nm, sizeof(*m), cmp_dir_name);
	for (size_t i = 0, j; i < nm; i = j) {
		char dir[4200];
		size_t dl = dir_len(&m[i].d);

		for (j = i + 1; j < nm && dir_len(&m[j].d) == dl && memcmp(m[j].d.path, m[i].d.path, dl) == 0; j++)
			;
		if (dl >= sizeof(dir))
			continue;
		memcpy(dir, m[i].d.path, dl);
		dir[dl] = '\0';
		session_read(dl ? dir : ".", m + i, j - i);
	}
	/* each run in the order its records were appended, where all of it is named */
	qsort(m, nm, sizeof(*m), cmp_at);
	for (size_t i = 0, j; i < nm; i = j) {
		size_t known = 0;

		for (j = i + 1; j < nm && m[j].at == m[j - 1].at + 1 &&
		    same_moment(&m[i].d, &m[j].d); j++)
			;
		for (size_t k = i; k < j; k++)
			known += m[k].first != (size_t)-1;
		if (known == j - i) {
			size_t at = m[i].at;

			qsort(m + i, j - i, sizeof(*m), cmp_first);
			for (size_t k = i; k < j; k++)
				items[at + (k - i)] = m[k].d;
			continue;
		}
		/* no session.jsonl, or one that lacks them: the names' order */
		if (unordered == 0 && len > 0)
			snprintf(example, len, "%s and %s", m[i].d.name, m[i + 1].d.name);
		unordered += j - i;
	}
	free(m);
	return unordered;
}
