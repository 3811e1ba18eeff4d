/* harness/models/model.c: the family registry and what works on any family through its table:
 * the parameter table and views, weights in and out, gradient norm and scale, AdamW. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

extern const model_family gpt2_family; /* gpt2_family.c */
extern const model_family bert_family; /* bert_family.c */
extern const model_family llama_family; /* llama_family.c */

/* every family the harness knows; a new one adds its table here */
static const model_family *const families[] = {&gpt2_family, &bert_family, &llama_family};

const model_family *model_family_find(const char *name)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

int model_family_reads_type(const model_family *f, const char *type)
{
    if (strcmp(f->name, type) == 0)
        return 1;
    for (const char *const *t = f->model_types; t && *t; t++)
        if (strcmp(*t, type) == 0)
            return 1;
    return 0;
}

const model_family *model_family_at(int i)
{
    return i >= 0 && (size_t)i < sizeof families / sizeof families[0] ? families[i] : NULL;
}

struct model {
    const model_family *f;
    device *d;
    void *impl;
    model_state st;
};

model *model_create(const model_family *f, device *d, const model_config_u *c, int B, int T)
{
    char why[512];
    if (f->check_fit(c, B, T, d, why, sizeof why)) {
        log_error("%s: %s", f->name, why);
        return NULL;
    }
    model *m = calloc(1, sizeof *m);
    if (!m) {
        log_error("%s: out of host memory", f->name);
        return NULL;
    }
    m->f = f;
    m->d = d;
    if (!(m->impl = f->create(d, c, B, T))) {
        free(m);
        return NULL;
    }
    f->state(m->impl, &m->st);
    return m;
}

void model_free(model *m)
{
    if (!m)
        return;
    m->f->destroy(m->impl);
    free(m);
}

const model_family *model_family_of(const model *m) { return m->f; }
device *model_device(const model *m) { return m->d; }
void *model_impl(model *m) { return m->impl; }
int model_n_params(const model *m) { return m->st.n_params; }
const param_info *model_param(const model *m, int i) { return &m->st.params[i]; }
size_t model_param_count(const model *m) { return m->st.param_mem.n; }
dten model_all_params(const model *m) { return m->st.param_mem; }
dten model_all_grads(const model *m) { return m->st.grad_mem; }

int model_find_param(const model *m, const char *name)
{
    for (int i = 0; i < m->st.n_params; i++)
        if (strcmp(m->st.params[i].name, name) == 0)
            return i;
    return -1;
}

dten model_param_view(const model *m, int i)
{
    return dten_view(m->st.param_mem, m->st.params[i].offset, m->st.params[i].n);
}

dten model_grad_view(const model *m, int i)
{
    return dten_view(m->st.grad_mem, m->st.params[i].offset, m->st.params[i].n);
}

int model_param_is_head(const model *m, int i)
{
    const char *name = m->st.params[i].name;
    for (const char *const *u = m->f->unprefixed; u && *u; u++)
        if (strncmp(name, *u, strlen(*u)) == 0)
            return 1;
    return 0;
}

void model_hf_name(const model *m, int i, char *out, size_t len)
{
    const char *name = m->st.params[i].name;
    snprintf(out, len, "%s%s", model_param_is_head(m, i) ? "" : m->f->hf_prefix, name);
}

size_t model_activation_bytes(const model *m) { return m->f->activation_bytes(m->impl); }

size_t model_state_bytes(const model *m)
{
    return 4 * m->st.param_mem.n * m->d->real_size;
}

static int check_device(model *m, const char *phase)
{
    if (!device_error(m->d))
        return 0;
    log_error("%s: %s: %s", m->d->backend, phase, device_error(m->d));
    return 1;
}

int model_init_weights(model *m, uint64_t seed)
{
    size_t np = m->st.param_mem.n;
    float *host = malloc(np * sizeof *host);
    if (!host) {
        log_error("%s: out of host memory for %zu initial weights", m->f->name, np);
        return 1;
    }
    int rc = m->f->init_weights(m->impl, seed, host);
    if (!rc)
        rc = model_set_weights(m, host);
    free(host);
    return rc;
}

int model_init_host(model *m, uint64_t seed, float *host)
{
    return m->f->init_weights(m->impl, seed, host);
}

int model_set_weights(model *m, const float *host)
{
    m->d->ops->upload(m->d, m->st.param_mem, host);
    m->d->ops->zero(m->d, m->st.m_mem);
    m->d->ops->zero(m->d, m->st.v_mem);
    return check_device(m, "uploading weights");
}

int model_get_weights(model *m, float *host, int grads)
{
    m->d->ops->download(m->d, host, grads ? m->st.grad_mem : m->st.param_mem);
    return check_device(m, grads ? "downloading gradients" : "downloading weights");
}

int model_forward(model *m, const model_batch *b, double *loss)
{
    return m->f->forward(m->impl, b, loss);
}

int model_backward(model *m) { return m->f->backward(m->impl); }

void model_moe_shape(const model *m, int *layers, int *experts)
{
    *layers = 0;
    *experts = 0;
    if (m->f->moe_shape) m->f->moe_shape(m->impl, layers, experts);
}

int model_expert_tokens(model *m, int64_t *counts)
{
    int layers, experts;
    model_moe_shape(m, &layers, &experts);
    if (layers == 0 || experts == 0) return 0;
    return m->f->expert_tokens ? m->f->expert_tokens(m->impl, counts) : 0;
}

double model_grad_norm(model *m)
{
    return sqrt(m->d->ops->sumsq(m->d, m->st.grad_mem, (int)m->st.grad_mem.n));
}

void model_scale_grads(model *m, double s)
{
    m->d->ops->scale(m->d, m->st.grad_mem, s, (int)m->st.grad_mem.n);
}

int model_adamw_step(model *m, const adamw_params *p, int t)
{
    device *d = m->d;
    const model_state *st = &m->st;
    if (p->decay_all || p->weight_decay == 0.0) {
        d->ops->adamw(d, st->param_mem, st->grad_mem, st->m_mem, st->v_mem, (int)st->param_mem.n,
                      p->lr, p->beta1, p->beta2, p->eps, p->weight_decay, t);
        return check_device(m, "adamw");
    }
    for (int i = 0; i < st->n_params; i++) {
        const param_info *pi = &st->params[i];
        int decays = pi->role == PARAM_MATRIX || pi->role == PARAM_EMBEDDING;
        d->ops->adamw(d, model_param_view(m, i), model_grad_view(m, i),
                      dten_view(st->m_mem, pi->offset, pi->n), dten_view(st->v_mem, pi->offset, pi->n),
                      (int)pi->n, p->lr, p->beta1, p->beta2, p->eps,
                      decays ? p->weight_decay : 0.0, t);
    }
    return check_device(m, "adamw");
}
