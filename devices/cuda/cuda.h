/* devices/cuda/cuda.h: what the cuda backend offers beyond the device table: op timing with CUDA
 * events, for `harness ops --mode perf`. */
#ifndef HARNESS_CUDA_H
#define HARNESS_CUDA_H

#include "device.h"

/* records a start event on the device's stream (no-op for other backends) */
void cuda_timer_start(device *d);
/* records a stop event, waits for it and returns the nanoseconds since cuda_timer_start, or -1
 * when unknown (not a cuda device, no start, or an error) */
double cuda_timer_stop_ns(device *d);

#endif
