/* mate.h: all of libmate's public API; include the one header you need instead when you can. */
#ifndef MATE_H_INCLUDED
#define MATE_H_INCLUDED

#include "mate_core.h"    /* errors, dtypes, tensors, values, tensor files */
#include "mate_record.h"  /* recording API calls, the memory log */
#include "mate_replay.h"  /* reading dumps, replaying them */
#include "mate_events.h"  /* instruction logs, live events */

#endif /* MATE_H_INCLUDED */
