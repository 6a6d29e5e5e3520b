/* subscribe.c: the subscriber side of live events: finding local publishers (one SUB socket), endpoints named by the caller (a socket each, so that a frame's host is known), each host's clock, JSON frames to events, time-ordered merging. */
#include "events_private.h"
#include "mate_events.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#define FRAME_MAX 8192          /* larger frames are not ours: skipped */
#define RESCAN_MS 100
#define RESCAN_OTHERS 10        /* other users' folders: every tenth scan */
#define OTHERS_DEFAULT "/run/user/*/mate:/tmp/mate-*"
#define LAG_MS_DEFAULT 100
#define HELD_MAX 1000000        /* events held for ordering, at most */
#define HELD_BYTES_MAX (64u << 20)  /* and their bytes, at most */
#define RCV_HWM 16384           /* frames ZeroMQ queues for us (each <= FRAME_MAX) */
#define PUBS_MAX 4096           /* publishers followed, at most */
#define GONE_QUIET 0.5          /* s: a process gone without its DISCONNECT has ended
                                 * once nothing came from it for this long (its
                                 * last frames may still be in the socket) */
#define CONNS_MAX 1024          /* endpoints named by the caller, at most */
#define CLOCK_AGREE 1.0         /* seconds: a host whose first frame arrives within
                                 * this of its time keeps its clock (as NTP keeps
                                 * hosts within milliseconds; the rest is the way) */
#define CLOCK_MOVED 5.0         /* seconds: a later process of a host whose first frame
                                 * differs this much from the host's clock started
                                 * after that clock was set (stepped): its own */

struct pub {
	long pid;
	double start;               /* on this machine's clock */
	double raw_start;           /* as its frames say (on its host's clock) */
	double offset;              /* seconds added to its times (its host's, or its own
	                             * where its host's clock was stepped after) */
	int offset_known;
	char *endpoint;             /* as connected ("" until known for frames) */
	char *info;                 /* its .info file, where found in a folder; or NULL */
	char program[64];
	char session[24];           /* from its .info file or its first frame: frames
	                             * that claim its pid with another are not its */
	uint64_t events, dropped, lost, first_seq, last_seq;
	int ended;
	int connected;
	int rank, world;            /* from the first frame with one: rank -1 (world 0) for none */
	int conn;                   /* its endpoint's socket (m->conns), -1: the local one */
	double gone;                /* monotonic s: when its endpoint went away (0: not) */
	int said_end;               /* its DISCONNECT came: its stream is whole */
	double last_rx;             /* monotonic s: its last frame's arrival */
};

/* An endpoint named by the caller (mate_monitor_add_endpoint()): a socket of its own,
 * so that its frames' host is the one the caller named, whatever they say. */
struct conn {
	void *sock;
	char *url;
	char *host;                 /* of a tcp url; "" for ipc (this machine); its own
	                             * allocation, so that it stays where it is */
	double added, last;         /* monotonic seconds: when added, its last frame (0: none) */
	uint64_t frames, foreign;   /* frames taken; frames that were not mate's */
	double offset;              /* seconds added to its times: this host's clock minus
	                             * its (0 where within CLOCK_AGREE) */
	int offset_known;
	int moved;                  /* its later processes whose clock differed (CLOCK_MOVED) */
	double moved_by;            /* the last one's difference from offset */
};

/* One held event: its fields packed in one allocation. */
struct held {
	double t;                   /* seconds since the base */
	uint64_t order;             /* arrival order: ties keep it */
	double arrived;             /* monotonic seconds */
	size_t bytes;               /* of this allocation */
	mate_live_event le;
	char text[];                /* event, source, command, details */
};

struct mate_monitor {
	void *ctx, *sub;
	struct pub *pubs;
	int npubs, cap_pubs;
	struct conn *conns;
	int nconns, cap_conns;
	zmq_pollitem_t *items;      /* the local socket's, then each conn's */
	long *want_pids;
	int nwant, cap_want;
	int watch_all;
	int all_users;              /* mate_monitor_watch_all_users() */
	unsigned scans;
	char dir[256];
	double next_scan;
	double base;                /* 0 until set */
	int flushing;
	double lag;
	char warning[160];          /* about a bad MATE_MONITOR_LAG_MS, or "" */
	double now;                 /* the clock's last reading (monotonic seconds) */
	struct held **heap;
	size_t nheld, cap_held;
	size_t held_bytes;          /* of the held events, at most HELD_BYTES_MAX (about) */
	double flush_until;         /* flushing: the socket is read until then */
	const char *curve_server;   /* MATE_MONITOR_CURVE_SERVER_KEY, or NULL */
	uint64_t order;
	struct held *current;       /* returned last: freed at the next call */
	char *frame, *scratch;
};

static int
nomem(mate_error *err)
{
	return mate_set_error(err, MATE_ERR_NOMEM, "monitor: out of memory");
}

/* MATE_MONITOR_LAG_MS in seconds: the default, with a warning, unless it is
 * a number of milliseconds from 0 to 60000. */
static double
lag_from_env(const char *text, char *warning, size_t size)
{
	char *end;
	double ms;

	warning[0] = '\0';
	if (text == NULL || *text == '\0')
		return LAG_MS_DEFAULT / 1000.0;
	ms = strtod(text, &end);
	if (end != text && *end == '\0' && ms >= 0 && ms <= 60000)
		return ms / 1000.0;
	snprintf(warning, size, "bad MATE_MONITOR_LAG_MS value '%.40s' (want milliseconds, "
	    "0..60000); using %d", text, LAG_MS_DEFAULT);
	return LAG_MS_DEFAULT / 1000.0;
}

/* A SUB socket that takes every frame. */
static void *
sub_socket(mate_monitor *m)
{
	int zero = 0, hwm = RCV_HWM;
	int64_t max_frame = FRAME_MAX;
	void *s = zmq_socket(m->ctx, ZMQ_SUB);

	if (s == NULL)
		return NULL;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	/* memory: a flooding publisher fills these and then drops (its
	 * sequence gaps are counted as lost); a larger frame is not ours */
	zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_frame, sizeof(max_frame));
	zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
	return s;
}

mate_monitor *
mate_monitor_new(mate_error *err)
{
	mate_monitor *m = calloc(1, sizeof(*m));
	const char *lag = getenv("MATE_MONITOR_LAG_MS");

	if (m == NULL || (m->frame = malloc(FRAME_MAX + 1)) == NULL ||
	    (m->scratch = malloc(FRAME_MAX + 1)) == NULL) {
		if (m != NULL)
			free(m->frame);
		free(m);
		nomem(err);
		return NULL;
	}
	m->lag = lag_from_env(lag, m->warning, sizeof(m->warning));
	if ((m->curve_server = getenv("MATE_MONITOR_CURVE_SERVER_KEY")) != NULL &&
	    *m->curve_server == '\0')
		m->curve_server = NULL;
	m->now = mate_mono_seconds();
	if ((m->ctx = zmq_ctx_new()) == NULL || (m->sub = sub_socket(m)) == NULL) {
		mate_set_error(err, MATE_ERR_IO, "monitor: cannot create a ZeroMQ socket: %s",
		    zmq_strerror(zmq_errno()));
		mate_monitor_free(m);
		return NULL;
	}
	if (mate_mon_runtime_dir(m->dir, sizeof(m->dir), 0) != 0 && m->dir[0] == '\0')
		snprintf(m->dir, sizeof(m->dir), "/tmp/mate-%lu", (unsigned long)getuid());
	return m;
}

const char *
mate_monitor_warning(const mate_monitor *m)
{
	return m != NULL && m->warning[0] != '\0' ? m->warning : NULL;
}

void
mate_monitor_free(mate_monitor *m)
{
	if (m == NULL)
		return;
	if (m->sub != NULL)
		zmq_close(m->sub);
	for (int i = 0; i < m->nconns; i++) {
		zmq_close(m->conns[i].sock);
		free(m->conns[i].url);
		free(m->conns[i].host);
	}
	free(m->conns);
	free(m->items);
	if (m->ctx != NULL)
		zmq_ctx_term(m->ctx);
	for (int i = 0; i < m->npubs; i++) {
		free(m->pubs[i].endpoint);
		free(m->pubs[i].info);
	}
	free(m->pubs);
	free(m->want_pids);
	for (size_t i = 0; i < m->nheld; i++)
		free(m->heap[i]);
	free(m->heap);
	free(m->current);
	free(m->frame);
	free(m->scratch);
	free(m);
}

/* ---- publishers ------------------------------------------------------------------- */

static struct pub *
pub_add(mate_monitor *m, long pid, double start, const char *endpoint, int conn)
{
	struct pub *p;

	if (m->npubs >= PUBS_MAX)
		return NULL;
	if (m->npubs == m->cap_pubs) {
		int cap = m->cap_pubs ? m->cap_pubs * 2 : 8;
		p = realloc(m->pubs, (size_t)cap * sizeof(*p));
		if (p == NULL)
			return NULL;
		m->pubs = p;
		m->cap_pubs = cap;
	}
	p = &m->pubs[m->npubs];
	memset(p, 0, sizeof(*p));
	if ((p->endpoint = strdup(endpoint != NULL ? endpoint : "")) == NULL)
		return NULL;
	p->pid = pid;
	p->start = p->raw_start = start;
	p->rank = -1;
	p->conn = conn;
	m->npubs++;
	return p;
}

static struct pub *
pub_find_endpoint(mate_monitor *m, const char *endpoint)
{
	for (int i = 0; i < m->npubs; i++)
		if (strcmp(m->pubs[i].endpoint, endpoint) == 0)
			return &m->pubs[i];
	return NULL;
}

/* The publisher a frame that came in on conn (-1: the local socket) comes from:
 * by pid and start among that socket's, else its endpoint's entry whose identity
 * is not known yet, else a new entry (two hosts may have a process of one pid). */
static struct pub *
pub_for_frame(mate_monitor *m, long pid, double start, int conn)
{
	for (int i = 0; i < m->npubs; i++)
		if (m->pubs[i].conn == conn && m->pubs[i].pid == pid &&
		    (m->pubs[i].raw_start == 0 || m->pubs[i].raw_start == start)) {
			m->pubs[i].start = m->pubs[i].raw_start = start;
			return &m->pubs[i];
		}
	for (int i = 0; i < m->npubs; i++)
		if (m->pubs[i].conn == conn && m->pubs[i].pid == 0) {
			m->pubs[i].pid = pid;
			m->pubs[i].start = m->pubs[i].raw_start = start;
			return &m->pubs[i];
		}
	return pub_add(m, pid, start, conn >= 0 ? m->conns[conn].url : "", conn);
}

/* The host part of a tcp url ("tcp://node7:5555" -> "node7", "[fe80::1]" kept whole);
 * "" for this machine (127.0.0.1, localhost, [::1]) and any other url. */
static void
url_host(const char *url, char *host, size_t cap)
{
	const char *h, *colon;

	host[0] = '\0';
	if (strncmp(url, "tcp://", 6) != 0)
		return;
	h = url + 6;
	if ((colon = strrchr(h, ':')) == NULL)
		colon = h + strlen(h);
	snprintf(host, cap, "%.*s", (int)(colon - h), h);
	if (strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0 ||
	    strcmp(host, "[::1]") == 0)
		host[0] = '\0';
	mate_clean_name(host);
}

/* Connects a tcp url as a CURVE client of the publisher whose public key is
 * MATE_MONITOR_CURVE_SERVER_KEY (a fresh key pair of our own), then turns
 * CURVE off again for the ipc endpoints connected later. */
static int
curve_connect(mate_monitor *m, void *sock, const char *url, mate_error *err)
{
	char pub[41], sec[41];
	uint8_t raw[32];
	int zero = 0, rc;

	if (strlen(m->curve_server) != 40 || zmq_z85_decode(raw, m->curve_server) == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "monitor: MATE_MONITOR_CURVE_SERVER_KEY "
		    "is not a 40-character Z85 CURVE key");
	if (zmq_curve_keypair(pub, sec) != 0 ||
	    zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, m->curve_server, 40) != 0 ||
	    zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, pub, 40) != 0 ||
	    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec, 40) != 0)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "monitor: cannot use CURVE: %s",
		    zmq_strerror(zmq_errno()));
	rc = zmq_connect(sock, url);
	zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &zero, sizeof(zero));
	return rc == 0 ? MATE_OK : mate_set_error(err, MATE_ERR_ARGUMENT,
	    "monitor: cannot connect to %s: %s", url, zmq_strerror(zmq_errno()));
}

int
mate_monitor_add_endpoint(mate_monitor *m, const char *url, mate_error *err)
{
	struct conn *c;
	char host[64];
	void *sock;
	int rc;

	for (int i = 0; i < m->nconns; i++)
		if (strcmp(m->conns[i].url, url) == 0)
			return MATE_OK;
	if (m->nconns >= CONNS_MAX)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "monitor: more than %d endpoints",
		    CONNS_MAX);
	if (m->nconns == m->cap_conns) {
		int cap = m->cap_conns ? m->cap_conns * 2 : 8;
		struct conn *nc = realloc(m->conns, (size_t)cap * sizeof(*nc));
		zmq_pollitem_t *ni;
		if (nc == NULL)
			return nomem(err);
		m->conns = nc;
		if ((ni = realloc(m->items, (size_t)(cap + 1) * sizeof(*ni))) == NULL)
			return nomem(err);
		m->items = ni;
		m->cap_conns = cap;
	}
	if ((sock = sub_socket(m)) == NULL)
		return mate_set_error(err, MATE_ERR_IO, "monitor: cannot create a ZeroMQ socket: %s",
		    zmq_strerror(zmq_errno()));
	if (m->curve_server != NULL && strncmp(url, "tcp://", 6) == 0)
		rc = curve_connect(m, sock, url, err);
	else if ((rc = zmq_connect(sock, url)) != 0)
		rc = mate_set_error(err, MATE_ERR_ARGUMENT, "monitor: cannot connect to %s: %s",
		    url, zmq_strerror(zmq_errno()));
	if (rc != MATE_OK) {
		zmq_close(sock);
		return rc;
	}
	c = &m->conns[m->nconns];
	memset(c, 0, sizeof(*c));
	c->sock = sock;
	c->added = mate_mono_seconds();
	if ((c->url = strdup(url)) == NULL) {
		zmq_close(sock);
		return nomem(err);
	}
	url_host(url, host, sizeof(host));
	if ((c->host = strdup(host)) == NULL) {
		free(c->url);
		zmq_close(sock);
		return nomem(err);
	}
	m->nconns++;
	if (pub_add(m, 0, 0, url, m->nconns - 1) == NULL)
		return nomem(err);
	m->pubs[m->npubs - 1].connected = 1;
	return MATE_OK;
}

static void remove_stale_pid(const mate_monitor *m, long pid);

int
mate_monitor_add_pid(mate_monitor *m, long pid, mate_error *err)
{
	if (pid <= 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "monitor: bad pid %ld", pid);
	/* a pid that names no process would be waited for in silence; what
	 * it left in the runtime directory goes */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		remove_stale_pid(m, pid);
		return mate_set_error(err, MATE_ERR_ARGUMENT, "monitor: pid %ld: no such process", pid);
	}
	if (m->nwant == m->cap_want) {
		int cap = m->cap_want ? m->cap_want * 2 : 8;
		long *w = realloc(m->want_pids, (size_t)cap * sizeof(*w));
		if (w == NULL)
			return nomem(err);
		m->want_pids = w;
		m->cap_want = cap;
	}
	m->want_pids[m->nwant++] = pid;
	m->next_scan = 0;
	return MATE_OK;
}

int
mate_monitor_watch_local(mate_monitor *m, mate_error *err)
{
	(void)err;
	m->watch_all = 1;
	m->next_scan = 0;
	return MATE_OK;
}

/* ---- finding local endpoints --------------------------------------------------------- */

struct info {
	long pid;
	unsigned long long ticks;
	double start;
	char session[24];
	char program[64];
	char endpoint[300];
};

/* Reads the .info file at path; owner (-1: any) is the uid the file must belong to, a
 * regular file, in another user's folder. */
static int
read_info(const char *path, struct info *in, long owner)
{
	char buf[2048], *line, *save = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	memset(in, 0, sizeof(*in));
	if (fd < 0)
		return -1;
	if (owner >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (long)st.st_uid != owner)) {
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "pid=", 4) == 0)
			in->pid = strtol(line + 4, NULL, 10);
		else if (strncmp(line, "start_ticks=", 12) == 0)
			in->ticks = strtoull(line + 12, NULL, 10);
		else if (strncmp(line, "start=", 6) == 0)
			in->start = strtod(line + 6, NULL);
		else if (strncmp(line, "session=", 8) == 0)
			snprintf(in->session, sizeof(in->session), "%s", line + 8);
		else if (strncmp(line, "program=", 8) == 0)
			snprintf(in->program, sizeof(in->program), "%s", line + 8);
		else if (strncmp(line, "endpoint=ipc://", 15) == 0 && in->endpoint[0] == '\0')
			snprintf(in->endpoint, sizeof(in->endpoint), "%s", line + 9);
	}
	return in->pid > 0 && in->endpoint[0] != '\0' ? 0 : -1;
}

/* Whether the process that wrote in still runs (not a reused pid). */
static int
info_alive(const struct info *in)
{
	uint64_t ticks;

	if (kill((pid_t)in->pid, 0) != 0 && errno == ESRCH)
		return 0;
	ticks = mate_proc_start_ticks((pid_t)in->pid);
	return in->ticks == 0 || ticks == 0 || ticks == in->ticks;
}

static int
wanted(const mate_monitor *m, long pid)
{
	if (m->watch_all)
		return 1;
	for (int i = 0; i < m->nwant; i++)
		if (m->want_pids[i] == pid)
			return 1;
	return 0;
}

static void
remove_stale(const mate_monitor *m, const char *name, const struct info *in)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", m->dir, name);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%ld.ipc", m->dir, in->pid);
	unlink(path);
}

static void
remove_stale_pid(const mate_monitor *m, long pid)
{
	char name[64], path[600];
	struct info in;

	snprintf(name, sizeof(name), "%ld.info", pid);
	snprintf(path, sizeof(path), "%s/%s", m->dir, name);
	if (read_info(path, &in, -1) == 0 && in.pid == pid && !info_alive(&in))
		remove_stale(m, name, &in);
}

static void
connect_info(mate_monitor *m, const struct info *in, const char *path)
{
	struct pub *p = pub_find_endpoint(m, in->endpoint);

	if (p != NULL && (p->raw_start == in->start || p->conn >= 0))
		return;   /* followed already (an endpoint named: through its own socket) */
	if (p != NULL) {
		/* the same path, a new process (pid reused): start over */
		zmq_disconnect(m->sub, in->endpoint);
		p->endpoint[0] = '\0';
	}
	if (zmq_connect(m->sub, in->endpoint) != 0 ||
	    (p = pub_add(m, in->pid, in->start, in->endpoint, -1)) == NULL)
		return;
	p->connected = 1;
	p->info = strdup(path);
	snprintf(p->session, sizeof(p->session), "%s", in->session);
	snprintf(p->program, sizeof(p->program), "%s", in->program);
	mate_clean_name(p->program);
}

/* The publishers announced in the folder dir: the caller's own (owner -1: stale files
 * are removed) or another user's (owner its uid: files that are not theirs are skipped,
 * nothing is removed). */
static void
scan_dir(mate_monitor *m, const char *dir, long owner)
{
	DIR *d;
	struct dirent *de;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *dot = strrchr(de->d_name, '.');
		char path[600];
		struct info in;
		if (dot == NULL || strcmp(dot, ".info") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_info(path, &in, owner) != 0 || !wanted(m, in.pid))
			continue;
		if (!info_alive(&in)) {
			if (owner < 0)
				remove_stale(m, de->d_name, &in);
		} else if (owner < 0 || (strncmp(in.endpoint + 6, dir, strlen(dir)) == 0 &&
		    in.endpoint[6 + strlen(dir)] == '/')) {
			/* another user's .info names a socket in its own folder only */
			connect_info(m, &in, path);
		}
	}
	closedir(d);
}

/* Other users' folders (mate_monitor_watch_all_users()): each match of the patterns in
 * MATE_MONITOR_ALL (colon-separated), default OTHERS_DEFAULT, that is a directory, not
 * a link, nobody but its owner may write, and not the caller's own; *unreadable counts
 * those that could not be opened (another user's mode 700: only root reads them). */
static void
scan_others(mate_monitor *m, int *unreadable)
{
	const char *env = getenv("MATE_MONITOR_ALL");
	char pats[1024], *pat, *save = NULL;
	struct stat own, st;
	int have_own = stat(m->dir, &own) == 0;

	snprintf(pats, sizeof(pats), "%s", env != NULL && *env != '\0' ? env : OTHERS_DEFAULT);
	for (pat = strtok_r(pats, ":", &save); pat != NULL; pat = strtok_r(NULL, ":", &save)) {
		glob_t g;

		if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *dir = g.gl_pathv[i];
			DIR *d;

			if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 022) != 0 ||
			    (have_own && st.st_dev == own.st_dev && st.st_ino == own.st_ino))
				continue;
			if (unreadable != NULL) {
				if ((d = opendir(dir)) == NULL)
					(*unreadable)++;
				else
					closedir(d);
				continue;
			}
			scan_dir(m, dir, (long)st.st_uid);
		}
		globfree(&g);
	}
}

static void
scan(mate_monitor *m)
{
	if (!m->watch_all && m->nwant == 0)
		return;
	scan_dir(m, m->dir, -1);
	if (m->all_users && m->scans++ % RESCAN_OTHERS == 0)
		scan_others(m, NULL);
	/* publishers whose endpoint went away (removed at exit, or dead): ended once the
	 * frames they left in the socket are read (nothing from them for GONE_QUIET) */
	for (int i = 0; i < m->npubs; i++) {
		struct pub *p = &m->pubs[i];
		char info[600];
		double quiet_since;
		if (!p->connected || p->ended || strncmp(p->endpoint, "ipc://", 6) != 0 || p->pid <= 0)
			continue;
		snprintf(info, sizeof(info), "%s/%ld.info", m->dir, p->pid);
		if (p->gone == 0 && (access(p->info != NULL ? p->info : info, F_OK) != 0 ||
		    (kill((pid_t)p->pid, 0) != 0 && errno == ESRCH)))
			p->gone = m->now;
		quiet_since = p->last_rx > p->gone ? p->last_rx : p->gone;
		if (p->gone > 0 && m->now - quiet_since >= GONE_QUIET)
			p->ended = 1;
	}
}

int
mate_monitor_watch_all_users(mate_monitor *m, int *unreadable, mate_error *err)
{
	int n = 0;

	(void)err;
	m->watch_all = 1;
	m->all_users = 1;
	m->scans = 0;
	m->next_scan = 0;
	scan_others(m, &n);
	if (unreadable != NULL)
		*unreadable = n;
	return MATE_OK;
}

/* ---- frames ---------------------------------------------------------------------------- */

static int
heap_less(const struct held *a, const struct held *b)
{
	return a->t < b->t || (a->t == b->t && a->order < b->order);
}

static int
heap_push(mate_monitor *m, struct held *h)
{
	size_t i;

	if (m->nheld == m->cap_held) {
		size_t cap = m->cap_held ? m->cap_held * 2 : 1024;
		struct held **n = realloc(m->heap, cap * sizeof(*n));
		if (n == NULL)
			return -1;
		m->heap = n;
		m->cap_held = cap;
	}
	i = m->nheld++;
	m->held_bytes += h->bytes;
	while (i > 0 && heap_less(h, m->heap[(i - 1) / 2])) {
		m->heap[i] = m->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->heap[i] = h;
	return 0;
}

static struct held *
heap_pop(mate_monitor *m)
{
	struct held *top = m->heap[0], *last = m->heap[--m->nheld];
	size_t i = 0;

	m->held_bytes -= top->bytes;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m->nheld)
			break;
		if (c + 1 < m->nheld && heap_less(m->heap[c + 1], m->heap[c]))
			c++;
		if (!heap_less(m->heap[c], last))
			break;
		m->heap[i] = m->heap[c];
		i = c;
	}
	if (m->nheld > 0)
		m->heap[i] = last;
	return top;
}

/* Counts the frame's sequence number against its publisher's: @return
 * the frames missing before it. */
static uint64_t
account(struct pub *p, uint64_t seq, uint64_t dropped)
{
	uint64_t gap = 0;

	if (p->events == 0)
		p->first_seq = seq;
	else if (seq > p->last_seq + 1) {
		uint64_t explained = dropped > p->dropped ? dropped - p->dropped : 0;
		gap = seq - p->last_seq - 1;
		if (gap > explained)
			p->lost += gap - explained;
	}
	if (seq > p->last_seq)
		p->last_seq = seq;
	/* events its queue refused take no sequence number: a larger drop
	 * count says some are missing too */
	if (p->events > 0 && dropped > p->dropped && dropped - p->dropped > gap)
		gap = dropped - p->dropped;
	if (dropped > p->dropped)
		p->dropped = dropped;
	p->events++;
	return gap;
}

/* ---- one frame: a flat JSON object of strings and numbers ---------------------- */

enum { F_EVENT, F_CLIENT, F_COMMAND, F_DETAILS, F_PROGRAM, F_SESSION, F_NSTR };
enum { N_SEQ, N_TIMESTAMP, N_SIZE, N_PID, N_START, N_DROPPED, N_RANK, N_WORLD, F_NNUM };

struct frame {
	const char *s[F_NSTR];      /* unescaped, in the frame's scratch copy */
	double n[F_NNUM];
	int has_seq, has_event, has_rank;
};

static const char *const str_keys[F_NSTR] = { "event", "client", "command", "details", "program",
	"session" };
static const char *const num_keys[F_NNUM] = { "seq", "timestamp", "size_bytes", "pid", "start", "dropped",
	"rank", "world" };

static const double ten_to[16] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };

/* @return the index of key (len bytes) in keys, or -1. */
static int
key_index(const char *key, size_t len, const char *const *keys, int n)
{
	for (int i = 0; i < n; i++)
		if (keys[i][0] == key[0] && strlen(keys[i]) == len && memcmp(keys[i], key, len) == 0)
			return i;
	return -1;
}

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A JSON string at p (after its quote) unescaped into *out (advanced,
 * NUL-terminated): @return the position after the closing quote, or NULL. */
static const char *
parse_str(const char *p, const char *end, char **out)
{
	char *o = *out;

	while (p < end && *p != '"') {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		if (++p >= end)
			return NULL;
		switch (*p) {
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'r': *o++ = '\r'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'u': {
			int v = 0;
			if (end - p < 5)
				return NULL;
			for (int i = 1; i <= 4; i++) {
				int h = hexval((unsigned char)p[i]);
				if (h < 0)
					return NULL;
				v = v * 16 + h;
			}
			/* mate escapes only control characters; others become '?' */
			*o++ = v < 0x80 && v != 0 ? (char)v : '?';
			p += 4;
			break;
		}
		default: *o++ = *p; break;
		}
		p++;
	}
	if (p >= end)
		return NULL;
	*o++ = '\0';
	*out = o;
	return p + 1;
}

/* Parses buf into f, unescaping strings into scratch (len + 1 bytes at
 * least). @return 0, or -1 for anything but a flat object. */
static int
parse_frame(const char *buf, size_t len, char *scratch, struct frame *f)
{
	const char *p = buf, *end = buf + len;
	char *o = scratch;

	memset(f, 0, sizeof(*f));
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{')
		return -1;
	for (;;) {
		char *key = o;
		int i;
		p = skip_ws(p, end);
		if (p < end && *p == '}')
			return 0;
		if (p >= end || *p++ != '"' || (p = parse_str(p, end, &o)) == NULL)
			return -1;
		p = skip_ws(p, end);
		if (p >= end || *p++ != ':')
			return -1;
		p = skip_ws(p, end);
		if (p < end && *p == '"') {
			char *val = o;
			if ((p = parse_str(p + 1, end, &o)) == NULL)
				return -1;
			if ((i = key_index(key, (size_t)(val - key - 1), str_keys, F_NSTR)) >= 0)
				f->s[i] = val;
		} else {
			char num[64], *e;
			size_t n = 0, digits = 0;
			uint64_t u = 0;
			int plain = 1, point = -1;   /* digits and one point alone: no strtod */
			double v;
			while (p < end && n + 1 < sizeof(num)) {
				char c = *p;
				if (c >= '0' && c <= '9') {
					u = u * 10 + (uint64_t)(c - '0');
					digits++;
				} else if (c == '.' && point < 0 && digits > 0)
					point = (int)digits;
				else if (c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E')
					plain = 0;
				else
					break;
				num[n++] = c;
				p++;
			}
			num[n] = '\0';
			if (plain && digits > 0 && digits <= 15 && (point < 0 || (size_t)point < digits)) {
				/* u is exact below 2^53, and so is a power of ten up to
				 * 10^22: one correctly rounded division gives what
				 * strtod() would (the double nearest to the decimal) */
				v = point < 0 ? (double)u : (double)u / ten_to[digits - (size_t)point];
			} else {
				v = strtod(num, &e);
				if (n == 0 || *e != '\0') {
					/* true, false, null, nested values: not ours */
					return -1;
				}
			}
			if ((i = key_index(key, (size_t)(o - key - 1), num_keys, F_NNUM)) >= 0) {
				f->n[i] = v;
				if (i == N_SEQ)
					f->has_seq = 1;
				if (i == N_RANK)
					f->has_rank = 1;
			}
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			break;
		return -1;
	}
	f->has_event = f->s[F_EVENT] != NULL;
	return 0;
}

static struct held *
make_held(const struct frame *fr, double t, mate_error *err)
{
	const char *f[4];
	size_t len[4], total = 0;
	struct held *h;
	char *q;

	for (int i = 0; i < 4; i++) {
		f[i] = fr->s[i] != NULL ? fr->s[i] : "";
		total += (len[i] = strlen(f[i])) + 1;
	}
	if ((h = malloc(sizeof(*h) + total)) == NULL) {
		nomem(err);
		return NULL;
	}
	memset(h, 0, sizeof(*h));
	h->bytes = sizeof(*h) + total;
	q = h->text;
	for (int i = 0; i < 4; i++) {
		memcpy(q, f[i], len[i] + 1);
		f[i] = q;
		q += len[i] + 1;
	}
	h->t = t;
	h->le.ev.time = t;
	h->le.ev.event = f[0];
	h->le.ev.source = f[1];
	h->le.ev.command = f[2];
	h->le.ev.details = f[3];
	h->le.ev.source_kind = strstr(f[0], "WORKER") != NULL ? MATE_SOURCE_WORKER : MATE_SOURCE_CLIENT;
	return h;
}

/* A frame's count (seq, dropped, size) as an integer: 0 below 1, max above
 * what max holds (a cast out of range is undefined behaviour). */
static uint64_t
frame_count(double d, uint64_t max)
{
	if (!(d > 0))
		return 0;
	return d >= (double)max ? max : (uint64_t)d;
}

/* The clock of conn's host against this one's, from a frame of its sent at
 * host time sent and arrived now (CLOCK_REALTIME): the first frame of a host
 * sets it for all of that host's endpoints; a difference within CLOCK_AGREE
 * is the way, not the clock (0). Fixed from then on, so that the host's own
 * order of events stays. */
static double
conn_offset(mate_monitor *m, int conn, double sent)
{
	struct conn *c = &m->conns[conn];
	struct timespec ts;
	double d;

	if (c->offset_known)
		return c->offset;
	for (int i = 0; i < m->nconns; i++)
		if (i != conn && m->conns[i].offset_known && strcmp(m->conns[i].host, c->host) == 0) {
			c->offset = m->conns[i].offset;
			c->offset_known = 1;
			return c->offset;
		}
	clock_gettime(CLOCK_REALTIME, &ts);
	d = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - sent;
	c->offset = c->host[0] != '\0' && (d > CLOCK_AGREE || d < -CLOCK_AGREE) ? d : 0;
	c->offset_known = 1;
	return c->offset;
}

/* The seconds added to the times of p, a publisher of conn's host, from its first frame
 * (sent at host time sent): its host's offset, unless its own clock is CLOCK_MOVED or more
 * from it. Then the host's clock was stepped after it was measured (NTP, by hand) and p
 * started on the new one: p keeps its own, so that its times are not all that far off,
 * and the host's clock counts as moved. */
static double
pub_offset(mate_monitor *m, struct pub *p, int conn, double sent)
{
	struct conn *c = &m->conns[conn];
	double host = conn_offset(m, conn, sent), d;
	struct timespec ts;

	if (p->offset_known)
		return p->offset;
	p->offset_known = 1;
	p->offset = host;
	if (c->host[0] == '\0')
		return host;
	clock_gettime(CLOCK_REALTIME, &ts);
	d = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - sent;
	if (d - host >= CLOCK_MOVED || d - host <= -CLOCK_MOVED) {
		p->offset = d > CLOCK_AGREE || d < -CLOCK_AGREE ? d : 0;
		for (int i = 0; i < m->nconns; i++)   /* said on every endpoint of that host */
			if (strcmp(m->conns[i].host, c->host) == 0) {
				m->conns[i].moved++;
				m->conns[i].moved_by = p->offset - host;
			}
	}
	return p->offset;
}

/* Parses one frame that came in on conn (-1: the local socket) and holds its
 * event. Frames that are not mate's are skipped (and counted against conn). */
static int
take_frame(mate_monitor *m, const char *buf, size_t len, int conn, mate_error *err)
{
	struct frame fr;
	struct held *h;
	struct pub *p;
	const char *sess;
	double start;

	if (parse_frame(buf, len, m->scratch, &fr) != 0 || !fr.has_seq || !fr.has_event ||
	    !(fr.n[N_PID] >= 0 && fr.n[N_PID] <= INT32_MAX)) {
		if (conn >= 0)
			m->conns[conn].foreign++;
		return MATE_OK;   /* not mate's (no process has that id) */
	}
	start = fr.n[N_START];
	if (conn >= 0) {
		m->conns[conn].frames++;
		m->conns[conn].last = m->now;
	}
	if ((p = pub_for_frame(m, (long)fr.n[N_PID], start, conn)) == NULL)
		return MATE_OK;   /* too many publishers (or no memory): skipped */
	/* on this machine's clock: the host's own order stays */
	if (conn >= 0 && start > 0) {
		start += pub_offset(m, p, conn, start + fr.n[N_TIMESTAMP]);
		p->start = start;
	}
	sess = fr.s[F_SESSION] != NULL ? fr.s[F_SESSION] : "";
	if (p->events == 0 && p->session[0] == '\0')
		snprintf(p->session, sizeof(p->session), "%s", sess);
	else if (strcmp(p->session, sess) != 0)
		return MATE_OK;   /* another publisher speaking for this one: skipped */
	/* the first frame that carries a rank gives it (a process may learn its rank late, from
	 * ncclCommInitRank): a later frame cannot move it */
	if (p->rank < 0 && fr.has_rank && fr.n[N_RANK] >= 0 && fr.n[N_RANK] < (1 << 24) &&
	    fr.n[N_RANK] == (double)(int)fr.n[N_RANK]) {
		p->rank = (int)fr.n[N_RANK];
		p->world = fr.n[N_WORLD] > fr.n[N_RANK] && fr.n[N_WORLD] <= (1 << 24) ?
		    (int)fr.n[N_WORLD] : 0;
	}
	if (p->program[0] == '\0' && fr.s[F_PROGRAM] != NULL) {
		snprintf(p->program, sizeof(p->program), "%s", fr.s[F_PROGRAM]);
		mate_clean_name(p->program);
	}
	if (m->base == 0 && start > 0) {
		m->base = start;
		for (int i = 0; i < m->npubs; i++)
			if (m->pubs[i].start > 0 && m->pubs[i].start < m->base)
				m->base = m->pubs[i].start;
	}
	if ((h = make_held(&fr, start - m->base + fr.n[N_TIMESTAMP], err)) == NULL)
		return MATE_ERR_NOMEM;
	h->le.ev.seq = frame_count(fr.n[N_SEQ], UINT64_MAX);
	h->le.ev.size = (int64_t)frame_count(fr.n[N_SIZE], INT64_MAX);
	h->le.dropped = frame_count(fr.n[N_DROPPED], UINT64_MAX);
	h->le.publisher = (int)(p - m->pubs);
	p->last_rx = m->now;
	h->order = m->order++;
	h->arrived = m->now;
	h->le.missed = account(p, h->le.ev.seq, h->le.dropped);
	if (strcmp(h->le.ev.event, "DISCONNECT") == 0)
		p->ended = p->said_end = 1;
	if (heap_push(m, h) != 0) {
		free(h);
		return nomem(err);
	}
	return MATE_OK;
}

/* Whether no more events may be held: the oldest goes out now. */
static int
held_full(const mate_monitor *m)
{
	return m->nheld >= HELD_MAX || m->held_bytes >= HELD_BYTES_MAX;
}

/* Reads what one socket (conn -1: the local one) holds, a bounded batch. */
static int
receive_sock(mate_monitor *m, void *sock, int conn, mate_error *err)
{
	int n, rc;

	for (int batch = 0; batch < 4096 && !held_full(m); batch++) {
		n = zmq_recv(sock, m->frame, FRAME_MAX, ZMQ_DONTWAIT);
		if (n < 0)
			return zmq_errno() == EAGAIN || zmq_errno() == EINTR ? MATE_OK :
			    mate_set_error(err, MATE_ERR_IO, "monitor: receive: %s",
			    zmq_strerror(zmq_errno()));
		if (n > FRAME_MAX)
			continue;
		if ((rc = take_frame(m, m->frame, (size_t)n, conn, err)) != MATE_OK)
			return rc;
	}
	return MATE_OK;
}

/* Reads what the sockets hold without waiting (flushing: only until flush_until). */
static int
receive_all(mate_monitor *m, mate_error *err)
{
	int rc;

	/* a bounded batch: the caller's deadline is looked at between batches;
	 * its frames arrived now (one reading of the clock, not one a frame) */
	m->now = mate_mono_seconds();
	if (m->flushing && m->now >= m->flush_until)
		return MATE_OK;   /* the end: what still arrives is not waited for */
	if ((rc = receive_sock(m, m->sub, -1, err)) != MATE_OK)
		return rc;
	for (int i = 0; i < m->nconns; i++)
		if ((rc = receive_sock(m, m->conns[i].sock, i, err)) != MATE_OK)
			return rc;
	return MATE_OK;
}

int
mate_monitor_next(mate_monitor *m, mate_live_event *ev, int timeout_ms, mate_error *err)
{
	/* The clock is read once a batch of frames and after each wait, not
	 * once an event: an event due by the last reading is due now. */
	double now = m->now, deadline = -1;
	int rc;

	free(m->current);
	m->current = NULL;
	for (;;) {
		double wait;
		if (now >= m->next_scan) {
			scan(m);
			m->next_scan = now + RESCAN_MS / 1000.0;
		}
		/* what is due goes out first; the socket is read when nothing is */
		for (int pass = 0; pass < 2; pass++) {
			if (m->nheld > 0 && (m->flushing || now - m->heap[0]->arrived >= m->lag ||
			    held_full(m))) {
				m->current = heap_pop(m);
				*ev = m->current->le;
				return 1;
			}
			if (pass == 0) {
				if ((rc = receive_all(m, err)) != MATE_OK)
					return rc;
				now = m->now;
			}
		}
		if (deadline < 0)
			deadline = timeout_ms < 0 ? 1e300 : now + timeout_ms / 1000.0;
		if (now >= deadline)
			return 0;
		wait = deadline - now;
		if (m->nheld > 0 && m->heap[0]->arrived + m->lag - now < wait)
			wait = m->heap[0]->arrived + m->lag - now;
		if (m->next_scan - now < wait)
			wait = m->next_scan - now;
		if (wait < 0)
			wait = 0;   /* a scan is due (a negative wait is no wait: forever) */
		/* with events held, sleep until the first is due: what arrives
		 * meanwhile waits in the socket and is read in one batch */
		zmq_pollitem_t local = { m->sub, 0, ZMQ_POLLIN, 0 }, *items = &local;
		if (m->nconns > 0) {
			items = m->items;
			items[0] = local;
			for (int i = 0; i < m->nconns; i++) {
				zmq_pollitem_t it = { m->conns[i].sock, 0, ZMQ_POLLIN, 0 };
				items[i + 1] = it;
			}
		}
		if (zmq_poll(m->nheld > 0 ? NULL : items, m->nheld > 0 ? 0 : m->nconns + 1,
		    (long)(wait * 1000.0) + 1) < 0) {
			if (zmq_errno() == EINTR)
				return 0;   /* a signal: the caller looks at its flags */
			return mate_set_error(err, MATE_ERR_IO, "monitor: poll: %s",
			    zmq_strerror(zmq_errno()));
		}
		now = m->now = mate_mono_seconds();
	}
}

void
mate_monitor_flush(mate_monitor *m)
{
	/* frames sent before the end may still be on their way for one lag */
	if (!m->flushing)
		m->flush_until = mate_mono_seconds() + m->lag;
	m->flushing = 1;
}

int
mate_monitor_publishers(const mate_monitor *m)
{
	return m->npubs;
}

int
mate_monitor_publisher(const mate_monitor *m, int i, mate_publisher_info *info)
{
	const struct pub *p;

	if (i < 0 || i >= m->npubs)
		return -1;
	p = &m->pubs[i];
	info->pid = p->pid;
	info->program = p->program;
	info->endpoint = p->endpoint;
	info->start = p->start;
	info->events = p->events;
	info->dropped = p->dropped;
	info->lost = p->lost;
	info->first_seq = p->first_seq;
	info->last_seq = p->last_seq;
	info->ended = p->ended;
	info->rank = p->rank;
	info->world = p->world;
	return 0;
}

int
mate_monitor_publisher_cut(const mate_monitor *m, int i)
{
	return i >= 0 && i < m->npubs && m->pubs[i].ended && !m->pubs[i].said_end;
}

const char *
mate_monitor_publisher_host(const mate_monitor *m, int i)
{
	if (i < 0 || i >= m->npubs || m->pubs[i].conn < 0)
		return "";
	return m->conns[m->pubs[i].conn].host;
}

int
mate_monitor_endpoints(const mate_monitor *m)
{
	return m->nconns;
}

int
mate_monitor_endpoint(const mate_monitor *m, int i, mate_endpoint_info *info)
{
	const struct conn *c;

	if (i < 0 || i >= m->nconns)
		return -1;
	c = &m->conns[i];
	memset(info, 0, sizeof(*info));
	info->url = c->url;
	info->host = c->host;
	info->frames = c->frames;
	info->foreign = c->foreign;
	info->silent_for = m->now - (c->last > 0 ? c->last : c->added);
	if (info->silent_for < 0)
		info->silent_for = 0;
	info->clock_offset = c->offset;
	info->clock_known = c->offset_known;
	info->clock_moved = c->moved;
	info->clock_moved_by = c->moved_by;
	return 0;
}

double
mate_monitor_base(const mate_monitor *m)
{
	return m->base;
}

double
mate_monitor_lag(const mate_monitor *m)
{
	return m->lag;
}

int
mate_mon_take_frame(mate_monitor *m, const char *buf, size_t len)
{
	if (len > FRAME_MAX)
		return -1;
	m->now = mate_mono_seconds();
	return take_frame(m, buf, len, -1, NULL);
}
