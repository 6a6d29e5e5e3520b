/* fi_coverage.c: mate-replay --list-ops's coverage of the FlashInfer installed: the functions
 * and methods its sources decorate with @flashinfer_api (read as text, never run), against
 * the replay handlers. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "fe.h"
#include "fi_coverage.h"
#include "mate_replay.h"

#define MAX_DEPTH 6
#define MAX_FILE (4 << 20)   /* a source file larger than this is not FlashInfer's */
#define MAX_NAMES 4096
#define MAX_CLASSES 32

struct names {
	char *v[MAX_NAMES];
	size_t n;
};

static void
add_name(struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return;
	if (s->n < MAX_NAMES && (s->v[s->n] = strdup(name)) != NULL)
		s->n++;
}

static int
indent_of(const char *line)
{
	int n = 0;

	for (; *line == ' ' || *line == '\t'; line++)
		n += *line == '\t' ? 8 - n % 8 : 1;
	return n;
}

/* "class NAME" / "def NAME" / "async def NAME" at the start of p: the name into out. */
static int
keyword_name(const char *p, const char *kw, char *out, size_t cap)
{
	size_t k = strlen(kw), n = 0;

	if (strncmp(p, "async ", 6) == 0 && strcmp(kw, "def") == 0)
		p += 6;
	if (strncmp(p, kw, k) != 0 || (p[k] != ' ' && p[k] != '\t'))
		return 0;
	for (p += k; *p == ' ' || *p == '\t'; p++)
		;
	while ((isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < cap) {
		out[n] = p[n];
		n++;
	}
	out[n] = '\0';
	return n > 0;
}

/* The triple-quoted string still open after line (0, '"' or '\''), given the one open
 * before it: an example in a docstring is not code. */
static char
string_after(const char *line, char open)
{
	for (const char *p = line; *p != '\0'; p++) {
		if (open == 0 && *p == '#')
			break;
		if ((*p == '"' || *p == '\'') && p[1] == *p && p[2] == *p) {
			if (open == 0)
				open = *p;
			else if (open == *p)
				open = 0;
			else
				continue;
			p += 2;
		}
	}
	return open;
}

/* The decorated names of one source file's text (NUL-terminated, changed in place). */
static void
scan_text(char *text, struct names *s)
{
	struct { int indent; char name[128]; } cls[MAX_CLASSES];
	int ncls = 0, pending = 0;
	char name[128], qual[300], str = 0;

	for (char *line = text, *next; line != NULL; line = next) {
		const char *p;
		int ind, in_string = str != 0;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		str = string_after(line, str);
		if (in_string)
			continue;   /* inside a docstring (its closing line included) */
		ind = indent_of(line);
		p = line + strspn(line, " \t");
		if (*p == '\0' || *p == '#')
			continue;
		while (ncls > 0 && ind <= cls[ncls - 1].indent && !pending)
			ncls--;
		if (strncmp(p, "@flashinfer_api", 15) == 0 &&
		    (p[15] == '\0' || p[15] == '(' || isspace((unsigned char)p[15]))) {
			pending = 1;
			continue;
		}
		if (keyword_name(p, "class", name, sizeof(name))) {
			while (ncls > 0 && ind <= cls[ncls - 1].indent)
				ncls--;
			if (pending) {   /* a class decorated whole: its calls as the class records them */
				add_name(s, name);
				pending = 0;
			}
			if (ncls < MAX_CLASSES) {
				cls[ncls].indent = ind;
				snprintf(cls[ncls].name, sizeof(cls[0].name), "%s", name);
				ncls++;
			}
			continue;
		}
		if (pending && keyword_name(p, "def", name, sizeof(name))) {
			while (ncls > 0 && ind <= cls[ncls - 1].indent)
				ncls--;
			/* as FlashInfer's decorator names a call: Class.method where the class's
			 * name holds "Wrapper" (or is MoELayer), else the bare name */
			if (ind > 0 && ncls > 0 && (strstr(cls[ncls - 1].name, "Wrapper") != NULL ||
			    strcmp(cls[ncls - 1].name, "MoELayer") == 0))
				snprintf(qual, sizeof(qual), "%s.%s", cls[ncls - 1].name, name);
			else
				snprintf(qual, sizeof(qual), "%s", name);
			add_name(s, qual);
			pending = 0;
		}
		/* other decorators and a decorator's continued arguments keep it pending */
	}
}

static void
scan_file(const char *path, struct names *s)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char *text;
	size_t n;

	if (f == NULL)
		return;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE ||
	    (text = malloc((size_t)st.st_size + 1)) == NULL) {
		fclose(f);
		return;
	}
	n = fread(text, 1, (size_t)st.st_size, f);
	text[n] = '\0';
	fclose(f);
	scan_text(text, s);
	free(text);
}

static void
scan_dir(const char *dir, int depth, struct names *s)
{
	DIR *d;
	struct dirent *de;
	char path[4096];
	struct stat st;

	if (depth > MAX_DEPTH || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || strcmp(de->d_name, "__pycache__") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
		    lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			scan_dir(path, depth + 1, s);
		else if (S_ISREG(st.st_mode) && len > 3 && strcmp(de->d_name + len - 3, ".py") == 0)
			scan_file(path, s);
	}
	closedir(d);
}

/* The installed package's folder: DIR/flashinfer of MATE_FLASHINFER=DIR (a folder that
 * holds the package, as site-packages does: the peers' tests take it so), else where
 * python3 finds it (the package is located, not imported). @return 0, or -1 when there
 * is none (said when MATE_FLASHINFER names a folder without it). */
static int
find_package(char *out, size_t cap)
{
	const char *env = getenv("MATE_FLASHINFER");
	struct stat st;
	FILE *p;
	size_t n;

	if (env != NULL && (env[0] == '\0' || strcmp(env, "none") == 0))
		return -1;
	if (env != NULL) {
		if ((size_t)snprintf(out, cap, "%s/flashinfer", env) >= cap || stat(out, &st) != 0 ||
		    !S_ISDIR(st.st_mode)) {
			mate_fe_warnx("MATE_FLASHINFER=%s holds no flashinfer package", env);
			return -1;
		}
		return 0;
	}
	p = popen("python3 -c 'import importlib.util as u; s = u.find_spec(\"flashinfer\"); "
	    "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else \"\")' "
	    "2>/dev/null", "r");
	if (p == NULL)
		return -1;
	n = fread(out, 1, cap - 1, p);
	pclose(p);
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return out[0] == '/' ? 0 : -1;
}

/* "0.7.2.post1" from the package's dist-info beside it, or "". */
static void
find_version(const char *pkg, char *out, size_t cap)
{
	char parent[4096], path[4600], line[256];
	DIR *d;
	struct dirent *de;
	const char *slash = strrchr(pkg, '/');

	out[0] = '\0';
	if (slash == NULL || (size_t)(slash - pkg) >= sizeof(parent))
		return;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - pkg), pkg);
	if ((d = opendir(parent)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && out[0] == '\0') {
		FILE *f;
		if (strncmp(de->d_name, "flashinfer_python-", 18) != 0 ||
		    strstr(de->d_name, ".dist-info") == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s/METADATA", parent, de->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "Version: ", 9) == 0) {
				line[strcspn(line, "\r\n")] = '\0';
				snprintf(out, cap, "%.60s", line + 9);
				break;
			}
		fclose(f);
	}
	closedir(d);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
handled(const mate_replay *r, const char *name)
{
	struct mate_replay_op op;

	for (size_t i = 0; mate_replay_op_get(r, i, &op) == MATE_OK; i++)
		if (strcmp(op.name, name) == 0)
			return 1;
	return 0;
}

int
mate_fi_coverage(const mate_replay *r, int list, int jsonl)
{
	char pkg[4096], version[64];
	struct names s = { .n = 0 };
	size_t yes = 0;

	if (find_package(pkg, sizeof(pkg)) != 0) {
		if (list)
			mate_fe_warnx("--coverage: no FlashInfer here (python3 finds no flashinfer "
			    "package; MATE_FLASHINFER=DIR names a folder that holds it)");
		return list ? MATE_EXIT_FAIL : MATE_EXIT_OK;
	}
	find_version(pkg, version, sizeof(version));
	scan_dir(pkg, 0, &s);
	qsort(s.v, s.n, sizeof(s.v[0]), cmp_str);
	for (size_t i = 0; i < s.n; i++) {
		int h = handled(r, s.v[i]);
		yes += (size_t)h;
		if (!list)
			continue;
		if (jsonl) {
			cJSON *o = cJSON_CreateObject();
			char *text;
			cJSON_AddStringToObject(o, "api", s.v[i]);
			cJSON_AddBoolToObject(o, "replays", h);
			if ((text = cJSON_PrintUnformatted(o)) != NULL)
				printf("%s\n", text);
			cJSON_free(text);
			cJSON_Delete(o);
		} else
			printf("%s\t%s\n", s.v[i], h ? "replays" : "-");
	}
	fflush(stdout);
	if (s.n == 0)
		mate_fe_warnx("FlashInfer in %s: no function decorated with @flashinfer_api found", pkg);
	else
		mate_fe_warnx("FlashInfer %s%sdecorates %zu APIs (%s): %zu replay here, %zu do not%s",
		    version, version[0] ? " " : "", s.n, pkg, yes, s.n - yes,
		    list ? "" : " (--coverage lists them)");
	for (size_t i = 0; i < s.n; i++)
		free(s.v[i]);
	return MATE_EXIT_OK;
}
