/* devices/device_plugin.h: the versioned C ABI of out-of-tree device backends: a shared library
 * that exports harness_device_plugin_v1 and fills the interface of devices/device.h. */
#ifndef DEVICE_PLUGIN_H
#define DEVICE_PLUGIN_H

#include <stdint.h>

#include "device.h"

/* Bumped whenever device.h's structs (device, device_i, device_info, dbuf_head, dten) change
 * their layout or meaning; the loader refuses a plugin built for another version or whose
 * struct sizes differ from the harness's (docs/porting.md, "Plugins"). */
#define HARNESS_DEVICE_PLUGIN_ABI 2

/* what harness_device_plugin_v1 returns: a static table, valid while the library is loaded */
typedef struct {
    uint32_t abi_version;      /* HARNESS_DEVICE_PLUGIN_ABI as the plugin was built */
    uint32_t struct_size;      /* sizeof(harness_device_plugin) */
    uint32_t device_size;      /* sizeof(device) */
    uint32_t device_i_size;    /* sizeof(device_i) */
    uint32_t device_info_size; /* sizeof(device_info) */
    const char *name;          /* the backend's name, e.g. "ascend"; becomes device->backend */
    /* opens device number ordinal of the plugin (0 when the spec gives none); returns a device
     * whose ops table the plugin owns (every entry filled), or NULL with err written */
    device *(*open)(int ordinal, char *err, size_t errlen);
    /* fills up to max entries (spec fields are rewritten by the harness); returns the count */
    int (*list)(device_info *out, int max);
} harness_device_plugin;

/* the one symbol the loader looks up */
#define HARNESS_DEVICE_PLUGIN_ENTRY "harness_device_plugin_v1"
typedef const harness_device_plugin *(*harness_device_plugin_entry)(void);

/* the table with the sizes this header gives: a plugin returns this from its entry point */
#define HARNESS_DEVICE_PLUGIN_INIT(NAME, OPEN, LIST)                                            \
    {HARNESS_DEVICE_PLUGIN_ABI, sizeof(harness_device_plugin), sizeof(device), sizeof(device_i), \
     sizeof(device_info), NAME, OPEN, LIST}

/* ---- the loader (devices/plugin.c) ---- */
/* arg: "PATH[:N]" (a file path, with a '/') or "NAME[:N]" searched as NAME.so and libNAME.so in
 * the folders of HARNESS_PLUGIN_PATH (':'-separated). NULL with err written on any failure. */
device *plugin_device_open(const char *arg, char *err, size_t errlen);

#endif
