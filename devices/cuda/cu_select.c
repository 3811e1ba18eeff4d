/* devices/cuda/cu_select.c: finds CUDA devices and resolves a device spec ("cuda" = device 0,
 * "cuda:N", or part of a name), lists them for `harness devices`, says why there are none. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

#define MAX_CUDA_DEVICES 64

int cuda_device_list(device_info *out, int max);
void cuda_device_note(char *out, size_t len);

/* the number of devices, or -1 with the driver's reason in why (no driver, no GPU...) */
static int device_count(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return -1;
    }
    if (n == 0)
        snprintf(why, len, "cudaGetDeviceCount: 0 devices");
    return n > MAX_CUDA_DEVICES ? MAX_CUDA_DEVICES : n;
}

static int device_name(int i, char *name, size_t len)
{
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
        return 1;
    snprintf(name, len, "%.127s", p.name);
    return 0;
}

static int all_digits(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 4)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* the ordinal arg names among n devices, or -1 */
static int match(int n, const char *arg)
{
    if (*arg == 0)
        return n > 0 ? 0 : -1;
    if (all_digits(arg)) {
        int k = atoi(arg);
        return k < n ? k : -1;
    }
    for (int i = 0; i < n; i++) {
        char name[DEVICE_STR];
        if (device_name(i, name, sizeof name) == 0 && contains_nocase(name, arg))
            return i;
    }
    return -1;
}

static void list_names(int n, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used < len; i++) {
        char name[DEVICE_STR] = "unnamed device";
        device_name(i, name, sizeof name);
        used += (size_t)snprintf(out + used, len - used, "%scuda:%d (%s)", i ? ", " : "", i, name);
    }
}

int cu_select_device(const char *arg, int *ordinal, char *err, size_t errlen)
{
    char why[256] = "";
    int n = device_count(why, sizeof why);
    if (n <= 0) {
        snprintf(err, errlen, "cuda: no CUDA device (%s)", why);
        return 1;
    }
    int k = match(n, arg ? arg : "");
    if (k < 0) {
        char have[400];
        list_names(n, have, sizeof have);
        snprintf(err, errlen, "cuda: no device matches 'cuda:%s' (use an index or part of a "
                 "name); this machine has: %s", arg, have);
        return 1;
    }
    *ordinal = k;
    return 0;
}

int cuda_device_list(device_info *out, int max)
{
    char why[256];
    int n = device_count(why, sizeof why), k = 0;
    for (int i = 0; i < n && k < max; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            continue;
        device_info *o = &out[k++];
        memset(o, 0, sizeof *o);
        snprintf(o->spec, sizeof o->spec, "%s:%d", HARNESS_CUDA_BACKEND, i);
        snprintf(o->name, sizeof o->name, "%.127s", p.name);
        snprintf(o->vendor, sizeof o->vendor, "%s", HARNESS_CUDA_VENDOR);
        snprintf(o->dtype, sizeof o->dtype, "fp32");
        o->mem_total = p.totalGlobalMem;
    }
    return k;
}

/* one line when the backend is built but has no device to offer, else "" */
void cuda_device_note(char *out, size_t len)
{
    char why[256];
    out[0] = 0;
    if (device_count(why, sizeof why) <= 0)
        snprintf(out, len, "cuda: no CUDA device on this machine (%s)", why);
}
