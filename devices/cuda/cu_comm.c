/* devices/cuda/cu_comm.c: what a communicator on a cuda device (NCCL) needs from the backend:
 * the device's ordinal and the stream its ops run on, and the device address of a view. */
#include <stdio.h>
#include <string.h>

#include "cu_internal.h"
#include "cuda.h"

static int is_cuda(const device *d)
{
    return d && strcmp(d->backend, HARNESS_CUDA_BACKEND) == 0;
}

int cuda_comm_target(device *d, int *ordinal, void **stream)
{
    if (!is_cuda(d))
        return 1;
    cu_ctx *c = CU(d);
    *ordinal = c->ordinal;
    *stream = (void *)c->stream;
    return 0;
}

int cuda_device_id(device *d, char *out, size_t len)
{
    if (!is_cuda(d) || len < 2) {
        snprintf(out, len, "not a %s device", HARNESS_CUDA_BACKEND);
        return 1;
    }
    char bus[64] = "";
    cudaError_t e = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, CU(d)->ordinal);
    if (e != cudaSuccess) {
        snprintf(out, len, "cudaDeviceGetPCIBusId: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return 1;
    }
    snprintf(out, len, "%s", bus);
    return 0;
}

void *cuda_dten_address(device *d, dten t)
{
    if (!is_cuda(d) || !t.buf)
        return NULL;
    size_t es = t.buf->head.kind == DT_I32 ? sizeof(int32_t) : d->real_size;
    return (char *)t.buf->ptr + t.off * es;
}
