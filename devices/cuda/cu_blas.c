/* devices/cuda/cu_blas.c: cuBLAS loaded with dlopen at the first cuda device open, its functions
 * put in the cu_blas table; a MUSA build links muBLAS and fills the table directly. */
#include "cu_blas.h"

#include <stdio.h>
#include <string.h>

#ifndef HARNESS_MUSA
#include <dlfcn.h>
#endif

/* Not linked: linked, every harness start mapped and relocated cuBLAS's 0.5 GB Lt library
 * (`harness --help` on a cpu run: 247 MB resident, 217 MB of it cuBLAS's; 23 MB now,
 * measured), and a cuda build did not start on a machine without the CUDA libraries. */
cu_blas_api cu_blas;
static int loaded;

#ifdef HARNESS_MUSA
int cu_blas_load_from(const char *path, char *err, size_t errlen)
{
    (void)path, (void)err, (void)errlen;
    cu_blas = (cu_blas_api){cublasCreate,       cublasDestroy,         cublasSetStream,
                            cublasSetWorkspace, cublasSetMathMode,     cublasGetStatusString,
                            cublasSgemm,        cublasSgemmStridedBatched};
    loaded = 1;
    return 0;
}

int cu_blas_load(char *err, size_t errlen)
{
    return cu_blas_load_from(NULL, err, errlen);
}
#else
/* the library's symbol for a header name (cuBLAS's header defines some names as macros for the
 * versioned symbols the library exports) */
#define CU_SYMBOL_(f) #f
#define CU_SYMBOL(f) CU_SYMBOL_(f)
/* CU_BLAS_SONAME: the soname of the toolkit's cuBLAS (CMake: libcublas.so.<CUDA major>) */
#ifndef CU_BLAS_SONAME
#error "CU_BLAS_SONAME must name cuBLAS's soname (CMakeLists.txt defines it)"
#endif

/* *slot = the library's symbol name, or 1 with err written */
static int resolve(void *lib, const char *name, void **slot, const char *path, char *err,
                   size_t errlen)
{
    dlerror();
    *slot = dlsym(lib, name);
    if (*slot)
        return 0;
    const char *why = dlerror();
    snprintf(err, errlen, "%s: no function %s (%s)", path, name, why ? why : "null symbol");
    return 1;
}

int cu_blas_load_from(const char *path, char *err, size_t errlen)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "cannot load %s (%s)", path, why ? why : "no reason given");
        return 1;
    }
    cu_blas_api t;
    struct {
        const char *name;
        void **slot;
    } want[] = {
        {CU_SYMBOL(cublasCreate), (void **)&t.create},
        {CU_SYMBOL(cublasDestroy), (void **)&t.destroy},
        {CU_SYMBOL(cublasSetStream), (void **)&t.set_stream},
        {CU_SYMBOL(cublasSetWorkspace), (void **)&t.set_workspace},
        {CU_SYMBOL(cublasSetMathMode), (void **)&t.set_math_mode},
        {CU_SYMBOL(cublasGetStatusString), (void **)&t.status_string},
        {CU_SYMBOL(cublasSgemm), (void **)&t.sgemm},
        {CU_SYMBOL(cublasSgemmStridedBatched), (void **)&t.sgemm_strided_batched},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (resolve(lib, want[i].name, want[i].slot, path, err, errlen)) {
            dlclose(lib);
            return 1;
        }
    cu_blas = t; /* the library stays loaded for the process */
    loaded = 1;
    return 0;
}

/* the soname through the loader's search (LD_LIBRARY_PATH, the cache), then the toolkit's
 * library folder the build found (CU_BLAS_DIR) */
int cu_blas_load(char *err, size_t errlen)
{
    if (loaded)
        return 0;
    char first[512];
    if (!cu_blas_load_from(CU_BLAS_SONAME, first, sizeof first))
        return 0;
#ifdef CU_BLAS_DIR
    char second[512];
    if (!cu_blas_load_from(CU_BLAS_DIR "/" CU_BLAS_SONAME, second, sizeof second))
        return 0;
    snprintf(err, errlen, "cuBLAS: %s; %s", first, second);
#else
    snprintf(err, errlen, "cuBLAS: %s", first);
#endif
    return 1;
}
#endif
