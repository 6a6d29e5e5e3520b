/* mate_dump.h: the former name of mate_replay.h, kept so that programs that include it build. */
#include "mate_replay.h"
