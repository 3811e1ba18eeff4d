/* devices/opencl/opencl.h: what the opencl backend offers beyond the device table: op timing
 * from OpenCL profiling events, for `harness ops --mode perf`. */
#ifndef OPENCL_H
#define OPENCL_H

#include "device.h"

/* With timing on, every op records its span on the device: from the start of its first command
 * (a marker before CLBlast calls) to the end of its last. Off by default (it costs a marker). */
void opencl_set_timing(device *d, int on);
/* Nanoseconds the last op spent on the device (waits for it); -1 if unknown or not opencl. */
double opencl_last_op_ns(device *d);

#endif
