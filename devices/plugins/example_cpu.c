/* devices/plugins/example_cpu.c: an out-of-tree backend as a vendor would ship one, built from the
 * cpu backend's sources: the shared library `harness --device plugin:example_cpu` loads. */
#include <stdio.h>

#include "device_plugin.h"

/* the cpu backend (devices/cpu/), linked into this library */
device *cpu_device_open(const char *arg, char *err, size_t errlen);
int cpu_device_list(device_info *out, int max);

/* one device: the host CPU, as the in-tree cpu backend opens it */
static device *example_open(int ordinal, char *err, size_t errlen)
{
    if (ordinal != 0) {
        snprintf(err, errlen, "example_cpu: there is one device (0), not %d", ordinal);
        return NULL;
    }
    return cpu_device_open("", err, errlen);
}

static int example_list(device_info *out, int max)
{
    return cpu_device_list(out, max);
}

/* the entry point the harness looks up (devices/device_plugin.h) */
const harness_device_plugin *harness_device_plugin_v1(void);

const harness_device_plugin *harness_device_plugin_v1(void)
{
    static const harness_device_plugin table =
        HARNESS_DEVICE_PLUGIN_INIT("example_cpu", example_open, example_list);
    return &table;
}
