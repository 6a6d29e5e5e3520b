/* replay.c: the replay engine: handler registry, plugins, stateful receivers, running one call and judging its outputs. */
#include "mate_private.h"
#include "dump_private.h"
#include "replay_private.h"
#include "backend.h"
#include "op_cost.h"
#ifdef HAVE_CUDA
#include "cuda_module.h"
#endif

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct handler {
	char *module;               /* NULL: any */
	char *name;
	struct mate_sig *sig;       /* the signature it implements; NULL: any */
	char *sigtext;              /* as registered, for listings; NULL: any */
	mate_replay_handler fn;
	void *ctx;
	const char *slice;          /* its slicing rule (mate_replay_set_slice()), static; or NULL */
};

struct object {
	char *key;                  /* "<pid>:<self_id>" */
	void *obj;
	void (*free_fn)(void *);
};

struct mate_replay {
	struct handler *handlers;
	size_t nhandlers, caphandlers;
	void **plugins;
	size_t nplugins;
	struct object *objects;
	size_t nobjects, capobjects;
	pthread_mutex_t lock;
	double rtol, atol;
	int device_req;             /* what was asked for */
	int device;                 /* resolved: CPU or CUDA, 0 until needed */
	int bench_runs;             /* mate_replay_set_bench() */
};

struct mate_replay_call {
	mate_replay *r;
	const struct mate_replay_request *req;
	mate_value *args;           /* as the handler reads them */
	mate_value *outputs;
	char objkey[160];
	char message[1024];
	char note[300];             /* parameters the handler lacks, left at their defaults */
	struct mate_reduction red;  /* a matrix product: its operands bound its outputs */
	uint64_t made;              /* bytes of the tensors the handler made (mate_replay_new_tensor) */
	int short_of_memory;        /* one of them was refused or could not be allocated */
	int exact;                  /* mate_replay_set_exact(): floating outputs bit for bit */
	mate_value *held;           /* mate_replay_hold(): values kept until the call ends */
};

static struct mate_sig *recorded_signature(const struct mate_replay_request *req,
    struct mate_replay_result *res, int *rc);

/* Built-in handlers (replay_ops.c). */
int mate_replay_register_builtins(mate_replay *r, mate_error *err);

const char *
mate_replay_verdict_name(int verdict)
{
	switch (verdict) {
	case MATE_REPLAY_PASSED: return "passed";
	case MATE_REPLAY_MISMATCH: return "mismatch";
	case MATE_REPLAY_UNSUPPORTED: return "unsupported";
	case MATE_REPLAY_REPRODUCED: return "reproduced_failure";
	case MATE_REPLAY_NOW_RUNS: return "now_runs";
	case MATE_REPLAY_UNCHECKED: return "unchecked";
	default: return "error";
	}
}

/* ---- registry --------------------------------------------------------------- */

mate_replay *
mate_replay_new(mate_error *err)
{
	mate_replay *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->rtol = r->atol = -1;
	r->device_req = r->device = MATE_REPLAY_DEVICE_CPU;
	if (mate_replay_register_builtins(r, err) != MATE_OK) {
		mate_replay_free(r);
		return NULL;
	}
	return r;
}

void
mate_replay_free(mate_replay *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nobjects; i++) {
		if (r->objects[i].free_fn != NULL)
			r->objects[i].free_fn(r->objects[i].obj);
		free(r->objects[i].key);
	}
	free(r->objects);
	for (size_t i = 0; i < r->nhandlers; i++) {
		free(r->handlers[i].module);
		free(r->handlers[i].name);
		mate_sig_free(r->handlers[i].sig);
		free(r->handlers[i].sigtext);
	}
	free(r->handlers);
	for (size_t i = r->nplugins; i > 0; i--)
		dlclose(r->plugins[i - 1]);
	free(r->plugins);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int
mate_replay_register(mate_replay *r, const char *module, const char *name,
    mate_replay_handler fn, void *ctx, mate_error *err)
{
	return mate_replay_register_signature(r, module, name, NULL, fn, ctx, err);
}

int
mate_replay_register_signature(mate_replay *r, const char *module, const char *name,
    const char *signature, mate_replay_handler fn, void *ctx, mate_error *err)
{
	struct handler *h;
	struct mate_sig *sig = NULL;
	mate_error serr;

	if (r == NULL || name == NULL || *name == '\0' || fn == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "mate_replay_register: no name or handler");
	mate_error_clear(&serr);
	if (signature != NULL && (sig = mate_sig_parse(signature, &serr)) == NULL)
		return mate_set_error(err, serr.code == MATE_ERR_NOMEM ? MATE_ERR_NOMEM : MATE_ERR_ARGUMENT,
		    "mate_replay_register: %s: signature %.200s: %s", name, signature, serr.message);
	for (size_t i = 0; sig != NULL && i < sig->n; i++)
		if (sig->p[i].kind == MATE_PARAM_VAR_POSITIONAL || sig->p[i].kind == MATE_PARAM_VAR_KEYWORD) {
			mate_sig_free(sig);
			return mate_set_error(err, MATE_ERR_ARGUMENT, "mate_replay_register: %s: a handler's "
			    "signature names its parameters (no *args or **kwargs)", name);
		}
	if (mate_array_grow(&r->handlers, r->nhandlers, &r->caphandlers, sizeof(*h), 32) != 0) {
		mate_sig_free(sig);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	h = &r->handlers[r->nhandlers];
	h->name = strdup(name);
	h->module = module != NULL ? strdup(module) : NULL;
	h->fn = fn;
	h->ctx = ctx;
	h->sig = sig;
	h->sigtext = signature != NULL ? strdup(signature) : NULL;
	if (h->name == NULL || (module != NULL && h->module == NULL) ||
	    (signature != NULL && h->sigtext == NULL)) {
		free(h->name);
		free(h->module);
		free(h->sigtext);
		mate_sig_free(sig);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	r->nhandlers++;
	return MATE_OK;
}

/* The handlers for a call, in the order they are tried: those registered
 * under the name, then, for "Tensor.NAME", those under "NAME" (the library
 * function that MATE's decorator names so when its first argument is a
 * tensor); for each name a module-specific handler first, then one for any
 * module; the latest registration first. Calls fn on each until it returns
 * non-zero; @return that handler, or NULL. */
static const struct handler *
each_candidate(const mate_replay *r, const char *module, const char *name,
    int (*fn)(const struct handler *, void *), void *ctx)
{
	if (name == NULL)
		return NULL;
	for (int form = 0; form < 2; form++) {
		if (form == 1) {
			if (strncmp(name, "Tensor.", 7) != 0 || name[7] == '\0')
				break;
			name += 7;
		}
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = r->nhandlers; i > 0; i--) {
				const struct handler *h = &r->handlers[i - 1];

				if (strcmp(h->name, name) != 0)
					continue;
				if ((pass == 0 && h->module != NULL && module != NULL &&
				    strcmp(h->module, module) == 0) || (pass == 1 && h->module == NULL))
					if (fn(h, ctx))
						return h;
			}
	}
	return NULL;
}

static int
any_handler(const struct handler *h, void *ctx)
{
	(void)h;
	(void)ctx;
	return 1;
}

int
mate_replay_has_handler(const mate_replay *r, const char *module, const char *name)
{
	return each_candidate(r, module, name, any_handler, NULL) != NULL;
}

/* The search for a handler implementing a recorded signature; why collects
 * each candidate's reason for declining. */
struct sig_search {
	const struct mate_sig *rec;
	char why[700];
	size_t len;
	int tried;
};

static int
implements(const struct handler *h, void *ctx)
{
	struct sig_search *s = ctx;
	char sig[200], reason[120];

	if (h->sig == NULL || s->rec == NULL)
		return 1;  /* a handler of any signature, or a call that names none */
	if (mate_sig_implements(h->sig, s->rec, reason, sizeof(reason)))
		return 1;
	mate_sig_format(h->sig, sig, sizeof(sig));
	if (s->len < sizeof(s->why))
		s->len += (size_t)snprintf(s->why + s->len, sizeof(s->why) - s->len, "%s%s%s: %s",
		    s->tried++ ? "; " : "", h->name, sig, reason);
	return 0;
}

void
mate_replay_set_slice(mate_replay *r, const char *slice)
{
	if (r->nhandlers > 0)
		r->handlers[r->nhandlers - 1].slice = slice;
}

const char *
mate_replay_slice_rule(mate_replay *r, const struct mate_replay_request *req, const char **sigtext)
{
	struct sig_search search;
	struct mate_replay_result res;
	const struct handler *h;
	int rc;

	*sigtext = NULL;
	memset(&search, 0, sizeof(search));
	if ((search.rec = recorded_signature(req, &res, &rc)) == NULL && rc != MATE_OK)
		return NULL;
	h = each_candidate(r, req->module, req->function, implements, &search);
	mate_sig_free((struct mate_sig *)search.rec);
	if (h == NULL)
		return NULL;
	*sigtext = h->sigtext;
	return h->slice;
}

int
mate_replay_load_plugin(mate_replay *r, const char *path, mate_error *err)
{
	void *h, **p;
	mate_replay_plugin_init_fn init;
	int rc;

	dlerror();
	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL)
		return mate_set_error(err, MATE_ERR_IO, "cannot load plugin %s: %s", path, dlerror());
	*(void **)&init = dlsym(h, MATE_REPLAY_PLUGIN_INIT);
	if (init == NULL) {
		dlclose(h);
		return mate_set_error(err, MATE_ERR_FORMAT, "plugin %s has no %s()", path,
		    MATE_REPLAY_PLUGIN_INIT);
	}
	if ((p = realloc(r->plugins, (r->nplugins + 1) * sizeof(*p))) == NULL) {
		dlclose(h);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	r->plugins = p;
	r->plugins[r->nplugins++] = h;
	if ((rc = init(r, err)) != MATE_OK) {
		if (err != NULL && err->message[0] == '\0')
			mate_set_error(err, rc, "plugin %s: %s() failed", path, MATE_REPLAY_PLUGIN_INIT);
		return rc < 0 ? rc : MATE_ERR_ARGUMENT;
	}
	return MATE_OK;
}

void
mate_replay_set_tolerance(mate_replay *r, double rtol, double atol)
{
	r->rtol = rtol;
	r->atol = atol;
}

static int
cuda_devices(void)
{
#ifdef HAVE_CUDA
	const mate_backend *b = mate_backend_cuda();   /* a replay may be the first CUDA user */

	return b != NULL ? b->device_count() : 0;
#else
	return 0;
#endif
}

int
mate_replay_set_device(mate_replay *r, int device, mate_error *err)
{
	if (device == MATE_REPLAY_DEVICE_CUDA && cuda_devices() <= 0) {
#ifdef HAVE_CUDA
		if (mate_cuda_module_load(err) == NULL)   /* err says why */
			return err != NULL ? err->code : MATE_ERR_UNSUPPORTED;
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "no CUDA device is usable");
#else
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "this libmate was built without CUDA");
#endif
	}
	if (device != MATE_REPLAY_DEVICE_AUTO && device != MATE_REPLAY_DEVICE_CPU &&
	    device != MATE_REPLAY_DEVICE_CUDA)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "unknown device %d", device);
	r->device_req = device;
	r->device = device == MATE_REPLAY_DEVICE_AUTO ? 0 : device;
	return MATE_OK;
}

int
mate_replay_get_device(const mate_replay *r)
{
	mate_replay *m = (mate_replay *)r;

	pthread_mutex_lock(&m->lock);
	if (m->device == 0)
		m->device = cuda_devices() > 0 ? MATE_REPLAY_DEVICE_CUDA : MATE_REPLAY_DEVICE_CPU;
	pthread_mutex_unlock(&m->lock);
	return m->device;
}

/* ---- handler side ------------------------------------------------------------ */

const char *
mate_replay_call_function(const mate_replay_call *c)
{
	return c->req->function;
}

const char *
mate_replay_call_signature(const mate_replay_call *c)
{
	return c->req->signature;
}

int
mate_replay_call_device(const mate_replay_call *c)
{
	return mate_replay_get_device(c->r);
}

mate_value *
mate_replay_call_args(const mate_replay_call *c)
{
	return c->args;
}

mate_value *
mate_replay_arg(const mate_replay_call *c, int pos, const char *name)
{
	char key[160];
	mate_value *v = NULL;

	if (pos >= 0) {
		snprintf(key, sizeof(key), "arg_%d", pos);
		v = mate_value_lookup(c->args, key);
	}
	if (v == NULL && name != NULL) {
		snprintf(key, sizeof(key), "kwarg_%s", name);
		v = mate_value_lookup(c->args, key);
	}
	return v;
}

int
mate_replay_fail(mate_replay_call *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
	return code;
}

static const char *
kind_name(const mate_value *v)
{
	static const char *const names[] = { "None", "bool", "int", "float", "str", "bytes",
	    "list", "tuple", "dict", "tensor", "dtype", "enum", "object" };
	unsigned k = (unsigned)mate_value_kind_of(v);

	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static int
bad_type(mate_replay_call *c, int pos, const char *name, const char *want, const mate_value *v)
{
	if (name != NULL)
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: argument '%s': expected %s, got %s",
		    c->req->function, name, want, kind_name(v));
	return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: argument %d: expected %s, got %s",
	    c->req->function, pos, want, kind_name(v));
}

#define ABSENT(v) ((v) == NULL || mate_value_kind_of(v) == MATE_V_NONE)

int
mate_replay_arg_tensor(mate_replay_call *c, int pos, const char *name, int optional,
    const mate_tensor **out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);

	*out = NULL;
	if (ABSENT(v)) {
		if (optional)
			return MATE_OK;
		if (name != NULL)
			return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: tensor argument '%s' is missing",
			    c->req->function, name);
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: tensor argument %d is missing",
		    c->req->function, pos);
	}
	if (mate_value_kind_of(v) != MATE_V_TENSOR)
		return bad_type(c, pos, name, "a tensor", v);
	*out = mate_value_get_tensor(v);
	return MATE_OK;
}

int
mate_replay_arg_int(mate_replay_call *c, int pos, const char *name, int64_t def, int64_t *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);
	double d;

	*out = def;
	if (ABSENT(v))
		return MATE_OK;
	switch (mate_value_kind_of(v)) {
	case MATE_V_INT:
	case MATE_V_BOOL:
	case MATE_V_ENUM:
		*out = mate_value_get_int(v);
		return MATE_OK;
	case MATE_V_FLOAT:
		d = mate_value_get_float(v);
		if (mate_double_to_i64(d, out) && d == (double)*out)
			return MATE_OK;
		/* fall through */
	default:
		return bad_type(c, pos, name, "an int", v);
	}
}

int
mate_replay_arg_float(mate_replay_call *c, int pos, const char *name, double def, double *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);
	const mate_tensor *t;

	*out = def;
	if (ABSENT(v))
		return MATE_OK;
	switch (mate_value_kind_of(v)) {
	case MATE_V_INT:
	case MATE_V_BOOL:
	case MATE_V_FLOAT:
		*out = mate_value_get_float(v);
		return MATE_OK;
	case MATE_V_TENSOR:  /* a one-element host tensor, as scales often are */
		t = mate_value_get_tensor(v);
		if (mate_tensor_numel(t) == 1 && t->device_type == MATE_DEVICE_CPU && t->data != NULL) {
			*out = mate_load_f64(t->dtype, mate_tensor_element(t, 0));
			return MATE_OK;
		}
		/* fall through */
	default:
		return bad_type(c, pos, name, "a float", v);
	}
}

int
mate_replay_arg_bool(mate_replay_call *c, int pos, const char *name, int def, int *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);

	*out = def;
	if (ABSENT(v))
		return MATE_OK;
	if (mate_value_kind_of(v) == MATE_V_BOOL || mate_value_kind_of(v) == MATE_V_INT) {
		*out = mate_value_get_int(v) != 0;
		return MATE_OK;
	}
	return bad_type(c, pos, name, "a bool", v);
}

int
mate_replay_arg_str(mate_replay_call *c, int pos, const char *name, const char *def,
    const char **out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);

	*out = def;
	if (ABSENT(v))
		return MATE_OK;
	if (mate_value_kind_of(v) == MATE_V_STR) {
		*out = mate_value_get_str(v, NULL);
		return MATE_OK;
	}
	if (mate_value_kind_of(v) == MATE_V_ENUM) {
		*out = mate_value_enum_name(v);
		return MATE_OK;
	}
	return bad_type(c, pos, name, "a str", v);
}

int
mate_replay_arg_dtype(mate_replay_call *c, int pos, const char *name, mate_dtype def,
    mate_dtype *out)
{
	const mate_value *v = mate_replay_arg(c, pos, name);
	mate_dtype dt;

	*out = def;
	if (ABSENT(v))
		return MATE_OK;
	if (mate_value_kind_of(v) == MATE_V_DTYPE) {
		*out = mate_value_get_dtype(v);
		return MATE_OK;
	}
	if (mate_value_kind_of(v) == MATE_V_STR &&
	    (dt = mate_dtype_from_name(mate_value_get_str(v, NULL))) != MATE_DTYPE_INVALID) {
		*out = dt;
		return MATE_OK;
	}
	return bad_type(c, pos, name, "a dtype", v);
}

mate_value *
mate_replay_new_tensor(mate_replay_call *c, mate_dtype dt, int ndim, const int64_t *shape)
{
	mate_tensor t;
	mate_storage *st;
	mate_value *v;
	mate_error err;
	int64_t nb;

	if (mate_tensor_init(&t, dt, ndim, shape, NULL, NULL) != MATE_OK ||
	    (nb = mate_tensor_nbytes(&t)) < 0) {
		mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: bad output shape or dtype", c->req->function);
		return NULL;
	}
	/* what a handler makes (outputs, scratch) counts against the one memory limit, checked
	 * before it is allocated: a refusal is an error, never a reproduced failure */
	if ((uint64_t)nb > mate_memory_cap() || c->made > mate_memory_cap() - (uint64_t)nb) {
		mate_replay_fail(c, MATE_ERR_LIMIT, "%s: its outputs and scratch would take more than "
		    "the memory limit of %" PRIu64 " MiB (--max-memory or MATE_MAX_MEMORY raises it)",
		    c->req->function, mate_memory_cap() >> 20);
		c->short_of_memory = 1;
		return NULL;
	}
	c->made += (uint64_t)nb;
	if ((st = mate_storage_new((size_t)nb, &err)) == NULL) {
		c->short_of_memory = 1;
		mate_replay_fail(c, MATE_ERR_NOMEM, "%s: %s", c->req->function, err.message);
		return NULL;
	}
	v = mate_value_tensor(&t, st);
	mate_storage_unref(st);
	if (v == NULL)
		mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", c->req->function);
	return v;
}

int
mate_replay_set_output(mate_replay_call *c, const char *key, mate_value *v)
{
	if (v == NULL || key == NULL) {
		mate_value_free(v);
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: no output value", c->req->function);
	}
	if (mate_value_set_str(c->outputs, key, v) != MATE_OK)
		return mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", c->req->function);
	return MATE_OK;
}

int
mate_replay_return(mate_replay_call *c, mate_value *v)
{
	char key[32];
	int rc = MATE_OK;

	if (mate_value_kind_of(v) != MATE_V_TUPLE || v == NULL)
		return mate_replay_set_output(c, "result", v);
	for (size_t i = 0; i < mate_value_len(v) && rc == MATE_OK; i++) {
		snprintf(key, sizeof(key), "result_%zu", i);
		rc = mate_replay_set_output(c, key, mate_value_copy(mate_value_item(v, i)));
	}
	mate_value_free(v);
	return rc;
}

static struct object *
find_object(mate_replay *r, const char *key)
{
	for (size_t i = 0; i < r->nobjects; i++)
		if (strcmp(r->objects[i].key, key) == 0)
			return &r->objects[i];
	return NULL;
}

const char *
mate_replay_call_object(const mate_replay_call *c)
{
	return c->objkey[0] != '\0' ? c->objkey : NULL;
}

void *
mate_replay_call_self(const mate_replay_call *c)
{
	struct object *o;
	void *obj = NULL;

	if (c->objkey[0] == '\0')
		return NULL;
	pthread_mutex_lock(&c->r->lock);
	if ((o = find_object(c->r, c->objkey)) != NULL)
		obj = o->obj;
	pthread_mutex_unlock(&c->r->lock);
	return obj;
}

int
mate_replay_call_set_self(mate_replay_call *c, void *obj, void (*free_fn)(void *))
{
	mate_replay *r = c->r;
	struct object *o, old = { NULL, NULL, NULL };
	int rc = MATE_OK;

	if (c->objkey[0] == '\0') {  /* obj is still this function's to free */
		if (free_fn != NULL)
			free_fn(obj);
		return mate_replay_fail(c, MATE_ERR_ARGUMENT, "%s: the call has no self_id",
		    c->req->function);
	}
	pthread_mutex_lock(&r->lock);
	if ((o = find_object(r, c->objkey)) != NULL) {
		old = *o;
		o->obj = obj;
		o->free_fn = free_fn;
	} else if (r->nobjects == r->capobjects &&
	    (o = realloc(r->objects, (r->capobjects * 2 + 8) * sizeof(*o))) == NULL) {
		rc = MATE_ERR_NOMEM;
	} else {
		if (r->nobjects == r->capobjects) {
			r->objects = o;
			r->capobjects = r->capobjects * 2 + 8;
		}
		o = &r->objects[r->nobjects];
		if ((o->key = strdup(c->objkey)) == NULL) {
			rc = MATE_ERR_NOMEM;
		} else {
			o->obj = obj;
			o->free_fn = free_fn;
			r->nobjects++;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (old.free_fn != NULL && old.obj != obj)
		old.free_fn(old.obj);
	if (rc != MATE_OK) {
		if (free_fn != NULL)
			free_fn(obj);
		return mate_replay_fail(c, rc, "%s: out of memory", c->req->function);
	}
	return MATE_OK;
}

/* ---- running one call ---------------------------------------------------------- */

/* Whether v holds a tensor (nested at most 8 deep). */
static int
holds_tensor(const mate_value *v, int depth)
{
	if (mate_value_kind_of(v) == MATE_V_TENSOR)
		return 1;
	for (size_t i = 0; depth < 8 && i < mate_value_len(v); i++)
		if (holds_tensor(mate_value_item(v, i), depth + 1))
			return 1;
	return 0;
}

/* Folds one output's comparison into the call's result. */
static void
merge(struct mate_replay_result *res, const struct mate_replay_result *sub, int ok, const char *key)
{
	res->compared++;
	if (sub->reduction_k > res->reduction_k)
		res->reduction_k = sub->reduction_k;
	if (sub->bound_ratio > res->bound_ratio)
		res->bound_ratio = sub->bound_ratio;
	if (sub->max_abs_err > res->max_abs_err)
		res->max_abs_err = sub->max_abs_err;
	if (sub->max_rel_err > res->max_rel_err)
		res->max_rel_err = sub->max_rel_err;
	if (!sub->bit_exact)
		res->bit_exact = 0;
	if (ok)
		return;
	if (res->mismatched++ > 0) {
		/* a later output that differs too: named after the first's details */
		size_t len = strlen(res->message);

		for (const char *p = "; also "; *p != '\0' && len + 1 < sizeof(res->message); p++)
			res->message[len++] = *p;
		for (const char *p = sub->message; *p != '\0' && len + 1 < sizeof(res->message); p++)
			res->message[len++] = *p;
		res->message[len] = '\0';
		return;
	}
	res->verdict = MATE_REPLAY_MISMATCH;
	snprintf(res->key, sizeof(res->key), "%s", key);
	res->first_bad = sub->first_bad;
	memcpy(res->first_bad_index, sub->first_bad_index, sizeof(res->first_bad_index));
	res->expected = sub->expected;
	res->got = sub->got;
	res->n_bad = sub->n_bad;
	res->numel = sub->numel;
	res->rtol = sub->rtol;
	res->atol = sub->atol;
	res->mean_abs_err = sub->mean_abs_err;
	res->mean_rel_err = sub->mean_rel_err;
	res->n_nan = sub->n_nan;
	res->n_inf = sub->n_inf;
	res->first_nan = sub->first_nan;
	res->first_inf = sub->first_inf;
	memcpy(res->first_nan_index, sub->first_nan_index, sizeof(res->first_nan_index));
	memcpy(res->first_inf_index, sub->first_inf_index, sizeof(res->first_inf_index));
	memcpy(res->message, sub->message, sizeof(res->message));
}

/* The argument key names after the call: args[key], or for "<parent>__<i>" (a
 * tensor inside a list or tuple argument, as the records key it, nested) item i of
 * the parent's value. */
static const mate_value *
written_arg(const mate_value *args, const char *key, int depth)
{
	const mate_value *v = mate_value_lookup(args, key), *parent;
	char buf[512];
	size_t len = strlen(key), d = len;
	unsigned long idx;

	if (v != NULL || depth > 8 || len >= sizeof(buf))
		return v;
	while (d > 0 && key[d - 1] >= '0' && key[d - 1] <= '9')
		d--;
	if (d == len || d < 3 || key[d - 1] != '_' || key[d - 2] != '_' || len - d > 6)
		return NULL;
	memcpy(buf, key, d - 2);
	buf[d - 2] = '\0';
	idx = strtoul(key + d, NULL, 10);
	parent = written_arg(args, buf, depth + 1);
	if ((mate_value_kind_of(parent) != MATE_V_LIST && mate_value_kind_of(parent) != MATE_V_TUPLE) ||
	    idx >= mate_value_len(parent))
		return NULL;
	return mate_value_item(parent, idx);
}

/* A key under which a handler returns: "result", or "result_<i>" for a tuple. */
static int
is_result_key(const char *key)
{
	return strcmp(key, "result") == 0 ||
	    (strncmp(key, "result_", 7) == 0 && key[7] >= '0' && key[7] <= '9');
}

/* The results the replay returned that the record lacks (not None; beside a
 * recorded "result", a tuple's items are that key's mismatch, and the other
 * way round), listed in buf as "result_0, result_1 (a tuple of 2)"; how many. */
static size_t
unrecorded_results(const mate_value *outputs, const mate_value *exp, int tuple_only,
    char *buf, size_t len)
{
	int has_result = mate_value_lookup(exp, "result") != NULL, has_items = 0;
	const mate_value *one = NULL;
	size_t n = 0, o = 0;

	for (size_t i = 0; i < mate_value_len(exp); i++) {
		const char *k = mate_value_get_str(mate_value_key(exp, i), NULL);

		has_items |= k != NULL && strcmp(k, "result") != 0 && is_result_key(k);
	}
	buf[0] = '\0';
	for (size_t i = 0; i < mate_value_len(outputs); i++) {
		const char *k = mate_value_get_str(mate_value_key(outputs, i), NULL);
		const mate_value *v = mate_value_item(outputs, i);
		int whole;

		if (k == NULL || !is_result_key(k) || mate_value_kind_of(v) == MATE_V_NONE ||
		    mate_value_lookup(exp, k) != NULL)
			continue;
		whole = strcmp(k, "result") == 0;
		if ((whole && (has_items || tuple_only)) || (!whole && has_result && !tuple_only))
			continue;
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", n ? ", " : "", k);
		one = v;
		n++;
	}
	if (n == 1 && o < len)
		snprintf(buf + o, len - o, " (%s %s)", strchr("aeiou", kind_name(one)[0]) ? "an" : "a",
		    kind_name(one));
	else if (n > 1 && o < len)
		snprintf(buf + o, len - o, " (a tuple of %zu)", n);
	return n;
}

static void
compare_outputs(mate_replay *r, const mate_replay_call *c, struct mate_replay_result *res)
{
	const mate_value *exp = c->req->expected;
	char got[256];
	int nones = 0;

	res->verdict = MATE_REPLAY_PASSED;
	res->bit_exact = 1;
	for (size_t i = 0; i < mate_value_len(exp); i++) {
		const char *key = mate_value_get_str(mate_value_key(exp, i), NULL);
		const mate_value *x = mate_value_item(exp, i), *y;
		struct mate_replay_result sub;
		int ok;

		if (key == NULL)
			continue;
		memset(&sub, 0, sizeof(sub));
		sub.first_bad = sub.first_nan = sub.first_inf = -1;
		got[0] = '\0';
		y = mate_value_lookup(c->outputs, key);
		if (y == NULL)  /* an argument written in place (an item of one: "arg_4__0") */
			y = written_arg(c->req->args, key, 0);
		if (strcmp(key, "result") == 0 && mate_value_kind_of(x) == MATE_V_NONE &&
		    (y == NULL || mate_value_kind_of(y) == MATE_V_NONE))
			nones++;
		if (y == NULL && strcmp(key, "result") == 0 && mate_value_kind_of(x) == MATE_V_NONE &&
		    unrecorded_results(c->outputs, exp, 1, got, sizeof(got)) == 0)
			y = x;      /* returned None */
		if (y == NULL && got[0] != '\0') {
			snprintf(sub.message, sizeof(sub.message), "%s: the record says the call returned "
			    "None, the replay returned %s", key, got);
			ok = 0;
		} else if (y == NULL) {
			snprintf(sub.message, sizeof(sub.message), "%s: not produced by the replay", key);
			ok = 0;
		} else if (mate_value_kind_of(x) == MATE_V_TENSOR && mate_value_kind_of(y) != MATE_V_TENSOR) {
			snprintf(sub.message, sizeof(sub.message), "%s: expected a tensor, got %s",
			    key, kind_name(y));
			ok = 0;
		} else if ((c->red.a != NULL || c->red.k > 0) && mate_value_kind_of(x) == MATE_V_TENSOR &&
		    mate_value_kind_of(y) == MATE_V_TENSOR) {
			ok = mate_replay_compare_reduction(key, mate_value_get_tensor(x),
			    mate_value_get_tensor(y), r->rtol, r->atol, &c->red, &sub);
		} else {
			ok = mate_replay_compare_value(key, x, y, c->exact && r->rtol < 0 ? 0 : r->rtol,
			    c->exact && r->atol < 0 ? 0 : r->atol, &sub);
		}
		merge(res, &sub, ok, key);
	}
	if (unrecorded_results(c->outputs, exp, 0, got, sizeof(got)) > 0) {
		struct mate_replay_result sub;

		memset(&sub, 0, sizeof(sub));
		sub.first_bad = sub.first_nan = sub.first_inf = -1;
		if (mate_value_len(exp) == 0)
			snprintf(sub.message, sizeof(sub.message), "the record has no outputs but the "
			    "replay returned %s: the record lost its outputs", got);
		else
			snprintf(sub.message, sizeof(sub.message), "the replay returned %s, which the "
			    "record does not have", got);
		got[strcspn(got, ", ")] = '\0';  /* the first key */
		merge(res, &sub, 0, got);
	}
	if (res->verdict == MATE_REPLAY_PASSED && nones == res->compared && c->req->self_id == NULL &&
	    holds_tensor(c->req->args, 0)) {
		/* a function of tensors of which only a None came back (FlashInfer's
		 * decorator records no tensors after an in-place call): it ran, and
		 * no more is known; a method's effect on its object is what later
		 * calls on it check */
		res->verdict = MATE_REPLAY_UNCHECKED;
		snprintf(res->message, sizeof(res->message), "%s; its in-place writes, if any, were "
		    "not recorded", res->compared == 0 ? "no outputs were recorded to compare" :
		    "only its None return was recorded to compare");
	} else if (res->verdict == MATE_REPLAY_PASSED && !res->bit_exact && res->reduction_k > 0)
		snprintf(res->message, sizeof(res->message), "max abs err %.3g, max rel err %.3g; within "
		    "the reduction bound %s (K %" PRId64 "): the worst error %.3g times "
		    "its bound", res->max_abs_err, res->max_rel_err, mate_reduction_form(&c->red),
		    res->reduction_k, res->bound_ratio);
	else if (res->verdict == MATE_REPLAY_PASSED)
		snprintf(res->message, sizeof(res->message), res->compared == 0 ?
		    "no outputs were recorded to compare" : res->bit_exact ? "bit-exact" :
		    "max abs err %.3g, max rel err %.3g", res->max_abs_err, res->max_rel_err);
}

static void
judge_failure(const mate_replay_call *c, int rc, struct mate_replay_result *res)
{
	const char *msg = c->message[0] ? c->message : "the handler failed";
	const char *rec = c->req->recorded_error;

	if (rc == MATE_ERR_UNSUPPORTED) {
		res->verdict = MATE_REPLAY_UNSUPPORTED;
		snprintf(res->message, sizeof(res->message), "%s", msg);
	} else if (c->req->expected == NULL && rc != MATE_ERR_LIMIT && rc != MATE_ERR_NOMEM &&
	    !c->short_of_memory) {  /* a replay short of memory reproduces nothing */
		res->verdict = MATE_REPLAY_REPRODUCED;
		snprintf(res->message, sizeof(res->message), "%.600s%s%.400s%s", msg,
		    rec ? " (recorded: " : "", rec ? rec : "", rec ? ")" : "");
	} else {
		res->verdict = MATE_REPLAY_ERROR;
		snprintf(res->message, sizeof(res->message), "%s", msg);
	}
}

/* The recorded signature, parsed: NULL with *rc MATE_OK when the call
 * names none (MATE and mate write "<unavailable>"). */
static struct mate_sig *
recorded_signature(const struct mate_replay_request *req, struct mate_replay_result *res, int *rc)
{
	const char *text = req->signature;
	struct mate_sig *sig;
	mate_error err;

	*rc = MATE_OK;
	if (text == NULL || *text == '\0' || strcmp(text, "<unavailable>") == 0)
		return NULL;
	mate_error_clear(&err);
	if ((sig = mate_sig_parse(text, &err)) == NULL) {
		*rc = MATE_ERR_UNSUPPORTED;
		res->verdict = MATE_REPLAY_UNSUPPORTED;
		snprintf(res->message, sizeof(res->message), "cannot read the recorded signature "
		    "%.300s: %s", text, err.message);
	}
	return sig;
}

/* The handler for req and the arguments it reads (in c->args): bound
 * through the recorded signature when the call names one and the handler
 * states its own. MATE_OK, or the verdict is in res. */
static const struct handler *
resolve(mate_replay *r, const struct mate_replay_request *req, mate_replay_call *c,
    struct mate_replay_result *res)
{
	struct sig_search search;
	const struct handler *h;
	mate_value *bound;
	mate_error err;
	char sig[300];
	int rc;

	memset(&search, 0, sizeof(search));
	if ((search.rec = recorded_signature(req, res, &rc)) == NULL && rc != MATE_OK)
		return NULL;
	h = each_candidate(r, req->module, req->function, implements, &search);
	res->verdict = MATE_REPLAY_UNSUPPORTED;
	if (h == NULL && search.tried == 0)
		snprintf(res->message, sizeof(res->message), "no replay handler for '%s'%s%s%s; "
		    "add one with a plugin (mate-replay --plugin LIB.so, see libmate(3))",
		    req->function ? req->function : "?", req->module ? " (module " : "",
		    req->module ? req->module : "", req->module ? ")" : "");
	else if (h == NULL) {
		mate_sig_format(search.rec, sig, sizeof(sig));
		snprintf(res->message, sizeof(res->message), "no replay handler implements %.100s%.200s "
		    "(%.600s)", req->function, sig, search.why);
	} else if (h->sig == NULL || search.rec == NULL) {
		if ((c->args = mate_value_copy(req->args)) == NULL) {  /* as recorded */
			res->verdict = MATE_REPLAY_ERROR;
			snprintf(res->message, sizeof(res->message), "out of memory");
		}
	} else {
		mate_error_clear(&err);
		if ((bound = mate_sig_bind(search.rec, req->args, &err)) == NULL) {
			mate_sig_format(search.rec, sig, sizeof(sig));
			res->verdict = MATE_REPLAY_ERROR;
			snprintf(res->message, sizeof(res->message), "the recorded arguments do not bind "
			    "to the recorded signature %s: %s", sig, err.message);
		} else if ((rc = mate_sig_arguments(h->sig, search.rec, bound, &c->args, sig,
		    sizeof(sig), c->note, sizeof(c->note))) != MATE_OK) {
			if (rc != MATE_ERR_UNSUPPORTED)
				res->verdict = MATE_REPLAY_ERROR;
			snprintf(res->message, sizeof(res->message), "%.100s: %s", req->function, sig);
		}
		mate_value_free(bound);
	}
	mate_sig_free((struct mate_sig *)search.rec);
	if (c->args == NULL)
		return NULL;
	res->verdict = MATE_REPLAY_PASSED;
	return h;
}

void
mate_replay_set_bench(mate_replay *r, int runs)
{
	r->bench_runs = runs > 0 ? runs : 0;
}

int
mate_replay_get_bench(const mate_replay *r)
{
	return r->bench_runs;
}

/* Bytes of the tensors in v (nested at most 8 deep). */
static int64_t
tensor_bytes(const mate_value *v, int depth)
{
	int64_t n = 0;

	if (v == NULL || depth > 8)
		return 0;
	if (mate_value_kind_of(v) == MATE_V_TENSOR)
		return mate_tensor_nbytes(mate_value_get_tensor(v));
	for (size_t i = 0; i < mate_value_len(v); i++)
		n += tensor_bytes(mate_value_item(v, i), depth + 1);
	return n;
}

/* --bench: one warm-up run, then r->bench_runs timed ones, each with fresh outputs; stops
 * at the first run that fails (the runs so far count). */
static void
bench(mate_replay *r, const struct handler *h, mate_replay_call *c,
    struct mate_replay_result *res)
{
	double *t = malloc((size_t)r->bench_runs * sizeof(*t)), t0;
	int n = 0;

	if (t == NULL)
		return;
	for (int i = -1; i < r->bench_runs; i++) {
		mate_value_free(c->outputs);
		mate_value_free(c->held);   /* the compared run's scratch is no longer needed */
		c->held = NULL;
		memset(&c->red, 0, sizeof(c->red));
		if ((c->outputs = mate_value_dict()) == NULL)
			break;
		c->message[0] = '\0';
		t0 = mate_mono_seconds();
		if (h->fn(c, h->ctx) != MATE_OK)
			break;
		if (i >= 0)
			t[n++] = mate_mono_seconds() - t0;
	}
	if (n > 0) {
		qsort(t, (size_t)n, sizeof(*t), mate_cmp_double);
		res->bench_runs = n;
		res->bench_min = t[0];
		res->bench_max = t[n - 1];
		res->bench_median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
		res->bench_bytes = tensor_bytes(c->args, 0) + tensor_bytes(c->outputs, 0);
		res->bench_flops = mate_op_flops(h->name, h->sigtext, c->args);
	}
	free(t);
}

int
mate_replay_execute(mate_replay *r, const struct mate_replay_request *req,
    struct mate_replay_result *res)
{
	return mate_replay_execute_outputs(r, req, res, NULL);
}

int
mate_replay_execute_outputs(mate_replay *r, const struct mate_replay_request *req,
    struct mate_replay_result *res, mate_value **outputs)
{
	const struct handler *h;
	mate_replay_call c;
	double t0;
	int rc;

	memset(res, 0, sizeof(*res));
	res->first_bad = res->first_nan = res->first_inf = -1;
	memset(&c, 0, sizeof(c));
	c.r = r;
	c.req = req;
	if ((h = resolve(r, req, &c, res)) == NULL)
		return MATE_OK;
	if (req->self_id != NULL)
		snprintf(c.objkey, sizeof(c.objkey), "%" PRId64 ":%s", req->process_id, req->self_id);
	if ((c.outputs = mate_value_dict()) == NULL) {
		res->verdict = MATE_REPLAY_ERROR;
		snprintf(res->message, sizeof(res->message), "out of memory");
		mate_value_free(c.args);
		return MATE_OK;
	}
	t0 = mate_mono_seconds();
	rc = h->fn(&c, h->ctx);
	res->seconds = mate_mono_seconds() - t0;
	if (rc != MATE_OK)
		judge_failure(&c, rc, res);
	else if (req->expected == NULL) {
		res->verdict = MATE_REPLAY_NOW_RUNS;
		snprintf(res->message, sizeof(res->message), "%s%s%s",
		    req->recorded_error ? "the recorded call failed (" :
		    "the recorded call never returned; the replay completed",
		    req->recorded_error ? req->recorded_error : "",
		    req->recorded_error ? "); the replay completed" : "");
	} else
		compare_outputs(r, &c, res);
	if (c.note[0] != '\0') {  /* what the verdict took as its default */
		size_t n = strlen(res->message);

		snprintf(res->message + n, sizeof(res->message) - n, "%s%s", n ? "; " : "", c.note);
	}
	if (rc == MATE_OK && r->bench_runs > 0)
		bench(r, h, &c, res);
	if (outputs != NULL && rc == MATE_OK) {
		*outputs = c.outputs;
		c.outputs = NULL;
	}
	mate_value_free(c.outputs);
	mate_value_free(c.args);
	mate_value_free(c.held);
	return MATE_OK;
}

/* The bytes v's tensors take once made whole beyond what their storages
 * hold: a view that repeats elements (stride 0) or overlaps itself, as a
 * hostile file can ask for, is materialised by the kernels and the
 * comparison. Saturates at UINT64_MAX. */
static uint64_t
expansion(const mate_value *v, int depth)
{
	mate_value_kind k = mate_value_kind_of(v);
	uint64_t sum = 0;

	if (k == MATE_V_TENSOR) {
		int64_t nb = mate_tensor_nbytes(mate_value_get_tensor(v));
		const mate_storage *st = mate_value_get_storage(v);
		uint64_t have = st != NULL ? mate_storage_size(st) : 0;

		if (nb < 0)
			return UINT64_MAX;
		return (uint64_t)nb > have ? (uint64_t)nb - have : 0;
	}
	if ((k != MATE_V_LIST && k != MATE_V_TUPLE && k != MATE_V_DICT) || depth > 64)
		return 0;
	for (size_t i = 0; i < mate_value_len(v); i++) {
		uint64_t e = expansion(mate_value_item(v, i), depth + 1);
		sum = e > UINT64_MAX - sum ? UINT64_MAX : sum + e;
	}
	return sum;
}

/* Refuses a call whose tensors would expand past mate_memory_cap(). */
static int
within_cap(const mate_value *args, const mate_value *expected, struct mate_replay_result *res)
{
	uint64_t a = expansion(args, 0), e = expected != NULL ? expansion(expected, 0) : 0;
	uint64_t cap = mate_memory_cap();

	if (a <= cap && e <= cap - a)
		return 1;
	snprintf(res->message, sizeof(res->message), "its tensors are views that would take "
	    "more than the memory limit of %" PRIu64 " MiB beyond what its files hold "
	    "(--max-memory or MATE_MAX_MEMORY raises it)", cap >> 20);
	return 0;
}

int
mate_replay_dump(mate_replay *r, const char *dir, struct mate_replay_result *res)
{
	mate_error err;
	mate_dump *d;
	mate_value *args = NULL, *expected = NULL;
	const struct mate_dump_info *info;
	struct mate_replay_request req;

	memset(res, 0, sizeof(*res));
	res->first_bad = res->first_nan = res->first_inf = -1;
	res->verdict = MATE_REPLAY_ERROR;
	mate_error_clear(&err);
	if ((d = mate_dump_open(dir, &err)) == NULL ||
	    (args = mate_dump_load_args(d, &err)) == NULL ||
	    mate_dump_load_outputs(d, &expected, &err) != MATE_OK) {
		size_t dl = strlen(dir);
		const char *msg = err.message;

		if (strncmp(msg, dir, dl) == 0 && msg[dl] == '/')
			msg += dl + 1;  /* the caller names the dump */
		snprintf(res->message, sizeof(res->message), "%s", msg);
		mate_value_free(args);
		mate_dump_free(d);
		return MATE_OK;
	}
	if (!within_cap(args, expected, res)) {
		mate_value_free(expected);
		mate_value_free(args);
		mate_dump_free(d);
		return MATE_OK;
	}
	info = mate_dump_get_info(d);
	memset(&req, 0, sizeof(req));
	req.function = info->function;
	req.module = info->module;
	req.signature = mate_dump_signature(d);
	req.self_id = info->self_id;
	req.process_id = info->process_id;
	req.args = args;
	req.expected = expected;
	req.recorded_error = info->status == MATE_DUMP_FAILED ?
	    (info->error ? info->error : "failed") : NULL;
	mate_replay_execute(r, &req, res);
	mate_value_free(expected);
	mate_value_free(args);
	mate_dump_free(d);
	return MATE_OK;
}

const mate_value *
mate_replay_call_recorded(const mate_replay_call *c, const char *key)
{
	return c->req->expected != NULL ? mate_value_lookup(c->req->expected, key) : NULL;
}

size_t
mate_replay_op_count(const mate_replay *r)
{
	return r != NULL ? r->nhandlers : 0;
}

int
mate_replay_op_get(const mate_replay *r, size_t i, struct mate_replay_op *op)
{
	const struct handler *h;

	if (r == NULL || op == NULL || i >= r->nhandlers)
		return MATE_ERR_ARGUMENT;
	h = &r->handlers[i];
	memset(op, 0, sizeof(*op));
	op->module = h->module;
	op->name = h->name;
	op->dtypes = mate_replay_builtin_info(h->name, &op->devices, &op->signature);
	if (h->sigtext != NULL)
		op->signature = h->sigtext;
	return MATE_OK;
}

void
mate_replay_set_reduction(mate_replay_call *c, const mate_tensor *a, const mate_tensor *b)
{
	c->red.a = a;
	c->red.b = b;
}

/* t's last two dimensions swapped (a view of its transpose). */
static void
transpose_last(mate_tensor *t)
{
	int64_t *sh = t->shape + t->ndim - 2, *st = t->stride + t->ndim - 2, x;

	x = sh[0], sh[0] = sh[1], sh[1] = x;
	x = st[0], st[0] = st[1], st[1] = x;
}

void
mate_replay_set_reduction_gemm(mate_replay_call *c, const mate_tensor *a, int ta,
    const mate_tensor *b, int tb, double alpha, double beta)
{
	int nd = a->ndim;
	int64_t k;

	if (nd != b->ndim || nd < 2 || !isfinite(alpha) || !isfinite(beta))
		return;     /* not a stored matrix: the dtype's tolerance */
	c->red.av = *a;
	c->red.bv = *b;
	if (ta)
		transpose_last(&c->red.av);
	if (tb)
		transpose_last(&c->red.bv);
	k = c->red.av.shape[nd - 1];
	c->red.a = &c->red.av;
	c->red.b = &c->red.bv;
	/* alpha (A B) and beta C add two roundings to the K-term sum; |beta C| is at most
	 * |expected| + |alpha| (|A| |B|) */
	c->red.scale = (alpha != 0 ? fabs(alpha) : 1) * (beta != 0 ? 2 : 1) *
	    (k > 0 ? (double)(k + 2) / (double)k : 1);
	c->red.relative = beta != 0;
}

void
mate_replay_set_reduction_unit(mate_replay_call *c, double u)
{
	if (u > 0 && u < 1)
		c->red.gemm_u = u;
}

mate_value *
mate_replay_hold(mate_replay_call *c, mate_value *v)
{
	if (v == NULL)
		return NULL;
	if (c->held == NULL && (c->held = mate_value_list()) == NULL)
		mate_value_free(v);
	else if (mate_value_append(c->held, v) == MATE_OK)   /* else it freed v */
		return v;
	mate_replay_fail(c, MATE_ERR_NOMEM, "%s: out of memory", c->req->function);
	return NULL;
}

void
mate_replay_set_exact(mate_replay_call *c)
{
	c->exact = 1;
}

void
mate_replay_set_reduction_sum(mate_replay_call *c, int64_t k, double magnitude, int relative,
    mate_dtype acc)
{
	if (k < 1 || !isfinite(magnitude) || magnitude < 0)
		return;     /* no bound: the dtype's tolerance */
	c->red.a = c->red.b = NULL;
	c->red.k = k;
	c->red.magnitude = magnitude;
	c->red.relative = relative;
	c->red.u = acc == MATE_F64 ? 0x1p-53 : 0x1p-24;
}

double
mate_replay_max_abs(const mate_tensor *t)
{
	int64_t n = mate_tensor_numel(t);
	double m = 0;

	if (t == NULL || t->device_type != MATE_DEVICE_CPU || mate_dtype_kind(t->dtype) != MATE_KIND_FLOAT)
		return NAN;
	for (int64_t i = 0; i < n; i++) {
		double x = fabs(mate_load_f64(t->dtype, mate_tensor_element(t, i)));

		if (isfinite(x) && x > m)
			m = x;
	}
	return m;
}

int
mate_replay_kernel_done(mate_replay_call *c, int rc, const mate_error *err, mate_value *result)
{
	if (rc != MATE_OK) {
		mate_value_free(result);
		return mate_replay_fail(c, rc, "%s: %s", c->req->function, err->message);
	}
	return mate_replay_return(c, result != NULL ? result : mate_value_none());
}
