/* devices/plugin.c: loads an out-of-tree device backend (`--device plugin:PATH[:N]` or
 * plugin:NAME through HARNESS_PLUGIN_PATH) and checks its ABI version and struct sizes. */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "device_plugin.h"

#define PLUGIN_PATH_MAX 1024

/* splits "WHAT[:N]" into the library part and the ordinal (0 without one); 0, or 1 + err */
static int split_spec(const char *arg, char *what, size_t len, int *ordinal, char *err,
                      size_t errlen)
{
    const char *colon = strrchr(arg, ':');
    size_t n = strlen(arg);
    *ordinal = 0;
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        if (strlen(colon + 1) > 4) {
            snprintf(err, errlen, "plugin: device number '%s' is out of range", colon + 1);
            return 1;
        }
        *ordinal = atoi(colon + 1);
        n = (size_t)(colon - arg);
    }
    if (n == 0 || n >= len) {
        snprintf(err, errlen, "plugin: expected plugin:PATH[:N] or plugin:NAME[:N], got "
                 "'plugin:%s'", arg);
        return 1;
    }
    memcpy(what, arg, n);
    what[n] = 0;
    return 0;
}

/* a regular file (or a link to one) that opens: a folder that happens to be named NAME.so is
 * no candidate, and the search goes on to the next folder of the path */
static int readable(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* a NAME (no '/') looked up as NAME.so, libNAME.so in each folder of HARNESS_PLUGIN_PATH */
static int search_path(const char *name, char *out, size_t len, char *err, size_t errlen)
{
    const char *dirs = getenv("HARNESS_PLUGIN_PATH");
    if (!dirs || !*dirs) {
        snprintf(err, errlen, "plugin: '%s' is a name (no '/'), but HARNESS_PLUGIN_PATH is not "
                 "set; give a path (plugin:./lib%s.so) or set HARNESS_PLUGIN_PATH", name, name);
        return 1;
    }
    for (const char *p = dirs; *p;) {
        size_t dl = strcspn(p, ":");
        static const char *const forms[] = {"%.*s/%s.so", "%.*s/lib%s.so"};
        for (int f = 0; f < 2 && dl; f++) {
            int w = snprintf(out, len, forms[f], (int)dl, p, name);
            if (w > 0 && (size_t)w < len && readable(out))
                return 0;
        }
        p += dl + (p[dl] == ':');
    }
    snprintf(err, errlen, "plugin: no %s.so or lib%s.so in HARNESS_PLUGIN_PATH (%s)", name, name,
             dirs);
    return 1;
}

/* the backend name runs record (device->backend, 32 bytes): it must fit, and must not be a
 * built-in backend's, or a plugin's runs would pass for (and be compared as) cpu's; 0, or 1 */
static int check_name(const char *name, const char *path, char *err, size_t errlen)
{
    const size_t room = sizeof(((device *)0)->backend);
    size_t n = 0;
    while (n < room && name[n])
        n++;
    if (n == room) {
        snprintf(err, errlen, "plugin: %s: the backend name '%.*s...' is longer than %zu bytes",
                 path, (int)(room - 1), name, room - 1);
        return 1;
    }
    static const char *const reserved[] = {"cpu", "cpu64", "opencl", "cuda", "musa", "plugin",
                                            "all", NULL};
    for (int i = 0; reserved[i]; i++)
        if (strcasecmp(name, reserved[i]) == 0) {
            snprintf(err, errlen, "plugin: %s: the backend name '%s' is a built-in backend's; "
                     "a plugin names itself (its runs are recorded under that name)", path, name);
            return 1;
        }
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') {
            snprintf(err, errlen, "plugin: %s: the backend name '%s' has a character other than "
                     "letters, digits, '_', '-' and '.' (device specs are NAME[:N])", path, name);
            return 1;
        }
    if (!*name) {
        snprintf(err, errlen, "plugin: %s: the backend name is empty", path);
        return 1;
    }
    return 0;
}

/* the table's version and sizes against this harness's; 0, or 1 + err */
static int check_abi(const harness_device_plugin *t, const char *path, char *err, size_t errlen)
{
    if (!t) {
        snprintf(err, errlen, "plugin: %s: %s returned NULL", path, HARNESS_DEVICE_PLUGIN_ENTRY);
        return 1;
    }
    if (t->abi_version != HARNESS_DEVICE_PLUGIN_ABI) {
        snprintf(err, errlen, "plugin: %s: built for device plugin ABI version %u, this harness "
                 "speaks version %d; rebuild the plugin against this harness's "
                 "devices/device_plugin.h", path, (unsigned)t->abi_version, HARNESS_DEVICE_PLUGIN_ABI);
        return 1;
    }
    struct { const char *what; uint32_t got; size_t want; } sizes[] = {
        {"harness_device_plugin", t->struct_size, sizeof(harness_device_plugin)},
        {"device", t->device_size, sizeof(device)},
        {"device_i", t->device_i_size, sizeof(device_i)},
        {"device_info", t->device_info_size, sizeof(device_info)},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].got != sizes[i].want) {
            snprintf(err, errlen, "plugin: %s: struct %s is %u bytes in the plugin, %zu in this "
                     "harness (ABI version %d): rebuild the plugin against this harness's "
                     "devices/device.h", path, sizes[i].what, (unsigned)sizes[i].got,
                     sizes[i].want, HARNESS_DEVICE_PLUGIN_ABI);
            return 1;
        }
    if (!t->name || !t->name[0] || !t->open) {
        snprintf(err, errlen, "plugin: %s: the table has no name or no open function", path);
        return 1;
    }
    return check_name(t->name, path, err, errlen);
}

/* the index of the first entry of the opened device's ops table that is NULL, or -1 */
static int missing_op(const device *d)
{
    void (*const *slot)(void) = (void (*const *)(void))(const void *)d->ops;
    size_t n = sizeof(device_i) / sizeof slot[0];
    for (size_t i = 0; i < n; i++)
        if (!slot[i])
            return (int)i;
    return -1;
}

/* the identity strings the plugin filled, cut at their last byte: a plugin that filled one to
 * the brim without a terminator would have the store read into the next field */
static void terminate_identity(device *d)
{
    char *const fields[] = {d->name, d->vendor, d->driver_version, d->runtime_version};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        fields[i][DEVICE_STR - 1] = 0;
    d->dtype[sizeof d->dtype - 1] = 0;
    d->err[sizeof d->err - 1] = 0;
}

/* the element type the device computes in: fp32 (4 bytes) or fp64 (8), its dtype saying the
 * same; the harness sizes every buffer and picks thresholds by real_size. 0, or 1 + err */
static int check_element(const device *d, const char *path, const char *name, char *err,
                         size_t errlen)
{
    int fp32 = d->real_size == sizeof(float) && strcmp(d->dtype, "fp32") == 0;
    int fp64 = d->real_size == sizeof(double) && strcmp(d->dtype, "fp64") == 0;
    if (fp32 || fp64)
        return 0;
    snprintf(err, errlen, "plugin: %s (%s): the device says dtype '%s' with real_size %zu; a "
             "device computes in fp32 (real_size 4) or fp64 (real_size 8)", path, name,
             d->dtype, d->real_size);
    return 1;
}

/* loads the library and returns its checked table (the library stays loaded for the process) */
static const harness_device_plugin *load(const char *path, char *err, size_t errlen)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "plugin: cannot load %s: %s", path, why ? why : "unknown error");
        return NULL;
    }
    dlerror();
    void *sym = dlsym(lib, HARNESS_DEVICE_PLUGIN_ENTRY);
    if (!sym) {
        snprintf(err, errlen, "plugin: %s does not export %s (not a harness device plugin, or "
                 "built for another ABI)", path, HARNESS_DEVICE_PLUGIN_ENTRY);
        dlclose(lib);
        return NULL;
    }
    harness_device_plugin_entry entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    const harness_device_plugin *t = entry();
    if (check_abi(t, path, err, errlen)) {
        dlclose(lib);
        return NULL;
    }
    return t;
}

device *plugin_device_open(const char *arg, char *err, size_t errlen)
{
    char what[PLUGIN_PATH_MAX], path[PLUGIN_PATH_MAX];
    int ordinal = 0;
    if (split_spec(arg, what, sizeof what, &ordinal, err, errlen))
        return NULL;
    if (strchr(what, '/'))
        snprintf(path, sizeof path, "%s", what);
    else if (search_path(what, path, sizeof path, err, errlen))
        return NULL;
    const harness_device_plugin *t = load(path, err, errlen);
    if (!t)
        return NULL;
    char why[DEVICE_ERR] = "";
    device *d = t->open(ordinal, why, sizeof why);
    why[sizeof why - 1] = 0; /* a plugin that filled the buffer without a terminator */
    if (!d) {
        snprintf(err, errlen, "plugin: %s (%s): cannot open device %d: %s", path, t->name,
                 ordinal, why[0] ? why : "no reason given");
        return NULL;
    }
    int gap = d->ops ? missing_op(d) : 0;
    if (gap >= 0) {
        snprintf(err, errlen, "plugin: %s (%s): the device leaves %s NULL (every op of "
                 "devices/device.h must be filled)", path, t->name,
                 d->ops ? "an entry of its ops table" : "its ops table");
        if (d->ops && d->ops->close)
            d->ops->close(d);
        return NULL;
    }
    terminate_identity(d);
    if (check_element(d, path, t->name, err, errlen)) {
        d->ops->close(d);
        return NULL;
    }
    snprintf(d->backend, sizeof d->backend, "%s", t->name);
    return d;
}
