/* devices/registry.c: the list of backends compiled into this binary, opening a device by its
 * spec ("cpu", "opencl:1"), and listing every device for `harness devices`. */
#include "device.h"

#include <stdio.h>
#include <string.h>

device *cpu_device_open(const char *arg, char *err, size_t errlen);
device *cpu64_device_open(const char *arg, char *err, size_t errlen);
int cpu_device_list(device_info *out, int max);
int cpu64_device_list(device_info *out, int max);
#ifdef HARNESS_OPENCL
device *opencl_device_open(const char *arg, char *err, size_t errlen);
int opencl_device_list(device_info *out, int max);
#endif
#ifdef HARNESS_CUDA
device *cuda_device_open(const char *arg, char *err, size_t errlen);
int cuda_device_list(device_info *out, int max);
#endif

typedef struct {
    const char *name;
    device *(*open)(const char *arg, char *err, size_t errlen);
    int (*list)(device_info *out, int max);
} backend_entry;

static const backend_entry backends[] = {
    {"cpu", cpu_device_open, cpu_device_list},
    {"cpu64", cpu64_device_open, cpu64_device_list},
#ifdef HARNESS_OPENCL
    {"opencl", opencl_device_open, opencl_device_list},
#endif
#ifdef HARNESS_CUDA
    {"cuda", cuda_device_open, cuda_device_list},
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

const char *const *device_backends(void)
{
    static const char *names[N_BACKENDS + 1];
    for (size_t i = 0; i < N_BACKENDS; i++)
        names[i] = backends[i].name;
    names[N_BACKENDS] = NULL;
    return names;
}

device *device_open(const char *spec, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    for (size_t i = 0; i < N_BACKENDS; i++) {
        if (strlen(backends[i].name) == len && strncmp(spec, backends[i].name, len) == 0)
            return backends[i].open(colon ? colon + 1 : "", err, errlen);
    }
    char known[256] = "";
    for (size_t i = 0; i < N_BACKENDS; i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, backends[i].name, sizeof known - strlen(known) - 1);
    }
    snprintf(err, errlen, "unknown device '%s' (this build has: %s)", spec, known);
    return NULL;
}

int device_list(device_info *out, int max)
{
    int n = 0;
    for (size_t i = 0; i < N_BACKENDS && n < max; i++)
        n += backends[i].list(out + n, max - n);
    return n;
}
