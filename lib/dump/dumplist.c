/* dumplist.c: enumerating dump directories from metadata.jsonl alone (fast), with optional tensor details from the files' headers. */
#include "mate_private.h"
#include "dump_private.h"
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mate_dump_list {
	int flags;
	int threads;                /* 0: automatic */
	struct mate_arena arena;
	struct mate_dump_info *items;
	size_t n, cap;
	size_t unordered;           /* dumps whose order session.jsonl does not give */
	char unordered_example[600];
	mate_progress_fn progress;  /* mate_dump_list_set_progress() */
	void *progress_arg;
};

mate_dump_list *
mate_dump_list_new(int flags, mate_error *err)
{
	mate_dump_list *l = calloc(1, sizeof(*l));

	if (l == NULL)
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	else
		l->flags = flags;
	return l;
}

void
mate_dump_list_free(mate_dump_list *l)
{
	if (l == NULL)
		return;
	mate_arena_free(&l->arena);
	free(l->items);
	free(l);
}

size_t
mate_dump_list_count(const mate_dump_list *l)
{
	return l->n;
}

const struct mate_dump_info *
mate_dump_list_get(const mate_dump_list *l, size_t i)
{
	return i < l->n ? &l->items[i] : NULL;
}

/* ---- tensor details ------------------------------------------------------- */

struct tensor_acc {
	struct mate_dump_tensor *t;
	size_t n, cap;
};

static struct mate_dump_tensor *
acc_push(struct tensor_acc *acc)
{
	if (mate_array_grow(&acc->t, acc->n, &acc->cap, sizeof(*acc->t), 8) != 0)
		return NULL;
	memset(&acc->t[acc->n], 0, sizeof(acc->t[0]));
	return &acc->t[acc->n++];
}

static int64_t *
dims_copy(struct mate_arena *a, const int64_t *d, int n)
{
	int64_t *p = mate_arena_alloc(a, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));

	if (p != NULL && n > 0)
		memcpy(p, d, (size_t)n * sizeof(int64_t));
	return p;
}

static int
add_tensor(struct tensor_acc *acc, struct mate_arena *a, const char *key, int output,
    mate_dtype dt, const char *dtname, int ndim, const int64_t *shape, const int64_t *stride)
{
	struct mate_dump_tensor *t = acc_push(acc);

	if (t == NULL)
		return MATE_ERR_NOMEM;
	t->key = mate_arena_strndup(a, key, (size_t)-1);
	t->output = output;
	t->dtype = dt;
	t->dtype_name = dtname;
	t->ndim = ndim;
	t->shape = dims_copy(a, shape, ndim);
	t->stride = dims_copy(a, stride, ndim);
	return t->key && t->shape && t->stride ? MATE_OK : MATE_ERR_NOMEM;
}

/* A recorded shape or stride item; -1 when it is not a number an int64_t
 * holds. */
static int64_t
detail_dim(const cJSON *x)
{
	int64_t v;

	return cJSON_IsNumber(x) && mate_double_to_i64(x->valuedouble, &v) ? v : -1;
}

/* The record's tensor_details for the keys listed under keys_name. */
static void
details_from_record(struct tensor_acc *acc, struct mate_arena *a, const cJSON *rec,
    const char *keys_name, int output)
{
	const cJSON *ti = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info");
	const cJSON *td = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(ti, keys_name), *k;
	struct mate_json_index ix;

	mate_json_index_init(&ix, td);
	cJSON_ArrayForEach(k, keys) {
		const cJSON *d = cJSON_IsString(k) ? mate_json_index_get(&ix, k->valuestring) : NULL;
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(d, "dtype");
		const cJSON *sh = cJSON_GetObjectItemCaseSensitive(d, "shape");
		const cJSON *sr = cJSON_GetObjectItemCaseSensitive(d, "stride"), *x;
		int64_t shape[MATE_MAX_DIMS], stride[MATE_MAX_DIMS];
		int n = 0, m = 0;
		mate_dtype dtype;

		if (d == NULL)
			continue;
		cJSON_ArrayForEach(x, sh)
			if (n < MATE_MAX_DIMS)
				shape[n++] = detail_dim(x);
		cJSON_ArrayForEach(x, sr)
			if (m < n)
				stride[m++] = detail_dim(x);
		while (m < n)
			stride[m++] = -1;
		dtype = cJSON_IsString(dt) ? mate_dtype_from_name(dt->valuestring) : MATE_DTYPE_INVALID;
		add_tensor(acc, a, k->valuestring, output, dtype,
		    dtype != MATE_DTYPE_INVALID ? mate_dtype_name(dtype) :
		    mate_arena_strndup(a, cJSON_IsString(dt) ? dt->valuestring : "?", (size_t)-1),
		    n, shape, stride);
	}
	mate_json_index_free(&ix);
}

/* Notes each key the record's tensor_info lists under list that the tensor
 * file rel (read into v) lacks: its calls cannot be compared. */
static size_t
missing_keys(const cJSON *rec, const char *list, const char *rel, const mate_value *v,
    struct mate_notes *notes)
{
	const cJSON *ti = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info"), *k;
	size_t n = 0;
	const char *first = NULL;

	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(ti, list))
		if (!cJSON_IsString(k) || mate_value_lookup(v, k->valuestring) == NULL) {
			if (first == NULL)
				first = cJSON_IsString(k) ? k->valuestring : "?";
			n++;
		}
	if (n == 1)
		mate_notes_add(notes, "%s lacks '%.100s', which the record lists", rel, first);
	else if (n > 1)
		mate_notes_add(notes, "%s lacks %zu tensors the record lists ('%.100s', ...)",
		    rel, n, first);
	return n;
}

/* The tensors of dir/<stem>.{pt,safetensors} from the file's header; the
 * record's tensor_details when the file cannot be read. */
static void
details_from_file(struct tensor_acc *acc, struct mate_arena *a, int dirfd, const char *dir,
    int kind, const cJSON *rec, int expected, struct mate_notes *notes)
{
	static const char *const stems[] = { "inputs", "outputs", "inplace" };
	static const char *const lists[] = { "input_tensor_keys", "output_tensor_keys",
	    "inplace_tensor_keys" };
	const char *stem = stems[kind];
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(rec, "tensor_format");
	const char *format = cJSON_IsString(fmt) ? fmt->valuestring : NULL;
	char rel[64], other[64], path[4096];
	mate_error err;
	mate_value *v = NULL;
	int i;

	/* the file mate-replay reads: the recorded format's first */
	for (i = 0; i < 2; i++) {
		snprintf(rel, sizeof(rel), "%s%s", stem, mate_dump_tensor_ext(format, i));
		if (faccessat(dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			break;
	}
	snprintf(other, sizeof(other), "%s%s", stem, mate_dump_tensor_ext(format, 1));
	if (i == 0 && faccessat(dirfd, other, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		mate_notes_add(notes, "both %s and %s exist; %s, the recorded format, is read",
		    rel, other, rel);
	if (i == 2) {
		if (expected > 0)
			mate_notes_add(notes, "no %s.pt or %s.safetensors", stem, stem);
		details_from_record(acc, a, rec, lists[kind], kind);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	mate_error_clear(&err);
	if ((v = mate_dump_read_tensors(path, 0, &err)) == NULL) {
		size_t pl = strlen(path);
		const char *msg = err.message;

		if (strncmp(msg, path, pl) == 0 && strncmp(msg + pl, ": ", 2) == 0)
			msg += pl + 2;  /* the caller names the dump already */
		mate_notes_add(notes, "%s: %s", rel, msg);
		details_from_record(acc, a, rec, lists[kind], kind);
		return;
	}
	for (size_t j = 0; j < mate_value_len(v); j++) {
		const mate_value *item = mate_value_item(v, j);
		const char *key = mate_value_get_str(mate_value_key(v, j), NULL);
		const mate_tensor *t;

		if (key == NULL || mate_value_kind_of(item) != MATE_V_TENSOR)
			continue;
		t = mate_value_get_tensor(item);
		add_tensor(acc, a, key, kind, t->dtype,
		    mate_dtype_name(t->dtype), t->ndim, t->shape, t->stride);
	}
	if (missing_keys(rec, lists[kind], rel, v, notes) == 0 &&
	    mate_dump_check_tensors(rec, lists[kind], rel, v, &err) != MATE_OK)
		mate_notes_add(notes, "%s", err.message);
	mate_value_free(v);
}

static void
load_details(struct mate_dump_list *l, struct mate_dump_info *info, int dirfd,
    const cJSON *rec, struct mate_notes *notes)
{
	struct tensor_acc acc = { NULL, 0, 0 };

	details_from_file(&acc, &l->arena, dirfd, info->path, 0, rec, info->n_inputs, notes);
	if (info->status == MATE_DUMP_COMPLETED) {
		details_from_file(&acc, &l->arena, dirfd, info->path, 1, rec, info->n_outputs, notes);
		details_from_file(&acc, &l->arena, dirfd, info->path, 2, rec, info->n_inplace, notes);
	}
	if (acc.n > 0) {
		struct mate_dump_tensor *t = mate_arena_alloc(&l->arena, acc.n * sizeof(*t));

		if (t != NULL) {
			memcpy(t, acc.t, acc.n * sizeof(*t));
			info->tensors = t;
			info->n_tensors = acc.n;
		}
	}
	free(acc.t);
}

/* ---- one dump -------------------------------------------------------------- */

static struct mate_dump_info *
push_item(struct mate_dump_list *l)
{
	if (mate_array_grow(&l->items, l->n, &l->cap, sizeof(*l->items), 256) != 0)
		return NULL;
	mate_dump_info_init(&l->items[l->n]);
	return &l->items[l->n++];
}

/* Adds the dump at path (name: its last component), whose metadata.jsonl
 * is `meta` relative to dirfd. A directory without metadata.jsonl counts
 * only when named like a dump. @return 1 added, 0 not a dump, or < 0. */
static int
add_one(struct mate_dump_list *l, int dirfd, const char *meta, const char *path,
    const char *name, mate_error *err)
{
	struct mate_dump_info *info = push_item(l);
	struct mate_notes notes = { "", 0 };
	cJSON *rec = NULL;
	int rc, named;

	if (info == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing dumps");
	info->path = mate_arena_strndup(&l->arena, path, (size_t)-1);
	if (info->path == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing dumps");
	{
		size_t pl = strlen(info->path), nl = strlen(name);

		info->name = pl >= nl && strcmp(info->path + pl - nl, name) == 0 ?
		    info->path + pl - nl : mate_arena_strndup(&l->arena, name, nl);  /* "dir/" */
		if (info->name == NULL)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing dumps");
	}
	named = mate_dump_info_from_name(info, name, &l->arena);
	rc = mate_dump_read_record(dirfd, meta, info, &l->arena,
	    (l->flags & (MATE_DUMP_LIST_DETAILS | MATE_DUMP_LIST_SHAPE)) ? &rec : NULL, &notes);
	if (rc == -ENOENT || rc == -ENOTDIR) {
		if (!named) {
			l->n--;
			return 0;
		}
		mate_notes_add(&notes, "no metadata.jsonl");
	} else if (rc < 0) {
		mate_notes_add(&notes, "cannot read metadata.jsonl: %s", strerror(-rc));
	} else if (rc == 0 && notes.len == 0) {
		mate_notes_add(&notes, "no readable record");
	}
	if ((l->flags & MATE_DUMP_LIST_DETAILS) && rec != NULL) {
		int fd = strcmp(meta, "metadata.jsonl") == 0 ? dup(dirfd) :
		    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0) {
			load_details(l, info, fd, rec, &notes);
			close(fd);
		}
	}
	if ((l->flags & MATE_DUMP_LIST_SHAPE) && rec != NULL) {
		char key[17], *shape = mate_profile_shape_from_record(rec, key);

		if (shape != NULL) {
			info->shape = mate_arena_strndup(&l->arena, shape, strlen(shape));
			info->shape_key = mate_arena_strndup(&l->arena, key, 16);
			free(shape);
		}
	}
	cJSON_Delete(rec);
	if (notes.len > 0)
		info->problem = mate_arena_strndup(&l->arena, notes.text, notes.len);
	return 1;
}

static int
is_dir_entry(int dirfd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type == DT_DIR)
		return 1;
	if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
		return 0;
	return fstatat(dirfd, de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* The subdirectories of a root, read first, then scanned by threads. */
struct scan {
	struct mate_dump_list *l;
	int rootfd;
	const char *path;
	size_t plen;
	char **names;
	size_t nnames, next;
	size_t done;                /* names scanned (added atomically) */
	pthread_mutex_t lock;
};

#define SCAN_CHUNK 64

/* Scans names into part (a list of its own); MATE_OK or a negative status. */
static int
scan_names(struct scan *sc, struct mate_dump_list *part, int caller, mate_error *err)
{
	for (;;) {
		size_t from, to, done;

		pthread_mutex_lock(&sc->lock);
		from = sc->next;
		sc->next = from + SCAN_CHUNK < sc->nnames ? from + SCAN_CHUNK : sc->nnames;
		to = sc->next;
		pthread_mutex_unlock(&sc->lock);
		if (from >= to)
			return MATE_OK;
		for (size_t i = from; i < to; i++) {
			static const char meta_name[] = "/metadata.jsonl";
			char meta[512], sub[4096];
			size_t nl = strlen(sc->names[i]);
			int rc;

			/* "NAME/metadata.jsonl" and "ROOT/NAME", without printf's parsing */
			if (nl + sizeof(meta_name) > sizeof(meta) || sc->plen + 1 + nl + 1 > sizeof(sub))
				continue;
			memcpy(meta, sc->names[i], nl);
			memcpy(meta + nl, meta_name, sizeof(meta_name));
			memcpy(sub, sc->path, sc->plen);
			sub[sc->plen] = '/';
			memcpy(sub + sc->plen + 1, sc->names[i], nl + 1);
			if ((rc = add_one(part, sc->rootfd, meta, sub, sc->names[i], err)) < 0)
				return rc;
		}
		done = __atomic_add_fetch(&sc->done, to - from, __ATOMIC_RELAXED);
		if (caller && sc->l->progress != NULL)
			sc->l->progress(sc->l->progress_arg, done, sc->nnames);
	}
}

struct scan_thread {
	pthread_t th;
	struct scan *sc;
	struct mate_dump_list part;
	mate_error err;
	int rc;
	int caller;       /* the thread of mate_dump_list_add(): it reports progress */
};

static void *
scan_thread(void *arg)
{
	struct scan_thread *t = arg;

	t->rc = scan_names(t->sc, &t->part, t->caller, &t->err);
	return NULL;
}

/* Moves part's dumps and strings into l. */
static int
merge(struct mate_dump_list *l, struct mate_dump_list *part)
{
	struct mate_arena_chunk **tail = &part->arena.head;

	if (l->cap - l->n < part->n) {
		size_t cap = l->n + part->n + 256;
		struct mate_dump_info *p = realloc(l->items, cap * sizeof(*p));

		if (p == NULL)
			return MATE_ERR_NOMEM;
		l->items = p;
		l->cap = cap;
	}
	if (part->n > 0)
		memcpy(l->items + l->n, part->items, part->n * sizeof(*part->items));
	l->n += part->n;
	part->n = 0;
	while (*tail != NULL)
		tail = mate_arena_chunk_next(*tail);
	*tail = l->arena.head;
	l->arena.head = part->arena.head;
	part->arena.head = NULL;
	return MATE_OK;
}

/* Threads for n directories: as set, else one per 2048 up to the CPUs (16 at most). */
static int
scan_threads(const struct mate_dump_list *l, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t t = n / 2048 + 1;

	if (l->threads > 0)
		return (size_t)l->threads < n ? l->threads : (n > 0 ? (int)n : 1);
	if (cpus < 1)
		cpus = 1;
	if (t > (size_t)cpus)
		t = (size_t)cpus;
	return t > 16 ? 16 : (int)t;
}

void
mate_dump_list_set_progress(mate_dump_list *l, mate_progress_fn fn, void *arg)
{
	l->progress = fn;
	l->progress_arg = arg;
}

void
mate_dump_list_set_threads(mate_dump_list *l, int threads)
{
	l->threads = threads > 256 ? 256 : threads;
}

/* Scans sc's names on threads; returns the dumps added or a negative status. */
static int
scan_all(struct scan *sc, mate_error *err)
{
	int nt = scan_threads(sc->l, sc->nnames), started = 0, rc = MATE_OK;
	struct scan_thread *ts = calloc((size_t)nt, sizeof(*ts));
	size_t before = sc->l->n;

	if (ts == NULL)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing dumps");
	for (int i = 0; i < nt; i++) {
		ts[i].sc = sc;
		ts[i].part.flags = sc->l->flags;
	}
	/* this thread scans too, as part 0 */
	ts[0].caller = 1;
	for (int i = 1; i < nt; i++, started++)
		if (pthread_create(&ts[i].th, NULL, scan_thread, &ts[i]) != 0)
			break;
	scan_thread(&ts[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(ts[i].th, NULL);
	for (int i = 0; i <= started; i++) {
		if (rc == MATE_OK && ts[i].rc != MATE_OK) {
			rc = ts[i].rc;
			if (err != NULL)
				*err = ts[i].err;
		}
		if (merge(sc->l, &ts[i].part) != MATE_OK && rc == MATE_OK)
			rc = mate_set_error(err, MATE_ERR_NOMEM, "out of memory listing dumps");
		mate_arena_free(&ts[i].part.arena);
		free(ts[i].part.items);
	}
	free(ts);
	return rc != MATE_OK ? rc : (int)(sc->l->n - before);
}

/* The names of root's subdirectories (not starting with '.'), in a. */
static int
read_names(DIR *dir, struct mate_arena *a, char ***names, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;

	while ((errno = 0, de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' || !is_dir_entry(dirfd(dir), de))
			continue;
		if (mate_array_grow(names, *n, &cap, sizeof(**names), 1024) != 0)
			return ENOMEM;
		if (((*names)[*n] = mate_arena_strndup(a, de->d_name, (size_t)-1)) == NULL)
			return ENOMEM;
		(*n)++;
	}
	return errno;
}

static int
add_root(struct mate_dump_list *l, int fd, const char *path, mate_error *err)
{
	DIR *dir = fdopendir(fd);
	struct mate_arena names_arena = { NULL };
	struct scan sc;
	int rc;

	if (dir == NULL) {
		close(fd);
		return mate_set_errno(err, errno, "cannot read directory", path);
	}
	memset(&sc, 0, sizeof(sc));
	sc.l = l;
	sc.rootfd = dirfd(dir);
	sc.path = path;
	sc.plen = strlen(path);
	while (sc.plen > 1 && path[sc.plen - 1] == '/')
		sc.plen--;
	if ((rc = read_names(dir, &names_arena, &sc.names, &sc.nnames)) != 0) {
		rc = mate_set_errno(err, rc, "cannot read directory", path);
	} else {
		pthread_mutex_init(&sc.lock, NULL);
		rc = scan_all(&sc, err);
		pthread_mutex_destroy(&sc.lock);
	}
	free(sc.names);
	mate_arena_free(&names_arena);
	closedir(dir);
	return rc;
}

int
mate_dump_list_add(mate_dump_list *l, const char *path, mate_error *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
	struct mate_arena tmp = { NULL };
	const char *name;

	if (fd < 0)
		return mate_set_errno(err, errno, "cannot open directory", path);
	name = mate_arena_basename(&tmp, path);
	if (name == NULL) {
		close(fd);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	if (faccessat(fd, "metadata.jsonl", F_OK, 0) == 0 || mate_dump_name_matches(name)) {
		rc = add_one(l, fd, "metadata.jsonl", path, name, err);
		close(fd);
	} else {
		rc = add_root(l, fd, path, err);
	}
	mate_arena_free(&tmp);
	return rc;
}

/* ---- order ----------------------------------------------------------------- */

static int
cmp_info(const void *pa, const void *pb)
{
	const struct mate_dump_info *a = pa, *b = pb;
	int c = strcmp(a->timestamp, b->timestamp);

	if (c != 0)
		return c;
	if (a->process_id != b->process_id)
		return a->process_id < b->process_id ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* A sort entry: the timestamp "YYYYMMDD_HHMMSS_mmm" as a number when it has
 * that form (has_ts), else compared as a string. */
struct order {
	uint64_t ts;
	int has_ts;
	const struct mate_dump_info *d;
};

static int
ts_number(const char *s, uint64_t *out)
{
	static const char form[] = "DDDDDDDD_DDDDDD_DDD";
	uint64_t v = 0;

	for (size_t i = 0; i < sizeof(form) - 1; i++) {
		if (form[i] == '_') {
			if (s[i] != '_')
				return 0;
		} else if (s[i] < '0' || s[i] > '9') {
			return 0;
		} else {
			v = v * 10 + (uint64_t)(s[i] - '0');
		}
	}
	*out = v;
	return s[sizeof(form) - 1] == '\0';
}

static int
cmp_order(const void *pa, const void *pb)
{
	const struct order *a = pa, *b = pb;
	int c;

	if (a->has_ts && b->has_ts) {
		if (a->ts != b->ts)
			return a->ts < b->ts ? -1 : 1;
	} else if ((c = strcmp(a->d->timestamp, b->d->timestamp)) != 0) {
		return c;
	}
	if (a->d->process_id != b->d->process_id)
		return a->d->process_id < b->d->process_id ? -1 : 1;
	return strcmp(a->d->path, b->d->path);
}

void
mate_dump_list_sort(mate_dump_list *l)
{
	struct order *o;
	struct mate_dump_info *items;

	if (l->n < 2)
		return;
	o = malloc(l->n * sizeof(*o));
	items = malloc(l->n * sizeof(*items));
	if (o == NULL || items == NULL) {  /* sort in place, more slowly */
		free(o);
		free(items);
		qsort(l->items, l->n, sizeof(l->items[0]), cmp_info);
		l->unordered = mate_dump_session_order(l->items, l->n, l->unordered_example,
		    sizeof(l->unordered_example));
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		o[i].d = &l->items[i];
		o[i].has_ts = ts_number(l->items[i].timestamp, &o[i].ts);
	}
	qsort(o, l->n, sizeof(*o), cmp_order);
	for (size_t i = 0; i < l->n; i++)
		items[i] = *o[i].d;
	free(o);
	free(l->items);
	l->items = items;
	l->cap = l->n;
	l->unordered = mate_dump_session_order(l->items, l->n, l->unordered_example,
	    sizeof(l->unordered_example));
}

size_t
mate_dump_list_unordered(const mate_dump_list *l, const char **example)
{
	if (example != NULL)
		*example = l->unordered ? l->unordered_example : NULL;
	return l->unordered;
}
