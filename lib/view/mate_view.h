/* mate_view.h: timelines from instruction logs, cairo pictures, Perfetto JSON and text summaries (libmate_view, linked by mate-visualize only, so a recorded program never loads cairo). */
#ifndef MATE_VIEW_H_INCLUDED
#define MATE_VIEW_H_INCLUDED

#include <stdio.h>
#include "mate_events.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Timelines -------------------------------------------------------------
 * A timeline pairs events into spans on lanes and aggregates them while they
 * stream in, so its memory does not grow with the number of events:
 * - lanes: one per client (thread or process), one dispatcher per log, one
 *   per worker (GPU stream, device, worker thread), one per memory device;
 * - a call is a client's RECV..SEND (by call=, else the latest open RECV of
 *   that client: nested calls nest); work is a worker's
 *   WORKER_SEND..WORKER_RECV (by id=, else GT's rule: the next WORKER_RECV
 *   of the same worker; a WORKER_RECV just before a WORKER_SEND of the same
 *   worker and command, within a millisecond, is GT's WorkerBatch order and
 *   spans from the line before it to the WORKER_RECV);
 * - work is joined to the call that caused it by call=, else (GT) to the
 *   latest open call of its log; its op is its op=, else the call's or the
 *   latest MODIFIER_INJECT's op, else derived from its command.
 * Spans narrower than a pixel column are summed per column (coverage). */
typedef struct mate_timeline mate_timeline;

typedef struct mate_timeline_options {
	int has_from, has_to; /* clip to [from, to] seconds when set */
	double from, to;
	const char *lanes;    /* POSIX extended regex: keep lanes whose label
	                       * (or "log: label") matches; NULL keeps all */
	int columns;          /* pixel width of the picture to come (sizes the
	                       * aggregation; 0 means 4096) */
} mate_timeline_options;

enum mate_lane_kind {
	MATE_LANE_CLIENT = 0,
	MATE_LANE_DISPATCHER = 1,
	MATE_LANE_WORKER = 2,
	MATE_LANE_MEMORY = 3
};

typedef struct mate_timeline_stats {
	uint64_t events;      /* events added */
	uint64_t ops;         /* work spans (WORKER_SEND..WORKER_RECV) */
	uint64_t calls;       /* call spans (RECV..SEND) */
	uint64_t unpaired;    /* opening or closing events left without a partner */
	uint64_t failed;      /* spans whose closing event reported a failure
	                       * (success=False, error=, a status= not ok) */
	uint64_t signals;
	uint64_t shown;       /* spans, markers and memory samples inside the
	                       * window (0: nothing to draw there) */
	int lanes;            /* lanes shown (after --lanes) */
	int clients, workers, memory_lanes;
	int op_types;         /* distinct op types among the spans shown */
	int logs;
	int hosts;            /* other machines whose events came (host=), up to 64 */
	int hosts_moved;      /* of them, those whose clock mate-trace moved (clock=) */
	double t0, t1;        /* time range of the events shown (t1 < t0: none) */
	double first, last;   /* time range of every event added, shown or not */
} mate_timeline_stats;

typedef struct mate_lane_info {
	const char *label;    /* as drawn ("log: label" with several logs) */
	int kind;             /* enum mate_lane_kind */
	double busy;          /* utilisation in [0, 1] over the time shown */
	uint64_t spans;       /* spans drawn on it */
	double wait;          /* clients: the share of busy time spent waiting on
	                       * workers, in [0, 1]: the time of its calls that
	                       * sent work (joined by call=, else GT's rule),
	                       * less the time of that work */
	double y0, y1;        /* its row in the last picture, in pixels */
} mate_lane_info;

typedef struct mate_op_info {
	const char *name;
	uint64_t count;       /* spans shown */
	double total, max;    /* seconds: their durations summed, the longest */
} mate_op_info;

/*! mate_timeline_options_init() : all lanes, no clipping, columns 0. */
void mate_timeline_options_init(mate_timeline_options *o);
/*! mate_timeline_new() : @return an empty timeline, or NULL with err set (a
 * bad lanes regex, no memory). The options are copied. */
mate_timeline *mate_timeline_new(const mate_timeline_options *o, mate_error *err);
/*! mate_timeline_begin_log() : the events that follow come from a new log
 * (name copied); each log gets its own lanes. */
int mate_timeline_begin_log(mate_timeline *tl, const char *name, mate_error *err);
/*! mate_timeline_add() : adds one event of the current log (a log is begun
 * implicitly). @return MATE_OK or a negative mate_status. */
int mate_timeline_add(mate_timeline *tl, const mate_event *ev, mate_error *err);
/*! mate_timeline_end_log() : ends the current log; what is still open
 * counts as unpaired. */
int mate_timeline_end_log(mate_timeline *tl, mate_error *err);
/*! mate_timeline_get_stats() : counts over everything added so far. */
void mate_timeline_get_stats(const mate_timeline *tl, mate_timeline_stats *st);
/*! mate_timeline_host() : the i-th other machine seen (host= in details), in
 * order of its first event: its name (borrowed) and the seconds mate-trace
 * added to its times (clock=; 0: its clock agreed). @return 1 when its clock
 * was moved, 0 when not, -1 past the last. */
int mate_timeline_host(const mate_timeline *tl, int i, const char **name, double *clock);
/*! mate_timeline_lane() : the i-th lane shown, in drawing order (top to
 * bottom); strings borrowed from tl. @return 0, or -1 past the last. */
int mate_timeline_lane(const mate_timeline *tl, int i, mate_lane_info *li);
/*! mate_timeline_op() : the i-th op by total time, most first, over the
 * work shown (calls == 0) or the calls shown (calls != 0); name borrowed
 * from tl. @return 0, or -1 past the last. */
int mate_timeline_op(const mate_timeline *tl, int calls, int i, mate_op_info *oi);
/*! mate_timeline_free() : frees tl (NULL ok); an attached Perfetto writer
 * is not freed. */
void mate_timeline_free(mate_timeline *tl);

/* ---- Pictures (cairo) ------------------------------------------------------ */
enum mate_render_format {
	MATE_RENDER_PNG = 0,
	MATE_RENDER_SVG = 1,
	MATE_RENDER_PDF = 2
};

typedef struct mate_render_options {
	int format;           /* enum mate_render_format */
	double dpi;           /* pixels per inch (PNG size = dpi x inches) */
	double width, height; /* inches */
	const char *title;    /* NULL: "mate timeline: <first log>" */
} mate_render_options;

typedef struct mate_render_info {
	int width_px, height_px;           /* dpi x inches, rounded */
	double plot_x0, plot_y0, plot_x1, plot_y1; /* the lanes' area, pixels */
	double legend_x0, legend_y0, legend_x1, legend_y1;
	double t0, t1;                     /* seconds at plot_x0 and plot_x1 */
} mate_render_info;

/*! mate_render_options_init() : PNG, 150 dpi, 16 x 10 inches. */
void mate_render_options_init(mate_render_options *o);
/*! mate_timeline_render() : draws tl into path, atomically (a temporary
 * file renamed into place). info, if not NULL, gets the geometry.
 * @return MATE_OK or a negative mate_status. */
int mate_timeline_render(mate_timeline *tl, const mate_render_options *o,
    const char *path, mate_render_info *info, mate_error *err);
/*! mate_timeline_render_fd() : the same, written to fd (left open). */
int mate_timeline_render_fd(mate_timeline *tl, const mate_render_options *o,
    int fd, mate_render_info *info, mate_error *err);

/* ---- Text summary -----------------------------------------------------------
 * Plain text to read in a terminal and grep: a header line (logs, events,
 * calls, ops, lanes, time span), the top ops by time, each lane's busy
 * share and waiting, and one line on where the time went. */

/*! mate_timeline_write_text() : writes tl's summary to path, atomically.
 * @return MATE_OK or a negative mate_status. */
int mate_timeline_write_text(const mate_timeline *tl, const char *path, mate_error *err);
/*! mate_timeline_write_text_fd() : the same, written to fd (left open). */
int mate_timeline_write_text_fd(const mate_timeline *tl, int fd, mate_error *err);

/* ---- Chrome / Perfetto JSON -------------------------------------------------
 * {"traceEvents":[...],"displayTimeUnit":"ns"}, streamed out while the
 * timeline pairs events: a process per log, a named thread per lane (more
 * when spans on one lane overlap without nesting), X slices, s/f flows from
 * each call to its work (bound as Chrome binds them: same pid, tid,
 * category and start as their slices), instants for other events, C
 * counters for device memory. */
typedef struct mate_perfetto mate_perfetto;

/*! mate_perfetto_open() : writes a trace to path, atomically; gzip when
 * gzip != 0 (use it for ".json.gz"). @return NULL with err set on error. */
mate_perfetto *mate_perfetto_open(const char *path, int gzip, mate_error *err);
/*! mate_perfetto_open_fd() : writes to fd (left open). */
mate_perfetto *mate_perfetto_open_fd(int fd, int gzip, mate_error *err);
/*! mate_timeline_set_perfetto() : tl streams into pf from now on (one
 * writer per timeline; pf must outlive the events added). */
void mate_timeline_set_perfetto(mate_timeline *tl, mate_perfetto *pf);
/*! mate_perfetto_events() : trace events written so far. */
uint64_t mate_perfetto_events(const mate_perfetto *pf);
/*! mate_perfetto_flows() : flow arrows (call to work) written so far, and
 * those dropped because their call never got a slice: unended (still open
 * at the end of its log) or forgotten (more than 65536 calls with work
 * outstanding, no memory). Any pointer may be NULL. */
void mate_perfetto_flows(const mate_perfetto *pf, uint64_t *written, uint64_t *unended,
    uint64_t *forgotten);
/*! mate_perfetto_close() : ends the JSON, flushes, commits the file and
 * frees pf. @return MATE_OK, or the first write error met (the file is
 * then removed). */
int mate_perfetto_close(mate_perfetto *pf, mate_error *err);
/*! mate_perfetto_abort() : frees pf and removes its file (NULL ok). */
void mate_perfetto_abort(mate_perfetto *pf);

#ifdef __cplusplus
}
#endif
#endif /* MATE_VIEW_H_INCLUDED */
