/* devices/cuda/cu_comm.c: what a communicator on a cuda device (NCCL) needs from the backend:
 * the device's ordinal and the stream its ops run on, and the device address of a view. */
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

void *cuda_dten_address(device *d, dten t)
{
    if (!is_cuda(d) || !t.buf)
        return NULL;
    size_t es = t.buf->head.kind == DT_I32 ? sizeof(int32_t) : d->real_size;
    return (char *)t.buf->ptr + t.off * es;
}
