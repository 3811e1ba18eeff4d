/* devices/opencl/ocl_select.c: finds OpenCL devices over every platform and resolves a device
 * spec: "opencl" (platform 0 device 0), "opencl:N" (N-th overall), "opencl:P.D", or a name. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

typedef struct {
    cl_platform_id platform;
    cl_device_id dev;
    int pi, di; /* platform index, device index within it */
    char name[DEVICE_STR];
} dev_entry;

/* every device of every platform; returns the count, or -1 with err set when the platform
 * query itself fails (no ICD loader configuration is CL_PLATFORM_NOT_FOUND_KHR: count 0) */
static int enumerate(dev_entry *out, int max, char *err, size_t errlen)
{
    cl_platform_id plats[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(MAX_PLATFORMS, plats, &np);
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && np == 0))
        return 0;
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "clGetPlatformIDs: %s", ocl_err_name(e));
        return -1;
    }
    int n = 0;
    for (cl_uint p = 0; p < np && p < MAX_PLATFORMS; p++) {
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS)
            continue; /* CL_DEVICE_NOT_FOUND: a platform without devices */
        for (cl_uint i = 0; i < nd && i < MAX_DEVICES && n < max; i++, n++) {
            out[n] = (dev_entry){.platform = plats[p], .dev = devs[i], .pi = (int)p, .di = (int)i};
            if (clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof out[n].name, out[n].name, NULL))
                snprintf(out[n].name, sizeof out[n].name, "unnamed device");
        }
    }
    return n;
}

static int all_digits(const char *s, size_t len)
{
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

/* the index into devs that arg names, or -1 */
static int match(const dev_entry *devs, int n, const char *arg)
{
    const char *dot = strchr(arg, '.');
    if (*arg == 0)
        return n > 0 ? 0 : -1;
    if (all_digits(arg, strlen(arg))) {
        int k = atoi(arg);
        return k < n ? k : -1;
    }
    if (dot && all_digits(arg, (size_t)(dot - arg)) && all_digits(dot + 1, strlen(dot + 1))) {
        int p = atoi(arg), dd = atoi(dot + 1);
        for (int i = 0; i < n; i++)
            if (devs[i].pi == p && devs[i].di == dd)
                return i;
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (contains_nocase(devs[i].name, arg))
            return i;
    return -1;
}

static void list_devices(const dev_entry *devs, int n, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%sopencl:%d (%d.%d, %s)", i ? ", " : "",
                                 i, devs[i].pi, devs[i].di, devs[i].name);
}

int ocl_select_device(const char *arg, cl_platform_id *platform, cl_device_id *dev, char *err,
                      size_t errlen)
{
    dev_entry devs[MAX_DEVICES];
    char why[128] = "";
    int n = enumerate(devs, MAX_DEVICES, why, sizeof why);
    if (n <= 0) {
        snprintf(err, errlen, "opencl: no OpenCL device found (%s); install an OpenCL driver "
                 "(ICD) for your device, e.g. pocl-opencl-icd for the CPU, and check 'clinfo -l'",
                 n < 0 ? why : "no platform or no device");
        return 1;
    }
    int k = match(devs, n, arg ? arg : "");
    if (k < 0) {
        char have[400];
        list_devices(devs, n, have, sizeof have);
        snprintf(err, errlen, "opencl: no device matches 'opencl:%s' (use an index, P.D or part "
                 "of a name); this machine has: %s", arg, have);
        return 1;
    }
    *platform = devs[k].platform;
    *dev = devs[k].dev;
    return 0;
}

int opencl_device_list(device_info *out, int max);
void opencl_device_note(char *out, size_t len);

/* why `harness devices` lists no opencl device (no ICD, no platform, no device), else "" */
void opencl_device_note(char *out, size_t len)
{
    dev_entry devs[MAX_DEVICES];
    char why[128] = "";
    out[0] = 0;
    int n = enumerate(devs, MAX_DEVICES, why, sizeof why);
    if (n <= 0)
        snprintf(out, len, "opencl: no OpenCL device on this machine (%s)",
                 why[0] ? why : "no platform with a device: is an ICD installed (OCL_ICD_VENDORS)?");
}

int opencl_device_list(device_info *out, int max)
{
    dev_entry devs[MAX_DEVICES];
    char why[128];
    int n = enumerate(devs, MAX_DEVICES, why, sizeof why);
    int k = 0;
    for (int i = 0; i < n && k < max; i++, k++) {
        device_info *o = &out[k];
        memset(o, 0, sizeof *o);
        snprintf(o->spec, sizeof o->spec, "opencl:%d", i);
        snprintf(o->name, sizeof o->name, "%s", devs[i].name);
        if (clGetDeviceInfo(devs[i].dev, CL_DEVICE_VENDOR, sizeof o->vendor, o->vendor, NULL))
            o->vendor[0] = 0;
        snprintf(o->dtype, sizeof o->dtype, "fp32");
        cl_ulong mem = 0;
        if (clGetDeviceInfo(devs[i].dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) == 0)
            o->mem_total = (size_t)mem;
    }
    return k;
}
