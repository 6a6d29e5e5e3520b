/* recorder.c: the public recording API: a call's arguments and results, its phases and host staging of tensors. */
#include "recorder_private.h"
#include "ring.h"
#include "backend.h"
#include "events_private.h"
#include "profile.h"

#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Level 1 needs no state: every call shares this read-only handle. */
static mate_call level1_call = { .level = 1 };

static void ready(mate_call *c, int event);

/* Each thread keeps the block of its last call, with the call's argument array, for its
 * next one: a call at level 3 and above is otherwise a calloc(), a realloc() and their
 * free()s. Freed at the thread's exit. */
static __thread mate_call *spare;
static __thread int spare_keyed;   /* 1 its destructor registered, -1 it cannot be */

static void
spare_destroy(void *arg)
{
	mate_call **s = arg;

	if (*s != NULL) {
		free((*s)->args);
		free(*s);
		*s = NULL;
	}
}

/* A zeroed call of at least need bytes (its argument array kept), or NULL. */
static mate_call *
spare_take(size_t need)
{
	mate_call *c = spare;
	struct rec_arg *args;
	size_t cap, blk;

	if (c == NULL || c->blk < need)
		return NULL;
	spare = NULL;
	args = c->args;
	cap = c->cap_args;
	blk = c->blk;
	memset(c, 0, sizeof(*c));
	c->args = args;
	c->cap_args = cap;
	c->blk = blk;
	return c;
}

/* Keeps c (its contents freed) as the thread's spare; 0 when it is not kept. */
static int
spare_keep(mate_call *c)
{
	if (spare != NULL)
		return 0;
	if (spare_keyed == 0)
		spare_keyed = mate_thread_at_exit(spare_destroy, &spare) == 0 ? 1 : -1;
	if (spare_keyed != 1)
		return 0;
	spare = c;
	return 1;
}

static void
nomem(void)
{
	mate_rec_warn_once(REC_ONCE_NOMEM, "out of memory; calls are recorded incompletely");
}

/* The call's time, from its beginning to its end, into the profile. */
static void
profile_add(mate_call *c, int failed)
{
	mate_rec_profile_add(c, mate_mono_ns() - c->t0, failed);
}

mate_call *
mate_call_begin(const char *name, const char *module, const char *signature)
{
	int level = __atomic_load_n(&mate_record_level_, __ATOMIC_ACQUIRE);
	const char *m, *sig;
	size_t ln, lm, ls;
	mate_call *c;

	if (level < 0) {
		mate_rec_init();
		level = __atomic_load_n(&mate_record_level_, __ATOMIC_ACQUIRE);
	}
	if (level <= 0)
		return NULL;
	if (name == NULL)
		name = "<unnamed>";
	if (MATE_UNLIKELY(__atomic_load_n(&mate_ev_restart_, __ATOMIC_RELAXED)))
		mate_ev_restart_child();
	if (level == 1) {
		mate_rec_log_name(name);
		if (!MATE_REC_PROFILE_ON()) {
			if (MATE_EV_ON())
				mate_ev_call_begin(&level1_call, name);
			return &level1_call;
		}
		/* the profile's level-1 call: no copies of the strings, no arguments kept */
		if ((c = mate_rec_profile_call(name, module)) != NULL) {
			c->t0 = mate_mono_ns();
			if (MATE_EV_ON())
				mate_ev_call_begin(c, name);
			return c;
		}
		if (MATE_EV_ON())
			mate_ev_call_begin(&level1_call, name);
		return &level1_call;
	}
	/* the call and its strings in one block */
	m = module != NULL ? module : "<unknown>";
	sig = signature != NULL ? signature : "<unavailable>";
	ln = strlen(name) + 1;
	lm = strlen(m) + 1;
	ls = strlen(sig) + 1;
	if ((c = spare_take(sizeof(*c) + ln + lm + ls)) == NULL) {
		/* room for most names, so that the block is kept for the next call */
		size_t blk = sizeof(*c) + (ln + lm + ls < 256 ? 256 : ln + lm + ls);

		if ((c = calloc(1, blk)) == NULL) {
			nomem();
			return NULL;
		}
		c->blk = blk;
	}
	c->level = level;
	c->state = CALL_BEGUN;
	c->name = memcpy((char *)(c + 1), name, ln);
	c->module = memcpy(c->name + ln, m, lm);
	c->signature = memcpy(c->module + lm, sig, ls);
	if (level >= 10 && mate_ring_active() > 0) {
		/* the flight recorder: its log costs what level 1's does */
		c->ring = 1;
		mate_rec_log_name(name);
	} else if (level >= 3)
		mate_rec_stamp(c->stamp);
	if (MATE_REC_PROFILE_ON() && mate_rec_profile_begin(c, name, module) == 0)
		c->t0 = mate_mono_ns();
	if (MATE_EV_ON())
		mate_ev_call_begin(c, name);
	return c;
}

/* ---- arguments -------------------------------------------------------------------- */

static int
insert_arg(mate_call *c, size_t at, int role, int inplace, const char *name, mate_value *v)
{
	struct rec_arg *a;

	if (mate_array_grow(&c->args, c->nargs, &c->cap_args, sizeof(*a), 8) != 0)
		return -1;
	a = &c->args[at];
	memmove(a + 1, a, (c->nargs - at) * sizeof(*a));
	a->role = role;
	a->inplace = inplace;
	a->name = NULL;
	a->v = v;
	if (name != NULL && (a->name = strdup(name)) == NULL) {
		memmove(a, a + 1, (c->nargs - at) * sizeof(*a));
		return -1;
	}
	c->nargs++;
	return 0;
}

/* Nothing of the arguments is kept (level 1): the profile keeps their shape apart. */
#define SKIP(c) ((c) == NULL || (c)->level < 3)
#define PROF(c) ((c) != NULL && (c)->profile && (c)->state == CALL_BEGUN)

static void
add_arg(mate_call *c, int flags, const char *name, mate_value *v)
{
	int role = flags & 0x0f, inplace = (flags & MATE_INPLACE) != 0;

	if (c == NULL || c->level < 3) {
		mate_value_free(v);
		return;
	}
	if (v == NULL) {
		nomem();
		return;
	}
	if (role > MATE_RESULT || (flags & ~0x1f) != 0 || (inplace && role > MATE_KWARG)) {
		mate_rec_warn_once(REC_ONCE_USAGE, "%s: bad argument flags 0x%x; argument not recorded",
		    c->name, flags);
		mate_value_free(v);
		return;
	}
	if (role == MATE_RESULT && c->state == CALL_BEGUN)
		ready(c, 0);
	if (role != MATE_RESULT && c->state != CALL_BEGUN) {
		mate_rec_warn_once(REC_ONCE_USAGE, "%s: argument given after mate_call_ready(); not recorded",
		    c->name);
		mate_value_free(v);
		return;
	}
	if ((role == MATE_KWARG || role == MATE_DEFAULT) && (name == NULL || name[0] == '\0'))
		name = "?";
	/* a positional argument's name is kept only for MATE_LOG_EXTRA's log */
	if (role == MATE_RESULT || (role == MATE_ARG && !mate_rec_cfg.log_extra))
		name = NULL;
	else if (role == MATE_ARG && name != NULL && name[0] == '\0')
		name = NULL;
	if (insert_arg(c, c->nargs, role, inplace, name, v) != 0) {
		nomem();
		mate_value_free(v);
	}
}


/* A tensor descriptor the recorder can read safely, or 0. */
static int
tensor_ok(const mate_tensor *t)
{
	int64_t numel, nbytes;
	size_t es;

	if (t == NULL || (es = mate_dtype_size(t->dtype)) == 0 || t->ndim < 0 || t->ndim > MATE_MAX_DIMS)
		return 0;
	numel = mate_tensor_numel(t);   /* mate_tensor_nbytes() without a second walk */
	if (numel < 0 || !mate_mul_ok(numel, (int64_t)es, &nbytes) || mate_tensor_storage_extent(t) < 0)
		return 0;
	return numel == 0 || t->data != NULL;
}

void
mate_call_tensor(mate_call *c, int flags, const char *name, const mate_tensor *t)
{
	if (c != NULL && MATE_EV_ON() && tensor_ok(t))
		mate_ev_call_tensor(c, flags, t);
	if (PROF(c) && tensor_ok(t))
		mate_rec_profile_tensor(c, flags, name, t);
	if (SKIP(c))
		return;
	if (!tensor_ok(t)) {
		mate_rec_warn_once(REC_ONCE_BAD_TENSOR,
		    "%s: a tensor argument has an invalid descriptor; recorded as an object", c->name);
		add_arg(c, flags, name, mate_value_object("Tensor", "<invalid tensor>"));
		return;
	}
	add_arg(c, flags, name, mate_value_tensor(t, NULL));
}

void
mate_call_int(mate_call *c, int flags, const char *name, int64_t v)
{
	if (PROF(c))
		mate_rec_profile_int(c, flags, name, v);
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_int(v));
}

void
mate_call_float(mate_call *c, int flags, const char *name, double v)
{
	if (PROF(c)) {
		locale_t old = mate_locale_enter(MATE_LOCALE_C);  /* JSON numbers */
		mate_rec_profile_float(c, flags, name, v);
		mate_locale_leave(old);
	}
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_float(v));
}

void
mate_call_bool(mate_call *c, int flags, const char *name, int v)
{
	if (PROF(c))
		mate_rec_profile_bool(c, flags, name, v);
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_bool(v));
}

void
mate_call_str(mate_call *c, int flags, const char *name, const char *s)
{
	if (PROF(c))
		mate_rec_profile_str(c, flags, name, s);
	if (!SKIP(c))
		add_arg(c, flags, name, s != NULL ? mate_value_str(s, (size_t)-1) : mate_value_none());
}

void
mate_call_none(mate_call *c, int flags, const char *name)
{
	if (PROF(c))
		mate_rec_profile_none(c, flags, name);
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_none());
}

void
mate_call_dtype(mate_call *c, int flags, const char *name, mate_dtype dt)
{
	if (PROF(c))
		mate_rec_profile_dtype(c, flags, name, dt);
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_dtype(dt));
}

void
mate_call_enum(mate_call *c, int flags, const char *name, const char *enum_name, int64_t v)
{
	if (PROF(c))
		mate_rec_profile_enum(c, flags, name, enum_name, v);
	if (!SKIP(c))
		add_arg(c, flags, name, mate_value_enum(enum_name != NULL ? enum_name : "Enum.?", v));
}

void
mate_call_value(mate_call *c, int flags, const char *name, mate_value *v)
{
	if (PROF(c)) {
		locale_t old = mate_locale_enter(MATE_LOCALE_C);
		mate_rec_profile_value(c, flags, name, v);
		mate_locale_leave(old);
	}
	if (SKIP(c)) {
		mate_value_free(v);
		return;
	}
	add_arg(c, flags, name, v != NULL ? v : mate_value_none());
}

void
mate_call_self(mate_call *c, const void *self)
{
	char type[128], repr[192];
	const char *dot;
	mate_value *v;
	size_t n;

	if (PROF(c) && !c->has_self)
		mate_rec_profile_self(c);
	if (SKIP(c) || c->state != CALL_BEGUN || c->has_self)
		return;
	dot = strrchr(c->name, '.');
	n = dot != NULL ? (size_t)(dot - c->name) : 0;
	if (n == 0 || n >= sizeof(type))
		snprintf(type, sizeof(type), "object");
	else
		snprintf(type, sizeof(type), "%.*s", (int)n, c->name);
	snprintf(repr, sizeof(repr), "<%s object at %p>", type, self);
	v = mate_value_object(type, repr);
	if (v == NULL || insert_arg(c, 0, MATE_ARG, 0, NULL, v) != 0) {
		mate_value_free(v);
		nomem();
		return;
	}
	c->has_self = 1;
	c->self_id = (uint64_t)(uintptr_t)self;
}

/* ---- tensors of a phase ----------------------------------------------------------------- */

static void
release_tensors(mate_call *c)
{
	for (size_t i = 0; i < c->ntensors; i++) {
		uintptr_t k = (uintptr_t)c->tensors[i].key, b = (uintptr_t)c->kbuf;

		if (k < b || k >= b + sizeof(c->kbuf))
			free(c->tensors[i].key);
		mate_storage_unref(c->tensors[i].st);
	}
	c->ntensors = 0;
	c->kused = 0;
}

static struct rec_tensor *
add_tensor(mate_call *c, const mate_value *v, const char *key, int dumped)
{
	struct rec_tensor *rt;
	size_t n;

	if (c->ntensors == c->cap_tensors) {
		/* a few KiB for every call: from the thread's cache, not malloc() */
		if (mate_buf_reserve(&c->tmem, (c->ntensors + 1) * sizeof(*rt)) != 0) {
			nomem();
			return NULL;
		}
		c->tensors = (struct rec_tensor *)(void *)c->tmem.p;
		c->cap_tensors = (c->tmem.cap - 1) / sizeof(*rt);
	}
	rt = &c->tensors[c->ntensors];
	memset(rt, 0, offsetof(struct rec_tensor, host));   /* host is set when it is staged */
	rt->st = NULL;
	rt->v = v;
	rt->dumped = dumped;
	rt->nbytes = mate_tensor_nbytes(mate_value_get_tensor(v));
	n = strlen(key) + 1;
	if (n <= sizeof(c->kbuf) - c->kused) {   /* most keys: no allocation */
		rt->key = memcpy(c->kbuf + c->kused, key, n);
		c->kused += n;
	} else if ((rt->key = strdup(key)) == NULL) {
		nomem();
		return NULL;
	}
	c->ntensors++;
	return rt;
}

void
mate_rec_key(char *out, size_t cap, const char *prefix, const char *part, int64_t idx)
{
	char num[24];
	size_t n = 0;
	int k = 0;

	for (const char *p = prefix; *p != '\0' && n + 1 < cap; p++)
		out[n++] = *p;
	for (size_t i = 0; part != NULL && part[i] != '\0' && i < 280 && n + 1 < cap; i++) {
		out[n++] = part[i];
		/* a cut name ends on a character boundary: it stays UTF-8 */
		if ((part[i + 1] & 0xc0) == 0x80 && (i + 1 == 280 || n + 1 == cap))
			while (n > 0 && ((unsigned char)out[--n] & 0xc0) == 0x80)
				;
	}
	if (idx >= 0) {
		do
			num[k++] = (char)('0' + idx % 10);
		while ((idx /= 10) > 0);
		while (k > 0 && n + 1 < cap)
			out[n++] = num[--k];
	}
	out[n] = '\0';
}

/* Tensors of v under MATE's keys: key, key__<i> in lists and tuples,
 * key__value_<i> in dicts (FlashInfer's spelling). */
static void
collect(mate_call *c, const mate_value *v, const char *key, int dumped, int depth)
{
	mate_value_kind k = mate_value_kind_of(v);
	char sub[512];

	if (k == MATE_V_TENSOR) {
		add_tensor(c, v, key, dumped);
		return;
	}
	if ((k != MATE_V_LIST && k != MATE_V_TUPLE && k != MATE_V_DICT) || depth >= 8)
		return;
	for (size_t i = 0; i < mate_value_len(v); i++) {
		mate_rec_key(sub, sizeof(sub), key, k == MATE_V_DICT ? "__value_" : "__", (int64_t)i);
		collect(c, mate_value_item(v, i), sub, dumped, depth + 1);
	}
}

void
mate_rec_input_key(const struct rec_inputs *it, const struct rec_arg *a, char *key, size_t cap)
{
	if (a->role == MATE_ARG)
		mate_rec_key(key, cap, "arg_", NULL, (int64_t)it->pos - 1);
	else
		mate_rec_key(key, cap, "kwarg_", a->name, -1);
}

const struct rec_arg *
mate_rec_next_input(const mate_call *c, struct rec_inputs *it, char *key, size_t cap)
{
	/* positional arguments first, then keywords, as Python passes them */
	while (it->at < 2 * c->nargs) {
		int keywords = it->at >= c->nargs;
		const struct rec_arg *a = &c->args[it->at++ % c->nargs];

		if (!keywords && a->role == MATE_ARG) {
			it->pos++;
			if (key != NULL)
				mate_rec_input_key(it, a, key, cap);
			return a;
		}
		if (keywords && a->role == MATE_KWARG) {
			if (key != NULL)
				mate_rec_input_key(it, a, key, cap);
			return a;
		}
	}
	return NULL;
}

static void
collect_inputs(mate_call *c)
{
	struct rec_inputs it = { 0 };
	const struct rec_arg *a;
	char key[300];

	while ((a = mate_rec_next_input(c, &it, key, sizeof(key))) != NULL)
		collect(c, a->v, key, 1, 0);
	for (size_t i = 0; i < c->nargs; i++)
		if (c->args[i].role == MATE_DEFAULT)
			collect(c, c->args[i].v, "default", 0, 0);
}

size_t
mate_rec_results(const mate_call *c, const mate_value **items, size_t max, int *tuple)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nargs; i++)
		if (c->args[i].role == MATE_RESULT && n < max)
			items[n++] = c->args[i].v;
	*tuple = n > 1;
	if (n == 1 && mate_value_kind_of(items[0]) == MATE_V_TUPLE) {
		const mate_value *t = items[0];
		n = 0;
		for (size_t i = 0; i < mate_value_len(t) && n < max; i++)
			items[n++] = mate_value_item(t, i);
		*tuple = 1;
	}
	return n;
}

static void
collect_outputs(mate_call *c)
{
	const mate_value *items[64];
	struct rec_tensor *rt;
	char key[300];
	int tuple;
	size_t n = mate_rec_results(c, items, 64, &tuple), pos = 0;

	for (size_t i = 0; i < n; i++) {
		if (tuple)
			mate_rec_key(key, sizeof(key), "result_", NULL, (int64_t)i);
		else
			mate_rec_key(key, sizeof(key), "result", NULL, -1);
		collect(c, items[i], key, 1, 0);
	}
	for (size_t i = 0; i < c->nargs; i++) {
		const struct rec_arg *a = &c->args[i];
		if (a->role == MATE_ARG)
			pos++;
		if (!a->inplace || mate_value_kind_of(a->v) != MATE_V_TENSOR)
			continue;
		if (a->role == MATE_ARG)
			mate_rec_key(key, sizeof(key), "arg_", NULL, (int64_t)pos - 1);
		else
			mate_rec_key(key, sizeof(key), "kwarg_", a->name, -1);
		if ((rt = add_tensor(c, a->v, key, 1)) != NULL)
			rt->inplace = 1;  /* the in-place file, never the outputs file */
	}
}

struct rec_tensor *
mate_rec_find(const mate_call *c, const mate_value *v)
{
	for (size_t i = 0; i < c->ntensors; i++)
		if (c->tensors[i].v == v)
			return &c->tensors[i];
	return NULL;
}

int
mate_rec_capturing(const mate_tensor *t)
{
	const mate_backend *be;

	if (t == NULL || t->device_type != MATE_DEVICE_CUDA)
		return 0;
	be = mate_backend_get();
	return be->stream_capturing != NULL && be->stream_capturing(t->stream);
}

int
mate_rec_stage(struct rec_tensor *rt, int borrow)
{
	const mate_tensor *t;
	size_t es;
	int64_t extent, span, bytes = 0;
	const char *src;

	if (rt->staged != 0)
		return rt->staged;
	t = mate_value_get_tensor(rt->v);
	es = mate_dtype_size(t->dtype);
	rt->staged = -1;
	if (mate_rec_capturing(t))
		return -1;
	if (!borrow || t->device_type == MATE_DEVICE_CUDA) {
		/* the bytes its storage holds from its offset, copied or wrapped (a view of host
		 * memory borrowed for the ring needs none: its extent was checked at the call) */
		extent = mate_tensor_storage_extent(t);
		span = extent > t->offset ? extent - t->offset : 0;
		if (!mate_mul_ok(span, (int64_t)es, &bytes))
			return -1;
	}
	src = t->data != NULL ? (const char *)t->data + t->offset * (int64_t)es : NULL;
	if (t->device_type == MATE_DEVICE_CUDA) {
		const mate_backend *be = mate_backend_get();
		if (strcmp(be->name, "cuda") != 0) {
			mate_rec_warn_once(REC_ONCE_DEVICE_COPY,
			    "a CUDA tensor was recorded but no CUDA device is usable; its data is not logged");
			return -1;
		}
		rt->st = mate_storage_new((size_t)bytes, NULL);
		if (rt->st == NULL) {
			nomem();
			return -1;
		}
		if (bytes > 0 && be->copy_to_host(mate_storage_data(rt->st), src, (size_t)bytes, t->stream) != 0) {
			mate_rec_warn_once(REC_ONCE_DEVICE_COPY, "cannot copy a CUDA tensor to the host");
			return -1;
		}
	} else if (!borrow && (rt->st = mate_storage_wrap((void *)(uintptr_t)src, (size_t)bytes, NULL)) == NULL) {
		nomem();
		return -1;
	}
	if (borrow) {
		/* the ring's copy reads its dimensions only: not all MATE_MAX_DIMS of them copied */
		rt->host.dtype = t->dtype;
		rt->host.ndim = t->ndim;
		for (int d = 0; d < t->ndim; d++) {
			rt->host.shape[d] = t->shape[d];
			rt->host.stride[d] = t->stride[d];
		}
		rt->host.requires_grad = t->requires_grad;
	} else {
		rt->host = *t;
	}
	rt->host.offset = 0;
	rt->host.data = rt->st != NULL ? mate_storage_data(rt->st) : (void *)(uintptr_t)src;
	rt->host.device_type = MATE_DEVICE_CPU;
	rt->host.device_index = 0;
	rt->host.stream = NULL;
	rt->staged = 1;
	return 1;
}

/* Logs the text in log (none: a ring's call, logged at its beginning), and frees it. */
static void
put_log(struct mate_buf *log)
{
	if (log->len > 0 || log->oom) {   /* an empty buffer is not made for its NUL */
		if (mate_buf_str(log) == NULL)
			nomem();
		else
			mate_rec_log(log->p, log->len);
	}
	mate_buf_free(log);
}

static void
stage_all(mate_call *c)
{
	for (size_t i = 0; i < c->ntensors; i++)
		mate_rec_stage(&c->tensors[i], 0);
}

/* ---- phases ------------------------------------------------------------------------------ */

/* Logs (and at level 10 dumps) the inputs; event: the call's RECV goes out now.
 * Without it (a result given before mate_call_ready(): the API has run), the
 * events layer still sees a call that was never ready and queues its RECV
 * and SEND together at its end, with one clock reading. */
static void
ready(mate_call *c, int event)
{
	struct mate_buf log;
	locale_t old;
	uint64_t t;

	if (SKIP(c) || c->state != CALL_BEGUN) {
		if (event && c != NULL && MATE_EV_ON())
			mate_ev_call_ready(c);
		return;
	}
	c->state = CALL_READY;
	t = c->profile ? mate_mono_ns() : 0;
	old = mate_locale_enter(MATE_LOCALE_C);
	mate_buf_init(&log);
	collect_inputs(c);
	if (c->level >= 5 && !c->ring)
		stage_all(c);
	if (c->level >= 10)
		mate_rec_dump_inputs(c, &log);
	c->log_id = 0;
	if (mate_rec_cfg.log_extra && !c->ring) {
		c->log_id = mate_call_id(c);
		if (c->log_id == 0)   /* no events: a number of the same sequence */
			c->log_id = mate_ev_next_id();
		c->log_tid = (long)syscall(SYS_gettid);
	}
	if (!c->ring)
		mate_rec_fmt_inputs(&log, c);
	put_log(&log);
	release_tensors(c);
	mate_locale_leave(old);
	if (c->profile)
		c->t0 += mate_mono_ns() - t;  /* the profile times the API, not the recording */
	if (event && MATE_EV_ON())
		mate_ev_call_ready(c);
}

void
mate_call_ready(mate_call *c)
{
	ready(c, 1);
}

static void
free_call(mate_call *c)
{
	release_tensors(c);
	mate_buf_free(&c->tmem);
	for (size_t i = 0; i < c->nargs; i++) {
		free(c->args[i].name);
		mate_value_free(c->args[i].v);
	}
	mate_rec_dump_free(c->dump);
	mate_buf_free(&c->ptext);
	if (spare_keep(c))
		return;
	free(c->args);
	free(c);   /* with its strings */
}

/* What mate_call_end and mate_call_fail do first: the events and the
 * profile see the end (ok: it succeeded). 1 when a record is left to
 * finish, ready and in the C locale (*old: the locale to go back to). */
static int
finishing(mate_call *c, int ok, const char *error, locale_t *old)
{
	if (c != NULL && MATE_EV_ON())
		mate_ev_call_end(c, ok, error);
	if (c != NULL && c->profile)
		profile_add(c, !ok);
	if (c != NULL && c->pooled) {
		mate_rec_profile_release(c);
		return 0;
	}
	if (SKIP(c))
		return 0;
	mate_call_ready(c);
	*old = mate_locale_enter(MATE_LOCALE_C);
	return 1;
}

void
mate_call_end(mate_call *c)
{
	struct mate_buf log;
	locale_t old;

	if (!finishing(c, 1, NULL, &old))
		return;
	mate_buf_init(&log);
	collect_outputs(c);
	if (c->level >= 5 && !c->ring)
		stage_all(c);
	if (!c->ring)
		mate_rec_fmt_outputs(&log, c);
	if (c->level >= 10)
		mate_rec_dump_outputs(c, &log);
	put_log(&log);
	mate_locale_leave(old);
	free_call(c);
}

void
mate_call_fail(mate_call *c, const char *error)
{
	locale_t old;

	if (!finishing(c, 0, error, &old))
		return;
	if (c->level >= 10)
		mate_rec_dump_failed(c, error != NULL ? error : "");
	mate_locale_leave(old);
	free_call(c);
}
