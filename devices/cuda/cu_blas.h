/* devices/cuda/cu_blas.h: the cuBLAS functions the cuda backend calls, through a table that
 * cu_blas_load fills at the first device open (cu_blas.c), so cuBLAS is not mapped before. */
#ifndef CU_BLAS_H
#define CU_BLAS_H

#include <stddef.h>

#include "cu_api.h"

/* each entry has the type of the function it stands for (the headers' declarations) */
typedef struct {
    __typeof__(cublasCreate) *create;
    __typeof__(cublasDestroy) *destroy;
    __typeof__(cublasSetStream) *set_stream;
    __typeof__(cublasSetWorkspace) *set_workspace;
    __typeof__(cublasSetMathMode) *set_math_mode;
    __typeof__(cublasGetStatusString) *status_string;
    __typeof__(cublasSgemm) *sgemm;
    __typeof__(cublasSgemmStridedBatched) *sgemm_strided_batched;
} cu_blas_api;

/* the table; valid after cu_blas_load returned 0 */
extern cu_blas_api cu_blas;

/* Loads the BLAS library (once; later calls return at once) and fills cu_blas. 0, or 1 with
 * err naming the library, the places tried and the loader's message. */
int cu_blas_load(char *err, size_t errlen);

/* The same from the library at path (a file name the loader searches, or a path): what
 * cu_blas_load does for each place it tries. Fills cu_blas only when every function resolved. */
int cu_blas_load_from(const char *path, char *err, size_t errlen);

#endif
