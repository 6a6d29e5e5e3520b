/* events_call.c: recorded calls as events: per-thread call ids and depths (RECV/SEND), and the public work API (WORKER_SEND/WORKER_RECV). */
#include "events_private.h"

#include <string.h>

static struct mate_ev_frame *
find(struct mate_ev_thread *t, const mate_call *c, int *depth)
{
	int top = t->depth < MATE_EV_FRAMES ? t->depth : MATE_EV_FRAMES;

	for (int i = top - 1; i >= 0; i--)
		if (t->f[i].c == c) {
			*depth = i;
			return &t->f[i];
		}
	return NULL;
}

/* The first call of a thread (its block is allocated here), or one past
 * MATE_EV_FRAMES deep (counted, not tracked). */
void
mate_ev_call_begin_slow(const mate_call *c, const char *name)
{
	struct mate_ev_thread *t = mate_ev_me();

	if (t == NULL) {
		mate_ev_drop_untracked();   /* no memory: the thread's calls are not tracked */
		return;
	}
	if (t->depth >= MATE_EV_FRAMES) {
		t->depth++;
		return;
	}
	mate_ev_call_begin(c, name);
}

/* A call someone takes: its id, and its name for its events. */
void
mate_ev_call_track(struct mate_ev_frame *f, const char *name)
{
	size_t n;

	f->id = mate_ev_next_id();
	f->in_bytes = f->out_bytes = 0;
	f->recv_sent = 0;
	f->args_len = f->args_cut = 0;
	f->args_hash = 2166136261u;
	f->args[0] = '\0';
	n = strnlen(name, sizeof(f->name) - 1);
	memcpy(f->name, name, n);
	f->name[n] = '\0';
}

/* Appends an argument's dtype and shape ("F32:4x64", "F32" for a scalar, ";" before all but
 * the first) to the call's args, and to their hash: no blank, ',' or ']', which end a
 * detail's value (mate_ilog_detail()). */
static void
add_shape(struct mate_ev_frame *f, const mate_tensor *t)
{
	char piece[16 + 21 * MATE_MAX_DIMS], *o = piece, *end = piece + sizeof(piece);
	size_t n;

	if (f->args_len > 0 || f->args_cut)
		o = mate_put_str(o, end, ";");
	o = mate_put_str(o, end, mate_dtype_safetensors_name(t->dtype));
	for (int d = 0; d < t->ndim; d++)      /* F4 counts values, two a byte: safetensors' */
		o = mate_put_i64(mate_put_str(o, end, d > 0 ? "x" : ":"), end, t->shape[d] *
		    (t->dtype == MATE_F4_E2M1FN_X2 && d == t->ndim - 1 ? 2 : 1));
	n = (size_t)(o - piece);
	/* room for the "~" and 8 hex digits that end a cut list */
	if (!f->args_cut && f->args_len + n + 10 <= sizeof(f->args)) {
		memcpy(f->args + f->args_len, piece, n);
		f->args_len = (uint8_t)(f->args_len + n);
		f->args[f->args_len] = '\0';
		return;
	}
	if (!f->args_cut)   /* hashed from the first cut on: what came before is in args */
		f->args_hash = (uint32_t)mate_fnv1a(f->args, f->args_len, f->args_hash, 16777619u);
	f->args_cut = 1;
	f->args_hash = (uint32_t)mate_fnv1a(piece, n, f->args_hash, 16777619u);
}

/* The call's args as its RECV says them. */
static const char *
args_text(struct mate_ev_frame *f)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = f->args_len < sizeof(f->args) - 10 ? f->args_len : sizeof(f->args) - 10;
	char *o = f->args + len;

	if (f->args_cut) {
		*o++ = '~';
		for (int i = 7; i >= 0; i--)
			*o++ = hex[(f->args_hash >> (4 * i)) & 15];
		*o = '\0';
	}
	return f->args;
}

void
mate_ev_call_tensor(const mate_call *c, int flags, const mate_tensor *tensor)
{
	struct mate_ev_thread *t = mate_ev_me_;
	struct mate_ev_frame *f;
	int depth, role = flags & 0x0f;
	int64_t n;

	if (tensor == NULL || t == NULL || (f = find(t, c, &depth)) == NULL || f->id == 0 ||
	    role == MATE_DEFAULT)
		return;
	if (role != MATE_RESULT && !f->recv_sent)
		add_shape(f, tensor);
	n = mate_tensor_nbytes(tensor);
	if (n <= 0)
		return;
	if (role == MATE_RESULT || (flags & MATE_INPLACE))
		f->out_bytes += n;
	if (role != MATE_RESULT)
		f->in_bytes += n;
}

static void
send_recv(struct mate_ev_frame *f, int depth)
{
	if (f->recv_sent)
		return;
	f->recv_sent = 1;
	mate_ev_call(MATE_EV_RECV, f->id, f->name, depth, f->in_bytes, 1, NULL, args_text(f));
}

void
mate_ev_call_ready(const mate_call *c)
{
	struct mate_ev_thread *t = mate_ev_me_;
	struct mate_ev_frame *f;
	int depth;

	if (t != NULL && (f = find(t, c, &depth)) != NULL && f->id != 0)
		send_recv(f, depth);
}

void
mate_ev_call_end_slow(const mate_call *c, int ok, const char *error)
{
	struct mate_ev_thread *t = mate_ev_me_;
	struct mate_ev_frame *f;
	int depth;

	if (t == NULL)
		return;
	if ((f = find(t, c, &depth)) == NULL) {
		if (t->depth > MATE_EV_FRAMES)
			t->depth--;
		return;
	}
	if (f->id == 0) {
		t->depth = depth;
		return;
	}
	if (error == NULL || error[0] == '\0')
		error = "failed";
	if (f->recv_sent)
		mate_ev_call(MATE_EV_SEND, f->id, f->name, depth, f->out_bytes, ok,
		    ok ? NULL : error, NULL);
	else   /* never ready: RECV and SEND go together, one clock reading */
		mate_ev_call_pair(f->id, f->name, depth, f->in_bytes, f->out_bytes, ok,
		    ok ? NULL : error, args_text(f));
	t->depth = depth;   /* calls left open inside it end with it */
}

/* ---- public ------------------------------------------------------------------------- */

uint64_t
mate_call_id(const mate_call *c)
{
	struct mate_ev_thread *t = mate_ev_me_;
	struct mate_ev_frame *f;
	int depth;

	if (c == NULL || !MATE_EV_ON() || t == NULL || (f = find(t, c, &depth)) == NULL)
		return 0;
	return f->id;   /* 0 for a call begun while no one listened */
}

static void
copy_name(char *dst, size_t cap, const char *s, const char *dflt)
{
	size_t n;

	if (s == NULL || s[0] == '\0')
		s = dflt;
	n = strnlen(s, cap - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
}

void
mate_work_begin(mate_work *w, uint64_t call, const char *worker, const char *op,
    int64_t bytes)
{
	if (w == NULL)
		return;
	w->id = 0;
	if (!MATE_EV_ON())
		return;
	w->call = call;
	w->id = mate_ev_next_id();
	copy_name(w->worker, sizeof(w->worker), worker, mate_ev_thread_id());
	copy_name(w->op, sizeof(w->op), op, "work");
	mate_ev_work(MATE_EV_WORKER_SEND, w->call, w->id, w->worker, w->op, bytes, 1);
}

void
mate_work_end(mate_work *w, int64_t bytes, int ok)
{
	if (w == NULL || w->id == 0)
		return;
	mate_ev_work(MATE_EV_WORKER_RECV, w->call, w->id, w->worker, w->op, bytes, ok);
	w->id = 0;
}
