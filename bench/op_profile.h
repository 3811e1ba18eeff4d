/* bench/op_profile.h: where a training step's time goes on a device: a timing shim over its op
 * table (each op timed and followed by a synchronize), per op and per GEMM shape. */
#ifndef OP_PROFILE_H
#define OP_PROFILE_H

#include "device.h"

/* from now on every op the shim knows is timed on d (d->ops replaced by the shim's table) */
void op_profile_start(device *d);
/* d's own op table back; prints ms per step of each op seen and of each GEMM shape, over `steps`
 * steps that took step_ms each (the rest: ops the shim does not time, and the host) */
void op_profile_stop(device *d, int steps, double step_ms);

#endif
