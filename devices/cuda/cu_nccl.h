/* devices/cuda/cu_nccl.h: the collective library the nccl communicator calls: NVIDIA's NCCL,
 * or in a MUSA build MCCL, its names mapped by musa_compat.h (through cu_api.h). */
#ifndef CU_NCCL_H
#define CU_NCCL_H

#include "cu_api.h"

/* the prefix of the library's environment variables: NCCL's, or MCCL's in a MUSA build */
#ifdef HARNESS_MUSA
#include <mccl.h>
#define CCL_ENV_PREFIX "MCCL_"
#else
#include <nccl.h>
#define CCL_ENV_PREFIX "NCCL_"
#endif

#endif
