/* mate-replay-merge.c: mate-replay --shard K/N (a stable share of the selected calls) and --merge (the shares' --jsonl results as one replay's). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "mate-replay-merge.h"

/* The longest line --merge reads: a call's line is a few hundred bytes, its
 * message at most 1 KiB before JSON escapes. */
#define MERGE_MAX_LINE (1 << 20)
/* The most calls a merge takes (an index above is not a share's). */
#define MERGE_MAX_CALLS ((size_t)1 << 40)

/* ---- --shard ------------------------------------------------------------ */

size_t
replay_shard_cut(const struct mate_fe_shard *s, const struct mate_dump_info **sel, size_t nsel,
    struct replay_share *sh)
{
	size_t kept = 0;

	sh->selected = nsel;
	sh->listing = MATE_FE_FNV1A64_BASIS;
	sh->index = mate_fe_grow(NULL, nsel, sizeof(*sh->index));
	for (size_t i = 0; i < nsel; i++) {
		/* the names with their NULs: "ab","c" is not "a","bc" */
		sh->listing = mate_fe_fnv1a64(sel[i]->name, strlen(sel[i]->name) + 1, sh->listing);
		if (mate_fe_shard_has(s, sel[i]->name)) {
			sh->index[kept] = i;
			sel[kept++] = sel[i];
		}
	}
	return kept;
}

void
replay_shard_close(const struct mate_fe_shard *s, const char *const *paths, size_t npaths,
    size_t listed, const struct replay_share *sh, size_t ndumps)
{
	cJSON *o = cJSON_CreateObject(), *roots;
	char buf[64], *text;

	snprintf(buf, sizeof(buf), "%lu/%lu", s->k, s->n);
	cJSON_AddStringToObject(o, "shard", buf);
	roots = cJSON_AddArrayToObject(o, "roots");
	for (size_t i = 0; i < npaths; i++) {
		/* the same root from another working directory is the same root */
		char *real = realpath(paths[i], NULL);

		cJSON_AddItemToArray(roots, cJSON_CreateString(real != NULL ? real : paths[i]));
		free(real);
	}
	cJSON_AddStringToObject(o, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(o, "listed", (double)listed);
	cJSON_AddNumberToObject(o, "selected", (double)sh->selected);
	cJSON_AddNumberToObject(o, "dumps", (double)ndumps);
	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)sh->listing);
	cJSON_AddStringToObject(o, "listing", buf);
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
	puts(text);
	cJSON_free(text);
	cJSON_Delete(o);
}

/* ---- --merge ------------------------------------------------------------ */

/* One file of the merge and its closing object. */
struct part {
	const char *name;
	FILE *f;
	unsigned long k, n;
	size_t calls;               /* call lines read */
	cJSON *close;               /* the closing object */
	char *line;                 /* the line being read */
	size_t cap;
	size_t lineno;
};

/* One call line seen by the first pass: where its index says it goes. */
struct seen {
	size_t index;
	uint64_t hash;              /* FNV-1a 64 of its dump's name */
	uint32_t part;
};

struct merge {
	struct part *parts;
	size_t nparts;
	struct seen *seen;
	size_t nseen, capseen;
};

#define NOT_SHARE "not the --jsonl output of mate-replay --shard K/N"

/* The next line of p (newline dropped) into p->line. @return its length, -1
 * at the end, -2 for a line over MERGE_MAX_LINE or with a NUL, -3 for a
 * read error. */
static long
read_line(struct part *p)
{
	size_t n = 0;
	int c, bad = 0;

	while ((c = getc(p->f)) != EOF && c != '\n') {
		if (c == '\0' || n >= MERGE_MAX_LINE) {
			bad = 1;
			continue;
		}
		if (n + 1 >= p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 4096;
			char *q = realloc(p->line, cap);

			if (q == NULL)
				mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
			p->line = q;
			p->cap = cap;
		}
		p->line[n++] = (char)c;
	}
	if (ferror(p->f))
		return -3;
	if (c == EOF && n == 0 && !bad)
		return -1;
	p->lineno++;
	if (bad)
		return -2;
	p->line[n] = '\0';
	return (long)n;
}

/* A whole number from 0 to max under key, or -1. */
static double
whole(const cJSON *o, const char *key, double max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) ||
	    v->valuedouble != floor(v->valuedouble))
		return -1;
	return v->valuedouble;
}

static const char *
string(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The verdict a name stands for, or -1. */
static int
verdict_of(const char *name)
{
	for (int v = MATE_REPLAY_PASSED; name != NULL && v <= MATE_REPLAY_UNCHECKED; v++)
		if (strcmp(name, mate_replay_verdict_name(v)) == 0)
			return v;
	return -1;
}

/* A share's closing object: checks its members' types, takes K/N. */
static int
take_close(struct part *p, cJSON *o)
{
	const char *shard = string(o, "shard"), *listing = string(o, "listing");
	const cJSON *roots = cJSON_GetObjectItemCaseSensitive(o, "roots"), *r;
	char slash, end;

	if (shard == NULL || sscanf(shard, "%lu%c%lu%c", &p->k, &slash, &p->n, &end) != 3 ||
	    slash != '/' || p->n == 0 || p->n > MATE_FE_SHARD_MAX || p->k >= p->n ||
	    string(o, "version") == NULL || listing == NULL || strlen(listing) != 16 ||
	    whole(o, "listed", (double)MERGE_MAX_CALLS) < 0 ||
	    whole(o, "selected", (double)MERGE_MAX_CALLS) < 0 ||
	    whole(o, "dumps", (double)MERGE_MAX_CALLS) < 0 || !cJSON_IsArray(roots))
		return -1;
	cJSON_ArrayForEach(r, roots)
		if (!cJSON_IsString(r))
			return -1;
	p->close = o;
	return 0;
}

/* A call line: index, dir, function, verdict, message and the bench figures
 * print_text() shows, checked for type. @return 0 or -1. */
static int
take_call(const cJSON *o, size_t *index, struct mate_dump_info *d, struct mate_replay_result *r)
{
	const char *msg = string(o, "message");
	double x = whole(o, "index", (double)MERGE_MAX_CALLS);

	memset(d, 0, sizeof(*d));
	memset(r, 0, sizeof(*r));
	d->name = string(o, "dir");
	d->function = string(o, "function");
	r->verdict = verdict_of(string(o, "verdict"));
	if (x < 1 || d->name == NULL || d->function == NULL || r->verdict < 0 ||
	    (msg == NULL && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "message"))))
		return -1;
	*index = (size_t)x - 1;
	snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "");
	r->bench_flops = -1;
	if (cJSON_GetObjectItemCaseSensitive(o, "bench_runs") != NULL) {
		static const char *const secs[] = { "bench_median_s", "bench_min_s", "bench_max_s" };
		double *to[] = { &r->bench_median, &r->bench_min, &r->bench_max };
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "bench_flops");

		if ((x = whole(o, "bench_runs", 1e9)) < 1 || whole(o, "bench_bytes", 9e18) < 0)
			return -1;
		r->bench_runs = (int)x;
		r->bench_bytes = (int64_t)whole(o, "bench_bytes", 9e18);
		for (int k = 0; k < 3; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, secs[k]);

			if (!cJSON_IsNumber(v) && !cJSON_IsNull(v))
				return -1;
			*to[k] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
		}
		if (f != NULL && !cJSON_IsNumber(f))
			return -1;
		if (f != NULL)
			r->bench_flops = f->valuedouble;
	}
	return 0;
}

/* The first pass over one file: every line a call of the share or, last,
 * its closing object. @return 0, or -1 (message printed). */
static int
scan_part(struct merge *m, uint32_t pi)
{
	struct part *p = &m->parts[pi];
	long len;

	while ((len = read_line(p)) >= 0) {
		cJSON *o = cJSON_ParseWithLength(p->line, (size_t)len);
		struct mate_dump_info d;
		struct mate_replay_result r;
		size_t index;

		if (p->close != NULL) {
			mate_fe_warnx("%s:%zu: a line after the share's closing object: " NOT_SHARE,
			    mate_fe_safe(p->name), p->lineno);
			cJSON_Delete(o);
			return -1;
		}
		if (!cJSON_IsObject(o) || (cJSON_GetObjectItemCaseSensitive(o, "shard") != NULL ?
		    take_close(p, o) : take_call(o, &index, &d, &r)) != 0) {
			mate_fe_warnx("%s:%zu: %s: " NOT_SHARE, mate_fe_safe(p->name), p->lineno,
			    o == NULL ? "not JSON" : !cJSON_IsObject(o) ? "not a JSON object" :
			    "not a call's or a share's object");
			cJSON_Delete(o);
			return -1;
		}
		if (p->close != NULL)
			continue;  /* kept */
		if (p->calls > 0 && index <= m->seen[m->nseen - 1].index) {
			mate_fe_warnx("%s:%zu: call %zu after call %zu: " NOT_SHARE,
			    mate_fe_safe(p->name), p->lineno, index + 1, m->seen[m->nseen - 1].index + 1);
			cJSON_Delete(o);
			return -1;
		}
		if (m->nseen == m->capseen) {
			m->capseen = m->capseen ? m->capseen * 2 : 1024;
			m->seen = mate_fe_grow(m->seen, m->capseen - 1, sizeof(*m->seen));
		}
		m->seen[m->nseen++] = (struct seen){ index,
		    mate_fe_fnv1a64(d.name, strlen(d.name), MATE_FE_FNV1A64_BASIS), pi };
		p->calls++;
		cJSON_Delete(o);
	}
	if (len == -3) {
		mate_fe_warn("%s", mate_fe_safe(p->name));
		return -1;
	}
	if (len == -2) {
		mate_fe_warnx("%s:%zu: a line over %d bytes or with a NUL: " NOT_SHARE,
		    mate_fe_safe(p->name), p->lineno, MERGE_MAX_LINE);
		return -1;
	}
	if (p->close == NULL) {
		mate_fe_warnx("%s: no closing {\"shard\":...} object: " NOT_SHARE ", or its run did "
		    "not finish", mate_fe_safe(p->name));
		return -1;
	}
	if (whole(p->close, "dumps", (double)MERGE_MAX_CALLS) != (double)p->calls) {
		mate_fe_warnx("%s: %zu call%s, but its closing object says %.0f: a cut file",
		    mate_fe_safe(p->name), p->calls, mate_fe_s(p->calls),
		    whole(p->close, "dumps", (double)MERGE_MAX_CALLS));
		return -1;
	}
	return 0;
}

/* Whether the closing objects a and b agree on member key. */
static int
same(const struct part *a, const struct part *b, const char *key)
{
	return cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a->close, key),
	    cJSON_GetObjectItemCaseSensitive(b->close, key), 1);
}

/* The shares against each other: one split, each share once, one root,
 * selection and version. @return the calls' owners (file of each index),
 * or NULL (message printed). */
static uint32_t *
check_parts(struct merge *m, size_t *total)
{
	const struct part *p0 = &m->parts[0];
	uint32_t *of_share, *owner;
	size_t selected = (size_t)whole(p0->close, "selected", (double)MERGE_MAX_CALLS), missing = 0;

	for (size_t i = 1; i < m->nparts; i++) {
		const struct part *p = &m->parts[i];
		char *a, *b;
		const char *key = NULL, *what = NULL;

		if (p->n != p0->n)
			key = "shard", what = "shares";
		else if (!same(p, p0, "version"))
			key = "version", what = "mate";
		else if (!same(p, p0, "roots"))
			key = "roots", what = "roots";
		if (key != NULL) {
			a = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p0->close, key));
			b = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p->close, key));
			mate_fe_warnx("%s and %s are not shares of one replay: %s %s and %s",
			    mate_fe_safe(p0->name), mate_fe_safe(p->name), what,
			    mate_fe_safe(a ? a : "?"), mate_fe_safe(b ? b : "?"));
			free(a);
			free(b);
			return NULL;
		}
		if (!same(p, p0, "listed") || !same(p, p0, "selected") || !same(p, p0, "listing")) {
			mate_fe_warnx("%s and %s saw different calls (other --include, --exclude or "
			    "--status, or the root changed between their runs)", mate_fe_safe(p0->name),
			    mate_fe_safe(p->name));
			return NULL;
		}
	}
	of_share = mate_fe_grow(NULL, p0->n - 1, sizeof(*of_share));
	memset(of_share, 0xff, p0->n * sizeof(*of_share));
	for (uint32_t i = 0; i < m->nparts; i++) {
		const struct part *p = &m->parts[i];

		if (of_share[p->k] != UINT32_MAX) {
			mate_fe_warnx("share %lu/%lu twice: %s and %s", p->k, p->n,
			    mate_fe_safe(m->parts[of_share[p->k]].name), mate_fe_safe(p->name));
			free(of_share);
			return NULL;
		}
		of_share[p->k] = i;
	}
	for (unsigned long k = 0; k < p0->n; k++)
		if (of_share[k] == UINT32_MAX && missing++ == 0)
			mate_fe_warnx("share %lu/%lu missing%s", k, p0->n, m->nparts + 1 < p0->n ?
			    " (and others)" : "");
	free(of_share);
	if (missing > 0)
		return NULL;
	if (m->nseen < selected) {  /* before the array of selected (what the files claim) */
		mate_fe_warnx("the shares hold %zu call%s, their runs selected %zu", m->nseen,
		    mate_fe_s(m->nseen), selected);
		return NULL;
	}
	owner = mate_fe_grow(NULL, selected ? selected - 1 : 0, sizeof(*owner));
	memset(owner, 0xff, (selected ? selected : 1) * sizeof(*owner));
	for (size_t i = 0; i < m->nseen; i++) {
		const struct seen *s = &m->seen[i];
		const struct part *p = &m->parts[s->part];

		if (s->index >= selected) {
			mate_fe_warnx("%s: call %zu of %zu selected: " NOT_SHARE, mate_fe_safe(p->name),
			    s->index + 1, selected);
			goto bad;
		}
		if (owner[s->index] != UINT32_MAX) {
			mate_fe_warnx("call %zu is in %s and in %s: overlapping shares", s->index + 1,
			    mate_fe_safe(m->parts[owner[s->index]].name), mate_fe_safe(p->name));
			goto bad;
		}
		owner[s->index] = s->part;
	}
	/* as many calls as selected, none twice nor out of range: each exactly once */
	for (size_t i = 0; i < m->nseen; i++) {
		const struct seen *s = &m->seen[i];
		const struct part *p = &m->parts[s->part];

		if (s->hash % p->n != p->k) {
			mate_fe_warnx("%s: call %zu is not in share %lu/%lu: " NOT_SHARE,
			    mate_fe_safe(p->name), s->index + 1, p->k, p->n);
			goto bad;
		}
	}
	*total = selected;
	return owner;
bad:
	free(owner);
	return NULL;
}

/* Lets the process hold one file per share: the soft limit of open files
 * raised to the hard one. */
static void
raise_file_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
replay_merge(const char *const *files, size_t n, replay_merge_fn fn, void *ctx, size_t *listed)
{
	struct merge m = { 0 };
	uint32_t *owner = NULL;
	size_t total = 0;
	int status = MATE_EXIT_USAGE;

	if (n > MATE_FE_SHARD_MAX) {
		mate_fe_warnx("%zu files: at most %d shares", n, MATE_FE_SHARD_MAX);
		return MATE_EXIT_USAGE;
	}
	raise_file_limit();
	m.parts = mate_fe_grow(NULL, n - 1, sizeof(*m.parts));
	memset(m.parts, 0, n * sizeof(*m.parts));
	for (size_t i = 0; i < n; i++) {
		m.parts[i].name = files[i];
		if ((m.parts[i].f = fopen(files[i], "r")) == NULL) {
			mate_fe_warn("cannot open %s", mate_fe_safe(files[i]));
			goto out;
		}
		m.nparts++;
		if (scan_part(&m, (uint32_t)i) != 0)
			goto out;
	}
	if ((owner = check_parts(&m, &total)) == NULL)
		goto out;
	free(m.seen);
	m.seen = NULL;
	for (size_t i = 0; i < n; i++) {
		m.parts[i].lineno = 0;
		if (fseek(m.parts[i].f, 0, SEEK_SET) != 0) {
			mate_fe_warn("%s: cannot read it again (a regular file is needed)",
			    mate_fe_safe(files[i]));
			goto out;
		}
	}
	/* each file holds its calls in order: the next line of the file that
	 * owns index i is call i */
	for (size_t i = 0; i < total; i++) {
		struct part *p = &m.parts[owner[i]];
		long len = read_line(p);
		cJSON *o = len >= 0 ? cJSON_ParseWithLength(p->line, (size_t)len) : NULL;
		struct mate_dump_info d;
		struct mate_replay_result r;
		size_t index;

		if (o == NULL || take_call(o, &index, &d, &r) != 0 || index != i) {
			mate_fe_warnx("%s: changed while being merged", mate_fe_safe(p->name));
			cJSON_Delete(o);
			goto out;
		}
		fn(i, &d, &r, p->line, ctx);
		cJSON_Delete(o);
	}
	*listed = (size_t)whole(m.parts[0].close, "listed", (double)MERGE_MAX_CALLS);
	status = MATE_EXIT_OK;
out:
	for (size_t i = 0; i < n; i++) {
		if (m.parts[i].f != NULL)
			fclose(m.parts[i].f);
		cJSON_Delete(m.parts[i].close);
		free(m.parts[i].line);
	}
	free(m.parts);
	free(m.seen);
	free(owner);
	return status;
}
