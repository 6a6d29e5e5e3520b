/* fuzz_ilog.c: libFuzzer target for instruction logs: the reader, the timeline's pairing and aggregation, and the Perfetto writer. */
#include "config.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "mate_view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* fontconfig, under cairo's text, keeps globals it never frees. */
const char *
__lsan_default_suppressions(void)
{
	return "leak:libfontconfig.so\n";
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	mate_timeline_options o;
	mate_timeline *tl;
	mate_perfetto *pf;
	mate_ilog *r;
	mate_event ev;
	mate_error err;
	char line[512];
	int n = 0;

	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY);
	mate_timeline_options_init(&o);
	o.columns = 256;
	if (size > 0 && data[0] == 'C') {   /* sometimes clip to a window */
		o.has_from = o.has_to = 1;
		o.from = 0.5;
		o.to = 2.5;
	}
	tl = mate_timeline_new(&o, &err);
	r = mate_ilog_open_memory(data, size, "fuzz", &err);
	pf = mate_perfetto_open_fd(devnull, size > 1 && data[1] == 'Z', &err);
	if (tl == NULL || r == NULL || pf == NULL)
		goto out;
	mate_timeline_set_perfetto(tl, pf);
	while (mate_ilog_next(r, &ev, &err) == 1) {
		char op[32];
		mate_ilog_op(&ev, op, sizeof(op));
		mate_op_color(op);
		if (n++ < 64) {   /* what the parser gives, the formatter takes */
			mate_event back;
			char copy[512];
			int len = mate_ilog_format(line, sizeof(line), &ev);
			if (len > 0 && (size_t)len < sizeof(line)) {
				memcpy(copy, line, (size_t)len);
				copy[len - 1] = '\0';
				if (mate_ilog_parse_line(copy, (size_t)len - 1, &back, NULL) != 1 &&
				    ev.event[0] != '\0')
					__builtin_trap();
			}
		}
		if (mate_timeline_add(tl, &ev, &err) != 0)
			break;
	}
	mate_timeline_end_log(tl, &err);
	mate_perfetto_close(pf, &err);
	pf = NULL;
	if (size < 4096 && size > 2 && data[2] == 'R') {   /* now and then, draw it small */
		mate_render_options ro;
		mate_render_options_init(&ro);
		ro.dpi = 20;
		ro.width = 8;
		ro.height = 5;
		mate_timeline_render_fd(tl, &ro, devnull, NULL, &err);
	}
out:
	mate_perfetto_abort(pf);
	mate_ilog_free(r);
	mate_timeline_free(tl);
	return 0;
}
