/* harness/train/train_lowp.c: what bf16/fp16 scenarios add to training: the device's rounding mode,
 * fp16 dynamic loss scaling (GradScaler's rules) and the test-only Inf-gradient hook. */
#include "train_lowp_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lowp.h"
#include "util/util.h"

const char *train_run_dtype(const device *d)
{
    return d->lowp ? lowp_mode_name((lowp_mode)d->lowp) : d->dtype;
}

void loss_scaler_update(loss_scaler *ls, int found_inf)
{
    if (found_inf) {
        ls->scale *= LOSS_SCALE_BACKOFF;
        ls->clean_steps = 0;
        return;
    }
    if (++ls->clean_steps == LOSS_SCALE_INTERVAL) {
        ls->scale *= LOSS_SCALE_GROWTH;
        ls->clean_steps = 0;
    }
}

/* HARNESS_INJECT_INF_GRAD: unset or empty 0, else a step number >= 1; -1 after a message */
static int inject_step(void)
{
    const char *v = getenv(LOWP_INJECT_ENV);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long step = strtol(v, &end, 10);
    if (errno || *end || step < 1 || step > INT_MAX) {
        log_error("%s=\"%s\": must be a step number >= 1 (a test hook: docs/precision.md)",
                  LOWP_INJECT_ENV, v);
        return -1;
    }
    return (int)step;
}

int train_lowp_setup(train_lowp *tl, const scenario *s, device *d, int native)
{
    memset(tl, 0, sizeof *tl);
    lowp_mode mode = native ? LOWP_NONE : lowp_mode_of(s->dtype);
    char why[256];
    if (device_set_lowp(d, mode, why, sizeof why)) {
        log_error("%s: dtype \"%s\": %s", s->path, s->dtype, why);
        return EXIT_USAGE;
    }
    tl->d = d;
    tl->fp16 = mode == LOWP_FP16;
    tl->scaler = (loss_scaler){tl->fp16 ? LOSS_SCALE_INIT : 1.0, 0};
    if ((tl->inject_step = inject_step()) < 0)
        return EXIT_USAGE;
    return 0;
}

void train_lowp_free(train_lowp *tl)
{
    char why[8];
    if (tl->d)
        device_set_lowp(tl->d, LOWP_NONE, why, sizeof why); /* never fails */
    tl->d = NULL;
}

void train_lowp_begin_step(train_lowp *tl)
{
    if (tl->fp16)
        tl->d->loss_scale = tl->scaler.scale;
}

int train_lowp_inject(train_lowp *tl, model *m, int step)
{
    if (tl->inject_step != step)
        return 0;
    device *d = model_device(m);
    float inf = INFINITY;
    dten g = model_all_grads(m);
    d->ops->upload(d, dten_view(g, 0, 1), &inf);
    log_warn("%s: step %d: gradient 0 set to +Inf (test hook)", LOWP_INJECT_ENV, step);
    return device_error(d) ? 1 : 0;
}

double train_lowp_unscale(train_lowp *tl, model *m, int *skipped)
{
    if (tl->fp16)
        model_scale_grads(m, 1.0 / tl->scaler.scale); /* GradScaler.unscale_: a power of 2 */
    double norm = model_grad_norm(m);
    *skipped = tl->fp16 && !isfinite(norm);
    return norm;
}

void train_lowp_end_step(train_lowp *tl, step_record *r, int skipped)
{
    if (!tl->fp16)
        return;
    r->loss_scale = tl->scaler.scale;
    r->skipped = skipped;
    loss_scaler_update(&tl->scaler, skipped);
}
