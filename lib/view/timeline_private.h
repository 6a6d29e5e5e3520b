/* timeline_private.h: the timeline's internals shared by timeline.c, timeline_agg.c, render_cairo.c, perfetto.c and summary.c; never installed. */
#ifndef MATE_TIMELINE_PRIVATE_H_INCLUDED
#define MATE_TIMELINE_PRIVATE_H_INCLUDED

#include <regex.h>
#include <stdint.h>

#include "mate_view.h"
#include "events_private.h"

#define TL_MAX_LANES 256        /* more go to one overflow lane per kind */
#define TL_MAX_OPS 256          /* more op types count as "other" */
#define TL_OP_NAME 32
#define TL_STACK_MAX 64         /* open calls per client */
#define TL_FIFO_MAX 4096        /* unanswered sends per worker (no id) */
#define TL_IDS_MAX (1 << 18)    /* open calls and work joined by id */
#define TL_BIN_BUDGET (64u << 20) /* bytes of per-column sums */
#define TL_BAR_CAP (1 << 18)    /* spans kept one by one */
#define TL_MARK_CAP (1 << 17)   /* event markers kept */
#define TL_FLOW_CAP (1 << 14)   /* flow arrows kept */
#define TL_SIGNAL_CAP 1024
#define TL_DETAIL_KEEP 120      /* details kept for the JSON's args */
#define TL_BATCH_WINDOW 0.0015  /* seconds: GT's WorkerBatch RECV-before-SEND */

/* Event markers. */
enum tl_mark_type {
	TL_MARK_RECV = 0,    /* circle */
	TL_MARK_WSEND,       /* right triangle */
	TL_MARK_WRECV,       /* left triangle */
	TL_MARK_SIGNAL,      /* star */
	TL_MARK_INJECT,      /* diamond */
	TL_MARK_CONNECT,     /* square */
	TL_MARK_ERROR,       /* cross */
	TL_MARK_OTHER,       /* dot */
	TL_MARK_TYPES
};

struct tl_op {
	char name[TL_OP_NAME];
	uint32_t rgb;
	double busy;         /* seconds of depth-0 spans shown */
	uint64_t spans;
	uint64_t nwork, ncalls;     /* work and call spans shown */
	double work, work_max;      /* their seconds in all, and the longest */
	double calls, call_max;
};

/* A span waiting for its closing event. */
struct tl_open {
	double t;            /* start */
	uint64_t seq;
	int64_t bytes;
	uint64_t key;        /* call= or id= key, 0 when none */
	int op, depth, lane;
	int flow_lane;       /* the call that caused this work, or -1 */
	double flow_t;       /* and its start */
	uint64_t flow_seq;   /* and its opening event's seq */
	double work;         /* a call: seconds of the work done for it (and for
	                      * the calls nested in it) while it was open */
	int has_work;        /* a call: it sent work */
	char *command, *details; /* kept for the JSON only */
};

/* GT's batch order: a WORKER_RECV waiting for its WORKER_SEND. */
struct tl_orphan {
	double t, start;
	uint64_t seq;
	int64_t bytes;
	int failed;
	char command[32];
};

struct tl_opbins {
	int op;
	float *busy;         /* seconds per bin */
};

struct tl_track {
	int n;               /* open (enclosing) slices on the stack */
	double floor;        /* no slice may start before this (forgotten ones) */
	double s[16], e[16];
};

struct tl_lane {
	char *name;          /* id within its log */
	char *label;         /* drawn label */
	int kind;            /* enum mate_lane_kind */
	int log;
	int hidden;
	int named;           /* a client lane labelled by its thread's name (thread=) */
	int index;           /* position in tl->lanes */
	uint64_t spans, events;
	uint64_t acts;       /* spans and events other than connects, anywhere:
	                      * a lane without any is not drawn */
	double busy, covered;/* union of depth-0 spans shown */
	double wait;         /* clients: seconds of depth-0 calls that sent work,
	                      * less that work (waiting on workers) */
	int maxdepth;
	double first, last;  /* events shown on it */
	/* pairing */
	struct tl_open *stack;
	int nstack;
	struct tl_open *fifo;
	int fhead, fcount;
	int has_orphan;
	struct tl_orphan orphan;
	/* aggregation */
	struct tl_opbins *ob;
	int nob;
	uint32_t *count;     /* spans and events per bin */
	float *mem;          /* memory lanes: highest value per bin, -1: none */
	int64_t mk_last[TL_MARK_TYPES]; /* index of its last kept marker per type */
	int64_t mk_cell[TL_MARK_TYPES]; /* and that marker's cell */
	int64_t fl_last, fl_cell;       /* the same for flows into this lane */
	double mem_peak, mem_last;
	int has_mem;
	/* Perfetto */
	int tid;
	int ntracks;
	struct tl_track *tracks;
	/* the last picture */
	double y0, y1;
};

struct tl_bar {
	double s, e;
	int lane;
	int16_t op;
	uint8_t depth, is_call, failed;
	uint64_t seq;
};

struct tl_mark {
	double t;
	int lane;
	int16_t op;
	uint8_t type;
	int64_t bytes;
	uint64_t seq;
};

struct tl_flow {
	double t0, t1;
	int lane0, lane1;
};

struct tl_signal {
	double t;
	char name[32];
};

struct tl_id {               /* an open call or piece of work joined by id */
	uint64_t key;        /* 0: free slot */
	struct tl_open o;
};

#define TL_MAX_HOSTS 64

struct tl_log {
	char *name;
	int dispatcher;      /* lane index or -1 */
	int cur_client;      /* client lane with the latest open RECV, or -1 */
	int ctx_op;          /* op of the latest open RECV or MODIFIER_INJECT */
	char ctx_cmd[32];    /* and the RECV's command */
	double prev_time;
	int has_prev;
};

struct mate_timeline {
	mate_timeline_options o;
	regex_t re;
	int has_re;
	struct mate_ilog_details det;  /* the details of the event being added */
	/* lanes */
	struct tl_lane **lanes;
	int nlanes;
	int *lane_hash;      /* open addressing, 2 * TL_MAX_LANES slots, -1 free */
	int overflow[4];     /* overflow lane per kind, or -1 */
	/* ops */
	struct tl_op ops[TL_MAX_OPS];
	int nops;
	int npalette;        /* palette colours given out */
	int op_hash[2 * TL_MAX_OPS];
	/* logs */
	struct tl_log *logs;
	int nlogs, in_log;
	/* ids */
	struct tl_id *ids;
	size_t ids_cap, ids_n;
	/* the column grid: nbins bins of width w from origin */
	int nbins;
	double origin, w;
	int grid_set, grid_fixed;
	size_t bin_bytes;    /* allocated for bins so far */
	/* kept one by one */
	struct tl_bar *bars;
	size_t nbars, capbars;
	double bar_min;
	int bars_pruned;
	struct tl_mark *marks;
	size_t nmarks, capmarks;
	double mark_cell;    /* 0: every marker kept, else one per type and cell */
	struct tl_flow *flows;
	size_t nflows, capflows;
	double flow_cell;
	uint64_t flows_total;
	struct tl_signal *signals;
	size_t nsignals;
	/* hosts (mate-trace's host= of other machines' events) and the clocks moved */
	struct tl_host {
		char name[64];
		double clock;     /* seconds mate-trace added to its times (clock=) */
		int moved;
	} hosts[TL_MAX_HOSTS];
	int nhosts;
	/* counts */
	mate_timeline_stats st;
	int mark_seen[TL_MARK_TYPES];
	/* output */
	mate_perfetto *pf;
};

/* summary.c: the line that names the other machines and the clocks moved. */
void tl_hosts_line(const mate_timeline *tl, struct mate_buf *b);

/* timeline_agg.c: the column grid and what is kept one by one. */
int tl_agg_span(mate_timeline *tl, struct tl_lane *L, int op, double s, double e,
    int depth, int flags, uint64_t seq);   /* flags: 1 a call, 2 failed */
int tl_agg_mark(mate_timeline *tl, struct tl_lane *L, int type, int op, double t,
    int64_t bytes, uint64_t seq);
int tl_agg_flow(mate_timeline *tl, int lane0, double t0, int lane1, double t1);
int tl_agg_memory(mate_timeline *tl, struct tl_lane *L, double t, double value);
void tl_agg_free_lane(struct tl_lane *L);
/* Sums the bins overlapping [a, b) of one array (NULL: the counts). */
double tl_bins_sum(const mate_timeline *tl, const float *v, double a, double b);
double tl_counts_sum(const mate_timeline *tl, const uint32_t *v, double a, double b);
float tl_mem_max(const mate_timeline *tl, const float *v, double a, double b);

/* timeline.c */
int tl_lane_order(const mate_timeline *tl, int *order);  /* visible lanes, drawn order */
int tl_lane_shown(const struct tl_lane *L);  /* kept by --lanes and did something */
const char *tl_log_name(const mate_timeline *tl, int log);
extern const char *const tl_kind_word[4];   /* by enum mate_lane_kind */

/* perfetto.c: the writer's side of the timeline. */
void tl_pf_lane(mate_perfetto *pf, const mate_timeline *tl, struct tl_lane *L);
/* The lane's thread name again, after its label changed. */
void tl_pf_lane_renamed(mate_perfetto *pf, struct tl_lane *L);
void tl_pf_span(mate_perfetto *pf, struct tl_lane *L, const char *name, int is_call,
    int failed, double s, double e, const struct tl_open *o, const struct tl_lane *from);
void tl_pf_instant(mate_perfetto *pf, const struct tl_lane *L, const char *event,
    double t, const mate_event *ev);
void tl_pf_counter(mate_perfetto *pf, const struct tl_lane *L, double t, double value);
/* Call seq on lane C caused work: its slice will start flows. */
void tl_pf_cause(mate_perfetto *pf, const struct tl_lane *C, uint64_t seq);
/* The log ended: flows still waiting for their call's slice are dropped. */
void tl_pf_end_log(mate_perfetto *pf);

#endif /* MATE_TIMELINE_PRIVATE_H_INCLUDED */
