/* monitor.c: the ZeroMQ publisher of live events: a per-process ipc endpoint in the user's runtime directory (tcp when asked), JSON frames, drops counted. */
#include "events_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#define MON_LINGER_MS 2000     /* at the end, for the queued frames to go out to a subscriber */
#define MON_HWM_DEFAULT 100000
#define MON_SKIP 256            /* frames dropped unformatted after a refusal */

struct mate_mon {
	void *ctx, *pub;
	char dir[256];
	char ipc_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char info_path[300];
	double start_real;
	uint64_t drops;
	int skip;                   /* frames to drop unformatted after a refusal */
	int subscribers;
	long pid;
	char program[64];
	char session[17];           /* random, per publisher: in every frame and the .info file */
	char mid[128];              /* ,"session":"X","pid":N,"start":S,"dropped": (every frame's) */
	char tail[64 + 6 * 64];     /* ,"rank":R,"world":W,"program":"..."}, room for a name of
	                             * control characters */
	int rank, world;            /* -1 and 0 where unknown */
	size_t mid_len, tail_len;
	char bound[256];            /* the tcp endpoint bound, or "" */
};

static char *json_str(char *o, char *end, const char *key, const char *s);


/* ---- the runtime directory ------------------------------------------------------ */

int
mate_mon_runtime_dir(char *buf, size_t cap, int create)
{
	const char *d = getenv("MATE_MONITOR_DIR"), *x;
	struct stat st;
	int n;

	if (d != NULL && d[0] != '\0')
		n = snprintf(buf, cap, "%s", d);
	else if ((x = getenv("XDG_RUNTIME_DIR")) != NULL && x[0] == '/' &&
	    stat(x, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid())
		n = snprintf(buf, cap, "%s/mate", x);
	else
		n = snprintf(buf, cap, "/tmp/mate-%lu", (unsigned long)getuid());
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (create && mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* someone else's directory, or one others can write: not ours to use */
	if (st.st_uid != getuid() || (st.st_mode & 077) != 0)
		return -EPERM;
	return 0;
}

uint64_t
mate_proc_start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command may hold spaces and parentheses: fields follow the last ')' */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (field = 2; *p != '\0' && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || sscanf(p, "%llu", &ticks) != 1)
		return 0;
	return ticks;
}

/* ---- MATE_MONITOR ------------------------------------------------------------------- */

static int
valid_port(const char *s)
{
	char *end;
	long v;

	if (strcmp(s, "*") == 0)
		return 1;
	v = strtol(s, &end, 10);
	return end != s && *end == '\0' && v >= 0 && v <= 65535;
}

int
mate_mon_parse_spec(const char *spec, char *tcp, size_t cap)
{
	const char *hostport, *colon;
	int n;

	tcp[0] = '\0';
	if (strcmp(spec, "1") == 0 || strcmp(spec, "ipc") == 0 || strcmp(spec, "yes") == 0)
		return 0;
	if (strcmp(spec, "tcp") == 0)
		n = snprintf(tcp, cap, "tcp://127.0.0.1:*");
	else if (strncmp(spec, "tcp:", 4) == 0 && strncmp(spec, "tcp://", 6) != 0) {
		if (!valid_port(spec + 4))
			return -1;
		n = snprintf(tcp, cap, "tcp://127.0.0.1:%s", strcmp(spec + 4, "0") == 0 ? "*" : spec + 4);
	} else if (strncmp(spec, "tcp://", 6) == 0) {
		hostport = spec + 6;
		colon = strrchr(hostport, ':');
		if (colon == NULL || !valid_port(colon + 1))
			return -1;
		if (colon == hostport || (colon - hostport == 1 && hostport[0] == '*'))
			n = snprintf(tcp, cap, "tcp://127.0.0.1:%s", colon + 1);  /* loopback unless named */
		else
			n = snprintf(tcp, cap, "%s", spec);
	} else
		return -1;
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* ---- starting ------------------------------------------------------------------------- */

static int
hwm_setting(void)
{
	long v;
	int rc = mate_env_long("MATE_MONITOR_HWM", 1, 10000000, &v);

	if (rc < 0)
		mate_warn("monitor: bad MATE_MONITOR_HWM value '%s' (want 1..10000000); using %d",
		    getenv("MATE_MONITOR_HWM"), MON_HWM_DEFAULT);
	return rc > 0 ? (int)v : MON_HWM_DEFAULT;
}

/* MATE_MONITOR_CURVE_SECRET_KEY: makes the endpoints bound from now on
 * (the tcp one; the ipc one is bound before) CURVE servers. 0 when unset
 * or set; -1 (warned) for a value that is not a Z85 key. */
static int
curve_setting(void *pub)
{
	const char *key = getenv("MATE_MONITOR_CURVE_SECRET_KEY");
	uint8_t raw[32];
	int one = 1;

	if (key == NULL || *key == '\0')
		return 0;
	if (strlen(key) != 40 || zmq_z85_decode(raw, key) == NULL ||
	    zmq_setsockopt(pub, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0 ||
	    zmq_setsockopt(pub, ZMQ_CURVE_SECRETKEY, key, 40) != 0) {
		mate_warn("monitor: MATE_MONITOR_CURVE_SECRET_KEY is not a 40-character Z85 CURVE "
		    "key%s; no tcp endpoint", zmq_has("curve") ? "" : " (this libzmq has no CURVE)");
		return -1;
	}
	return 0;
}

/* Writes the endpoint's description next to it, atomically. */
static void
write_info(struct mate_mon *m, const char *tcp_bound)
{
	char tmp[320], text[1024];
	int fd, n;

	n = snprintf(text, sizeof(text),
	    "pid=%ld\nstart_ticks=%llu\nstart=%.6f\nsession=%s\nprogram=%s\nendpoint=ipc://%s\n",
	    m->pid, (unsigned long long)mate_proc_start_ticks((pid_t)m->pid), m->start_real,
	    m->session, m->program, m->ipc_path);
	if (m->rank >= 0 && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "rank=%d\nworld=%d\n", m->rank,
		    m->world);
	if (tcp_bound[0] != '\0' && n > 0 && (size_t)n < sizeof(text))
		n += snprintf(text + n, sizeof(text) - (size_t)n, "endpoint=%s\n", tcp_bound);
	snprintf(tmp, sizeof(tmp), "%s.tmp", m->info_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || n <= 0 || (size_t)n >= sizeof(text) ||
	    mate_write_all(fd, text, (size_t)n) != 0 || close(fd) != 0 ||
	    rename(tmp, m->info_path) != 0) {
		mate_warn("monitor: cannot write %s: %s; local tools will not find this process",
		    m->info_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		m->info_path[0] = '\0';
	}
}

static int
bind_ipc(struct mate_mon *m)
{
	char ep[sizeof(m->ipc_path) + 8];
	int rc = mate_mon_runtime_dir(m->dir, sizeof(m->dir), 1);

	if (rc != 0) {
		mate_warn("monitor: runtime directory %s: %s; no local endpoint", m->dir,
		    strerror(-rc));
		return -1;
	}
	if ((size_t)snprintf(m->ipc_path, sizeof(m->ipc_path), "%s/%ld.ipc", m->dir, m->pid) >=
	    sizeof(m->ipc_path)) {
		mate_warn("monitor: runtime directory %s: path too long for a socket; no local endpoint",
		    m->dir);
		m->ipc_path[0] = '\0';
		return -1;
	}
	unlink(m->ipc_path);   /* a dead process of the same pid left it */
	snprintf(ep, sizeof(ep), "ipc://%s", m->ipc_path);
	if (zmq_bind(m->pub, ep) != 0) {
		mate_warn("monitor: cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
		m->ipc_path[0] = '\0';
		return -1;
	}
	snprintf(m->info_path, sizeof(m->info_path), "%s/%ld.info", m->dir, m->pid);
	return 0;
}

/* A publisher's session: 64 random bits as hex. A subscriber that found
 * the publisher by its .info file (readable by its user alone) takes only
 * frames that carry it: another publisher cannot speak for this one, a
 * DISCONNECT included, without reading the stream or the file. */
static void
new_session(char *out, size_t cap)
{
	uint64_t r = 0;
	struct timespec ts;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* no entropy yet: still unlikely to be guessed by another process */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 16) ^
		    (uint64_t)(uintptr_t)&ts;
		r *= 0x9E3779B97F4A7C15ull;
	}
	snprintf(out, cap, "%016llx", (unsigned long long)r);
}

/* Every frame's end: ,"rank":R,"world":W (when known),"program":"..."} */
static void
make_tail(struct mate_mon *m)
{
	char *o = m->tail, *end = m->tail + sizeof(m->tail) - 2;

	if (m->rank >= 0) {
		o = mate_put_key_i64(o, end, ",\"rank\":", m->rank);
		o = mate_put_key_i64(o, end, ",\"world\":", m->world);
	}
	o = json_str(o, end, ",\"program\":", m->program);
	*o++ = '}';
	m->tail_len = (size_t)(o - m->tail);
}

void
mate_mon_set_rank(struct mate_mon *m, const struct mate_ev_rank *rank)
{
	if (m->rank >= 0 || rank->rank < 0)
		return;
	m->rank = rank->rank;
	m->world = rank->world;
	make_tail(m);
	if (m->info_path[0] != '\0')
		write_info(m, m->bound);
}

struct mate_mon *
mate_mon_start(const char *tcp, double start_real, const struct mate_ev_rank *rank)
{
	extern char *program_invocation_short_name;
	struct mate_mon *m = calloc(1, sizeof(*m));
	int hwm = hwm_setting(), one = 1, linger = MON_LINGER_MS, ok_ipc;
	char bound[256] = "";
	size_t blen = sizeof(bound);

	if (m == NULL)
		return NULL;
	m->pid = (long)getpid();
	m->start_real = start_real;
	m->rank = rank->rank;
	m->world = rank->world;
	snprintf(m->program, sizeof(m->program), "%s", program_invocation_short_name);
	mate_clean_name(m->program);
	new_session(m->session, sizeof(m->session));
	m->mid_len = (size_t)snprintf(m->mid, sizeof(m->mid),
	    ",\"session\":\"%s\",\"pid\":%ld,\"start\":%.6f,\"dropped\":", m->session, m->pid,
	    m->start_real);
	make_tail(m);
	if ((m->ctx = zmq_ctx_new()) == NULL || (m->pub = zmq_socket(m->ctx, ZMQ_XPUB)) == NULL) {
		mate_warn("monitor: cannot create a ZeroMQ socket: %s", zmq_strerror(zmq_errno()));
		goto fail;
	}
	zmq_setsockopt(m->pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(m->pub, ZMQ_XPUB_NODROP, &one, sizeof(one));
	zmq_setsockopt(m->pub, ZMQ_LINGER, &linger, sizeof(linger));
	ok_ipc = bind_ipc(m) == 0;
	if (tcp != NULL && tcp[0] != '\0') {
		if (curve_setting(m->pub) != 0) {
			if (!ok_ipc)
				goto fail;
		} else if (zmq_bind(m->pub, tcp) != 0) {
			mate_warn("monitor: cannot bind %s: %s", tcp, zmq_strerror(zmq_errno()));
			if (!ok_ipc)
				goto fail;
		} else {
			zmq_getsockopt(m->pub, ZMQ_LAST_ENDPOINT, bound, &blen);
		}
	} else if (!ok_ipc)
		goto fail;
	snprintf(m->bound, sizeof(m->bound), "%s", bound);
	if (ok_ipc)
		write_info(m, bound);
	/* said once the .info file is in place: a script that waits for the
	 * line can read the file */
	if (bound[0] != '\0')
		mate_warn("monitor: publishing on %s", bound);
	return m;
fail:
	if (m->pub != NULL)
		zmq_close(m->pub);
	if (m->ctx != NULL)
		zmq_ctx_term(m->ctx);
	free(m);
	return NULL;
}

/* ---- running ---------------------------------------------------------------------------- */

int
mate_mon_poll(struct mate_mon *m, int wake_fd, int timeout_ms)
{
	zmq_pollitem_t it[2] = { { m->pub, 0, ZMQ_POLLIN, 0 }, { NULL, wake_fd, ZMQ_POLLIN, 0 } };
	unsigned char msg[256];

	if (zmq_poll(it, wake_fd >= 0 ? 2 : 1, timeout_ms) > 0 && (it[0].revents & ZMQ_POLLIN)) {
		int n;
		while ((n = zmq_recv(m->pub, msg, sizeof(msg), ZMQ_DONTWAIT)) >= 0) {
			if (n >= 1 && msg[0] == 1)
				m->subscribers++;
			else if (n >= 1 && msg[0] == 0 && m->subscribers > 0)
				m->subscribers--;
		}
	}
	return m->subscribers > 0;
}

/* Where json_str() writes: o up to end, keeping a byte for the closing
 * quote; a piece that does not fit ends the string there. */
struct span {
	char *o, *end;
};

static void
span_put(void *ctx, const char *p, size_t n)
{
	struct span *s = ctx;

	if ((size_t)(s->end - s->o) > n) {
		memcpy(s->o, p, n);
		s->o += n;
	} else if (s->end > s->o) {
		*s->o++ = '"';
		s->end = s->o;
	}
}

/* Appends key, then s as a JSON string (quotes, escapes), at o, bounded by end. */
static char *
json_str(char *o, char *end, const char *key, const char *s)
{
	struct span sp = { mate_put_str(o, end, key), end };

	mate_json_string(s, strlen(s), 0, span_put, &sp);
	return sp.o;
}

void
mate_mon_send(struct mate_mon *m, const struct mate_ev_rec *r, int last)
{
	/* every field is bounded (struct mate_ev_rec, mid, tail): even escaped
	 * (6 bytes a character), all fits: 6 * 280 + 128 + 448 + 200 < 4088 */
	char frame[4096], *o = frame, *end = frame + sizeof(frame) - 8;
	uint64_t ns = r->t_ns % 1000000000u;

	o = mate_put_key_u64(o, end, "{\"seq\":", r->seq);
	o = mate_put_key_u64(o, end, ",\"timestamp\":", r->t_ns / 1000000000u);
	*o++ = '.';
	for (uint64_t d = 100000000u; d > 0; d /= 10)
		*o++ = (char)('0' + ns / d % 10);
	o = json_str(o, end, ",\"event\":", r->event);
	o = json_str(o, end, ",\"client\":", r->source);
	o = json_str(o, end, ",\"command\":", r->command);
	o = json_str(o, end, ",\"details\":", r->details);
	o = mate_put_key_i64(o, end, ",\"size_bytes\":", r->size);
	memcpy(o, m->mid, m->mid_len);
	o += m->mid_len;
	o = mate_put_u64(o, end, m->drops);
	memcpy(o, m->tail, m->tail_len);
	o += m->tail_len;
	/* The last frame (DISCONNECT, with the final drop count) waits up to
	 * 1 s for room: a live subscriber behind by a full queue (100,000
	 * frames) needs that long at 100,000 frames a second; 0.2 s lost it
	 * under ASan on a loaded machine. A stalled one delays the exit by 1 s. */
	for (int tries = 0; zmq_send(m->pub, frame, (size_t)(o - frame), ZMQ_DONTWAIT) < 0; tries++) {
		if (!last || tries >= 100) {
			m->drops++;
			m->skip = MON_SKIP;
			return;
		}
		zmq_poll(NULL, 0, 10);   /* the last frame waits a little for room */
	}
}

int
mate_mon_skip(struct mate_mon *m)
{
	if (m->skip <= 0)
		return 0;
	m->skip--;
	m->drops++;
	return 1;
}

void
mate_mon_add_drops(struct mate_mon *m, uint64_t n)
{
	m->drops += n;
}

uint64_t
mate_mon_drops(const struct mate_mon *m)
{
	return m->drops;
}

void
mate_mon_stop(struct mate_mon *m)
{
	if (m == NULL)
		return;
	/* the frames still queued (DISCONNECT last) go out first, for up to MON_LINGER_MS:
	 * a subscriber that saw the endpoint's files go would stop reading before they
	 * came (a rank's last 5,000 events, lost without a count) */
	zmq_close(m->pub);
	zmq_ctx_term(m->ctx);
	if (m->info_path[0] != '\0')
		unlink(m->info_path);
	if (m->ipc_path[0] != '\0')
		unlink(m->ipc_path);
	free(m);
}

void
mate_mon_forget(struct mate_mon *m)
{
	/* the parent's context and its threads are not ours: leave them be */
	free(m);
}
