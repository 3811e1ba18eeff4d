/* devices/cuda/cu_nccl.h: the collective library the nccl communicator calls: NVIDIA's NCCL,
 * or in a MUSA build MCCL, its names mapped by musa_compat.h (through cu_api.h). */
#ifndef CU_NCCL_H
#define CU_NCCL_H

#include "cu_api.h"

#ifdef HARNESS_MUSA
#include <mccl.h>
#else
#include <nccl.h>
#endif

#endif
