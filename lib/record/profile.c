/* profile.c: MATE_PROFILE: one entry per distinct call shape (function, module, each input
 * tensor's dtype, shape, strides and device, each other argument by value; never tensor
 * contents), counting calls and their total and longest time, written at exit (and on
 * SIGTERM and SIGINT when the program left them at their default) as JSONL sorted by total
 * time, atomically. The same shape read back from a dump's record
 * (mate_profile_shape_from_record) gives the same object and key, so a profile and
 * `mate-list-dumps --unique` can be joined. MATE_BENCH_LOG (benchlog.c) gets a line for each
 * shape the table sees first, with or without MATE_PROFILE. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "benchlog.h"
#include "dump_private.h"
#include "profile.h"
#include "recorder_private.h"

#define PROFILE_MAX_ENTRIES 100000  /* distinct shapes kept; later ones are counted apart */

struct entry {
	uint64_t hash;
	char *text;             /* the call's shape as the recorder writes it (the lookup key) */
	size_t len;
	char *canon;            /* the canonical JSON object, without its closing brace */
	char key[17];
	int benched;            /* MATE_BENCH_LOG has its line */
	uint64_t calls, failed, total_ns, max_ns;
};

static struct {
	pthread_mutex_t lock;
	char *tmpl;             /* MATE_PROFILE as configured; NULL: off */
	struct entry **slots;   /* open addressing, capacity a power of two */
	size_t cap, n;
	struct entry **order;   /* the entries in insertion order (sorted when written) */
	uint64_t dropped;       /* calls of shapes beyond PROFILE_MAX_ENTRIES */
	int child;              /* a forked child of the process that configured it */
	int hooks;              /* atexit and the signal handlers are in place */
	const char *holder;     /* the thread in mate_rec_profile_add() (its &me), or NULL */
	int deferred;           /* a signal that came to that thread there, to die of after */
} prof = { .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread char me;    /* a thread's identity: the address of its copy */

int mate_rec_profile_on_ MATE_HIDDEN;

void
mate_profile_text_key(const char *text, char key[17])
{
	snprintf(key, 17, "%016" PRIx64, mate_fnv1a64(text, strlen(text)));
}

/* The table's hash of a lookup text: eight bytes a step (the key is fnv1a of the canonical
 * text, computed once per shape). */
static uint64_t
text_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 32);
}

/* ---- the call's shape, as its arguments arrive ---------------------------------------------
 * The lookup text: {"c":["NAME","MODULE",[ROLE,"KEY",KIND,VALUE]...]} with ROLE 0 positional or 1
 * keyword, KEY the dump's key (arg_<i>, kwarg_<name>, and __<i>, __value_<i> inside lists
 * and dicts), KIND 0 for a tensor ({"shape", "dtype", "stride", "device"}) or 1 for any
 * other value (as input_metadata holds it). The canonical object is made from it once per
 * distinct shape. */

#define POOL 8  /* level-1 calls in progress on one thread without an allocation */

static __thread mate_call pool[POOL];
static __thread unsigned pool_used;
static __thread int pool_keyed;        /* the destructor below frees this thread's buffers */
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static int pool_key_ok;

/* At a thread's exit: the text buffers its pooled calls kept (not through mate_buf_free,
 * whose per-thread cache may be gone already). */
static void
pool_destroy(void *arg)
{
	mate_call *p = arg;

	for (unsigned i = 0; i < POOL; i++) {
		free(p[i].ptext.p);
		mate_buf_init(&p[i].ptext);
	}
}

static void
pool_make_key(void)
{
	pool_key_ok = pthread_key_create(&pool_key, pool_destroy) == 0;
}

int
mate_rec_profile_begin(mate_call *c, const char *name, const char *module)
{
	struct mate_buf *b = &c->ptext;

	b->len = 0;
	b->oom = 0;
	mate_buf_puts(b, "{\"c\":[");
	mate_buf_jsonstr(b, name, strlen(name));
	mate_buf_putc(b, ',');
	if (module != NULL)
		mate_buf_jsonstr(b, module, strlen(module));
	else
		mate_buf_puts(b, "\"<unknown>\"");
	c->ppos = 0;
	c->profile = !b->oom;
	return b->oom ? -1 : 0;
}

mate_call *
mate_rec_profile_call(const char *name, const char *module)
{
	mate_call *c = NULL;
	struct mate_buf keep;

	if (!pool_keyed) {
		pthread_once(&pool_once, pool_make_key);
		pool_keyed = pool_key_ok && pthread_setspecific(pool_key, pool) == 0 ? 1 : -1;
	}
	for (unsigned i = 0; i < POOL; i++)
		if (!(pool_used & (1u << i))) {
			pool_used |= 1u << i;
			c = &pool[i];
			break;
		}
	if (c == NULL && (c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	keep = c->ptext;  /* a pooled call keeps its buffer */
	memset(c, 0, sizeof(*c));
	c->ptext = keep;
	c->level = 1;
	c->state = CALL_BEGUN;
	c->pooled = c >= pool && c < pool + POOL ? 1 : 2;
	if (mate_rec_profile_begin(c, name, module) != 0) {
		mate_rec_profile_release(c);
		return NULL;
	}
	return c;
}

void
mate_rec_profile_release(mate_call *c)
{
	if (c->pooled == 1)
		pool_used &= ~(1u << (c - pool));
	else {
		mate_buf_free(&c->ptext);
		free(c);
	}
}

/* Starts an input argument's entry: NULL for what is not an input (defaults, results). */
static struct mate_buf *
arg_begin(mate_call *c, int flags, const char *name, int kind, int64_t *pos)
{
	struct mate_buf *b = &c->ptext;
	int role = flags & 0x0f;
	char key[300];

	if (role == MATE_ARG) {
		*pos = c->ppos++;
		mate_rec_key(key, sizeof(key), "arg_", NULL, *pos);
	} else if (role == MATE_KWARG && name != NULL)
		mate_rec_key(key, sizeof(key), "kwarg_", name, -1);
	else
		return NULL;
	mate_buf_puts(b, role == MATE_ARG ? ",[0," : ",[1,");
	mate_buf_jsonstr(b, key, strlen(key));
	mate_buf_puts(b, kind ? ",1," : ",0,");
	return b;
}

static void
put_tensor(struct mate_buf *b, const mate_tensor *t)
{
	mate_buf_putc(b, '{');
	mate_rec_tensor_fields(b, t, 1);
	mate_buf_puts(b, "}]");
}

void
mate_rec_profile_tensor(mate_call *c, int flags, const char *name, const mate_tensor *t)
{
	struct mate_buf *b;
	int64_t pos;

	if ((b = arg_begin(c, flags, name, 0, &pos)) != NULL)
		put_tensor(b, t);
}

/* The tensors nested in v under key (key__<i>, key__value_<i>), as collect() names them. */
static void
nested_tensors(struct mate_buf *b, int role, const mate_value *v, const char *key, int depth)
{
	mate_value_kind k = mate_value_kind_of(v);
	char sub[512];

	if (k == MATE_V_TENSOR) {
		mate_buf_puts(b, role == MATE_ARG ? ",[0," : ",[1,");
		mate_buf_jsonstr(b, key, strlen(key));
		mate_buf_puts(b, ",0,");
		put_tensor(b, mate_value_get_tensor(v));
		return;
	}
	if ((k != MATE_V_LIST && k != MATE_V_TUPLE && k != MATE_V_DICT) || depth >= 8)
		return;
	for (size_t i = 0; i < mate_value_len(v); i++) {
		mate_rec_key(sub, sizeof(sub), key, k == MATE_V_DICT ? "__value_" : "__", (int64_t)i);
		nested_tensors(b, role, mate_value_item(v, i), sub, depth + 1);
	}
}

void
mate_rec_profile_value(mate_call *c, int flags, const char *name, const mate_value *v)
{
	struct mate_buf *b;
	char key[300];
	int64_t pos;

	if (v == NULL) {
		mate_rec_profile_none(c, flags, name);
		return;
	}
	if (mate_value_kind_of(v) == MATE_V_TENSOR) {
		mate_rec_profile_tensor(c, flags, name, mate_value_get_tensor(v));
		return;
	}
	if ((b = arg_begin(c, flags, name, 1, &pos)) == NULL)
		return;
	mate_rec_json_value(b, c, v, 0);
	mate_buf_putc(b, ']');
	if ((flags & 0x0f) == MATE_ARG)
		mate_rec_key(key, sizeof(key), "arg_", NULL, pos);
	else
		mate_rec_key(key, sizeof(key), "kwarg_", name, -1);
	nested_tensors(b, flags & 0x0f, v, key, 0);
}

/* Scalars: the entry, then the value as json.dumps writes it. */
#define SCALAR(c, flags, name, put) \
	do { \
		int64_t pos_; \
		struct mate_buf *b_ = arg_begin(c, flags, name, 1, &pos_); \
		if (b_ != NULL) { \
			put; \
			mate_buf_putc(b_, ']'); \
		} \
	} while (0)

void
mate_rec_profile_int(mate_call *c, int flags, const char *name, int64_t v)
{
	SCALAR(c, flags, name, mate_buf_int(b_, v));
}

void
mate_rec_profile_float(mate_call *c, int flags, const char *name, double v)
{
	SCALAR(c, flags, name, mate_buf_jsonfloat(b_, v));
}

void
mate_rec_profile_bool(mate_call *c, int flags, const char *name, int v)
{
	SCALAR(c, flags, name, mate_buf_puts(b_, v ? "true" : "false"));
}

void
mate_rec_profile_str(mate_call *c, int flags, const char *name, const char *s)
{
	SCALAR(c, flags, name, s != NULL ? mate_buf_jsonstr(b_, s, strlen(s)) :
	    mate_buf_puts(b_, "null"));
}

void
mate_rec_profile_none(mate_call *c, int flags, const char *name)
{
	SCALAR(c, flags, name, mate_buf_puts(b_, "null"));
}

void
mate_rec_profile_dtype(mate_call *c, int flags, const char *name, mate_dtype dt)
{
	SCALAR(c, flags, name, (mate_buf_puts(b_, "{\"type\": \"torch.dtype\", \"value\": \""),
	    mate_buf_dtype(b_, dt), mate_buf_puts(b_, "\"}")));
}

void
mate_rec_profile_enum(mate_call *c, int flags, const char *name, const char *enum_name,
    int64_t v)
{
	const char *n = enum_name != NULL ? enum_name : "Enum.?";

	SCALAR(c, flags, name, (mate_buf_puts(b_, "{\"type\": \"enum\", \"name\": "),
	    mate_buf_jsonstr(b_, n, strlen(n)), mate_buf_puts(b_, ", \"value\": "),
	    mate_buf_int(b_, v), mate_buf_putc(b_, '}')));
}

/* The object receiver is positional argument 0 and not part of the shape: which object
 * made the call does not change the problem. */
void
mate_rec_profile_self(mate_call *c)
{
	c->ppos++;
}

/* ---- canonical form, shared with the dump side -------------------------------------------- */

/* Drops what is not the call's shape from the tensors nested in other arguments. */
static void
strip(cJSON *j, int depth)
{
	cJSON *it;

	if (depth > 64)
		return;
	if (cJSON_IsObject(j)) {
		cJSON_DeleteItemFromObjectCaseSensitive(j, "tensor_key");
		cJSON_DeleteItemFromObjectCaseSensitive(j, "requires_grad");
		cJSON_DeleteItemFromObjectCaseSensitive(j, "is_contiguous");
	}
	cJSON_ArrayForEach(it, j)
		strip(it, depth + 1);
}

/* The canonical text of a shape object (consumed), and its key: 16 hex digits of the FNV-1a
 * hash of that text. NULL when out of memory. */
static char *
canonical(cJSON *shape, char key[17])
{
	char *text;

	if (shape == NULL)
		return NULL;
	strip(cJSON_GetObjectItemCaseSensitive(shape, "scalars"), 0);
	text = cJSON_PrintUnformatted(shape);
	cJSON_Delete(shape);
	if (text != NULL)
		mate_profile_text_key(text, key);
	return text;
}

char *
mate_profile_shape_from_record(const cJSON *rec, char key[17])
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(rec, "function_name");
	const cJSON *mod = cJSON_GetObjectItemCaseSensitive(rec, "module");
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(rec, "tensor_info");
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(info, "input_tensor_keys");
	const cJSON *details = cJSON_GetObjectItemCaseSensitive(rec, "tensor_details");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "input_metadata"), *self;
	static const char *const fields[] = { "shape", "dtype", "stride", "device" };
	cJSON *shape = cJSON_CreateObject(), *tensors, *scalars, *k;
	struct mate_json_index ix;

	if (shape == NULL || !cJSON_IsString(fn))
		goto fail;
	cJSON_AddStringToObject(shape, "function", fn->valuestring);
	cJSON_AddStringToObject(shape, "module", cJSON_IsString(mod) ? mod->valuestring :
	    "<unknown>");
	tensors = cJSON_AddObjectToObject(shape, "tensors");
	mate_json_index_init(&ix, details);
	cJSON_ArrayForEach(k, keys) {
		const cJSON *d = cJSON_IsString(k) ? mate_json_index_get(&ix, k->valuestring) : NULL;
		cJSON *t;

		if (d == NULL || (t = cJSON_AddObjectToObject(tensors, k->valuestring)) == NULL)
			continue;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			const cJSON *f = cJSON_GetObjectItemCaseSensitive(d, fields[i]);
			if (f != NULL)
				cJSON_AddItemToObject(t, fields[i], cJSON_Duplicate(f, 1));
		}
	}
	mate_json_index_free(&ix);
	scalars = cJSON_IsObject(meta) ? cJSON_Duplicate(meta, 1) : cJSON_CreateObject();
	if (scalars == NULL || !cJSON_AddItemToObject(shape, "scalars", scalars))
		goto fail;
	/* a method's object receiver is not part of the call's shape (mate_rec_profile_self) */
	self = cJSON_GetObjectItemCaseSensitive(rec, "self_id");
	if (self != NULL && !cJSON_IsNull(self))
		cJSON_DeleteItemFromObjectCaseSensitive(scalars, "arg_0");
	return canonical(shape, key);
fail:
	cJSON_Delete(shape);
	return NULL;
}

/* ---- the table ----------------------------------------------------------------------------- */

static struct entry *
find(uint64_t h, const char *text, size_t len, size_t *slot)
{
	size_t i = (size_t)h & (prof.cap - 1);

	for (;; i = (i + 1) & (prof.cap - 1)) {
		struct entry *e = prof.slots[i];
		if (e == NULL) {
			*slot = i;
			return NULL;
		}
		if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0)
			return e;
	}
}

static int
grow(void)
{
	size_t cap = prof.cap ? prof.cap * 2 : 256, slot;
	struct entry **slots = calloc(cap, sizeof(*slots)), **order;
	struct entry **old = prof.slots;
	size_t oldcap = prof.cap;

	order = realloc(prof.order, cap * sizeof(*order));
	if (slots == NULL || order == NULL) {
		free(slots);
		if (order != NULL)
			prof.order = order;
		return -1;
	}
	prof.order = order;
	prof.slots = slots;
	prof.cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i] != NULL) {
			find(old[i]->hash, old[i]->text, old[i]->len, &slot);
			slots[slot] = old[i];
		}
	free(old);
	return 0;
}

/* The canonical object of a lookup text (see above). */
static char *
canonical_of_text(const char *text, size_t len, char key[17])
{
	cJSON *rec = mate_record_parse(text, len), *shape = cJSON_CreateObject(), *t, *sc, *it;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(rec, "c");
	const cJSON *fn = cJSON_GetArrayItem(arr, 0), *mod = cJSON_GetArrayItem(arr, 1);

	if (arr == NULL || shape == NULL || !cJSON_IsString(fn) || !cJSON_IsString(mod))
		goto fail;
	cJSON_AddStringToObject(shape, "function", fn->valuestring);
	cJSON_AddStringToObject(shape, "module", mod->valuestring);
	t = cJSON_AddObjectToObject(shape, "tensors");
	sc = cJSON_AddObjectToObject(shape, "scalars");
	if (t == NULL || sc == NULL)
		goto fail;
	/* positional arguments first, then keywords, as the dump lists them */
	for (int role = 0; role < 2; role++)
		cJSON_ArrayForEach(it, arr) {
			const cJSON *r = cJSON_GetArrayItem(it, 0), *k = cJSON_GetArrayItem(it, 1);
			const cJSON *kind = cJSON_GetArrayItem(it, 2), *v = cJSON_GetArrayItem(it, 3);

			if (!cJSON_IsArray(it) || !cJSON_IsNumber(r) || r->valueint != role ||
			    !cJSON_IsString(k) || !cJSON_IsNumber(kind) || v == NULL)
				continue;
			cJSON_DeleteItemFromObjectCaseSensitive(kind->valueint ? sc : t, k->valuestring);
			cJSON_AddItemToObject(kind->valueint ? sc : t, k->valuestring,
			    cJSON_Duplicate(v, 1));
		}
	cJSON_Delete(rec);
	return canonical(shape, key);
fail:
	cJSON_Delete(rec);
	cJSON_Delete(shape);
	return NULL;
}

static struct entry *
new_entry(uint64_t h, const char *text, size_t len)
{
	struct entry *e = calloc(1, sizeof(*e));
	char *canon;

	if (e == NULL || (e->text = malloc(len + 1)) == NULL) {
		free(e);
		return NULL;
	}
	memcpy(e->text, text, len);
	e->text[len] = '\0';
	e->len = len;
	e->hash = h;
	canon = canonical_of_text(e->text, len, e->key);
	if (canon == NULL) {
		free(e->text);
		free(e);
		return NULL;
	}
	e->canon = canon;
	e->canon[strlen(e->canon) - 1] = '\0';  /* the entry's fields follow */
	return e;
}

static void die_deferred(void);

void
mate_rec_profile_add(mate_call *c, uint64_t ns, int failed)
{
	struct mate_buf *bp = &c->ptext;
	struct entry *e;
	size_t slot;
	uint64_t h;

	mate_buf_puts(bp, "]}");
	if (bp->oom)
		return;
	h = text_hash(bp->p, bp->len);
	pthread_mutex_lock(&prof.lock);
	__atomic_store_n(&prof.holder, &me, __ATOMIC_RELAXED);
	if (prof.tmpl == NULL && !mate_rec_benchlog_on())
		goto out;
	if (prof.cap == 0 && grow() != 0)
		goto out;
	if ((e = find(h, bp->p, bp->len, &slot)) == NULL) {
		if (prof.n >= PROFILE_MAX_ENTRIES) {
			if (prof.dropped++ == 0)
				mate_warn("MATE_PROFILE keeps %d distinct calls; calls of further "
				    "shapes are left out", PROFILE_MAX_ENTRIES);
			goto out;
		}
		if ((prof.n + 1) * 10 > prof.cap * 7) {
			if (grow() != 0)
				goto out;
			find(h, bp->p, bp->len, &slot);
		}
		if ((e = new_entry(h, bp->p, bp->len)) == NULL)
			goto out;
		prof.slots[slot] = e;
		prof.order[prof.n++] = e;
	}
	if (!e->benched && mate_rec_benchlog_on()) {
		e->benched = 1;
		mate_rec_benchlog_put(e->canon, strlen(e->canon));
	}
	e->calls++;
	e->failed += failed != 0;
	e->total_ns += ns;
	if (ns > e->max_ns)
		e->max_ns = ns;
out:
	__atomic_store_n(&prof.holder, NULL, __ATOMIC_RELAXED);
	if (__atomic_load_n(&prof.deferred, __ATOMIC_RELAXED) != 0)
		die_deferred();
	pthread_mutex_unlock(&prof.lock);
}

/* ---- writing ------------------------------------------------------------------------------- */

/* Sorts by total time, longest first: a heap whose root comes last, each root moved to the
 * end (heapsort: no allocation, so that a signal handler can sort). */
static int
before(const struct entry *a, const struct entry *b)
{
	return a->total_ns > b->total_ns || (a->total_ns == b->total_ns && a->calls > b->calls);
}

static void
sift(struct entry **v, size_t i, size_t n)
{
	for (;;) {
		size_t m = i, l = 2 * i + 1, r = l + 1;
		struct entry *t;
		if (l < n && before(v[m], v[l]))
			m = l;
		if (r < n && before(v[m], v[r]))
			m = r;
		if (m == i)
			return;
		t = v[i];
		v[i] = v[m];
		v[m] = t;
		i = m;
	}
}

static void
sort_entries(struct entry **v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t k = n; k-- > 1;) {
		struct entry *t = v[0];
		v[0] = v[k];
		v[k] = t;
		sift(v, 0, k);
	}
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w == 0 || errno != EINTR)
			return -1;
	}
	return 0;
}

/* The path: %i is the pid; a forked child of a path without %i writes PATH.PID, so that no
 * process replaces another's table. */
static void
profile_path(char *out, size_t cap)
{
	size_t n = 0;
	int has_pid = 0;

	for (const char *p = prof.tmpl; *p && n + 24 < cap; p++) {
		if (p[0] == '%' && p[1] == 'i') {
			n += (size_t)snprintf(out + n, cap - n, "%ld", (long)getpid());
			has_pid = 1;
			p++;
		} else
			out[n++] = *p;
	}
	out[n] = '\0';
	if (prof.child && !has_pid)
		snprintf(out + n, cap - n, ".%ld", (long)getpid());
}

/* Writes the table (the lock held), to a temporary file renamed into place. */
static void
write_table(int quiet)
{
	char path[4096], tmp[4200], line[1024];
	int fd;

	if (prof.tmpl == NULL)
		return;
	profile_path(path, sizeof(path));
	/* a new file of an unguessable name: nothing planted beside path (a FIFO that would
	 * hold the host at exit, a co-user's file renamed into place) is ever opened */
	if ((fd = mate_tmp_create(tmp, path)) < 0) {
		if (!quiet)
			mate_warn("cannot write the profile %s: %s", tmp, strerror(-fd));
		return;
	}
	sort_entries(prof.order, prof.n);
	for (size_t i = 0; i < prof.n; i++) {
		const struct entry *e = prof.order[i];
		int n;

		if (e->calls == 0)  /* a forked child's copy of its parent's shapes */
			continue;
		n = snprintf(line, sizeof(line), ",\"key\":\"%s\",\"calls\":%" PRIu64
		    ",\"failed\":%" PRIu64 ",\"total_s\":%.9f,\"max_s\":%.9f,\"mean_s\":%.9f}\n",
		    e->key, e->calls, e->failed, (double)e->total_ns / 1e9, (double)e->max_ns / 1e9,
		    e->calls ? (double)e->total_ns / 1e9 / (double)e->calls : 0.0);
		if (write_all(fd, e->canon, strlen(e->canon)) != 0 ||
		    write_all(fd, line, (size_t)n) != 0)
			goto failed;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		fd = -1;
		goto failed;
	}
	return;
failed:
	if (!quiet)
		mate_warn("cannot write the profile %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
}

static void
at_exit(void)
{
	pthread_mutex_lock(&prof.lock);
	write_table(0);
	pthread_mutex_unlock(&prof.lock);
}

static struct sigaction old_term, old_int;

/* SIGTERM or SIGINT at their default: write the table, then die of the signal as the
 * program would. The lock stays held until the process dies, so that no other thread adds
 * a call, or a bench log line, that the table does not have (the signal raised here is
 * delivered as the handler returns; CI saw the bench log one line longer than the
 * profile). Another thread holding the lock lets go of it within microseconds; a signal
 * that comes to the thread that holds it in mate_rec_profile_add() is put off until it
 * lets go (die_deferred()); one that comes to a thread holding it elsewhere (exit, set-up)
 * gives up after 200 ms: a deadlock would keep the program alive. */
static void
on_signal(int sig)
{
	if (__atomic_load_n(&prof.holder, __ATOMIC_RELAXED) == &me) {
		__atomic_store_n(&prof.deferred, sig, __ATOMIC_RELAXED);
		return;
	}
	for (int tries = 0; tries < 200; tries++) {
		struct timespec ms = { 0, 1000000 };
		if (pthread_mutex_trylock(&prof.lock) == 0) {
			write_table(1);
			break;
		}
		nanosleep(&ms, NULL);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The signal put off by on_signal(), the lock held: the table, then the signal. */
static void
die_deferred(void)
{
	int sig = __atomic_load_n(&prof.deferred, __ATOMIC_RELAXED);

	write_table(1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
hook_signal(int sig, struct sigaction *old)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, old) != 0 || old->sa_handler != SIG_DFL)
		return;  /* the program handles it, or ignores it: leave it alone */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	sigaction(sig, &sa, NULL);
}

static void
zero_counts(void)
{
	for (size_t i = 0; i < prof.n; i++) {
		prof.order[i]->calls = prof.order[i]->failed = 0;
		prof.order[i]->total_ns = prof.order[i]->max_ns = 0;
	}
}

static void
free_entries(void)
{
	for (size_t i = 0; i < prof.n; i++) {
		free(prof.order[i]->text);
		free(prof.order[i]->canon);
		free(prof.order[i]);
	}
	if (prof.slots != NULL)
		memset(prof.slots, 0, prof.cap * sizeof(*prof.slots));
	prof.n = 0;
}

void
mate_rec_profile_configure(const char *tmpl, const char *bench_log)
{
	char *copy = tmpl != NULL && tmpl[0] != '\0' ? strdup(tmpl) : NULL;
	int changed, bench_changed;

	pthread_mutex_lock(&prof.lock);
	changed = copy == NULL ? prof.tmpl != NULL : prof.tmpl == NULL || strcmp(copy, prof.tmpl) != 0;
	if (changed) {
		write_table(0);  /* a new destination: the old one gets what it has */
		free(prof.tmpl);
		prof.tmpl = copy;
	} else
		free(copy);
	bench_changed = mate_rec_benchlog_set(bench_log);
	/* the shapes stay while the bench log keeps its file (it has their lines); the counts
	 * start again with a new profile */
	if ((changed && bench_changed) || (changed && !mate_rec_benchlog_on()) ||
	    (prof.tmpl == NULL && !mate_rec_benchlog_on()))
		free_entries();
	else if (changed)
		zero_counts();
	if (bench_changed)
		for (size_t i = 0; i < prof.n; i++)
			prof.order[i]->benched = 0;
	if (prof.tmpl != NULL && !prof.hooks) {
		prof.hooks = 1;
		atexit(at_exit);
		hook_signal(SIGTERM, &old_term);
		hook_signal(SIGINT, &old_int);
	}
	__atomic_store_n(&mate_rec_profile_on_, prof.tmpl != NULL || mate_rec_benchlog_on(),
	    __ATOMIC_RELEASE);
	pthread_mutex_unlock(&prof.lock);
}

/* In a forked child (the lock taken by the parent's prepare handler): the parent's counts
 * stay the parent's; the child starts its own table. */
void
mate_rec_profile_atfork_prepare(void)
{
	pthread_mutex_lock(&prof.lock);
}

void
mate_rec_profile_atfork_parent(void)
{
	pthread_mutex_unlock(&prof.lock);
}

void
mate_rec_profile_atfork_child(void)
{
	zero_counts();
	if (mate_rec_benchlog_atfork_child())  /* its own bench log: every shape is new there */
		for (size_t i = 0; i < prof.n; i++)
			prof.order[i]->benched = 0;
	prof.child = 1;
	pthread_mutex_unlock(&prof.lock);
}
