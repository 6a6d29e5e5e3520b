/* op_cost.h: the nominal floating-point operations of one call of a built-in op
 * (op_cost.c), for the FLOP/s of mate-bench and mate-replay --bench. */
#ifndef MATE_OP_COST_H_INCLUDED
#define MATE_OP_COST_H_INCLUDED

#include <stddef.h>

#include "mate_private.h"
#include "mate_dump.h"

/* The name of parameter pos of sig (a Python parameter list as mate_replay_register_signature()
 * takes it) into buf; 0, or -1 when sig has no such parameter. */
int mate_op_param_name(const char *sig, int pos, char *buf, size_t cap) MATE_HIDDEN;
/* Argument `name` of args (a dict of arg_<i>/kwarg_<name>), arg_<i> placed by sig; NULL if absent. */
const mate_value *mate_op_arg(const mate_value *args, const char *sig, const char *name) MATE_HIDDEN;
/* The nominal floating-point operations of a call of function with args, or -1 when
 * the op defines none (sampling, copies, bit packing, unknown functions). */
double mate_op_flops(const char *function, const char *sig, const mate_value *args) MATE_HIDDEN;

#endif /* MATE_OP_COST_H_INCLUDED */
