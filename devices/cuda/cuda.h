/* devices/cuda/cuda.h: what the cuda backend offers beyond the device table: op timing with CUDA
 * events, for `harness ops --mode perf`, and what the NCCL communicator needs (cu_comm.c). */
#ifndef HARNESS_CUDA_H
#define HARNESS_CUDA_H

#include "device.h"

/* records a start event on the device's stream (no-op for other backends) */
void cuda_timer_start(device *d);
/* records a stop event, waits for it and returns the nanoseconds since cuda_timer_start, or -1
 * when unknown (not a cuda device, no start, or an error) */
double cuda_timer_stop_ns(device *d);

/* the CUDA ordinal of d and the stream every op of d runs on (a cudaStream_t); 0, or 1 when d
 * is not a cuda device */
int cuda_comm_target(device *d, int *ordinal, void **stream);
/* d's PCI bus id ("0000:3b:00.0") into out: a GPU's identity on its host, whichever devices
 * the process is shown; 0, or 1 with the failing call and its error in out */
int cuda_device_id(device *d, char *out, size_t len);
/* the device address of view t's first element; NULL when d is not a cuda device */
void *cuda_dten_address(device *d, dten t);

#endif
