/* replay_first.c: the first wrong call of a recorded run (mate-replay --first) and the earlier calls whose outputs its inputs are, from content hashes cached in the root. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "replay_first.h"
#include "util.h"

/* ---- the scan ----------------------------------------------------------------- */

struct scan_ctx {
	struct mate_first_scan *out;
	size_t base;
};

static int
wrong_verdict(int v)
{
	return v == MATE_REPLAY_MISMATCH || v == MATE_REPLAY_ERROR || v == MATE_REPLAY_NOW_RUNS;
}

/* Results come in order: the first wrong one is kept, later ones are ignored. */
static void
scan_report(size_t i, const struct mate_dump_info *d, const struct mate_replay_result *res,
    void *ctx)
{
	struct scan_ctx *c = ctx;

	(void)d;
	if (c->out->wrong != MATE_FIRST_NONE)
		return;
	c->out->replayed = c->base + i + 1;
	if (res->verdict == MATE_REPLAY_UNSUPPORTED)
		c->out->unsupported++;
	if (wrong_verdict(res->verdict)) {
		c->out->wrong = c->base + i;
		c->out->result = *res;
	}
}

int
mate_first_scan(mate_replay *r, const struct mate_dump_info *const *calls, size_t n,
    int jobs, struct mate_first_scan *out, mate_error *err)
{
	/* a batch of a few calls per thread keeps the threads busy while calls of
	 * uneven cost finish, and wastes at most a batch past the wrong one */
	size_t batch = jobs <= 1 ? 1 : (size_t)jobs * 4;
	struct scan_ctx c = { .out = out };

	memset(out, 0, sizeof(*out));
	out->wrong = MATE_FIRST_NONE;
	for (size_t at = 0; at < n && out->wrong == MATE_FIRST_NONE; at += batch) {
		size_t k = n - at < batch ? n - at : batch;
		int rc;

		c.base = at;
		if ((rc = mate_replay_run(r, calls + at, k, jobs, scan_report, &c, err)) != MATE_OK)
			return rc;
	}
	return MATE_OK;
}

/* ---- hashes --------------------------------------------------------------------- */

/* XXH64 from xxHash (libxxhash-dev's header, inlined: no library to link
 * or to pack); the cache's hashes depend on it being exactly XXH64. */
uint64_t
mate_first_xxh64(const void *data, size_t n, uint64_t seed)
{
	return XXH64(data, n, seed);
}

/* A host tensor's bytes in row-major order: its own data when contiguous, else
 * a gathered copy in *copy (caller frees). NULL when empty or out of memory. */
static const void *
tensor_bytes(const mate_tensor *t, size_t *n, void **copy)
{
	int64_t nb = mate_tensor_nbytes(t);

	*copy = NULL;
	*n = 0;
	if (nb <= 0 || t->data == NULL || t->device_type != MATE_DEVICE_CPU)
		return NULL;
	*n = (size_t)nb;
	if (mate_tensor_is_contiguous(t))
		return (const char *)t->data + t->offset * (int64_t)mate_dtype_size(t->dtype);
	if ((*copy = malloc(*n)) == NULL)
		return NULL;
	mate_tensor_copy_contiguous(t, *copy);
	return *copy;
}

/* A hash of a dtype's name and a shape ("float32,8,64"), never 0. */
static uint64_t
shape_hash(mate_dtype dt, int ndim, const int64_t *shape)
{
	char head[64 + 21 * MATE_MAX_DIMS];
	int len = snprintf(head, sizeof(head), "%s", mate_dtype_name(dt));
	uint64_t h;

	for (int i = 0; i < ndim && i < MATE_MAX_DIMS; i++)
		len += snprintf(head + len, sizeof(head) - (size_t)len, ",%lld", (long long)shape[i]);
	h = mate_first_xxh64(head, (size_t)len, 0);
	return h | (h == 0);
}

/* The tensor's content hash: XXH64 of its row-major bytes, seeded with its
 * shape_hash(); 0 when it cannot be hashed. */
static uint64_t
tensor_hash(const mate_tensor *t)
{
	size_t n;
	void *copy;
	const void *b;
	uint64_t h;

	if ((b = tensor_bytes(t, &n, &copy)) == NULL)
		return 0;
	h = mate_first_xxh64(b, n, shape_hash(t->dtype, t->ndim, t->shape));
	free(copy);
	return h | (h == 0);  /* 0 means "none" */
}

static int
same_shape(const mate_tensor *a, const mate_tensor *b)
{
	if (a->dtype != b->dtype || a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

/* Whether a and b hold the same dtype, shape and bytes (the hash's confirmation). */
static int
same_tensor(const mate_tensor *a, const mate_tensor *b)
{
	size_t na, nb;
	void *ca, *cb;
	const void *pa, *pb;
	int same;

	if (!same_shape(a, b))
		return 0;
	pa = tensor_bytes(a, &na, &ca);
	pb = tensor_bytes(b, &nb, &cb);
	same = pa != NULL && pb != NULL && na == nb && memcmp(pa, pb, na) == 0;
	free(ca);
	free(cb);
	return same;
}

/* ---- the tensors of a value tree ---------------------------------------------------- */

#define MAX_DEPTH 8

struct leaf {
	char name[192], key[192];
	const mate_tensor *t;
	uint64_t shape, hash;       /* shape_hash(), tensor_hash() */
};

struct leaves {
	struct leaf *v;
	size_t n, cap;
};

static int
add_leaf(struct leaves *ls, const char *name, const char *key, const mate_tensor *t)
{
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 16;
		struct leaf *v = realloc(ls->v, cap * sizeof(*v));

		if (v == NULL)
			return MATE_ERR_NOMEM;
		ls->v = v;
		ls->cap = cap;
	}
	snprintf(ls->v[ls->n].name, sizeof(ls->v[0].name), "%s", name);
	snprintf(ls->v[ls->n].key, sizeof(ls->v[0].key), "%s", key);
	ls->v[ls->n].t = t;
	ls->v[ls->n].shape = shape_hash(t->dtype, t->ndim, t->shape);
	ls->v[ls->n].hash = 0;
	ls->n++;
	return MATE_OK;
}

/* Every tensor in v: named name[i] and keyed key__i inside lists and tuples, as
 * the tensor files key them. */
static int
walk(const mate_value *v, const char *name, const char *key, int depth, struct leaves *ls)
{
	char n2[192], k2[192];
	int rc = MATE_OK;

	switch (mate_value_kind_of(v)) {
	case MATE_V_TENSOR:
		return add_leaf(ls, name, key, mate_value_get_tensor(v));
	case MATE_V_LIST:
	case MATE_V_TUPLE:
		if (depth >= MAX_DEPTH)
			return MATE_OK;
		for (size_t i = 0; rc == MATE_OK && i < mate_value_len(v); i++) {
			snprintf(n2, sizeof(n2), "%.160s[%zu]", name, i);
			snprintf(k2, sizeof(k2), "%.160s__%zu", key, i);
			rc = walk(mate_value_item(v, i), n2, k2, depth + 1, ls);
		}
		return rc;
	default:
		return MATE_OK;
	}
}

/* The name of positional parameter i in a signature as inspect writes it
 * ("(a, b: int = 3, /, *, c=None) -> T"), into buf; 0 when there is none. */
static int
param_name(const char *sig, size_t i, char *buf, size_t cap)
{
	const char *p = sig != NULL ? strchr(sig, '(') : NULL;
	size_t at = 0;

	if (p == NULL)
		return 0;
	for (p++; *p != '\0' && *p != ')';) {
		const char *s = p, *e;
		int depth = 0;
		char q = 0;

		for (; *p != '\0'; p++) {   /* to the parameter's end */
			if (q != 0) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				else if (*p == q)
					q = 0;
			} else if (*p == '\'' || *p == '"') {
				q = *p;
			} else if (strchr("([{<", *p) != NULL) {
				depth++;
			} else if (strchr(")]}>", *p) != NULL && depth > 0) {
				depth--;
			} else if ((*p == ',' || *p == ')') && depth == 0) {
				break;
			}
		}
		while (*s == ' ')
			s++;
		if (*s == '*')              /* *args, *, **kwargs: no more positions */
			return 0;
		for (e = s; (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') ||
		    (*e >= '0' && *e <= '9') || *e == '_'; e++)
			;
		if (e > s && at++ == i) {
			snprintf(buf, cap, "%.*s", (int)(e - s) < 128 ? (int)(e - s) : 128, s);
			return 1;
		}
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The function_signature of dir's last record that has one, into buf ("" when
 * none). metadata.jsonl is read whole, up to 64 MiB. */
static void
record_signature(const char *dir, char *buf, size_t cap)
{
	char path[4096];
	struct stat st;
	char *text = NULL;
	ssize_t got = 0;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/metadata.jsonl", dir);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    st.st_size <= 64 << 20 && (text = malloc((size_t)st.st_size + 1)) != NULL) {
		for (ssize_t k; got < st.st_size && (k = read(fd, text + got,
		    (size_t)(st.st_size - got))) > 0; got += k)
			;
		text[got] = '\0';
	}
	close(fd);
	for (ssize_t end = got; text != NULL && end > 0 && buf[0] == '\0';) {
		ssize_t start = end - 1;
		cJSON *rec, *sig;

		while (start > 0 && text[start - 1] != '\n')
			start--;
		rec = cJSON_ParseWithLength(text + start, (size_t)(end - start));
		sig = cJSON_GetObjectItemCaseSensitive(rec, "function_signature");
		if (cJSON_IsString(sig))
			snprintf(buf, cap, "%s", sig->valuestring);
		cJSON_Delete(rec);
		end = start > 0 ? start - 1 : 0;
	}
	free(text);
}

/* The inputs of a call by the names its signature gives them. */
static void
name_inputs(struct leaves *ls, const char *sig)
{
	for (size_t i = 0; i < ls->n; i++) {
		struct leaf *f = &ls->v[i];
		char pname[160], rest[192];
		const char *br = strchr(f->name, '[');
		char *end;
		unsigned long pos;

		snprintf(rest, sizeof(rest), "%s", br != NULL ? br : "");
		if (strncmp(f->name, "kwarg_", 6) == 0) {
			memmove(f->name, f->name + 6, strlen(f->name + 6) + 1);
		} else if (strncmp(f->name, "arg_", 4) == 0 && f->name[4] >= '0' && f->name[4] <= '9' &&
		    (pos = strtoul(f->name + 4, &end, 10)) < 100000 && (*end == '\0' || *end == '[') &&
		    param_name(sig, pos, pname, sizeof(pname))) {
			snprintf(f->name, sizeof(f->name), "%.64s%.120s", pname, rest);
		}
	}
}

/* ---- the cache ---------------------------------------------------------------------
 * One text file per root: a header line, then "DIR\tSTAMP\tSHAPE\tHASH\tKEY"
 * per output tensor of a call looked at, STAMP a hash of the sizes and
 * modification times of the call's metadata.jsonl and output files (a
 * changed file is looked at again), SHAPE its shape_hash(), HASH its
 * content hash or "-" where only the shape was needed (no input of that
 * dtype and shape was wanted); a call without output tensors has one line
 * "DIR\tSTAMP\t-\t-\t-". All 16 lower-case hex digits. It is untrusted
 * like the dumps: lines past MAX_LINE or out of form are ignored, and a hash
 * read from it is only a candidate until the tensors are compared byte for
 * byte. */

#define CACHE_HEADER "# mate tensor hashes 1"
#define MAX_LINE 2048
#define MAX_CACHE_BYTES (256 << 20)

struct entry {
	char *dir, *key;            /* one allocation: dir, then key */
	uint64_t stamp, shape, hash;  /* shape 0: the call has no outputs; hash 0: not hashed */
};

struct cache {
	char *root;
	struct entry *old;          /* read from the file, sorted by dir and stamp */
	size_t nold;
	struct entry *fresh;        /* hashed in this run */
	size_t nfresh, capfresh;
	int writable;               /* the file could be read or did not exist */
};

struct caches {
	struct cache *v;
	size_t n;
};

static int
cmp_entry(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	int c = strcmp(a->dir, b->dir);

	if (c != 0)
		return c;
	return a->stamp < b->stamp ? -1 : a->stamp > b->stamp;
}

static int
cmp_dir(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	return strcmp(a->dir, b->dir);
}

/* 16 hex digits, or "-" for 0 where dash is allowed. */
static int
hex64(const char *s, size_t n, uint64_t *v, int dash)
{
	*v = 0;
	if (dash && n == 1 && s[0] == '-')
		return 1;
	if (n != 16)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ?
		    s[i] - 'a' + 10 : -1;

		if (d < 0)
			return 0;
		*v = *v << 4 | (uint64_t)d;
	}
	return 1;
}

static int
cacheable(const char *s)
{
	return s[0] != '\0' && strlen(s) < 1000 && strpbrk(s, "\t\n\r") == NULL;
}

static struct entry *
new_entry(const char *dir, const char *key, uint64_t stamp, uint64_t shape, uint64_t hash)
{
	static struct entry e;
	size_t ld = strlen(dir) + 1, lk = strlen(key) + 1;

	if ((e.dir = malloc(ld + lk)) == NULL)
		return NULL;
	memcpy(e.dir, dir, ld);
	e.key = e.dir + ld;
	memcpy(e.key, key, lk);
	e.stamp = stamp;
	e.shape = shape;
	e.hash = hash;
	return &e;
}

/* One line "DIR\tSTAMP\tSHAPE\tHASH\tKEY" into *e; 0 when it is not of that
 * form (-1: out of memory). */
static int
parse_line(char *line, size_t n, struct entry *e)
{
	char *f[5], *p = line;
	size_t len[5];

	for (int i = 0; i < 5; i++) {
		char *t = i == 4 ? line + n : memchr(p, '\t', n - (size_t)(p - line));

		if (t == NULL)
			return 0;
		f[i] = p;
		len[i] = (size_t)(t - p);
		p = t + (i < 4);
	}
	if (len[0] == 0 || len[4] == 0 || memchr(f[4], '\t', len[4]) != NULL ||
	    !hex64(f[1], len[1], &e->stamp, 0) || !hex64(f[2], len[2], &e->shape, 1) ||
	    !hex64(f[3], len[3], &e->hash, 1) || (e->shape == 0 && e->hash != 0))
		return 0;
	f[0][len[0]] = '\0';
	f[4][len[4]] = '\0';
	{
		struct entry *ne = new_entry(f[0], f[4], e->stamp, e->shape, e->hash);

		if (ne == NULL)
			return -1;
		*e = *ne;
	}
	return 1;
}

static void
cache_read(struct cache *c)
{
	char path[4096], line[MAX_LINE + 2];
	size_t cap = 0;
	int fd, skip = 0, first = 1;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", c->root, MATE_FIRST_CACHE);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		c->writable = errno == ENOENT;
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_CACHE_BYTES ||
	    (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return;
	}
	c->writable = 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t n = strlen(line);
		int whole = n > 0 && line[n - 1] == '\n';
		struct entry e;

		if (skip || !whole) {       /* an overlong line, to its end */
			skip = !whole;
			first = 0;
			continue;
		}
		line[--n] = '\0';
		if (first) {
			first = 0;
			if (strcmp(line, CACHE_HEADER) != 0)
				break;              /* another version: rewritten */
			continue;
		}
		if (parse_line(line, n, &e) != 1)
			continue;
		if (c->nold == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct entry *v = realloc(c->old, nc * sizeof(*v));

			if (v == NULL) {
				free(e.dir);
				break;
			}
			c->old = v;
			cap = nc;
		}
		c->old[c->nold++] = e;
	}
	fclose(f);
	if (c->nold > 0)
		qsort(c->old, c->nold, sizeof(*c->old), cmp_entry);
}

static void
put_hex(FILE *f, uint64_t v)
{
	if (v == 0)
		fputs("\t-", f);
	else
		fprintf(f, "\t%016llx", (unsigned long long)v);
}

static void
put_entry(FILE *f, const struct entry *e)
{
	fprintf(f, "%s\t%016llx", e->dir, (unsigned long long)e->stamp);
	put_hex(f, e->shape);
	put_hex(f, e->hash);
	fprintf(f, "\t%s\n", e->key);
}

/* Writes old entries of calls not looked at again, then the fresh ones, under a
 * temporary name renamed over the cache; nothing when the root is read-only. */
static void
cache_write(struct cache *c)
{
	char path[4096], tmp[4096 + 64];
	FILE *f;
	int fd, ok;

	if (c->nfresh == 0 || !c->writable)
		return;
	snprintf(path, sizeof(path), "%s/%s", c->root, MATE_FIRST_CACHE);
	if ((fd = mate_tmp_create(tmp, path)) < 0)
		return;
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		unlink(tmp);
		return;
	}
	qsort(c->fresh, c->nfresh, sizeof(*c->fresh), cmp_dir);
	fprintf(f, "%s\n", CACHE_HEADER);
	for (size_t i = 0; i < c->nold; i++)
		if (bsearch(&c->old[i], c->fresh, c->nfresh, sizeof(*c->fresh), cmp_dir) == NULL)
			put_entry(f, &c->old[i]);
	for (size_t i = 0; i < c->nfresh; i++)
		put_entry(f, &c->fresh[i]);
	ok = fflush(f) == 0 && !ferror(f);
	if (fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
}

static void
cache_free(struct cache *c)
{
	for (size_t i = 0; i < c->nold; i++)
		free(c->old[i].dir);
	for (size_t i = 0; i < c->nfresh; i++)
		free(c->fresh[i].dir);
	free(c->old);
	free(c->fresh);
	free(c->root);
}

/* The cache of the root holding dump path (read on first use), or NULL. */
static struct cache *
cache_for(struct caches *cs, const char *path, const char *name)
{
	size_t len = (size_t)(name - path);
	struct cache *v;

	len = len > 0 ? len - 1 : 0;
	for (size_t i = 0; i < cs->n; i++)
		if (strlen(cs->v[i].root) == len && memcmp(cs->v[i].root, path, len) == 0)
			return &cs->v[i];
	if ((v = realloc(cs->v, (cs->n + 1) * sizeof(*v))) == NULL)
		return NULL;
	cs->v = v;
	v = &cs->v[cs->n];
	memset(v, 0, sizeof(*v));
	if ((v->root = len > 0 ? strndup(path, len) : strdup(".")) == NULL)
		return NULL;
	cs->n++;
	cache_read(v);
	return v;
}

/* The first of the old entries of (dir, stamp), or NULL. */
static const struct entry *
cache_find(const struct cache *c, const char *dir, uint64_t stamp, size_t *count)
{
	struct entry want = { .dir = (char *)dir, .stamp = stamp };
	const struct entry *e = c->nold == 0 ? NULL :
	    bsearch(&want, c->old, c->nold, sizeof(*c->old), cmp_entry);

	*count = 0;
	if (e == NULL)
		return NULL;
	while (e > c->old && cmp_entry(e - 1, &want) == 0)
		e--;
	while (e + *count < c->old + c->nold && cmp_entry(e + *count, &want) == 0)
		(*count)++;
	return e;
}

static int
cache_add(struct cache *c, const char *dir, const char *key, uint64_t stamp, uint64_t shape,
    uint64_t hash)
{
	struct entry *e;

	if (c->nfresh == c->capfresh) {
		size_t nc = c->capfresh ? c->capfresh * 2 : 64;
		struct entry *v = realloc(c->fresh, nc * sizeof(*v));

		if (v == NULL)
			return MATE_ERR_NOMEM;
		c->fresh = v;
		c->capfresh = nc;
	}
	if ((e = new_entry(dir, key, stamp, shape, hash)) == NULL)
		return MATE_ERR_NOMEM;
	c->fresh[c->nfresh++] = *e;
	return MATE_OK;
}

/* A hash of the sizes and modification times of a dump's record and output files. */
static uint64_t
dump_stamp(const char *dir)
{
	static const char *const files[] = { "metadata.jsonl", "outputs.pt", "outputs.safetensors",
		"inplace.pt", "inplace.safetensors" };
	uint64_t h = 0;
	char path[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct stat st;
		int64_t f[4] = { 0, 0, 0, 0 };

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (lstat(path, &st) == 0) {
			f[0] = 1;
			f[1] = (int64_t)st.st_size;
			f[2] = (int64_t)st.st_mtim.tv_sec;
			f[3] = (int64_t)st.st_mtim.tv_nsec;
		}
		h = mate_first_xxh64(f, sizeof(f), h);
	}
	return h;
}

/* ---- the trace ---------------------------------------------------------------------- */

struct trace {
	struct leaves in;           /* the wrong call's tensor inputs */
	size_t *producer;           /* per input: the list index, or MATE_FIRST_NONE */
	char (*output)[192];
	size_t left;                /* inputs without a producer yet */
};

/* The recorded outputs of dump dir: a dict, or NULL. */
static mate_value *
load_outputs(const char *dir)
{
	mate_error err;
	mate_dump *d = mate_dump_open(dir, &err);
	mate_value *outs = NULL;

	if (d != NULL && mate_dump_load_outputs(d, &outs, &err) != MATE_OK)
		outs = NULL;
	mate_dump_free(d);
	return outs;
}

static int
walk_dict(const mate_value *dict, struct leaves *ls)
{
	int rc = MATE_OK;

	for (size_t i = 0; rc == MATE_OK && i < mate_value_len(dict); i++) {
		const char *k = mate_value_get_str(mate_value_key(dict, i), NULL);

		if (k != NULL)
			rc = walk(mate_value_item(dict, i), k, k, 0, ls);
	}
	return rc;
}

/* Whether an input still unmatched has that shape_hash() (and, where hash is
 * not 0, that content hash). */
static int
wanted(const struct trace *tr, uint64_t shape, uint64_t hash)
{
	for (size_t i = 0; i < tr->in.n; i++)
		if (tr->producer[i] == MATE_FIRST_NONE && tr->in.v[i].hash != 0 &&
		    tr->in.v[i].shape == shape && (hash == 0 || tr->in.v[i].hash == hash))
			return 1;
	return 0;
}

/* The shapes of dump d's output tensors, from its files' headers (not their
 * data), as cache entries in c (shape only), and whether one is wanted; 1 too
 * when the headers cannot be read (loading the dump will say). */
static int
look_at_shapes(struct trace *tr, struct cache *c, const struct mate_dump_info *d, uint64_t stamp,
    int *rc)
{
	mate_error err;
	mate_dump_list *one = mate_dump_list_new(MATE_DUMP_LIST_DETAILS, &err);
	const struct mate_dump_info *info;
	int want = 0, keep = c != NULL && cacheable(d->name), outs = 0;

	if (one == NULL)
		return 1;
	mate_dump_list_set_threads(one, 1);
	if (mate_dump_list_add(one, d->path, &err) != 1 || (info = mate_dump_list_get(one, 0)) == NULL ||
	    info->problem != NULL) {
		mate_dump_list_free(one);
		return 1;
	}
	for (size_t k = 0; k < info->n_tensors; k++) {
		const struct mate_dump_tensor *t = &info->tensors[k];

		if (t->output == 0)
			continue;
		outs++;
		if (t->dtype == MATE_DTYPE_INVALID || (t->ndim > 0 && t->shape == NULL) ||
		    t->ndim < 0 || t->ndim > MATE_MAX_DIMS) {
			want = 1;       /* a tensor the headers cannot describe may be anything */
			continue;
		}
		want |= wanted(tr, shape_hash(t->dtype, t->ndim, t->shape), 0);
		keep &= t->key != NULL && cacheable(t->key);
	}
	for (size_t k = 0; keep && !want && k < info->n_tensors && *rc == MATE_OK; k++) {
		const struct mate_dump_tensor *t = &info->tensors[k];

		if (t->output != 0)
			*rc = cache_add(c, d->name, t->key, stamp, shape_hash(t->dtype, t->ndim, t->shape), 0);
	}
	if (keep && !want && outs == 0 && *rc == MATE_OK)
		*rc = cache_add(c, d->name, "-", stamp, 0, 0);
	mate_dump_list_free(one);
	return want;
}

/* Matches the unmatched inputs against the outputs of call j (loaded). */
static void
match_outputs(struct trace *tr, const struct leaves *outs, size_t j)
{
	for (size_t i = 0; i < tr->in.n; i++) {
		if (tr->producer[i] != MATE_FIRST_NONE || tr->in.v[i].hash == 0)
			continue;
		for (size_t k = 0; k < outs->n; k++)
			if (outs->v[k].hash == tr->in.v[i].hash &&
			    same_tensor(outs->v[k].t, tr->in.v[i].t)) {
				tr->producer[i] = j;
				snprintf(tr->output[i], sizeof(tr->output[i]), "%s", outs->v[k].key);
				tr->left--;
				break;
			}
	}
}

/* Whether a cached entry of a call says one of its outputs may be a wanted input. */
static int
cached_wanted(const struct trace *tr, const struct entry *e, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (e[k].shape != 0 && wanted(tr, e[k].shape, e[k].hash))
			return 1;
	return 0;
}

/* Looks at call j's outputs: the shapes and hashes the cache has, else the
 * shapes in its files' headers; reads and hashes them when one may be a
 * wanted input. */
static int
visit(struct trace *tr, struct caches *cs, const struct mate_dump_info *d, size_t j,
    struct mate_first_flow *f)
{
	struct cache *c = cache_for(cs, d->path, d->name);
	uint64_t stamp = dump_stamp(d->path);
	const struct entry *e = NULL;
	struct leaves outs = { 0 };
	mate_value *v;
	size_t n = 0;
	int rc = MATE_OK, keep;

	if (c != NULL && (e = cache_find(c, d->name, stamp, &n)) != NULL) {
		f->cached++;
		if (!cached_wanted(tr, e, n))
			return MATE_OK;
	} else if (!look_at_shapes(tr, c, d, stamp, &rc)) {
		return rc;
	}
	if (rc != MATE_OK || (v = load_outputs(d->path)) == NULL)
		return rc;
	f->read++;
	if (walk_dict(v, &outs) != MATE_OK) {
		rc = MATE_ERR_NOMEM;
		goto out;
	}
	keep = c != NULL && cacheable(d->name);
	for (size_t k = 0; k < outs.n; k++) {
		outs.v[k].hash = tensor_hash(outs.v[k].t);
		keep &= cacheable(outs.v[k].key);
	}
	for (size_t k = 0; keep && k < outs.n && rc == MATE_OK; k++)
		rc = cache_add(c, d->name, outs.v[k].key, stamp, outs.v[k].shape, outs.v[k].hash);
	if (keep && outs.n == 0 && rc == MATE_OK)
		rc = cache_add(c, d->name, "-", stamp, 0, 0);
	match_outputs(tr, &outs, j);
out:
	free(outs.v);
	mate_value_free(v);
	return rc;
}

static int
is_return_key(const char *k)
{
	return strncmp(k, "arg_", 4) != 0 && strncmp(k, "kwarg_", 6) != 0;
}

int
mate_first_trace(const mate_dump_list *l, size_t at, struct mate_first_flow *f, mate_error *err)
{
	const struct mate_dump_info *d = mate_dump_list_get(l, at);
	struct trace tr;
	struct caches cs = { 0 };
	mate_dump *dump;
	mate_value *args = NULL;
	mate_error derr;
	char sig[4096];
	int rc = MATE_OK;

	memset(f, 0, sizeof(*f));
	memset(&tr, 0, sizeof(tr));
	if (d == NULL)
		return MATE_ERR_ARGUMENT;
	mate_error_clear(&derr);
	if ((dump = mate_dump_open(d->path, &derr)) == NULL ||
	    (args = mate_dump_load_args(dump, &derr)) == NULL) {
		snprintf(f->problem, sizeof(f->problem), "%s", derr.message[0] ? derr.message :
		    "cannot read the call's inputs");
		mate_dump_free(dump);
		return MATE_OK;
	}
	record_signature(d->path, sig, sizeof(sig));
	if (walk_dict(args, &tr.in) != MATE_OK)
		goto nomem;
	name_inputs(&tr.in, sig);
	tr.producer = malloc((tr.in.n ? tr.in.n : 1) * sizeof(*tr.producer));
	tr.output = malloc((tr.in.n ? tr.in.n : 1) * sizeof(*tr.output));
	f->inputs = calloc(tr.in.n ? tr.in.n : 1, sizeof(*f->inputs));
	if (tr.producer == NULL || tr.output == NULL || f->inputs == NULL)
		goto nomem;
	for (size_t i = 0; i < tr.in.n; i++) {
		tr.producer[i] = MATE_FIRST_NONE;
		tr.output[i][0] = '\0';
		if (mate_tensor_numel(tr.in.v[i].t) > 0 && (tr.in.v[i].hash = tensor_hash(tr.in.v[i].t)) != 0)
			tr.left++;
	}
	for (size_t j = at; j-- > 0 && tr.left > 0 && rc == MATE_OK;) {
		const struct mate_dump_info *p = mate_dump_list_get(l, j);

		if (p->status == MATE_DUMP_COMPLETED)
			rc = visit(&tr, &cs, p, j, f);
	}
	if (rc != MATE_OK)
		goto nomem;
	for (size_t i = 0; i < tr.in.n; i++) {
		struct mate_first_input *in = &f->inputs[i];

		snprintf(in->name, sizeof(in->name), "%s", tr.in.v[i].name);
		snprintf(in->key, sizeof(in->key), "%s", tr.in.v[i].key);
		in->producer = tr.producer[i];
		snprintf(in->output, sizeof(in->output), "%s", tr.output[i]);
		in->in_place = in->producer != MATE_FIRST_NONE && !is_return_key(in->output);
	}
	f->n = tr.in.n;
	goto out;
nomem:
	rc = MATE_ERR_NOMEM;
	snprintf(err->message, sizeof(err->message), "out of memory tracing the call's inputs");
	err->code = rc;
	free(f->inputs);
	f->inputs = NULL;
out:
	for (size_t i = 0; i < cs.n; i++) {
		if (rc == MATE_OK)
			cache_write(&cs.v[i]);
		cache_free(&cs.v[i]);
	}
	free(cs.v);
	free(tr.in.v);
	free(tr.producer);
	free(tr.output);
	mate_value_free(args);
	mate_dump_free(dump);
	return rc;
}

void
mate_first_flow_free(struct mate_first_flow *f)
{
	if (f == NULL)
		return;
	free(f->inputs);
	f->inputs = NULL;
	f->n = 0;
}

int64_t
mate_first_timestamp_ms(const char *ts)
{
	static const char form[] = "DDDDDDDD_DDDDDD_DDD";
	int64_t v[7] = { 0 }, y, m, dd, era, yoe, doy, doe, days;
	static const int width[7] = { 4, 2, 2, 2, 2, 2, 3 };
	const char *p = ts;

	if (ts == NULL || strlen(ts) != sizeof(form) - 1)
		return -1;
	for (size_t i = 0; i < sizeof(form) - 1; i++)
		if (form[i] == '_' ? ts[i] != '_' : (ts[i] < '0' || ts[i] > '9'))
			return -1;
	for (int i = 0; i < 7; i++) {
		for (int k = 0; k < width[i]; k++)
			v[i] = v[i] * 10 + (*p++ - '0');
		if (*p == '_')
			p++;
	}
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -1;
	/* days from civil (Howard Hinnant's algorithm) */
	y = v[0] - (v[1] <= 2);
	m = v[1];
	dd = v[2];
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + dd - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	days = era * 146097 + doe - 719468;
	return ((days * 24 + v[3]) * 60 + v[4]) * 60000 + v[5] * 1000 + v[6];
}
