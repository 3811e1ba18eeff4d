/* devices/registry.c: the list of backends compiled into this binary, opening a device by its
 * spec ("cpu", "opencl:1", "plugin:PATH"), listing every device for `harness devices`. */
#include "device.h"
#include "device_plugin.h"

#include <stdio.h>
#include <string.h>

device *cpu_device_open(const char *arg, char *err, size_t errlen);
device *cpu64_device_open(const char *arg, char *err, size_t errlen);
int cpu_device_list(device_info *out, int max);
int cpu64_device_list(device_info *out, int max);
#ifdef HARNESS_OPENCL
device *opencl_device_open(const char *arg, char *err, size_t errlen);
int opencl_device_list(device_info *out, int max);
void opencl_device_note(char *out, size_t len);
#endif
#ifdef HARNESS_CUDA
device *cuda_device_open(const char *arg, char *err, size_t errlen);
int cuda_device_list(device_info *out, int max);
void cuda_device_note(char *out, size_t len);
#ifdef HARNESS_MUSA
#define CUDA_BACKEND_NAME "musa"
#else
#define CUDA_BACKEND_NAME "cuda"
#endif
#endif

typedef struct {
    const char *name;
    device *(*open)(const char *arg, char *err, size_t errlen);
    int (*list)(device_info *out, int max);
    void (*note)(char *out, size_t len); /* why it lists no device; NULL: never says */
} backend_entry;

static const backend_entry backends[] = {
    {"cpu", cpu_device_open, cpu_device_list, NULL},
    {"cpu64", cpu64_device_open, cpu64_device_list, NULL},
#ifdef HARNESS_OPENCL
    {"opencl", opencl_device_open, opencl_device_list, opencl_device_note},
#endif
#ifdef HARNESS_CUDA
    {CUDA_BACKEND_NAME, cuda_device_open, cuda_device_list, cuda_device_note},
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* the out-of-tree backends' prefix (devices/plugin.c): named with the others, never listed */
#define PLUGIN_PREFIX "plugin:"

const char *const *device_backends(void)
{
    static const char *names[N_BACKENDS + 2];
    for (size_t i = 0; i < N_BACKENDS; i++)
        names[i] = backends[i].name;
    names[N_BACKENDS] = "plugin";
    names[N_BACKENDS + 1] = NULL;
    return names;
}

device *device_open(const char *spec, char *err, size_t errlen)
{
    if (strncmp(spec, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) == 0)
        return plugin_device_open(spec + strlen(PLUGIN_PREFIX), err, errlen);
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    for (size_t i = 0; i < N_BACKENDS; i++) {
        if (strlen(backends[i].name) != len || strncmp(spec, backends[i].name, len) != 0)
            continue;
        if (colon && !colon[1]) { /* "cpu:" is not "cpu": the device after the colon is missing */
            snprintf(err, errlen, "expected %s or %s:DEVICE, got '%s' (nothing after the colon)",
                     backends[i].name, backends[i].name, spec);
            return NULL;
        }
        return backends[i].open(colon ? colon + 1 : "", err, errlen);
    }
    char known[256] = "";
    for (size_t i = 0; i < N_BACKENDS; i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, backends[i].name, sizeof known - strlen(known) - 1);
    }
    strncat(known, ", plugin:PATH", sizeof known - strlen(known) - 1);
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

int device_notes(char *out, size_t len)
{
    int n = 0;
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < N_BACKENDS && used + 1 < len; i++) {
        char line[512] = "";
        if (backends[i].note)
            backends[i].note(line, sizeof line);
        if (line[0]) {
            int w = snprintf(out + used, len - used, "%s\n", line);
            used += w > 0 ? (size_t)w : 0;
            n++;
        }
    }
    return n;
}
