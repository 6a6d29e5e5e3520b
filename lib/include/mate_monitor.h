/* mate_monitor.h: the former name of mate_events.h (live events joined it), kept so that programs that include it build. */
#include "mate_events.h"
