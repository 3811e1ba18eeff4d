/* tests/plugins/broken_plugin.c: deliberately broken device plugins for tests/test_plugin.sh, one
 * source built thirteen ways: BROKEN_VERSION, BROKEN_SIZE, BROKEN_NO_ENTRY, BROKEN_OP, BROKEN_NAME,
 * BROKEN_ELEMENT, BROKEN_ERR, BROKEN_ALIAS, BROKEN_REOPEN (BROKEN_OP that cannot open again),
 * BROKEN_CRASH (an op that faults), BROKEN_EXIT (an op that calls exit(0)), BROKEN_PAST (an op
 * that writes past its view), BROKEN_ALLOC (alloc fails without saying why), BROKEN_NANGRAD
 * (layernorm_backward's dinp all NaN, its other gradients right). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_plugin.h"

device *cpu_device_open(const char *arg, char *err, size_t errlen);

#ifdef BROKEN_EXIT
#define BROKEN_CRASH 1
#endif

#ifdef BROKEN_CRASH
/* the cpu device with gelu_forward writing through a null pointer, as a vendor op might */
static device_i crash_ops;
static int *volatile nowhere;

static void crashing_gelu_forward(device *d, dten out, dten inp, int n)
{
    (void)d, (void)out, (void)inp;
#ifdef BROKEN_EXIT
    (void)n;
    exit(0); /* as some vendor runtimes end the process on a fatal error */
#else
    *nowhere = n;
#endif
}
#endif

#ifdef BROKEN_REOPEN
#define BROKEN_OP 1
static int faulted; /* a GPU context lost to a fault: the device cannot be opened again */
#endif

#ifdef BROKEN_OP
/* the cpu device with gelu_forward failing as a vendor's op would: a device error naming it */
static device_i broken_ops;

static void failing_gelu_forward(device *d, dten out, dten inp, int n)
{
    (void)out, (void)inp;
#ifdef BROKEN_REOPEN
    faulted = 1;
#endif
    device_fail(d, "%s: gelu_forward: the accelerator rejected the kernel (n = %d)", d->backend, n);
}
#endif

#ifdef BROKEN_ALIAS
/* the cpu device with a rope_forward right out of place and wrong in place (out = inp), the
 * way the llama family calls it: as a kernel that reads inputs another thread has overwritten */
static device_i alias_ops;
static void (*cpu_rope_forward)(device *, dten, dten, dten, dten, int, int, int, int);

static void rope_wrong_in_place(device *d, dten out, dten inp, dten cos_t, dten sin_t, int B,
                                int T, int NH, int hs)
{
    cpu_rope_forward(d, out, inp, cos_t, sin_t, B, T, NH, hs);
    if (out.buf == inp.buf && out.off == inp.off)
        d->ops->scale(d, out, 1.001, (int)out.n);
}
#endif

#ifdef BROKEN_PAST
/* the cpu device with gelu_forward run over 5 elements more than asked, as a kernel without a
 * bounds check on its last block would: GELU is the identity at large values, so what it writes
 * there is a copy of the input's neighbours */
static device_i past_ops;
static void (*cpu_gelu_forward)(device *, dten, dten, int);

static void gelu_forward_past_end(device *d, dten out, dten inp, int n)
{
    out.n += 5;
    inp.n += 5;
    cpu_gelu_forward(d, out, inp, n + 5);
}
#endif

#ifdef BROKEN_NANGRAD
/* the cpu device with layernorm_backward's input gradient all NaN: ops --mode grad must fail
 * it though dw and db, checked after it, are right */
static device_i nangrad_ops;
static void (*cpu_layernorm_backward)(device *, dten, dten, dten, dten, dten, dten, dten, dten,
                                      int, int);
static void layernorm_backward_nan(device *d, dten dinp, dten dw, dten db, dten dout, dten inp,
                                   dten w, dten mean, dten rstd, int N, int C)
{
    cpu_layernorm_backward(d, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    d->ops->scale(d, dinp, NAN, (int)dinp.n);
}
#endif

#ifdef BROKEN_ALLOC
/* the cpu device whose alloc returns NULL without calling device_fail */
static device_i alloc_ops;
static dbuf *silent_alloc(device *d, size_t n, dkind kind)
{
    (void)d, (void)n, (void)kind;
    return NULL;
}
#endif

static device *broken_open(int ordinal, char *err, size_t errlen)
{
#ifdef BROKEN_ERR
    memset(err, 'x', errlen); /* a refusal whose message fills the buffer, no terminator */
    return NULL;
#endif
#ifdef BROKEN_REOPEN
    if (faulted) {
        snprintf(err, errlen, "the device is unusable after a fault");
        return NULL;
    }
#endif
    device *d = cpu_device_open("", err, errlen);
#ifdef BROKEN_ELEMENT
    if (d) /* says fp32 but sizes its elements as 2 bytes: the harness would mis-size buffers */
        d->real_size = 2;
#endif
#ifdef BROKEN_OP
    if (d) {
        broken_ops = *d->ops;
        broken_ops.gelu_forward = failing_gelu_forward;
        d->ops = &broken_ops;
    }
#endif
#ifdef BROKEN_CRASH
    if (d) {
        crash_ops = *d->ops;
        crash_ops.gelu_forward = crashing_gelu_forward;
        d->ops = &crash_ops;
    }
#endif
#ifdef BROKEN_ALIAS
    if (d) {
        alias_ops = *d->ops;
        cpu_rope_forward = alias_ops.rope_forward;
        alias_ops.rope_forward = rope_wrong_in_place;
        d->ops = &alias_ops;
    }
#endif
#ifdef BROKEN_NANGRAD
    if (d) {
        nangrad_ops = *d->ops;
        cpu_layernorm_backward = nangrad_ops.layernorm_backward;
        nangrad_ops.layernorm_backward = layernorm_backward_nan;
        d->ops = &nangrad_ops;
    }
#endif
#ifdef BROKEN_PAST
    if (d) {
        past_ops = *d->ops;
        cpu_gelu_forward = past_ops.gelu_forward;
        past_ops.gelu_forward = gelu_forward_past_end;
        d->ops = &past_ops;
    }
#endif
#ifdef BROKEN_ALLOC
    if (d) {
        alloc_ops = *d->ops;
        alloc_ops.alloc = silent_alloc;
        d->ops = &alloc_ops;
    }
#endif
    (void)ordinal;
    return d;
}

/* without the v1 entry point: what a plugin of another (here: an imagined older) ABI exports */
#ifdef BROKEN_NO_ENTRY
#define PLUGIN_ENTRY harness_device_plugin_v0
#else
#define PLUGIN_ENTRY harness_device_plugin_v1
#endif

const harness_device_plugin *PLUGIN_ENTRY(void);

const harness_device_plugin *PLUGIN_ENTRY(void)
{
    static harness_device_plugin table = HARNESS_DEVICE_PLUGIN_INIT("broken", broken_open, NULL);
#ifdef BROKEN_VERSION
    table.abi_version = HARNESS_DEVICE_PLUGIN_ABI + 1;
#endif
#ifdef BROKEN_SIZE
    table.device_i_size -= (uint32_t)sizeof(void *); /* built against an older device_i */
#endif
#ifdef BROKEN_NAME
    table.name = "MUSA"; /* a built-in backend's name in another case, and one this build lacks:
                            its runs would pass for a MUSA device's */
#endif
    return &table;
}
