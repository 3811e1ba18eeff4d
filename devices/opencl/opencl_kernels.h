/* devices/opencl/opencl_kernels.h: the table of embedded OpenCL C sources that
 * embed_kernels.cmake generates from devices/kernels/ at build time (one entry per file). */
#ifndef OPENCL_KERNELS_H
#define OPENCL_KERNELS_H

#include <stddef.h>

typedef struct {
    const char *name; /* file name, e.g. "layernorm.cl" */
    const char *text; /* its bytes, NUL-terminated */
    size_t len;
} opencl_kernel_file;

extern const opencl_kernel_file opencl_kernel_files[];
extern const int opencl_kernel_file_count;

#endif
